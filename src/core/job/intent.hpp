// m2g core: a job's intent — what a user asks of m2g with --m2g-* options
// (or a recipe), and the one encoding that carries it from sbatch/srun to
// job_submit, select and the job's nodes (spank_job_env, see
// doc/man8/spank_m2g.8).
//
// The SPANK plugin, the CLI and the simulator all parse options here, so
// they accept and reject exactly the same values with the same messages.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace m2g {

enum class Locality { Unset, Strict, Prefer, Any };
enum class LocalityLevel { NVLink, Leaf, Spine };
enum class WorkloadClass { Unset, Training, Finetune, Inference, Batch, Benchmark, Dataproc, Agentic };
enum class DeferConsent { Unset, Ok, No, Until };

const char* to_string(Locality v);
const char* to_string(LocalityLevel v);
const char* to_string(WorkloadClass v);
// "training" -> WorkloadClass::Training; nullopt for anything else.
std::optional<WorkloadClass> workload_class_from(std::string_view name);

using Tag = std::pair<std::string, std::string>;
struct JobIntent;

// "strict:nvlink", "prefer:leaf", "any", or "" when unset.
std::string locality_string(const JobIntent& i);

struct JobIntent {
    Locality locality = Locality::Unset;
    LocalityLevel level = LocalityLevel::NVLink;
    int segment = 0;  // nodes per NVLink-domain group, 0: none
    WorkloadClass workload_class = WorkloadClass::Unset;
    std::string recipe;
    DeferConsent defer = DeferConsent::Unset;
    int64_t defer_until = 0;  // epoch seconds, with DeferConsent::Until
    std::vector<Tag> tags;    // in the order given; keys unique
    bool explain = false;

    // Filled from a recipe (an explicit option always wins).
    std::string model;
    int gpus = 0;
    double power_w_per_gpu = 0;
    int64_t runtime_s = 0;
    // GPUs of one model replica (TP*PP): a job sized by hand must ask for a
    // whole number of them (0: no such rule).
    int gpu_multiple = 0;

    // A tag's value, or "" when absent.
    std::string tag(std::string_view key) const;
    bool operator==(const JobIntent& o) const;
};

// One --m2g-* option: the name without "--", e.g. "m2g-class".
struct OptionSpec {
    const char* name;     // m2g-topology
    const char* arg;      // what --help shows as the argument, or nullptr for a flag
    const char* env;      // M2G_TOPOLOGY: the user's environment default and the spank_job_env key
    const char* help;     // [m2g] ...
};

// Every option, in --help order.
const std::vector<OptionSpec>& option_specs();

// Apply `--name=value` to `intent`. `now` (epoch seconds) resolves relative
// times such as until=now+2h. Throws ParseError with one line that names the
// option, the value and what is accepted; `intent` is unchanged then.
void apply_option(JobIntent& intent, std::string_view name, std::string_view value, int64_t now);

// Defaults from the user's environment (M2G_CLASS=..., the keys of
// option_specs()) for the options not in `given` (option names, e.g.
// "m2g-class"): command line > M2G_* environment > recipe. Throws ParseError
// naming the variable.
void apply_env_defaults(JobIntent& intent, const std::set<std::string>& given,
                        const std::function<std::optional<std::string>(const char*)>& getenv_fn, int64_t now);

// Recipe values fill what the user did not set explicitly.
void merge_under(JobIntent& explicit_intent, const JobIntent& from_recipe);

// The documented spank_job_env encoding: M2G_* keys, only set fields.
std::vector<std::pair<std::string, std::string>> encode_intent(const JobIntent& intent);

// Decode "KEY=VALUE" entries (e.g. job_desc->spank_job_env); entries that
// are not M2G_* are ignored, a malformed M2G_* value throws ParseError
// naming the key.
JobIntent decode_intent(const std::vector<std::string>& env);

// Parse a time for --m2g-defer=until=TIME: YYYY-MM-DDTHH:MM[:SS] (local
// time, as Slurm's --begin), or now+N[s|m|h|d].
int64_t parse_until(std::string_view text, int64_t now);

// Validate a tag key/value pair (used by options and recipes). Throws
// ParseError with `what` naming the source.
void check_tag(std::string_view key, std::string_view value, const std::string& what);

// A one-line summary for people, e.g. "class=training topology=strict:nvlink
// segment=18 defer=ok tags=tenant=acme".
std::string describe(const JobIntent& intent);

}  // namespace m2g
