// m2g core: preemption that respects NVLink domains (see preempt.hpp).
#include "core/place/preempt.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace m2g {

namespace {

// The planner's state over one call: what each node holds and which
// candidates the plan evicts so far.
class Planner {
  public:
    Planner(const Model& m, const PreemptRequest& req, const std::vector<uint8_t>& allowed,
            const std::vector<int>& free_now, const std::vector<PreemptCandidate>& cands)
        : m_(m), req_(req), allowed_(allowed), free_(free_now), cands_(cands), on_node_(m.nodes.size())
    {
        for (size_t c = 0; c < cands.size(); ++c)
            for (const auto& [node, gpus] : cands[c].held)
                if (node >= 0 && static_cast<size_t>(node) < m.nodes.size()) {
                    const int busy = std::max(0, m.nodes[node].gpus - free_at(node));
                    on_node_[node].push_back({static_cast<int>(c), gpus < 0 ? busy : std::min(gpus, busy)});
                }
        for (auto& v : on_node_)  // cheapest first: least work, then most GPUs freed
            std::sort(v.begin(), v.end(), [&](const Held& a, const Held& b) {
                const double wa = cost(a.cand), wb = cost(b.cand);
                return wa != wb ? wa < wb : a.gpus != b.gpus ? a.gpus > b.gpus : a.cand < b.cand;
            });
        chosen_.assign(cands.size(), 0);
    }

    // The groups NVLink joins: each domain (its nodes in rank order), then
    // each node outside domains.
    std::vector<std::vector<int>> groups() const
    {
        std::vector<std::vector<int>> out;
        for (const Domain& d : m_.domains) {
            std::vector<int> ns = d.nodes;
            std::sort(ns.begin(), ns.end(), [&](int a, int b) { return m_.nodes[a].rank < m_.nodes[b].rank; });
            out.push_back(std::move(ns));
        }
        for (size_t n = 0; n < m_.nodes.size(); ++n)
            if (m_.nodes[n].domain == kNone)
                out.push_back({static_cast<int>(n)});
        return out;
    }

    // Nodes of `g` the job could use if every candidate on them left,
    // rounded down to whole segments.
    int capacity(const std::vector<int>& g) const
    {
        int n = 0;
        for (int node : g)
            n += usable(node) && reachable(node);
        const int unit = req_.segment > 0 ? req_.segment : 1;
        return n / unit * unit;
    }

    struct Take {
        bool ok = false;
        double cost = 0;
        int jobs = 0;
        std::vector<int> nodes;
        std::vector<uint8_t> chosen;  // the victims after this take
    };

    // The cheapest `k` nodes of group `g` given the victims chosen so far
    // (they, and jobs leaving, cost nothing). Exact for the usual case: the
    // nodes that need evictions fall into clusters that share victims (a
    // whole-node job is a cluster of its own); each cluster offers, per
    // number of nodes it frees, its cheapest set of victims (every subset
    // of its victims when it has few, else its victims cheapest first),
    // and a knapsack over the clusters takes the cheapest combination that
    // frees enough nodes (least work, then fewest jobs). Picking the
    // cheapest node one at a time is not enough: it evicts several small
    // jobs where one larger, younger job frees the same nodes for less.
    Take take(const std::vector<int>& g, int k) const
    {
        Take t;
        t.chosen = chosen_;
        std::vector<int> ready, needy;  // usable nodes free enough now; those that need evictions
        for (int node : g) {
            if (!usable(node))
                continue;
            if (available(node, t.chosen))
                ready.push_back(node);
            else if (reachable(node))
                needy.push_back(node);
        }
        const int need = k - static_cast<int>(ready.size());
        if (need <= 0) {
            t.nodes.assign(ready.begin(), ready.begin() + k);
            t.ok = true;
            return t;
        }
        // Clusters: needy nodes joined through the victims they share.
        std::vector<int> parent(needy.size());
        for (size_t i = 0; i < parent.size(); ++i)
            parent[i] = static_cast<int>(i);
        auto find = [&](int i) {
            while (parent[i] != i)
                i = parent[i] = parent[parent[i]];
            return i;
        };
        std::vector<int> holder_of(cands_.size(), -1);  // a needy node index holding the victim
        for (size_t i = 0; i < needy.size(); ++i)
            for (const Held& h : on_node_[needy[i]]) {
                if (t.chosen[h.cand] || cands_[h.cand].leaving)
                    continue;
                if (holder_of[h.cand] < 0)
                    holder_of[h.cand] = static_cast<int>(i);
                else
                    parent[find(static_cast<int>(i))] = find(holder_of[h.cand]);
            }
        struct Option {
            int nodes;
            double cost;
            int jobs;
            std::vector<int> victims;
        };
        std::vector<std::vector<Option>> options;  // per cluster: the cheapest per number of nodes freed
        std::vector<std::vector<int>> cluster_nodes;
        {
            std::vector<int> cluster_of(needy.size(), -1);
            for (size_t i = 0; i < needy.size(); ++i) {
                const int root = find(static_cast<int>(i));
                if (cluster_of[root] < 0) {
                    cluster_of[root] = static_cast<int>(cluster_nodes.size());
                    cluster_nodes.emplace_back();
                }
                cluster_nodes[cluster_of[root]].push_back(needy[i]);
            }
        }
        for (const std::vector<int>& nodes : cluster_nodes) {
            std::vector<int> vs;
            for (int node : nodes)
                for (const Held& h : on_node_[node])
                    if (!t.chosen[h.cand] && !cands_[h.cand].leaving &&
                        std::find(vs.begin(), vs.end(), h.cand) == vs.end())
                        vs.push_back(h.cand);
            std::vector<Option> best(nodes.size() + 1, Option{0, -1, 0, {}});
            auto consider = [&](const std::vector<int>& pick) {
                std::vector<uint8_t> with = t.chosen;
                double c = 0;
                for (int v : pick)
                    with[v] = 1, c += cost(v);
                int freed = 0;
                for (int node : nodes)
                    freed += available(node, with);
                Option& o = best[freed];
                const int jobs = static_cast<int>(pick.size());
                if (freed > 0 && (o.cost < 0 || c < o.cost || (c == o.cost && jobs < o.jobs)))
                    o = Option{freed, c, jobs, pick};
            };
            if (vs.size() <= kExactVictims) {
                std::vector<int> pick;
                for (uint32_t mask = 1; mask < (1u << vs.size()); ++mask) {
                    pick.clear();
                    for (size_t b = 0; b < vs.size(); ++b)
                        if (mask & (1u << b))
                            pick.push_back(vs[b]);
                    consider(pick);
                }
            } else {
                std::sort(vs.begin(), vs.end(), [&](int a, int b) { return cost(a) < cost(b); });
                std::vector<int> pick;
                for (int v : vs) {
                    pick.push_back(v);
                    consider(pick);
                }
            }
            std::vector<Option> opts;
            for (Option& o : best)
                if (o.cost >= 0)
                    opts.push_back(std::move(o));
            options.push_back(std::move(opts));
        }
        // Knapsack over the clusters: the cheapest way to free `need` nodes.
        struct Cell {
            double cost = -1;  // < 0: unreachable
            int jobs = 0;
        };
        const size_t nc = options.size();
        std::vector<std::vector<Cell>> dp(nc + 1, std::vector<Cell>(need + 1));
        std::vector<std::vector<int>> pick_of(nc + 1, std::vector<int>(need + 1, -1));  // option, -1 none
        std::vector<std::vector<int>> from(nc + 1, std::vector<int>(need + 1, 0));
        dp[0][0] = Cell{0, 0};
        for (size_t c = 0; c < nc; ++c)
            for (int w = 0; w <= need; ++w) {
                const Cell& cur = dp[c][w];
                if (cur.cost < 0)
                    continue;
                auto relax = [&](int w1, double cost1, int jobs1, int opt) {
                    Cell& d = dp[c + 1][w1];
                    if (d.cost < 0 || cost1 < d.cost || (cost1 == d.cost && jobs1 < d.jobs)) {
                        d = Cell{cost1, jobs1};
                        pick_of[c + 1][w1] = opt;
                        from[c + 1][w1] = w;
                    }
                };
                relax(w, cur.cost, cur.jobs, -1);
                for (size_t o = 0; o < options[c].size(); ++o) {
                    const Option& op = options[c][o];
                    relax(std::min(need, w + op.nodes), cur.cost + op.cost, cur.jobs + op.jobs, static_cast<int>(o));
                }
            }
        if (dp[nc][need].cost < 0)
            return t;  // ok stays false
        t.cost = dp[nc][need].cost;
        t.jobs = dp[nc][need].jobs;
        // The nodes: those free now, then those the chosen evictions free.
        t.nodes = ready;
        std::vector<int> freed;
        for (size_t c = nc, w = need; c > 0; --c) {
            const int o = pick_of[c][w];
            if (o >= 0)
                for (int v : options[c - 1][o].victims)
                    t.chosen[v] = 1;
            w = from[c][w];
        }
        for (int node : needy)
            if (available(node, t.chosen))
                freed.push_back(node);
        std::sort(freed.begin(), freed.end(), [&](int a, int b) { return m_.nodes[a].rank < m_.nodes[b].rank; });
        for (int node : freed)
            if (static_cast<int>(t.nodes.size()) < k)
                t.nodes.push_back(node);
        t.ok = static_cast<int>(t.nodes.size()) == k;
        return t;
    }

    void commit(const Take& t) { chosen_ = t.chosen; }

    PreemptPlan result(std::vector<int> nodes, std::vector<int> groups) const
    {
        PreemptPlan p;
        p.ok = true;
        std::sort(nodes.begin(), nodes.end(), [&](int a, int b) { return m_.nodes[a].rank < m_.nodes[b].rank; });
        p.nodes = std::move(nodes);
        p.groups = std::move(groups);
        for (size_t c = 0; c < cands_.size(); ++c)
            if (chosen_[c] && !cands_[c].leaving) {
                p.victims.push_back(cands_[c].job_id);
                p.gpu_hours += cands_[c].gpu_hours;
            }
        std::sort(p.victims.begin(), p.victims.end());
        p.victims.erase(std::unique(p.victims.begin(), p.victims.end()), p.victims.end());
        return p;
    }

  private:
    struct Held {
        int cand;
        int gpus;
    };

    double cost(int c) const { return cands_[c].leaving ? 0.0 : std::max(0.0, cands_[c].gpu_hours); }
    int free_at(int node) const
    {
        return static_cast<size_t>(node) < free_.size() ? std::max(0, free_[node]) : 0;
    }
    int need(int node) const
    {
        return req_.gpus_per_node > 0 ? req_.gpus_per_node : m_.nodes[node].gpus;
    }
    bool usable(int node) const
    {
        return static_cast<size_t>(node) < allowed_.size() && allowed_[node] && need(node) <= m_.nodes[node].gpus;
    }
    // Enough GPUs if every candidate on the node left.
    bool reachable(int node) const
    {
        int freed = free_at(node);
        for (const Held& h : on_node_[node])
            freed += h.gpus;
        return freed >= need(node);
    }
    // Whether `node` has the GPUs the job needs once the victims in
    // `chosen` and the jobs leaving are gone.
    bool available(int node, const std::vector<uint8_t>& chosen) const
    {
        int freed = free_at(node);
        for (const Held& h : on_node_[node])
            if (chosen[h.cand] || cands_[h.cand].leaving)
                freed += h.gpus;
        return freed >= need(node);
    }

    // Clusters of at most this many victims are searched exhaustively.
    static constexpr size_t kExactVictims = 10;

    const Model& m_;
    const PreemptRequest& req_;
    const std::vector<uint8_t>& allowed_;
    const std::vector<int>& free_;
    const std::vector<PreemptCandidate>& cands_;
    std::vector<std::vector<Held>> on_node_;
    std::vector<uint8_t> chosen_;
};

std::string gpu_h(double h)
{
    char b[32];
    std::snprintf(b, sizeof b, h < 1 ? "%.2f" : "%.1f", h);
    return b;
}

}  // namespace

double preempt_loss_gpu_hours(int gpus, double ran_s, int checkpoint_s, int restart_s, bool restarted)
{
    if (gpus <= 0 || !(ran_s >= 0))
        return 0;
    const double restart = std::max(0, restart_s);
    const double work = restarted ? std::max(0.0, ran_s - restart) : ran_s;
    const double since = checkpoint_s > 0 ? std::fmod(work, static_cast<double>(checkpoint_s)) : work;
    return gpus * (since + restart) / 3600.0;
}

std::string preempt_group_name(const Model& m, int group)
{
    if (group >= 0 && static_cast<size_t>(group) < m.domains.size())
        return m.domains[group].name;
    const int node = -1 - group;
    if (node >= 0 && static_cast<size_t>(node) < m.nodes.size())
        return m.nodes[node].name;
    return "?";
}

PreemptPlan plan_preemption(const Model& m, const PreemptRequest& req, const std::vector<uint8_t>& allowed,
                            const std::vector<int>& free_now, const std::vector<PreemptCandidate>& candidates)
{
    PreemptPlan none;
    if (req.nodes <= 0 || candidates.empty())
        return none;
    Planner pl(m, req, allowed, free_now, candidates);
    const std::vector<std::vector<int>> groups = pl.groups();
    // Group index as plans name it: a domain's index, or -1-node.
    auto group_id = [&](size_t g) {
        return g < m.domains.size() ? static_cast<int>(g) : -1 - groups[g].front();
    };
    std::vector<int> cap(groups.size());
    for (size_t g = 0; g < groups.size(); ++g)
        cap[g] = pl.capacity(groups[g]);
    auto better = [](const Planner::Take& a, const Planner::Take* b) {
        return !b || a.cost < b->cost || (a.cost == b->cost && a.jobs < b->jobs);
    };

    // One group holds it: the cheapest group to clear.
    if (req.one_group) {
        Planner::Take best;
        size_t best_g = 0;
        int possible = 0;
        double next = -1;
        size_t next_g = 0;
        for (size_t g = 0; g < groups.size(); ++g) {
            if (cap[g] < req.nodes)
                continue;
            Planner::Take t = pl.take(groups[g], req.nodes);
            if (!t.ok)
                continue;
            ++possible;
            if (better(t, best.ok ? &best : nullptr)) {
                if (best.ok)
                    next = best.cost, next_g = best_g;
                best = std::move(t);
                best_g = g;
            } else if (next < 0 || t.cost < next) {
                next = t.cost, next_g = g;
            }
        }
        if (best.ok) {
            pl.commit(best);
            PreemptPlan p = pl.result(best.nodes, {group_id(best_g)});
            p.groups_possible = possible;
            p.next_gpu_hours = next;
            p.next_group = next >= 0 ? group_id(next_g) : 0;
            p.reason = "preempts " + std::to_string(p.victims.size()) + " job(s) (" + gpu_h(p.gpu_hours) +
                       " GPU-h of work) to clear " + preempt_group_name(m, group_id(best_g)) +
                       ": the least work lost of " + std::to_string(possible) + " domain(s) preemption could clear";
            if (next >= 0)
                p.reason += " (next: " + preempt_group_name(m, p.next_group) + ", " + gpu_h(next) + " GPU-h)";
            return p;
        }
    }

    // Several groups: the largest first (the fewest groups), the cheapest
    // among equals, and the cheapest that holds the remainder.
    std::vector<uint8_t> used(groups.size(), 0);
    std::vector<int> nodes, ids;
    int remaining = req.nodes;
    while (remaining > 0) {
        int most = 0;
        bool one_holds = false;
        for (size_t g = 0; g < groups.size(); ++g)
            if (!used[g] && cap[g] > 0) {
                most = std::max(most, cap[g]);
                one_holds = one_holds || cap[g] >= remaining;
            }
        if (most == 0)
            return none;
        const int k = one_holds ? remaining : most;
        Planner::Take best;
        size_t best_g = 0;
        for (size_t g = 0; g < groups.size(); ++g) {
            if (used[g] || cap[g] < k)
                continue;
            Planner::Take t = pl.take(groups[g], k);
            if (t.ok && better(t, best.ok ? &best : nullptr))
                best = std::move(t), best_g = g;
        }
        if (!best.ok)
            return none;
        pl.commit(best);
        used[best_g] = 1;
        nodes.insert(nodes.end(), best.nodes.begin(), best.nodes.end());
        ids.push_back(group_id(best_g));
        remaining -= k;
    }
    PreemptPlan p = pl.result(std::move(nodes), ids);
    std::string names;
    for (int id : p.groups)
        names += (names.empty() ? "" : ",") + preempt_group_name(m, id);
    p.reason = "preempts " + std::to_string(p.victims.size()) + " job(s) (" + gpu_h(p.gpu_hours) +
               " GPU-h of work) in " + names + ": the fewest domains, then the least work lost";
    return p;
}

}  // namespace m2g
