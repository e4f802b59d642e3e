// m2g CLI: `m2g explain`, `m2g status` (and its --plot), `m2g job` and
// `m2g forecast` — a running Slurm's state through libslurm (src/slurmapi/,
// SLURM_CONF), judged by the core or run forward by the simulator.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/plot.hpp"
#include "core/base/error.hpp"
#include "core/job/intent.hpp"
#include "core/model/config.hpp"
#include "nodeagent/agents.hpp"
#include "slurmapi/slurm_control.hpp"
#include "slurmapi/slurm_view.hpp"
#include "tools/reports/energy.hpp"
#include "tools/reports/explain.hpp"
#include "tools/reports/forecast.hpp"
#include "tools/reports/openadr.hpp"
#include "tools/reports/status.hpp"

namespace m2g {
namespace cli {
namespace {

// The options of the three commands (only one is parsed), and which one that is.
struct StatusArgs {
    uint32_t job_id = 0;
    std::string conf, plot_file;
    bool as_json = false;
    CLI::App *explain = nullptr, *status = nullptr, *job = nullptr, *forecast = nullptr;
    // forecast
    std::string power_cdf, power_cluster = "kalos";
    int samples = 20;
    bool samples_to_end = false;  // the sample runs past the horizon, until every job started
    int threads = 0;  // forecast runs at once; 0: one per core
    double history_days = 0;
    double horizon_h = 24, step_min = 15;
    std::vector<std::string> flex;
    std::string flex_start;
    bool flex_curve = false;
    bool openadr = false;
    OpenADRReportOptions adr;
    bool measured_power = false;
    std::string agent_map;
};

[[noreturn]] void no_such_job(uint32_t job_id)
{
    throw NotFoundError("job " + std::to_string(job_id) + ": no such job in slurmctld or in accounting (slurmdbd)");
}

// `m2g job`: slurmctld's view of the job, else accounting's.
void run_job(const StatusArgs& a, const Model& m, int64_t now)
{
    std::string from = "slurmctld";
    std::optional<JobView> job = load_job(m, a.job_id);
    if (!job) {
        job = load_job_from_accounting(m, a.job_id);
        from = "accounting";
    }
    if (!job)
        no_such_job(a.job_id);
    const JobEnergy e = job_energy(m, *job, energy_price(m), now);
    const std::string body = format_job_energy(e, *job, a.as_json);
    if (!a.as_json)
        std::cout << "from:   "
                  << (from == "slurmctld" ? "slurmctld" : "accounting (slurmdbd): slurmctld no longer holds the job")
                  << "\n"
                  << body;
    else
        std::cout << with_from(body, from, "format_job_energy");
}

void run_status(const StatusArgs& a, const Model& m, const ClusterView& c, const SignalsView& signals, int64_t now)
{
    const Status st = compute_status(m, c, signals, now);
    std::cout << format_status(m, st, a.as_json);
    if (!a.plot_file.empty()) {
        plot_status_png(m, st, &c, a.plot_file);
        if (!a.as_json)
            std::cout << "plot: " << a.plot_file << "\n";
    }
}

void run_explain(const StatusArgs& a, const Model& m, const ClusterView& c, const SignalsView& signals, int64_t now)
{
    std::optional<JobView> job;
    for (const auto& j : c.jobs)
        if (j.id == a.job_id)
            job = j;
    if (!job)
        job = load_job(m, a.job_id);
    if (!job)
        job = load_job_from_accounting(m, a.job_id);
    if (!job)
        no_such_job(a.job_id);
    // For a pending job, the forecast: when it should start, and with the
    // other intents (one run each, class-estimate power).
    std::optional<Forecast> fc;
    if (job->state == JobState::Pending && job->gpus > 0) {
        ForecastOptions fo;
        fo.samples = 1;
        fo.alternatives_for = job->id;
        fc = make_forecast(m, c, signals, now, fo);
    }
    std::cout << format_explanation(explain_job(m, c, signals, *job, now, fc ? &*fc : nullptr), a.as_json);
}

// --measured-power: each running job's draw per GPU as its nodes'
// m2g-nodeagent reports it (NodeAgentURL=, or --agent-map), instead of its
// class's estimate. A job whose agents do not answer keeps the estimate;
// the note says how many did.
std::string measure_running(const Model& m, ClusterView& c, const std::string& agent_map_path)
{
    const std::map<std::string, std::string> map =
        agent_map_path.empty() ? std::map<std::string, std::string>{} : nodeagent::read_agent_map(agent_map_path);
    std::set<int> busy;
    for (const JobView& j : c.jobs)
        if (j.state == JobState::Running)
            busy.insert(j.node_idx.begin(), j.node_idx.end());
    std::map<std::string, std::string> addrs;
    std::vector<std::pair<std::string, std::string>> urls;
    for (int n : busy) {
        const std::string& name = m.nodes[static_cast<size_t>(n)].name;
        if (auto it = map.find(name); it != map.end()) {
            urls.emplace_back(name, it->second);
            continue;
        }
        if (addrs.empty())
            addrs = node_addresses();
        const auto addr = addrs.find(name);
        urls.emplace_back(name, nodeagent::expand_url(m.admission.node_agent_url, name,
                                                      addr == addrs.end() ? name : addr->second));
    }
    const nodeagent::JobDraw d =
        nodeagent::job_gpu_draw(urls, nodeagent::read_token(m.admission.node_agent_token_file), 2000);
    int running = 0, measured = 0;
    for (JobView& j : c.jobs) {
        if (j.state != JobState::Running)
            continue;
        ++running;
        if (const auto it = d.w_gpu.find(j.id); it != d.w_gpu.end()) {
            j.measured_w_gpu = it->second;
            ++measured;
        }
    }
    std::string note = "--measured-power: the draw of " + std::to_string(measured) + " of " +
                       std::to_string(running) + " running jobs from " + std::to_string(d.answered) + " of " +
                       std::to_string(d.asked) + " node agents";
    if (!d.errors.empty())
        note += "; the others on their class's estimate (" + d.errors.front() +
                (d.errors.size() > 1 ? "; and " + std::to_string(d.errors.size() - 1) + " more)" : ")");
    return note;
}

void run_forecast(const StatusArgs& a, const Model& m, const ClusterView& live, const SignalsView& signals,
                  int64_t now)
{
    ClusterView c = live;
    std::string measured_note;
    if (a.measured_power || !a.agent_map.empty())
        measured_note = measure_running(m, c, a.agent_map);
    ForecastOptions fo;
    fo.samples = a.samples;
    fo.samples_to_end = a.samples_to_end;
    fo.threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    fo.horizon_s = a.horizon_h * 3600.0;
    fo.step_s = a.step_min * 60.0;
    fo.alternatives_for = a.job_id;
    const int64_t flex_start = a.flex_start.empty() ? now : parse_until(a.flex_start, now);
    for (const std::string& spec : a.flex)
        fo.flex.push_back(parse_flex(spec, flex_start));
    if (a.flex_curve)
        for (const FlexRequest& q : flex_curve(flex_start))
            fo.flex.push_back(q);
    PowerCdf cdf;
    if (!a.power_cdf.empty()) {
        cdf = read_power_cdf(a.power_cdf, a.power_cluster);
        fo.power = &cdf;
    }
    if (a.openadr)
        check_openadr_object_id(a.adr.event_id, "--openadr-event");  // before the runs, not after
    std::string history_note;
    if (a.history_days > 0) {
        // Accounting: run time / limit of the jobs that ended, and the
        // submissions of the days before, replayed. Without slurmdbd the
        // forecast still runs, on time limits alone, and says so.
        try {
            const int64_t days = static_cast<int64_t>(std::ceil(a.history_days));
            fo.arrival_periods = static_cast<int>(std::max<int64_t>(1, days));
            use_history(fo, load_accounting_since(m, now - days * 86400), now);
        } catch (const UnreachableError& e) {
            history_note = std::string("--history: ") + e.what() + "; forecasting on time limits, no arrivals";
        }
    }
    Forecast f = make_forecast(m, c, signals, now, fo);
    if (!history_note.empty())
        f.notes.insert(f.notes.begin(), history_note);
    if (!measured_note.empty())
        f.notes.insert(f.notes.begin(), measured_note);
    std::cout << (a.openadr ? openadr_reports(m, f, a.adr) : format_forecast(m, f, a.as_json));
}

std::optional<int> run(const StatusArgs& a)
{
    if (!*a.explain && !*a.status && !*a.job && !*a.forecast)
        return std::nullopt;
    const std::string conf = resolve_conf_path(a.conf);
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    std::vector<std::string> warnings;
    Model m = load_model(conf, &warnings);
    print_warnings(warnings, conf);
    if (*a.job) {
        run_job(a, m, now);
        return 0;
    }
    const ShownSignals src = read_shown_signals(m, conf, "", "", now);
    const ClusterView c = load_cluster_view(m);
    if (*a.status)
        run_status(a, m, c, src.view, now);
    else if (*a.forecast)
        run_forecast(a, m, c, src.view, now);
    else
        run_explain(a, m, c, src.view, now);
    return 0;
}

}  // namespace

Command add_status(CLI::App& app)
{
    auto a = std::make_shared<StatusArgs>();
    a->explain = app.add_subcommand(
        "explain", "Why a job waits, was deferred, or went where it went (from slurmctld, m2g's annotation, the signals)");
    a->explain->add_option("JOBID", a->job_id, "the job")->required()->check(CLI::Range(1u, 0xfffffff0u));
    a->status = app.add_subcommand(
        "status", "The cluster now: GPUs used/free per NVLink domain, power, active events, queues by class");
    a->status->add_option("--plot", a->plot_file, "also draw the status as a PNG image into this file");
    a->job = app.add_subcommand("job", "A job's GPU-hours, energy and cost (slurmctld, else accounting)");
    a->job->add_option("JOBID", a->job_id, "the job")->required()->check(CLI::Range(1u, 0xfffffff0u));
    a->forecast = app.add_subcommand(
        "forecast", "When pending jobs should start and where, and the power the site will draw (P10/P50/P90), by "
                    "running the cluster forward through m2g's own placement, admission and curtailment");
    a->forecast->add_option("--job", a->job_id, "also forecast this pending job under the other topology intents")
        ->check(CLI::Range(1u, 0xfffffff0u));
    a->forecast->add_option("--power-cdf", a->power_cdf,
                            "per-GPU power distribution for the bands (the Acme CSV, e.g. "
                            "../shared/data/acme2023_power_thermal_cdf.csv); default: the classes' estimates");
    a->forecast->add_option("--power-cluster", a->power_cluster, "the CDF's cluster column to use (kalos or seren)");
    a->forecast->add_option("--samples", a->samples, "runs with drawn power for the bands (default 20)")
        ->check(CLI::Range(1, 1000));
    a->forecast->add_flag("--samples-to-end", a->samples_to_end,
                          "run the samples on past the horizon until every job has started, for every job's "
                          "P10-P90 start (slower: the whole queue drains in each); default: they stop at the horizon");
    a->forecast->add_option("--threads", a->threads,
                            "runs at once, each on a thread of its own (default 0: one per core; 1: one after "
                            "the other); the forecast is the same for any count")
        ->check(CLI::Range(0, 1024));
    a->forecast->add_option("--horizon", a->horizon_h, "hours of power to forecast (default 24)")
        ->check(CLI::Range(0.25, 24.0 * 14));
    a->forecast->add_option("--step", a->step_min, "minutes between two points of the power bands (default 15)")
        ->check(CLI::Range(1.0, 24.0 * 60));
    a->forecast->add_option("--history", a->history_days,
                            "days of accounting (slurmdbd) to learn from: jobs end at the run time / time limit "
                            "of those that ended, and the submissions of the days before arrive again (default 0: "
                            "every job runs to its time limit and nothing arrives, Slurm's assumption)")
        ->check(CLI::Range(0.0, 60.0));
    a->forecast->add_flag("--measured-power", a->measured_power,
                          "running jobs draw what their nodes' m2g-nodeagent reports (NodeAgentURL=), not their "
                          "class's estimate; a job whose agents do not answer keeps the estimate");
    a->forecast->add_option("--agent-map", a->agent_map,
                            "--measured-power with the agents' URLs from this file (\"NODE URL\" per line, as "
                            "m2g-curtaild --agent-map) instead of NodeAgentURL=")
        ->check(CLI::ExistingFile);
    a->forecast->add_option("--flex", a->flex,
                            "what shedding DEPTH% of the site's GPU draw for DURATION would cost, e.g. 25%:3h "
                            "(repeatable)");
    a->forecast->add_flag("--flex-curve", a->flex_curve, "the flexibility curve: 10-50% for 1, 3 and 10 h");
    a->forecast->add_option("--flex-start", a->flex_start,
                            "when the shedding starts: now+N[s|m|h|d] or YYYY-MM-DDTHH:MM[:SS] (default now)");
    CLI::Option* adr =
        a->forecast->add_flag("--openadr", a->openadr,
                              "print OpenADR 3 reportRequest objects instead: USAGE_FORECAST, and BASELINE with "
                              "LOAD_SHED_DELTA_AVAILABLE per --flex offer");
    a->forecast->add_option("--openadr-event", a->adr.event_id,
                            "the VTN event or program ID the reports answer (default m2g-forecast)")
        ->needs(adr);
    a->forecast->add_option("--openadr-client", a->adr.client_name,
                            "the VEN's clientName (default m2g.conf's ClusterName=)")
        ->needs(adr);
    for (auto* sub : {a->explain, a->status, a->job, a->forecast}) {
        add_json_flag(sub, a->as_json);
        add_conf_option(sub, a->conf);
    }
    adr->excludes(a->forecast->get_option("--json"));
    return [a] { return run(*a); };
}

}  // namespace cli
}  // namespace m2g
