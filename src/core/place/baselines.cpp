// m2g core: the baseline placers (see baselines.hpp).
#include "core/place/baselines.hpp"

#include <algorithm>
#include <string>

#include "core/base/error.hpp"
#include "core/model/export.hpp"

namespace m2g {

namespace {

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

}  // namespace

std::unique_ptr<Placer> make_firstfit_placer(const Model& m)
{
    return std::make_unique<FirstFitPlacer>(m);
}

std::unique_ptr<Placer> make_tree_placer(const Model& m, bool nvl_domains)
{
    return std::make_unique<TreePlacer>(m, nvl_domains ? TreePlacer::nvl(m) : TreePlacer::fabric(m));
}

std::unique_ptr<Placer> make_block_placer(const Model& m, bool segments, const char* policy)
{
    return std::make_unique<BlockPlacer>(m, segments, policy);
}

}  // namespace m2g
