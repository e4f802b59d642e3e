// m2g core: the cluster model.
//
//   cluster
//     └─ switch tree (core → spine → leaf), links carry bandwidth
//          └─ NVLink domains (an NVL72 rack: 18 nodes x 4 GPUs; any size)
//               └─ nodes with GPUs and NICs
//   fault domains (rack, row, PDU, power feed, ...) cut across the tree and
//   carry power budgets.
//
// A Model is immutable once built: build_model() validates everything and
// either returns a complete model or throws; nothing half-built escapes.
// Indices (not pointers) link the parts, so a model copies and moves freely
// and the Slurm adapters can map them onto Slurm's own index-based tables.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/enum_names.hpp"
#include "core/job/intent.hpp"  // Locality, LocalityLevel
#include "core/model/admission_policy.hpp"

namespace m2g {

inline constexpr int kNone = -1;

// Fabric levels, bottom up. Level numbers match Slurm's switch levels with
// the NVLink domain as level 0 (see topology/m2g).
enum class SwitchLevel { Leaf, Spine, Core };
inline constexpr auto kSwitchLevelNames = enum_names<SwitchLevel::Core>({"leaf", "spine", "core"});  // Level=
const char* to_string(SwitchLevel level);

struct Node {
    std::string name;
    int gpus = 0;
    int nics = 0;
    double nic_gbps = 0;     // per NIC
    int domain = kNone;      // NVLink domain, if any
    int leaf = kNone;        // switch the node hangs off directly (no domain)
    int rank = 0;            // position in tree order (domains, then leaves)
    std::vector<int> fault_domains;
};

struct Domain {
    std::string name;
    std::vector<int> nodes;  // in declaration order
    int size = 0;            // declared capacity in nodes (>= nodes.size())
    double nvlink_gbps = 0;  // per-GPU NVLink bandwidth, informational
    double power_budget_kw = 0;  // 0: none declared
    int parent = kNone;      // switch
    int gpus = 0;            // sum over nodes
};

struct Switch {
    std::string name;
    SwitchLevel level = SwitchLevel::Leaf;
    int height = 0;          // 0 for switches above domains/nodes, +1 per level
    double link_gbps = 0;    // bandwidth of the uplink(s) to the parent
    std::vector<int> switches;  // children, exactly one of these three
    std::vector<int> domains;   // is non-empty
    std::vector<int> nodes;
    int parent = kNone;
    std::vector<int> all_nodes;  // every node below, in rank order
    int gpus = 0;
};

struct FaultDomain {
    std::string name;
    std::string type;        // rack, row, pdu, power_feed, room, ...
    std::vector<int> nodes;
    double power_budget_kw = 0;
};

// How select/m2g treats jobs (m2g.conf global keys).
struct PlacementPolicy {
    std::string default_topology = "prefer:nvlink";  // as --m2g-topology, for people
    // The same, typed: what a job without --m2g-topology gets (set with the
    // text when m2g.conf is read).
    Locality default_locality = Locality::Prefer;
    LocalityLevel default_level = LocalityLevel::NVLink;
    int prefer_wait_sec = 300;
    int spare_per_domain = 0;
    // Preemption's cost (PreemptCheckpointSec=, PreemptRestartSec=): the
    // preemptable jobs checkpoint after every this many seconds of run time
    // (0: never, a victim loses all it ran), and a requeued victim redoes
    // this many seconds of work when it starts again.
    int preempt_checkpoint_sec = 0;
    int preempt_restart_sec = 0;
    std::string health_file;  // "" none
};

struct Model {
    std::string cluster_name;
    double site_power_budget_kw = 0;
    PlacementPolicy policy;                                           // cluster-wide
    AdmissionPolicy admission;                                        // job_submit/m2g, signals
    double energy_price_per_kwh = 0;                                  // EnergyPricePerKWh= (0: no cost shown)
    std::string energy_currency = "EUR";                              // EnergyCurrency=, ISO 4217
    // What a GPU-hour of delay costs, by WorkloadClass (Unset first): the
    // class's PricePerGpuHour=, else DefaultPricePerGpuHour= (0: no cost).
    std::array<double, 8> price_per_gpu_hour{};
    std::map<std::string, PlacementPolicy, std::less<>> partition_policy;  // PartitionName= overrides
    std::vector<Node> nodes;     // declaration order; Node::rank is tree order
    std::vector<Domain> domains;
    std::vector<Switch> switches;  // declaration order
    std::vector<FaultDomain> fault_domains;
    std::map<std::string, int, std::less<>> node_index;
    std::map<std::string, int, std::less<>> domain_index;
    std::map<std::string, int, std::less<>> switch_index;

    // The policy for jobs in `partition` (its PartitionName line, else the
    // cluster-wide keys).
    const PlacementPolicy& policy_for(std::string_view partition) const;
    int find_node(std::string_view name) const;
    int find_domain(std::string_view name) const;
    int find_switch(std::string_view name) const;
    int total_gpus() const;
    // GPUs per node that most of `among` (model node indices; empty: every
    // node) have, ignoring nodes without GPUs; the larger on a tie, 0 none.
    int usual_node_gpus(const std::vector<int>& among = {}) const;
    // Switches with no parent, in declaration order.
    std::vector<int> roots() const;
    // Node indices sorted by rank.
    std::vector<int> nodes_in_rank_order() const;
    // Domains with no parent switch.
    std::vector<int> unattached_domains() const;
};

}  // namespace m2g
