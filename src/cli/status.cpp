// m2g CLI: `m2g explain`, `m2g status` (and its --plot) and `m2g job` — a
// running Slurm's state through libslurm (src/slurmapi/, SLURM_CONF), judged
// by the core.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/plot.hpp"
#include "core/base/error.hpp"
#include "core/model/config.hpp"
#include "slurmapi/slurm_view.hpp"
#include "tools/reports/energy.hpp"
#include "tools/reports/explain.hpp"
#include "tools/reports/status.hpp"

namespace m2g {
namespace cli {
namespace {

// The options of the three commands (only one is parsed), and which one that is.
struct StatusArgs {
    uint32_t job_id = 0;
    std::string conf, plot_file;
    bool as_json = false;
    CLI::App *explain = nullptr, *status = nullptr, *job = nullptr;
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
    std::cout << format_explanation(explain_job(m, c, signals, *job, now), a.as_json);
}

std::optional<int> run(const StatusArgs& a)
{
    if (!*a.explain && !*a.status && !*a.job)
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
    for (auto* sub : {a->explain, a->status, a->job}) {
        add_json_flag(sub, a->as_json);
        add_conf_option(sub, a->conf);
    }
    return [a] { return run(*a); };
}

}  // namespace cli
}  // namespace m2g
