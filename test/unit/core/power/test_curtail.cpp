// Curtailment planner: caps water-filled to one level, suspension when caps
// are not enough, requeue after the checkpoint grace, classes left alone,
// scopes narrowest first, the feed-lag correction, and the paced restore,
// on the eight-rack NVL72 fixture (4 GPUs per node, 18 nodes per rack)
// with hand-made signals.
#include <gtest/gtest.h>

#include "test/unit/event_fixture.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "core/power/admission.hpp"
#include "core/model/config.hpp"
#include "core/power/curtail.hpp"
#include "core/base/error.hpp"

using namespace m2g;

namespace {

constexpr int64_t kNow = 1795982400;  // 2026-11-29T20:00:00Z

std::string read_file(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

class Curtail : public testing::Test {
  protected:
    Curtail() : m(load_model(M2G_FIXTURES "/nvl72-8rack.conf"))
    {
        s.generated_at = kNow;
        s.source = "test";
        s.racks.resize(m.domains.size());
        s.rows.resize(m.fault_domains.size());
        s.thermal.resize(m.nodes.size());
        s.site.budget_kw = 60;
    }

    SignalsView view() const
    {
        SignalsView v;
        v.snap = std::make_shared<const Signals>(s);
        v.state = FeedState::Fresh;
        v.age_s = 0;
        return v;
    }

    // A job on the first `n` nodes of `rack` (from node `first`), 4 GPUs each.
    CurtailJob job(uint32_t id, WorkloadClass c, const std::string& rack, int n, double w, int first = 0) const
    {
        CurtailJob j;
        j.id = id;
        j.intent.workload_class = c;
        const auto& nodes = m.domains[m.find_domain(rack)].nodes;
        for (int i = first; i < first + n; ++i)
            j.nodes.push_back(nodes[i]);
        j.gpus_per_node = 4;
        j.w_gpu = w;
        j.start_time = kNow - 3600 + id;
        return j;
    }

    // The site's draw as the BMS would report it for `jobs`.
    double draw_of(const std::vector<CurtailJob>& jobs) const
    {
        double kw = 0;
        for (const CurtailJob& j : jobs)
            kw += j.nodes.size() * j.gpus_per_node * curtail_job_w_gpu(m.admission, j) / 1000.0;
        return kw;
    }

    // Apply every action of `p` to `jobs`, as the controller does once they took effect.
    void apply_all(const CurtailPlan& p, std::vector<CurtailJob>& jobs, int64_t now)
    {
        for (const CurtailAction& a : p.actions)
            for (CurtailJob& j : jobs)
                if (j.id == a.job)
                    apply_curtail_action(j, a, st, m.admission, now);
    }

    static const CurtailAction* find(const CurtailPlan& p, uint32_t job, CurtailStep step)
    {
        for (const CurtailAction& a : p.actions)
            if (a.job == job && a.step == step)
                return &a;
        return nullptr;
    }

    static const CurtailScope& site(const CurtailPlan& p)
    {
        return *std::find_if(p.scopes.begin(), p.scopes.end(),
                             [](const CurtailScope& sc) { return sc.scope == EventScope::Site; });
    }

    // Two 72-GPU training jobs (400 W) and one 36-GPU inference job (101 W).
    std::vector<CurtailJob> mix() const
    {
        return {job(1, WorkloadClass::Training, "nvl01", 18, 400), job(2, WorkloadClass::Training, "nvl02", 18, 400),
                job(3, WorkloadClass::Inference, "nvl03", 9, 101)};
    }

    Model m;
    Signals s;
    CurtailState st;
};

}  // namespace

TEST_F(Curtail, NothingOverNothingDone)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);  // 61.2 kW of... a budget raised to 100
    s.site.budget_kw = 100;
    const CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    EXPECT_FALSE(p.over);
    EXPECT_TRUE(p.actions.empty());
    EXPECT_EQ(p.summary, "every scope under its target");
}

TEST_F(Curtail, CapsAreWaterFilledToOneLevelAndInferenceIsLeftAlone)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);  // 57.6 + 3.636 = 61.236 kW
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 3600, 30));  // 60 -> 42 kW, target 39.9
    const CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    ASSERT_TRUE(p.over);
    EXPECT_FALSE(p.short_of_target);
    const CurtailScope& sc = site(p);
    EXPECT_DOUBLE_EQ(sc.budget_kw, 42);
    EXPECT_NEAR(sc.target_kw, 39.9, 1e-9);
    EXPECT_TRUE(sc.draw_from_feed);
    EXPECT_EQ(sc.cause, "dr-1");
    // 144 GPUs x (400 - L) >= 21.336 kW -> L = 251 W (whole watts, rounded down).
    const CurtailAction* a1 = find(p, 1, CurtailStep::Cap);
    const CurtailAction* a2 = find(p, 2, CurtailStep::Cap);
    ASSERT_TRUE(a1 && a2);
    EXPECT_EQ(a1->cap_w, 251);
    EXPECT_EQ(a2->cap_w, 251);
    EXPECT_EQ(a1->cause, "dr-1");
    EXPECT_EQ(a1->scope, "site");
    EXPECT_NE(a1->reason.find("site over budget during dr-1: 61.2 kW drawn, target 39.9 kW (budget 42.0 kW)"),
              std::string::npos)
        << a1->reason;
    EXPECT_EQ(find(p, 3, CurtailStep::Cap), nullptr) << "inference is not deferrable: never touched by default";
    EXPECT_EQ(p.actions.size(), 2u);
    EXPECT_LE(sc.after_kw, sc.target_kw);
    EXPECT_GT(sc.after_kw, sc.target_kw - 0.3) << "the level is the highest that is enough";
    EXPECT_EQ(format(curtail_annotation(*a1, kNow)), "cap w_gpu=251 cause=dr-1 scope=site at=2026-11-29T20:00:00Z");
}

TEST_F(Curtail, SuspendsWhenCapsAtTheirFloorAreNotEnough)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);
    s.events.push_back(test::site_event("dr-2", kNow - 5, kNow + 3600, 60));  // 24 kW, target 22.8
    const CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    ASSERT_TRUE(p.over);
    // Caps to the 200 W floor save 28.8 kW; 9.636 kW are left; one job
    // suspended at 200 W saves 72 x 110 W = 7.92 kW, so both stop, the
    // newer one first.
    EXPECT_EQ(find(p, 1, CurtailStep::Cap)->cap_w, 200);
    ASSERT_TRUE(find(p, 1, CurtailStep::Suspend));
    ASSERT_TRUE(find(p, 2, CurtailStep::Suspend));
    const auto pos = [&](uint32_t id) {
        return std::find_if(p.actions.begin(), p.actions.end(),
                            [&](const CurtailAction& a) { return a.job == id && a.step == CurtailStep::Suspend; }) -
               p.actions.begin();
    };
    EXPECT_LT(pos(2), pos(1)) << "job 2 started later: it loses less work";
    EXPECT_EQ(find(p, 3, CurtailStep::Suspend), nullptr);
    EXPECT_LE(site(p).after_kw, site(p).target_kw);
}

TEST_F(Curtail, TheSmallestJobThatClearsTheRestIsSuspended)
{
    std::vector<CurtailJob> jobs{job(1, WorkloadClass::Training, "nvl01", 18, 400),
                                 job(2, WorkloadClass::Batch, "nvl02", 2, 400),
                                 job(3, WorkloadClass::Batch, "nvl02", 6, 400, 2)};
    m.admission.cap_floor_w = 400;  // no room for caps: straight to suspension
    s.site.draw_kw = draw_of(jobs);  // 28.8 + 3.2 + 9.6 = 41.6
    s.site.budget_kw = 40;           // target 38: 3.6 kW to shed
    const CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    ASSERT_EQ(p.actions.size(), 1u);
    EXPECT_EQ(p.actions[0].step, CurtailStep::Suspend);
    EXPECT_EQ(p.actions[0].job, 3u) << "24 GPUs x 310 W = 7.44 kW clears 3.6 kW; job 2 (2.48 kW) does not";
    EXPECT_EQ(p.actions[0].cause, "power:site");
}

TEST_F(Curtail, NonDeferrableJobsNeedTheSitesOptIn)
{
    auto jobs = mix();
    jobs[0].intent.defer = DeferConsent::No;  // --m2g-defer=no
    s.site.draw_kw = draw_of(jobs);
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 3600, 30));
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    EXPECT_EQ(find(p, 1, CurtailStep::Cap), nullptr);
    EXPECT_EQ(find(p, 3, CurtailStep::Cap), nullptr);
    ASSERT_TRUE(find(p, 2, CurtailStep::Cap));
    EXPECT_EQ(find(p, 2, CurtailStep::Cap)->cap_w, 200) << "job 2 alone must save 21.3 kW: down to its floor";

    // ClassName=inference Curtail=cap CapFloorW=80 opts inference in.
    m = build_model(parse_m2g_conf(
        read_file(M2G_FIXTURES "/nvl72-8rack.conf") + "\nClassName=inference Curtail=cap CapFloorW=80\n", "t.conf"));
    p = plan_curtailment(m, view(), jobs, st, kNow);
    ASSERT_TRUE(find(p, 3, CurtailStep::Cap));
    EXPECT_EQ(find(p, 1, CurtailStep::Cap), nullptr) << "a training job with --m2g-defer=no still is not";
    EXPECT_EQ(curtail_level(m.admission, jobs[2].intent), CurtailLevel::Cap);
}

TEST_F(Curtail, RequeueSignalsFirstAndRequeuesAfterTheGrace)
{
    m = build_model(parse_m2g_conf(read_file(M2G_FIXTURES "/nvl72-8rack.conf") +
                                       "\nCheckpointGraceSec=90\nClassName=training Curtail=requeue\n",
                                   "t.conf"));
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);
    s.events.push_back(test::site_event("dr-2", kNow - 5, kNow + 3600, 60));
    // Without --signal there is no checkpoint to wait for: suspended instead.
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    ASSERT_TRUE(find(p, 1, CurtailStep::Suspend));
    EXPECT_EQ(find(p, 1, CurtailStep::Signal), nullptr);
    jobs[0].checkpoint_signal = jobs[1].checkpoint_signal = 10;  // --signal=USR1@...
    p = plan_curtailment(m, view(), jobs, st, kNow);
    ASSERT_TRUE(find(p, 1, CurtailStep::Signal));
    EXPECT_EQ(find(p, 1, CurtailStep::Suspend), nullptr);
    EXPECT_NE(find(p, 1, CurtailStep::Signal)->reason.find("requeue in 90 s"), std::string::npos);
    apply_all(p, jobs, kNow);
    // Before the grace: no requeue and no new signal.
    p = plan_curtailment(m, view(), jobs, st, kNow + 89);
    EXPECT_EQ(find(p, 1, CurtailStep::Requeue), nullptr);
    EXPECT_EQ(find(p, 1, CurtailStep::Signal), nullptr);
    p = plan_curtailment(m, view(), jobs, st, kNow + 90);
    ASSERT_TRUE(find(p, 1, CurtailStep::Requeue));
    ASSERT_TRUE(find(p, 2, CurtailStep::Requeue));
    EXPECT_EQ(find(p, 1, CurtailStep::Requeue)->cause, "checkpoint-grace");
    // The requeued jobs leave their GPUs in this same plan: nothing else is
    // curtailed for their draw, and the estimate after it has them at 0.
    EXPECT_EQ(p.actions.size(), 2u);
    EXPECT_NEAR(site(p).after_kw, 36 * 101 / 1000.0, 1e-6) << "only the inference job draws";
}

TEST_F(Curtail, JobsWhoseCapsFailGoStraightToSuspension)
{
    auto jobs = mix();
    jobs[0].cap_unavailable = true;  // its node agent is down
    s.site.draw_kw = draw_of(jobs);
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 3600, 30));
    const CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    EXPECT_EQ(find(p, 1, CurtailStep::Cap), nullptr);
    ASSERT_TRUE(find(p, 2, CurtailStep::Cap));
    EXPECT_EQ(find(p, 2, CurtailStep::Cap)->cap_w, 200) << "job 2 alone would need to save 21.3 kW";
    ASSERT_TRUE(find(p, 1, CurtailStep::Suspend)) << "the job m2g cannot cap is the first to stop";
    EXPECT_EQ(find(p, 2, CurtailStep::Suspend), nullptr)
        << "job 2 at its floor (7.9 kW) would have been the smallest to clear 6.9 kW, but job 1 comes first";
    EXPECT_LE(site(p).after_kw, site(p).target_kw);
}

TEST_F(Curtail, RackEventsActOnTheRackOnly)
{
    auto jobs = mix();
    s.racks[m.find_domain("nvl01")].budget_kw = 30;
    s.racks[m.find_domain("nvl01")].draw_kw = 28.8;
    s.events.push_back(test::rack_event(m, "rack-dr", "nvl01", kNow - 5, kNow + 600, 25));  // 22.5, target 21.375
    s.site.budget_kw = 1000;
    const CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    ASSERT_TRUE(find(p, 1, CurtailStep::Cap));
    EXPECT_EQ(find(p, 2, CurtailStep::Cap), nullptr) << "job 2 is in nvl02";
    EXPECT_EQ(find(p, 1, CurtailStep::Cap)->scope, "nvl01");
    EXPECT_EQ(find(p, 1, CurtailStep::Cap)->cause, "rack-dr");
    EXPECT_EQ(find(p, 1, CurtailStep::Cap)->cap_w, 296);  // 72 x (400 - L) >= 7.425 kW
}

TEST_F(Curtail, ChangesAfterTheSnapshotCorrectTheFeedsDraw)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);  // measured before the caps
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 3600, 30));
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    apply_all(p, jobs, kNow + 1);
    // The feed still says 61.2 kW (generated before the caps): no new action.
    p = plan_curtailment(m, view(), jobs, st, kNow + 2);
    EXPECT_FALSE(p.over) << p.summary;
    EXPECT_TRUE(p.actions.empty());
    EXPECT_NEAR(site(p).draw_kw, draw_of(jobs), 1e-9);
}

// Two changes to one job after the reading (a suspension, then a resume):
// the feed shows the job as it was before the first, so the two cancel.
// With only the last change kept, the resume was counted against a reading
// taken while the job ran, and a site at 122.8 kW was judged at 155.4 kW:
// every deferrable job suspended, all resumed the next pass, for 12,312 s
// of a 10 h event (doc/results/simulation.md, enforce-real, seed 5).
TEST_F(Curtail, SeveralChangesAfterTheReadingCountFromTheFirst)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);  // read at kNow, every job running uncapped
    CurtailAction stop{CurtailStep::Suspend, 1, 0, 0, "site", "dr-1", "test"};
    CurtailAction back{CurtailStep::Resume, 1, 0, 0, "site", "restore", "test"};
    apply_curtail_action(jobs[0], stop, st, m.admission, kNow + 2);
    apply_curtail_action(jobs[0], back, st, m.admission, kNow + 7);
    ASSERT_EQ(jobs[0].changes.size(), 2u);
    const CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow + 8);
    EXPECT_NEAR(site(p).draw_kw, s.site.draw_kw, 1e-9) << "suspended and resumed since the reading: no net change";
    EXPECT_DOUBLE_EQ(curtail_w_gpu_seen(jobs[0], kNow, 400, 90), 400);
    EXPECT_DOUBLE_EQ(curtail_w_gpu_seen(jobs[0], kNow + 5, 400, 90), m.admission.idle_power_w_per_gpu);
    EXPECT_DOUBLE_EQ(curtail_w_gpu_seen(jobs[0], kNow + 8, 400, 90), 400);
    // Changes older than kCurtailChangeKeepSec go at the next one.
    apply_curtail_action(jobs[0], stop, st, m.admission, kNow + 7 + kCurtailChangeKeepSec + 1);
    EXPECT_EQ(jobs[0].changes.size(), 1u);
}

// A job Slurm started after the reading is in the controller's job list
// before the meter shows it: it counts at its estimate less what its GPUs
// drew idle in the reading, so a start during an event is answered within
// one pass, not after the meter's lag.
TEST_F(Curtail, AJobStartedAfterTheReadingIsAddedToIt)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs) + 72 * 0.090;  // read at kNow: the idle GPUs of rack 4 too
    s.site.budget_kw = 70;
    jobs.push_back(job(4, WorkloadClass::Inference, "nvl04", 18, 300));
    jobs.back().start_time = kNow + 1;  // 72 x (300 - 90) W = 15.12 kW more, not in the reading
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow + 5);
    EXPECT_NEAR(site(p).draw_kw, draw_of(jobs), 1e-9);
    EXPECT_TRUE(p.over) << p.summary;
    EXPECT_FALSE(p.actions.empty());
    // Without a meter reading of its own (w_gpu 0) it counts at its class's
    // estimate (inference, 101 W), as admission judged it...
    jobs.back().w_gpu = 0;
    const double before = s.site.draw_kw;
    p = plan_curtailment(m, view(), jobs, st, kNow + 5);
    EXPECT_NEAR(site(p).draw_kw, before + 72 * (101 - 90) / 1000.0, 1e-9);
    // ...but while an event holds the scope, at the highest estimate of any
    // class (benchmark's 440 W): its draw is unknown until the meter shows it.
    s.events.push_back(test::site_event("dr-3", kNow - 5, kNow + 600, 10));
    p = plan_curtailment(m, view(), jobs, st, kNow + 5);
    EXPECT_NEAR(site(p).draw_kw, before + 72 * (440 - 90) / 1000.0, 1e-9);
    // Once a reading shows it, the reading is what counts.
    s.generated_at = kNow + 2;
    s.site.draw_kw = 60;
    p = plan_curtailment(m, view(), jobs, st, kNow + 5);
    EXPECT_NEAR(site(p).draw_kw, 60, 1e-9);
    EXPECT_FALSE(p.over);
}

// A job that started in the reading's own second counts as in it: the
// feed that a BMS writes as it reads the meter may already show it, and
// counting it twice suspended work with no event at all (curtail.sh: a site
// at 29 kW judged at 42 kW, capped and suspended before any event).
TEST_F(Curtail, AJobStartedInTheReadingsOwnSecondCountsAsInIt)
{
    auto jobs = mix();
    jobs.push_back(job(4, WorkloadClass::Inference, "nvl04", 18, 300));
    jobs.back().start_time = kNow;  // the reading's second
    s.site.draw_kw = draw_of(jobs);  // and the reading shows it
    s.site.budget_kw = draw_of(jobs) + 1;
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow + 3);
    EXPECT_NEAR(site(p).draw_kw, draw_of(jobs), 1e-9) << "counted once";
    EXPECT_FALSE(p.over) << p.summary;
    EXPECT_TRUE(p.actions.empty()) << p.summary;
    EXPECT_DOUBLE_EQ(curtail_w_gpu_seen(jobs.back(), kNow, 300, 90), 300);
    // One second later it is not in the reading: counted on top of it.
    jobs.back().start_time = kNow + 1;
    EXPECT_DOUBLE_EQ(curtail_w_gpu_seen(jobs.back(), kNow, 300, 90), 90);
    p = plan_curtailment(m, view(), jobs, st, kNow + 3);
    EXPECT_NEAR(site(p).draw_kw, draw_of(jobs) + 72 * (300 - 90) / 1000.0, 1e-9);
}

// A pending job select/m2g holds until there is room (wait=power-room)
// counts in the site's draw as a start would, so the plan makes room for it
// before it starts; it is never acted on, and no restore takes its room.
TEST_F(Curtail, APendingJobHeldForRoomIsPlannedForBeforeItStarts)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);  // 61.2 kW (57.6 training + 3.6 inference)
    s.site.budget_kw = 70;
    s.events.push_back(test::site_event("dr-4", kNow - 600, kNow + 3600, 10));  // 63 kW: target 59.85
    s.site.draw_kw = 59.0;  // already curtailed below the event's target
    jobs[0].cap_w = 388;    // 72 x (400 - 388) W = 0.86 kW saved before the reading
    jobs[0].changes.push_back({kNow - 120, 400});
    const CurtailPlan before = plan_curtailment(m, view(), jobs, st, kNow + 5);
    EXPECT_FALSE(before.over) << before.summary;
    // A 9-node inference job waits for room: 36 GPUs, at the highest class
    // estimate during the event (440 W) less what they drew idle (90 W) in
    // the reading: 12.6 kW.
    CurtailJob w;
    w.id = 9;
    w.intent.workload_class = WorkloadClass::Inference;
    w.waiting_gpus = 36;
    w.start_time = kNow - 10;  // whatever the reading's time: no reading has seen it
    jobs.push_back(w);
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow + 5);
    EXPECT_NEAR(site(p).draw_kw, 59.0 + 36 * (440 - 90) / 1000.0, 1e-9);
    ASSERT_TRUE(p.over) << p.summary;
    EXPECT_LE(site(p).after_kw, site(p).target_kw + 1e-9) << p.summary;
    for (const CurtailAction& a : p.actions)
        EXPECT_NE(a.job, 9u) << "a pending job is never acted on";
    EXPECT_TRUE(find(p, 1, CurtailStep::Cap) || find(p, 1, CurtailStep::Suspend)) << p.summary;
    // Racks and rows do not count it: it has no nodes yet.
    ASSERT_EQ(p.scopes.size(), before.scopes.size());
    for (size_t i = 0; i < p.scopes.size(); ++i) {
        if (p.scopes[i].scope != EventScope::Site) {
            EXPECT_NEAR(p.scopes[i].draw_kw, before.scopes[i].draw_kw, 1e-9) << p.scopes[i].name;
        }
    }
}

// The w_gpu= job_submit/m2g wrote is the job's own draw only when it is not
// its class's estimate: m2g-curtaild reads it back so.
TEST_F(Curtail, AnAnnotatedDrawIsTheJobsOwnOnlyWhenItIsNotTheClassEstimate)
{
    JobIntent i;
    i.workload_class = WorkloadClass::Inference;
    EXPECT_EQ(own_w_gpu(m.admission, i), 0);
    i.power_w_per_gpu = 101;  // inference's estimate
    EXPECT_EQ(own_w_gpu(m.admission, i), 0);
    JobIntent cls;
    cls.workload_class = WorkloadClass::Inference;
    EXPECT_EQ(start_w_gpu(m.admission, cls, true), 440);
    EXPECT_EQ(start_w_gpu(m.admission, cls, false), 101);
    i.power_w_per_gpu = 250;  // --m2g-power=250
    EXPECT_EQ(own_w_gpu(m.admission, i), 250);
    EXPECT_EQ(start_w_gpu(m.admission, i, true), 250) << "a stated draw stands during events too";
    EXPECT_EQ(start_w_gpu(m.admission, i, false), 250);
}

// Nothing is given back while the reading predates m2g's last change: the
// draw judged until then rests on estimates of what the change did.
TEST_F(Curtail, ARestoreWaitsForTheMeterToShowTheLastChange)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);
    s.events.push_back(test::site_event("dr-2", kNow - 5, kNow + 600, 60));
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    apply_all(p, jobs, kNow + 1);
    ASSERT_TRUE(jobs[0].suspended);
    s.events.clear();  // the event is withdrawn; the reading is still kNow's
    p = plan_curtailment(m, view(), jobs, st, kNow + 5);
    EXPECT_FALSE(p.over);
    EXPECT_TRUE(p.awaiting_meter);
    EXPECT_TRUE(p.actions.empty());
    EXPECT_EQ(p.summary, "every scope under its target; nothing is given back until the feed shows m2g's last changes");
    s.generated_at = kNow + 6;  // a reading after the change
    s.site.draw_kw = draw_of(jobs);
    p = plan_curtailment(m, view(), jobs, st, kNow + 10);
    EXPECT_FALSE(p.awaiting_meter);
    EXPECT_TRUE(p.restoring) << p.summary;
}

// An announced event's budget holds CurtailLeadSec (60 s) before it
// starts: the site is under it when it begins, not a few lagging passes
// later. Earlier than that, nothing is done for it.
TEST_F(Curtail, AnAnnouncedEventsBudgetHoldsCurtailLeadSecAhead)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);  // 61.236 kW, under the site's 80 kW
    s.site.budget_kw = 80;
    s.events.push_back(test::site_event("dr-7", kNow + 100, kNow + 3600, 30));  // 56 kW from kNow + 100
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    EXPECT_FALSE(p.over) << "100 s ahead: " << p.summary;
    EXPECT_TRUE(p.actions.empty());
    p = plan_curtailment(m, view(), jobs, st, kNow + 40);
    EXPECT_TRUE(p.over) << "60 s ahead: " << p.summary;
    ASSERT_FALSE(p.actions.empty());
    EXPECT_EQ(p.actions[0].cause, "dr-7");
    EXPECT_EQ(p.actions[0].reason.rfind("site over budget for dr-7 (from 2026-11-29T20:01:40Z): 61.2 kW drawn", 0), 0u)
        << p.actions[0].reason;
    EXPECT_NEAR(site(p).budget_kw, 56, 1e-9);
    m.admission.curtail_lead_sec = 0;  // the event's budget only from its start
    p = plan_curtailment(m, view(), jobs, st, kNow + 40);
    EXPECT_FALSE(p.over);
}

TEST_F(Curtail, AStaleFeedsDrawIsNotTrusted)
{
    auto jobs = mix();
    s.site.draw_kw = 5;  // an old reading
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 3600, 30));
    SignalsView v = view();
    v.state = FeedState::Stale;
    v.failsafe = true;
    const CurtailPlan p = plan_curtailment(m, v, jobs, st, kNow);
    EXPECT_FALSE(site(p).draw_from_feed);
    EXPECT_NEAR(site(p).draw_kw, draw_of(jobs), 1e-9);
    EXPECT_TRUE(p.over) << "the last snapshot's event still holds, judged on the jobs' estimates";
}

TEST_F(Curtail, NothingIsGivenBackOnAStaleFeedWhileTheEventLasts)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);
    s.events.push_back(test::site_event("dr-2", kNow - 5, kNow + 600, 60));
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    apply_all(p, jobs, kNow);
    jobs.pop_back();  // the inference job ends: on estimates there would be room
    SignalsView v = view();
    v.state = FeedState::Stale;
    v.failsafe = true;
    p = plan_curtailment(m, v, jobs, st, kNow + 100);
    EXPECT_FALSE(p.over);
    EXPECT_TRUE(p.held_back);
    EXPECT_TRUE(p.actions.empty());
    EXPECT_EQ(p.summary, "signals feed stale during an event: nothing is given back until it is fresh");
    // Once the event is over, the estimates are enough to restore.
    p = plan_curtailment(m, v, jobs, st, kNow + 700);
    EXPECT_FALSE(p.held_back);
    EXPECT_TRUE(p.restoring);
}

TEST_F(Curtail, RestoreResumesFirstThenLiftsCapsWithinTheRamp)
{
    m.admission.ramp_rate_kw_per_min = 12;
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);
    s.events.push_back(test::site_event("dr-2", kNow - 5, kNow + 600, 60));
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    apply_all(p, jobs, kNow);
    ASSERT_TRUE(jobs[0].suspended && jobs[1].suspended);
    // The event ends: 60 kW budget, target 57 kW.
    s.events.clear();
    s.generated_at = kNow + 700;
    s.site.draw_kw = draw_of(jobs);  // 12.96 + 3.636
    p = plan_curtailment(m, view(), jobs, st, kNow + 700);
    EXPECT_FALSE(p.over);
    // The ramp allows 12 kW/min x 5 s (the first step) = 1 kW: a resume
    // needs 72 x 110 W = 7.92 kW, so nothing yet.
    EXPECT_TRUE(p.actions.empty()) << p.summary;
    EXPECT_FALSE(p.restoring);
    st.last_restore = kNow + 640;  // a minute of ramp
    p = plan_curtailment(m, view(), jobs, st, kNow + 700);
    ASSERT_FALSE(p.actions.empty());
    EXPECT_TRUE(p.restoring);
    EXPECT_EQ(p.actions[0].step, CurtailStep::Resume);
    EXPECT_EQ(p.actions[0].job, 1u) << "job 1 was suspended last: it comes back first";
    EXPECT_LE(p.restore_kw, 12 + 1e-9);
    // Run restore steps a minute apart until nothing is left curtailed.
    int64_t t = kNow + 700;
    for (int round = 0; round < 20; ++round) {
        apply_all(p, jobs, t);
        t += 60;
        s.generated_at = t;
        s.site.draw_kw = draw_of(jobs);
        EXPECT_LE(s.site.draw_kw, 57 + 1e-9) << "a restore never crosses the target";
        p = plan_curtailment(m, view(), jobs, st, t);
        EXPECT_FALSE(p.over);
        EXPECT_LE(p.restore_kw, 12 + 1e-9);
        if (p.actions.empty())
            break;
    }
    // 57.6 + 3.6 kW uncapped would cross 57 kW: the caps stay partly on.
    EXPECT_FALSE(jobs[0].suspended || jobs[1].suspended);
    EXPECT_GT(draw_of(jobs), 50);
    EXPECT_LE(draw_of(jobs), 57 + 1e-9);
}

// Time spent with no room under the target does not build up ramp: the
// first restore after the event gives back one interval's worth.
TEST_F(Curtail, TheRampDoesNotAccrueWhileThereIsNoRoom)
{
    m.admission.ramp_rate_kw_per_min = 60;  // 1 kW/s
    m.admission.curtail_interval_sec = 2;
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 600, 30));
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    apply_all(p, jobs, kNow);
    // Ten minutes inside the band: not over, no room under the target.
    for (int64_t t = kNow + 10; t < kNow + 600; t += 2) {
        s.generated_at = t;
        s.site.draw_kw = draw_of(jobs);
        p = plan_curtailment(m, view(), jobs, st, t);
        ASSERT_FALSE(p.over);
        ASSERT_TRUE(p.actions.empty());
    }
    s.events.clear();  // (it ended at kNow + 600 anyway)
    s.generated_at = kNow + 600;
    s.site.draw_kw = draw_of(jobs);
    p = plan_curtailment(m, view(), jobs, st, kNow + 600);
    ASSERT_TRUE(p.restoring);
    EXPECT_LE(p.restore_kw, 2.0 + 1e-9) << "one 2 s interval of 1 kW/s, not ten minutes' worth";
    EXPECT_GT(p.restore_kw, 1.9) << "whole watts per GPU: 27 W x 72 GPUs";
}

TEST_F(Curtail, RestoreLiftsEveryCapWhenThereIsRoom)
{
    auto jobs = mix();
    s.site.draw_kw = draw_of(jobs);
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 600, 30));
    CurtailPlan p = plan_curtailment(m, view(), jobs, st, kNow);
    apply_all(p, jobs, kNow);
    s.events.clear();
    s.site.budget_kw = 100;
    s.generated_at = kNow + 700;
    s.site.draw_kw = draw_of(jobs);
    p = plan_curtailment(m, view(), jobs, st, kNow + 700);
    ASSERT_EQ(p.actions.size(), 2u);
    EXPECT_EQ(p.actions[0].step, CurtailStep::Uncap);
    EXPECT_EQ(p.actions[0].cap_w, 0);
    EXPECT_EQ(p.actions[0].job, 2u) << "newest curtailment first";
    apply_all(p, jobs, kNow + 700);
    EXPECT_TRUE(jobs[0].curtailed_for.empty());
    EXPECT_EQ(jobs[0].cap_w, 0);
    EXPECT_EQ(format(curtail_annotation(p.actions[0], kNow + 700)), "uncap cause=restore scope=site at=2026-11-29T20:11:40Z");
}

TEST_F(Curtail, NoBudgetNoPlan)
{
    m.site_power_budget_kw = 0;
    s.site.budget_kw = 0;
    for (auto& d : m.domains)
        d.power_budget_kw = 0;
    for (auto& f : m.fault_domains)
        f.power_budget_kw = 0;
    const CurtailPlan p = plan_curtailment(m, view(), mix(), st, kNow);
    EXPECT_TRUE(p.scopes.empty());
    EXPECT_TRUE(p.actions.empty());
}

TEST(CurtailConfig, KeysParseAndBadValuesSayWhatIsAccepted)
{
    const std::string base = "NodeName=n[1-2] Gpus=4\n";
    const Model m = build_model(parse_m2g_conf(base + "CurtailMode=enforce\nCapFloorW=250\nIdlePowerPerGpuW=70\n"
                                                      "CurtailMarginPct=3\nCheckpointGraceSec=30\nCurtailIntervalSec=2\n"
                                                      "CurtailLeadSec=120\nCurtailStartWaitSec=45\n"
                                                      "NodeAgentURL=https://%n.mgmt:7001\nClassName=batch Curtail=cap CapFloorW=150\n",
                                               "t.conf"));
    EXPECT_EQ(m.admission.curtail_mode, CurtailMode::Enforce);
    EXPECT_EQ(m.admission.cap_floor_w, 250);
    EXPECT_EQ(m.admission.idle_power_w_per_gpu, 70);
    EXPECT_EQ(m.admission.curtail_margin_pct, 3);
    EXPECT_EQ(m.admission.checkpoint_grace_sec, 30);
    EXPECT_EQ(m.admission.curtail_interval_sec, 2);
    EXPECT_EQ(m.admission.curtail_lead_sec, 120);
    EXPECT_EQ(m.admission.curtail_start_wait_sec, 45);
    EXPECT_EQ(m.admission.node_agent_url, "https://%n.mgmt:7001");
    const ClassPolicy& batch = m.admission.classes[static_cast<int>(WorkloadClass::Batch)];
    EXPECT_EQ(batch.curtail, CurtailLevel::Cap);
    EXPECT_TRUE(batch.curtail_set);
    EXPECT_EQ(batch.cap_floor_w, 150);
    // Defaults: deferrable classes may be suspended, the others not.
    const Model d = build_model(parse_m2g_conf(base + "ClassName=inference Deferrable=yes\n", "t.conf"));
    EXPECT_EQ(d.admission.curtail_mode, CurtailMode::Off);
    EXPECT_EQ(d.admission.curtail_start_wait_sec, 30);
    EXPECT_EQ(d.admission.classes[static_cast<int>(WorkloadClass::Training)].curtail, CurtailLevel::Suspend);
    EXPECT_EQ(d.admission.classes[static_cast<int>(WorkloadClass::Agentic)].curtail, CurtailLevel::None);
    EXPECT_EQ(d.admission.classes[static_cast<int>(WorkloadClass::Inference)].curtail, CurtailLevel::Suspend)
        << "Deferrable=yes brings the default with it";
    auto error = [&](const std::string& text) {
        try {
            parse_m2g_conf(base + text, "t.conf");
        } catch (const ParseError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error("ClassName=training Curtail=kill\n"),
              "t.conf:2: Curtail=kill is not valid; expected none, cap, suspend or requeue");
    EXPECT_EQ(error("CurtailMode=yes\n"), "t.conf:2: CurtailMode=yes is not valid; expected off, monitor or enforce");
    EXPECT_EQ(error("NodeAgentURL=http://localhost:6830\n"),
              "t.conf:2: NodeAgentURL=http://localhost:6830 is not valid; expected an http:// or https:// URL naming "
              "the node with %n (its name) or %a (its NodeAddr), e.g. http://%a:6830");
    EXPECT_EQ(error("CurtailMarginPct=80\n"),
              "t.conf:2: CurtailMarginPct=80 is not valid; expected a whole number from 0 to 50");
    EXPECT_EQ(error("CurtailLeadSec=-1\n"),
              "t.conf:2: CurtailLeadSec=-1 is not valid; expected a whole number from 0 to 3600");
    EXPECT_EQ(error("CurtailStartWaitSec=700\n"),
              "t.conf:2: CurtailStartWaitSec=700 is not valid; expected a whole number from 0 to 600");
}
