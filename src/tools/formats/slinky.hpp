// m2g tools: the Slinky (Slurm on Kubernetes) view — what m2g-slinky turns
// Kubernetes Nodes and slurmd pods into: the cluster m2g.conf (NVLink
// domains from GPU clique labels, switches from network tier labels), the
// signals feed (cordons, taints and node conditions), the per-node topology
// annotation slurm-operator copies to the Slurm node, and the m2g options a
// pod's annotations ask for (jobs that arrive through slurm-bridge).
//
// No I/O and no Kubernetes client here: objects come in as JSON text (the
// v1 Node and Pod wire format), results go out as text. The label and
// annotation keys are in core/base/keys.hpp (kw::kK8s*). See doc/slinky.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/job/bridge.hpp"
#include "core/model/model.hpp"
#include "tools/formats/discover.hpp"  // MergeResult

namespace m2g {

struct K8sTaint {
    std::string key, value, effect;  // effect: NoSchedule, PreferNoSchedule, NoExecute
};

struct K8sCondition {
    std::string type, status, reason, message;  // status: "True", "False", "Unknown"
};

struct K8sNode {
    std::string name;
    std::map<std::string, std::string> labels, annotations;
    bool unschedulable = false;  // cordoned
    std::vector<K8sTaint> taints;
    std::vector<K8sCondition> conditions;
    int gpus = -1;  // status.allocatable (else capacity) of the GPU resource, -1 absent
};

struct K8sPod {
    std::string ns, name;
    std::map<std::string, std::string> labels, annotations;
    std::string node_name;  // spec.nodeName ("" not scheduled yet)
    std::string hostname;   // spec.hostname ("" when unset)
    std::string phase;      // status.phase
    std::string scheduler;  // spec.schedulerName
    int64_t created = 0;    // metadata.creationTimestamp, epoch seconds (0 absent)
    bool deleting = false;  // metadata.deletionTimestamp set
};

// Parse one v1 Node / Pod (JSON text as the API server sends it). `what`
// names it in messages. Throws ParseError naming the JSON path.
K8sNode parse_k8s_node(const std::string& json, const std::string& what);
K8sPod parse_k8s_pod(const std::string& json, const std::string& what);

struct SlinkyOptions {
    std::string cluster_name = "slinky";
    std::string gpu_resource = "nvidia.com/gpu";
    // Node labels: the NVLink domain (first label present wins) and the
    // network tiers from the leaf up (a tier without a label ends the path).
    std::vector<std::string> domain_labels;  // default: kw::kK8sLabelGpuClique, kw::kK8sLabelTopographDomain
    std::vector<std::string> tier_labels;    // default: topograph's tier-0 (leaf), tier-1, tier-2
    // Taint keys that mean "no new work" besides cordons (NoSchedule or
    // NoExecute effect); empty: every NoSchedule/NoExecute taint except
    // the ones Kubernetes sets for GPU nodes by convention (nvidia.com/gpu).
    std::vector<std::string> ignore_taint_keys = {"nvidia.com/gpu"};
    // The topology names in slurm-operator's topology annotation value
    // ("<tree>:<root>:...:<lowest switch>,<block>:<block>"); "" leaves that
    // part out. "default" is the topology.conf of the cluster.
    std::string tree_topology = "default";
    std::string block_topology;
};

struct SlinkyView {
    std::string conf;                    // m2g.conf (write_cluster_conf)
    std::vector<std::string> warnings;   // one line each
    std::map<std::string, std::string> slurm_to_k8s;  // Slurm node -> Kubernetes node
    std::map<std::string, std::string> annotations;   // Kubernetes node -> topology annotation value
    std::string signals;                 // m2g.signals/v1 document (health, thermal)
    // The label keys the view was built from: per level (0: NVLink domain,
    // 1: leaf tier, 2: spine, 3: core), how many Slurm nodes each key gave.
    std::map<int, std::map<std::string, int>> label_use;
};

// The level labels of the view's nodes, top down (most used key per level):
// the levels a Kueue or KAI Topology of this cluster names.
std::vector<std::string> slinky_level_labels(const SlinkyView& v);

// The view of these nodes and slurmd pods at `now`. A slurmd pod names a
// Slurm node by its spec.hostname, else its pod name; pods not scheduled
// on a node, or on a node that is not listed, are skipped with a warning.
// Health (into the signals document, by Slurm node name):
//   down      Ready condition not True, NetworkUnavailable True, cordoned,
//             or a NoSchedule/NoExecute taint (not ignored);
//   degraded  MemoryPressure, DiskPressure or PIDPressure True, or any other
//             condition with status True (node-problem-detector convention),
//             except thermal ones;
//   thermal   a condition whose type contains "Thermal" with status True:
//             state "hot".
SlinkyView build_slinky_view(const std::vector<K8sNode>& nodes, const std::vector<K8sPod>& slurmd_pods,
                             const SlinkyOptions& o, int64_t now);

// A node's topology annotation value (kw::kK8sAnnotationTopology) for the
// Slurm tree topology `tree` and block topology `block` ("" leaves that part
// out): "<tree>:<root>:...:<domain or leaf>,<block>:<domain>".
std::string slinky_topology_value(const Model& m, int node, const std::string& tree, const std::string& block);

// The m2g options a pod's annotations ask for (kw::kK8sPodAnnotation*:
// topology, segment, class, defer, recipe, tags), as "--m2g-NAME=VALUE"
// arguments in a fixed order, each checked with the same parser as the
// SPANK options. Unknown keys under the m2g prefix are errors: throws
// ParseError naming the annotation and what is accepted.
std::vector<std::string> pod_m2g_options(const std::map<std::string, std::string>& annotations);

// ---- jobs from slurm-bridge: bridge-intents.json ------------------------------
// m2g-slinky resolves each slurm-bridge pod's annotations into the M2G_*
// variables spank_m2g would have put into the job (core/job/bridge.hpp: the
// document, and how job_submit/m2g reads it).

struct RecipeCatalog;

// The intent of one pod. `catalog` may be null (no --recipes): a recipe
// annotation is then an error.
BridgeIntent pod_bridge_intent(const K8sPod& pod, const RecipeCatalog* catalog);

// The bridge-intents.json document for these pods (every pod listed, with
// or without annotations, so that job_submit/m2g can tell "no intent" from
// "not seen yet"). Pods of one job must agree; that is checked at submit.
std::string bridge_intents_json(const std::vector<K8sPod>& pods, const RecipeCatalog* catalog, int64_t now);

}  // namespace m2g
