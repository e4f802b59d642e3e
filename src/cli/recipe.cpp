// m2g CLI: `m2g recipe` — list, show and validate the workload recipe catalog.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/base/keys.hpp"
#include "core/job/intent.hpp"
#include "core/job/recipes.hpp"
#include "core/model/config.hpp"

namespace m2g {
namespace cli {
namespace {

struct Recipes {
    std::string catalog, name, conf;
    int gpus_per_node = 0;  // show: nodes of this many GPUs (0: m2g.conf's, when it can be read)
    bool as_json = false;
    CLI::App *list = nullptr, *show = nullptr, *validate = nullptr;
};

// One recipe as --json prints it: the columns of list and the lines of show.
JsonPtr recipe_json(const Recipe& r)
{
    const JobIntent& i = r.intent;
    JsonPtr o = json_new_object();
    json_add_string(o.get(), "name", r.name);
    json_add_string(o.get(), "file", r.loc.file);
    json_add_int(o.get(), "line", r.loc.line);
    json_add_string(o.get(), "description", r.description);
    json_add_int(o.get(), "gpus", i.gpus);
    json_add_value(o.get(), "class", i.workload_class == WorkloadClass::Unset
                                         ? JsonPtr()
                                         : JsonPtr(json_object_new_string(to_string(i.workload_class))));
    json_add_value(o.get(), "topology", i.locality == Locality::Unset
                                            ? JsonPtr()
                                            : JsonPtr(json_object_new_string(locality_string(i).c_str())));
    json_add_string(o.get(), "model", i.model);
    json_add_string(o.get(), "params", r.params);
    json_add_string(o.get(), "precision", r.precision);
    json_add_int(o.get(), "tp", r.tp ? r.tp : 1);
    json_add_int(o.get(), "pp", r.pp ? r.pp : 1);
    json_add_int(o.get(), "dp", r.dp ? r.dp : 1);
    json_add_double(o.get(), "power_w_per_gpu", i.power_w_per_gpu);
    json_add_int(o.get(), "runtime_s", i.runtime_s);
    json_add_string(o.get(), "expands_to", describe(i));
    return o;
}

std::string list_json(const RecipeCatalog& c)
{
    JsonPtr o = json_new_object();
    json_add_string(o.get(), "catalog", c.path);
    JsonPtr all = json_new_array();
    for (const Recipe& r : c.recipes)
        json_append(all.get(), recipe_json(r));
    json_add_value(o.get(), "recipes", std::move(all));
    return json_line(o.get());
}

// The GPUs per node `show` sizes a job for: --gpus-per-node, else what most
// of m2g.conf's nodes have; 0 when neither is known (the size is not shown,
// and --json says why).
int node_gpus_for_show(const Recipes& r, std::string& why)
{
    if (r.gpus_per_node > 0)
        return r.gpus_per_node;
    const std::string conf = resolve_conf_path(r.conf);
    try {
        const int g = load_model(conf).usual_node_gpus();
        if (g <= 0)
            why = conf + " declares no node with GPUs";
        return g;
    } catch (const std::exception& e) {
        why = e.what();
        return 0;
    }
}

std::optional<int> run(const Recipes& r)
{
    if (*r.list) {
        const RecipeCatalog c = read_recipes(r.catalog);
        std::cout << (r.as_json ? list_json(c) : format_recipe_table(c));
    } else if (*r.show) {
        const RecipeCatalog c = read_recipes(r.catalog);
        const Recipe* recipe = c.find(r.name);
        if (!recipe) {
            JobIntent probe;
            probe.recipe = r.name;
            try {
                expand_recipe(probe, c);  // throws the "no such recipe; known: ..." message
            } catch (const ParseError& e) {
                throw NotFoundError(e.what());
            }
        }
        std::string why;
        const int node_gpus = node_gpus_for_show(r, why);
        if (r.as_json) {
            JsonPtr o = recipe_json(*recipe);
            json_add_int(o.get(), "gpu_multiple", recipe->intent.gpu_multiple);
            if (node_gpus > 0) {
                JobIntent named = recipe->intent;
                named.recipe = recipe->name;
                const RecipeSize s = size_from_recipe(named, AskedSize{}, node_gpus);
                JsonPtr size = json_new_object();
                json_add_int(size.get(), "node_gpus", node_gpus);
                json_add_int(size.get(), "nodes", s.nodes);
                json_add_int(size.get(), "gpus_per_node", s.gpus_per_node);
                json_add_int(size.get(), "time_limit_s", s.time_limit_s);
                json_add_string(size.get(), "options", s.said);
                json_add_value(o.get(), "size", std::move(size));
            } else {
                json_add_value(o.get(), "size", JsonPtr());
                json_add_string(o.get(), "size_unknown", why);
            }
            std::cout << json_line(o.get());
        } else {
            std::cout << format_recipe(*recipe, node_gpus);
            if (node_gpus <= 0)
                std::cout << "  sizes a job   on the cluster's nodes (give --gpus-per-node or --conf: " << why << ")\n";
        }
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
    r->show->add_option("--gpus-per-node", r->gpus_per_node,
                        "size the job for nodes of this many GPUs (default: what most of m2g.conf's nodes have)")
        ->check(CLI::Range(1, 4096));
    add_conf_option(r->show, r->conf);
    r->validate = recipe->add_subcommand("validate", "Check a catalog; print file:line errors");
    for (auto* sub : {r->list, r->show}) {
        sub->add_option("--catalog", r->catalog, "catalog file (default $M2G_RECIPES or /etc/slurm/m2g-recipes.conf)");
        add_json_flag(sub, r->as_json);
    }
    r->validate->add_option("FILE", r->catalog,
                            "catalog to check (default $M2G_RECIPES or /etc/slurm/m2g-recipes.conf)");
    return [r] { return run(*r); };
}

}  // namespace cli
}  // namespace m2g
