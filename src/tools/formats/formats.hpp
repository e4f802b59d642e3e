// m2g tools: the one topology (m2g.conf) in the formats other schedulers
// read, and back.
//
//   slurm-yaml  Slurm 25.05+ topology.yaml: a tree and a block topology
//   kueue       Kueue TAS Topology and ResourceFlavor (kueue.x-k8s.io/v1beta2)
//   kai         KAI Scheduler Topology (kai.scheduler/v1alpha1)
//   volcano     Volcano HyperNodes (topology.volcano.sh), one per domain
//               and fabric switch
//   labels      Node objects with the labels the level-based schedulers
//               key on (topograph's keys) and Slinky's topology annotation
//
// Kueue and KAI read node labels, so their exports carry the same labels.
// Every Kubernetes name and label value is checked before anything is
// written: a name Kubernetes would refuse is an Error naming it and the
// rule, never a silently changed name.
//
// The imports read Slurm's topology.yaml and Kubernetes Node objects
// (`kubectl get nodes -o json`, or the labels export) into an m2g.conf spec.
// This part of the core reads YAML with yaml-cpp, so it is a library of its
// own (libm2gformats) that the plugins do not link.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/config.hpp"
#include "core/model/model.hpp"

namespace m2g {

enum class ExportFormat { SlurmTree, SlurmBlock, SlurmYaml, Kueue, Kai, Volcano, Labels };

// "tree", "block", "slurm-yaml", "kueue", "kai", "volcano", "labels";
// anything else is an Error listing them.
ExportFormat parse_export_format(std::string_view name);
const char* export_format_names();  // for messages and --help

// Node labels are topograph's keys (NVIDIA/topograph v1.0, Kubernetes
// engine; kw::kK8sLabelTopograph*), so one set serves topograph users,
// Kueue and KAI, and m2g-slinky reads them back: the NVLink domain is the
// accelerator domain, fabric switches are tiers counted from the node
// (tier-0: the switch the node or its domain hangs off). Each Node also gets
// m2g.slurm.net/cluster and Slinky's topology annotation, naming the
// topologies of the slurm-yaml export.

struct ExportOptions {
    // Object name for the Kueue/KAI Topology and prefix of the Slurm
    // topology names ("<name>-tree", "<name>-block"); "" = the cluster name,
    // else "m2g".
    std::string name;
    // Where the nodes' labels come from elsewhere (m2g-slinky: the labels
    // it read): the Kueue/KAI levels, top down, before
    // kubernetes.io/hostname. Empty: the keys the labels export writes.
    std::vector<std::string> levels;
    // The Kubernetes node of each Slurm node (m2g-slinky: from the slurmd
    // pods), for Volcano's Node members. Absent: the same name.
    std::map<std::string, std::string> k8s_node_names;
};

// The whole export in `format` (Slurm tree/block: topology.conf text).
std::string export_topology(const Model& m, ExportFormat format, const ExportOptions& opts = {});

// The individual formats.
std::string export_slurm_yaml(const Model& m, const ExportOptions& opts = {});
std::string export_kueue(const Model& m, const ExportOptions& opts = {});
std::string export_kai(const Model& m, const ExportOptions& opts = {});
std::string export_volcano(const Model& m, const ExportOptions& opts = {});
std::string export_node_labels(const Model& m, const ExportOptions& opts = {});

// A node's level labels (key, value), top down; kubernetes.io/hostname is
// not among them (Kubernetes sets it).
std::vector<std::pair<std::string, std::string>> node_level_labels(const Model& m, int node);

// A node's topology.slinky.slurm.net/spec value for the topologies
// export_slurm_yaml writes: "<name>-tree:<root>:...:<domain>,<name>-block:<block>".
std::string slinky_topology_spec(const Model& m, int node, const ExportOptions& opts = {});

// Which label keys the model uses, top down (the levels of a Topology).
std::vector<std::string> level_label_keys(const Model& m);

struct SlurmYamlImportOptions {
    SlurmImportOptions base;
    std::string topology;  // which topology; "" = the cluster_default one, else the first tree or block
};

// Slurm topology.yaml → m2g.conf spec. A tree topology reads as
// topology.conf does; a block topology's blocks become NVLink domains.
ConfigSpec import_slurm_yaml(std::string_view text, const std::string& file,
                             const SlurmYamlImportOptions& opts = {});

struct LabelImportOptions {
    int gpus_per_node = 0;  // when a Node has no nvidia.com/gpu capacity
};

// Kubernetes Node objects (a NodeList or List, JSON or YAML, or one Node per
// YAML document) → m2g.conf spec, read as m2g-slinky reads a cluster
// (build_slinky_view: GPU clique or accelerator domain labels make NVLink
// domains named nvl01, nvl02..., fabric tier labels the switches above; each
// Node is a Slurm node of its own name). GPUs come from the nvidia.com/gpu
// capacity, else opts.gpus_per_node. The view's warnings go to `warnings`.
ConfigSpec import_node_labels(std::string_view text, const std::string& file, const LabelImportOptions& opts = {},
                              std::vector<std::string>* warnings = nullptr);

// Each object of a multi-document YAML text (a List's items one by one) as
// JSON text, for a Kubernetes client; what the imports read YAML as.
std::vector<std::string> yaml_objects_as_json(std::string_view text, const std::string& file);

}  // namespace m2g
