// m2g tools: the forecast's backtest (tools/reports/backtest.hpp) on the
// 8-rack NVL72 fixture: when jobs run exactly their time limit, Slurm's
// estimate and m2g's forecast are both exact; when they run half of it,
// the forecast learns that from the jobs that ended and Slurm's does not.
#include <gtest/gtest.h>

#include <string>

#include "core/base/error.hpp"
#include "core/model/config.hpp"
#include "tools/reports/backtest.hpp"

using namespace m2g;

namespace {

// Two racks' worth of GPUs per job, one submitted every 10 min for 8 h: a
// queue builds on 8 racks when each runs 2 h.
Trace queue_trace(double run_share)
{
    Trace t;
    t.format = "test";
    for (int i = 0; i < 48; ++i) {
        TraceJob j;
        j.id = "j" + std::to_string(i);
        j.submit = 600.0 * i;
        j.gpus = 144;
        j.limit = 2 * 3600;
        j.duration = run_share * j.limit;
        t.jobs.push_back(j);
    }
    return t;
}

const BacktestStarts& method(const BacktestResult& r, const std::string& name)
{
    for (const BacktestStarts& s : r.starts)
        if (s.method == name)
            return s;
    throw Error("no method " + name);
}

}  // namespace

TEST(Backtest, ExactWhenJobsRunToTheirLimit)
{
    const Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    BacktestOptions o;
    o.forecast.samples = 1;
    o.warmup_s = 3 * 3600;
    o.every_s = 1800;
    const BacktestResult r = run_backtest(m, queue_trace(1.0), o);
    EXPECT_EQ(r.jobs, 48);
    EXPECT_EQ(r.limits, "the trace's requested times");
    EXPECT_GT(r.forecasts, 5);
    EXPECT_GT(r.pending_max, 3);
    const BacktestStarts& slurm = method(r, "slurm");
    const BacktestStarts& m2g = method(r, "m2g");
    ASSERT_GT(slurm.pairs, 10);
    EXPECT_EQ(m2g.pairs, slurm.pairs);
    EXPECT_LE(slurm.median_abs_s, 1.0);
    EXPECT_LE(slurm.p90_abs_s, 1.0);
    EXPECT_EQ(slurm.within_1m, 1.0);
    EXPECT_LE(m2g.p90_abs_s, 1.0);
    EXPECT_EQ(m2g.within_1m, 1.0);
    EXPECT_EQ(r.power.size(), 2u);
    EXPECT_NE(format_backtest(r, false).find("slurm"), std::string::npos);
    EXPECT_NE(format_backtest(r, true).find("\"within_10m\""), std::string::npos);
}

TEST(Backtest, TheForecastLearnsRunTimesSlurmDoesNot)
{
    const Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    BacktestOptions o;
    o.forecast.samples = 1;
    o.warmup_s = 4 * 3600;
    o.every_s = 1800;
    const BacktestResult r = run_backtest(m, queue_trace(0.5), o);
    EXPECT_NEAR(r.truth_mean_ratio, 0.5, 1e-9);
    const BacktestStarts& slurm = method(r, "slurm");
    const BacktestStarts& m2g = method(r, "m2g");
    ASSERT_GT(slurm.pairs, 0);
    EXPECT_GT(slurm.median_abs_s, 600);  // it waits for limits nobody reaches
    EXPECT_LE(m2g.median_abs_s, 1.0);
    EXPECT_GT(m2g.within_10m, 2 * slurm.within_10m);
}

TEST(Backtest, JobsWithoutALimitNeedAnOverRequestModel)
{
    const Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    Trace t = queue_trace(1.0);
    t.jobs[3].limit = 0;
    BacktestOptions o;
    o.forecast.samples = 1;
    EXPECT_THROW(run_backtest(m, t, o), Error);
    o.over_request = {0.5};
    o.over_request_source = "test";
    o.max_forecasts = 2;
    o.warmup_s = 3600;
    const BacktestResult r = run_backtest(m, t, o);
    EXPECT_NE(r.limits.find("1 job without one: run time / r, r drawn from test"), std::string::npos);
    EXPECT_EQ(r.forecasts, 2);
}
