// m2g core: the baseline placers — how stock Slurm chooses nodes, for the
// simulator's baselines and for what select/m2g leaves to cons_tres there
// (doc/simulator.md, "The policies", says which Slurm code each follows).
// Each takes a job of whole nodes among the free ones.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model/model.hpp"

namespace m2g {

// Chooses nodes for a job of `nodes` whole nodes among the free ones: a
// baseline policy, or cons_tres for what select/m2g leaves to it.
class Placer {
  public:
    virtual ~Placer() = default;
    virtual bool place(int nodes, const std::vector<uint8_t>& free, std::vector<int>& out) = 0;
};

// The first free nodes in rank order.
std::unique_ptr<Placer> make_firstfit_placer(const Model& m);

// cons_tres with topology/tree: on the fabric alone (leaf switches hold the
// nodes), or with `nvl_domains`, on what `m2g topology export --format=tree`
// writes (the NVLink domains the lowest switches).
std::unique_ptr<Placer> make_tree_placer(const Model& m, bool nvl_domains);

// Slurm 26.05 topology/block (eval_nodes_block()) on the blocks `m2g
// topology export --format=block` writes, with `block_sizes` as its
// BlockSizes (node counts, the first the base block's; empty: Slurm's
// default levels); with `segments`, every job of more nodes than the
// largest block submitted with --segment (block-seg). A job no block at
// its level can hold is not placed: it waits, as under Slurm. Throws
// Error when the sizes are not ones Slurm accepts or there is no block.
std::unique_ptr<Placer> make_block_placer(const Model& m, bool segments, const std::vector<int>& block_sizes);

// The BlockSizes `m2g topology export --format=block` writes for `m`.
std::vector<int> export_block_sizes(const Model& m);

}  // namespace m2g
