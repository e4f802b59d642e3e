// spank_m2g_jobmap: the job's GPUs mapped for dcgm-exporter and its
// node_exporter textfile metric, on the nodes. See spank_m2g(8).
//
// A plugin apart from spank_m2g.so because it defines the job prolog and
// epilog: with any SPANK plugin that does, slurmd runs the SPANK job script
// (a slurmstepd) on every node of every job at its start and end, and a job
// waiting for nodes (a preemptor, the next job of a backfill plan) waits for
// it. Sites that map DCGM jobs load this one and pay that; the others don't.
//
//   slurmd: the plugstack.conf arguments are checked when slurmd starts.
//   prolog/epilog (job script, root): with dcgm_dir= the prolog writes one
//     file per GPU of the job holding its id, and the epilog (also after
//     scancel) removes them; with textfile_dir= the same for
//     m2g_job_<id>.prom, labelled with the job's class and tags.
// All parsing and file logic is in the core; this file translates.
#include <unistd.h>  // environ

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/plugin_args.hpp"
#include "core/job/intent.hpp"
#include "core/obs/telemetry.hpp"

extern "C" {
#include <slurm/slurm_version.h>
#include <slurm/spank.h>
}

#include "plugins/common/spank_common.hpp"

extern "C" const char plugin_name[] = "m2g_jobmap";
extern "C" const char plugin_type[] = "spank";
extern "C" const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern "C" const unsigned int spank_plugin_version = 1;

namespace {

using m2g_spank::guarded;
using m2g_spank::job_id_of;
using m2g_spank::kLog;

// Prolog/epilog: the job's intent from SPANK_M2G_* and its GPUs.
struct ScriptJob {
    uint32_t id = 0;
    std::string node;
    std::vector<int> gpus;
    m2g::JobIntent intent;
};

// `with_intent`: the prolog labels the textfile with the job's intent; a
// malformed SPANK_M2G_* entry (spank_job_env comes from the client) is
// logged and the labels left out, never a prolog failure that would drain
// the node. The epilog needs no intent at all.
ScriptJob script_job(spank_t sp, bool with_intent)
{
    ScriptJob j;
    j.id = job_id_of(sp);
    const char* node = std::getenv("SLURMD_NODENAME");
    j.node = node ? node : "";
    if (const char* gpus = std::getenv("SLURM_JOB_GPUS"))
        j.gpus = m2g::parse_gpu_indices(gpus);
    if (!with_intent)
        return j;
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e)
        env.emplace_back(*e);
    try {
        j.intent = m2g::decode_intent(env);
    } catch (const std::exception& e) {
        slurm_error("%sprolog: job %u: %s; telemetry labels left empty", kLog, j.id, e.what());
    }
    return j;
}

}  // namespace

// Every context: a plugstack.conf argument that is wrong fails here, when
// slurmd starts, not in a prolog that would drain the node.
extern "C" int slurm_spank_init(spank_t, int ac, char** av)
{
    return guarded("spank_m2g_jobmap.so", [&]() {
        m2g::parse_spank_args(std::vector<std::string>(av, av + ac));
        return 0;
    });
}

// The job prolog and epilog on a node (root): with a dcgm_dir= or textfile_dir=
// directory among the plugin's arguments, the prolog maps the job's GPUs
// for dcgm-exporter and writes its textfile metric, and the epilog (also
// after scancel) removes what the prolog made.
static int node_job_hook(spank_t sp, int ac, char** av, bool start)
{
    return guarded(start ? "prolog" : "epilog", [&]() {
        // slurm_spank_init does not run in the job script context.
        const m2g::SpankArgs args = m2g::parse_spank_args(std::vector<std::string>(av, av + ac));
        if (args.dcgm_dir.empty() && args.textfile_dir.empty())
            return 0;
        const ScriptJob j = script_job(sp, start);
        if (!args.dcgm_dir.empty() && !j.gpus.empty()) {
            const std::string dir = m2g::node_dir(args.dcgm_dir, j.node);
            if (start)
                m2g::dcgm_map_add(dir, j.gpus, j.id);
            else
                m2g::dcgm_map_remove(dir, j.gpus, j.id);
        }
        if (!args.textfile_dir.empty()) {
            const std::string dir = m2g::node_dir(args.textfile_dir, j.node);
            if (start)
                m2g::textfile_write(dir, j.id, m2g::job_info_metric(j.id, j.intent, j.node));
            else
                m2g::textfile_remove(dir, j.id);
        }
        return 0;
    });
}

extern "C" int slurm_spank_job_prolog(spank_t sp, int ac, char** av)
{
    return node_job_hook(sp, ac, av, true);
}

extern "C" int slurm_spank_job_epilog(spank_t sp, int ac, char** av)
{
    return node_job_hook(sp, ac, av, false);
}
