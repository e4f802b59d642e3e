// m2g tools: the trace-driven simulator (see sim.hpp and doc/simulator.md).
#include "tools/sim/sim.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <list>
#include <map>
#include <numeric>
#include <queue>
#include <random>
#include <set>
#include <tuple>

#include "core/power/admission.hpp"
#include "core/power/admission_session.hpp"
#include "core/job/annotation.hpp"
#include "core/model/config.hpp"
#include "core/power/curtail.hpp"
#include "core/base/error.hpp"
#include "core/model/export.hpp"
#include "core/base/hostlist.hpp"
#include "core/power/signals.hpp"
#include "core/job/intent.hpp"
#include "core/place/session.hpp"
#include "core/base/keys.hpp"

namespace m2g {

const char* to_string(SimPolicy p)
{
    switch (p) {
    case SimPolicy::M2G:
        return "m2g";
    case SimPolicy::Tree:
        return "tree";
    case SimPolicy::TreeNvl:
        return "tree-nvl";
    case SimPolicy::Block:
        return "block";
    case SimPolicy::BlockSeg:
        return "block-seg";
    case SimPolicy::FirstFit:
        return "firstfit";
    }
    return "?";
}

SimPolicy parse_sim_policy(std::string_view s)
{
    for (SimPolicy p : {SimPolicy::M2G, SimPolicy::Tree, SimPolicy::TreeNvl, SimPolicy::Block, SimPolicy::BlockSeg,
                        SimPolicy::FirstFit})
        if (s == to_string(p))
            return p;
    throw ParseError("--policy '" + std::string(s) + "': expected m2g, tree, tree-nvl, block, block-seg or firstfit");
}

namespace {

std::string num(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// Times on the trace clock (10^7 s and more): to the millisecond.
std::string num_t(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.15g", std::round(v * 1000) / 1000);
    return buf;
}

// Chooses nodes for a job of `nodes` whole nodes among the free ones: a
// baseline policy, or cons_tres for what select/m2g leaves to it.
class Placer {
  public:
    virtual ~Placer() = default;
    virtual bool place(int nodes, const std::vector<uint8_t>& free, std::vector<int>& out) = 0;
};

// The first free nodes in rank order.
class FirstFitPlacer : public Placer {
  public:
    explicit FirstFitPlacer(const Model& m) : order_(m.nodes_in_rank_order()) {}
    bool place(int nodes, const std::vector<uint8_t>& free, std::vector<int>& out) override
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

// cons_tres with topology/tree on the switches of a topology.conf: the
// lowest switch with enough free nodes (fewest free first, then list
// order), then the level-0 switches below it (the ones holding nodes)
// best fit. Nodes under no switch are never placed: Slurm wants every
// node under a switch and spans a job only under a common one.
class TreePlacer : public Placer {
  public:
    struct Sw {
        int level;               // Slurm's: 0 holds nodes
        int parent;              // index in the list, kNone at a root
        std::vector<int> nodes;  // level 0: its nodes
    };
    // `tree`: an ordinary topology.conf of the fabric, leaf switches with
    // their nodes, no NVLink domains.
    static std::vector<Sw> fabric(const Model& m)
    {
        std::vector<Sw> sw;
        for (const Switch& s : m.switches)
            sw.push_back({s.height, s.parent, s.height == 0 ? s.all_nodes : std::vector<int>{}});
        return sw;
    }
    // `tree-nvl`: what `m2g topology export --format=tree` writes
    // (slurm_switches()): every NVLink domain a level-0 switch under its
    // leaf, nodes in no domain on their leaf switch (level 0 too), a
    // domain under no switch a tree of its own.
    static std::vector<Sw> nvl(const Model& m)
    {
        std::vector<Sw> sw;
        for (const SlurmSwitch& s : slurm_switches(m))
            sw.push_back({s.level, s.parent, s.nodes});
        return sw;
    }
    TreePlacer(const Model& m, std::vector<Sw> sw) : sw_(std::move(sw))
    {
        for (size_t s = 0; s < sw_.size(); ++s)
            if (sw_[s].level == 0) {
                std::vector<int> nodes = sw_[s].nodes;
                std::sort(nodes.begin(), nodes.end(),
                          [&](int a, int b) { return m.nodes[a].rank < m.nodes[b].rank; });
                leaf_of_switch_.push_back(static_cast<int>(s));
                leaf_nodes_.push_back(std::move(nodes));
            }
        node_leaf_.assign(m.nodes.size(), kNone);
        for (size_t l = 0; l < leaf_nodes_.size(); ++l)
            for (int n : leaf_nodes_[l])
                node_leaf_[n] = static_cast<int>(l);
        subtree_leaves_.resize(sw_.size());
        for (size_t l = 0; l < leaf_of_switch_.size(); ++l)
            for (int s = leaf_of_switch_[l]; s != kNone; s = sw_[s].parent)
                subtree_leaves_[s].push_back(static_cast<int>(l));
        leaf_free_.resize(leaf_nodes_.size());
    }
    bool place(int nodes, const std::vector<uint8_t>& free, std::vector<int>& out) override
    {
        out.clear();
        std::fill(leaf_free_.begin(), leaf_free_.end(), 0);
        for (size_t n = 0; n < free.size(); ++n)
            if (free[n] && node_leaf_[n] != kNone)
                ++leaf_free_[node_leaf_[n]];
        int best = -1, best_free = 0;
        for (size_t s = 0; s < sw_.size(); ++s) {
            int f = 0;
            for (int l : subtree_leaves_[s])
                f += leaf_free_[l];
            if (f < nodes)
                continue;
            if (best < 0 || sw_[s].level < sw_[best].level || (sw_[s].level == sw_[best].level && f < best_free)) {
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
    std::vector<Sw> sw_;
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
// With `segments` (block-seg: every job submitted with --segment=S), a job
// of N nodes larger than the largest base block is N/S segments of S
// nodes, S the largest divisor of N that fits one; each segment goes, one
// after the other, to the base block with the fewest free nodes that
// holds it (Slurm 25.05+ places each segment as a job of S nodes, on the
// nodes the earlier ones left). Smaller jobs are one segment: as block.
class BlockPlacer : public Placer {
  public:
    BlockPlacer(const Model& m, bool segments, const char* policy) : segments_(segments)
    {
        for (size_t n = 0; n < m.nodes.size(); ++n)
            if (m.nodes[n].domain == kNone)
                throw Error(std::string("--policy ") + policy + ": node " + m.nodes[n].name +
                            " is in no NVLink domain; topology/block needs every node in a base block");
        for (const Domain& d : m.domains) {
            std::vector<int> nodes = d.nodes;
            std::sort(nodes.begin(), nodes.end(), [&](int a, int b) { return m.nodes[a].rank < m.nodes[b].rank; });
            largest_ = std::max(largest_, static_cast<int>(nodes.size()));
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
    bool place(int nodes, const std::vector<uint8_t>& free, std::vector<int>& out) override
    {
        out.clear();
        const size_t nb = block_nodes_.size();
        std::fill(block_free_.begin(), block_free_.end(), 0);
        for (size_t n = 0; n < free.size(); ++n)
            if (free[n])
                ++block_free_[node_block_[n]];
        if (segments_ && nodes > largest_)
            return place_segments(nodes, free, out);
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
    // N/S segments of S nodes, each in one base block (block_free_ filled).
    bool place_segments(int nodes, const std::vector<uint8_t>& free, std::vector<int>& out)
    {
        int s = largest_;
        while (nodes % s != 0)
            --s;
        taken_.assign(block_nodes_.size(), 0);
        for (int k = nodes / s; k > 0; --k) {
            int best = -1;
            for (size_t b = 0; b < block_free_.size(); ++b)
                if (block_free_[b] >= s && (best < 0 || block_free_[b] < block_free_[best]))
                    best = static_cast<int>(b);
            if (best < 0) {
                out.clear();
                return false;
            }
            // Its first s free nodes in rank order past those taken already.
            int skip = taken_[best], take = s;
            for (int n : block_nodes_[best]) {
                if (take == 0)
                    break;
                if (!free[n])
                    continue;
                if (skip > 0) {
                    --skip;
                    continue;
                }
                out.push_back(n);
                --take;
            }
            taken_[best] += s;
            block_free_[best] -= s;
        }
        std::sort(out.begin(), out.end());
        return true;
    }

    bool segments_;
    int largest_ = 0;                            // nodes in the largest base block
    std::vector<std::vector<int>> block_nodes_;  // rank order
    std::vector<int> node_block_;
    std::vector<size_t> level_width_;  // base blocks per aggregate
    std::vector<int> level_capacity_;  // largest aggregate, in nodes
    std::vector<int> block_free_;
    std::vector<int> taken_;  // place_segments: nodes taken per block
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

// At equal times: ends first. kActuate and kTick only with curtailment.
enum EventKind { kEnd = 0, kSignal = 1, kSubmit = 2, kRelease = 3, kWake = 4, kActuate = 5, kTick = 6 };

struct Event {
    double t;
    int kind;
    int job;
    bool operator>(const Event& o) const
    {
        return t != o.t ? t > o.t : kind != o.kind ? kind > o.kind : job > o.job;
    }
};

// A scope with a power budget the run watches: the site, a row (fault
// domain) or a rack (NVLink domain).
struct Watched {
    EventScope scope;
    int index;
    std::string name;
    bool over = false;
};

}  // namespace

double PowerCdf::sample(double u) const
{
    if (points.empty())
        return 0;
    const double pct = std::clamp(u, 0.0, 1.0) * 100.0;
    auto it = std::lower_bound(points.begin(), points.end(), pct,
                               [](const std::pair<double, double>& p, double v) { return p.first < v; });
    if (it == points.begin())
        return it->second;
    if (it == points.end())
        return points.back().second;
    const auto& [p1, w1] = *it;
    const auto& [p0, w0] = *std::prev(it);
    return p1 > p0 ? w0 + (w1 - w0) * (pct - p0) / (p1 - p0) : w1;
}

PowerCdf parse_power_cdf(std::string_view text, const std::string& file, const std::string& cluster)
{
    PowerCdf c;
    c.source = file + " (" + cluster + ")";
    std::set<std::string> clusters;
    size_t pos = 0;
    int line_no = 0;
    int col_cluster = -1, col_metric = -1, col_pct = -1, col_value = -1;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos)
            nl = text.size();
        std::string line(text.substr(pos, nl - pos));
        pos = nl + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty())
            continue;
        std::vector<std::string> f;
        size_t a = 0;
        for (;;) {
            const size_t b = line.find(',', a);
            f.push_back(line.substr(a, b == std::string::npos ? std::string::npos : b - a));
            if (b == std::string::npos)
                break;
            a = b + 1;
        }
        const std::string where = file + ":" + std::to_string(line_no) + ": ";
        if (col_cluster < 0) {
            for (size_t i = 0; i < f.size(); ++i) {
                if (f[i] == "cluster")
                    col_cluster = static_cast<int>(i);
                else if (f[i] == "metric")
                    col_metric = static_cast<int>(i);
                else if (f[i] == "cdf_pct")
                    col_pct = static_cast<int>(i);
                else if (f[i] == "value")
                    col_value = static_cast<int>(i);
            }
            if (col_cluster < 0 || col_metric < 0 || col_pct < 0 || col_value < 0)
                throw ParseError(where + "expected a header with the columns cluster, metric, cdf_pct and value "
                                         "(the Acme 2023 power/thermal CDF format)");
            continue;
        }
        const int need = std::max({col_cluster, col_metric, col_pct, col_value});
        if (static_cast<int>(f.size()) <= need)
            throw ParseError(where + "expected " + std::to_string(need + 1) + " or more comma-separated fields, found " +
                             std::to_string(f.size()));
        if (f[col_metric] != "gpu_power")
            continue;
        clusters.insert(f[col_cluster]);
        if (f[col_cluster] != cluster)
            continue;
        char* e1 = nullptr;
        char* e2 = nullptr;
        const double pct = std::strtod(f[col_pct].c_str(), &e1);
        const double w = std::strtod(f[col_value].c_str(), &e2);
        if (f[col_pct].empty() || *e1 || !(pct >= 0 && pct <= 100))
            throw ParseError(where + "cdf_pct '" + f[col_pct] + "': expected a number from 0 to 100");
        if (f[col_value].empty() || *e2 || !(w >= 0 && std::isfinite(w)))
            throw ParseError(where + "value '" + f[col_value] + "': expected watts, 0 or more");
        if (!c.points.empty() && (pct < c.points.back().first || w < c.points.back().second))
            throw ParseError(where + "a CDF must not decrease: " + f[col_pct] + "% at " + f[col_value] +
                             " W after " + num(c.points.back().first) + "% at " + num(c.points.back().second) + " W");
        c.points.emplace_back(pct, w);
    }
    if (c.points.empty()) {
        std::string have;
        for (const std::string& k : clusters)
            have += (have.empty() ? "" : ", ") + k;
        throw Error(file + ": no gpu_power rows for cluster '" + cluster + "'" +
                    (have.empty() ? std::string(" (the file has no gpu_power rows)") : "; clusters with them: " + have));
    }
    return c;
}

PowerCdf read_power_cdf(const std::string& path, const std::string& cluster)
{
    return parse_power_cdf(read_text_file(path), path, cluster);
}

// Perseus artifact (github.com/ml-energy/zeus, sosp24_data/zeus/csv/A100/
// zeus_global.csv): per power limit 300, 275, 250, 225, 200, 175 W, the
// mean over its five jobs of (average draw / draw at 300 W, iteration time
// at 300 W / iteration time). doc/simulator.md has the per-job numbers.
const std::vector<std::pair<double, double>> kCapSpeedDefault = {
    {0.602, 0.577}, {0.683, 0.709}, {0.766, 0.832}, {0.847, 0.923}, {0.924, 0.970}, {1.0, 1.0}};

double cap_speed(const std::vector<std::pair<double, double>>& curve, double x)
{
    const auto& c = curve.empty() ? kCapSpeedDefault : curve;
    if (!(x > 0))
        return 0;
    if (x >= 1 || c.empty())
        return 1;
    if (x <= c.front().first)
        return std::min(1.0, c.front().second * x / c.front().first);
    for (size_t i = 1; i < c.size(); ++i)
        if (x <= c[i].first) {
            const auto& [x0, s0] = c[i - 1];
            const auto& [x1, s1] = c[i];
            return std::min(1.0, x1 > x0 ? s0 + (s1 - s0) * (x - x0) / (x1 - x0) : s1);
        }
    // Past the last point (below 1): towards speed 1 at ratio 1.
    const auto& [xl, sl] = c.back();
    return std::min(1.0, sl + (1.0 - sl) * (x - xl) / (1.0 - xl));
}

std::vector<std::pair<double, double>> parse_cap_speed(std::string_view text)
{
    const std::string what = "--cap-speed '" + std::string(text) +
                             "': expected RATIO:SPEED points separated by commas, e.g. 0.6:0.58,0.8:0.9, with "
                             "0 < RATIO <= 1 ascending and 0 < SPEED <= 1 not decreasing";
    std::vector<std::pair<double, double>> out;
    size_t a = 0;
    while (a <= text.size()) {
        size_t b = text.find(',', a);
        if (b == std::string_view::npos)
            b = text.size();
        const std::string item(text.substr(a, b - a));
        const size_t colon = item.find(':');
        if (colon == std::string::npos)
            throw ParseError(what);
        char* e1 = nullptr;
        char* e2 = nullptr;
        const std::string xs = item.substr(0, colon), ys = item.substr(colon + 1);
        const double x = std::strtod(xs.c_str(), &e1), y = std::strtod(ys.c_str(), &e2);
        if (xs.empty() || ys.empty() || *e1 || *e2 || !(x > 0 && x <= 1) || !(y > 0 && y <= 1) ||
            (!out.empty() && (x <= out.back().first || y < out.back().second)))
            throw ParseError(what);
        out.emplace_back(x, y);
        a = b + 1;
    }
    if (out.empty())
        throw ParseError(what);
    return out;
}

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
    JobIntent intent;
    apply_option(intent, kw::kOptClass, opts.workload_class, 0);  // throws ParseError naming the classes
    // The classes jobs may carry: [0] the default, then one per share.
    std::vector<JobIntent> class_intent{intent};
    double share_sum = 0;
    for (const auto& [cls, pct] : opts.class_shares) {
        JobIntent ci;
        apply_option(ci, kw::kOptClass, cls, 0);
        if (!(pct > 0 && pct <= 100))
            throw Error("--class-share " + cls + "=" + num(pct) + ": expected a percent of jobs above 0, at most 100");
        share_sum += pct;
        class_intent.push_back(ci);
    }
    if (share_sum > 100 + 1e-9)
        throw Error("--class-share: the shares add up to " + num(share_sum) + "% of jobs, more than 100");
    if (opts.actuation_delay_s < 0 || !std::isfinite(opts.actuation_delay_s))
        throw Error("--actuation-delay: expected seconds, 0 or more");
    if (opts.checkpoint_interval_s < 0 || !std::isfinite(opts.checkpoint_interval_s))
        throw Error("--checkpoint-interval: expected seconds, 0 (never) or more");
    if (opts.restart_overhead_s < 0 || !std::isfinite(opts.restart_overhead_s))
        throw Error("--restart-overhead: expected seconds, 0 or more");
    if (opts.response_target_s < 0 || !std::isfinite(opts.response_target_s))
        throw Error("response target: expected seconds, 0 or more");
    if (opts.event_notice_s < -1)
        throw Error("--event-notice: expected seconds, 0 or more (-1: the whole run)");

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
    const Signals* tl = opts.timeline;

    // m2g is select/m2g's PlacementSession (signals gate, locality, the
    // engine, the prefer fallback, started-power bookkeeping, pacing) and
    // job_submit/m2g's decide() and AdmissionSession, as the plugins run
    // them; what select/m2g leaves to cons_tres (locality any, or a prefer
    // job's best effort that cons_tres refused) goes to the tree-nvl policy:
    // cons_tres over topology/m2g's switches, the NVLink domains lowest.
    // The baselines place alone.
    std::unique_ptr<Placer> placer;
    std::unique_ptr<PlacementSession> select;
    switch (opts.policy) {
    case SimPolicy::M2G:
        select = std::make_unique<PlacementSession>(SessionLog{}, 0);
        placer = std::make_unique<TreePlacer>(m, TreePlacer::nvl(m));
        break;
    case SimPolicy::Tree:
        placer = std::make_unique<TreePlacer>(m, TreePlacer::fabric(m));
        break;
    case SimPolicy::TreeNvl:
        placer = std::make_unique<TreePlacer>(m, TreePlacer::nvl(m));
        break;
    case SimPolicy::Block:
    case SimPolicy::BlockSeg:
        placer = std::make_unique<BlockPlacer>(m, opts.policy == SimPolicy::BlockSeg, to_string(opts.policy));
        break;
    case SimPolicy::FirstFit:
        placer = std::make_unique<FirstFitPlacer>(m);
        break;
    }
    // When a waiting job's prefer wait ends, select/m2g may decide
    // otherwise: m2g gets an event then (select_nodes).
    const int64_t prefer_wait_s = m.policy.prefer_wait_sec;
    const double prefer_wait = static_cast<double>(prefer_wait_s);

    // Nodes nobody may use: down or degraded in the timeline's health.
    std::vector<uint8_t> node_ok(m.nodes.size(), 1);
    if (tl) {
        for (size_t n = 0; n < m.nodes.size(); ++n)
            if ((n < tl->node_down.size() && tl->node_down[n]) ||
                (n < tl->health.node_degraded.size() && tl->health.node_degraded[n]))
                node_ok[n] = 0;
    }
    for (uint8_t ok : node_ok)
        r.unusable_nodes += !ok;

    // Budgets the run watches, and whether m2g enforces them (admission and
    // gate, as job_submit/m2g and select/m2g do).
    std::vector<Watched> watched;
    watched.push_back({EventScope::Site, kNone, "site"});
    for (size_t f = 0; f < m.fault_domains.size(); ++f)
        if (m.fault_domains[f].type == "row")
            watched.push_back({EventScope::Row, static_cast<int>(f), m.fault_domains[f].name});
    for (size_t d = 0; d < m.domains.size(); ++d)
        watched.push_back({EventScope::Rack, static_cast<int>(d), m.domains[d].name});
    const int64_t epoch0 = tl ? tl->generated_at : 0;
    bool any_budget = false;
    for (const Watched& w : watched)
        if (effective_budget_kw(m, tl, w.scope, w.index, epoch0) >= 0)
            any_budget = true;
    if (tl && !tl->events.empty())
        any_budget = true;
    const bool power_aware = select && (tl || any_budget) && m.admission.mode == AdmissionMode::Enforce;

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
        j.gpus_per_node = static_cast<int>((g + j.nodes - 1) / j.nodes);
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
    // Each job's class: FNV-1a 64 of its id, mod 10000, against the shares.
    std::vector<int> cls_of(jobs.size(), 0);
    for (size_t i = 0; i < jobs.size(); ++i) {
        if (!opts.class_shares.empty()) {
            uint64_t h = 14695981039346656037ULL;
            for (unsigned char c : jobs[i].id) {
                h ^= c;
                h *= 1099511628211ULL;
            }
            const double u = static_cast<double>(h % 10000) / 100.0;
            double acc = 0;
            for (size_t k = 0; k < opts.class_shares.size(); ++k) {
                acc += opts.class_shares[k].second;
                if (u < acc) {
                    cls_of[i] = static_cast<int>(k) + 1;
                    break;
                }
            }
        }
        jobs[i].workload_class = cls_of[i] ? opts.class_shares[cls_of[i] - 1].first : opts.workload_class;
        jobs[i].deferrable = is_deferrable(m.admission, class_intent[cls_of[i]]);
    }
    {
        // Power per GPU: drawn in submit order from its own stream, so the
        // same seed gives every policy the same draws.
        std::mt19937_64 prng(opts.seed ^ 0x6d32672d706f7772ULL);
        std::uniform_real_distribution<double> u(0.0, 1.0);
        for (size_t i = 0; i < jobs.size(); ++i)
            jobs[i].w_gpu = opts.power ? opts.power->sample(u(prng))
                                       : power_w_per_gpu(m.admission, class_intent[cls_of[i]]);
    }
    std::vector<double> duration(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i)
        duration[i] = jobs[i].end;
    const double first_submit = jobs.empty() ? 0 : jobs.front().submit;
    // The load window leaves out the first 1% of submissions: traces cut
    // from a longer log (Philly's first 20,000 jobs) open with weeks of a
    // few jobs, and counting that ramp would halve the load of the weeks
    // where the work is. Only the jobs submitted in the window count:
    // offered load = GPU-seconds asked / (GPUs x window), the usual
    // arrival rate x mean demand / capacity.
    const size_t w0 = jobs.size() / 100;
    const double window_start = jobs.empty() ? 0 : jobs[w0].submit;
    const double submit_span = jobs.empty() ? 0 : jobs.back().submit - window_start;
    double gpu_seconds_asked = 0;
    for (size_t i = w0; i < jobs.size(); ++i)
        gpu_seconds_asked += static_cast<double>(jobs[i].nodes) * jobs[i].gpus_per_node * duration[i];
    const double natural_load = submit_span > 0 ? gpu_seconds_asked / (total_gpus * submit_span) : 0;
    if (opts.load > 0) {
        if (submit_span <= 0 || natural_load <= 0)
            throw Error("--load needs jobs submitted at different times with some run time");
        r.arrival_factor = natural_load / opts.load;
        for (SimJobResult& j : jobs)
            j.submit = first_submit + (j.submit - first_submit) * r.arrival_factor;
    }
    r.offered_load = r.arrival_factor > 0 && natural_load > 0 ? natural_load / r.arrival_factor : 0;
    for (SimJobResult& j : jobs)
        j.eligible = j.submit;
    auto epoch = [&](double t) { return epoch0 + static_cast<int64_t>(std::floor(t - first_submit)); };
    auto sim_time = [&](int64_t e) { return first_submit + static_cast<double>(e - epoch0); };

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

    // State: free GPUs per node; nodes by free GPUs (healthy ones only).
    std::vector<int> node_free(m.nodes.size());
    std::vector<int> free_count(static_cast<size_t>(gpn) + 1, 0);  // healthy nodes with exactly k free GPUs
    int free_gpus = 0;
    for (size_t n = 0; n < m.nodes.size(); ++n) {
        node_free[n] = m.nodes[n].gpus;
        if (node_ok[n]) {
            ++free_count[node_free[n]];
            free_gpus += node_free[n];
        }
    }
    auto usable_nodes = [&](int per_node) {
        int c = 0;
        for (int k = std::max(per_node, 1); k <= gpn; ++k)
            c += free_count[k];
        return c;
    };
    // usable[g]: healthy nodes with g GPUs free, rebuilt when the state changed.
    uint64_t version = 1;
    std::vector<std::vector<uint8_t>> usable(static_cast<size_t>(gpn) + 1);
    std::vector<uint64_t> usable_version(static_cast<size_t>(gpn) + 1, 0);
    auto usable_for = [&](int per_node) -> const std::vector<uint8_t>& {
        std::vector<uint8_t>& u = usable[per_node];
        if (usable_version[per_node] != version) {
            u.resize(m.nodes.size());
            for (size_t n = 0; n < m.nodes.size(); ++n)
                u[n] = node_ok[n] && node_free[n] >= per_node;
            usable_version[per_node] = version;
        }
        return u;
    };

    // m2g: job j as select/m2g sees it (JobFacts): the class every job
    // carries, whole nodes, its run time as its limit. Its prefer clock is
    // the session's.
    std::vector<std::vector<std::string>> class_env;
    for (const JobIntent& ci : class_intent) {
        class_env.emplace_back();
        for (const auto& [k, v] : encode_intent(ci))
            class_env.back().push_back(k + "=" + v);
    }
    auto facts_of = [&](int j) {
        JobFacts f;
        f.job_id = static_cast<uint32_t>(j);
        f.spank_env = class_env[cls_of[j]];
        f.nodes = jobs[j].nodes;
        f.min_nodes = jobs[j].nodes;
        f.gpus_per_node = jobs[j].gpus_per_node;
        f.time_limit_s = static_cast<int64_t>(std::ceil(duration[j]));
        return f;
    };
    // One select_p_job_test on `offer` at `now`, cons_tres's part played by
    // the tree policy: true with the job's nodes in `picked`.
    // `clock_started`: that call started the job's prefer clock.
    std::vector<int> picked;
    std::vector<uint8_t> stock_offer;
    bool clock_started = false;
    auto select_nodes = [&](const JobFacts& f, const std::vector<uint8_t>& offer, const FreeGpus& free_now,
                            SelectMode mode, double now) {
        const int total = static_cast<int>(std::count(offer.begin(), offer.end(), uint8_t(1)));
        const Outcome o = select->decide(f, offer, total, free_now, mode, epoch(now));
        clock_started = o.clock_started;
        if (o.offer == Outcome::Offer::Refuse)
            return false;
        if (o.offer == Outcome::Offer::Narrowed) {
            picked = o.nodes;  // cons_tres takes them: all are offered with the job's GPUs free
            return true;
        }
        stock_offer = offer;
        for (int n : o.ruled_out)
            stock_offer[n] = 0;
        return placer->place(f.nodes, stock_offer, picked);
    };

    // Can a job ever start? (On an empty healthy cluster; for m2g,
    // select/m2g's test-only question with the prefer wait over.)
    std::map<std::tuple<int, int, int>, bool> ever_fits;
    std::vector<uint8_t> scratch;
    auto fits_empty = [&](int index, double now) {
        const SimJobResult& j = jobs[index];
        const std::tuple<int, int, int> key{j.nodes, j.gpus_per_node, cls_of[index]};
        auto it = ever_fits.find(key);
        if (it != ever_fits.end())
            return it->second;
        scratch.assign(m.nodes.size(), 0);
        int ok = 0;
        for (size_t n = 0; n < m.nodes.size(); ++n)
            ok += scratch[n] = node_ok[n] && m.nodes[n].gpus >= j.gpus_per_node;
        bool fits = j.nodes <= ok;
        if (fits && select) {
            JobFacts f = facts_of(index);
            f.wait_over = true;
            fits = select_nodes(f, scratch, [&](int n) { return m.nodes[n].gpus; }, SelectMode::TestOnly, now);
        } else if (fits) {
            fits = placer->place(j.nodes, scratch, picked);
        }
        ever_fits.emplace(key, fits);
        return fits;
    };

    // Power: per node and per domain, of the running jobs.
    std::vector<double> node_kw(m.nodes.size(), 0.0), domain_kw(m.domains.size(), 0.0);
    double site_kw = 0;
    std::shared_ptr<Signals> snap;
    // Jobs started in the second the next snapshot is generated in: the
    // BMS has not reported their draw yet; select/m2g books it
    // (job_started) until a later snapshot.
    std::vector<int> recent;
    std::vector<double> reported_kw;  // per node
    std::vector<double> last_start(jobs.size(), -1);  // of its current run
    // The timeline as m2g's feed shows it at `now`: with event_notice_s,
    // each event only from its announcement (event_notice_s before it
    // starts). Budgets are measured against the whole timeline.
    const Signals no_signals{};
    Signals shown;
    std::vector<uint8_t> shown_mask;
    bool shown_valid = false;
    auto timeline_at = [&](double now) -> const Signals& {
        if (!tl)
            return no_signals;
        if (opts.event_notice_s < 0)
            return *tl;
        const int64_t e = epoch(now);
        std::vector<uint8_t> mask(tl->events.size());
        for (size_t i = 0; i < tl->events.size(); ++i)
            mask[i] = e >= tl->events[i].start - opts.event_notice_s;
        if (!shown_valid || mask != shown_mask) {
            shown = *tl;
            shown.events.clear();
            for (size_t i = 0; i < tl->events.size(); ++i)
                if (mask[i])
                    shown.events.push_back(tl->events[i]);
            shown_mask = std::move(mask);
            shown_valid = true;
        }
        return shown;
    };
    auto view_at = [&](double now) {
        // The feed as the plugins would see it now: the timeline's budgets,
        // events, maintenance and health, and the draw the BMS would report.
        const int64_t e = epoch(now);
        snap = std::make_shared<Signals>(timeline_at(now));
        snap->generated_at = e;
        reported_kw = node_kw;
        snap->site.draw_kw = site_kw;
        snap->racks.resize(m.domains.size());
        for (size_t d = 0; d < m.domains.size(); ++d)
            snap->racks[d].draw_kw = domain_kw[d];
        recent.erase(std::remove_if(recent.begin(), recent.end(),
                                    [&](int j) { return epoch(last_start[j]) < e || jobs[j].end <= now; }),
                     recent.end());
        for (int j : recent) {
            const double kw_node = jobs[j].w_gpu * jobs[j].gpus_per_node / 1000.0;
            for (int n : jobs[j].placed) {
                reported_kw[n] -= kw_node;
                if (m.nodes[n].domain != kNone)
                    snap->racks[m.nodes[n].domain].draw_kw -= kw_node;
            }
            snap->site.draw_kw -= kw_node * static_cast<double>(jobs[j].placed.size());
        }
        snap->rows.resize(m.fault_domains.size());
        for (size_t f = 0; f < m.fault_domains.size(); ++f) {
            double kw = 0;
            for (int n : m.fault_domains[f].nodes)
                kw += reported_kw[n];
            snap->rows[f].draw_kw = kw;
        }
        SignalsView v;
        v.snap = snap;
        v.state = FeedState::Fresh;
        v.age_s = 0;
        return v;
    };
    SignalsView view;  // valid during one pass when power_aware
    if (select)
        select->adopt(m, power_aware ? SignalsSource([&](int64_t) { return view; }) : SignalsSource(),
                      tl ? tl->health : ClusterState{});

    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
    for (size_t i = 0; i < jobs.size(); ++i)
        events.push({jobs[i].submit, kSubmit, static_cast<int>(i)});
    if (tl)
        for (const CurtailmentEvent& e : tl->events) {
            SimEventResult er;
            er.id = e.id;
            er.scope = e.scope_name;
            er.start = sim_time(e.start);
            er.end = sim_time(e.end);
            er.announced = first_submit;
            if (opts.event_notice_s >= 0) {
                // Its announcement changes the feed: an edge of its own.
                er.announced = std::max(first_submit, sim_time(e.start - opts.event_notice_s));
                if (er.announced < er.start)
                    events.push({er.announced, kSignal, -1});
            }
            r.events.push_back(er);
            events.push({er.start, kSignal, -1});
            events.push({er.end, kSignal, -1});
        }
    if (tl)
        for (const MaintenanceWindow& w : tl->maintenance) {
            events.push({sim_time(w.start), kSignal, -1});
            events.push({sim_time(w.end), kSignal, -1});
        }
    std::list<int> queue;                           // eligible waiting jobs, FCFS (job index order)
    std::multiset<std::pair<double, int>> running;  // (end, job)
    double power_integral = 0, over_integral = 0;
    struct Segment {
        double t0, t1;
        int busy_gpus, busy_nodes, stranded;
    };
    std::vector<Segment> segments;  // the state between two event times
    int busy_gpus = 0;
    double nd_rate = 0;  // GPUs x speed of the running non-deferrable jobs: their work per second
    // The load window (after --load): where non-deferrable throughput is counted.
    const double window_a = jobs.empty() ? 0 : jobs[w0].submit, window_b = jobs.empty() ? 0 : jobs.back().submit;
    double last_t = first_submit, last_end = first_submit;
    int stranded_now = 0, busy_nodes = 0;
    bool any_over = false;
    // (nodes, GPUs per node, prefer clock, class) that did not fit in this
    // pass; the clock: 0 none runs, 1 running, 2 its wait is over.
    std::set<std::tuple<int, int, int, int>> failed;

    auto adjust_node = [&](int n, int delta_gpus) {
        if (node_ok[n])
            --free_count[node_free[n]];
        const bool was_busy = node_free[n] < m.nodes[n].gpus;
        node_free[n] += delta_gpus;
        if (node_ok[n]) {
            ++free_count[node_free[n]];
            free_gpus += delta_gpus;
        }
        busy_nodes += (node_free[n] < m.nodes[n].gpus) - was_busy;
        busy_gpus -= delta_gpus;
    };
    auto book_power = [&](const SimJobResult& job, double sign) {
        const double kw_node = sign * job.w_gpu * job.gpus_per_node / 1000.0;
        for (int n : job.placed) {
            node_kw[n] += kw_node;
            if (m.nodes[n].domain != kNone)
                domain_kw[m.nodes[n].domain] += kw_node;
        }
        site_kw += kw_node * static_cast<double>(job.placed.size());
    };
    // Curtailment state (m2g with CurtailMode=monitor or enforce): each
    // live job's CurtailJob (what the controller knows of it), its work
    // left (seconds at full speed) as of rate_t, its speed and per-GPU
    // draw now; checkpointed work; energy drawn (W s).
    const AdmissionPolicy& ap = m.admission;
    const bool curtail = select != nullptr && ap.curtail_mode != CurtailMode::Off;
    const bool enforce = curtail && ap.curtail_mode == CurtailMode::Enforce;
    r.curtail_mode = curtail ? to_string(ap.curtail_mode) : "off";
    r.actuation_delay_s = curtail ? opts.actuation_delay_s : 0;
    const size_t nj = curtail ? jobs.size() : 0;
    std::vector<CurtailJob> cj(nj);
    std::vector<double> work_left(nj), rate_t(nj), speed(nj), w_now(nj), saved(nj, 0), energy_ws(nj, 0);
    std::vector<double> attempt_work(duration.begin(), duration.begin() + static_cast<long>(nj)),
        attempt_overhead(nj, 0);
    std::vector<uint8_t> in_running(nj, 0);
    std::vector<int> live, live_pos(nj, -1);  // jobs holding GPUs (running or suspended)
    CurtailState cstate;
    std::deque<std::pair<double, CurtailAction>> pending;  // planned, in effect from .first
    std::vector<int> requeued;  // requeued in this event round, submitted again after the feed is rebuilt
    bool tick_pending = false;
    // What the planner sees changes only with a start, an end, an action
    // taking effect or a timeline edge: `inputs` counts them. A plan on
    // unchanged inputs that found nothing to do, with no job curtailed
    // (nothing to restore, no requeue grace running), would find nothing
    // again, and is skipped (opts.curtail_every_tick: never skipped).
    uint64_t inputs = 1, planned_inputs = 0;
    auto book_w = [&](const SimJobResult& job, double dw) {  // per-GPU draw change of a running job
        const double kw_node = dw * job.gpus_per_node / 1000.0;
        for (int n : job.placed) {
            node_kw[n] += kw_node;
            if (m.nodes[n].domain != kNone)
                domain_kw[m.nodes[n].domain] += kw_node;
        }
        site_kw += kw_node * static_cast<double>(job.placed.size());
    };
    // Work, energy and time capped or suspended up to `t` at the rate in force.
    auto advance = [&](int j, double t) {
        const double dt = t - rate_t[j];
        if (dt > 0) {
            work_left[j] = std::max(0.0, work_left[j] - speed[j] * dt);
            energy_ws[j] += w_now[j] * jobs[j].gpus * dt;
            if (cj[j].suspended)
                jobs[j].suspended_s += dt;
            else if (w_now[j] < jobs[j].w_gpu)
                jobs[j].capped_s += dt;
        }
        rate_t[j] = t;
    };
    auto set_end = [&](int j, double end) {
        if (in_running[j])
            running.erase(running.find({jobs[j].end, j}));
        in_running[j] = 0;
        jobs[j].end = end;
        if (std::isfinite(end)) {
            running.emplace(end, j);
            in_running[j] = 1;
            events.push({end, kEnd, j});
        }
    };
    // The draw and speed that j's CurtailJob implies, from `t`.
    auto set_rate = [&](int j, double t) {
        SimJobResult& job = jobs[j];
        const double w = curtail_job_w_gpu(ap, cj[j]);
        book_w(job, w - w_now[j]);
        w_now[j] = w;
        const double was = speed[j];
        speed[j] = cj[j].suspended ? 0.0 : cap_speed(opts.cap_speed, job.w_gpu > 0 ? w / job.w_gpu : 1.0);
        if (!job.deferrable)
            nd_rate += job.gpus * (speed[j] - was);
        set_end(j, speed[j] > 0 ? t + work_left[j] / speed[j] : std::numeric_limits<double>::infinity());
    };
    auto drop_live = [&](int j) {
        const int at = live_pos[j];
        live_pos[live.back()] = at;
        live[at] = live.back();
        live.pop_back();
        live_pos[j] = -1;
    };
    auto start_job = [&](int j, double now) {
        SimJobResult& job = jobs[j];
        job.placed = picked;
        std::sort(job.placed.begin(), job.placed.end());
        for (int n : job.placed)
            adjust_node(n, -job.gpus_per_node);
        ++version;
        if (job.start < 0)
            job.start = now;  // a requeued job keeps its first start
        last_start[j] = now;
        if (curtail) {
            CurtailJob& c = cj[j];
            c = CurtailJob{};
            c.id = static_cast<uint32_t>(j);
            c.intent = class_intent[cls_of[j]];
            c.nodes = job.placed;
            c.gpus_per_node = job.gpus_per_node;
            c.w_gpu = job.w_gpu;  // the simulated draw is known exactly
            // Every simulated job asks for a checkpoint signal (--signal=
            // USR1@...), so a Curtail=requeue class is requeued, not suspended.
            c.checkpoint_signal = 10;
            c.start_time = epoch(now);
            work_left[j] = attempt_work[j];
            rate_t[j] = now;
            speed[j] = 1;
            w_now[j] = job.w_gpu;
            live_pos[j] = static_cast<int>(live.size());
            live.push_back(j);
            ++inputs;
            job.end = now + attempt_work[j];
            in_running[j] = 1;
        } else {
            job.end = now + duration[j];
        }
        running.emplace(job.end, j);
        events.push({job.end, kEnd, j});
        book_power(job, 1);
        if (!job.deferrable)
            nd_rate += job.gpus;
        if (select) {
            select->job_started(facts_of(j), job.placed, epoch(now));  // select_p_job_begin
            if (power_aware)
                recent.push_back(j);
        }
    };
    auto try_place = [&](int j, double now) {
        const SimJobResult& job = jobs[j];
        if (job.nodes > usable_nodes(job.gpus_per_node))
            return false;
        const std::vector<uint8_t>& offer = usable_for(job.gpus_per_node);
        if (!select) {
            const std::tuple<int, int, int, int> key{job.nodes, job.gpus_per_node, 0, cls_of[j]};
            if (failed.count(key))
                return false;
            if (placer->place(job.nodes, offer, picked))
                return true;
            failed.insert(key);
            return false;
        }
        const JobFacts f = facts_of(j);
        // Without signals, select/m2g answers equal requests alike within a
        // pass but for the prefer clock, which the key holds.
        const int64_t since = select->prefer_since(f.job_id);
        const std::tuple<int, int, int, int> key{job.nodes, job.gpus_per_node,
                                                 since == 0 ? 0 : epoch(now) - since >= prefer_wait_s ? 2 : 1,
                                                 cls_of[j]};
        if (!power_aware && failed.count(key))
            return false;
        if (select_nodes(f, offer, [&](int n) { return node_free[n]; }, SelectMode::RunNow, now))
            return true;
        if (clock_started) {
            // A lesser placement was free: its prefer wait starts now and
            // ends with an event. Another job of this shape without a clock
            // would start its own: no failure to remember.
            if (prefer_wait > 0)
                events.push({now + prefer_wait, kWake, j});
            return false;
        }
        failed.insert(key);
        return false;
    };
    // job_submit/m2g on the simulated feed: decide() at submission, and the
    // release thread's rules (AdmissionSession) for each job m2g holds, at
    // its begin time, and for every pending job where the timeline changes
    // (an event or a maintenance window starts or ends), as its next pass
    // would. Only with power_aware.
    AdmissionSession admission(SessionLog{}, nullptr);
    if (power_aware)
        admission.adopt(std::shared_ptr<const Model>(&m, [](const Model*) {}), [&](int64_t) { return view; });
    std::vector<std::string> adm_text(jobs.size());  // each job's AdminComment admission part
    std::vector<int64_t> adm_begin(jobs.size(), 0);  // the begin time m2g holds a job until, 0: not held
    auto hold = [&](int j, int64_t begin, double now, const std::string& reason) {
        jobs[j].deferred = true;
        jobs[j].admission = reason;
        adm_begin[j] = begin;
        events.push({std::max(now + 1, sim_time(begin)), kRelease, j});
    };
    // At submission: true when the job may queue now.
    auto submit = [&](int j, double now) {
        if (!power_aware)
            return true;
        SimJobResult& job = jobs[j];
        AdmissionRequest ar;
        ar.intent = class_intent[cls_of[j]];
        ar.gpus = job.gpus;
        ar.nodes = job.nodes;
        ar.time_limit_s = static_cast<int64_t>(std::ceil(duration[j]));
        ar.now = epoch(now);
        const AdmissionContext c = admission.current(ar.now);
        const Decision d = decide(*c.model, c.view, ar, nullptr);
        if (d.verdict == Verdict::Reject) {
            job.admission = d.reason;
            ++r.admission_rejected;
            return false;
        }
        adm_text[j] = format(admission_annotation(d, class_intent[cls_of[j]], m.admission, 0, false));
        if ((d.verdict == Verdict::Defer || d.verdict == Verdict::Pace) && d.begin_time > ar.now) {
            hold(j, d.begin_time, now, d.reason);
            return false;
        }
        return true;
    };
    // The release thread on pending job j (held, or queued): what it does.
    auto release_rules = [&](int j, double now) {
        PendingJobFacts f;
        f.job_id = static_cast<uint32_t>(j);
        f.pending = true;
        f.admission = adm_text[j];
        f.begin_time = adm_begin[j] ? adm_begin[j] : epoch(jobs[j].eligible);
        f.request = [&, j] {
            PendingRequest q;
            q.spank_env = class_env[cls_of[j]];
            q.nodes = jobs[j].nodes;
            q.gpus = jobs[j].gpus;
            q.time_limit_s = static_cast<int64_t>(std::ceil(duration[j]));
            return q;
        };
        const ReleaseAction a = admission.reevaluate(f, epoch(now));
        if (a.changed())
            adm_text[j] = a.admission;
        if (a.waiting())
            hold(j, a.begin_time, now, a.reason);
        return a;
    };
    auto enqueue = [&](int j) {
        auto it = queue.end();
        while (it != queue.begin() && *std::prev(it) > j)
            --it;
        queue.insert(it, j);
    };
    // Eligible from `now`: into the queue. (Its prefer wait starts when it
    // could first have started: select_nodes.)
    auto queue_job = [&](int j, double now) {
        adm_begin[j] = 0;
        jobs[j].eligible = now;
        enqueue(j);
    };
    // The release thread on a job m2g holds: released, moved, or left
    // (then it is eligible once its begin time has come).
    auto release_held = [&](int j, double now) {
        const ReleaseAction a = release_rules(j, now);
        if (a.kind == ReleaseAction::Kind::Release ||
            (a.kind == ReleaseAction::Kind::None && epoch(now) >= adm_begin[j]))
            queue_job(j, now);
    };
    // A release pass where the timeline changes: every job m2g holds, and
    // (under pressure) every queued one, each once.
    auto release_pass = [&](double now) {
        std::vector<int> held;
        for (size_t j = 0; j < jobs.size(); ++j)
            if (adm_begin[j])
                held.push_back(static_cast<int>(j));
        for (auto it = queue.begin(); it != queue.end();)
            it = release_rules(*it, now).waiting() ? queue.erase(it) : std::next(it);
        for (int j : held)
            release_held(j, now);
    };

    // Curtailment. The planner's feed: the timeline as announced, with the
    // simulated draw of every scope at this instant, except what m2g's own
    // actions changed in the snapshot's second: the planner counts those
    // as not in the feed yet (and adds them itself), so the feed leaves
    // them out, as a BMS reading from the start of that second would.
    std::vector<double> feed_kw;  // per node
    auto curtail_view = [&](double now) {
        const int64_t e = epoch(now);
        auto s = std::make_shared<Signals>(timeline_at(now));
        s->generated_at = e;
        feed_kw = node_kw;
        for (int j : live)
            if (cj[j].changed_at >= e && cj[j].w_gpu_before > 0) {
                const double kw_node = (w_now[j] - cj[j].w_gpu_before) * jobs[j].gpus_per_node / 1000.0;
                for (int n : jobs[j].placed)
                    feed_kw[n] -= kw_node;
            }
        s->site.draw_kw = 0;
        for (double kw : feed_kw)
            s->site.draw_kw += kw;
        s->racks.resize(m.domains.size());
        for (size_t d = 0; d < m.domains.size(); ++d) {
            double kw = 0;
            for (int n : m.domains[d].nodes)
                kw += feed_kw[n];
            s->racks[d].draw_kw = kw;
        }
        s->rows.resize(m.fault_domains.size());
        for (size_t f = 0; f < m.fault_domains.size(); ++f) {
            double kw = 0;
            for (int n : m.fault_domains[f].nodes)
                kw += feed_kw[n];
            s->rows[f].draw_kw = kw;
        }
        SignalsView v;
        v.snap = s;
        v.state = FeedState::Fresh;
        v.age_s = 0;
        return v;
    };
    // A requeue: the work since the last checkpoint is lost, the GPUs are
    // freed, and the job is submitted again (after the feed is rebuilt).
    auto requeue = [&](int j, double t) {
        SimJobResult& job = jobs[j];
        const double progress = attempt_work[j] - work_left[j];  // this run's work, restart included
        const double done = saved[j] + std::max(0.0, progress - attempt_overhead[j]);
        double keep = saved[j];
        if (opts.checkpoint_interval_s > 0)
            keep = std::max(keep, std::floor(done / opts.checkpoint_interval_s) * opts.checkpoint_interval_s);
        keep = std::min(keep, duration[j]);
        const double lost = std::max(0.0, progress - (keep - saved[j]));
        job.lost_gpu_s += lost * job.gpus;
        r.requeue_lost_gpu_s += lost * job.gpus;
        saved[j] = keep;
        attempt_overhead[j] = opts.restart_overhead_s;
        attempt_work[j] = opts.restart_overhead_s + (duration[j] - keep);
        drop_live(j);
        if (in_running[j])
            running.erase(running.find({job.end, j}));
        in_running[j] = 0;
        job.end = -1;
        for (int n : job.placed)
            adjust_node(n, job.gpus_per_node);
        ++version;
        book_w(job, -w_now[j]);
        w_now[j] = 0;
        if (!job.deferrable)
            nd_rate -= job.gpus * speed[j];
        ++job.requeues;
        ++inputs;
        cj[j] = CurtailJob{};
        requeued.push_back(j);
    };
    auto count_action = [&](const CurtailAction& a) {
        switch (a.step) {
        case CurtailStep::Cap:
            ++r.curtail_caps;
            break;
        case CurtailStep::Uncap:
            ++r.curtail_uncaps;
            break;
        case CurtailStep::Suspend:
            ++r.curtail_suspends;
            break;
        case CurtailStep::Resume:
            ++r.curtail_resumes;
            break;
        case CurtailStep::Signal:
            ++r.curtail_signals;
            break;
        case CurtailStep::Requeue:
            ++r.curtail_requeues;
            break;
        }
    };
    // An action takes effect at `t`, as the controller records it then.
    auto actuate = [&](const CurtailAction& a, double t) {
        const int j = static_cast<int>(a.job);
        if (j < 0 || static_cast<size_t>(j) >= nj || live_pos[j] < 0)
            return;  // it ended meanwhile
        advance(j, t);
        apply_curtail_action(cj[j], a, cstate, ap, epoch(t));
        ++inputs;
        count_action(a);
        jobs[j].caps += a.step == CurtailStep::Cap;
        jobs[j].suspends += a.step == CurtailStep::Suspend;
        if (a.step == CurtailStep::Requeue)
            requeue(j, t);
        else
            set_rate(j, t);
    };
    // One round of the controller's loop: the plan, in effect
    // actuation_delay_s later. While the last round's actions are still
    // on their way the controller waits (only when the delay is at least
    // CurtailIntervalSec). Returns whether it planned any action.
    auto plan_round = [&](double now) {
        if (!pending.empty())
            return true;
        if (!opts.curtail_every_tick && inputs == planned_inputs) {
            bool curtailed = false;
            for (int j : live)
                curtailed = curtailed || cj[j].cap_w > 0 || cj[j].suspended || cj[j].signalled_at > 0;
            if (!curtailed) {
                ++r.curtail_plans_skipped;
                return false;
            }
        }
        std::vector<CurtailJob> list;
        list.reserve(live.size());
        for (int j : live)
            list.push_back(cj[j]);
        const CurtailPlan plan = plan_curtailment(m, curtail_view(now), list, cstate, epoch(now));
        ++r.curtail_plans;
        // A plan with actions is never taken as "nothing to do" (monitor
        // plans them again on the same inputs).
        planned_inputs = plan.actions.empty() ? inputs : 0;
        if (plan.actions.empty())
            return false;
        if (!enforce) {
            for (const CurtailAction& a : plan.actions)
                count_action(a);  // monitor: what it would do, nothing changes
            return true;
        }
        for (const CurtailAction& a : plan.actions)
            pending.emplace_back(now + opts.actuation_delay_s, a);
        events.push({now + opts.actuation_delay_s, kActuate, -1});
        return true;
    };

    // EASY backfill's reservation for the queue head, on nodes: walking the
    // running jobs by end time, the first end time at which the head's own
    // policy places it on the nodes free then (m2g: select/m2g's decide()
    // in will-run mode, the clock at now, as Slurm's backfill asks it) is
    // the shadow time, and those nodes are `reserved`. End times are tried
    // from the first with enough usable nodes, the step doubling until one
    // places it, then halving back to the first that does (exact when more
    // free nodes never make a placement fail: every baseline). False when
    // it places nowhere even once every running job has ended.
    std::vector<int> reserved;                    // the head's nodes at the shadow time
    std::vector<std::pair<double, int>> ending;   // the running jobs by end time
    std::vector<size_t> group_end;                // ending[0, group_end[k]): ended by the k-th end time
    std::vector<int> fut_free, fut_try;           // per node: GPUs free at an end time
    std::vector<uint8_t> fut_offer;
    auto reserve_head = [&](int head, double now, double& shadow) {
        const SimJobResult& h = jobs[head];
        const int g = std::max(h.gpus_per_node, 1);
        ending.assign(running.begin(), running.end());
        group_end.clear();
        for (size_t i = 0; i < ending.size(); ++i)
            if (i + 1 == ending.size() || ending[i + 1].first != ending[i].first)
                group_end.push_back(i + 1);
        const int last = static_cast<int>(group_end.size()) - 1;
        // The jobs of end times (from, to] end: their GPUs come free on f;
        // `ready` counts the healthy nodes with the head's GPUs free.
        auto apply = [&](std::vector<int>& f, int& ready, int from, int to) {
            for (size_t i = from < 0 ? 0 : group_end[from]; i < group_end[to]; ++i) {
                const SimJobResult& e = jobs[ending[i].second];
                for (int n : e.placed) {
                    const bool was = f[n] >= g;
                    f[n] += e.gpus_per_node;
                    ready += node_ok[n] && !was && f[n] >= g;
                }
            }
        };
        auto places = [&](const std::vector<int>& f, int ready) {
            if (ready < h.nodes)
                return false;
            fut_offer.resize(f.size());
            for (size_t n = 0; n < f.size(); ++n)
                fut_offer[n] = node_ok[n] && f[n] >= g;
            const bool ok = select ? select_nodes(facts_of(head), fut_offer, [&](int n) { return f[n]; },
                                                  SelectMode::WillRun, now)
                                   : placer->place(h.nodes, fut_offer, picked);
            if (ok)
                reserved = picked;
            return ok;
        };
        // fut_free: the GPUs free after end time `lo`, where the head does
        // not fit (-1: now, where it just failed to start).
        fut_free = node_free;
        int lo = -1, ready = 0;
        for (size_t n = 0; n < fut_free.size(); ++n)
            ready += node_ok[n] && fut_free[n] >= g;
        while (ready < h.nodes && lo < last) {
            apply(fut_free, ready, lo, lo + 1);
            ++lo;
        }
        if (ready < h.nodes)
            return false;
        int hi = -1;
        if (lo >= 0 && places(fut_free, ready)) {
            hi = lo;
        } else {
            for (int step = 1; lo < last; step *= 2) {
                const int to = std::min(last, lo + step);
                fut_try = fut_free;
                int u = ready;
                apply(fut_try, u, lo, to);
                if (places(fut_try, u)) {
                    hi = to;
                    break;
                }
                fut_free.swap(fut_try);
                ready = u;
                lo = to;
            }
            if (hi < 0)
                return false;
            // `reserved` holds the placement at hi (places() sets it only
            // when it places).
            while (hi - lo > 1) {
                const int mid = lo + (hi - lo) / 2;
                fut_try = fut_free;
                int u = ready;
                apply(fut_try, u, lo, mid);
                if (places(fut_try, u)) {
                    hi = mid;
                } else {
                    fut_free.swap(fut_try);
                    ready = u;
                    lo = mid;
                }
            }
        }
        shadow = ending[group_end[hi] - 1].first;
        return true;
    };
    // try_place for a backfill candidate that would still run at the
    // shadow time: on the usable nodes outside the reservation, which a
    // reserved node leaves whole (Slurm's backfill takes the nodes it plans
    // for the head out of such a job's test). The reserved nodes are hidden
    // for the call (out of node_ok and the free counts) and try_place gets
    // a usable[] cache and failure set of their own, so its rules apply
    // unchanged.
    decltype(usable) usable_outside(usable.size());
    decltype(usable_version) usable_outside_version(usable_version.size(), 0);
    decltype(failed) failed_outside;
    auto hide_reserved = [&](bool hide) {
        for (int n : reserved) {
            if (hide) {
                --free_count[node_free[n]];
                free_gpus -= node_free[n];
            } else {
                ++free_count[node_free[n]];
                free_gpus += node_free[n];
            }
            node_ok[n] = !hide;
        }
        std::swap(usable, usable_outside);
        std::swap(usable_version, usable_outside_version);
        std::swap(failed, failed_outside);
    };
    // The last reservation holds for the same head (m2g: with the same
    // prefer clock) while its nodes will still be free at its shadow time:
    // jobs end when planned, and a backfilled job ends by then or keeps off
    // them, so no earlier end time can place the head and the walk would
    // find the same time (only, perhaps, other nodes). Not with power
    // policy or curtailment, whose answers and end times move.
    struct Kept {
        int head;
        int64_t since;
        bool over;
        double shadow;  // -1: none kept
        bool same(const Kept& o) const { return head == o.head && since == o.since && over == o.over; }
    } kept{-1, 0, false, -1};
    auto reserved_free_at = [&](int head, double t) {
        const int g = std::max(jobs[head].gpus_per_node, 1);
        fut_free = node_free;
        for (const auto& [end, j] : running) {
            if (end > t)
                break;
            for (int n : jobs[j].placed)
                fut_free[n] += jobs[j].gpus_per_node;
        }
        for (int n : reserved)
            if (!node_ok[n] || fut_free[n] < g)
                return false;
        return true;
    };
    std::vector<int> reserved_free(static_cast<size_t>(gpn) + 1, 0);  // reserved nodes with k GPUs free
    uint64_t reserved_free_version = 0;  // 0: count them again
    auto try_place_outside = [&](int j, double now) {
        // Too few usable nodes outside the reservation: no need to look.
        if (reserved_free_version != version) {
            std::fill(reserved_free.begin(), reserved_free.end(), 0);
            for (int n : reserved)
                ++reserved_free[node_free[n]];
            reserved_free_version = version;
        }
        const int g = std::max(jobs[j].gpus_per_node, 1);
        int outside = usable_nodes(g);
        for (int k = g; k <= gpn; ++k)
            outside -= reserved_free[k];
        if (jobs[j].nodes > outside)
            return false;
        hide_reserved(true);
        const bool ok = try_place(j, now);
        hide_reserved(false);
        return ok;
    };
    auto schedule = [&](double now) {
        failed.clear();
        // FCFS: start the head while it can start.
        while (!queue.empty() && try_place(queue.front(), now)) {
            start_job(queue.front(), now);
            queue.pop_front();
        }
        if (queue.empty() || free_gpus == 0)
            return;
        // EASY backfill: the head's reservation, on nodes (reserve_head),
        // else in GPUs; made when a later job first has enough usable
        // nodes to start (nothing has changed by then).
        const int head = queue.front();
        double shadow = now;
        bool reserved_yet = false, by_nodes = false;
        int extra = 0;  // by GPUs: those the head will not need at the shadow time
        auto reserve = [&] {
            reserved_yet = true;
            if (opts.reserve_nodes) {
                int64_t since = 0;  // m2g: the head's prefer clock, and whether its wait is over
                bool over = false;
                if (select) {
                    since = select->prefer_since(static_cast<uint32_t>(head));
                    over = since > 0 && epoch(now) - since >= prefer_wait_s;
                }
                const Kept k{head, since, over, 0};
                if (!power_aware && !curtail && kept.same(k) && kept.shadow > now &&
                    reserved_free_at(head, kept.shadow)) {
                    by_nodes = true;
                    shadow = kept.shadow;
                } else {
                    by_nodes = reserve_head(head, now, shadow);
                    kept = k;
                    kept.shadow = by_nodes ? shadow : -1;
                }
            }
            if (by_nodes) {
                std::fill(usable_outside_version.begin(), usable_outside_version.end(), 0);
                failed_outside.clear();
                reserved_free_version = 0;
                return;
            }
            reserved.clear();
            const int head_gpus = jobs[head].nodes * jobs[head].gpus_per_node;
            int avail = free_gpus;
            shadow = now;
            for (const auto& [end, j] : running) {
                if (avail >= head_gpus)
                    break;
                avail += jobs[j].nodes * jobs[j].gpus_per_node;
                shadow = end;
            }
            extra = avail - head_gpus;
        };
        int looked = 0;
        for (auto it = std::next(queue.begin()); it != queue.end() && free_gpus > 0 && looked < opts.backfill_depth;
             ++looked) {
            const int j = *it;
            if (jobs[j].nodes > usable_nodes(jobs[j].gpus_per_node)) {
                ++it;  // try_place would say no
                continue;
            }
            if (!reserved_yet)
                reserve();
            const int g = jobs[j].nodes * jobs[j].gpus_per_node;
            const bool ends_before = now + duration[j] <= shadow;
            const bool ok = ends_before ? try_place(j, now)
                            : by_nodes  ? try_place_outside(j, now)
                                        : g <= extra && try_place(j, now);
            if (ok) {
                if (!ends_before && !by_nodes)
                    extra -= g;
                jobs[j].backfilled = true;
                start_job(j, now);
                it = queue.erase(it);
            } else {
                ++it;
            }
        }
    };

    // Power caps: which scopes are over their effective budget now.
    auto check_caps = [&](double now) {
        const int64_t e = epoch(now);
        bool over_any = false;
        for (Watched& w : watched) {
            const double budget = effective_budget_kw(m, tl, w.scope, w.index, e);
            if (budget < 0)
                continue;
            double draw = site_kw;
            if (w.scope == EventScope::Rack) {
                draw = domain_kw[w.index];
            } else if (w.scope == EventScope::Row) {
                draw = 0;
                for (int n : m.fault_domains[w.index].nodes)
                    draw += node_kw[n];
            }
            const bool over = draw > budget + 1e-6;
            if (over) {
                r.cap_peak_over_kw = std::max(r.cap_peak_over_kw, draw - budget);
                if (!w.over)
                    ++r.cap_violations;
            }
            w.over = over;
            over_any = over_any || over;
        }
        any_over = over_any;
        if (tl)
            for (size_t i = 0; i < tl->events.size(); ++i) {
                const CurtailmentEvent& ev = tl->events[i];
                SimEventResult& er = r.events[i];
                if (!ev.active_at(e))
                    continue;
                const int idx = ev.scope == EventScope::Site ? kNone : ev.scope_index;
                const double budget = effective_budget_kw(m, tl, ev.scope, idx, e);
                double draw = site_kw;
                if (ev.scope == EventScope::Rack)
                    draw = domain_kw[idx];
                else if (ev.scope == EventScope::Row) {
                    draw = 0;
                    for (int n : m.fault_domains[idx].nodes)
                        draw += node_kw[n];
                }
                er.budget_kw = budget;
                if (now <= er.start)
                    er.draw_at_start_kw = draw;
                er.peak_draw_kw = std::max(er.peak_draw_kw, draw);
                if (budget >= 0)
                    er.peak_over_kw = std::max(er.peak_over_kw, draw - budget);
                // Responded once its scope and every other is within budget.
                if (er.response_s < 0 && (budget < 0 || draw <= budget + 1e-6) && !over_any)
                    er.response_s = now - er.start;
            }
    };
    // Time over budget per event, between two event times.
    auto integrate_events = [&](double from, double to) {
        if (!tl || to <= from)
            return;
        for (size_t i = 0; i < tl->events.size(); ++i) {
            const CurtailmentEvent& ev = tl->events[i];
            SimEventResult& er = r.events[i];
            const int idx = ev.scope == EventScope::Site ? kNone : ev.scope_index;
            const double a = std::max(from, er.start), b = std::min(to, er.end);
            if (b <= a)
                continue;
            er.energy_kwh += site_kw * (b - a) / 3600.0;
            for (const Watched& w : watched)
                if (w.over && w.scope == ev.scope && w.index == idx) {
                    er.over_s += b - a;
                    const double late = std::max(a, er.start + opts.response_target_s);
                    if (b > late)
                        er.over_late_s += b - late;
                }
        }
    };

    while (!events.empty()) {
        const double now = events.top().t;
        const double dt = now - last_t;
        if (dt > 0 && curtail && !segments.empty() && segments.back().t1 == last_t &&
            segments.back().busy_gpus == busy_gpus && segments.back().busy_nodes == busy_nodes &&
            segments.back().stranded == stranded_now)
            segments.back().t1 = now;  // the controller's rounds change none of these
        else if (dt > 0)
            segments.push_back({last_t, now, busy_gpus, busy_nodes, stranded_now});
        power_integral += site_kw * dt;
        if (any_over)
            over_integral += dt;
        if (dt > 0)
            for (const SimEventResult& er : r.events)
                if (er.start <= last_t && last_t < er.end) {
                    r.energy_in_events_kwh += site_kw * dt / 3600.0;
                    r.nondeferrable_work_in_events_gpu_s += nd_rate * dt;
                    break;
                }
        if (dt > 0) {
            const double a = std::max(last_t, window_a), b = std::min(now, window_b);
            if (b > a)
                r.nondeferrable_work_window_gpu_s += nd_rate * (b - a);
        }
        integrate_events(last_t, now);
        last_t = now;
        std::vector<int> arrivals, releases;
        bool edge = false;      // the timeline changes now
        bool tick_due = false;  // the curtailment controller's loop comes round
        bool pass = false;      // something Slurm and job_submit/m2g react to (not the controller's loop)
        while (!events.empty() && events.top().t == now) {
            const Event e = events.top();
            events.pop();
            if (e.kind == kSignal) {
                edge = true;  // the passes below see the new time
                pass = true;
                ++inputs;
                continue;
            }
            if (e.kind == kTick) {
                tick_pending = false;
                tick_due = true;
                continue;
            }
            if (e.kind == kActuate) {
                while (!pending.empty() && pending.front().first <= now) {
                    const CurtailAction a = pending.front().second;
                    pending.pop_front();
                    actuate(a, now);
                }
                continue;
            }
            SimJobResult& job = jobs[e.job];
            if (e.kind == kEnd && curtail && (live_pos[e.job] < 0 || e.t != job.end))
                continue;  // stale: its end moved (cap, suspension) or it was requeued
            pass = true;
            if (e.kind == kEnd && curtail) {
                advance(e.job, now);
                drop_live(e.job);
                ++inputs;
                running.erase(running.find({job.end, e.job}));
                in_running[e.job] = 0;
                for (int n : job.placed)
                    adjust_node(n, job.gpus_per_node);
                ++version;
                book_w(job, -w_now[e.job]);
                w_now[e.job] = 0;
                if (!job.deferrable)
                    nd_rate -= job.gpus * speed[e.job];
                last_end = std::max(last_end, now);
            } else if (e.kind == kEnd) {
                running.erase(running.find({job.end, e.job}));
                for (int n : job.placed)
                    adjust_node(n, job.gpus_per_node);
                ++version;
                book_power(job, -1);
                if (!job.deferrable)
                    nd_rate -= job.gpus;
                last_end = std::max(last_end, now);
            } else if (e.kind == kSubmit) {
                if (!fits_empty(e.job, now)) {
                    ++r.rejected;
                    continue;
                }
                arrivals.push_back(e.job);
            } else if (e.kind == kRelease) {
                releases.push_back(e.job);
            }
            // kWake: nothing to change; the pass below retries with the wait over.
        }
        // The controller's loop and its actions alone start no scheduling
        // pass (the run stays the one CurtailMode=off makes until an
        // action changes something), but a requeue does.
        if (pass || !requeued.empty()) {
            if (power_aware) {
                view = view_at(now);  // with the ends applied
                admission.begin_pass(epoch(now));
                if (edge)
                    release_pass(now);
            }
            for (int j : releases)  // held jobs whose begin time came (not one a pass moved)
                if (adm_begin[j] && epoch(now) >= adm_begin[j])
                    release_held(j, now);
            for (int j : arrivals)
                if (submit(j, now))
                    queue_job(j, now);
            for (int j : requeued)  // back to job_submit/m2g, as a requeued job is
                if (submit(j, now))
                    queue_job(j, now);
            requeued.clear();
            schedule(now);
        }
        bool planned = false;
        if (curtail && (tick_due || edge))
            planned = plan_round(now);
        check_caps(now);
        r.peak_site_kw = std::max(r.peak_site_kw, site_kw);
        stranded_now = queue.empty() ? 0 : free_gpus;
        if (opts.record_site_power && (r.site_power.empty() || std::abs(r.site_power.back().second - site_kw) > 1e-9)) {
            if (!r.site_power.empty() && r.site_power.back().first == now)
                r.site_power.back().second = site_kw;
            else
                r.site_power.emplace_back(now, site_kw);
        }
        // The controller's loop runs while jobs hold GPUs; it stops when
        // nothing else can happen and it has nothing more to do.
        if (curtail && !tick_pending && !live.empty() && (!events.empty() || planned)) {
            events.push({now + static_cast<double>(ap.curtail_interval_sec), kTick, -1});
            tick_pending = true;
        }
    }

    // Metrics.
    std::vector<const SimJobResult*> done, by_class[3];
    double leaf_ratio_sum = 0, span_sum = 0, gpu_seconds = 0;
    int leaf_jobs = 0, contained = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        SimJobResult& j = jobs[i];
        r.deferred += j.deferred;
        if (j.start < 0) {
            j.end = -1;
            continue;
        }
        if (curtail && (live_pos[i] >= 0 || j.end < 0)) {
            // Still suspended, or requeued and never started again, when
            // nothing more could happen.
            if (live_pos[i] >= 0)
                advance(static_cast<int>(i), last_t);
            r.energy_kwh += energy_ws[i] / 3.6e6;
            j.end = -1;
            ++r.unfinished;
            continue;
        }
        done.push_back(&j);
        r.backfilled += j.backfilled;
        gpu_seconds += static_cast<double>(j.gpus) * duration[i];
        r.energy_kwh += curtail ? energy_ws[i] / 3.6e6 : j.w_gpu * j.gpus * duration[i] / 3.6e6;
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
    // Utilisation and stranding are averaged over the busy window: from
    // the submission at the 1% point (the load window's start) to the last
    // start or submission, whichever is later. Before it the trace ramps
    // up; after it nothing waits and the cluster only drains. A window of
    // no length (every job at one instant) falls back to the makespan.
    double win_a = jobs.empty() ? 0 : jobs[w0].submit, win_b = jobs.empty() ? 0 : jobs.back().submit;
    for (const SimJobResult* j : done)
        win_b = std::max(win_b, j->start);
    if (win_b <= win_a) {
        win_a = first_submit;
        win_b = last_end;
    }
    r.window_s = win_b - win_a;
    if (r.window_s > 0) {
        double stranded = 0, gpus_busy = 0, nodes_busy = 0;
        for (const Segment& sg : segments) {
            const double w = std::min(sg.t1, win_b) - std::max(sg.t0, win_a);
            if (w <= 0)
                continue;
            stranded += sg.stranded * w;
            gpus_busy += sg.busy_gpus * w;
            nodes_busy += sg.busy_nodes * w;
        }
        r.stranded_gpus = stranded / (static_cast<double>(total_gpus) * r.window_s);
        r.utilisation = gpus_busy / (static_cast<double>(total_gpus) * r.window_s);
        r.node_utilisation = nodes_busy / (static_cast<double>(nnodes) * r.window_s);
    }
    if (r.makespan_s > 0) {
        r.utilisation_makespan = gpu_seconds / (static_cast<double>(total_gpus) * r.makespan_s);
        r.mean_site_kw = power_integral / r.makespan_s;
    }
    r.cap_violation_s = over_integral;
    r.all = stats_of("all", done);
    const char* names[3] = {"node", "domain", "multi-domain"};
    for (int c = 0; c < 3; ++c)
        r.classes.push_back(stats_of(names[c], by_class[c]));
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    r.sim_jobs_per_s = r.wall_s > 0 ? static_cast<double>(jobs.size()) / r.wall_s : 0;
    if (curtail) {
        for (size_t i = 0; i < jobs.size(); ++i)
            if (!jobs[i].deferrable && jobs[i].end >= 0)
                r.nondeferrable_curtailed_s += jobs[i].capped_s + jobs[i].suspended_s;
    }
    if (curtail && opts.curtail_baseline) {
        // The same run with CurtailMode=off: what curtailment changed.
        Model off = m;
        off.admission.curtail_mode = CurtailMode::Off;
        SimOptions o = opts;
        o.curtail_baseline = false;
        const SimResult b = simulate(off, trace, o);
        r.baseline = true;
        r.baseline_energy_kwh = b.energy_kwh;
        r.baseline_energy_in_events_kwh = b.energy_in_events_kwh;
        r.baseline_nondeferrable_work_in_events_gpu_s = b.nondeferrable_work_in_events_gpu_s;
        r.baseline_nondeferrable_work_window_gpu_s = b.nondeferrable_work_window_gpu_s;
        r.nondeferrable_loss = b.nondeferrable_work_window_gpu_s > 0
                                   ? 1 - r.nondeferrable_work_window_gpu_s / b.nondeferrable_work_window_gpu_s
                                   : 0;
        r.nondeferrable_event_loss =
            b.nondeferrable_work_in_events_gpu_s > 0
                ? 1 - r.nondeferrable_work_in_events_gpu_s / b.nondeferrable_work_in_events_gpu_s
                : 0;
        r.energy_shifted_kwh = b.energy_in_events_kwh - r.energy_in_events_kwh;
        std::vector<double> stretch, delay;
        for (size_t i = 0; i < jobs.size() && i < b.job_results.size(); ++i) {
            const SimJobResult& j = jobs[i];
            const SimJobResult& j0 = b.job_results[i];
            if (j.start < 0 || j.end < 0 || j0.start < 0 || j0.end < 0)
                continue;
            const double c = j.end - j.submit, c0 = j0.end - j0.submit;
            if (!j.deferrable) {
                ++r.nondeferrable_jobs;
                r.nondeferrable_work_gpu_s += static_cast<double>(j.gpus) * duration[i];
                r.nondeferrable_delay_gpu_s += static_cast<double>(j.gpus) * (c - c0);
            } else {
                stretch.push_back(c0 > 0 ? c / c0 : 1.0);
                delay.push_back(c - c0);
            }
        }
        r.deferrable_jobs = static_cast<int>(stretch.size());
        if (!stretch.empty()) {
            r.deferrable_stretch_mean =
                std::accumulate(stretch.begin(), stretch.end(), 0.0) / static_cast<double>(stretch.size());
            r.deferrable_delay_mean_s =
                std::accumulate(delay.begin(), delay.end(), 0.0) / static_cast<double>(delay.size());
            r.deferrable_stretch_p95 = percentile(stretch, 0.95);
            r.deferrable_delay_p95_s = percentile(delay, 0.95);
        }
    }
    return r;
}


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
        kv("utilisation_makespan", num(r.utilisation_makespan));
        kv("window_s", num(r.window_s));
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
        kv("unusable_nodes", std::to_string(r.unusable_nodes));
        kv("deferred", std::to_string(r.deferred));
        kv("admission_rejected", std::to_string(r.admission_rejected));
        kv("energy_kwh", num(r.energy_kwh));
        kv("peak_site_kw", num(r.peak_site_kw));
        kv("mean_site_kw", num(r.mean_site_kw));
        kv("cap_violations", std::to_string(r.cap_violations));
        kv("cap_violation_s", num(r.cap_violation_s));
        kv("cap_peak_over_kw", num(r.cap_peak_over_kw));
        kv("unfinished", std::to_string(r.unfinished));
        kv("energy_in_events_kwh", num(r.energy_in_events_kwh));
        kv("nondeferrable_work_window_gpu_s", num(r.nondeferrable_work_window_gpu_s));
        kv("nondeferrable_work_in_events_gpu_s", num(r.nondeferrable_work_in_events_gpu_s));
        std::string ev = "[";
        for (const SimEventResult& e : r.events)
            ev += (ev.size() > 1 ? "," : "") + std::string("{\"id\":\"") + e.id + "\",\"scope\":\"" + e.scope +
                  "\",\"start_s\":" + num_t(e.start) + ",\"end_s\":" + num_t(e.end) + ",\"announced_s\":" +
                  num_t(e.announced) + ",\"budget_kw\":" + num(e.budget_kw) + ",\"draw_at_start_kw\":" +
                  num(e.draw_at_start_kw) + ",\"peak_draw_kw\":" + num(e.peak_draw_kw) + ",\"peak_over_kw\":" +
                  num(e.peak_over_kw) + ",\"response_s\":" + num(e.response_s) + ",\"over_s\":" + num(e.over_s) +
                  ",\"over_late_s\":" + num(e.over_late_s) + ",\"energy_kwh\":" + num(e.energy_kwh) + "}";
        kv("events", ev + "]");
        std::string c = "{\"mode\":\"" + r.curtail_mode + "\",\"actuation_delay_s\":" + num(r.actuation_delay_s) +
                        ",\"plans\":" + std::to_string(r.curtail_plans) + ",\"plans_skipped\":" +
                        std::to_string(r.curtail_plans_skipped) + ",\"caps\":" + std::to_string(r.curtail_caps) +
                        ",\"uncaps\":" + std::to_string(r.curtail_uncaps) + ",\"suspends\":" +
                        std::to_string(r.curtail_suspends) + ",\"resumes\":" + std::to_string(r.curtail_resumes) +
                        ",\"signals\":" + std::to_string(r.curtail_signals) + ",\"requeues\":" +
                        std::to_string(r.curtail_requeues) + ",\"requeue_lost_gpu_s\":" + num(r.requeue_lost_gpu_s) +
                        ",\"nondeferrable_curtailed_s\":" + num(r.nondeferrable_curtailed_s) +
                        ",\"baseline\":" + (r.baseline ? "true" : "false");
        if (r.baseline)
            c += ",\"nondeferrable_jobs\":" + std::to_string(r.nondeferrable_jobs) + ",\"nondeferrable_work_gpu_s\":" +
                 num(r.nondeferrable_work_gpu_s) + ",\"nondeferrable_delay_gpu_s\":" + num(r.nondeferrable_delay_gpu_s) +
                 ",\"baseline_nondeferrable_work_window_gpu_s\":" + num(r.baseline_nondeferrable_work_window_gpu_s) +
                 ",\"baseline_nondeferrable_work_in_events_gpu_s\":" +
                 num(r.baseline_nondeferrable_work_in_events_gpu_s) + ",\"nondeferrable_loss\":" +
                 num(r.nondeferrable_loss) + ",\"nondeferrable_event_loss\":" + num(r.nondeferrable_event_loss) +
                 ",\"deferrable_jobs\":" +
                 std::to_string(r.deferrable_jobs) + ",\"deferrable_stretch_mean\":" +
                 num(r.deferrable_stretch_mean) + ",\"deferrable_stretch_p95\":" + num(r.deferrable_stretch_p95) +
                 ",\"deferrable_delay_mean_s\":" + num(r.deferrable_delay_mean_s) + ",\"deferrable_delay_p95_s\":" +
                 num(r.deferrable_delay_p95_s) + ",\"baseline_energy_kwh\":" + num(r.baseline_energy_kwh) +
                 ",\"baseline_energy_in_events_kwh\":" + num(r.baseline_energy_in_events_kwh) +
                 ",\"energy_shifted_kwh\":" + num(r.energy_shifted_kwh);
        kv("curtailment", c + "}");
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
    line("utilisation", num(r.utilisation) + " of GPU time over the " + num(r.window_s) +
                            " s busy window (nodes: " + num(r.node_utilisation) + "); " +
                            num(r.utilisation_makespan) + " over the makespan of " + num(r.makespan_s) + " s");
    for (const SimStats& s : r.classes) {
        if (!s.jobs)
            continue;
        line(("queue delay " + s.name).c_str(),
             std::to_string(s.jobs) + " jobs: mean " + num(s.delay_mean) + " s, p95 " + num(s.delay_p95) +
                 " s, p99 " + num(s.delay_p99) + " s; completion mean " + num(s.completion_mean) + " s, p95 " +
                 num(s.completion_p95) + " s, p99 " + num(s.completion_p99) + " s");
    }
    if (r.unusable_nodes)
        line("unusable nodes", std::to_string(r.unusable_nodes) + " (down or degraded in the timeline)");
    if (r.deferred || r.admission_rejected)
        line("admission", std::to_string(r.deferred) + " jobs deferred or paced, " +
                              std::to_string(r.admission_rejected) + " rejected");
    line("power", "peak " + num(r.peak_site_kw) + " kW, mean " + num(r.mean_site_kw) + " kW, " +
                      num(r.energy_kwh) + " kWh (GPU power of running jobs)");
    line("cap violations", std::to_string(r.cap_violations) + " (" + num(r.cap_violation_s) +
                               " s over a budget, largest excess " + num(r.cap_peak_over_kw) + " kW)");
    for (const SimEventResult& e : r.events)
        line(("event " + e.id).c_str(),
             e.scope + " " + num(e.start) + ".." + num(e.end) + " s, budget " + num(e.budget_kw) + " kW, draw at start " +
                 num(e.draw_at_start_kw) + " kW, peak " + num(e.peak_draw_kw) + " kW, " +
                 (e.response_s < 0 ? std::string("still over at its end")
                                   : "under budget after " + num(e.response_s) + " s") +
                 ", " + num(e.over_s) + " s over");
    if (r.curtail_mode != "off") {
        for (const SimEventResult& e : r.events)
            line(("event " + e.id + " response").c_str(),
                 "announced at " + num(e.announced) + " s, " + num(e.over_late_s) +
                     " s over after the response target, largest excess " + num(std::max(0.0, e.peak_over_kw)) +
                     " kW, " + num(e.energy_kwh) + " kWh drawn during it");
        line("curtailment", r.curtail_mode + ", actuation delay " + num(r.actuation_delay_s) + " s: " +
                                std::to_string(r.curtail_plans) + " plans (" +
                                std::to_string(r.curtail_plans_skipped) + " rounds on unchanged inputs skipped), " +
                                std::to_string(r.curtail_caps) +
                                " caps, " + std::to_string(r.curtail_uncaps) + " uncaps, " +
                                std::to_string(r.curtail_suspends) + " suspends, " +
                                std::to_string(r.curtail_resumes) + " resumes, " + std::to_string(r.curtail_signals) +
                                " checkpoint signals, " + std::to_string(r.curtail_requeues) + " requeues (" +
                                num(r.requeue_lost_gpu_s) + " GPU-s lost)" +
                                (r.unfinished ? ", " + std::to_string(r.unfinished) + " jobs unfinished" : ""));
        if (r.baseline) {
            line("vs CurtailMode=off",
                 "non-deferrable throughput loss " + num(100 * r.nondeferrable_loss) + "% (" +
                     num(r.nondeferrable_work_window_gpu_s) + " of " +
                     num(r.baseline_nondeferrable_work_window_gpu_s) + " GPU-s of work in the load window), " +
                     num(100 * r.nondeferrable_event_loss) + "% during events (" +
                     num(r.nondeferrable_work_in_events_gpu_s) + " of " +
                     num(r.baseline_nondeferrable_work_in_events_gpu_s) + " GPU-s; " +
                     std::to_string(r.nondeferrable_jobs) + " jobs, " + num(r.nondeferrable_delay_gpu_s) +
                     " GPU-s later to completion, " + num(r.nondeferrable_curtailed_s) +
                     " s curtailed); deferrable completion x" +
                     num(r.deferrable_stretch_mean) + " mean, x" + num(r.deferrable_stretch_p95) + " p95 (+" +
                     num(r.deferrable_delay_mean_s) + " s mean, +" + num(r.deferrable_delay_p95_s) + " s p95, " +
                     std::to_string(r.deferrable_jobs) + " jobs); " + num(r.energy_shifted_kwh) +
                     " kWh moved out of events (" + num(r.energy_in_events_kwh) + " of " +
                     num(r.baseline_energy_in_events_kwh) + " kWh drawn in them; " + num(r.energy_kwh) + " of " +
                     num(r.baseline_energy_kwh) + " kWh in all)");
        }
    }
    line("speed", num(r.sim_jobs_per_s) + " jobs/s (" + num(r.wall_s) + " s)");
    return o;
}

std::string format_sim_power(const SimResult& r)
{
    std::string o = "t,site_kw\n";
    char buf[80];
    for (const auto& [t, kw] : r.site_power) {
        std::snprintf(buf, sizeof buf, "%.15g,%.6f\n", t, std::max(0.0, kw));
        o += buf;
    }
    return o;
}

std::string format_sim_jobs(const Model& m, const SimResult& r)
{
    auto num = [](double v) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.15g", v);
        return std::string(buf);
    };
    std::string o = "id,gpus,nodes,submit,eligible,start,end,domains,domain_lb,leaves,w_gpu,admission,nodelist\n";
    std::vector<std::string> names;
    for (const SimJobResult& j : r.job_results) {
        names.clear();
        for (int n : j.placed)
            names.push_back(m.nodes[n].name);
        std::string adm = j.admission;
        for (char& c : adm)
            if (c == ',' || c == '"' || c == '\n')
                c = ' ';
        o += j.id + "," + std::to_string(j.gpus) + "," + std::to_string(j.nodes) + "," + num(j.submit) + "," +
             num(j.eligible) + "," + num(j.start) + "," + num(j.end) + "," + std::to_string(j.domains) + "," +
             std::to_string(j.domain_lb) + "," + std::to_string(j.leaves) + "," + num(j.w_gpu) + "," + adm + ",\"" +
             (names.empty() ? "" : hostlist_compress(names)) + "\"\n";
    }
    return o;
}

}  // namespace m2g
