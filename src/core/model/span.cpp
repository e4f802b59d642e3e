// m2g core: describing where a node set sits.
#include "core/model/span.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace m2g {

int Span::whole_domains(const Model& m) const
{
    int n = 0;
    for (const auto& u : domains)
        n += u.used == static_cast<int>(m.domains[u.domain].nodes.size());
    return n;
}

namespace {

// The switch a node hangs off: its domain's leaf, or its own.
int leaf_of(const Model& m, const Node& n)
{
    return n.domain != kNone ? m.domains[n.domain].parent : n.leaf;
}

}  // namespace

Span span_of(const Model& m, const std::vector<std::string>& nodes)
{
    Span s;
    std::map<int, int> rank_of_domain, used;  // domain → first rank, count
    std::map<int, int> rank_of_leaf;
    std::set<int> seen;
    for (const std::string& name : nodes) {
        const int ni = m.find_node(name);
        if (ni == kNone) {
            s.unknown.push_back(name);
            continue;
        }
        if (!seen.insert(ni).second)
            continue;
        const Node& n = m.nodes[ni];
        if (n.domain != kNone) {
            ++used[n.domain];
            auto [it, fresh] = rank_of_domain.emplace(n.domain, n.rank);
            if (!fresh)
                it->second = std::min(it->second, n.rank);
        } else {
            s.outside_domains.push_back(ni);
        }
        const int leaf = leaf_of(m, n);
        if (leaf != kNone) {
            auto [it, fresh] = rank_of_leaf.emplace(leaf, n.rank);
            if (!fresh)
                it->second = std::min(it->second, n.rank);
        }
    }
    for (const auto& [d, count] : used)
        s.domains.push_back({d, count});
    std::sort(s.domains.begin(), s.domains.end(),
              [&](const Span::DomainUse& a, const Span::DomainUse& b) {
                  return rank_of_domain[a.domain] < rank_of_domain[b.domain];
              });
    for (const auto& [leaf, rank] : rank_of_leaf)
        s.leaf_switches.push_back(leaf);
    std::sort(s.leaf_switches.begin(), s.leaf_switches.end(),
              [&](int a, int b) { return rank_of_leaf[a] < rank_of_leaf[b]; });

    // Lowest common switch: walk up from the first leaf until every node's
    // leaf lies below. Nodes without a leaf leave no common switch.
    bool all_attached = !seen.empty();
    for (int ni : seen)
        all_attached = all_attached && leaf_of(m, m.nodes[ni]) != kNone;
    if (all_attached) {
        for (int cand = s.leaf_switches.front(); cand != kNone; cand = m.switches[cand].parent) {
            bool holds_all = true;
            for (int leaf : s.leaf_switches) {
                int x = leaf;
                while (x != kNone && x != cand)
                    x = m.switches[x].parent;
                holds_all = holds_all && x == cand;
            }
            if (holds_all) {
                s.top_switch = cand;
                break;
            }
        }
    }
    return s;
}

std::string describe(const Model& m, const Span& s, size_t node_count)
{
    std::string out = std::to_string(node_count) + (node_count == 1 ? " node" : " nodes");
    if (!s.domains.empty()) {
        out += " in " + std::to_string(s.domains.size()) +
               (s.domains.size() == 1 ? " NVLink domain (" : " NVLink domains (");
        for (size_t i = 0; i < s.domains.size(); ++i) {
            const Domain& d = m.domains[s.domains[i].domain];
            out += (i ? ", " : "") + d.name + " " + std::to_string(s.domains[i].used) + "/" +
                   std::to_string(d.nodes.size());
        }
        const int whole = s.whole_domains(m);
        if (whole == static_cast<int>(s.domains.size()))
            out += s.domains.size() == 1 ? ", whole" : ", all whole";
        else if (whole > 0)
            out += ", " + std::to_string(whole) + " whole";
        out += ")";
    }
    if (!s.outside_domains.empty())
        out += s.domains.empty() ? std::string(" outside any NVLink domain")
                                 : ", " + std::to_string(s.outside_domains.size()) + " outside any NVLink domain";
    if (!s.leaf_switches.empty()) {
        out += " under " + std::to_string(s.leaf_switches.size()) +
               (s.leaf_switches.size() == 1 ? " leaf switch (" : " leaf switches (");
        for (size_t i = 0; i < s.leaf_switches.size(); ++i)
            out += (i ? "," : "") + m.switches[s.leaf_switches[i]].name;
        out += ")";
        if (s.top_switch != kNone && s.leaf_switches.size() > 1)
            out += ", joined at " + m.switches[s.top_switch].name;
        else if (s.top_switch == kNone)
            out += ", across separate fabrics";
    }
    if (!s.unknown.empty())
        out += "; " + std::to_string(s.unknown.size()) + " not in m2g.conf";
    return out;
}

}  // namespace m2g
