// m2g tools: topology discovery — what one node reports about itself
// (`m2g discover node`), the InfiniBand fabric as ibnetdiscover prints it
// (`m2g discover fabric`), and the cluster m2g.conf merged from both
// (`m2g discover merge`). See m2g(1), DISCOVERY.
//
// This header is Slurm-free and hardware-free: the facts are plain data
// with a JSON form (schema "m2g.node/v1"). Probing the hardware (hwloc,
// libibverbs, NVML loaded with dlopen) lives in src/discover/probe.hpp and
// fills a NodeFacts; everything after that is here, so the merge can be
// tested on fixtures and run on a management host with no GPUs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace m2g {

// ---- one node -----------------------------------------------------------------

// Where a source of facts stood: "ok", or "unavailable: <why>" (no NVML
// library, no GPU, no RDMA device, hwloc error...). Never an exception.
struct SourceStatus {
    bool ok = false;
    std::string detail;  // "" when ok; else one line saying why
};

struct GpuFacts {
    int index = -1;              // NVML index, else hwloc order
    std::string pci_bus_id;      // "0000:1b:00.0" (lower case, 4-digit domain)
    std::string name;            // "NVIDIA GB200", "" when unknown
    std::string uuid;            // "GPU-..." from NVML, "" when unknown
    int numa_node = -1;          // hwloc NUMA node OS index, -1 unknown
    std::string closest_nic;     // HCA name (e.g. "mlx5_0") nearest in the hwloc tree, "" none
    // NVML fabric (GB200/GB300 NVL72: GPUs of one NVLink domain share the
    // cluster UUID and clique id).
    bool fabric_known = false;   // nvmlDeviceGetGpuFabricInfo answered
    std::string cluster_uuid;    // 36-char UUID text, "" when not known
    uint32_t clique_id = 0;
    std::string fabric_state;    // "completed", "in_progress", "not_started", "not_supported"
    std::string fabric_status;   // "success" or NVML's error text for the fabric registration
    int nvlinks = -1;            // NVLinks NVML reports on this GPU, -1 unknown
    int nvlinks_active = -1;     // of those, active
    double nvlink_gbps = -1;     // per-GPU NVLink bandwidth hwloc reports, -1 unknown
};

struct PortFacts {
    int port = 0;
    std::string state;       // "active", "down", "init", "armed", "polling"...
    std::string link_layer;  // "infiniband" or "ethernet" (RoCE)
    double rate_gbps = 0;    // active width x speed, 0 when down/unknown
    std::string gid;         // GID index 0, "" when unknown
    uint16_t lid = 0;        // InfiniBand LID, 0 for Ethernet
};

struct HcaFacts {
    std::string name;        // "mlx5_0"
    std::string node_guid;   // "0x0002c90300a1b2c3" (as ibnetdiscover prints GUIDs)
    std::string pci_bus_id;  // "" when unknown
    int numa_node = -1;
    std::vector<PortFacts> ports;
};

struct NodeFacts {
    std::string hostname;    // short name (up to the first '.')
    int64_t generated_at = 0;  // epoch seconds
    // hwloc
    SourceStatus hwloc;
    int packages = 0, cores = 0, pus = 0, numa_nodes = 0;
    uint64_t memory_bytes = 0;
    std::vector<GpuFacts> gpus;
    // libibverbs
    SourceStatus ibverbs;
    std::vector<HcaFacts> hcas;
    // NVML
    SourceStatus nvml;
    std::string driver_version;  // "" when NVML is unavailable
};

// Problems worth telling select/m2g about: a port that is not active, a
// GPU with inactive NVLinks, a fabric registration that did not complete.
// One line each, e.g. "mlx5_1 port 1 down", "GPU 2 (0000:1b:00.0): 2 of 18
// NVLinks inactive".
std::vector<std::string> node_problems(const NodeFacts& f);

// JSON, schema "m2g.node/v1" (doc in m2g(1) DISCOVERY). Unknown values are
// null, sources carry {"ok": bool, "detail": "..."}; "problems" lists
// node_problems(), and "signals" is an m2g.signals/v1 document (health
// "degraded": this host when there are problems, no health otherwise) an
// agent can hand to the feed.
std::string node_facts_json(const NodeFacts& f);
// Just the "signals" document of node_facts_json() (`m2g discover node
// --signals`): an m2g.signals/v1 feed naming this host degraded when
// node_problems() is not empty.
std::string node_signals_json(const NodeFacts& f);
// `m2g discover node` without --json: a few labelled lines.
std::string format_node_facts(const NodeFacts& f);
// Parse what node_facts_json() wrote. Throws ParseError naming `file`, the
// JSON path and what is accepted.
NodeFacts parse_node_facts(const std::string& text, const std::string& file);

// ---- the InfiniBand fabric (ibnetdiscover) -------------------------------------

struct IbPortLink {
    int port = 0;               // local port
    std::string peer_guid;      // remote node GUID ("0x..."), "" when unconnected
    int peer_port = 0;
    std::string width;          // "4x"
    std::string speed;          // "EDR", "HDR", "NDR", "XDR", "FDR", "QDR", "SDR", "DDR"
    double rate_gbps = 0;       // width x speed lane rate (e.g. 4x HDR = 200)
};

struct IbNode {
    bool is_switch = false;
    std::string guid;           // node GUID, "0x..." lower case
    std::string description;    // text in quotes ("MF0;leaf01:MQM8790/U1", "node001 mlx5_0")
    std::string name;           // switch: the description; CA: its host name (description's first word)
    int ports = 0;
    std::vector<IbPortLink> links;  // connected ports only
};

struct Fabric {
    std::vector<IbNode> nodes;  // file order
    // Derived by parse_ibnetdiscover: switch levels by distance from the
    // hosts (1 = leaf: has a host; 2 = spine above leaves; 3 = core...), 0
    // for CAs and for switches with no path to a host.
    std::vector<int> level;
};

// Parse `ibnetdiscover` output (infiniband-diags; the default format, with
// vendid/devid/sysimgguid/switchguid/caguid lines, "Switch N \"S-<guid>\"
// # \"desc\" ..." and "Ca N \"H-<guid>\" # \"desc\"" records and
// "[port](guid)\"peer\"[peer port] ... # ... lid N 4xHDR" link lines).
// Throws ParseError naming file:line and what is accepted.
Fabric parse_ibnetdiscover(std::string_view text, const std::string& file);

// `m2g discover fabric` output: one line per switch with its level, hosts
// and uplinks (text), or JSON.
std::string format_fabric(const Fabric& f, bool json);

// ---- merge ---------------------------------------------------------------------

struct MergeOptions {
    // sed-style "s/REGEX/REPLACEMENT/" applied to each host name to get its
    // Slurm NodeName ("" keeps host names). ECMAScript regex; & and \1..\9
    // in the replacement.
    std::string slurm_names;
    std::string cluster_name = "m2g";
};


struct MergeResult {
    std::string conf;                   // m2g.conf text, validated by load_model()
    std::vector<std::string> warnings;  // one line each: a domain split over leaves, a host not in the fabric...
};

// One host as the cluster m2g.conf writer sees it, whatever found it
// (m2g discover merge from hardware, m2g-slinky from Kubernetes labels).
struct LayoutHost {
    std::string name;          // Slurm NodeName
    int gpus = 0;
    int nics = 0;
    double nic_gbps = 0;
    std::string domain_key;    // hosts sharing it form one NVLink domain; "" none
    std::string domain_note;   // a comment for the domain's line, e.g. where the key came from
    double nvlink_gbps = -1;   // per-GPU NVLink bandwidth, -1 unknown
    std::vector<std::string> path;  // switches from the host's leaf up ({"leaf01", "spine01"}); empty: none
};

struct LayoutOptions {
    std::string cluster_name = "m2g";
    std::string header;        // comment lines written first (each ending in '\n')
    std::map<std::string, double> uplink_gbps;  // switch name -> its uplinks' Gb/s (LinkGbps=)
};

// The m2g.conf of these hosts: NodeName lines; a DomainName per domain key,
// named nvl01, nvl02... in order of their first host (natural order), under
// the leaf most of its hosts use (a warning when split); SwitchName lines
// per level (leaf, spine, core) with Domains= or Nodes= (one kind per leaf,
// a warning when a leaf has both) and Switches= above; a switch under two
// parents keeps the first (warning). The text is loaded before it is
// returned. Throws Error on bad or duplicate names.
MergeResult write_cluster_conf(std::vector<LayoutHost> hosts, const LayoutOptions& o);

// The cluster's m2g.conf from node facts and (optionally) the fabric:
//   NodeName=  one line per host (Gpus=, Nics= active HCA ports, NicGbps=
//              their most common rate);
//   DomainName= one per (cluster UUID, clique id) shared by the hosts' GPUs,
//              named nvl01, nvl02... in order of their first host; hosts
//              without fabric info stay outside domains;
//   SwitchName= with a fabric: leaves (Domains= when every host of a domain
//              hangs off that leaf, else the domain goes to the leaf most of
//              its hosts use, with a warning; Nodes= for hosts outside
//              domains), spines and cores above (Switches=), LinkGbps= the
//              sum of each switch's uplink rates.
// Throws Error when the inputs contradict each other (a host twice, a GPU
// in two cliques of one host, a bad --slurm-names pattern).
MergeResult merge_discovery(const std::vector<NodeFacts>& nodes, const Fabric* fabric, const MergeOptions& o);

}  // namespace m2g
