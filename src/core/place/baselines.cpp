// m2g core: the baseline placers (see baselines.hpp).
#include "core/place/baselines.hpp"

#include <algorithm>
#include <functional>
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

// cons_tres with topology/tree as Slurm 26.05's _eval_nodes_topo()
// (topology/tree/eval_nodes_tree.c, TopologyParam unset) evaluates a job
// of whole nodes, every node of equal weight, on the switches of a
// topology.conf in its order:
//   the top switch: the highest-level one with enough free nodes, ties to
//     the last; none: ESLURM_TOPO_INSUFFICIENT_RESOURCES, EVAL_ACTION_BREAK
//     (the job waits); only the nodes under it count from then on;
//   then level-0 switches one at a time (_topo_choose_best_switch()): the
//     first with free nodes, replaced by a later one that is closer in
//     switch hops to those already chosen (_topo_add_dist()) and holds
//     the rest, or as close and a better fit (_topo_compare_switches():
//     both hold the rest, the fewer free nodes; one does, that one;
//     neither, their parents compared the same way, then the more free
//     nodes, then the lower level); each gives its free nodes in node
//     order, and its count comes off its ancestors (_decrement_node_cnt()).
// Nodes under no switch are never placed. Where Slurm would climb past a
// root (two level-0 switches at different depths, neither holding the
// rest), the comparison stops there.
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
        const int ns = static_cast<int>(sw_.size());
        for (int s = 0; s < ns; ++s)
            if (sw_[s].level == 0) {
                std::sort(sw_[s].nodes.begin(), sw_[s].nodes.end(),
                          [&](int a, int b) { return m.nodes[a].rank < m.nodes[b].rank; });
                leaf_of_switch_.push_back(s);
            }
        node_leaf_.assign(m.nodes.size(), kNone);
        for (size_t l = 0; l < leaf_of_switch_.size(); ++l)
            for (int n : sw_[leaf_of_switch_[l]].nodes)
                node_leaf_[n] = static_cast<int>(l);
        subtree_leaves_.resize(ns);
        for (size_t l = 0; l < leaf_of_switch_.size(); ++l)
            for (int s = leaf_of_switch_[l]; s != kNone; s = sw_[s].parent)
                subtree_leaves_[s].push_back(static_cast<int>(l));
        // Hops between switches through the tree; kFar across trees (Slurm's
        // switches_dist, INFINITE).
        std::vector<int> depth(ns, 0), root(ns);
        for (int s = 0; s < ns; ++s) {
            int r = s;
            while (sw_[r].parent != kNone) {
                r = sw_[r].parent;
                ++depth[s];
            }
            root[s] = r;
        }
        dist_.assign(static_cast<size_t>(ns) * ns, kFar);
        for (int a = 0; a < ns; ++a)
            for (int b = 0; b < ns; ++b) {
                if (root[a] != root[b])
                    continue;
                int x = a, y = b, hops = 0;
                while (x != y) {
                    if (depth[x] >= depth[y] && sw_[x].parent != kNone) {
                        x = sw_[x].parent;
                    } else {
                        y = sw_[y].parent;
                    }
                    ++hops;
                }
                dist_[static_cast<size_t>(a) * ns + b] = hops;
            }
        leaf_free_.resize(leaf_of_switch_.size());
        cnt_.resize(ns);
        far_.resize(ns);
    }
    bool place(int nodes, const std::vector<uint8_t>& free, std::vector<int>& out) override
    {
        out.clear();
        const int ns = static_cast<int>(sw_.size());
        std::fill(leaf_free_.begin(), leaf_free_.end(), 0);
        for (size_t n = 0; n < free.size(); ++n)
            if (free[n] && node_leaf_[n] != kNone)
                ++leaf_free_[node_leaf_[n]];
        for (int s = 0; s < ns; ++s) {
            cnt_[s] = 0;
            for (int l : subtree_leaves_[s])
                cnt_[s] += leaf_free_[l];
        }
        // The top switch: the highest level with enough, ties to the last.
        int top = -1;
        for (int s = 0; s < ns; ++s)
            if (cnt_[s] >= nodes && (top < 0 || sw_[s].level >= sw_[top].level))
                top = s;
        if (top < 0)
            return false;
        // Only the nodes under it from here on.
        in_top_.assign(leaf_of_switch_.size(), 0);
        for (int l : subtree_leaves_[top])
            in_top_[l] = 1;
        for (int s = 0; s < ns; ++s) {
            cnt_[s] = 0;
            for (int l : subtree_leaves_[s])
                if (in_top_[l])
                    cnt_[s] += leaf_free_[l];
        }
        std::fill(far_.begin(), far_.end(), 0);
        int rem = nodes, prev = rem + 1;
        while (rem > 0 && prev != rem) {
            prev = rem;
            int best = -1;
            for (int s : leaf_of_switch_) {
                // _topo_choose_best_switch()
                if (best < 0 || far_[s] >= kFar || cnt_[s] == 0) {
                    if (cnt_[s] > 0 && far_[s] < kFar)
                        best = s;
                    continue;
                }
                bool i_fit = false;
                const int tcs = compare(s, best, rem, i_fit);
                if ((far_[s] < far_[best] && i_fit) || (far_[s] == far_[best] && tcs > 0))
                    best = s;
            }
            if (best < 0)
                break;
            for (int s = 0; s < ns; ++s) {  // _topo_add_dist()
                const int d = dist_[static_cast<size_t>(best) * ns + s];
                far_[s] = d >= kFar || far_[s] >= kFar ? kFar : far_[s] + d;
            }
            for (int n : sw_[best].nodes) {
                if (rem == 0)
                    break;
                if (free[n]) {  // a level-0 switch is chosen once: its count goes to 0
                    out.push_back(n);
                    --rem;
                }
            }
            const int k = cnt_[best];  // _decrement_node_cnt()
            for (int s = best; s != kNone; s = sw_[s].parent)
                cnt_[s] = cnt_[s] <= k ? 0 : cnt_[s] - k;
            cnt_[best] = 0;
        }
        if (rem > 0) {
            out.clear();
            return false;
        }
        std::sort(out.begin(), out.end());
        return true;
    }

  private:
    static constexpr int kFar = 1 << 28;
    // _topo_compare_switches(): 1 when `i` is the better fit for `rem`
    // nodes, -1 when `j` is, 0 when neither.
    int compare(int i, int j, int rem, bool& i_fit) const
    {
        for (;;) {
            const bool fi = cnt_[i] >= rem, fj = cnt_[j] >= rem;
            i_fit = fi;
            if (fi && fj) {
                if (cnt_[i] != cnt_[j])
                    return cnt_[i] < cnt_[j] ? 1 : -1;
                break;
            }
            if (fi)
                return 1;
            if (fj)
                return -1;
            const int pi = sw_[i].parent, pj = sw_[j].parent;
            if (pi == kNone || pj == kNone || pi == pj)
                break;
            i = pi;
            j = pj;
        }
        if (cnt_[i] != cnt_[j])
            return cnt_[i] > cnt_[j] ? 1 : -1;
        if (sw_[i].level != sw_[j].level)
            return sw_[i].level < sw_[j].level ? 1 : -1;
        return 0;
    }

    std::vector<Sw> sw_;
    std::vector<int> leaf_of_switch_;  // switch index of each level-0 switch
    std::vector<int> node_leaf_;
    std::vector<std::vector<int>> subtree_leaves_;
    std::vector<int> dist_;  // hops, switch x switch
    std::vector<int> leaf_free_, cnt_, far_;
    std::vector<uint8_t> in_top_;
};

// Slurm 26.05's topology/block as eval_nodes_block() (topology/block/
// eval_nodes_block.c) evaluates a job of whole nodes, every node of equal
// weight: the base blocks are slurm_blocks(m), the very list `m2g
// topology export --format=block` writes, in its order, and the block
// levels are `sizes` (BlockSizes) or, empty, Slurm's default (levels 0-3,
// block_record.c). For a job (or segment) of N nodes:
//   _get_block_level(): the level is the smallest configured one of at
//     least ceil(log2(ceil(N / B))) (B: the base block's node count, the
//     first BlockSizes value or the first block's size), none: the whole
//     topology is one block; the "llblock" level is the largest configured
//     one below, and the job may use at most max_llblock = ceil(N / its
//     size) llblocks;
//   a block (an aligned group of 2^level base blocks) qualifies when its
//     max_llblock fullest llblocks hold N free nodes; of those, the one
//     with the fewest free nodes, ties to the last (`bnc <= block_node_cnt`);
//     none: ESLURM_TOPO_NO_FIT, EVAL_ACTION_BREAK: the job waits (it does
//     not move up a level);
//   inside it, _choose_best_bblock() again and again: base blocks in an
//     llblock already used first, then the llblock that holds the rest
//     with the fewest free nodes (else the fullest), then the base block
//     that holds the rest with the fewest free nodes (else the fullest),
//     ties to the last; each chosen base block gives its free nodes in
//     node order until the job has enough; a new llblock past max_llblock,
//     or no progress, fails (ESLURM_TOPO_INSUFFICIENT_RESOURCES).
// With `segments` (block-seg: every job of more nodes than the largest
// base block submitted with --segment=S, S the largest divisor of N that
// fits one), the N/S segments are evaluated one after the other as jobs of
// S nodes on the nodes the earlier ones left (the next_segment loop); one
// that finds no block fails the job (ESLURM_TOPO_SEGMENT_NO_FIT).
class BlockPlacer : public Placer {
  public:
    BlockPlacer(const Model& m, bool segments, const std::vector<int>& sizes) : segments_(segments)
    {
        const SlurmBlocks sb = slurm_blocks(m);
        if (sb.blocks.empty())
            throw Error("topology/block: the topology has no NVLink domain and no switch with nodes, so no block");
        for (const auto& [name, nodes] : sb.blocks) {
            std::vector<int> sorted = nodes;
            std::sort(sorted.begin(), sorted.end(), [&](int a, int b) { return m.nodes[a].rank < m.nodes[b].rank; });
            largest_ = std::max(largest_, static_cast<int>(sorted.size()));
            block_nodes_.push_back(std::move(sorted));
        }
        node_block_.assign(m.nodes.size(), kNone);
        for (size_t b = 0; b < block_nodes_.size(); ++b)
            for (int n : block_nodes_[b])
                node_block_[n] = static_cast<int>(b);
        levels_ = block_levels(sizes, static_cast<int>(block_nodes_[0].size()), bnc_);
        const size_t nb = block_nodes_.size();
        free_.resize(nb);
        nob_.resize(nb);
        required_.resize(nb);
    }

    // block_record.c: BlockSizes parsed as _read_topo_file() does (the
    // first size is the base block; each a power-of-two multiple of it, at
    // most 2^15), else levels 0-3 on the first block's node count.
    static uint32_t block_levels(const std::vector<int>& sizes, int first_block, int& bnc)
    {
        if (sizes.empty()) {
            bnc = first_block;
            return 0xF;
        }
        bnc = sizes[0];
        uint32_t levels = 0;
        for (int s : sizes) {
            if (s <= 0 || s % bnc != 0)
                throw Error("BlockSizes: " + std::to_string(s) + " is not a multiple of the base block's " +
                            std::to_string(bnc) + " nodes (expected the base block's size, then multiples of it)");
            const int k = s / bnc;
            int lv = 0;
            while ((1 << lv) < k)
                ++lv;
            if ((1 << lv) != k || lv > 15)
                throw Error("BlockSizes: " + std::to_string(s) + " is not the base block's " + std::to_string(bnc) +
                            " nodes times a power of two up to 2^15");
            levels |= 1u << lv;
        }
        return levels;
    }

    bool place(int nodes, const std::vector<uint8_t>& free, std::vector<int>& out) override
    {
        out.clear();
        std::fill(free_.begin(), free_.end(), 0);
        for (size_t n = 0; n < free.size(); ++n)
            if (free[n] && node_block_[n] != kNone)
                ++free_[node_block_[n]];
        avail_ = free;
        int seg = nodes;
        if (segments_ && nodes > largest_) {
            seg = largest_;
            while (nodes % seg != 0)
                --seg;
        }
        for (int k = nodes / seg; k > 0; --k)
            if (!eval(seg, out)) {
                out.clear();
                return false;
            }
        std::sort(out.begin(), out.end());
        return true;
    }

  private:
    // Highest level set at or below `from` (bit_fls_from_bit), -1: none.
    int fls_from(int from) const
    {
        for (int l = from; l >= 0; --l)
            if (levels_ & (1u << l))
                return l;
        return -1;
    }
    // Lowest level set at or above `from` (bit_ffs_from_bit), -1: none.
    int ffs_from(int from) const
    {
        for (int l = from; l < 32; ++l)
            if (levels_ & (1u << l))
                return l;
        return -1;
    }

    // One eval_nodes_block() pass for `rem` nodes on avail_ (free_ its
    // count per base block): appends them to `out` and takes them out of
    // avail_ and free_.
    bool eval(int rem, std::vector<int>& out)
    {
        const int nb = static_cast<int>(block_nodes_.size());
        // _get_block_level()
        const int per = (rem + bnc_ - 1) / bnc_;
        int want = 0;
        while ((1 << want) < per)
            ++want;
        const int ll_level = want > 0 ? std::max(fls_from(want - 1), 0) : 0;
        const int level = ffs_from(want);
        const int bpb = level < 0 ? nb : 1 << level;           // base blocks per block
        const int block_cnt = (nb + bpb - 1) / bpb;
        const int bpl = 1 << ll_level;                         // base blocks per llblock
        const int ll_size = bpl * bnc_;
        int max_ll = (rem + ll_size - 1) / ll_size;
        const bool use_ll = bpb != bpl * max_ll;
        const int ll_cnt = (nb + bpl - 1) / bpl;

        // The block: its max_ll fullest llblocks hold the job; then the
        // fewest free nodes, ties to the last.
        int best = -1, best_bnc = 0;
        for (int g = 0; g < block_cnt; ++g) {
            const int lo = g * bpb, hi = std::min(nb, lo + bpb);
            int bnc = 0;
            for (int b = lo; b < hi; ++b)
                bnc += free_[b];
            int avail = bnc;
            if (use_ll) {
                ll_.clear();
                for (int l = lo / bpl; l < std::min(ll_cnt, lo / bpl + bpb / bpl); ++l) {
                    int c = 0;
                    for (int b = l * bpl; b < std::min(nb, (l + 1) * bpl); ++b)
                        c += free_[b];
                    ll_.push_back(c);
                }
                std::sort(ll_.begin(), ll_.end(), std::greater<int>());
                avail = 0;
                for (int j = 0; j < std::min(max_ll, static_cast<int>(ll_.size())); ++j)
                    avail += ll_[j];
            }
            if (avail < rem)
                continue;
            if (best < 0 || bnc <= best_bnc) {
                best = g;
                best_bnc = bnc;
            }
        }
        if (best < 0)
            return false;  // ESLURM_TOPO_NO_FIT: waits
        const int lo = best * bpb, hi = std::min(nb, lo + bpb);

        // The base blocks of the block, as _choose_best_bblock() ranks them.
        std::fill(required_.begin(), required_.end(), 0);
        std::fill(nob_.begin(), nob_.end(), 0);
        nol_.assign(use_ll ? ll_cnt : 0, 0);
        for (int b = lo; b < hi; ++b) {
            nob_[b] = free_[b];
            if (use_ll)
                nol_[b / bpl] += nob_[b];
        }
        auto same = [&](int a, int b) { return (a >> ll_level) == (b >> ll_level); };
        int prev = rem + 1;
        while (rem > 0 && prev != rem) {
            prev = rem;
            int bi = -1;
            bool best_fit = false, best_same = true;
            for (int i = lo; i < hi; ++i) {
                if (required_[i])
                    continue;
                const bool fit = nob_[i] >= rem;
                if (use_ll && !(bi >= 0 && same(bi, i))) {
                    bool same_block = false;
                    for (int j = (i >> ll_level) << ll_level; j < nb && j < ((i >> ll_level) + 1) << ll_level; ++j)
                        if (required_[j] && (same_block = same(j, i)))
                            break;
                    if (bi < 0 || (same_block && !best_same)) {
                        bi = i, best_fit = fit, best_same = same_block;
                        continue;
                    }
                    if (!same_block && best_same)
                        continue;
                    const int bl = nol_[bi >> ll_level], il = nol_[i >> ll_level];
                    const bool il_fit = il >= rem, bl_fit = bl >= rem;
                    if (il_fit != bl_fit) {
                        if (il_fit)
                            bi = i, best_fit = fit, best_same = same_block;
                        continue;
                    }
                    if (il != bl) {
                        // both hold the rest: the emptier; neither: the fuller
                        if (il_fit ? il < bl : il > bl)
                            bi = i, best_fit = fit, best_same = same_block;
                        continue;
                    }
                }
                if (bi < 0 || (fit && !best_fit) || (!fit && !best_fit && nob_[i] >= nob_[bi]) ||
                    (fit && nob_[i] <= nob_[bi]))
                    bi = i, best_fit = fit;
            }
            if (bi < 0)
                break;
            if (max_ll <= 0 && !best_same)
                break;  // no llblock left
            required_[bi] = 1;
            for (int n : block_nodes_[bi]) {
                if (rem == 0)
                    break;
                if (avail_[n]) {
                    avail_[n] = 0;
                    --free_[bi];
                    out.push_back(n);
                    --rem;
                }
            }
            if (!best_same)
                --max_ll;
        }
        return rem == 0;
    }

    bool segments_;
    int largest_ = 0;                            // nodes in the largest base block
    int bnc_ = 0;                                // the base block's node count (bblock_node_cnt)
    uint32_t levels_ = 0;                        // block levels set (block_levels)
    std::vector<std::vector<int>> block_nodes_;  // rank order
    std::vector<int> node_block_;
    std::vector<uint8_t> avail_;  // free nodes not yet taken by this job
    std::vector<int> free_;       // avail_ per base block
    std::vector<int> nob_, nol_, ll_;
    std::vector<uint8_t> required_;
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

std::unique_ptr<Placer> make_block_placer(const Model& m, bool segments, const std::vector<int>& block_sizes)
{
    return std::make_unique<BlockPlacer>(m, segments, block_sizes);
}

std::vector<int> export_block_sizes(const Model& m)
{
    const std::vector<size_t> s = slurm_blocks(m).sizes;
    return std::vector<int>(s.begin(), s.end());
}

}  // namespace m2g
