// Shared by the benchmarks: NVL72-shaped clusters of any size, percentiles.
#pragma once

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/config.hpp"

namespace m2g::bench {

// NVL72 racks of 18 nodes; 8 racks per leaf, 8 leaves per spine, one core.
inline m2g::Model nvl72_cluster(int racks)
{
    std::ostringstream c;
    char buf[256];
    std::snprintf(buf, sizeof buf, "NodeName=r[0001-%04d]n[01-18] Gpus=4\n", racks);
    c << buf;
    for (int r = 1; r <= racks; ++r) {
        std::snprintf(buf, sizeof buf, "DomainName=nvl%04d Nodes=r%04dn[01-18] Size=18\n", r, r);
        c << buf;
    }
    const int leaves = (racks + 7) / 8, spines = (leaves + 7) / 8;
    for (int l = 0; l < leaves; ++l) {
        const int lo = l * 8 + 1, hi = std::min(racks, lo + 7);
        std::snprintf(buf, sizeof buf, "SwitchName=leaf%03d Domains=nvl[%04d-%04d] LinkGbps=28800\n", l + 1, lo, hi);
        c << buf;
    }
    for (int s = 0; s < spines; ++s) {
        const int lo = s * 8 + 1, hi = std::min(leaves, lo + 7);
        std::snprintf(buf, sizeof buf, "SwitchName=spine%02d Switches=leaf[%03d-%03d] LinkGbps=230400\n", s + 1, lo, hi);
        c << buf;
    }
    if (spines > 1) {
        std::snprintf(buf, sizeof buf, "SwitchName=core01 Switches=spine[01-%02d]\n", spines);
        c << buf;
    }
    return m2g::build_model(m2g::parse_m2g_conf(c.str(), "bench"));
}

inline double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

}  // namespace m2g::bench
