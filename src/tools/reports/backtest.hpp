// m2g tools: the forecast's backtest (`m2g backtest`, doc/forecast.md,
// doc/results/forecast-backtest.md): how close `m2g forecast` comes to what
// then happens, against Slurm's own estimate and a naive one.
//
// A trace runs once through the simulator (the truth: the production
// placement, Slurm's backfill plan, each job's drawn power and its real run
// time). Every `every_s` of the window the truth's state is taken as a live
// controller would see it (a ClusterView: running jobs with their nodes,
// start and time limit; pending jobs in priority order with their time
// limit; never a run time or a job's drawn power) and handed to
// make_forecast(), the very function `m2g forecast` runs, with the run time
// / time limit ratios of the jobs that had ended by then (accounting) and
// the per-GPU power distribution. Its starts and site power bands are
// scored against the truth, beside:
//   slurm  Slurm's estimate (`squeue --start`): the backfill plan's start
//          (backfill.c _attempt_backfill: running jobs end at their time
//          limit, pending jobs in priority order each get the earliest
//          start that what runs and the reservations before them leave;
//          nothing beyond bf_window), the same forecast with every job at
//          its time limit;
//   naive  submit + the median wait of the jobs that started in the day
//          before, and never before now.
// Slurm-free: it runs the simulator only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.hpp"
#include "tools/reports/forecast.hpp"
#include "tools/sim/sim.hpp"
#include "tools/sim/trace.hpp"

namespace m2g {

struct BacktestOptions {
    // How the trace really runs (policy, power CDF and seed, class shares,
    // load). The backtest sets record_site_power, backfill_slurm (what the
    // forecast assumes the scheduler does) and time limits (below).
    SimOptions truth;
    // The forecasts' power draws (each GPU from `power`, `samples` runs);
    // horizon and step of the bands. runtime_ratios is filled per forecast.
    ForecastOptions forecast;
    double every_s = 3600;   // between two forecasts
    double warmup_s = 86400; // the first forecast this long after the first submit (history to learn from)
    double window_s = 0;     // forecasts over this long; 0: up to the last submit
    int min_queue = 0;       // > 0: the first forecast when at least this many jobs wait (after the warm-up)
    int max_forecasts = 0;   // 0: no cap
    int history = 2000;      // ratios of the last this many jobs ended before a forecast
    double bf_window_s = 86400;  // Slurm's bf_window: no estimate beyond it
    // Jobs the trace gives no time limit (Philly; SWF field 9 unknown): the
    // limit a user would have asked, run time / r rounded up to a minute,
    // r drawn (FNV-1a of the job's id) from these ratios (those of a trace
    // with real limits, below 0.05 taken as 0.05). Empty: such a job is an
    // error.
    std::vector<double> over_request;
    std::string over_request_source;
    std::vector<double> aheads_s = {3600, 21600};  // power error at now + each
    // The forecasts replay the past's submissions as the jobs to come
    // (ForecastOptions::past_submissions); false: nothing arrives.
    bool arrivals = true;
    // The running jobs' draw now is known, as m2g-nodeagent reports each
    // node's (their GPUs' mean, W); false: only the class distribution.
    bool measured_power = true;
};

struct BacktestStarts {
    std::string method;      // "m2g" (the starts run), "m2g-p50" (the samples' median), "slurm", "naive"
    int pairs = 0;           // (forecast, pending job) pairs Slurm gave an estimate
    double median_abs_s = 0, p90_abs_s = 0, mean_signed_s = 0;  // predicted - actual
    double within_1m = 0, within_10m = 0;  // shares of pairs
    // The pairs Slurm gave none (beyond bf_window): this method on them.
    int beyond_pairs = 0;
    double beyond_median_abs_s = 0, beyond_within_10m = 0;
};

struct BacktestPower {
    double ahead_s = 0;
    int n = 0;                   // forecasts scored (truth above 0)
    double median_abs_pct = 0, p90_abs_pct = 0, mean_signed_pct = 0;  // P50 vs the truth
    double coverage = 0;         // share with P10 <= truth <= P90
};

struct BacktestResult {
    std::string limits;          // where the time limits came from
    int jobs = 0;                // in the truth run
    double from_s = 0, to_s = 0; // window of forecast times, trace clock
    int forecasts = 0;
    int pending_max = 0;         // the longest queue a forecast saw
    std::vector<BacktestStarts> starts;  // m2g, slurm, naive
    double start_band_coverage = 0;      // m2g: actual start within [start_p10, start_p90]
    std::vector<BacktestPower> power;
    double truth_mean_ratio = 0; // mean run time / time limit over the trace
    double forecast_wall_mean_s = 0, forecast_wall_max_s = 0;
    double wall_s = 0;
};

BacktestResult run_backtest(const Model& m, const Trace& trace, const BacktestOptions& o);

// Ratios run time / requested time of an SWF trace's jobs with both known
// (for BacktestOptions::over_request), each clamped into (0, 1].
std::vector<double> over_request_ratios(const Trace& swf);

std::string format_backtest(const BacktestResult& r, bool json);

}  // namespace m2g
