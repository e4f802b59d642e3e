// m2g core: where a set of nodes sits in the topology — which NVLink
// domains it uses (and whether whole), which leaf switches, and the lowest
// switch that holds it all. The words people read in `m2g topology locate`,
// the demo and placement explanations come from here.
#pragma once

#include <string>
#include <vector>

#include "core/model/model.hpp"

namespace m2g {

struct Span {
    struct DomainUse {
        int domain = kNone;
        int used = 0;  // nodes of the set in this domain
    };
    std::vector<DomainUse> domains;   // in rank order
    std::vector<int> leaf_switches;   // distinct, in rank order
    int top_switch = kNone;           // lowest switch holding every node; kNone if none
    std::vector<int> outside_domains; // nodes of the set in no NVLink domain
    std::vector<std::string> unknown; // names the model does not know

    int whole_domains(const Model& m) const;
};

Span span_of(const Model& m, const std::vector<std::string>& nodes);

// One line, e.g. "36 nodes in 2 NVLink domains (nvl02 18/18, nvl04 18/18, both
// whole) under 1 leaf switch (leaf01)".
std::string describe(const Model& m, const Span& s, size_t node_count);

}  // namespace m2g
