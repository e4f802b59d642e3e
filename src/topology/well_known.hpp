// m2g core: every string key m2g reads or writes, declared once with its
// meaning. m2g.conf keys are documented in m2g.conf(5); keep both in step.
#pragma once

#include <array>

namespace m2g::kw {

// ---- m2g.conf: line heads ---------------------------------------------
inline constexpr const char* kNodeName = "NodeName";        // hostlist of compute nodes
inline constexpr const char* kDomainName = "DomainName";    // one NVLink domain (NVL72 rack)
inline constexpr const char* kSwitchName = "SwitchName";    // one fabric switch (leaf, spine, core)
inline constexpr const char* kFaultDomain = "FaultDomain";  // rack, row, PDU, power feed, ...

// ---- m2g.conf: global keys (alone on their line) ------------------------
inline constexpr const char* kClusterName = "ClusterName";              // informational name
inline constexpr const char* kSitePowerBudgetKW = "SitePowerBudgetKW";  // site power budget, kW

// ---- m2g.conf: attributes -----------------------------------------------
inline constexpr const char* kGpus = "Gpus";                    // NodeName: GPUs per node
inline constexpr const char* kNics = "Nics";                    // NodeName: RDMA NICs per node
inline constexpr const char* kNicGbps = "NicGbps";              // NodeName: Gb/s per NIC
inline constexpr const char* kNodes = "Nodes";                  // hostlist of member nodes
inline constexpr const char* kSize = "Size";                    // DomainName: capacity in nodes
inline constexpr const char* kNVLinkGbps = "NVLinkGbps";        // DomainName: NVLink Gb/s per GPU
inline constexpr const char* kPowerBudgetKW = "PowerBudgetKW";  // DomainName/FaultDomain budget, kW
inline constexpr const char* kLevel = "Level";                  // SwitchName: leaf, spine or core
inline constexpr const char* kLinkGbps = "LinkGbps";            // SwitchName: uplink Gb/s to parent
inline constexpr const char* kSwitches = "Switches";            // SwitchName: child switches
inline constexpr const char* kDomains = "Domains";              // child/member NVLink domains
inline constexpr const char* kType = "Type";                    // FaultDomain: kind, see below

inline constexpr std::array<const char*, 6> kFaultDomainTypes = {"rack", "row", "pdu", "power_feed", "cooling",
                                                                 "room"};

// ---- files ---------------------------------------------------------------
inline constexpr const char* kConfFile = "m2g.conf";  // next to slurm.conf
inline constexpr const char* kConfEnv = "M2G_CONF";   // overrides the path (tests, CLI)

}  // namespace m2g::kw
