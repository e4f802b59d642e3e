// m2g core: the health and power facts of the cluster by model index,
// which placement reads and the signals feed, HealthFile= and `m2g place
// --state` fill.
#pragma once

#include <cstdint>
#include <vector>

namespace m2g {

// Health and power facts, by model index. Empty vectors mean "all fine".
struct ClusterState {
    std::vector<uint8_t> node_degraded;      // per node
    std::vector<uint8_t> domain_nvlink_fault;  // per domain
    std::vector<uint8_t> domain_over_limit;  // per domain: rack over power or thermal limit
    std::vector<double> domain_heat;         // per domain: lower is cooler; breaks ties between equal fits
};

}  // namespace m2g
