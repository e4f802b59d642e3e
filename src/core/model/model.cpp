// m2g core: model queries.
#include "core/model/model.hpp"

#include <algorithm>
#include <numeric>

namespace m2g {

const char* to_string(SwitchLevel level) { return name_of(kSwitchLevelNames, level); }

namespace {
template <typename Map>
int lookup(const Map& m, std::string_view name)
{
    auto it = m.find(name);
    return it == m.end() ? kNone : it->second;
}
}  // namespace

const PlacementPolicy& Model::policy_for(std::string_view partition) const
{
    auto it = partition_policy.find(partition);
    return it == partition_policy.end() ? policy : it->second;
}

int Model::find_node(std::string_view name) const { return lookup(node_index, name); }
int Model::find_domain(std::string_view name) const { return lookup(domain_index, name); }
int Model::find_switch(std::string_view name) const { return lookup(switch_index, name); }

int Model::total_gpus() const
{
    int n = 0;
    for (const Node& node : nodes)
        n += node.gpus;
    return n;
}

int Model::usual_node_gpus(const std::vector<int>& among) const
{
    std::map<int, int> count;  // GPUs per node -> nodes
    auto add = [&](const Node& node) {
        if (node.gpus > 0)
            ++count[node.gpus];
    };
    if (among.empty())
        for (const Node& node : nodes)
            add(node);
    for (int i : among)
        if (i >= 0 && static_cast<size_t>(i) < nodes.size())
            add(nodes[static_cast<size_t>(i)]);
    int best = 0, seen = 0;
    for (const auto& [gpus, n] : count)
        if (n >= seen)
            best = gpus, seen = n;
    return best;
}

namespace {

// The indices of the items (switches or domains) that have no parent.
template <class T>
std::vector<int> parentless(const std::vector<T>& items)
{
    std::vector<int> out;
    for (size_t i = 0; i < items.size(); ++i)
        if (items[i].parent == kNone)
            out.push_back(static_cast<int>(i));
    return out;
}

}  // namespace

std::vector<int> Model::roots() const
{
    return parentless(switches);
}

std::vector<int> Model::unattached_domains() const
{
    return parentless(domains);
}

std::vector<int> Model::nodes_in_rank_order() const
{
    std::vector<int> out(nodes.size());
    std::iota(out.begin(), out.end(), 0);
    std::sort(out.begin(), out.end(), [&](int a, int b) { return nodes[a].rank < nodes[b].rank; });
    return out;
}

}  // namespace m2g
