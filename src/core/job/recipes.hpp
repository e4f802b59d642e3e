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

// `m2g recipe list` and `show` text.
std::string format_recipe_table(const RecipeCatalog& c);
std::string format_recipe(const Recipe& r);

}  // namespace m2g
