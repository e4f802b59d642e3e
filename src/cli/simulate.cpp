// m2g CLI: `m2g simulate` — replay a job trace on the model with one
// placement policy (the simulator is src/tools/sim/, doc/simulator.md) —
// and `m2g backtest`: the forecast scored against such a replay
// (src/tools/reports/backtest.hpp, doc/forecast.md).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "core/base/error.hpp"
#include "core/base/source.hpp"
#include "core/model/config.hpp"
#include "core/power/signals.hpp"
#include "tools/reports/backtest.hpp"
#include "tools/sim/sim.hpp"
#include "tools/sim/trace.hpp"

namespace m2g {
namespace cli {
namespace {

struct SimulateArgs {
    std::string conf, trace, policy = "m2g", timeline, power_cdf, power_cluster = "kalos", job_log, cap_speed,
        power_log, reservation = "nodes", block_sizes, planner_power = "exact", backfill = "easy";
    std::vector<std::string> class_shares;  // CLASS=PCT
    SimOptions opts;
    bool json = false, no_baseline = false;
};

// --class-share CLASS=PCT, repeatable.
std::vector<std::pair<std::string, double>> parse_class_shares(const std::vector<std::string>& specs)
{
    std::vector<std::pair<std::string, double>> out;
    for (const std::string& cs : specs) {
        const size_t eq = cs.find('=');
        char* end = nullptr;
        const double pct = eq == std::string::npos ? 0 : std::strtod(cs.c_str() + eq + 1, &end);
        if (eq == std::string::npos || eq == 0 || eq + 1 == cs.size() || *end)
            throw ParseError("--class-share '" + cs + "': expected CLASS=PERCENT, e.g. inference=20");
        out.emplace_back(cs.substr(0, eq), pct);
    }
    return out;
}

void run_simulate(const SimulateArgs& a)
{
    std::vector<std::string> warnings;
    const std::string conf = resolve_conf_path(a.conf);
    const Model m = load_model(conf, &warnings);
    print_warnings(warnings, conf);
    const Trace t = read_trace(a.trace);
    if (t.skipped)
        std::cerr << "m2g: " << a.trace << ": skipped " << plural(t.skipped, "job", "jobs")
                  << " with unknown run time or no processors\n";
    SimOptions o = a.opts;
    o.policy = parse_sim_policy(a.policy);
    o.reserve_nodes = a.reservation == "nodes";
    o.backfill_slurm = a.backfill == "slurm";
    o.planner_exact_power = a.planner_power == "exact";
    if (a.block_sizes == "slurm-default") {
        o.block_sizes = {0};
    } else if (!a.block_sizes.empty()) {
        std::string v;
        for (size_t i = 0; i <= a.block_sizes.size(); ++i) {
            if (i < a.block_sizes.size() && a.block_sizes[i] != ',') {
                v += a.block_sizes[i];
                continue;
            }
            char* end = nullptr;
            const long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end || n <= 0 || n > 1 << 20)
                throw ParseError("--block-sizes '" + a.block_sizes +
                                 "': expected node counts separated by commas, e.g. 18,36,72,144, or slurm-default");
            o.block_sizes.push_back(static_cast<int>(n));
            v.clear();
        }
    }
    o.class_shares = parse_class_shares(a.class_shares);
    if (!a.cap_speed.empty())
        o.cap_speed = parse_cap_speed(a.cap_speed);
    o.curtail_baseline = !a.no_baseline;
    o.record_site_power = !a.power_log.empty();
    // A timeline may lie anywhere in time: judge "generated in the future"
    // against a far clock.
    Signals timeline;
    if (!a.timeline.empty()) {
        timeline = parse_signals(read_text_file(a.timeline), a.timeline, m, int64_t(1) << 40);
        o.timeline = &timeline;
    }
    PowerCdf cdf;
    if (!a.power_cdf.empty()) {
        cdf = read_power_cdf(a.power_cdf, a.power_cluster);
        o.power = &cdf;
    }
    const SimResult r = simulate(m, t, o);
    if (!a.job_log.empty()) {
        std::ofstream f(a.job_log);
        f << format_sim_jobs(m, r);
        if (!f.flush())
            throw Error(a.job_log + ": cannot write the job log");
    }
    if (!a.power_log.empty()) {
        std::ofstream f(a.power_log);
        f << format_sim_power(r);
        if (!f.flush())
            throw Error(a.power_log + ": cannot write the power log");
    }
    std::cout << format_sim_result(r, a.json);
}

// The options of the power and curtailment model (doc/simulator.md).
void add_power_options(CLI::App* simulate, SimulateArgs& sim)
{
    simulate->add_option("--signals-timeline", sim.timeline,
                         "a signals feed (m2g.signals/v1) whose generated_at is the trace's first submit: budgets, "
                         "DR events, maintenance and health over the run");
    simulate->add_option("--power-cdf", sim.power_cdf,
                         "per-GPU power drawn per job from this CDF (../shared/data/acme2023_power_thermal_cdf.csv)");
    simulate->add_option("--power-cluster", sim.power_cluster, "the CDF's cluster column to use (kalos or seren)");
    simulate->add_option("--class", sim.opts.workload_class, "every job's workload class (as --m2g-class)");
    simulate->add_option("--class-share", sim.class_shares,
                         "CLASS=PCT: that percent of jobs (chosen by a hash of the job id) gets CLASS instead; "
                         "repeatable");
    simulate->add_option("--event-notice", sim.opts.event_notice_s,
                         "DR events enter m2g's feed this many seconds before they start (default: from the start "
                         "of the run)")
        ->check(CLI::Range(int64_t(0), int64_t(1) << 40));
    simulate->add_option("--time-limit-factor", sim.opts.time_limit_factor,
                         "each job's time limit, as m2g and backfill see it: its run time times F rounded up to a "
                         "whole hour (0, default: the run time itself, an oracle)")
        ->check(CLI::Range(0.0, 1000.0));
    simulate->add_flag("--time-limits-from-trace", sim.opts.time_limits_from_trace,
                       "each job's time limit is the trace's requested time (SWF field 9), as sbatch -t gave it; a "
                       "job ends at its limit, as Slurm's TIMEOUT")
        ->excludes("--time-limit-factor");
    simulate->add_option("--planner-power", sim.planner_power,
                         "what the curtailment planner knows of a job's draw: exact (the simulated draw, default) "
                         "or class (its class's estimate, as m2g-curtaild without a per-job meter)")
        ->check(CLI::IsMember({"exact", "class"}));
    simulate->add_option("--actuation-delay", sim.opts.actuation_delay_s,
                         "curtailment: seconds from a plan to its effect on the jobs (default 3)")
        ->check(CLI::Range(0.0, 3600.0));
    simulate->add_option("--meter-lag", sim.opts.meter_lag_s,
                         "curtailment: the feed m2g-curtaild reads reports the draw of this many seconds ago, as a "
                         "lagging meter or BMS would (default 0: the draw at the start of this second)")
        ->check(CLI::Range(0.0, 3600.0));
    simulate->add_option("--no-agent", sim.opts.no_agent,
                         "curtailment: nodes (hostlist) without a working m2g-nodeagent: caps on jobs there fail, "
                         "and m2g-curtaild's loop suspends those jobs instead; repeatable");
    simulate->add_option("--cap-speed", sim.cap_speed,
                         "curtailment: speed of a capped job, RATIO:SPEED points of draw under the cap over uncapped "
                         "draw (default: the Perseus A100 measurements, doc/simulator.md)");
    simulate->add_option("--checkpoint-interval", sim.opts.checkpoint_interval_s,
                         "curtailment and preemption: a job checkpoints after every this many seconds of work; a "
                         "requeue loses the rest (default 1800, 0: never)")
        ->check(CLI::Range(0.0, 1e9));
    simulate->add_option("--restart-overhead", sim.opts.restart_overhead_s,
                         "curtailment and preemption: seconds of work a requeued job redoes when it starts again "
                         "(default 300)")
        ->check(CLI::Range(0.0, 1e9));
    simulate->add_flag("--curtail-every-tick", sim.opts.curtail_every_tick,
                       "curtailment: call the planner at every round, also on inputs unchanged since a plan that "
                       "found nothing to do (same results, slower: for checking)");
    simulate->add_option("--preempt-share", sim.opts.preempt_pct,
                         "PCT of jobs (by a hash of the id) run in a QOS that preempts the others (preempt/qos, "
                         "PreemptMode=REQUEUE; default 0: no preemption; doc/simulator.md)")
        ->check(CLI::Range(0.0, 100.0));
    simulate->add_option("--preemptor-topology", sim.opts.preemptor_topology,
                         "the preemptors' --m2g-topology under m2g (default strict:nvlink)");
    simulate->add_flag("--no-baseline", sim.no_baseline,
                       "curtailment: skip the second run with CurtailMode=off (no loss, slowdown or energy shifted)");
}

struct BacktestArgs {
    std::string conf, trace, power_cdf, power_cluster = "kalos", over_request;
    std::vector<std::string> class_shares;
    BacktestOptions opts;
    double every_min = 60, warmup_h = 24, window_h = 0, horizon_h = 6, step_min = 15;
    bool json = false;
};

void run_backtest_cmd(const BacktestArgs& a)
{
    std::vector<std::string> warnings;
    const std::string conf = resolve_conf_path(a.conf);
    const Model m = load_model(conf, &warnings);
    print_warnings(warnings, conf);
    const Trace t = read_trace(a.trace);
    BacktestOptions o = a.opts;
    o.every_s = a.every_min * 60;
    o.warmup_s = a.warmup_h * 3600;
    o.window_s = a.window_h * 3600;
    o.forecast.horizon_s = a.horizon_h * 3600;
    o.forecast.step_s = a.step_min * 60;
    o.truth.class_shares = parse_class_shares(a.class_shares);
    if (!a.over_request.empty()) {
        const Trace swf = read_trace(a.over_request);
        o.over_request = over_request_ratios(swf);
        if (o.over_request.empty())
            throw Error(a.over_request + ": no job with both a run time and a requested time (SWF fields 4 and 9)");
        o.over_request_source = a.over_request + " (run time / requested time of " +
                                std::to_string(o.over_request.size()) + " jobs)";
    }
    PowerCdf cdf;
    if (!a.power_cdf.empty()) {
        cdf = read_power_cdf(a.power_cdf, a.power_cluster);
        o.truth.power = &cdf;
        o.forecast.power = &cdf;
    }
    std::cout << format_backtest(run_backtest(m, t, o), a.json);
}

}  // namespace

Command add_backtest(CLI::App& app)
{
    auto bt = std::make_shared<BacktestArgs>();
    auto* sub = app.add_subcommand(
        "backtest", "Score m2g forecast against a simulated trace: starts (vs Slurm's estimate and a naive one) "
                    "and site power, forecast every --every minutes");
    add_conf_option(sub, bt->conf, "--topology");
    sub->add_option("--trace", bt->trace, "Philly CSV (../shared/data) or SWF (*.swf)")->required();
    sub->add_option("--over-request", bt->over_request,
                    "an SWF trace whose run time / requested time ratios give jobs without a time limit theirs "
                    "(run time / a drawn ratio, rounded up to a minute)");
    sub->add_option("--scale-gpus", bt->opts.truth.scale_gpus, "multiply every job's GPUs by K")
        ->check(CLI::Range(1, 4096));
    sub->add_option("--load", bt->opts.truth.load, "scale arrivals to this offered load (0: as recorded)")
        ->check(CLI::Range(0.0, 1000.0));
    sub->add_option("--seed", bt->opts.truth.seed,
                    "the truth's power draws and same-second order (the forecasts draw with seeds 1..--samples)")
        ->check(CLI::Range(uint64_t(0), uint64_t(1) << 40));
    sub->add_option("--power-cdf", bt->power_cdf, "per-GPU power distribution (../shared/data/acme2023_power_thermal_cdf.csv)");
    sub->add_option("--power-cluster", bt->power_cluster, "the CDF's cluster column to use (kalos or seren)");
    sub->add_option("--class-share", bt->class_shares, "CLASS=PCT of jobs (by a hash of the id) get CLASS; repeatable");
    sub->add_option("--samples", bt->opts.forecast.samples, "forecast runs for the bands (default 20)")
        ->check(CLI::Range(1, 1000));
    sub->add_option("--threads", bt->opts.forecast.threads,
                    "each forecast's runs at once, each on a thread of its own (default 1); the same result")
        ->check(CLI::Range(1, 1024));
    sub->add_option("--every", bt->every_min, "minutes between two forecasts (default 60)")->check(CLI::Range(1.0, 1e6));
    sub->add_option("--warmup", bt->warmup_h, "hours of the trace before the first forecast (default 24)")
        ->check(CLI::Range(0.0, 1e6));
    sub->add_option("--window", bt->window_h, "hours of forecasts (default: up to the last submit)")
        ->check(CLI::Range(0.0, 1e6));
    sub->add_option("--min-queue", bt->opts.min_queue,
                    "start the forecasts when at least this many jobs wait, after the warm-up (0: at once)")
        ->check(CLI::Range(0, 10000000));
    sub->add_option("--max-forecasts", bt->opts.max_forecasts, "stop after this many forecasts (0: none)")
        ->check(CLI::Range(0, 1000000));
    sub->add_option("--history", bt->opts.history,
                    "run time / limit ratios of the last N jobs ended before each forecast (default 2000)")
        ->check(CLI::Range(0, 10000000));
    sub->add_option("--horizon", bt->horizon_h, "hours of power band per forecast (default 6)")
        ->check(CLI::Range(0.25, 240.0));
    sub->add_option("--step", bt->step_min, "minutes between two points of a band (default 15)")
        ->check(CLI::Range(1.0, 1440.0));
    sub->add_flag("--no-arrivals{false}", bt->opts.arrivals,
                  "the forecasts expect no job to be submitted (default: the past days' submissions replayed)");
    sub->add_flag("--no-measured-power{false}", bt->opts.measured_power,
                  "the forecasts do not know the running jobs' draw now (default: as the node agents report it)");
    add_json_flag(sub, bt->json);
    return [bt, sub]() -> std::optional<int> {
        if (!*sub)
            return std::nullopt;
        run_backtest_cmd(*bt);
        return 0;
    };
}

Command add_simulate(CLI::App& app)
{
    auto sim = std::make_shared<SimulateArgs>();
    sim->opts.bf_interval_s = 30;  // Slurm's default (backfill.c BACKFILL_INTERVAL)
    auto* simulate = app.add_subcommand(
        "simulate", "Replay a job trace (Philly CSV or SWF) with FCFS + EASY backfill under a placement policy");
    add_conf_option(simulate, sim->conf, "--topology");
    simulate->add_option("--trace", sim->trace, "Philly CSV (../shared/data) or SWF (*.swf)")->required();
    simulate->add_option("--policy", sim->policy,
                         "m2g (the production engine), tree (fabric switches only), tree-nvl (NVLink domains as the "
                         "lowest switches), block, block-seg (block with --segment) or firstfit")
        ->check(CLI::IsMember({"m2g", "tree", "tree-nvl", "block", "block-seg", "firstfit"}));
    simulate->add_option("--backfill-reservation", sim->reservation,
                         "the queue head's backfill reservation: nodes (where its policy would place it, default) "
                         "or gpus (a count of GPUs, the classic EASY simplification)")
        ->check(CLI::IsMember({"nodes", "gpus"}));
    simulate->add_option("--backfill", sim->backfill,
                         "easy (one reservation, the queue head's; default) or slurm (as Slurm's backfill plugin: "
                         "every pending job up to --bf-max-job-test gets a reservation within --bf-window)")
        ->check(CLI::IsMember({"easy", "slurm"}));
    simulate->add_option("--bf-max-job-test", sim->opts.backfill_depth,
                         "pending jobs backfill looks at per pass (Slurm's bf_max_job_test, default 500)")
        ->check(CLI::Range(0, 1000000));
    simulate->add_option_function<double>(
                "--bf-window", [sim](double min) { sim->opts.bf_window_s = min * 60; },
                "--backfill slurm: how far ahead reservations are made, minutes (Slurm's bf_window, default 1440)")
        ->check(CLI::Range(1.0, 1e7));
    simulate->add_option("--bf-resolution", sim->opts.bf_resolution_s,
                         "--backfill slurm: reservation ends rounded up to this many seconds (Slurm's "
                         "bf_resolution, default 60)")
        ->check(CLI::Range(0.0, 3600.0));
    simulate->add_option("--bf-interval", sim->opts.bf_interval_s,
                         "--backfill slurm: seconds between backfill passes, a pass running only when something "
                         "changed since the last (Slurm's bf_interval, default 30; 0: a pass at every event)")
        ->check(CLI::Range(0.0, 10800.0));
    simulate->add_option("--block-sizes", sim->block_sizes,
                         "block, block-seg: topology.conf's BlockSizes, node counts separated by commas (default: what "
                         "`m2g topology export --format=block` writes; slurm-default: none, Slurm's levels 0-3)");
    simulate->add_option("--scale-gpus", sim->opts.scale_gpus, "multiply every job's GPUs by K")
        ->check(CLI::Range(1, 4096));
    simulate->add_option("--load", sim->opts.load, "scale arrivals to this offered load (0: as recorded)")
        ->check(CLI::Range(0.0, 1000.0));
    simulate->add_option("--seed", sim->opts.seed,
                         "shuffle jobs submitted in the same second (0: trace order); seeds the power draws");
    add_power_options(simulate, *sim);
    simulate->add_option("--job-log", sim->job_log, "write one CSV line per job (start, end, nodes) to this file");
    simulate->add_option("--power-log", sim->power_log,
                         "write the site's GPU draw (kW) at every change, as CSV t,site_kw, to this file");
    add_json_flag(simulate, sim->json);
    return [sim, simulate]() -> std::optional<int> {
        if (!*simulate)
            return std::nullopt;
        run_simulate(*sim);
        return 0;
    };
}

}  // namespace cli
}  // namespace m2g
