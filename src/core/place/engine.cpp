// m2g core: the placement engine.
#include "core/place/engine.hpp"

#include "core/base/quote.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>

#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"
#include "core/base/keys.hpp"

namespace m2g {

namespace {

// A domain's heat (ClusterState::domain_heat), 0 when unknown or for a
// node outside domains.
double heat_of(const ClusterState& st, int domain)
{
    return domain != kNone && static_cast<size_t>(domain) < st.domain_heat.size() ? st.domain_heat[domain] : 0.0;
}

// How many of the bytes [p, p + len) are not 0, eight at a time: in each
// 64-bit word, a byte's top bit after ((x & 0x7f..) + 0x7f..) | x says it
// is not 0; the multiply sums those bits into the top byte.
int nonzero_bytes(const uint8_t* p, size_t len)
{
    constexpr uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL, top = 0x8080808080808080ULL, ones = 0x0101010101010101ULL;
    int c = 0;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t x;
        std::memcpy(&x, p + i, sizeof x);
        const uint64_t nz = (((x & low7) + low7) | x) & top;
        c += static_cast<int>(((nz >> 7) * ones) >> 56);
    }
    for (; i < len; ++i)
        c += p[i] != 0;
    return c;
}

}  // namespace

Engine::Engine(const Model& m) : m_(m)
{
    node_group_.assign(m.nodes.size(), kNone);
    for (size_t d = 0; d < m.domains.size(); ++d) {
        Group g;
        g.nodes = m.domains[d].nodes;
        std::sort(g.nodes.begin(), g.nodes.end(), [&](int a, int b) { return m.nodes[a].rank < m.nodes[b].rank; });
        g.size = m.domains[d].size;
        g.parent = m.domains[d].parent;
        g.domain = static_cast<int>(d);
        for (int n : g.nodes)
            node_group_[n] = static_cast<int>(groups_.size());
        groups_.push_back(std::move(g));
    }
    for (size_t n = 0; n < m.nodes.size(); ++n) {
        if (m.nodes[n].domain != kNone)
            continue;
        Group g;
        g.nodes = {static_cast<int>(n)};
        g.size = 1;
        g.parent = m.nodes[n].leaf;
        node_group_[n] = static_cast<int>(groups_.size());
        groups_.push_back(std::move(g));
    }
    for (Group& g : groups_)
        g.rank = g.nodes.empty() ? 0 : m.nodes[g.nodes.front()].rank;
    for (size_t n = 0; n < node_group_.size(); ++n) {
        const int g = node_group_[n];
        if (!runs_.empty() && runs_.back().group == g && runs_.back().end == static_cast<int>(n))
            ++runs_.back().end;
        else
            runs_.push_back({static_cast<int>(n), static_cast<int>(n) + 1, g});
    }

    children_.resize(m.switches.size());
    for (size_t s = 0; s < m.switches.size(); ++s)
        for (int c : m.switches[s].switches)
            children_[s].push_back({false, c});
    for (size_t g = 0; g < groups_.size(); ++g)
        if (groups_[g].parent != kNone)
            children_[groups_[g].parent].push_back({true, static_cast<int>(g)});
    int max_h = 0;
    for (const Switch& s : m.switches)
        max_h = std::max(max_h, s.height);
    by_height_.resize(m.switches.empty() ? 0 : max_h + 1);
    for (size_t s = 0; s < m.switches.size(); ++s)
        by_height_[m.switches[s].height].push_back(static_cast<int>(s));
    subtree_groups_.resize(m.switches.size());
    for (size_t g = 0; g < groups_.size(); ++g)
        for (int s = groups_[g].parent; s != kNone; s = m.switches[s].parent)
            subtree_groups_[s].push_back(static_cast<int>(g));
    for (const Group& g : groups_)
        sizes_desc_.push_back(g.size);
    std::sort(sizes_desc_.rbegin(), sizes_desc_.rend());

    free_.resize(groups_.size());
    min_weight_.resize(groups_.size());
    units_.resize(groups_.size());
    excluded_.resize(groups_.size());
    sw_units_.resize(m.switches.size());
}

std::string Engine::group_name(int g) const
{
    const Group& gr = groups_[g];
    return gr.domain != kNone ? m_.domains[gr.domain].name : m_.nodes[gr.nodes.front()].name;
}

int Engine::capacity(const Child& c) const
{
    return c.is_group ? units_[c.index] : sw_units_[c.index];
}

int Engine::lower_bound(int nodes, int segment) const
{
    // Fewest groups that could hold the job on an empty cluster.
    const int unit = segment > 0 ? segment : 1;
    int need = (nodes + unit - 1) / unit, used = 0;
    for (int size : sizes_desc_) {
        if (need <= 0)
            break;
        const int u = size / unit;
        if (u <= 0)
            break;
        need -= u;
        ++used;
    }
    return used;
}

// Whether the `count` groups with the most units hold `need` units.
bool Engine::largest_hold(int need, int count) const
{
    if (count <= 0)
        return need <= 0;
    if (count <= 4) {  // most jobs: a domain or a few; the top few in one pass
        int top[4] = {0, 0, 0, 0};
        for (int u : units_) {
            if (u <= top[count - 1])
                continue;
            int i = count - 1;
            for (; i > 0 && top[i - 1] < u; --i)
                top[i] = top[i - 1];
            top[i] = u;
        }
        int64_t sum = 0;
        for (int i = 0; i < count; ++i)
            sum += top[i];
        return sum >= need;
    }
    largest_.assign(units_.begin(), units_.end());
    const size_t k = std::min(largest_.size(), static_cast<size_t>(count));
    std::partial_sort(largest_.begin(), largest_.begin() + static_cast<std::ptrdiff_t>(k), largest_.end(),
                      std::greater<int>());
    int64_t sum = 0;
    for (size_t i = 0; i < k; ++i)
        sum += largest_[i];
    return sum >= need;
}

// Choose groups under switch `sw` for `need` units: fewest groups first
// (the largest groups whole, the best-fitting group for the remainder),
// then fewest leaf switches (a group under a leaf already used, then under
// the leaf with the most room), then rank.
void Engine::select_groups(int sw, int need, std::vector<std::pair<int, int>>& picks) const
{
    picks.clear();
    const std::vector<int>& gs = subtree_groups_[sw];
    std::vector<uint8_t>& taken = taken_;
    taken.assign(gs.size(), 0);
    // The leaves this call has used: marked with its own stamp.
    if (leaf_stamp_.size() != m_.switches.size() || ++stamp_ == 0) {
        leaf_stamp_.assign(m_.switches.size(), 0);
        stamp_ = 1;
    }
    const uint32_t stamp = stamp_;
    auto leaf_used = [&](int g) {
        const int leaf = groups_[g].parent;
        return leaf != kNone && leaf_stamp_[static_cast<size_t>(leaf)] == stamp;
    };
    auto leaf_room = [&](int g) { return groups_[g].parent == kNone ? 0 : sw_units_[groups_[g].parent]; };
    // a before b, among groups of equal usefulness: the cooler rack before
    // the rank order decides.
    auto prefer = [&](int a, int b) {
        const bool ua = leaf_used(a), ub = leaf_used(b);
        if (ua != ub)
            return ua;
        if (leaf_room(a) != leaf_room(b))
            return leaf_room(a) > leaf_room(b);
        const double ha = heat_of(*state_, groups_[a].domain), hb = heat_of(*state_, groups_[b].domain);
        if (ha != hb)
            return ha < hb;
        return groups_[a].rank < groups_[b].rank;
    };
    while (need > 0) {
        int fit = -1, largest = -1;
        for (size_t k = 0; k < gs.size(); ++k) {
            if (taken[k])
                continue;
            const int g = gs[k], u = units_[g];
            if (u <= 0)
                continue;
            if (u >= need && (fit < 0 || u < units_[gs[fit]] || (u == units_[gs[fit]] && prefer(g, gs[fit]))))
                fit = static_cast<int>(k);
            if (largest < 0 || u > units_[gs[largest]] || (u == units_[gs[largest]] && prefer(g, gs[largest])))
                largest = static_cast<int>(k);
        }
        const int k = fit >= 0 ? fit : largest;
        if (k < 0)
            break;  // cannot happen: the switch's capacity was summed from these groups
        taken[k] = 1;
        const int g = gs[k], take = fit >= 0 ? need : units_[g];
        picks.emplace_back(g, take);
        if (groups_[g].parent != kNone)
            leaf_stamp_[static_cast<size_t>(groups_[g].parent)] = stamp;
        need -= take;
    }
}

// The usable healthy nodes of `gr` a job taking part of each node should
// use, in fit_nodes_: those it leaves the fewest GPUs free on, then rank.
void Engine::best_fit_nodes(const Group& gr, int want)
{
    const std::vector<int>& free = *req_->node_free_gpus;
    fit_nodes_.clear();
    for (int n : gr.nodes)
        if ((*usable_)[n] && (state_->node_degraded.empty() || !state_->node_degraded[n]))
            fit_nodes_.push_back(n);
    if (static_cast<int>(fit_nodes_.size()) <= want)
        return;
    auto spare = [&](int n) { return static_cast<size_t>(n) < free.size() ? free[n] : 0; };
    auto weight = [&](int n) { return req_->node_weight ? (*req_->node_weight)[n] : 0; };
    std::stable_sort(fit_nodes_.begin(), fit_nodes_.end(), [&](int a, int b) {
        return weight(a) != weight(b) ? weight(a) < weight(b) : spare(a) < spare(b);
    });
    fit_nodes_.resize(static_cast<size_t>(want));
}

void Engine::fill_group(int g, int units, Placement& out)
{
    const Group& gr = groups_[g];
    int want = units * unit_;
    const int before = want;
    if (req_->node_free_gpus && req_->gpus_per_node > 0 && unit_ == 1) {
        best_fit_nodes(gr, want);
        for (int n : fit_nodes_)
            out.nodes.push_back(n);
        out.domains.push_back(gr.domain != kNone ? gr.domain : -1 - gr.nodes.front());
        out.leftover += free_[g] - before;
        return;
    }
    const std::vector<int>* order = &gr.nodes;
    if (req_->node_weight) {
        const std::vector<uint64_t>& w = *req_->node_weight;
        by_weight_ = gr.nodes;
        std::stable_sort(by_weight_.begin(), by_weight_.end(), [&](int a, int b) { return w[a] < w[b]; });
        order = &by_weight_;
    }
    for (int n : *order) {
        if (want == 0)
            break;
        if (!(*usable_)[n])
            continue;
        if (!state_->node_degraded.empty() && state_->node_degraded[n])
            continue;
        out.nodes.push_back(n);
        --want;
    }
    out.domains.push_back(gr.domain != kNone ? gr.domain : -1 - gr.nodes.front());
    out.leftover += free_[g] - before;
}

// One pass over the nodes: usable healthy nodes per group, and each
// group's units. Returns what was avoided, for the reason.
std::string Engine::count_units(const PlacementRequest& req)
{
    const std::vector<uint8_t>& usable = *usable_;
    const ClusterState& state = *state_;
    std::fill(free_.begin(), free_.end(), 0);
    int degraded = 0;
    const size_t count = std::min(usable.size(), node_group_.size());
    const uint8_t* use = usable.data();
    const int* group_of = node_group_.data();
    int* free = free_.data();
    if (state.node_degraded.empty()) {
        for (const NodeRun& r : runs_) {
            if (static_cast<size_t>(r.begin) >= count)
                break;
            const size_t end = std::min(static_cast<size_t>(r.end), count);
            free[r.group] += nonzero_bytes(use + r.begin, end - static_cast<size_t>(r.begin));
        }
    } else {
        const uint8_t* bad = state.node_degraded.data();
        const size_t known = state.node_degraded.size();
        for (size_t n = 0; n < count; ++n) {
            if (!use[n])
                continue;
            if (n < known && bad[n]) {
                ++degraded;
                continue;
            }
            ++free[group_of[n]];
        }
    }
    if (req.node_weight) {
        std::fill(min_weight_.begin(), min_weight_.end(), UINT64_MAX);
        for (size_t n = 0; n < usable.size() && n < node_group_.size(); ++n)
            if (usable[n] && (state.node_degraded.empty() || !state.node_degraded[n]))
                min_weight_[node_group_[n]] = std::min(min_weight_[node_group_[n]], (*req.node_weight)[n]);
    }
    std::string avoided;
    for (size_t g = 0; g < groups_.size(); ++g) {
        const int d = groups_[g].domain;
        excluded_[g] = 0;
        if (d != kNone && !state.domain_nvlink_fault.empty() && state.domain_nvlink_fault[d])
            excluded_[g] = 1;
        else if (d != kNone && !state.domain_over_limit.empty() && state.domain_over_limit[d])
            excluded_[g] = 2;
        if (excluded_[g] && free_[g] > 0 && req.explain)
            avoided += (avoided.empty() ? "" : ", ") + group_name(static_cast<int>(g)) +
                       (excluded_[g] == 1 ? " (NVLink fault)" : " (over its power or thermal limit)");
        const int spare = groups_[g].domain != kNone ? req.spare_per_domain : 0;
        units_[g] = excluded_[g] ? 0 : std::max(0, free_[g] - spare) / unit_;
    }
    if (degraded && req.explain)
        avoided += (avoided.empty() ? "" : ", ") + std::to_string(degraded) + " degraded node" + (degraded > 1 ? "s" : "");
    return avoided;
}

// Switch capacities, bottom up.
void Engine::sum_switch_units()
{
    for (const auto& level : by_height_)
        for (int s : level) {
            int sum = 0;
            for (const Child& c : children_[s])
                sum += capacity(c);
            sw_units_[s] = sum;
        }
}

// The group that holds `need` units best (best fit), -1 none.
int Engine::best_fit_group(int need) const
{
    const ClusterState& state = *state_;
    int best_group = -1;
    for (size_t g = 0; g < groups_.size(); ++g) {
        if (units_[g] < need)
            continue;
        if (req_->node_weight && best_group >= 0 && min_weight_[g] != min_weight_[best_group]) {
            if (min_weight_[g] < min_weight_[best_group])
                best_group = static_cast<int>(g);
            continue;
        }
        if (best_group < 0 || units_[g] < units_[best_group]) {
            best_group = static_cast<int>(g);
            continue;
        }
        if (units_[g] > units_[best_group])
            continue;
        const double h = heat_of(state, groups_[g].domain), hb = heat_of(state, groups_[best_group].domain);
        if (h < hb || (h == hb && groups_[g].rank < groups_[best_group].rank))
            best_group = static_cast<int>(g);
    }
    return best_group;
}

// The switch whose subtree holds `need` units best, -1 none.
int Engine::best_fit_switch(int need)
{
    const ClusterState& state = *state_;
    int best_switch = -1, best_groups = 0;
    double best_heat = 0;
    for (const auto& level : by_height_)
        for (int s : level) {
            if (sw_units_[s] < need)
                continue;
            select_groups(s, need, picks_);
            const int used = static_cast<int>(picks_.size());
            double heat = 0;  // of the racks this switch would use
            for (const auto& pick : picks_)
                heat += heat_of(state, groups_[pick.first].domain);
            const Switch& a = m_.switches[s];
            bool better = best_switch < 0 || used < best_groups;
            if (!better && used == best_groups) {
                const Switch& b = m_.switches[best_switch];
                better = a.height < b.height ||
                         (a.height == b.height &&
                          (sw_units_[s] < sw_units_[best_switch] ||
                           (sw_units_[s] == sw_units_[best_switch] &&
                            (a.link_gbps > b.link_gbps || (a.link_gbps == b.link_gbps && heat < best_heat)))));
            }
            if (better) {
                best_switch = s;
                best_groups = used;
                best_heat = heat;
            }
        }
    best_switch_groups_ = best_groups;
    return best_switch;
}

// The nodes of the chosen container, in rank order, and the groups and
// leaves they use.
void Engine::take(int best_group, int best_switch, int need, Placement& out)
{
    if (best_group >= 0) {
        fill_group(best_group, need, out);
    } else {
        select_groups(best_switch, need, picks_);
        for (const auto& [g, units] : picks_)
            fill_group(g, units, out);
    }
    auto by_rank = [&](int a, int b) { return m_.nodes[a].rank < m_.nodes[b].rank; };
    if (!std::is_sorted(out.nodes.begin(), out.nodes.end(), by_rank))  // most often one group's, in order
        std::sort(out.nodes.begin(), out.nodes.end(), by_rank);
    auto group_rank = [&](int d) { return d >= 0 ? m_.nodes[m_.domains[d].nodes.front()].rank : m_.nodes[-1 - d].rank; };
    auto by_group_rank = [&](int a, int b) { return group_rank(a) < group_rank(b); };
    if (!std::is_sorted(out.domains.begin(), out.domains.end(), by_group_rank))
        std::sort(out.domains.begin(), out.domains.end(), by_group_rank);
    out.domains_used = static_cast<int>(out.domains.size());
    for (int n : out.nodes) {
        const int leaf = groups_[node_group_[n]].parent;
        if (leaf != kNone && std::find(out.leaves.begin(), out.leaves.end(), leaf) == out.leaves.end())
            out.leaves.push_back(leaf);
    }
}

// Why a placement that does not meet a strict intent waits; `most`: the
// group with the most units now (-1 none).
std::string Engine::wait_reason(const PlacementRequest& req, const Placement& out, int most,
                                const std::string& avoided) const
{
    std::ostringstream r;
    if (req.level == LocalityLevel::NVLink && out.domain_lower_bound == 1) {
        r << "waiting for an NVLink domain with " << req.nodes << " free healthy nodes (best now: "
          << (most >= 0 ? group_name(most) + " with " + std::to_string(units_[most] * unit_) : "none") << ")";
    } else if (req.level == LocalityLevel::NVLink) {
        r << "waiting for " << out.domain_lower_bound << " NVLink domains with " << req.nodes
          << " free healthy nodes (best now: " << out.domains_used << " domains)";
    } else {
        r << "waiting for a " << to_string(req.level) << " switch with " << req.nodes
          << " free healthy nodes (best now: " << out.leaves.size() << " leaf switches)";
    }
    if (!avoided.empty())
        r << "; avoided: " << avoided;
    return r.str();
}

// What a placement took, and how it stands to the intent.
std::string Engine::placed_reason(const PlacementRequest& req, const Placement& out, const std::string& avoided) const
{
    const int best_switch = out.top_switch;
    std::ostringstream r;
    const int outside = static_cast<int>(std::count_if(out.domains.begin(), out.domains.end(), [](int d) { return d < 0; }));
    if (outside == out.domains_used && out.domains_used > 1) {
        r << req.nodes << " nodes outside NVLink domains, under "
          << (best_switch >= 0 ? m_.switches[best_switch].name : std::string("no switch")) << " ("
          << out.leaves.size() << " leaf switch" << (out.leaves.size() == 1 ? "" : "es") << ")";
    } else if (out.domains_used == 1) {
        const int g = node_group_[out.nodes.front()];
        r << group_name(g) << ", best fit (" << out.leftover << " of " << groups_[g].size
          << " nodes left free there)";
    } else {
        int whole = 0;
        for (int d : out.domains)
            if (d >= 0 && static_cast<int>(m_.domains[d].nodes.size()) ==
                              static_cast<int>(std::count_if(out.nodes.begin(), out.nodes.end(),
                                                             [&](int n) { return m_.nodes[n].domain == d; })))
                ++whole;
        r << out.domains_used << " NVLink domains (" << whole << " whole, lower bound " << out.domain_lower_bound
          << ") under " << (best_switch >= 0 ? m_.switches[best_switch].name : std::string("no switch"));
    }
    if (req.segment)
        r << ", segments of " << req.segment;
    if (!out.meets_intent)
        r << "; best effort, the " << to_string(req.level) << " intent is not met"
          << (req.locality == Locality::Prefer ? " (prefer wait over)" : "");
    if (!avoided.empty())
        r << "; avoided: " << avoided;
    return r.str();
}

Placement Engine::place(const PlacementRequest& req, const std::vector<uint8_t>& usable, const ClusterState& state)
{
    Placement out;
    usable_ = &usable;
    state_ = &state;
    req_ = &req;
    unit_ = req.segment > 0 ? req.segment : 1;
    if (req.nodes <= 0) {
        out.wait = WaitCause::Other;
        out.reason = "the job asks for no nodes";
        return out;
    }
    if (req.segment > 0 && req.nodes % req.segment != 0) {
        out.wait = WaitCause::Other;
        out.reason = std::to_string(req.nodes) + " nodes are not a whole number of segments of " +
                     std::to_string(req.segment) + "; ask for a multiple of --m2g-segment";
        return out;
    }
    const int need = req.nodes / unit_;
    const std::string avoided = count_units(req);
    sum_switch_units();

    // The container: one group if one fits (best fit), else the switch
    // whose subtree holds the job in the fewest groups, then at the lowest
    // level, then with the least capacity left over, then the widest uplink.
    // Equal fits go to the cooler rack (ClusterState::domain_heat), then
    // to the first in rank order.
    const int group = best_fit_group(need);
    out.domain_lower_bound = lower_bound(req.nodes, req.segment);
    const bool must = req.locality == Locality::Strict || (req.locality == Locality::Prefer && !req.fallback);
    // A probe (answer only) of a job that must span no more domains than
    // its fewest: when the cluster's largest groups together need more,
    // no switch can meet that (select_groups() takes a subtree's largest
    // first, so it never uses fewer groups than the whole cluster's
    // largest would), and the answer is no without trying each switch.
    if (group < 0 && req.answer_only && must && req.level == LocalityLevel::NVLink &&
        !largest_hold(need, out.domain_lower_bound)) {
        out.wait = WaitCause::NvlinkDomain;
        out.need = req.nodes;
        return out;
    }
    const int sw = group < 0 ? best_fit_switch(need) : -1;
    // The best a single group offers now, for the waiting reason.
    int most = -1;
    for (size_t g = 0; g < groups_.size(); ++g)
        if (most < 0 || units_[g] > units_[most])
            most = static_cast<int>(g);

    if (group < 0 && sw < 0) {
        out.wait = WaitCause::Nodes;
        out.need = req.nodes;
        if (!req.explain)
            return out;
        int total = 0;
        for (int u : units_)
            total += u;
        std::ostringstream r;
        r << "waiting for " << req.nodes << " free healthy nodes" << (req.segment ? " in whole segments" : "")
          << " under one switch (usable now: " << total * unit_;
        if (!avoided.empty())
            r << "; avoided: " << avoided;
        r << ")";
        out.reason = r.str();
        return out;
    }
    if (req.answer_only)  // what take() would use: one group, or the switch's picks
        out.domains_used = group >= 0 ? 1 : best_switch_groups_;
    else
        take(group, sw, need, out);
    out.top_switch = sw;

    // Does it meet the intent?
    const int top_height = sw < 0 ? -1 : m_.switches[sw].height;
    switch (req.level) {
    case LocalityLevel::NVLink:
        out.meets_intent = out.domains_used <= out.domain_lower_bound;
        break;
    case LocalityLevel::Leaf:
        out.meets_intent = top_height <= 0;
        break;
    case LocalityLevel::Spine:
        out.meets_intent = top_height <= 1;
        break;
    }
    out.score = 1000.0 * std::max(0, out.domains_used - out.domain_lower_bound) +
                100.0 * std::max<int>(0, static_cast<int>(out.leaves.size()) - 1) + out.leftover;

    if (!out.meets_intent && must) {
        out.ok = false;
        out.wait = req.level == LocalityLevel::NVLink ? WaitCause::NvlinkDomain : WaitCause::Switch;
        out.need = req.nodes;
        if (req.explain)
            out.reason = wait_reason(req, out, most, avoided);
        out.nodes.clear();
        return out;
    }
    out.ok = true;
    if (req.explain)
        out.reason = placed_reason(req, out, avoided);
    return out;
}

namespace {

std::string json_str(const std::string& s) { return json_quote(s); }

}  // namespace

std::string format_placement(const Model& m, const Placement& p, bool json)
{
    std::vector<std::string> nodes, domains, leaves;
    for (int n : p.nodes)
        nodes.push_back(m.nodes[n].name);
    int outside = 0;
    for (int d : p.domains) {
        if (d >= 0)
            domains.push_back(m.domains[d].name);
        else
            ++outside;
    }
    for (int l : p.leaves)
        leaves.push_back(m.switches[l].name);
    const std::string top = p.top_switch == kNone ? "" : m.switches[p.top_switch].name;
    std::ostringstream os;
    if (json) {
        auto list = [&](const std::vector<std::string>& v) {
            std::string o = "[";
            for (size_t i = 0; i < v.size(); ++i)
                o += (i ? "," : "") + json_str(v[i]);
            return o + "]";
        };
        os << "{\"ok\":" << (p.ok ? "true" : "false") << ",\"meets_intent\":" << (p.meets_intent ? "true" : "false")
           << ",\"nodes\":" << json_str(hostlist_compress(nodes)) << ",\"node_count\":" << nodes.size()
           << ",\"domains\":" << list(domains) << ",\"domains_used\":" << p.domains_used
           << ",\"domain_lower_bound\":" << p.domain_lower_bound << ",\"leaf_switches\":" << list(leaves)
           << ",\"top_switch\":" << (top.empty() ? "null" : json_str(top)) << ",\"leftover\":" << p.leftover
           << ",\"score\":" << p.score << ",\"reason\":" << json_str(p.reason) << "}\n";
        return os.str();
    }
    if (!p.ok) {
        os << "waits: " << p.reason << "\n";
        return os.str();
    }
    auto join = [](const std::vector<std::string>& v) {
        std::string o;
        for (const auto& x : v)
            o += (o.empty() ? "" : ",") + x;
        return o.empty() ? std::string("-") : o;
    };
    os << "nodes:    " << hostlist_compress(nodes) << " (" << nodes.size() << ")\n"
       << "domains:  " << (domains.empty() ? std::string("none") : join(domains))
       << (outside ? "; " + std::to_string(outside) + " node" + (outside > 1 ? "s" : "") + " outside NVLink domains" : "")
       << " (" << p.domains_used << ", lower bound " << p.domain_lower_bound << ")\n"
       << "leaves:   " << join(leaves) << (leaves.size() > 1 && !top.empty() ? ", joined at " + top : "") << "\n"
       << "score:    " << p.score << "\n"
       << "reason:   " << p.reason << "\n";
    return os.str();
}

PlacementRequest parse_request(const std::string& text, int gpus_per_node)
{
    PlacementRequest req;
    int nodes = 0, gpus = 0;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        const auto eq = item.find('=');
        const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
        auto number = [&](int min, int max) {
            char* end = nullptr;
            const long v = std::strtol(value.c_str(), &end, 10);
            if (value.empty() || *end || v < min || v > max)
                throw ParseError("request " + item + ": expected a whole number from " + std::to_string(min) +
                                 " to " + std::to_string(max));
            return static_cast<int>(v);
        };
        if (key == "nodes") {
            nodes = number(1, 1000000);
        } else if (key == "gpus") {
            gpus = number(1, 100000000);
        } else if (key == "segment") {
            req.segment = number(1, 4096);
        } else if (key == "spare") {
            req.spare_per_domain = number(0, 4096);
        } else if (key == "fallback") {
            req.fallback = value == "yes" || value == "1";
            if (!req.fallback && value != "no" && value != "0")
                throw ParseError("request " + item + ": expected yes or no");
        } else if (key == "topology") {
            JobIntent i;
            apply_option(i, kw::kOptTopology, value, 0);
            req.locality = i.locality;
            req.level = i.level;
        } else {
            throw ParseError("request: unknown key '" + key +
                             "'; accepted: nodes, gpus, segment, topology, fallback, spare (e.g. "
                             "gpus=72,topology=strict:nvlink)");
        }
    }
    if (gpus && !nodes) {
        if (gpus_per_node <= 0)
            throw ParseError("request gpus=" + std::to_string(gpus) + ": the nodes declare no GPUs; ask for nodes=");
        nodes = (gpus + gpus_per_node - 1) / gpus_per_node;
    }
    if (!nodes)
        throw ParseError("request '" + text + "': give nodes=N or gpus=N");
    req.nodes = nodes;
    return req;
}

}  // namespace m2g
