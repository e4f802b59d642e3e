// m2g tools: the forecast (tools/reports/forecast.hpp) on the 8-rack NVL72
// fixture: a live view run forward through the production sessions gives
// each pending job its start, place and alternatives, and the power bands;
// `m2g explain` quotes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/base/error.hpp"
#include "core/model/config.hpp"
#include "core/power/admission.hpp"
#include "tools/reports/explain.hpp"
#include "tools/reports/forecast.hpp"
#include "tools/reports/openadr.hpp"
#include "core/base/json.hpp"

using namespace m2g;

namespace {

constexpr int64_t kNow = 1795982400;  // 2026-11-29T20:00:00Z
constexpr int64_t kMin = 60, kHour = 3600;

class ForecastTest : public testing::Test {
  protected:
    ForecastTest() : m(load_model(M2G_FIXTURES "/nvl72-8rack.conf"))
    {
        c.taken_at = kNow;
        c.nodes.resize(m.nodes.size());
        for (NodeView& n : c.nodes) {
            n.known = true;
            n.gpus_total = 4;
        }
    }

    JobView& job(uint32_t id, JobState state, int gpus, const std::string& comment = "")
    {
        JobView j;
        j.id = id;
        j.state = state;
        j.intent.workload_class = WorkloadClass::Training;
        j.gpus = gpus;
        j.nodes = (gpus + 3) / 4;
        j.admin_comment = comment;
        j.submit_time = kNow - 10 * kMin;
        j.partition = "gpu";
        j.time_limit_s = 2 * kHour;
        c.jobs.push_back(j);
        return c.jobs.back();
    }

    // Rack r (1-8) has a running job on its first r nodes; nvl03's ends
    // first (25 min), then nvl01's (40 min), nvl02's (50 min), ...; nvl05's
    // has no time limit.
    void staircase()
    {
        for (int r = 1; r <= 8; ++r) {
            JobView& run = job(200 + static_cast<uint32_t>(r), JobState::Running, 4 * r);
            for (int i = 1; i <= r; ++i) {
                const int n = m.domains[static_cast<size_t>(r - 1)].nodes[static_cast<size_t>(i - 1)];
                run.node_idx.push_back(n);
                c.nodes[static_cast<size_t>(n)].gpus_alloc = 4;
            }
            run.start_time = kNow - kHour;
            run.end_time = r == 5 ? 0 : r == 3 ? kNow + 25 * kMin : kNow + (30 + 10 * r) * kMin;
            run.time_limit_s = r == 5 ? 0 : run.end_time - run.start_time;
        }
    }

    const ForecastJob& of(const Forecast& f, uint32_t id)
    {
        for (const ForecastJob& j : f.jobs)
            if (j.id == id)
                return j;
        throw std::runtime_error("no job " + std::to_string(id));
    }

    Model m;
    ClusterView c;
};

const std::string kStrict = "m2g:[waiting policy=strict:nvlink wait=nvlink-domain need=18 reason=waiting for an NVLink "
                            "domain with 18 free healthy nodes (best now: nvl01 with 17)]";

}  // namespace

TEST_F(ForecastTest, StrictJobStartsWhenADomainFreesAndPreferOrAnySooner)
{
    staircase();
    job(20, JobState::Pending, 72, kStrict).slurm_reason = "Resources";
    ForecastOptions o;
    o.samples = 1;
    o.alternatives_for = 20;
    const Forecast f = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(f.running, 8);
    ASSERT_EQ(f.jobs.size(), 1u);
    const ForecastJob& j = f.jobs[0];
    EXPECT_EQ(j.topology, "strict:nvlink");
    EXPECT_EQ(j.nodes, 18);
    EXPECT_EQ(j.start, kNow + 25 * kMin);  // nvl03 is whole again
    EXPECT_EQ(j.end, kNow + 25 * kMin + 2 * kHour);
    EXPECT_EQ(j.nodes_list, "r03n[01-18]");
    EXPECT_EQ(j.domains, 1);
    ASSERT_EQ(j.alternatives.size(), 2u);
    EXPECT_EQ(j.alternatives[0].topology, "prefer:nvlink");
    EXPECT_EQ(j.alternatives[0].start, kNow + 300);  // PreferWaitSec=300, then the best lesser placement
    EXPECT_EQ(j.alternatives[0].domains, 2);
    EXPECT_EQ(j.alternatives[1].topology, "any");
    EXPECT_EQ(j.alternatives[1].start, kNow);

    // explain quotes it: when, and what would start it sooner.
    const Explanation e = explain_job(m, c, SignalsView{}, c.jobs.back(), kNow, &f);
    EXPECT_NE(std::find(e.evidence.begin(), e.evidence.end(),
                        "m2g forecast: with strict:nvlink it should start in about 25 min (by 2026-11-29T20:25:00Z) "
                        "on r03n[01-18], if every job runs to its time limit (most end sooner)"),
              e.evidence.end());
    EXPECT_NE(std::find(e.suggestions.begin(), e.suggestions.end(),
                        "with --m2g-topology=prefer:nvlink it would start in about 5 min instead of in about 25 min "
                        "(on " + j.alternatives[0].nodes + ", 2 NVLink domains)"),
              e.suggestions.end());
    EXPECT_NE(std::find(e.suggestions.begin(), e.suggestions.end(),
                        "with --m2g-topology=any it would start at Slurm's next scheduling pass instead of in about "
                        "25 min (on " + j.alternatives[1].nodes + ", " + std::to_string(j.alternatives[1].domains) +
                        " NVLink domains)"),
              e.suggestions.end());
}

TEST_F(ForecastTest, PendingJobsStartInPriorityOrder)
{
    staircase();
    job(30, JobState::Pending, 72, kStrict).priority = 100;
    job(31, JobState::Pending, 72, kStrict).priority = 200;  // later, but first in Slurm's order
    ForecastOptions o;
    o.samples = 1;
    const Forecast f = make_forecast(m, c, SignalsView{}, kNow, o);
    ASSERT_EQ(f.jobs.size(), 2u);
    EXPECT_EQ(f.jobs[0].id, 31u);
    EXPECT_EQ(f.jobs[0].start, kNow + 25 * kMin);
    EXPECT_EQ(f.jobs[0].nodes_list, "r03n[01-18]");
    EXPECT_EQ(f.jobs[1].id, 30u);
    EXPECT_EQ(f.jobs[1].start, kNow + 40 * kMin);  // nvl01 next
    EXPECT_EQ(f.jobs[1].nodes_list, "r01n[01-18]");
    EXPECT_THROW(
        {
            o.alternatives_for = 999;
            make_forecast(m, c, SignalsView{}, kNow, o);
        },
        NotFoundError);
}

// The runs reproduce slurmctld's backfill as the site configures it: a job
// whose start lies beyond bf_window gets no reservation, so a long job behind
// it backfills; with a window that reaches it, it does not; with no backfill
// (sched/builtin, bf_interval=-1) nothing passes the blocked job.
TEST_F(ForecastTest, BackfillAsSlurmctldIsConfigured)
{
    staircase();  // r05's job has no time limit: the whole cluster is free only in 7 days
    job(40, JobState::Pending, 576).priority = 300;
    JobView& longer = job(41, JobState::Pending, 4);
    longer.priority = 200;
    longer.time_limit_s = 20 * 86400;
    ForecastOptions o;
    o.samples = 1;

    const Forecast dflt = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_TRUE(dflt.backfill.enabled);
    EXPECT_EQ(dflt.backfill.window_s, 86400);
    EXPECT_EQ(of(dflt, 41).start, kNow);  // 40's start is beyond the 1-day window: no reservation,
    EXPECT_GE(of(dflt, 40).start, of(dflt, 41).end);  // so the 20-day job backfills now and delays it

    c.backfill = backfill_conf("sched/backfill", "bf_window=43200,bf_max_job_test=1000");
    const Forecast wide = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(wide.backfill.window_s, 43200 * 60);
    EXPECT_EQ(of(wide, 40).start, kNow + 7 * 86400);  // when r05's unlimited job is taken to end
    EXPECT_GE(of(wide, 41).start, of(wide, 40).end);  // the reservation holds every node until 40 ends
    EXPECT_NE(format_forecast(m, wide, true).find("\"window_s\":2592000"), std::string::npos);

    c.backfill = backfill_conf("sched/builtin", "");
    const Forecast none = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_FALSE(none.backfill.enabled);
    EXPECT_GE(of(none, 41).start, of(none, 40).start);  // nothing passes the blocked job
    EXPECT_NE(std::find_if(none.notes.begin(), none.notes.end(),
                           [](const std::string& n) { return n.find("runs no backfill") != std::string::npos; }),
              none.notes.end());
}

// The runs on threads of their own (ForecastOptions::threads) are the same
// independent simulations: the forecast, alternatives and offers included,
// is the same for any count.
TEST_F(ForecastTest, ThreadsChangeNothingButTheWallTime)
{
    staircase();
    job(20, JobState::Pending, 72, kStrict).slurm_reason = "Resources";
    job(21, JobState::Pending, 8).priority = 50;
    JobView& past = job(1, JobState::Done, 8);
    past.start_time = kNow - 5 * kHour;
    past.end_time = kNow - 4 * kHour;
    const PowerCdf cdf = parse_power_cdf("cluster,metric,unit,cdf_pct,value\nx,gpu_power,W,0,100\nx,gpu_power,W,"
                                         "50,300\nx,gpu_power,W,100,700\n",
                                         "inline", "x");
    ForecastOptions o;
    o.power = &cdf;
    o.samples = 7;
    o.alternatives_for = 20;
    o.flex = {parse_flex("20%:1h", kNow), parse_flex("40%:3h", kNow)};
    o.runtime_ratios = {0.2, 0.5, 0.9};
    auto json_of = [&](int threads) {
        o.threads = threads;
        std::string js = format_forecast(m, make_forecast(m, c, SignalsView{}, kNow, o), true);
        js.erase(js.find("\"wall_s\""));  // the one figure that differs (last in the object)
        return js;
    };
    const std::string one = json_of(1);
    EXPECT_EQ(json_of(3), one);
    EXPECT_EQ(json_of(16), one);  // more threads than runs
    EXPECT_NE(one.find("\"alternatives\""), std::string::npos);
}

TEST(BackfillConf, ReadLikeBackfillLoadConfig)
{
    const BackfillConf d = backfill_conf("", "");
    EXPECT_TRUE(d.enabled);
    EXPECT_EQ(d.interval_s, 30);
    EXPECT_EQ(d.window_s, 86400);
    EXPECT_EQ(d.resolution_s, 60);
    EXPECT_EQ(d.max_job_test, 500);
    EXPECT_TRUE(d.problems.empty());

    // Keys anywhere, any case; bf_window in minutes; other keys ignored.
    const BackfillConf b =
        backfill_conf("sched/backfill", "default_queue_depth=200,BF_INTERVAL=60,bf_window=2880,"
                                        "bf_resolution=300,bf_continue,bf_max_job_test=2000");
    EXPECT_TRUE(b.enabled);
    EXPECT_EQ(b.interval_s, 60);
    EXPECT_EQ(b.window_s, 2880 * 60);
    EXPECT_EQ(b.resolution_s, 300);
    EXPECT_EQ(b.max_job_test, 2000);
    EXPECT_TRUE(b.problems.empty());

    // Out of range: slurmctld logs an error and uses the default; so does
    // the forecast, and says so.
    const BackfillConf bad = backfill_conf("sched/backfill", "bf_interval=0,bf_window=99999,bf_resolution=7200,"
                                                             "bf_max_job_test=0");
    EXPECT_EQ(bad.interval_s, 30);
    EXPECT_EQ(bad.window_s, 86400);
    EXPECT_EQ(bad.resolution_s, 60);
    EXPECT_EQ(bad.max_job_test, 500);
    ASSERT_EQ(bad.problems.size(), 4u);
    EXPECT_EQ(bad.problems[1], "SchedulerParameters bf_window=99999 is out of range (1 to 43200 min): slurmctld uses "
                               "1440 min, and so does the forecast");

    EXPECT_FALSE(backfill_conf("sched/backfill", "bf_interval=-1").enabled);  // every cycle skipped
    EXPECT_FALSE(backfill_conf("sched/builtin", "bf_window=2880").enabled);
}

TEST_F(ForecastTest, DrainedNodesAreNotUsedAndAJobThatCannotFitNeverStarts)
{
    // Every rack has one drained node: no domain ever has 18 healthy nodes.
    for (const Domain& d : m.domains)
        c.nodes[static_cast<size_t>(d.nodes[0])].drained = true;
    job(40, JobState::Pending, 72, kStrict);
    job(41, JobState::Pending, 8);
    ForecastOptions o;
    o.samples = 1;
    o.alternatives_for = 40;
    const Forecast f = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(of(f, 40).start, -1);
    ASSERT_EQ(of(f, 40).alternatives.size(), 2u);
    EXPECT_EQ(of(f, 40).alternatives[1].topology, "any");
    EXPECT_EQ(of(f, 40).alternatives[1].start, kNow);
    EXPECT_EQ(of(f, 41).start, kNow);
    EXPECT_EQ(of(f, 41).nodes_list.find("r01n01"), std::string::npos);
    // Once every job has ended the site draws nothing, never a hair below
    // zero (which --json would write as null).
    for (const ForecastBand& b : f.bands)
        for (size_t p = 0; p < b.p50.size(); ++p)
            EXPECT_GE(b.p10[p], 0.0) << b.scope << " " << b.name << " at point " << p;
    EXPECT_EQ(f.bands.front().p50.back(), 0.0);
}

TEST_F(ForecastTest, PowerBandsFromClassEstimatesAndFromDrawnPower)
{
    staircase();
    ForecastOptions o;
    o.samples = 1;
    o.horizon_s = 2 * kHour;
    const Forecast f = make_forecast(m, c, SignalsView{}, kNow, o);
    ASSERT_FALSE(f.bands.empty());
    const ForecastBand& site = f.bands.front();
    EXPECT_EQ(site.scope, "site");
    ASSERT_EQ(site.p50.size(), 9u);  // 2 h in 15-min steps, both ends
    JobIntent training;
    training.workload_class = WorkloadClass::Training;
    const double w = power_w_per_gpu(m.admission, training);
    EXPECT_NEAR(site.p50[0], 144 * w / 1000.0, 1e-6);  // 4 x (1 + ... + 8) GPUs run now
    EXPECT_EQ(site.p10[0], site.p90[0]);                // one run: no spread
    // At 2 h only nvl05's job (no time limit, 20 GPUs) runs: nvl08's, the
    // last of the others, reached its limit at 110 min.
    EXPECT_NEAR(site.p50[8], 20 * w / 1000.0, 1e-6);
    // Racks: nvl03's draw ends at 25 min.
    const auto nvl03 = std::find_if(f.bands.begin(), f.bands.end(),
                                    [](const ForecastBand& b) { return b.scope == "rack" && b.name == "nvl03"; });
    ASSERT_NE(nvl03, f.bands.end());
    EXPECT_NEAR(nvl03->p50[1], 12 * w / 1000.0, 1e-6);  // 15 min
    EXPECT_EQ(nvl03->p50[2], 0);                        // 30 min

    // Drawn power: a band with width, ordered.
    const PowerCdf cdf = parse_power_cdf("cluster,metric,unit,cdf_pct,value\nx,gpu_power,W,0,100\nx,gpu_power,W,"
                                         "50,300\nx,gpu_power,W,100,700\n",
                                         "inline", "x");
    o.power = &cdf;
    o.samples = 20;
    const Forecast g = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(g.samples, 20);
    const ForecastBand& s2 = g.bands.front();
    EXPECT_LT(s2.p10[0], s2.p50[0]);
    EXPECT_LT(s2.p50[0], s2.p90[0]);
    EXPECT_EQ(format_forecast(m, g, false).find("site GPU power, kW (P10 / P50 / P90), hourly:") != std::string::npos,
              true);
}

// What accounting and the node agents add: jobs end at the median run time
// / limit of the jobs that ended before (of those above what a running job
// has already run), yesterday's submissions arrive again, and a running
// job's measured draw replaces the class estimate.
TEST_F(ForecastTest, RunTimesFromHistoryArrivalsAndMeasuredPower)
{
    staircase();
    job(20, JobState::Pending, 72, kStrict).slurm_reason = "Resources";
    ForecastOptions o;
    o.samples = 1;
    o.horizon_s = 2 * kHour;
    // nvl03's job has run 60 of its 85 min (0.71): of the ratios above
    // that, 0.75 and 1, the median 0.875 ends it at 74.4 min, 14.4 from now.
    o.runtime_ratios = {1.0, 0.25, 0.75, 0.5};
    Forecast f = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(f.runtime_history, 4);
    EXPECT_NEAR(static_cast<double>(of(f, 20).start), static_cast<double>(kNow) + 0.875 * 85 * kMin - kHour, 1.0);
    EXPECT_EQ(of(f, 20).nodes_list, "r03n[01-18]");
    EXPECT_NE(format_forecast(m, f, false).find("run times: drawn from 4 jobs' run time / limit"), std::string::npos);
    // Having outrun every ratio a job runs to its limit, as Slurm assumes:
    // with none above 0.3 every rack's job does (nvl05's has no limit).
    o.runtime_ratios = {0.25, 0.3};
    f = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(of(f, 20).start, kNow + 25 * kMin);
    // With each ratio's limit known, a job's ratio comes from jobs that
    // asked for about as long: 60 jobs of 85-min limits ran to them, 60 of
    // 10 h stopped at 0.75. Pooled, nvl03's job ends at 0.875 of its limit
    // as above; by limit (every running job's within a factor of 4 of
    // 85 min), at its limit, 25 min from now.
    o.runtime_ratios.clear();
    for (int i = 0; i < 60; ++i) {
        o.runtime_ratios.push_back(1.0);
        o.runtime_limits.push_back(85 * kMin);
        o.runtime_ratios.push_back(0.75);
        o.runtime_limits.push_back(10 * kHour);
    }
    f = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(of(f, 20).start, kNow + 25 * kMin);
    o.runtime_limits.clear();  // not known: all of them
    f = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_NEAR(static_cast<double>(of(f, 20).start), static_cast<double>(kNow) + 0.875 * 85 * kMin - kHour, 1.0);
    // Samples draw run times: the P10-P90 start has width, the median within it.
    o.runtime_ratios = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
    o.samples = 20;
    f = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(f.samples, 20);
    EXPECT_LT(of(f, 20).start_p10, of(f, 20).start_p90);
    EXPECT_LE(of(f, 20).start_p10, of(f, 20).start_p50);
    EXPECT_LE(of(f, 20).start_p50, of(f, 20).start_p90);

    // Arrivals: a job submitted yesterday at 19:30 for 8 GPUs comes again
    // at 20:30; one from 18:00 does not fall in the horizon.
    o = ForecastOptions{};
    o.samples = 1;
    o.horizon_s = 2 * kHour;
    const Forecast without = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(without.arrivals, 0);
    ForecastOptions::PastSubmission p;
    p.submit = kNow - 86400 + 30 * kMin;
    p.gpus = 8;
    p.nodes = 2;
    p.time_limit_s = kHour;
    p.intent.workload_class = WorkloadClass::Training;
    o.past_submissions.push_back(p);
    p.submit = kNow - 86400 - 2 * kHour;
    o.past_submissions.push_back(p);
    const Forecast with = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(with.arrivals, 1);
    JobIntent training;
    training.workload_class = WorkloadClass::Training;
    const double w = power_w_per_gpu(m.admission, training);
    EXPECT_NEAR(with.bands.front().p50[1], without.bands.front().p50[1], 1e-9);  // 20:15
    EXPECT_NEAR(with.bands.front().p50[3] - without.bands.front().p50[3], 8 * w / 1000.0, 1e-6);  // 20:45
    EXPECT_TRUE(with.jobs.size() == 1 && with.jobs[0].id == 20);  // arrivals are not pending jobs

    // Measured draw: nvl01's job (4 GPUs) draws 999 W per GPU.
    o = ForecastOptions{};
    o.samples = 1;
    c.jobs[0].measured_w_gpu = 999;
    const Forecast measured = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_NEAR(measured.bands.front().p50[0], (140 * w + 4 * 999) / 1000.0, 1e-6);
}

// The sample runs stop at the horizon, where the bands end: the bands are
// those of runs to the end, a job that starts after it in every sample has
// no P10-P90 start (the text says "after"), and samples_to_end gives it one.
TEST_F(ForecastTest, SampleRunsStopAtTheHorizon)
{
    staircase();
    job(20, JobState::Pending, 72, kStrict).slurm_reason = "Resources";
    // Every node: it waits for nvl05's job (no time limit: 7 days x its
    // drawn ratio, 16.8 h at the least).
    job(21, JobState::Pending, 576).slurm_reason = "Priority";
    ForecastOptions o;
    o.samples = 20;
    o.horizon_s = 2 * kHour;
    o.runtime_ratios = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
    const Forecast f = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(f.bands_until, kNow + 2 * kHour);
    EXPECT_GE(of(f, 20).start_p10, kNow);  // within the horizon: a band
    EXPECT_LE(of(f, 20).start_p90, kNow + 2 * kHour);
    EXPECT_GT(of(f, 21).start, kNow + 2 * kHour);  // the starts run goes on to the end
    EXPECT_EQ(of(f, 21).start_p10, -1);
    EXPECT_EQ(of(f, 21).start_p50, -1);
    EXPECT_EQ(of(f, 21).start_p90, -1);
    const std::string text = format_forecast(m, f, false);
    EXPECT_NE(text.find("[after 22:00]"), std::string::npos) << text;
    EXPECT_NE(format_forecast(m, f, true).find("\"bands_until\""), std::string::npos);

    o.samples_to_end = true;
    const Forecast g = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_EQ(g.bands_until, -1);
    EXPECT_GT(of(g, 21).start_p10, kNow + 16 * kHour);
    EXPECT_LE(of(g, 21).start_p10, of(g, 21).start_p90);
    EXPECT_EQ(of(g, 20).start_p10, of(f, 20).start_p10);
    EXPECT_EQ(of(g, 20).start_p50, of(f, 20).start_p50);
    EXPECT_EQ(of(g, 20).start_p90, of(f, 20).start_p90);
    // Nothing before the stop changes: the same bands.
    ASSERT_EQ(f.bands.size(), g.bands.size());
    for (size_t b = 0; b < f.bands.size(); ++b) {
        EXPECT_EQ(f.bands[b].p10, g.bands[b].p10) << f.bands[b].name;
        EXPECT_EQ(f.bands[b].p50, g.bands[b].p50) << f.bands[b].name;
        EXPECT_EQ(f.bands[b].p90, g.bands[b].p90) << f.bands[b].name;
    }
}

TEST_F(ForecastTest, FlexibilityOfferShedsWithCurtailmentAndSaysWhenItCannot)
{
    staircase();
    ForecastOptions o;
    o.samples = 1;
    o.horizon_s = 2 * kHour;
    o.flex = {parse_flex("50%:1h", kNow + 5 * kMin)};
    // Without the controller (CurtailMode=off) only starts can wait, and
    // nothing is pending: nothing is shed.
    m.admission.curtail_mode = CurtailMode::Off;
    Forecast f = make_forecast(m, c, SignalsView{}, kNow, o);
    ASSERT_EQ(f.flex.size(), 1u);
    EXPECT_EQ(f.flex[0].curtail_mode, "off");
    EXPECT_GT(f.flex[0].draw_at_start_kw, 0);
    EXPECT_NEAR(f.flex[0].target_kw, f.flex[0].draw_at_start_kw / 2, 1e-9);
    EXPECT_FALSE(f.flex[0].met);
    EXPECT_NEAR(f.flex[0].energy_shifted_kwh, 0, 1e-9);
    EXPECT_TRUE(f.flex[0].suspended.empty() && f.flex[0].capped.empty());
    // With m2g-curtaild enforcing, the planner caps or suspends running
    // jobs: the draw stays under the target, the work comes later.
    m.admission.curtail_mode = CurtailMode::Enforce;
    f = make_forecast(m, c, SignalsView{}, kNow, o);
    const FlexOffer& x = f.flex[0];
    EXPECT_EQ(x.curtail_mode, "enforce");
    EXPECT_TRUE(x.met) << format_forecast(m, f, false);
    // Against the forecast at each step (which falls as jobs reach their
    // limits): something is shed all along.
    EXPECT_GT(x.shed_min_kw, 0);
    EXPECT_GT(x.energy_shifted_kwh, 0);
    EXPECT_FALSE(x.capped.empty() && x.suspended.empty());
    EXPECT_GT(x.jobs_delayed, 0);
    EXPECT_GT(x.deferrable_delay_gpu_h + x.nondeferrable_delay_gpu_h, 0);
    EXPECT_NE(format_forecast(m, f, false).find("50% for 1 h from 20:05: under "), std::string::npos);

    EXPECT_EQ(flex_curve(kNow).size(), 15u);
    EXPECT_EQ(parse_flex("25:90m", kNow).duration_s, 5400);
    for (const char* bad : {"25", "0%:1h", "120%:1h", "25%:-1h", "25%:3y", "x:1h"})
        EXPECT_THROW(parse_flex(bad, kNow), ParseError) << bad;
}

TEST_F(ForecastTest, FlexibilityOfferInMoneyAndItsStepSeries)
{
    staircase();
    ForecastOptions o;
    o.samples = 1;
    o.horizon_s = 2 * kHour;
    o.flex = {parse_flex("50%:1h", kNow + 5 * kMin)};
    m.admission.curtail_mode = CurtailMode::Enforce;
    Forecast f = make_forecast(m, c, SignalsView{}, kNow, o);
    EXPECT_FALSE(f.flex[0].priced);  // no price in m2g.conf: no money
    EXPECT_EQ(format_forecast(m, f, false).find("delay costs"), std::string::npos);
    // Every job here is training: 4 per GPU-hour, energy 0.25 per kWh.
    m.price_per_gpu_hour[static_cast<size_t>(WorkloadClass::Training)] = 4;
    m.energy_price_per_kwh = 0.25;
    m.energy_currency = "USD";
    f = make_forecast(m, c, SignalsView{}, kNow, o);
    const FlexOffer& x = f.flex[0];
    ASSERT_TRUE(x.priced);
    EXPECT_EQ(x.currency, "USD");
    EXPECT_NEAR(x.delay_cost, 4 * (x.deferrable_delay_gpu_h + x.nondeferrable_delay_gpu_h), 1e-9);
    EXPECT_GT(x.delay_cost, 0);
    EXPECT_NEAR(x.energy_shifted_value, 0.25 * x.energy_shifted_kwh, 1e-9);
    EXPECT_NEAR(x.breakeven_per_kwh, x.delay_cost / x.energy_shifted_kwh, 1e-9);
    EXPECT_NE(format_forecast(m, f, false).find(" USD/kWh shed"), std::string::npos);
    // One value per 15-min step of the hour; they add up to the energy shifted.
    ASSERT_EQ(x.baseline_kw.size(), 4u);
    ASSERT_EQ(x.shed_kw.size(), 4u);
    double kwh = 0;
    for (double s : x.shed_kw)
        kwh += s * 0.25;
    EXPECT_NEAR(kwh, x.energy_shifted_kwh, 1e-6);
    const JsonPtr j = json_parse(format_forecast(m, f, true), "forecast");
    json_object *flex = nullptr, *money = nullptr, *cur = nullptr;
    ASSERT_TRUE(json_object_object_get_ex(j.get(), "flexibility", &flex));
    ASSERT_TRUE(json_object_object_get_ex(json_object_array_get_idx(flex, 0), "money", &money));
    ASSERT_TRUE(json_object_object_get_ex(money, "currency", &cur));
    EXPECT_STREQ(json_object_get_string(cur), "USD");
}

TEST_F(ForecastTest, OpenADRReportsCarryTheBandsAndTheOffers)
{
    staircase();
    ForecastOptions o;
    o.samples = 1;
    o.horizon_s = kHour;
    o.flex = {parse_flex("50%:40m", kNow + 5 * kMin)};
    m.admission.curtail_mode = CurtailMode::Enforce;
    const Forecast f = make_forecast(m, c, SignalsView{}, kNow, o);
    OpenADRReportOptions ro;
    ro.event_id = "dr-2026-12";
    const JsonPtr j = json_parse(openadr_reports(m, f, ro), "reports");
    ASSERT_TRUE(json_object_is_type(j.get(), json_type_array));
    ASSERT_EQ(json_object_array_length(j.get()), 2u);  // usage forecast, one offer
    auto get = [](json_object* obj, const char* k) {
        json_object* v = nullptr;
        EXPECT_TRUE(json_object_object_get_ex(obj, k, &v)) << k;
        return v;
    };
    json_object* usage = json_object_array_get_idx(j.get(), 0);
    EXPECT_STREQ(json_object_get_string(get(usage, "eventID")), "dr-2026-12");
    EXPECT_STREQ(json_object_get_string(get(usage, "clientName")), m.cluster_name.empty() ? "m2g" : m.cluster_name.c_str());
    json_object* res = get(usage, "resources");
    ASSERT_EQ(json_object_array_length(res), f.bands.size());  // site, rows, racks
    json_object* site = json_object_array_get_idx(res, 0);
    json_object* ivs = get(site, "intervals");
    ASSERT_EQ(json_object_array_length(ivs), f.bands[0].p50.size());
    json_object* pl0 = json_object_array_get_idx(get(json_object_array_get_idx(ivs, 0), "payloads"), 0);
    EXPECT_STREQ(json_object_get_string(get(pl0, "type")), "USAGE_FORECAST");
    EXPECT_NEAR(json_object_get_double(json_object_array_get_idx(get(pl0, "values"), 0)), f.bands[0].p50[0] * 0.25,
                1e-3);  // kWh in 15 min
    EXPECT_STREQ(json_object_get_string(get(get(site, "intervalPeriod"), "duration")), "PT15M");
    // The offer: 40 min = two 15-min steps and a 10-min one that says so.
    json_object* offer = json_object_array_get_idx(j.get(), 1);
    json_object* oiv = get(json_object_array_get_idx(get(offer, "resources"), 0), "intervals");
    ASSERT_EQ(json_object_array_length(oiv), 3u);
    json_object* last = json_object_array_get_idx(oiv, 2);
    EXPECT_STREQ(json_object_get_string(get(get(last, "intervalPeriod"), "duration")), "PT10M");
    json_object* pls = get(json_object_array_get_idx(oiv, 0), "payloads");
    EXPECT_STREQ(json_object_get_string(get(json_object_array_get_idx(pls, 0), "type")), "BASELINE");
    EXPECT_STREQ(json_object_get_string(get(json_object_array_get_idx(pls, 1), "type")), "LOAD_SHED_DELTA_AVAILABLE");
    EXPECT_NEAR(json_object_get_double(json_object_array_get_idx(get(json_object_array_get_idx(pls, 1), "values"), 0)),
                -std::max(0.0, f.flex[0].shed_kw[0]), 1e-3);  // a decrease in load
    ro.event_id = "bad id!";
    EXPECT_THROW(openadr_reports(m, f, ro), Error);
}
