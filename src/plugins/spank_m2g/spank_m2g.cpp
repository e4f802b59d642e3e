// spank_m2g: the --m2g-* options of sbatch, srun and salloc, and job
// tagging for telemetry on the nodes. See spank_m2g(8).
//
// Where each part runs:
//   sbatch/salloc/srun (allocator, local): options are parsed by the core;
//     M2G_* environment defaults and the recipe are applied under them; the
//     result goes into spank_job_env (M2G_* keys) for job_submit/m2g and
//     select/m2g; --m2g-explain prints it.
//   slurmstepd (remote): the same resolution, then every task sees M2G_*
//     variables and an extended OTEL_RESOURCE_ATTRIBUTES.
//   slurmd: the plugstack.conf arguments are checked when slurmd starts.
// The dcgm-exporter job mapping and the node_exporter textfile are
// spank_m2g_jobmap.cpp's, a plugin of their own: a SPANK plugin that defines
// the job prolog or epilog makes slurmd run them on every node of every job,
// at its start and (what a preemptor waits for) at its end.
// All parsing and file logic is in the core; this file translates.

#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/error.hpp"
#include "core/job/intent.hpp"
#include "core/base/plugin_args.hpp"
#include "core/job/recipes.hpp"
#include "core/obs/telemetry.hpp"
#include "core/base/keys.hpp"

extern "C" {
#include <slurm/slurm_version.h>
#include <slurm/spank.h>
}

#include "plugins/common/spank_common.hpp"

// Plugin identity: one definition each with C linkage. (SPANK_PLUGIN()
// would give these const objects internal linkage in C++.)
extern "C" const char plugin_name[] = "m2g";
extern "C" const char plugin_type[] = "spank";
extern "C" const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern "C" const unsigned int spank_plugin_version = 1;

namespace {

using m2g_spank::guarded;
using m2g_spank::job_id_of;
using m2g_spank::kLog;

// Per-process state: one job (or step) per sbatch/srun/slurmstepd process.
m2g::SpankArgs g_args;
m2g::JobIntent g_options;          // what the option callbacks saw
std::set<std::string> g_given;     // option names given on the command line
m2g::JobIntent g_resolved;         // after environment and recipe
std::vector<spank_option> g_table;  // registered options (stable storage)

int option_cb(int val, const char* optarg, int remote);

// Build spank_option entries from the core's one option table.
void build_table()
{
    if (!g_table.empty())
        return;
    const auto& specs = m2g::option_specs();
    for (size_t i = 0; i < specs.size(); ++i) {
        spank_option o{};
        o.name = const_cast<char*>(specs[i].name);
        o.arginfo = const_cast<char*>(specs[i].arg);
        o.usage = const_cast<char*>(specs[i].help);
        o.has_arg = specs[i].arg ? 1 : 0;
        o.val = static_cast<int>(i);
        o.cb = option_cb;
        g_table.push_back(o);
    }
}

int option_cb(int val, const char* optarg, int remote)
{
    try {
        const auto& specs = m2g::option_specs();
        if (val < 0 || static_cast<size_t>(val) >= specs.size()) {
            slurm_error("%sunknown option id %d", kLog, val);
            return -1;
        }
        m2g::apply_option(g_options, specs[val].name, optarg ? optarg : "", static_cast<int64_t>(std::time(nullptr)));
        g_given.insert(specs[val].name);
        return 0;
    } catch (const std::exception& e) {
        slurm_error("%s%s", kLog, e.what());
    } catch (...) {
        slurm_error("%sunexpected error in an option", kLog);
    }
    return -1;
}

// Command line > M2G_* environment > recipe, the same in every context.
// `getenv_fn` reads the user's environment (allocator) or the job's (remote).
void resolve(const std::function<std::optional<std::string>(const char*)>& getenv_fn)
{
    m2g::JobIntent intent = g_options;
    m2g::apply_env_defaults(intent, g_given, getenv_fn, static_cast<int64_t>(std::time(nullptr)));
    if (!intent.recipe.empty())
        m2g::expand_recipe(intent, m2g::read_recipes(g_args.recipes));
    g_resolved = std::move(intent);
}

std::optional<std::string> process_env(const char* name)
{
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
}

// A variable of the job's environment, of any length (spank_getenv needs
// a buffer: grow it until the value fits).
std::optional<std::string> job_getenv(spank_t sp, const char* name)
{
    for (size_t len = 4096; len <= (1u << 22); len *= 8) {
        std::vector<char> buf(len);
        const spank_err_t rc = spank_getenv(sp, name, buf.data(), static_cast<int>(len));
        if (rc == ESPANK_SUCCESS)
            return std::string(buf.data());
        if (rc != ESPANK_NOSPACE)
            return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av)
{
    return guarded("spank_m2g.so", [&]() {
        g_args = m2g::parse_spank_args(std::vector<std::string>(av, av + ac));
        const spank_context_t ctx = spank_context();
        if (ctx == S_CTX_SLURMD && (!g_args.dcgm_dir.empty() || !g_args.textfile_dir.empty()))
            slurm_error("%sdcgm_dir= and textfile_dir= are spank_m2g_jobmap.so's arguments: spank_m2g.so ignores "
                        "them; add a line `required spank_m2g_jobmap.so dcgm_dir=... textfile_dir=...` to "
                        "plugstack.conf (spank_m2g(8)) or the job mapping is off",
                        kLog);
        if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR || ctx == S_CTX_REMOTE) {
            build_table();
            for (spank_option& o : g_table)
                if (spank_option_register(sp, &o) != ESPANK_SUCCESS) {
                    slurm_error("%scannot register --%s", kLog, o.name);
                    return -1;
                }
        }
        return 0;
    });
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int ac, char** av)
{
    const spank_context_t ctx = spank_context();
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) {
        return guarded("options", [&]() {
            resolve(process_env);
            for (const auto& [key, value] : m2g::encode_intent(g_resolved))
                if (spank_job_control_setenv(sp, key.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) {
                    slurm_error("%scannot pass %s to the job", kLog, key.c_str());
                    return -1;
                }
            // Only a submission has a decision to explain: an srun inside
            // an allocation starts a step (and inherits the job's options).
            const bool submitting = ctx == S_CTX_ALLOCATOR || !std::getenv("SLURM_JOB_ID");
            if (g_resolved.explain && submitting)
                slurm_info("%sjob intent: %s", kLog, m2g::describe(g_resolved).c_str());
            return 0;
        });
    }
    if (ctx == S_CTX_REMOTE) {
        return guarded("job environment", [&]() {
            // The intent resolved at submission reaches every step as
            // SLURM_SPANK_M2G_*: the one source of truth. (Options are also
            // forwarded to steps, but a repeated one only with its last value.)
            char** env = nullptr;
            std::vector<std::string> submitted;
            if (spank_get_item(sp, S_JOB_ENV, &env) == ESPANK_SUCCESS)
                for (char** e = env; e && *e; ++e)
                    if (std::string_view(*e).rfind("SLURM_SPANK_M2G_", 0) == 0)
                        submitted.emplace_back(*e);
            if (!submitted.empty()) {
                g_resolved = m2g::decode_intent(submitted);
                return 0;
            }
            resolve([sp](const char* name) { return job_getenv(sp, name); });
            return 0;
        });
    }
    return 0;
}

// Runs in slurmstepd once per step before the tasks start: what is set here
// is in every task's environment.
extern "C" int slurm_spank_user_init(spank_t sp, int ac, char** av)
{
    return guarded("task environment", [&]() {
        const uint32_t id = job_id_of(sp);
        for (const auto& [key, value] : m2g::encode_intent(g_resolved))
            if (key != m2g::kw::kEnvExplain &&  // a submission-time request, not for the job's own sruns
                spank_setenv(sp, key.c_str(), value.c_str(), 1) != ESPANK_SUCCESS)
                slurm_error("%scannot set %s", kLog, key.c_str());
        spank_setenv(sp, m2g::kw::kEnvJobId, std::to_string(id).c_str(), 1);
        const std::string otel =
            m2g::otel_extend(job_getenv(sp, m2g::kw::kEnvOtel).value_or(""), m2g::otel_attributes(id, g_resolved));
        if (spank_setenv(sp, m2g::kw::kEnvOtel, otel.c_str(), 1) != ESPANK_SUCCESS)
            slurm_error("%scannot set %s", kLog, m2g::kw::kEnvOtel);
        return 0;
    });
}
