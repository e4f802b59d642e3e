// m2g core: arguments of spank_m2g.so in plugstack.conf, e.g.
//   optional /usr/lib/.../spank_m2g.so recipes=/etc/slurm/m2g-recipes.conf dcgm_dir=/run/dcgm-job-map
#pragma once

#include <string>
#include <vector>

namespace m2g {

struct SpankArgs {
    std::string recipes;       // recipe catalog (default kDefaultRecipes)
    std::string dcgm_dir;      // dcgm-exporter job mapping directory; "" off; %n = node name
    std::string textfile_dir;  // node_exporter textfile directory; "" off; %n = node name
};

// Every argument is key=value with a known key and an absolute path; throws
// ParseError naming the argument and the accepted keys.
SpankArgs parse_spank_args(const std::vector<std::string>& args);

}  // namespace m2g
