// fuzz_recipes: a recipe catalog (m2g-recipes.conf(5)) -> parse_recipes,
// then --m2g-recipe=<first recipe> expanded into a JobIntent.
#include "test/fuzz/fuzz.hpp"
#include "core/job/recipes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string catalog_text = m2g_fuzz::text(data, size);
    try {
        const m2g::RecipeCatalog catalog = m2g::parse_recipes(catalog_text, "m2g-recipes.conf");
        if (catalog.recipes.empty())
            return 0;
        m2g::JobIntent intent;
        intent.recipe = catalog.recipes.front().name;
        m2g::expand_recipe(intent, catalog);
        (void)m2g::format_recipe(catalog.recipes.front());
        (void)m2g::describe(intent);
    } catch (const m2g::Error& e) {
        m2g_fuzz::check_message(e);
    }
    return 0;
}
