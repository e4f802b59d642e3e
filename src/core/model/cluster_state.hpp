// m2g core: a described cluster state for `m2g place` and the golden tests:
// which nodes are busy, drained or degraded, which domains have NVLink
// faults or are over their power or thermal limit. JSON (json-c):
//
//   { "busy": "r01n[01-10]", "drained": "r03n01", "degraded": "r04n[01-02]",
//     "nvlink_fault": "nvl05", "over_limit": "nvl06" }
//
// Every key is optional; values are Slurm hostlists of node or domain names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.hpp"
#include "core/model/state.hpp"

namespace m2g {

struct DescribedState {
    std::vector<uint8_t> usable;  // per model node: not busy and not drained
    ClusterState health;
};

// Throws ParseError naming the file, the key and what is accepted, or an
// unknown node/domain name.
DescribedState parse_state_json(const std::string& text, const std::string& file, const Model& m);
DescribedState read_state_json(const std::string& path, const Model& m);

}  // namespace m2g
