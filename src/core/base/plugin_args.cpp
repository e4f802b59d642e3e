// m2g core: plugstack.conf arguments.
#include "core/base/plugin_args.hpp"

#include <set>

#include "core/base/error.hpp"
#include "core/base/keys.hpp"

namespace m2g {

SpankArgs parse_spank_args(const std::vector<std::string>& args)
{
    SpankArgs out;
    out.recipes = kw::kDefaultRecipes;
    const std::string accepted =
        std::string(kw::kArgRecipes) + ", " + kw::kArgDcgmDir + ", " + kw::kArgTextfileDir;
    std::set<std::string> seen;
    for (const std::string& a : args) {
        const auto eq = a.find('=');
        if (eq == std::string::npos || eq == 0)
            throw ParseError("plugstack.conf argument '" + a + "' is not key=value; accepted keys: " + accepted);
        const std::string key = a.substr(0, eq), value = a.substr(eq + 1);
        std::string* dest = key == kw::kArgRecipes       ? &out.recipes
                            : key == kw::kArgDcgmDir     ? &out.dcgm_dir
                            : key == kw::kArgTextfileDir ? &out.textfile_dir
                                                         : nullptr;
        if (!dest)
            throw ParseError("plugstack.conf argument '" + a + "': unknown key '" + key + "'; accepted keys: " +
                             accepted);
        if (!seen.insert(key).second)
            throw ParseError("plugstack.conf argument '" + a + "': " + key + " given twice");
        if (value.empty() || value[0] != '/' || value.find("/../") != std::string::npos ||
            value.size() >= 4096)
            throw ParseError("plugstack.conf argument '" + a + "': " + key + " needs an absolute path");
        *dest = value;
    }
    return out;
}

}  // namespace m2g
