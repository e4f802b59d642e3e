// m2g core: writing the model out — as Slurm topology files (so stock
// topology plugins can run from m2g.conf as the one source of truth), as
// m2g.conf (after an import), and as a readable tree for people.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model/model.hpp"

namespace m2g {

// The model as Slurm's switch records see it: every NVLink domain is a
// level-0 switch holding its nodes, fabric switches sit above. Both the
// topology.conf export and topology/m2g build from this one list, so what
// `m2g topology export` prints is what the plugin loads.
struct SlurmSwitch {
    std::string name;
    int level = 0;                // Slurm's: 0 holds nodes
    uint32_t link_speed = 0;      // Gb/s, 0 when not declared
    std::vector<int> nodes;       // model node indices (level 0 only)
    std::vector<int> children;    // indices into the SlurmSwitch list
    int parent = kNone;           // index into the SlurmSwitch list
    int domain = kNone;           // model domain, when this is one
    int fabric_switch = kNone;    // model switch, when this is one
};

// Children come before parents.
std::vector<SlurmSwitch> slurm_switches(const Model& m);

// Node indices as one Slurm hostlist ("r01n[01-18]"); indices outside the
// model are skipped, names hostlist_compress refuses are joined by ",".
std::string node_hostlist(const Model& m, const std::vector<int>& nodes);

// topology/block's view: one block per NVLink domain with nodes, then one
// per leaf switch that holds nodes directly; BlockSizes double from the
// smallest block up to the block count.
struct SlurmBlocks {
    std::vector<std::pair<std::string, std::vector<int>>> blocks;  // name, model node indices
    std::vector<size_t> sizes;
};
SlurmBlocks slurm_blocks(const Model& m);

// Slurm topology/tree topology.conf text.
std::string export_slurm_tree(const Model& m);

// Slurm topology/block topology.conf text (Slurm 23.11 and later): one
// block per NVLink domain (nodes outside domains: one block per leaf
// switch) and BlockSizes doubling from the smallest block.
std::string export_slurm_block(const Model& m);

// m2g.conf text that reads back into the same model.
std::string write_m2g_conf(const Model& m);

// A readable tree with node and GPU counts per level.
std::string render_tree(const Model& m);

}  // namespace m2g
