// m2g core: the placement engine behind select/m2g and `m2g place`.
//
// Given the nodes Slurm offers a job, the model and the latest health and
// power state, choose which nodes the job should run on:
//   - fit the job in the fewest NVLink domains; among domains that fit,
//     the one with the smallest leftover (best fit, against fragmentation);
//   - a job larger than a domain takes whole domains under the lowest
//     switch that can hold it (fewest leaves, then fewest spines), largest
//     children first and the best-fitting child for the remainder;
//   - segments of S nodes each stay inside one domain;
//   - degraded nodes, domains with NVLink faults and racks over their power
//     or thermal limit are not used; an optional number of free nodes per
//     domain is kept spare for failover;
//   - strict intent (or prefer, before its wait runs out) accepts only a
//     placement that meets the intent, otherwise the job waits with a reason.
// Every decision carries a score and a one-line reason.
//
// Cost: one pass over the nodes plus work per domain and switch; the
// scratch buffers live in the Engine and are reused, so the hot path does
// not allocate per node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job/intent.hpp"
#include "core/job/verdict.hpp"
#include "core/model/model.hpp"
#include "core/model/state.hpp"

namespace m2g {

struct PlacementRequest {
    int nodes = 1;           // nodes the job needs
    int segment = 0;         // nodes per segment, 0: none
    Locality locality = Locality::Prefer;
    LocalityLevel level = LocalityLevel::NVLink;
    bool fallback = false;   // prefer: the wait is over, best effort is accepted
    int spare_per_domain = 0;
    bool explain = true;     // false: a probe nobody reads; Placement::reason stays empty
    // A probe that asks only whether the job places (ok, meets_intent,
    // domains_used, top_switch): no nodes are chosen, no reason written.
    bool answer_only = false;
    // A job that takes part of each node's GPUs (gpus_per_node > 0) and the
    // GPUs free on each model node now: within a domain it goes to the nodes
    // it leaves the fewest GPUs free on (best fit), so whole nodes stay
    // whole for jobs that need them. Null: rank order.
    int gpus_per_node = 0;
    const std::vector<int>* node_free_gpus = nullptr;
    // Slurm's scheduling weight of each model node (lower is used first),
    // when they differ; null: all equal. As topology/block picks a block
    // (eval_nodes_block() in src/plugins/topology/block/eval_nodes_block.c):
    // a job that fits one group goes to the group holding the lightest
    // usable node, then by best fit, and within a group to its lightest
    // nodes first.
    const std::vector<uint64_t>* node_weight = nullptr;
};

struct Placement {
    bool ok = false;
    bool meets_intent = false;
    std::vector<int> nodes;   // model node indices, rank order
    std::vector<int> domains; // groups used: domain index, or -1-node for a node outside domains
    int domains_used = 0;
    int domain_lower_bound = 0;
    std::vector<int> leaves;  // leaf switches used
    int top_switch = kNone;   // lowest switch holding the job (kNone: one group or no fabric)
    int leftover = 0;         // usable nodes left free in the groups used
    double score = 0;         // lower is better; 0 is ideal
    std::string reason;       // one line for people
    // !ok: why the job waits (NvlinkDomain, Switch, Nodes; Other for a
    // request the engine cannot serve) and, for the first three, the nodes
    // it waits for (the request's).
    WaitCause wait = WaitCause::None;
    int need = 0;
};

class Engine {
  public:
    explicit Engine(const Model& m);

    // usable[i] != 0: Slurm offers model node i to this job and it has the
    // resources the job needs there. Sized model.nodes.size().
    Placement place(const PlacementRequest& req, const std::vector<uint8_t>& usable, const ClusterState& state);

    const Model& model() const { return m_; }

  private:
    // A group is what NVLink joins: a domain, or a node in no domain.
    struct Group {
        std::vector<int> nodes;  // rank order
        int size = 0;            // declared capacity
        int parent = kNone;      // switch
        int domain = kNone;
        int rank = 0;
    };
    struct Child {
        bool is_group;
        int index;
    };

    int capacity(const Child& c) const;  // in units (nodes, or segments)
    void select_groups(int sw, int need, std::vector<std::pair<int, int>>& picks) const;
    void fill_group(int g, int units, Placement& out);
    void best_fit_nodes(const Group& gr, int want);
    std::string group_name(int g) const;
    int lower_bound(int nodes, int segment) const;
    bool largest_hold(int need, int count) const;
    // place()'s steps.
    std::string count_units(const PlacementRequest& req);
    void sum_switch_units();
    int best_fit_group(int need) const;
    int best_fit_switch(int need);  // sets best_switch_groups_
    void take(int best_group, int best_switch, int need, Placement& out);
    std::string wait_reason(const PlacementRequest& req, const Placement& out, int most,
                            const std::string& avoided) const;
    std::string placed_reason(const PlacementRequest& req, const Placement& out, const std::string& avoided) const;

    const Model& m_;
    std::vector<Group> groups_;
    std::vector<int> node_group_;                 // node -> group
    // Runs of consecutive node indices in one group (a domain's nodes are
    // usually numbered together): count_units() counts a run's usable
    // nodes eight at a time instead of node by node.
    struct NodeRun {
        int begin, end, group;
    };
    std::vector<NodeRun> runs_;
    std::vector<std::vector<Child>> children_;    // per switch
    std::vector<std::vector<int>> subtree_groups_;  // per switch: every group below
    std::vector<std::vector<int>> by_height_;     // switch indices per height
    std::vector<int> sizes_desc_;                 // group sizes, descending
    // Scratch, reused between calls.
    std::vector<int> free_;       // usable healthy nodes per group
    std::vector<int> units_;      // capacity per group in units
    std::vector<int> sw_units_;   // capacity per switch in units
    std::vector<int> excluded_;   // per group: 0 ok, 1 NVLink fault, 2 over limit
    std::vector<std::pair<int, int>> picks_;      // (group, units)
    int best_switch_groups_ = 0;                  // groups best_fit_switch()'s switch would use
    mutable std::vector<uint8_t> taken_;
    mutable std::vector<int> largest_;  // largest_hold()
    mutable std::vector<uint32_t> leaf_stamp_;  // select_groups(): per switch, the call that used it as a leaf
    mutable uint32_t stamp_ = 0;
    std::vector<int> fit_nodes_;  // best_fit_nodes()
    std::vector<uint64_t> min_weight_;  // per group: its lightest usable node (node_weight)
    std::vector<int> by_weight_;  // fill_group(): a group's nodes, lightest first
    const std::vector<uint8_t>* usable_ = nullptr;
    const PlacementRequest* req_ = nullptr;
    const ClusterState* state_ = nullptr;
    int unit_ = 1;
};

// `m2g place` output: a few labelled lines, or one JSON object.
std::string format_placement(const Model& m, const Placement& p, bool json);

// Parse `m2g place --request` text: "nodes=36,segment=18,topology=strict:nvlink"
// (keys nodes or gpus with gpus_per_node, segment, topology, fallback,
// spare). Throws ParseError.
PlacementRequest parse_request(const std::string& text, int gpus_per_node);

}  // namespace m2g
