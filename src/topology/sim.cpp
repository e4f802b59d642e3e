// m2g core: the trace-driven simulator (see sim.hpp and doc/simulator.md).
#include "topology/sim.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <list>
#include <map>
#include <numeric>
#include <queue>
#include <random>
#include <set>

#include "topology/error.hpp"
#include "topology/intent.hpp"
#include "topology/placement.hpp"
#include "topology/well_known.hpp"

namespace m2g {

const char* to_string(SimPolicy p)
{
    switch (p) {
    case SimPolicy::M2G:
        return "m2g";
    case SimPolicy::Tree:
        return "tree";
    case SimPolicy::Block:
        return "block";
    case SimPolicy::FirstFit:
        return "firstfit";
    }
    return "?";
}

SimPolicy parse_sim_policy(std::string_view s)
{
    for (SimPolicy p : {SimPolicy::M2G, SimPolicy::Tree, SimPolicy::Block, SimPolicy::FirstFit})
        if (s == to_string(p))
            return p;
    throw ParseError("--policy '" + std::string(s) + "': expected m2g, tree, block or firstfit");
}

namespace {

// Chooses nodes for a job of `nodes` whole nodes among the free ones.
class Placer {
  public:
    virtual ~Placer() = default;
    // `fallback`: the job's prefer wait is over (only m2g looks at it).
    virtual bool place(int nodes, bool fallback, const std::vector<uint8_t>& free, std::vector<int>& out) = 0;
};

// The production engine, as select/m2g calls it for a job with the
// cluster's default topology intent.
class M2GPlacer : public Placer {
  public:
    explicit M2GPlacer(const Model& m) : engine_(m)
    {
        JobIntent intent;
        apply_option(intent, kw::kOptTopology, m.policy.default_topology, 0);
        req_.locality = intent.locality == Locality::Unset ? Locality::Prefer : intent.locality;
        req_.level = intent.level;
        req_.spare_per_domain = m.policy.spare_per_domain;
    }
    bool place(int nodes, bool fallback, const std::vector<uint8_t>& free, std::vector<int>& out) override
    {
        req_.nodes = nodes;
        req_.fallback = fallback;
        const Placement p = engine_.place(req_, free, state_);
        if (!p.ok)
            return false;
        out = p.nodes;
        return true;
    }
    Locality locality() const { return req_.locality; }

  private:
    Engine engine_;
    PlacementRequest req_;
    ClusterState state_;
};

// The first free nodes in rank order.
class FirstFitPlacer : public Placer {
  public:
    explicit FirstFitPlacer(const Model& m) : order_(m.nodes_in_rank_order()) {}
    bool place(int nodes, bool, const std::vector<uint8_t>& free, std::vector<int>& out) override
    {
        out.clear();
        for (int n : order_) {
            if (static_cast<int>(out.size()) == nodes)
                break;
            if (free[n])
                out.push_back(n);
        }
        return static_cast<int>(out.size()) == nodes;
    }

  private:
    std::vector<int> order_;
};

// Takes `units` from the candidate buckets best fit first: the smallest
// bucket that holds the remainder, else the fullest (ties: lowest index),
// nodes in rank order inside a bucket.
void take_best_fit(const std::vector<int>& cand, const std::vector<int>& bucket_free,
                   const std::vector<std::vector<int>>& bucket_nodes, const std::vector<uint8_t>& free, int need,
                   std::vector<int>& out)
{
    std::vector<uint8_t> used(cand.size(), 0);
    while (need > 0) {
        int fit = -1, largest = -1;
        for (size_t k = 0; k < cand.size(); ++k) {
            const int f = bucket_free[cand[k]];
            if (used[k] || f <= 0)
                continue;
            if (f >= need && (fit < 0 || f < bucket_free[cand[fit]]))
                fit = static_cast<int>(k);
            if (largest < 0 || f > bucket_free[cand[largest]])
                largest = static_cast<int>(k);
        }
        const int k = fit >= 0 ? fit : largest;
        if (k < 0)
            return;
        used[k] = 1;
        int take = std::min(need, bucket_free[cand[k]]);
        need -= take;
        for (int n : bucket_nodes[cand[k]]) {
            if (take == 0)
                break;
            if (free[n]) {
                out.push_back(n);
                --take;
            }
        }
    }
}

// cons_tres with topology/tree, as Slurm sees an ordinary topology.conf:
// leaf switches with their nodes, no NVLink domains. The lowest switch
// with enough free nodes (fewest free first), then leaves best fit.
class TreePlacer : public Placer {
  public:
    explicit TreePlacer(const Model& m) : m_(m)
    {
        for (size_t s = 0; s < m.switches.size(); ++s)
            if (m.switches[s].height == 0) {
                leaf_of_switch_.push_back(static_cast<int>(s));
                leaf_nodes_.push_back(m.switches[s].all_nodes);
            }
        node_leaf_.assign(m.nodes.size(), kNone);
        for (size_t l = 0; l < leaf_nodes_.size(); ++l)
            for (int n : leaf_nodes_[l])
                node_leaf_[n] = static_cast<int>(l);
        subtree_leaves_.resize(m.switches.size());
        for (size_t l = 0; l < leaf_of_switch_.size(); ++l)
            for (int s = leaf_of_switch_[l]; s != kNone; s = m.switches[s].parent)
                subtree_leaves_[s].push_back(static_cast<int>(l));
        leaf_free_.resize(leaf_nodes_.size());
    }
    bool place(int nodes, bool, const std::vector<uint8_t>& free, std::vector<int>& out) override
    {
        out.clear();
        std::fill(leaf_free_.begin(), leaf_free_.end(), 0);
        for (size_t n = 0; n < free.size(); ++n)
            if (free[n] && node_leaf_[n] != kNone)
                ++leaf_free_[node_leaf_[n]];
        int best = -1, best_free = 0;
        for (size_t s = 0; s < m_.switches.size(); ++s) {
            int f = 0;
            for (int l : subtree_leaves_[s])
                f += leaf_free_[l];
            if (f < nodes)
                continue;
            if (best < 0 || m_.switches[s].height < m_.switches[best].height ||
                (m_.switches[s].height == m_.switches[best].height && f < best_free)) {
                best = static_cast<int>(s);
                best_free = f;
            }
        }
        if (best < 0)
            return false;
        take_best_fit(subtree_leaves_[best], leaf_free_, leaf_nodes_, free, nodes, out);
        std::sort(out.begin(), out.end());
        return static_cast<int>(out.size()) == nodes;
    }

  private:
    const Model& m_;
    std::vector<int> leaf_of_switch_;
    std::vector<std::vector<int>> leaf_nodes_;  // rank order
    std::vector<int> node_leaf_;
    std::vector<std::vector<int>> subtree_leaves_;
    std::vector<int> leaf_free_;
};

// Slurm 23.11+ topology/block with each NVLink domain a base block and the
// default block sizes (every power-of-two multiple of the base block):
// the smallest level whose aligned aggregate holds the job, best fit among
// its aggregates, base blocks best fit inside; up a level when none fits.
class BlockPlacer : public Placer {
  public:
    explicit BlockPlacer(const Model& m)
    {
        for (size_t n = 0; n < m.nodes.size(); ++n)
            if (m.nodes[n].domain == kNone)
                throw Error("--policy block: node " + m.nodes[n].name +
                            " is in no NVLink domain; topology/block needs every node in a base block");
        for (const Domain& d : m.domains) {
            std::vector<int> nodes = d.nodes;
            std::sort(nodes.begin(), nodes.end(), [&](int a, int b) { return m.nodes[a].rank < m.nodes[b].rank; });
            block_nodes_.push_back(std::move(nodes));
        }
        node_block_.assign(m.nodes.size(), kNone);
        for (size_t b = 0; b < m.domains.size(); ++b)
            for (int n : m.domains[b].nodes)
                node_block_[n] = static_cast<int>(b);
        const size_t nb = block_nodes_.size();
        for (size_t width = 1;; width *= 2) {
            int most = 0;
            for (size_t lo = 0; lo < nb; lo += width) {
                int c = 0;
                for (size_t b = lo; b < std::min(nb, lo + width); ++b)
                    c += static_cast<int>(block_nodes_[b].size());
                most = std::max(most, c);
            }
            level_width_.push_back(width);
            level_capacity_.push_back(most);
            if (width >= nb)
                break;
        }
        block_free_.resize(nb);
    }
    bool place(int nodes, bool, const std::vector<uint8_t>& free, std::vector<int>& out) override
    {
        out.clear();
        const size_t nb = block_nodes_.size();
        std::fill(block_free_.begin(), block_free_.end(), 0);
        for (size_t n = 0; n < free.size(); ++n)
            if (free[n])
                ++block_free_[node_block_[n]];
        for (size_t l = 0; l < level_width_.size(); ++l) {
            if (level_capacity_[l] < nodes)
                continue;  // below the smallest level that can hold the job
            const size_t w = level_width_[l];
            size_t best = nb;
            int best_free = 0;
            for (size_t lo = 0; lo < nb; lo += w) {
                int f = 0;
                for (size_t b = lo; b < std::min(nb, lo + w); ++b)
                    f += block_free_[b];
                if (f >= nodes && (best == nb || f < best_free)) {
                    best = lo;
                    best_free = f;
                }
            }
            if (best == nb)
                continue;
            std::vector<int> cand;
            for (size_t b = best; b < std::min(nb, best + w); ++b)
                cand.push_back(static_cast<int>(b));
            take_best_fit(cand, block_free_, block_nodes_, free, nodes, out);
            std::sort(out.begin(), out.end());
            return static_cast<int>(out.size()) == nodes;
        }
        return false;
    }

  private:
    std::vector<std::vector<int>> block_nodes_;  // rank order
    std::vector<int> node_block_;
    std::vector<size_t> level_width_;  // base blocks per aggregate
    std::vector<int> level_capacity_;  // largest aggregate, in nodes
    std::vector<int> block_free_;
};

// Fewest buckets of these sizes that hold `need` (sizes descending).
int fewest(const std::vector<int>& sizes_desc, int need)
{
    int used = 0;
    for (int s : sizes_desc) {
        if (need <= 0 || s <= 0)
            break;
        need -= s;
        ++used;
    }
    return need > 0 ? 0 : used;
}

double percentile(std::vector<double>& v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

SimStats stats_of(const std::string& name, const std::vector<const SimJobResult*>& jobs)
{
    SimStats s;
    s.name = name;
    s.jobs = static_cast<int>(jobs.size());
    if (jobs.empty())
        return s;
    std::vector<double> d, c;
    for (const SimJobResult* j : jobs) {
        d.push_back(j->start - j->submit);
        c.push_back(j->end - j->submit);
    }
    s.delay_mean = std::accumulate(d.begin(), d.end(), 0.0) / static_cast<double>(d.size());
    s.completion_mean = std::accumulate(c.begin(), c.end(), 0.0) / static_cast<double>(c.size());
    s.delay_p95 = percentile(d, 0.95);
    s.delay_p99 = percentile(d, 0.99);
    s.completion_p95 = percentile(c, 0.95);
    s.completion_p99 = percentile(c, 0.99);
    return s;
}

enum EventKind { kEnd = 0, kSubmit = 1, kWake = 2 };  // at equal times: ends first

struct Event {
    double t;
    int kind;
    int job;
    bool operator>(const Event& o) const
    {
        return t != o.t ? t > o.t : kind != o.kind ? kind > o.kind : job > o.job;
    }
};

}  // namespace

SimResult simulate(const Model& m, const Trace& trace, const SimOptions& opts)
{
    const auto wall0 = std::chrono::steady_clock::now();
    if (opts.scale_gpus < 1)
        throw Error("--scale-gpus " + std::to_string(opts.scale_gpus) + ": expected a whole number, 1 or more");
    if (opts.load < 0 || !std::isfinite(opts.load))
        throw Error("--load: expected an offered load above 0 (e.g. 0.8), or 0 for the trace as recorded");
    if (opts.backfill_depth < 0)
        throw Error("backfill depth must be 0 or more");
    if (m.nodes.empty())
        throw Error("the topology has no nodes");

    SimResult r;
    r.policy = to_string(opts.policy);
    r.scale_gpus = opts.scale_gpus;
    r.load = opts.load;
    r.seed = opts.seed;
    int gpn = 0, total_gpus = 0;
    for (const Node& n : m.nodes) {
        gpn = std::max(gpn, n.gpus);
        total_gpus += n.gpus;
    }
    if (gpn <= 0)
        throw Error("the topology declares no GPUs (Gpus= on NodeName lines)");
    r.gpus_per_node = gpn;
    const int nnodes = static_cast<int>(m.nodes.size());

    std::unique_ptr<Placer> placer;
    M2GPlacer* m2g_placer = nullptr;
    switch (opts.policy) {
    case SimPolicy::M2G: {
        auto p = std::make_unique<M2GPlacer>(m);
        m2g_placer = p.get();
        placer = std::move(p);
        break;
    }
    case SimPolicy::Tree:
        placer = std::make_unique<TreePlacer>(m);
        break;
    case SimPolicy::Block:
        placer = std::make_unique<BlockPlacer>(m);
        break;
    case SimPolicy::FirstFit:
        placer = std::make_unique<FirstFitPlacer>(m);
        break;
    }
    const bool prefer = m2g_placer && m2g_placer->locality() == Locality::Prefer;
    const double prefer_wait = static_cast<double>(m.policy.prefer_wait_sec);

    // Jobs: scale, order, shuffle ties, compress arrivals.
    std::vector<SimJobResult>& jobs = r.job_results;
    jobs.reserve(trace.jobs.size());
    for (const TraceJob& t : trace.jobs) {
        SimJobResult j;
        j.id = t.id;
        const long long g = static_cast<long long>(t.gpus) * opts.scale_gpus;
        if (g > 1000000000LL)
            throw Error("job " + t.id + ": " + std::to_string(g) + " GPUs after --scale-gpus is too many");
        j.gpus = static_cast<int>(g);
        j.nodes = static_cast<int>((g + gpn - 1) / gpn);
        j.submit = t.submit;
        j.end = t.duration;  // the duration, until the job runs
        jobs.push_back(std::move(j));
    }
    std::stable_sort(jobs.begin(), jobs.end(),
                     [](const SimJobResult& a, const SimJobResult& b) { return a.submit < b.submit; });
    if (opts.seed != 0) {
        std::mt19937_64 rng(opts.seed);
        for (size_t i = 0; i < jobs.size();) {
            size_t k = i + 1;
            while (k < jobs.size() && jobs[k].submit == jobs[i].submit)
                ++k;
            std::shuffle(jobs.begin() + static_cast<long>(i), jobs.begin() + static_cast<long>(k), rng);
            i = k;
        }
    }
    std::vector<double> duration(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i)
        duration[i] = jobs[i].end;
    const double first_submit = jobs.empty() ? 0 : jobs.front().submit;
    const double submit_span = jobs.empty() ? 0 : jobs.back().submit - first_submit;
    double node_seconds = 0;
    for (size_t i = 0; i < jobs.size(); ++i)
        node_seconds += jobs[i].nodes * duration[i];
    const double natural_load = submit_span > 0 ? node_seconds / (nnodes * submit_span) : 0;
    if (opts.load > 0) {
        if (submit_span <= 0 || natural_load <= 0)
            throw Error("--load needs jobs submitted at different times with some run time");
        r.arrival_factor = natural_load / opts.load;
        for (SimJobResult& j : jobs)
            j.submit = first_submit + (j.submit - first_submit) * r.arrival_factor;
    }
    r.offered_load = r.arrival_factor > 0 && natural_load > 0 ? natural_load / r.arrival_factor : 0;

    // Lower bounds on an empty cluster: NVLink groups and leaf switches.
    std::vector<int> group_sizes, leaf_sizes;
    for (const Domain& d : m.domains)
        group_sizes.push_back(static_cast<int>(d.nodes.size()));
    for (const Node& n : m.nodes)
        if (n.domain == kNone)
            group_sizes.push_back(1);
    for (const Switch& s : m.switches)
        if (s.height == 0)
            leaf_sizes.push_back(static_cast<int>(s.all_nodes.size()));
    std::sort(group_sizes.rbegin(), group_sizes.rend());
    std::sort(leaf_sizes.rbegin(), leaf_sizes.rend());
    const int max_group = group_sizes.empty() ? 1 : group_sizes.front();
    std::vector<int> node_leaf(m.nodes.size(), kNone);
    for (size_t s = 0; s < m.switches.size(); ++s)
        if (m.switches[s].height == 0)
            for (int n : m.switches[s].all_nodes)
                node_leaf[n] = static_cast<int>(s);

    // Can a job of this many nodes ever start? (On an empty cluster, with
    // the wait over.)
    std::vector<uint8_t> free(m.nodes.size(), 1);
    const std::vector<uint8_t> all_free(m.nodes.size(), 1);
    std::map<int, bool> ever_fits;
    std::vector<int> picked;
    auto fits_empty = [&](int nodes) {
        auto it = ever_fits.find(nodes);
        if (it != ever_fits.end())
            return it->second;
        const bool ok = nodes <= nnodes && placer->place(nodes, true, all_free, picked);
        ever_fits.emplace(nodes, ok);
        return ok;
    };

    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
    for (size_t i = 0; i < jobs.size(); ++i)
        events.push({jobs[i].submit, kSubmit, static_cast<int>(i)});
    std::list<int> queue;                       // waiting jobs, FCFS
    std::multiset<std::pair<double, int>> running;  // (end, job)
    int free_nodes = nnodes, free_gpus = total_gpus;
    std::vector<int> node_gpus(m.nodes.size());
    for (size_t n = 0; n < m.nodes.size(); ++n)
        node_gpus[n] = m.nodes[n].gpus;
    double stranded_integral = 0, node_busy_integral = 0, last_t = first_submit, last_end = first_submit;
    int stranded_now = 0;
    std::set<std::pair<int, bool>> failed;  // (nodes, fallback) that did not fit in this pass

    auto start_job = [&](int j, double now) {
        SimJobResult& job = jobs[j];
        job.placed = picked;
        std::sort(job.placed.begin(), job.placed.end());
        for (int n : job.placed) {
            free[n] = 0;
            free_gpus -= node_gpus[n];
        }
        free_nodes -= job.nodes;
        job.start = now;
        job.end = now + duration[j];
        running.emplace(job.end, j);
        events.push({job.end, kEnd, j});
    };
    auto can_fallback = [&](int j, double now) { return !prefer || now - jobs[j].submit >= prefer_wait; };
    auto try_place = [&](int j, double now) {
        const bool fb = can_fallback(j, now);
        const std::pair<int, bool> key{jobs[j].nodes, fb};
        if (jobs[j].nodes > free_nodes || failed.count(key))
            return false;
        if (placer->place(jobs[j].nodes, fb, free, picked))
            return true;
        failed.insert(key);
        return false;
    };

    auto schedule = [&](double now) {
        failed.clear();
        // FCFS: start the head while it can start.
        while (!queue.empty() && try_place(queue.front(), now)) {
            start_job(queue.front(), now);
            queue.pop_front();
        }
        if (queue.empty() || free_nodes == 0)
            return;
        // EASY backfill: the head's reservation, by node count.
        const int head = queue.front();
        int avail = free_nodes;
        double shadow = now;
        for (const auto& [end, j] : running) {
            if (avail >= jobs[head].nodes)
                break;
            avail += jobs[j].nodes;
            shadow = end;
        }
        int extra = avail - jobs[head].nodes;  // nodes the head will not need at the shadow time
        int looked = 0;
        for (auto it = std::next(queue.begin()); it != queue.end() && free_nodes > 0 && looked < opts.backfill_depth;
             ++looked) {
            const int j = *it;
            const bool ends_before = now + duration[j] <= shadow;
            if ((ends_before || jobs[j].nodes <= extra) && try_place(j, now)) {
                if (!ends_before)
                    extra -= jobs[j].nodes;
                jobs[j].backfilled = true;
                start_job(j, now);
                it = queue.erase(it);
            } else {
                ++it;
            }
        }
    };

    while (!events.empty()) {
        const double now = events.top().t;
        stranded_integral += static_cast<double>(stranded_now) * (now - last_t);
        node_busy_integral += static_cast<double>(nnodes - free_nodes) * (now - last_t);
        last_t = now;
        while (!events.empty() && events.top().t == now) {
            const Event e = events.top();
            events.pop();
            SimJobResult& job = jobs[e.job];
            if (e.kind == kEnd) {
                running.erase(running.find({job.end, e.job}));
                for (int n : job.placed) {
                    free[n] = 1;
                    free_gpus += node_gpus[n];
                }
                free_nodes += job.nodes;
                last_end = std::max(last_end, now);
            } else if (e.kind == kSubmit) {
                if (!fits_empty(job.nodes)) {
                    ++r.rejected;
                    continue;
                }
                queue.push_back(e.job);
                if (prefer && prefer_wait > 0)
                    events.push({now + prefer_wait, kWake, e.job});
            }
            // kWake: nothing to change; the pass below retries with the wait over.
        }
        schedule(now);
        stranded_now = queue.empty() ? 0 : free_gpus;
    }

    // Metrics.
    std::vector<const SimJobResult*> done, by_class[3];
    double leaf_ratio_sum = 0, span_sum = 0, gpu_seconds = 0;
    int leaf_jobs = 0, contained = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        SimJobResult& j = jobs[i];
        if (j.start < 0) {
            j.end = -1;
            continue;
        }
        done.push_back(&j);
        r.backfilled += j.backfilled;
        gpu_seconds += static_cast<double>(j.gpus) * duration[i];
        std::vector<int> groups, leaves;
        for (int n : j.placed) {
            groups.push_back(m.nodes[n].domain != kNone ? m.nodes[n].domain : -1 - n);
            if (node_leaf[n] != kNone)
                leaves.push_back(node_leaf[n]);
        }
        for (auto* v : {&groups, &leaves}) {
            std::sort(v->begin(), v->end());
            v->erase(std::unique(v->begin(), v->end()), v->end());
        }
        j.domains = static_cast<int>(groups.size());
        j.leaves = static_cast<int>(leaves.size());
        j.domain_lb = fewest(group_sizes, j.nodes);
        j.leaf_lb = fewest(leaf_sizes, j.nodes);
        if (j.domain_lb == 1) {
            ++r.fit_one_domain;
            contained += j.domains == 1;
        } else if (j.domain_lb > 1) {
            ++r.multi_domain_jobs;
            span_sum += static_cast<double>(j.domains) / j.domain_lb;
        }
        if (j.leaf_lb > 0 && j.leaves > 0) {
            ++leaf_jobs;
            leaf_ratio_sum += static_cast<double>(j.leaves) / j.leaf_lb;
        }
        by_class[j.nodes <= 1 ? 0 : j.nodes <= max_group ? 1 : 2].push_back(&j);
    }
    r.jobs = static_cast<int>(done.size());
    r.containment = r.fit_one_domain ? static_cast<double>(contained) / r.fit_one_domain : 1.0;
    r.span_ratio = r.multi_domain_jobs ? span_sum / r.multi_domain_jobs : 1.0;
    r.leaf_span_ratio = leaf_jobs ? leaf_ratio_sum / leaf_jobs : 1.0;
    r.makespan_s = done.empty() ? 0 : last_end - first_submit;
    if (r.makespan_s > 0) {
        r.stranded_gpus = stranded_integral / (static_cast<double>(total_gpus) * r.makespan_s);
        r.utilisation = gpu_seconds / (static_cast<double>(total_gpus) * r.makespan_s);
        r.node_utilisation = node_busy_integral / (static_cast<double>(nnodes) * r.makespan_s);
    }
    r.all = stats_of("all", done);
    const char* names[3] = {"node", "domain", "multi-domain"};
    for (int c = 0; c < 3; ++c)
        r.classes.push_back(stats_of(names[c], by_class[c]));
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    r.sim_jobs_per_s = r.wall_s > 0 ? static_cast<double>(jobs.size()) / r.wall_s : 0;
    return r;
}

namespace {

std::string num(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

}  // namespace

std::string format_sim_result(const SimResult& r, bool json)
{
    std::string o;
    if (json) {
        auto kv = [&](const char* k, const std::string& v) {
            o += (o.size() > 1 ? "," : "") + std::string("\"") + k + "\":" + v;
        };
        o = "{";
        kv("policy", "\"" + r.policy + "\"");
        kv("jobs", std::to_string(r.jobs));
        kv("rejected", std::to_string(r.rejected));
        kv("backfilled", std::to_string(r.backfilled));
        kv("gpus_per_node", std::to_string(r.gpus_per_node));
        kv("scale_gpus", std::to_string(r.scale_gpus));
        kv("load", num(r.load));
        kv("offered_load", num(r.offered_load));
        kv("arrival_factor", num(r.arrival_factor));
        kv("seed", std::to_string(r.seed));
        kv("containment", num(r.containment));
        kv("fit_one_domain", std::to_string(r.fit_one_domain));
        kv("span_ratio", num(r.span_ratio));
        kv("multi_domain_jobs", std::to_string(r.multi_domain_jobs));
        kv("leaf_span_ratio", num(r.leaf_span_ratio));
        kv("stranded_gpus", num(r.stranded_gpus));
        kv("utilisation", num(r.utilisation));
        kv("node_utilisation", num(r.node_utilisation));
        kv("makespan_s", num(r.makespan_s));
        kv("queue_delay_mean_s", num(r.all.delay_mean));
        kv("queue_delay_p95_s", num(r.all.delay_p95));
        kv("queue_delay_p99_s", num(r.all.delay_p99));
        kv("completion_mean_s", num(r.all.completion_mean));
        kv("completion_p95_s", num(r.all.completion_p95));
        kv("completion_p99_s", num(r.all.completion_p99));
        std::string cls = "[";
        for (const SimStats& s : r.classes) {
            cls += (cls.size() > 1 ? "," : "") + std::string("{\"class\":\"") + s.name + "\",\"jobs\":" +
                   std::to_string(s.jobs) + ",\"queue_delay_mean_s\":" + num(s.delay_mean) +
                   ",\"queue_delay_p95_s\":" + num(s.delay_p95) + ",\"queue_delay_p99_s\":" + num(s.delay_p99) +
                   ",\"completion_mean_s\":" + num(s.completion_mean) + ",\"completion_p95_s\":" +
                   num(s.completion_p95) + ",\"completion_p99_s\":" + num(s.completion_p99) + "}";
        }
        kv("size_classes", cls + "]");
        kv("cap_violations", std::to_string(r.cap_violations));
        kv("wall_s", num(r.wall_s));
        kv("sim_jobs_per_s", num(r.sim_jobs_per_s));
        return o + "}\n";
    }
    auto line = [&](const char* k, const std::string& v) { o += std::string(k) + ": " + v + "\n"; };
    line("policy", r.policy);
    line("jobs", std::to_string(r.jobs) + " started, " + std::to_string(r.rejected) + " rejected (never fit), " +
                     std::to_string(r.backfilled) + " backfilled");
    line("jobs as", std::to_string(r.gpus_per_node) + " GPUs per node, GPUs x" + std::to_string(r.scale_gpus) +
                        ", offered load " + num(r.offered_load) + " (arrivals x" + num(r.arrival_factor) + ")");
    line("containment", num(r.containment) + " (share of the " + std::to_string(r.fit_one_domain) +
                            " jobs that fit one NVLink domain placed in one)");
    line("span ratio", num(r.span_ratio) + " domains over the lower bound (" + std::to_string(r.multi_domain_jobs) +
                           " multi-domain jobs); leaves " + num(r.leaf_span_ratio));
    line("stranded GPUs", num(r.stranded_gpus) + " (time-averaged share idle while the queue head waits)");
    line("utilisation", num(r.utilisation) + " of GPU time (nodes: " + num(r.node_utilisation) + "), makespan " +
                            num(r.makespan_s) + " s");
    for (const SimStats& s : r.classes) {
        if (!s.jobs)
            continue;
        line(("queue delay " + s.name).c_str(),
             std::to_string(s.jobs) + " jobs: mean " + num(s.delay_mean) + " s, p95 " + num(s.delay_p95) +
                 " s, p99 " + num(s.delay_p99) + " s; completion mean " + num(s.completion_mean) + " s, p95 " +
                 num(s.completion_p95) + " s, p99 " + num(s.completion_p99) + " s");
    }
    line("cap violations", std::to_string(r.cap_violations) + " (power caps are not simulated yet)");
    line("speed", num(r.sim_jobs_per_s) + " jobs/s (" + num(r.wall_s) + " s)");
    return o;
}

}  // namespace m2g
