// m2g core: the workload recipe catalog (m2g-recipes.conf(5)). A recipe
// names a known workload — model, size, precision, parallelism, GPUs — and
// the m2g intent that suits it; --m2g-recipe=NAME expands it, and explicit
// --m2g-* options win over it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/source.hpp"
#include "core/job/intent.hpp"

namespace m2g {

struct Recipe {
    SourceLoc loc;
    std::string name;
    std::string params;     // 70B
    std::string precision;  // bf16
    int tp = 0, pp = 0, dp = 0;
    std::string description;
    JobIntent intent;       // gpus, model, topology, segment, class, defer, power, runtime
};

struct RecipeCatalog {
    std::string path;
    std::vector<Recipe> recipes;  // file order
    const Recipe* find(std::string_view name) const;
};

RecipeCatalog parse_recipes(std::string_view text, const std::string& file);
RecipeCatalog read_recipes(const std::string& path);

// Slurm's time format (as --time): MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM,
// D-HH:MM:SS. Returns seconds; throws ParseError naming `what`.
int64_t parse_slurm_time(std::string_view text, const std::string& what);
std::string format_slurm_time(int64_t seconds);

// Expand intent.recipe from the catalog under the explicit options. Throws
// ParseError naming the recipe and the catalog when it is unknown.
void expand_recipe(JobIntent& intent, const RecipeCatalog& catalog);

// What a job gave itself (0: not given): -N, GPUs per node (--gres=gpu:N,
// --gpus-per-node), GPUs by another form (--gpus, --gpus-per-task: Slurm's
// total), -t.
struct AskedSize {
    int nodes = 0;
    int gpus_per_node = 0;
    int gpus_total = 0;
    int64_t time_limit_s = 0;
    // Not asked, allowed: the partition's MaxTime (0: none). A runtime the
    // recipe gives is cut to it, as a limit over it would be refused or never start.
    int64_t max_time_limit_s = 0;
};

// What job_submit/m2g sets from the recipe (0: the job's own stays), or
// why it refuses the job.
struct RecipeSize {
    int nodes = 0;
    int gpus_per_node = 0;
    int64_t time_limit_s = 0;
    std::string refusal;  // not empty: refuse the job with this message
    std::string said;     // what was set, as the options that would set it ("" nothing)
    bool sets() const { return nodes || gpus_per_node || time_limit_s; }
};

// A recipe sizes the job it names: with no size given, its GPUs on the
// fewest nodes of `node_gpus` GPUs that hold them evenly, and its runtime
// as the time limit; -N alone gets the GPUs per node, --gres alone the node
// count; anything the job gave wins, unless the GPUs it asks for are not a
// whole number of the recipe's model replicas (intent.gpu_multiple), or
// the recipe's GPUs do not spread evenly over what it gave. node_gpus <= 0
// (unknown): only the time limit and the replica rule.
RecipeSize size_from_recipe(const JobIntent& intent, const AskedSize& asked, int node_gpus);

// `m2g recipe list` and `show` text; show sizes the job for nodes of
// `node_gpus` GPUs (0: unknown, not shown).
std::string format_recipe_table(const RecipeCatalog& c);
std::string format_recipe(const Recipe& r, int node_gpus = 0);

}  // namespace m2g
