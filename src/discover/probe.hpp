// m2g discover node: probe this host's hardware into a NodeFacts
// (src/tools/formats/discover.hpp), from three sources that each may be absent:
//
//   hwloc       packages, cores, PUs, NUMA nodes, memory; NVIDIA GPUs as PCI
//               devices (vendor 0x10de, class 0x0300/0x0302) with their NUMA
//               node, closest RDMA NIC and the "NVLinkBandwidth" distances;
//               the PCI bus id and NUMA node of each HCA.
//   libibverbs  HCAs (node GUID) and their ports (state, link layer, rate,
//               LID, GID 0).
//   NVML        loaded with dlopen at run time (no NVIDIA SDK at build time):
//               driver version, GPU names, UUIDs, fabric (cluster UUID,
//               clique), NVLink states.
//
// Missing hardware or libraries never throw: each source's SourceStatus says
// what happened. The caller's own mistakes do (an hwloc XML that does not
// load: m2g::Error naming the file).
#pragma once

#include <string>

#include "tools/formats/discover.hpp"
#include "core/base/keys.hpp"

namespace m2g {

// Where NVML comes from unless ProbeOptions::nvml_library says otherwise:
// $M2G_NVML_LIBRARY (kw::kEnvNvmlLibrary; tests point it at test/fake-nvml),
// else this library name.
inline constexpr const char* kEnvNvmlLibrary = kw::kEnvNvmlLibrary;
inline constexpr const char* kDefaultNvmlLibrary = "libnvidia-ml.so.1";

struct ProbeOptions {
    // hwloc XML (lstopo --of xml) to read instead of this machine; "" = this
    // machine. libibverbs and NVML still describe this machine: turn
    // ibverbs off and point nvml_library at a fake for a hermetic run.
    std::string hwloc_xml;
    // NVML shared object; "" = $M2G_NVML_LIBRARY, else libnvidia-ml.so.1
    // from the dynamic loader's search path.
    std::string nvml_library;
    bool ibverbs = true;  // false: ibverbs.detail = "not probed"
};

// Never throws for missing hardware or libraries; throws m2g::Error when
// o.hwloc_xml is set and hwloc cannot load it.
//
// GPUs: with NVML, in NVML index order, each joined to the hwloc GPU with
// the same PCI bus id (NUMA node, closest NIC, NVLink bandwidth), or the
// same UUID when NVML could not give the bus id; hwloc GPUs NVML does not
// list follow with index -1. Without NVML, hwloc's GPUs
// in hwloc (PCI) order with index 0, 1, ... and name/UUID from hwloc's
// cuda/nvml/opencl OS devices when present.
NodeFacts probe_node(const ProbeOptions& o);

// Helpers, exposed for tests.

// "00000000:1B:00.0", "0000:1b:00.0", "1b:00.0" -> "0000:1b:00.0"; "" when
// the text is not a PCI address.
std::string normalize_pci_bus_id(const std::string& text);

// An InfiniBand port's rate in Gb/s from ibv_port_attr's active_width and
// active_speed (or active_speed_ex when nonzero); 0 when either is unknown.
//   width: 1 -> 1x, 2 -> 4x, 4 -> 8x, 8 -> 12x, 16 -> 2x lanes
//   speed: 1 SDR 2.5, 2 DDR 5, 4 QDR 10, 8 FDR10 10, 16 FDR 14, 32 EDR 25,
//          64 HDR 50, 128 NDR 100, 256 XDR 200 Gb/s per lane
// (nominal lane rates, as ibstat and ibnetdiscover print them: 4x HDR = 200).
double ib_rate_gbps(unsigned active_width, unsigned active_speed);

}  // namespace m2g
