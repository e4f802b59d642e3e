// The simulator with curtailment (CurtailMode=enforce): m2g-curtaild's
// planner acting on simulated jobs, on hand-worked traces on tiny.conf
// (8 nodes x 4 GPUs, no rack or row budgets). Training draws its class
// estimate, 413 W per GPU; inference 101 W. The planner's defaults:
// target = budget x 0.95, CapFloorW 200 W, IdlePowerPerGpuW 90 W,
// CurtailIntervalSec 5; the simulator's actuation delay 3 s. Events are
// announced when they start (event_notice_s 0), so admission's pre-event
// ramp does not hold the jobs that run into them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/power/signals.hpp"
#include "tools/sim/sim.hpp"
#include "tools/sim/trace.hpp"

using namespace m2g;

namespace {

const std::string kDir = M2G_FIXTURES "/sim/";
constexpr int64_t kT0 = 1767225600;  // the feeds' generated_at: the trace's first submit

// tiny.conf with extra m2g.conf lines.
Model tiny_with(const std::string& extra)
{
    return build_model(parse_m2g_conf(read_text_file(kDir + "tiny.conf") + "\n" + extra + "\n", "tiny+"));
}

// A site budget of `budget` kW and one site event from `from` to `to`
// (trace seconds) taking `cut` kW off it.
Signals feed(const Model& m, double budget, int from, int to, double cut)
{
    return parse_signals("{\"schema\":\"m2g.signals/v1\",\"generated_at\":" + std::to_string(kT0) +
                             ",\"power\":{\"site\":{\"budget_kw\":" + std::to_string(budget) +
                             "}},\"events\":[{\"id\":\"dr1\",\"start\":" + std::to_string(kT0 + from) +
                             ",\"end\":" + std::to_string(kT0 + to) + ",\"curtail_kw\":" + std::to_string(cut) +
                             ",\"scope\":\"site\"}]}",
                         "feed", m, kT0);
}

Trace trace_of(std::initializer_list<TraceJob> jobs)
{
    Trace t;
    t.format = "philly";
    t.jobs = jobs;
    return t;
}

const SimJobResult& job(const SimResult& r, const std::string& id)
{
    for (const SimJobResult& j : r.job_results)
        if (j.id == id)
            return j;
    throw Error("no job " + id);
}

// --class-share's documented rule: FNV-1a 64 of the id, mod 10000, / 100.
double share_point(const std::string& id)
{
    uint64_t h = 14695981039346656037ULL;
    for (unsigned char c : id) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return static_cast<double>(h % 10000) / 100.0;
}

// The first id "<prefix><k>" whose share point is below 50 (`below`) or not.
std::string id_with(const std::string& prefix, bool below)
{
    for (int k = 0;; ++k) {
        const std::string id = prefix + std::to_string(k);
        if ((share_point(id) < 50) == below)
            return id;
    }
}

SimOptions opts_for(const Signals& f)
{
    SimOptions o;
    o.policy = SimPolicy::M2G;
    o.timeline = &f;
    o.event_notice_s = 0;
    return o;
}

}  // namespace

TEST(SimCurtailCurve, DefaultIsThePerseusMeanAndNeverFasterThanUncapped)
{
    EXPECT_DOUBLE_EQ(cap_speed({}, 1.0), 1.0);
    EXPECT_DOUBLE_EQ(cap_speed({}, 1.5), 1.0);
    EXPECT_DOUBLE_EQ(cap_speed({}, 0.847), 0.923);
    EXPECT_DOUBLE_EQ(cap_speed({}, 0.602), 0.577);
    EXPECT_DOUBLE_EQ(cap_speed({}, 0.301), 0.577 / 2);  // proportional below the first point
    EXPECT_DOUBLE_EQ(cap_speed({}, 0), 0);
    for (double x = 0.01; x < 1; x += 0.01) {
        EXPECT_LE(cap_speed({}, x), 1.0);
        EXPECT_LE(cap_speed({}, x), cap_speed({}, x + 0.01)) << x;
    }
    const auto sqrt_curve = parse_cap_speed("0.25:0.5,0.5:0.707,0.75:0.866");
    ASSERT_EQ(sqrt_curve.size(), 3u);
    EXPECT_DOUBLE_EQ(cap_speed(sqrt_curve, 0.5), 0.707);
    EXPECT_DOUBLE_EQ(cap_speed(sqrt_curve, 0.875), 0.866 + (1 - 0.866) / 2);  // towards 1 past the last point
    for (const char* bad : {"", "0.5", "0.5:1.2", "0.6:0.5,0.5:0.4", "0.5:0.6,0.7:0.5", "x:0.5", "0:0.1"})
        EXPECT_THROW(parse_cap_speed(bad), ParseError) << bad;
}

// Site budget 10 kW, an event from 100 to 400 s cuts 5 kW. A (16 GPUs,
// 6.608 kW, 1000 s of work) runs from 0. At 100 the planner caps its GPUs
// to floor(413 - (6.608 - 4.75) / 16 kW) = 296 W (4.736 kW), in effect at
// 103; at the event's end the cap is lifted, in effect at 403. In between
// A runs at cap_speed(296 / 413) of its speed and ends that much later.
TEST(SimCurtail, ACappedJobTakesLongerPerTheCurve)
{
    const Model m = tiny_with("CurtailMode=enforce");
    const Signals f = feed(m, 10, 100, 400, 5);
    const SimResult r = simulate(m, trace_of({{"A", 0, 1000, 16}}), opts_for(f));
    const SimJobResult& a = job(r, "A");
    const double s = cap_speed({}, 296.0 / 413.0);
    EXPECT_NEAR(s, 0.709 + (0.832 - 0.709) * (296.0 / 413 - 0.683) / (0.766 - 0.683), 1e-12);
    EXPECT_EQ(a.start, 0);
    EXPECT_NEAR(a.end, 403 + (1000 - 103 - 300 * s), 1e-6);
    EXPECT_NEAR(a.capped_s, 300, 1e-9);
    EXPECT_EQ(a.caps, 1);
    EXPECT_EQ(r.curtail_mode, "enforce");
    EXPECT_EQ(r.curtail_caps, 1);
    EXPECT_EQ(r.curtail_uncaps, 1);
    EXPECT_EQ(r.curtail_suspends, 0);
    ASSERT_EQ(r.events.size(), 1u);
    const SimEventResult& e = r.events[0];
    EXPECT_DOUBLE_EQ(e.response_s, 3);  // the actuation delay
    EXPECT_DOUBLE_EQ(e.over_s, 3);
    EXPECT_DOUBLE_EQ(e.over_late_s, 0);
    EXPECT_NEAR(e.peak_over_kw, 6.608 - 5, 1e-9);
    EXPECT_NEAR(e.energy_kwh, (6.608 * 3 + 4.736 * 297) / 3600, 1e-9);
    // Energy: full draw but for the 300 s at 296 W.
    EXPECT_NEAR(r.energy_kwh, (6.608 * (a.end - 300) + 4.736 * 300) / 3600, 1e-9);
    // Against CurtailMode=off: A ends 300 (1 - s) s later; the event drew
    // the difference between 6.608 and 4.736 kW less for 297 s.
    ASSERT_TRUE(r.baseline);
    EXPECT_EQ(r.deferrable_jobs, 1);
    EXPECT_NEAR(r.deferrable_delay_mean_s, 300 * (1 - s), 1e-6);
    EXPECT_NEAR(r.deferrable_stretch_mean, a.end / 1000, 1e-9);
    EXPECT_NEAR(r.energy_shifted_kwh, (6.608 - 4.736) * 297 / 3600, 1e-9);
    EXPECT_EQ(r.nondeferrable_jobs, 0);
    EXPECT_DOUBLE_EQ(r.nondeferrable_loss, 0);
    // A longer actuation delay answers later, by exactly that much.
    SimOptions slow = opts_for(f);
    slow.actuation_delay_s = 20;
    EXPECT_DOUBLE_EQ(simulate(m, trace_of({{"A", 0, 1000, 16}}), slow).events[0].response_s, 20);
}

// Budget 12 kW, an event from 100 to 1000 s cuts 8 (to 4 kW, target
// 3.8). T1 (16 GPUs, 6.608 kW) and T2 (8 GPUs, 3.304 kW) are training, I
// (4 GPUs, 0.404 kW) inference, all from 0. Caps at their 200 W floor
// leave 5.204 kW; suspending T1 (the smallest job that clears the
// remaining 1.404 kW: 16 x 110 W) leaves 3.444 kW. Within the actuation
// delay of the event's start the site is under its budget; I is never
// touched; after the event T1 resumes, the caps are lifted and every job
// completes.
TEST(SimCurtail, SiteEventIsMetWithinTheDelayAndNonDeferrableWorkIsLeftAlone)
{
    const Model m = tiny_with("CurtailMode=enforce");
    const Signals f = feed(m, 12, 100, 1000, 8);
    const std::string t1 = id_with("train", false), t2 = id_with("batch", false), inf = id_with("inf", true);
    SimOptions o = opts_for(f);
    o.class_shares = {{"inference", 50}};
    const SimResult r = simulate(m, trace_of({{t1, 0, 2000, 16}, {t2, 0, 2000, 8}, {inf, 0, 2000, 4}}), o);
    EXPECT_EQ(job(r, inf).workload_class, "inference");
    EXPECT_FALSE(job(r, inf).deferrable);
    EXPECT_EQ(job(r, t1).workload_class, "training");
    ASSERT_EQ(r.events.size(), 1u);
    const SimEventResult& e = r.events[0];
    EXPECT_GT(e.response_s, 0);
    EXPECT_LE(e.response_s, o.actuation_delay_s + m.admission.curtail_interval_sec);
    EXPECT_DOUBLE_EQ(e.over_late_s, 0);
    EXPECT_NEAR(e.peak_over_kw, 6.608 + 3.304 + 0.404 - 4, 1e-9);
    EXPECT_EQ(job(r, t1).suspends, 1);
    EXPECT_EQ(job(r, t2).suspends, 0);
    EXPECT_EQ(job(r, t2).caps, 1);
    EXPECT_NEAR(job(r, t1).suspended_s, 900, 1e-9);  // 103 to 1003
    // The inference job: never capped or suspended, on time.
    EXPECT_EQ(job(r, inf).caps, 0);
    EXPECT_EQ(job(r, inf).suspends, 0);
    EXPECT_DOUBLE_EQ(job(r, inf).capped_s + job(r, inf).suspended_s, 0);
    EXPECT_DOUBLE_EQ(job(r, inf).end, 2000);
    EXPECT_EQ(r.nondeferrable_jobs, 1);
    EXPECT_DOUBLE_EQ(r.nondeferrable_loss, 0);
    EXPECT_DOUBLE_EQ(r.nondeferrable_event_loss, 0);
    EXPECT_DOUBLE_EQ(r.nondeferrable_work_in_events_gpu_s, 4.0 * 900);  // I at full speed all through the event
    EXPECT_DOUBLE_EQ(r.nondeferrable_curtailed_s, 0);
    // After the event: resumed, uncapped, done.
    EXPECT_EQ(r.curtail_suspends, 1);
    EXPECT_EQ(r.curtail_resumes, 1);
    EXPECT_EQ(r.curtail_caps, 2);
    EXPECT_EQ(r.curtail_uncaps, 2);
    EXPECT_EQ(r.unfinished, 0);
    EXPECT_EQ(r.jobs, 3);
    for (const SimJobResult& j : r.job_results)
        EXPECT_GT(j.end, 0) << j.id;
    // T1 made no progress for 900 s; resumed at 1003 with its cap, which
    // the next plan (1005) lifts at 1008.
    EXPECT_NEAR(job(r, t1).end, 2000 + 900 + 5 * (1 - cap_speed({}, 200.0 / 413)), 1e-6);
    EXPECT_GT(job(r, t2).end, 2000);
    EXPECT_GT(r.energy_shifted_kwh, 0);
    // The draw stays under the budget from the response on: every
    // violation is the event's first seconds.
    EXPECT_EQ(r.cap_violations, 1);
    EXPECT_DOUBLE_EQ(r.cap_violation_s, e.response_s);
}

// Only non-deferrable work runs: by default m2g may act on none of it, so
// the event stays over its budget; opting the class in (Curtail=cap on
// its ClassName line) caps it.
TEST(SimCurtail, NonDeferrableJobsNeedTheClassesOptIn)
{
    const std::string i1 = id_with("inf", true), i2 = id_with("inf-b", true);
    const Trace t = trace_of({{i1, 0, 1000, 16}, {i2, 0, 1000, 16}});
    SimOptions o;
    o.class_shares = {{"inference", 50}};
    {
        const Model m = tiny_with("CurtailMode=enforce");
        const Signals f = feed(m, 10, 100, 400, 8);  // 3.232 kW of inference against 2 kW
        o = [&] {
            SimOptions x = opts_for(f);
            x.class_shares = {{"inference", 50}};
            return x;
        }();
        const SimResult r = simulate(m, t, o);
        EXPECT_EQ(r.curtail_caps + r.curtail_suspends + r.curtail_signals, 0);
        EXPECT_DOUBLE_EQ(r.events[0].response_s, -1);
        EXPECT_DOUBLE_EQ(r.events[0].over_s, 300);
        EXPECT_DOUBLE_EQ(r.events[0].over_late_s, 270);
        EXPECT_GT(r.curtail_plans, 0);
    }
    {
        const Model m = tiny_with("CurtailMode=enforce\nClassName=inference Curtail=cap CapFloorW=60");
        const Signals f = feed(m, 10, 100, 400, 8);
        SimOptions x = opts_for(f);
        x.class_shares = {{"inference", 50}};
        const SimResult r = simulate(m, t, x);
        EXPECT_EQ(r.curtail_caps, 2);
        EXPECT_DOUBLE_EQ(r.events[0].response_s, 3);
        EXPECT_GT(r.nondeferrable_curtailed_s, 0);
        // Capped for the event: less of their work got done during it.
        EXPECT_GT(r.nondeferrable_event_loss, 0);
        EXPECT_LT(r.nondeferrable_work_in_events_gpu_s, r.baseline_nondeferrable_work_in_events_gpu_s);
    }
}

// Curtail=requeue for training, with a cap floor at its draw (no caps):
// the event (1000 to 2000 s) sends A the checkpoint signal at 1000 (in
// effect at 1003); the first plan CheckpointGraceSec (120) after that,
// at 1125, requeues it (at 1128). With a checkpoint every 600 s of work
// it keeps 600 of its 1128 s; admission defers it to the event's end; at
// 2000 it starts again with the 300 s restart and 4400 s of work left.
TEST(SimCurtail, RequeueLosesTheWorkSinceTheCheckpoint)
{
    const Model m = tiny_with("CurtailMode=enforce\nClassName=training Curtail=requeue CapFloorW=413");
    const Signals f = feed(m, 10, 1000, 2000, 9);
    SimOptions o = opts_for(f);
    o.checkpoint_interval_s = 600;
    o.restart_overhead_s = 300;
    const SimResult r = simulate(m, trace_of({{"A", 0, 5000, 16}}), o);
    const SimJobResult& a = job(r, "A");
    EXPECT_EQ(r.curtail_signals, 1);
    EXPECT_EQ(r.curtail_requeues, 1);
    EXPECT_EQ(a.requeues, 1);
    EXPECT_DOUBLE_EQ(a.start, 0);  // its first start
    EXPECT_DOUBLE_EQ(a.lost_gpu_s, 16.0 * (1128 - 600));
    EXPECT_DOUBLE_EQ(r.requeue_lost_gpu_s, a.lost_gpu_s);
    EXPECT_TRUE(a.deferred);
    EXPECT_DOUBLE_EQ(a.end, 2000 + 300 + 4400);
    EXPECT_DOUBLE_EQ(r.events[0].response_s, 128);
    EXPECT_DOUBLE_EQ(r.events[0].over_late_s, 128 - 30);
    EXPECT_EQ(r.unfinished, 0);
}

// Monitor plans and changes nothing: the jobs run as with CurtailMode=off
// (and off is the simulator without curtailment: test_sim.cpp's exact
// cases are unchanged).
TEST(SimCurtail, MonitorAndOffChangeNothing)
{
    const Model off = tiny_with("CurtailMode=off");
    const Model mon = tiny_with("CurtailMode=monitor");
    const Signals f = feed(off, 12, 100, 1000, 8);
    const Trace t = trace_of({{"a", 0, 2000, 16}, {"b", 0, 2000, 8}, {"c", 50, 500, 4}, {"d", 300, 900, 8}});
    const SimResult r0 = simulate(off, t, opts_for(f));
    const SimResult r1 = simulate(mon, t, opts_for(f));
    EXPECT_EQ(r0.curtail_mode, "off");
    EXPECT_EQ(r0.curtail_plans, 0);
    EXPECT_EQ(r1.curtail_mode, "monitor");
    EXPECT_GT(r1.curtail_plans, 0);
    EXPECT_GT(r1.curtail_caps, 0);  // what it would have done
    ASSERT_EQ(r0.job_results.size(), r1.job_results.size());
    for (size_t i = 0; i < r0.job_results.size(); ++i) {
        EXPECT_EQ(r0.job_results[i].start, r1.job_results[i].start);
        EXPECT_EQ(r0.job_results[i].end, r1.job_results[i].end);
        EXPECT_EQ(r0.job_results[i].placed, r1.job_results[i].placed);
        EXPECT_EQ(r1.job_results[i].caps + r1.job_results[i].suspends, 0);
    }
    EXPECT_EQ(r0.cap_violations, r1.cap_violations);
    EXPECT_DOUBLE_EQ(r0.cap_violation_s, r1.cap_violation_s);
    EXPECT_NEAR(r0.energy_kwh, r1.energy_kwh, 1e-9);
    EXPECT_DOUBLE_EQ(r0.events[0].response_s, r1.events[0].response_s);
    EXPECT_TRUE(r1.baseline);
    EXPECT_DOUBLE_EQ(r1.deferrable_delay_mean_s, 0);
    EXPECT_NEAR(r1.energy_shifted_kwh, 0, 1e-9);
    // The baselines ignore CurtailMode.
    SimOptions tree = opts_for(f);
    tree.policy = SimPolicy::Tree;
    EXPECT_EQ(simulate(mon, t, tree).curtail_mode, "off");
}

// Announced events: m2g's feed shows an event only event_notice_s before
// it starts; the run is measured against it all the same.
TEST(SimCurtail, EventNoticeHidesTheEventUntilItIsAnnounced)
{
    const Model m = tiny_with("");
    const Signals f = feed(m, 20, 1000, 1300, 15);
    const Trace t = trace_of({{"A", 0, 2000, 16}, {"B", 600, 2000, 16}});
    SimOptions o = opts_for(f);
    o.event_notice_s = 300;  // announced at 700: B (600) starts; the pre-event ramp would hold it
    const SimResult r = simulate(m, t, o);
    EXPECT_DOUBLE_EQ(r.events[0].announced, 700);
    EXPECT_DOUBLE_EQ(job(r, "B").start, 600);
    o.event_notice_s = -1;
    const SimResult all = simulate(m, t, o);
    EXPECT_DOUBLE_EQ(all.events[0].announced, 0);
    EXPECT_GT(job(all, "B").start, 600);
}

TEST(SimCurtail, OptionsAreChecked)
{
    const Model m = tiny_with("CurtailMode=enforce");
    const Trace t = trace_of({{"A", 0, 10, 4}});
    SimOptions o;
    o.class_shares = {{"inference", 60}, {"agentic", 50}};
    EXPECT_THROW(simulate(m, t, o), Error);
    o.class_shares = {{"nosuch", 10}};
    EXPECT_THROW(simulate(m, t, o), ParseError);
    o.class_shares = {};
    o.actuation_delay_s = -1;
    EXPECT_THROW(simulate(m, t, o), Error);
    o.actuation_delay_s = 0;  // at once: still a valid run
    EXPECT_EQ(simulate(m, t, o).jobs, 1);
    const std::string j = format_sim_result(simulate(m, t, o), true);
    for (const char* k : {"\"curtailment\":{\"mode\":\"enforce\"", "\"nondeferrable_loss\":", "\"energy_shifted_kwh\":",
                          "\"deferrable_stretch_p95\":", "\"energy_in_events_kwh\":"})
        EXPECT_NE(j.find(k), std::string::npos) << k << " in " << j;
}

// The same run with no node agent anywhere (--no-agent): the cap at 100 s
// fails, m2g-curtaild's loop marks A and plans again in the same round, so
// A is suspended instead (in effect at 103, the budget met as fast), and
// resumed when the event ends: the curtailment loop's failed-cap path and
// restore, as the daemon runs them (curtail_tick.hpp).
TEST(SimCurtail, ACapThatFailsIsReplannedAsASuspension)
{
    const Model m = tiny_with("CurtailMode=enforce");
    const Signals f = feed(m, 10, 100, 400, 5);
    SimOptions o = opts_for(f);
    o.no_agent = {"n[1-8]"};
    const SimResult r = simulate(m, trace_of({{"A", 0, 1000, 16}}), o);
    const SimJobResult& a = job(r, "A");
    EXPECT_GE(r.curtail_cap_failures, 1);
    EXPECT_EQ(r.curtail_caps, 0);
    EXPECT_EQ(r.curtail_suspends, 1);
    EXPECT_EQ(r.curtail_resumes, 1);
    EXPECT_EQ(a.caps, 0);
    EXPECT_EQ(a.suspends, 1);
    EXPECT_NEAR(a.suspended_s, 300, 1e-9);
    EXPECT_NEAR(a.end, 1300, 1e-6) << "suspended from 103 to 403";
    ASSERT_EQ(r.events.size(), 1u);
    EXPECT_DOUBLE_EQ(r.events[0].response_s, 3);
    o.no_agent = {"zz9"};
    EXPECT_THROW(simulate(m, trace_of({{"A", 0, 1000, 16}}), o), Error);
}

// What the controller knows (doc/simulator.md): every GPU here draws 600 W,
// the training class's estimate is 413 W. Handed the real draw (the
// oracle), the planner sees that capping both jobs saves enough; handed
// the class estimate, it counts on smaller savings from the caps and also
// suspends t1, work the oracle kept running. Both meet the event when
// the actions land (3 s).
TEST(SimCurtail, ThePlannerSeesClassEstimatesOrTheOracle)
{
    const Model m = tiny_with("CurtailMode=enforce");
    const Signals f = feed(m, 16, 100, 1000, 8);
    PowerCdf flat;
    flat.source = "flat";
    flat.points = {{0, 600}, {100, 600}};
    SimOptions o = opts_for(f);
    o.power = &flat;
    const Trace t = trace_of({{"t1", 0, 2000, 16}, {"t2", 0, 2000, 8}});
    const SimResult exact = simulate(m, t, o);
    o.planner_exact_power = false;
    const SimResult est = simulate(m, t, o);
    ASSERT_EQ(exact.events.size(), 1u);
    ASSERT_EQ(est.events.size(), 1u);
    EXPECT_DOUBLE_EQ(job(exact, "t1").w_gpu, 600);
    EXPECT_DOUBLE_EQ(job(est, "t1").w_gpu, 600);  // the jobs draw the same: only the planner's view differs
    for (const SimResult* r : {&exact, &est}) {
        EXPECT_DOUBLE_EQ(r->events[0].response_s, o.actuation_delay_s);
        EXPECT_DOUBLE_EQ(r->events[0].over_late_s, 0);
        EXPECT_EQ(job(*r, "t1").caps, 1);
        EXPECT_EQ(job(*r, "t2").caps, 1);
        EXPECT_EQ(job(*r, "t2").suspends, 0);
    }
    EXPECT_EQ(job(exact, "t1").suspends, 0);
    EXPECT_EQ(job(est, "t1").suspends, 1);
    EXPECT_GT(job(est, "t1").end, job(exact, "t1").end);
}

// Time limits: with --time-limit-factor 2 a job of 1000 s asks for 1 h,
// so select/m2g's gate holds it from a maintenance window 3000 s ahead
// that its run time alone would have fitted before.
TEST(SimCurtail, TimeLimitsFromTheFactorReachTheGate)
{
    const Model m = tiny_with("");
    const Signals f = parse_signals(
        "{\"schema\":\"m2g.signals/v1\",\"generated_at\":" + std::to_string(kT0) +
            ",\"maintenance\":[{\"id\":\"mw\",\"start\":" + std::to_string(kT0 + 3000) +
            ",\"end\":" + std::to_string(kT0 + 4000) + ",\"nodes\":\"n[1-8]\"}]}",
        "feed", m, kT0);
    SimOptions o = opts_for(f);
    const Trace t = trace_of({{"j", 0, 1000, 4}});
    EXPECT_EQ(job(simulate(m, t, o), "j").start, 0);
    o.time_limit_factor = 2;
    EXPECT_GE(job(simulate(m, t, o), "j").start, 4000);
    o.time_limit_factor = 0.5;  // 500 s, rounded up to 1 h: also past 3000
    EXPECT_GE(job(simulate(m, t, o), "j").start, 4000);
}

// A meter that lags (--meter-lag): the feed m2g-curtaild reads is the draw
// of meter_lag_s ago. Budget 10 kW, an event from 100 to 400 s cuts 3 kW
// (target 6.65 kW). A (training, 16 GPUs, 6.608 kW) runs from 0, under the
// target; I (inference, 16 GPUs at 101 W: 1.616 kW, never curtailed)
// starts at 100 and takes the site to 8.224 kW, over the event's 7. The
// planner knows I from Slurm's job list before the meter shows it
// (curtail.cpp adds a job started after the reading), so with a 20 s lag
// as with none it caps A within the actuation delay and one interval; its
// own cap is counted as not in the feed yet, so the lag never makes it cap
// twice, and nothing is given back before the meter shows the cap.
// (CurtailStartWaitSec=0: I starts when Slurm starts it; the next test
// holds it until there is room.)
TEST(SimCurtail, AJobStartIsAnsweredBeforeALaggingMeterShowsIt)
{
    const Model m = tiny_with("CurtailMode=enforce\nCurtailStartWaitSec=0");
    const Signals f = feed(m, 10, 100, 400, 3);
    const std::string a = id_with("train", false), inf = id_with("inf", true);
    auto run = [&](double lag) {
        SimOptions o = opts_for(f);
        o.class_shares = {{"inference", 50}};
        o.meter_lag_s = lag;
        return simulate(m, trace_of({{a, 0, 1000, 16}, {inf, 100, 1000, 16}}), o);
    };
    const SimResult now = run(0), late = run(20);
    ASSERT_EQ(now.events.size(), 1u);
    ASSERT_EQ(late.events.size(), 1u);
    EXPECT_DOUBLE_EQ(job(now, inf).start, 100);
    EXPECT_LE(now.events[0].response_s, 3 + m.admission.curtail_interval_sec);
    EXPECT_LE(late.events[0].response_s, 3 + m.admission.curtail_interval_sec);
    EXPECT_DOUBLE_EQ(late.meter_lag_s, 20);
    for (const SimResult* r : {&now, &late}) {
        EXPECT_EQ(job(*r, a).caps, 1);
        EXPECT_EQ(job(*r, a).suspends, 0);
        EXPECT_EQ(job(*r, inf).caps + job(*r, inf).suspends, 0);
    }
    SimOptions bad = opts_for(f);
    bad.meter_lag_s = -1;
    EXPECT_THROW(simulate(m, trace_of({{a, 0, 10, 4}}), bad), Error);
}

// select/m2g holds work m2g may not curtail while m2g-curtaild makes room
// for it (CurtailStartWaitSec, wait=power-room), so the site never goes
// over: A (training, 16 GPUs at 413 W: 6.608 kW) runs under the event's
// 7 kW; I (inference, 8 GPUs) could start at 100 but counts at the highest
// class estimate (training's 413 W here: 3.3 kW) until a meter shows it.
// The controller caps A to make room, and I starts by its wait's end (no
// other event brings a scheduling pass before). Without the wait I starts at 100 and the site is
// over until the controller's next pass and the actuation delay.
TEST(SimCurtail, WorkItMayNotCurtailWaitsForRoomAndTheSiteStaysUnder)
{
    const std::string a = id_with("train", false), inf = id_with("inf", true);
    auto run = [&](const std::string& wait, double lag) {
        const Model m = tiny_with("CurtailMode=enforce\nClassName=benchmark PowerPerGpuW=300\n" + wait);
        const Signals f = feed(m, 10, 50, 400, 3);
        SimOptions o = opts_for(f);
        o.class_shares = {{"inference", 50}};
        o.meter_lag_s = lag;
        return simulate(m, trace_of({{a, 0, 1000, 16}, {inf, 100, 1000, 8}}), o);
    };
    for (double lag : {0.0, 10.0}) {
        const SimResult held = run("", lag), not_held = run("CurtailStartWaitSec=0", lag);
        ASSERT_EQ(held.events.size(), 1u);
        EXPECT_GT(job(held, inf).start, 100) << lag;
        EXPECT_LE(job(held, inf).start, 130) << lag;  // by its wait's end (no pass retries it before)
        EXPECT_EQ(job(held, a).caps, 1) << lag;
        EXPECT_EQ(job(held, a).suspends, 0) << lag;
        EXPECT_EQ(held.events[0].over_s, 0) << lag;
        EXPECT_EQ(held.cap_violations, 0) << lag;
        EXPECT_DOUBLE_EQ(job(not_held, inf).start, 100) << lag;
        EXPECT_GT(not_held.events[0].over_s, 0) << lag;
    }
}
