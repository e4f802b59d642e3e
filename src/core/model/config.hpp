// m2g core: reading m2g.conf (see m2g.conf(5)) and Slurm's topology.conf.
//
// Reading happens in two steps, so every error can name its file and line:
//   1. parse_*()      text  → ConfigSpec  (syntax: keys, values, hostlists)
//   2. build_model()  spec  → Model       (meaning: references, cycles, sizes)
// Both throw on the first problem and have no side effects, so a caller that
// keeps its previous model on error never sees a half-read configuration.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/source.hpp"
#include "core/model/model.hpp"

namespace m2g {

struct NodeSpec {
    SourceLoc loc;
    std::vector<std::string> names;
    int gpus = 0;
    int nics = 0;
    double nic_gbps = 0;
};

struct DomainSpec {
    SourceLoc loc;
    std::string name;
    std::vector<std::string> nodes;
    int size = 0;  // 0: not declared, defaults to the node count
    double nvlink_gbps = 0;
    double power_budget_kw = 0;
};

struct SwitchSpec {
    SourceLoc loc;
    std::string name;
    std::string level;  // "", leaf, spine, core
    double link_gbps = 0;
    std::vector<std::string> switches;
    std::vector<std::string> domains;
    std::vector<std::string> nodes;
};

struct FaultDomainSpec {
    SourceLoc loc;
    std::string name;
    std::string type;
    std::vector<std::string> nodes;
    std::vector<std::string> domains;
    double power_budget_kw = 0;
};

struct PartitionSpec {
    SourceLoc loc;
    std::string name;
    std::string default_topology;  // "" inherit
    int prefer_wait_sec = -1;      // -1 inherit
    int spare_per_domain = -1;     // -1 inherit
};

struct ConfigSpec {
    std::string cluster_name;
    double site_power_budget_kw = 0;
    PlacementPolicy policy;
    AdmissionPolicy admission;  // global admission keys and ClassName= lines, validated
    double energy_price_per_kwh = 0;     // EnergyPricePerKWh=
    std::string energy_currency = "EUR";  // EnergyCurrency=, upper case
    double default_price_per_gpu_hour = 0;  // DefaultPricePerGpuHour=
    // PricePerGpuHour= of each ClassName line by WorkloadClass (-1: not given).
    std::array<double, 8> price_per_gpu_hour{-1, -1, -1, -1, -1, -1, -1, -1};
    std::vector<NodeSpec> nodes;
    std::vector<DomainSpec> domains;
    std::vector<SwitchSpec> switches;
    std::vector<FaultDomainSpec> fault_domains;
    std::vector<PartitionSpec> partitions;
};

// Parse m2g.conf text. `file` names the source in messages.
ConfigSpec parse_m2g_conf(std::string_view text, const std::string& file);

// Read and parse a file; a missing or unreadable file is an Error naming it.
ConfigSpec read_m2g_conf(const std::string& path);

struct SlurmImportOptions {
    int gpus_per_node = 0;
    // Treat each switch with Nodes= as an NVLink domain (as m2g's own
    // export writes them), instead of as a leaf switch.
    bool leaf_as_domain = false;
};

// Parse a Slurm topology/tree topology.conf (SwitchName, Switches, Nodes,
// LinkSpeed). Nodes are declared implicitly with `opts.gpus_per_node` GPUs.
ConfigSpec parse_slurm_topology_conf(std::string_view text, const std::string& file,
                                     const SlurmImportOptions& opts = {});

// One switch (or block) of a Slurm topology file, before it becomes part of
// an m2g.conf spec: topology.conf and topology.yaml both read into these.
struct SlurmSwitchDecl {
    SourceLoc loc;
    std::string name;
    std::vector<std::string> switches;  // child switch names (tree)
    std::vector<std::string> nodes;     // expanded node names
    double link_gbps = 0;
    bool is_block = false;              // a topology/block block: an NVLink domain
};

// The spec the switches describe: switches with nodes become leaf switches
// (NVLink domains with `opts.leaf_as_domain` or is_block), nodes are
// declared in natural order with `opts.gpus_per_node` GPUs.
ConfigSpec spec_from_slurm_switches(const std::vector<SlurmSwitchDecl>& decls, const std::string& file,
                                    const SlurmImportOptions& opts);

// Validate a spec and build the model. Non-fatal findings (a node no switch
// reaches, several roots) are appended to `warnings` when given.
Model build_model(const ConfigSpec& spec, std::vector<std::string>* warnings = nullptr);

// Convenience: read_m2g_conf + build_model.
Model load_model(const std::string& path, std::vector<std::string>* warnings = nullptr);

// Where the plugins read m2g.conf: $M2G_CONF when set (tests, trials),
// else `slurm_default` (the m2g.conf next to slurm.conf, as Slurm's
// get_extra_conf_path gives it), else "m2g.conf".
std::string conf_path(const char* slurm_default);

// Where every m2g program outside Slurm (the m2g command, m2g-curtaild,
// m2g-exporter) reads m2g.conf, the one convention of them all: `given`
// (their --conf FILE) when not empty, else $M2G_CONF, else m2g.conf in the
// directory of $SLURM_CONF, else in Slurm's default one, /etc/slurm. The
// plugins find the same file (conf_path above, with Slurm's own
// get_extra_conf_path).
std::string resolve_conf_path(const std::string& given = "");

// Slurm's configuration directory when SLURM_CONF is not set.
inline constexpr const char* kSlurmConfDir = "/etc/slurm";

// The --help line of every --conf option (resolve_conf_path), and its
// default alone.
inline constexpr const char* kConfDefaultHelp = "$M2G_CONF, else m2g.conf beside $SLURM_CONF, else /etc/slurm/m2g.conf";
inline constexpr const char* kConfOptionHelp =
    "m2g.conf (default: $M2G_CONF, else m2g.conf beside $SLURM_CONF, else /etc/slurm/m2g.conf)";


}  // namespace m2g
