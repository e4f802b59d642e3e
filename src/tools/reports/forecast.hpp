// m2g tools: the forecast (`m2g forecast`, doc/forecast.md) — the live
// cluster run forward through the simulator, which runs the production
// sessions (select/m2g's placement, job_submit/m2g's admission,
// m2g-curtaild's planner): when each pending job should start and where,
// under its own intent and under the alternatives, and what the site, its
// rows and racks will draw over the next hours as P10/P50/P90 bands.
//
// It knows what a live controller knows: running jobs end at their time
// limit (Slurm's EndTime), pending jobs run for their time limit, in
// Slurm's priority order; GPU power is the class estimate (admission's),
// or drawn from a per-GPU power distribution (the bands). Slurm-free: the
// state comes in as a ClusterView (status.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/model.hpp"
#include "core/power/signals.hpp"
#include "tools/reports/status.hpp"
#include "tools/sim/sim.hpp"

namespace m2g {

// A flexibility question: shed `depth_pct` percent of the site's forecast
// GPU draw for `duration_s` from `start` (epoch s).
struct FlexRequest {
    double depth_pct = 0;
    double duration_s = 0;
    int64_t start = 0;
};

struct ForecastOptions {
    double horizon_s = 86400;  // the power bands' span
    double step_s = 900;       // between two points of a band
    // Power draws for the bands: this many runs, each GPU's draw from
    // `power` with seeds 1..samples. Null power: one run on the class
    // estimates (the band has no width).
    int samples = 20;
    const PowerCdf* power = nullptr;
    // The sample runs stop at the horizon, where the bands end (a run
    // costs far less: a deep queue drains over days): a job that has not
    // started by then in a share of them has no P10/P50/P90 start there
    // (null; Forecast::bands_until says when). true: they run on until
    // every job has started, for every job's P10-P90 start (the backtest
    // scores them all), at the price of the whole drain per run.
    bool samples_to_end = false;
    // Runs at once (the sample runs, then the flexibility offers' runs),
    // each on a thread of its own: independent simulations, so the result
    // is the same for any count. 1: one after the other.
    int threads = 1;
    // A job Slurm gives no time limit (unlimited) is taken to run this long.
    double unlimited_s = 7 * 86400.0;
    // How long jobs run against what they ask for: run time / time limit of
    // jobs that ended before now (accounting's Elapsed / Timelimit), any
    // order, each in (0, 1]. Empty: every job runs for its time limit, as
    // Slurm's backfill plan assumes. Given, the starts run (start) gives
    // each pending job the median ratio x its limit, and each running job
    // the median of the ratios above what it has already run (its limit
    // when it has outrun them all); each sample run draws from the same
    // (conditional) distributions. Backfill inside the runs still plans
    // with the time limits, as Slurm's does.
    std::vector<double> runtime_ratios;
    // The time limit (s) of each runtime_ratios job, in the same order, or
    // empty. Given, a job's ratio comes from the past jobs whose limits
    // were near its own (within a factor of two, widened to a factor of 16
    // until 50 are found; else from all): users who ask for long limits
    // run closer to them (KTH SP2: median ratio 0.19 under 1 h, 0.87 at
    // 12 h or more), and the long jobs hold the machine.
    std::vector<double> runtime_limits;
    // Jobs not submitted yet: the past's submissions replayed. The starts
    // run replays the jobs submitted in [now - P, now - P + horizon) at
    // their time + P (P = arrival_period_s, a day: yesterday's work comes
    // again); sample run s replays the period 1 + (s - 1) % arrival_periods
    // back (the days before, for the bands' width), or the last one when
    // the history does not reach that far. Each runs for its time limit x
    // its run time ratio as above. Empty: no job arrives (the queue drains).
    struct PastSubmission {
        int64_t submit = 0;    // epoch s, before now
        int gpus = 0, nodes = 0;
        int64_t time_limit_s = 0;  // <= 0: unlimited_s
        JobIntent intent;      // its class (the topology: its partition's default)
    };
    std::vector<PastSubmission> past_submissions;
    double arrival_period_s = 86400;
    int arrival_periods = 7;
    // A pending job: also forecast its start under each other intent
    // (strict:nvlink, prefer:nvlink, any), one more run each. 0: none.
    uint32_t alternatives_for = 0;
    // Priced flexibility: each request is one more run, with a site event
    // that holds the budget at (1 - depth) x the forecast draw at its start,
    // against the forecast without it.
    std::vector<FlexRequest> flex;
};

// What a FlexRequest would cost, from the run with the event against the
// forecast (class-estimate power; m2g.conf's CurtailMode= decides whether
// running jobs are capped or suspended, else only starts are deferred).
struct FlexOffer {
    FlexRequest req;
    int64_t end = 0;
    double draw_at_start_kw = 0;  // forecast site GPU draw at start (P50, class estimates)
    double target_kw = 0;         // the draw to stay under: (1 - depth) x draw_at_start_kw
    double shed_min_kw = 0;       // over the window's steps: forecast minus with the event, smallest
    double shed_mean_kw = 0;      // energy shifted / duration
    bool met = false;             // the draw stays at or under target_kw at every step after the first
    double energy_shifted_kwh = 0;  // site GPU energy in the window: forecast minus with the event
    double deferrable_delay_gpu_h = 0;     // sum of GPUs x later completion, deferrable jobs
    double nondeferrable_delay_gpu_h = 0;  // the same, jobs that may not be deferred
    int jobs_delayed = 0;
    std::vector<uint32_t> capped, suspended, requeued;  // jobs the controller would act on
    std::string curtail_mode;     // m2g.conf's CurtailMode= the run used
    // In money (m2g.conf's EnergyCurrency=), when it prices anything:
    // the delay at each job's class PricePerGpuHour=, the energy shifted at
    // EnergyPricePerKWh= (moved in time, not saved: a flat tariff makes it
    // cost nothing), and the least a kWh shed must be paid for the offer to
    // cover its delay cost (delay_cost / energy_shifted_kwh; -1 when
    // nothing is shed).
    bool priced = false;
    std::string currency;
    // Per step of the window from req.start (the forecast's step_s, the
    // last one shorter when the duration is not a multiple): the mean site
    // GPU draw without the event (the baseline) and how much lower it is
    // with it, kW.
    std::vector<double> baseline_kw, shed_kw;
    double delay_cost = 0;
    double energy_shifted_value = 0;
    double breakeven_per_kwh = -1;
};

struct ForecastAlternative {
    std::string topology;  // "prefer:nvlink"
    int64_t start = -1;    // epoch s; -1: never within the run (it cannot be placed)
    int domains = 0;       // NVLink domains it would span
    std::string nodes;     // Slurm hostlist
};

struct ForecastJob {
    uint32_t id = 0;
    std::string topology;  // the intent it was forecast with
    std::string workload_class;
    int nodes = 0, gpus = 0;
    int64_t start = -1;    // epoch s (the class-estimate run); -1: never (no placement its intent accepts)
    int64_t end = -1;      // start + time limit
    // Over the sample runs (drawn power and run times); -1: the job had not
    // started in that share of them by Forecast::bands_until (or never).
    int64_t start_p10 = -1, start_p90 = -1;
    int64_t start_p50 = -1;  // their median (the starts run's start with one run)
    int domains = 0;
    std::string nodes_list;  // Slurm hostlist of the model's node names
    std::vector<ForecastAlternative> alternatives;
};

struct ForecastBand {
    std::string scope;  // "site", "row", "rack"
    std::string name;
    std::vector<double> p10, p50, p90;  // kW at made_at + k * step_s
    std::vector<double> budget_kw;      // effective budget at each point (-1: none)
};

struct Forecast {
    int64_t made_at = 0;
    double step_s = 0;
    int samples = 0;
    // When the sample runs stopped (epoch s: made_at + the horizon); -1:
    // they ran until every job had started (samples_to_end, or one run).
    int64_t bands_until = -1;
    std::string power_source;
    int runtime_history = 0;   // ratios the run times were drawn from (0: time limits)
    int arrivals = 0;          // jobs the starts run expects to be submitted within the horizon  // "class estimates" or the CDF's source
    int running = 0;           // jobs already running, started at their nodes
    BackfillConf backfill;     // Slurm's backfill the runs reproduced (the view's)
    std::vector<ForecastJob> jobs;  // pending, in Slurm's priority order
    std::vector<ForecastBand> bands;  // site, then rows, then racks
    std::vector<FlexOffer> flex;      // one per FlexRequest, in order
    std::vector<std::string> notes;   // what was left out or assumed, for people
    double wall_s = 0;
};

// The forecast from the cluster `c` at `now`, on the signals `v` (its
// events, maintenance, budgets; nodes down or drained in `c` are unusable).
// Throws Error when `alternatives_for` is not a pending job of `c`.
Forecast make_forecast(const Model& m, const ClusterView& c, const SignalsView& v, int64_t now,
                       const ForecastOptions& o);

// What accounting adds to a forecast: from `past` (jobs as sacct shows
// them: any state, over the last days), the run time / time limit of the
// `max_ratios` that ended last before `now` (runtime_ratios) and every job
// submitted in the arrival periods before `now` (past_submissions). Jobs
// without GPUs, a time limit or an end count for neither.
void use_history(ForecastOptions& o, const std::vector<JobView>& past, int64_t now, size_t max_ratios = 2000);

// "25%:3h" (or "25:3h", durations in s, m, h or d) starting at `start`.
// Throws ParseError saying what is accepted.
FlexRequest parse_flex(std::string_view spec, int64_t start);
// The flexibility curve: depths 10 to 50% by 10, for 1, 3 and 10 h, from `start`.
std::vector<FlexRequest> flex_curve(int64_t start);

// The text table (jobs, then the site band hourly), or one JSON object.
std::string format_forecast(const Model& m, const Forecast& f, bool json);

}  // namespace m2g
