// m2g CLI: `m2g recipe` — list, show and validate the workload recipe catalog.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "core/base/keys.hpp"
#include "core/job/recipes.hpp"

namespace m2g {
namespace cli {
namespace {

struct Recipes {
    std::string catalog, name;
    CLI::App *list = nullptr, *show = nullptr, *validate = nullptr;
};

std::optional<int> run(const Recipes& r)
{
    if (*r.list) {
        std::cout << format_recipe_table(read_recipes(r.catalog));
    } else if (*r.show) {
        const RecipeCatalog c = read_recipes(r.catalog);
        const Recipe* recipe = c.find(r.name);
        if (!recipe) {
            JobIntent probe;
            probe.recipe = r.name;
            expand_recipe(probe, c);  // throws the "no such recipe; known: ..." message
        }
        std::cout << format_recipe(*recipe);
    } else if (*r.validate) {
        const RecipeCatalog c = read_recipes(r.catalog);
        std::cout << r.catalog << ": ok: " << c.recipes.size() << " recipes\n";
    } else {
        return std::nullopt;
    }
    return 0;
}

}  // namespace

Command add_recipe(CLI::App& app)
{
    auto r = std::make_shared<Recipes>();
    auto* recipe = app.add_subcommand("recipe", "List, show and validate the workload recipe catalog");
    recipe->require_subcommand(1);
    r->catalog = std::getenv("M2G_RECIPES") ? std::getenv("M2G_RECIPES") : kw::kDefaultRecipes;
    r->list = recipe->add_subcommand("list", "One line per recipe: GPUs, class, topology, model");
    r->show = recipe->add_subcommand("show", "Everything a recipe sets, and the options it expands to");
    r->show->add_option("NAME", r->name, "recipe name")->required();
    r->validate = recipe->add_subcommand("validate", "Check a catalog; print file:line errors");
    for (auto* sub : {r->list, r->show})
        sub->add_option("--catalog", r->catalog, "catalog file (default $M2G_RECIPES or /etc/slurm/m2g-recipes.conf)");
    r->validate->add_option("FILE", r->catalog,
                            "catalog to check (default $M2G_RECIPES or /etc/slurm/m2g-recipes.conf)");
    return [r] { return run(*r); };
}

}  // namespace cli
}  // namespace m2g
