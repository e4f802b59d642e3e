// m2g discover node: probe_node() on hwloc XML fixtures, with NVML played by
// test/fake-nvml (configured through FAKE_NVML_* variables), and once on the
// live machine.
//
// test/fixtures/discover/nvl72-node.xml is one GB200 NVL72 compute tray
// (host r01n01; hwloc's XML parser takes no comments, so its picture is here):
//
//        Package 0: Grace, 72 cores            Package 1: Grace, 72 cores
//        NUMA 0 (480 GiB)                      NUMA 1 (480 GiB)
//     ┌──────────┬─────────────┐            ┌──────────┬─────────────┐
//   0002:      0008:         0009:        0012:      0018:         0019:
//   BlueField-3 │             │           BlueField-3 │             │
//   mlx5_4    PCIe switch   PCIe switch   mlx5_5    PCIe switch   PCIe switch
//   (RoCE)    ┌──┴──┐       ┌──┴──┐       (RoCE)    ┌──┴──┐       ┌──┴──┐
//            GPU0 mlx5_0   GPU1 mlx5_1             GPU2 mlx5_2   GPU3 mlx5_3
//
// GPUs: GB200 (10de:2941, class 0302) at <domain>:03:00.0, with cuda<N> and
// nvml<N> OS devices; NICs: ConnectX-7 NDR (15b3:1021) at <domain>:04:00.0,
// one behind each GPU's PCIe switch, so GPU N's closest NIC is mlx5_N. The
// DPUs share only the package with the GPUs. The fake NVML's defaults are
// these four GPUs, one cluster UUID, clique 7, 18 active NVLinks each.
#include <gtest/gtest.h>
#include <hwloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fstream>
#include <string>
#include <vector>

#include "discover/probe.hpp"
#include "core/base/error.hpp"

namespace {

const std::string kFixtures = std::string(M2G_FIXTURES) + "/discover/";
const std::string kNvl72 = kFixtures + "nvl72-node.xml";
const std::string kThisMachine = kFixtures + "this-machine.xml";
const std::string kFakeNvml = M2G_FAKE_NVML;
const std::string kNoNvml = "/nonexistent/libnvidia-ml.so.1";
const char* const kCluster = "5f1b6c2e-8d3a-4b7e-9c41-2a6e0d7f3b90";  // fake_nvml.c's default

const char* const kFakeVars[] = {
    "FAKE_NVML_INIT_ERROR", "FAKE_NVML_GPUS",       "FAKE_NVML_BUSIDS",        "FAKE_NVML_NAME",
    "FAKE_NVML_DRIVER",     "FAKE_NVML_LOST_GPU",   "FAKE_NVML_FABRIC",        "FAKE_NVML_FABRIC_STATUS",
    "FAKE_NVML_CLUSTER_UUID", "FAKE_NVML_CLIQUE",   "FAKE_NVML_LINKS",         "FAKE_NVML_INACTIVE_LINKS",
    m2g::kEnvNvmlLibrary,
};

// Every case starts and ends with no FAKE_NVML_* or M2G_NVML_LIBRARY set.
class ProbeEnv : public ::testing::Test {
  protected:
    void SetUp() override { clear(); }
    void TearDown() override { clear(); }
    static void clear()
    {
        for (const char* v : kFakeVars)
            unsetenv(v);
    }
    static void set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

    // The NVL72 tray with the fake NVML and no live ibverbs.
    static m2g::NodeFacts nvl72(const std::string& xml = kNvl72)
    {
        m2g::ProbeOptions o;
        o.hwloc_xml = xml;
        o.nvml_library = kFakeNvml;
        o.ibverbs = false;
        return m2g::probe_node(o);
    }
};
class ProbeThisMachine : public ProbeEnv {};
class ProbeNvl72 : public ProbeEnv {};
class ProbeNvml : public ProbeEnv {};
class ProbeLive : public ProbeEnv {};

// Counts straight from hwloc, to compare the probe with.
struct HwlocCounts {
    int packages = -1, cores = -1, pus = -1, numa = -1;
    uint64_t memory = 0;
    std::string hostname, cpu_model;
};

HwlocCounts hwloc_counts(const std::string& xml)
{
    HwlocCounts c;
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) < 0)
        return c;
    hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    if ((!xml.empty() && hwloc_topology_set_xml(t, xml.c_str()) < 0) || hwloc_topology_load(t) < 0) {
        hwloc_topology_destroy(t);
        return c;
    }
    c.packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
    c.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    c.pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
    c.numa = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    hwloc_obj_t root = hwloc_get_root_obj(t);
    c.memory = root->total_memory;
    const char* h = hwloc_obj_get_info_by_name(root, "HostName");
    c.hostname = h ? h : "";
    hwloc_obj_t pkg = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
    const char* m = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : nullptr;
    c.cpu_model = m ? m : "";
    hwloc_topology_destroy(t);
    return c;
}

std::string read_line(const std::string& path)
{
    std::ifstream in(path);
    std::string s;
    std::getline(in, s);
    return s;
}

std::vector<std::string> dir_entries(const std::string& path)
{
    std::vector<std::string> out;
    if (DIR* d = opendir(path.c_str())) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.')
                out.push_back(e->d_name);
        closedir(d);
    }
    return out;
}

// NVIDIA display/3D controllers as sysfs lists them (what hwloc should find).
int sysfs_nvidia_gpus()
{
    int n = 0;
    for (const std::string& dev : dir_entries("/sys/bus/pci/devices")) {
        std::string base = "/sys/bus/pci/devices/" + dev;
        std::string cls = read_line(base + "/class");  // 0x030200
        if (read_line(base + "/vendor") == "0x10de" && (cls.rfind("0x0300", 0) == 0 || cls.rfind("0x0302", 0) == 0))
            ++n;
    }
    return n;
}

std::string short_hostname()
{
    char buf[256] = {0};
    gethostname(buf, sizeof buf - 1);
    std::string h = buf;
    return h.substr(0, h.find('.'));
}

// ---- helpers -------------------------------------------------------------------

TEST(ProbeHelpers, NormalizesPciBusIds)
{
    EXPECT_EQ(m2g::normalize_pci_bus_id("00000008:03:00.0"), "0008:03:00.0");  // NVML's busId
    EXPECT_EQ(m2g::normalize_pci_bus_id("0000:1B:00.0"), "0000:1b:00.0");
    EXPECT_EQ(m2g::normalize_pci_bus_id("1b:00.0"), "0000:1b:00.0");
    EXPECT_EQ(m2g::normalize_pci_bus_id("00000019:03:1F.7"), "0019:03:1f.7");
    EXPECT_EQ(m2g::normalize_pci_bus_id(""), "");
    EXPECT_EQ(m2g::normalize_pci_bus_id("mlx5_0"), "");
    EXPECT_EQ(m2g::normalize_pci_bus_id("0000:1b:00"), "");
    EXPECT_EQ(m2g::normalize_pci_bus_id("0000:1b:00.0 "), "");
    EXPECT_EQ(m2g::normalize_pci_bus_id("0000:1b:20.0"), "");  // device > 31
}

TEST(ProbeHelpers, InfiniBandRateIsLanesTimesLaneRate)
{
    // active_width codes 1,2,4,8,16 = 1x,4x,8x,12x,2x; active_speed codes
    // as in ibv_port_attr (see probe.hpp).
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(2, 1), 10);     // 4x SDR
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(2, 4), 40);     // 4x QDR
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(2, 8), 40);     // 4x FDR10
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(2, 16), 56);    // 4x FDR
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(2, 32), 100);   // 4x EDR
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(2, 64), 200);   // 4x HDR
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(16, 64), 100);  // 2x HDR (HDR100)
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(2, 128), 400);  // 4x NDR (ConnectX-7)
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(1, 128), 100);  // 1x NDR
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(4, 128), 800);  // 8x NDR
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(8, 2), 60);     // 12x DDR
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(2, 256), 800);  // 4x XDR (active_speed_ex)
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(0, 64), 0);     // unknown width
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(3, 64), 0);
    EXPECT_DOUBLE_EQ(m2g::ib_rate_gbps(2, 0), 0);      // unknown speed
}

// ---- this-machine.xml ----------------------------------------------------------------

TEST_F(ProbeThisMachine, FixtureCountsAsHwlocDoes)
{
    m2g::ProbeOptions o;
    o.hwloc_xml = kThisMachine;
    o.nvml_library = kNoNvml;
    o.ibverbs = false;
    m2g::NodeFacts f = m2g::probe_node(o);
    HwlocCounts c = hwloc_counts(kThisMachine);
    ASSERT_TRUE(f.hwloc.ok) << f.hwloc.detail;
    EXPECT_EQ(f.hwloc.detail, "");
    ASSERT_GT(c.pus, 0);
    EXPECT_EQ(f.packages, c.packages);
    EXPECT_EQ(f.cores, c.cores);
    EXPECT_EQ(f.pus, c.pus);
    EXPECT_EQ(f.numa_nodes, c.numa);
    EXPECT_EQ(f.memory_bytes, c.memory);
    EXPECT_GT(f.memory_bytes, 0u);
    EXPECT_TRUE(f.gpus.empty());
    EXPECT_FALSE(f.ibverbs.ok);
    EXPECT_EQ(f.ibverbs.detail, "not probed");
    EXPECT_FALSE(f.nvml.ok);
}

TEST_F(ProbeThisMachine, FixtureIsThisMachine)
{
    // The fixture was exported on the machine the tests were written on;
    // anywhere else it is just another topology.
    HwlocCounts file = hwloc_counts(kThisMachine);
    HwlocCounts live = hwloc_counts("");
    if (file.hostname != live.hostname || file.cpu_model != live.cpu_model)
        GTEST_SKIP() << "this-machine.xml was exported on '" << file.hostname << "' (" << file.cpu_model
                     << "), not here ('" << live.hostname << "')";
    m2g::ProbeOptions o;
    o.hwloc_xml = kThisMachine;
    o.nvml_library = kNoNvml;
    o.ibverbs = false;
    m2g::NodeFacts f = m2g::probe_node(o);
    EXPECT_EQ(f.packages, live.packages);
    EXPECT_EQ(f.cores, live.cores);
    EXPECT_EQ(f.pus, live.pus);
    EXPECT_EQ(f.numa_nodes, live.numa);
}

TEST_F(ProbeThisMachine, MissingXmlIsTheCallersError)
{
    m2g::ProbeOptions o;
    o.hwloc_xml = kFixtures + "no-such-file.xml";
    o.nvml_library = kNoNvml;
    o.ibverbs = false;
    try {
        m2g::probe_node(o);
        FAIL() << "no error for a missing XML file";
    } catch (const m2g::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no-such-file.xml"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("lstopo --of xml"), std::string::npos) << e.what();
    }
}

// ---- nvl72-node.xml + fake NVML ------------------------------------------------------

TEST_F(ProbeNvl72, NodeHasFourGb200sInOneClique)
{
    m2g::NodeFacts f = nvl72();
    ASSERT_TRUE(f.hwloc.ok) << f.hwloc.detail;
    ASSERT_TRUE(f.nvml.ok) << f.nvml.detail;
    EXPECT_EQ(f.nvml.detail, "");
    EXPECT_EQ(f.driver_version, "570.133.20");
    EXPECT_EQ(f.packages, 2);
    EXPECT_EQ(f.cores, 144);
    EXPECT_EQ(f.pus, 144);
    EXPECT_EQ(f.numa_nodes, 2);
    EXPECT_EQ(f.memory_bytes, 2 * 480ull * 1024 * 1024 * 1024);

    const char* bus[] = {"0008:03:00.0", "0009:03:00.0", "0018:03:00.0", "0019:03:00.0"};
    const int numa[] = {0, 0, 1, 1};
    ASSERT_EQ(f.gpus.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        const m2g::GpuFacts& g = f.gpus[static_cast<size_t>(i)];
        SCOPED_TRACE("GPU " + std::to_string(i));
        EXPECT_EQ(g.index, i);
        EXPECT_EQ(g.pci_bus_id, bus[i]);
        EXPECT_EQ(g.name, "NVIDIA GB200");
        EXPECT_EQ(g.uuid, "GPU-8c1d7a2e-0b3f-4c5d-9e6f-00000000000" + std::to_string(i));
        EXPECT_EQ(g.numa_node, numa[i]);
        EXPECT_EQ(g.closest_nic, "mlx5_" + std::to_string(i));
        EXPECT_TRUE(g.fabric_known);
        EXPECT_EQ(g.cluster_uuid, kCluster);
        EXPECT_EQ(g.clique_id, 7u);
        EXPECT_EQ(g.fabric_state, "completed");
        EXPECT_EQ(g.fabric_status, "success");
        EXPECT_EQ(g.nvlinks, 18);
        EXPECT_EQ(g.nvlinks_active, 18);
        EXPECT_EQ(g.nvlink_gbps, -1);  // hwloc 2.9 knows no NVLink 5 bandwidth
    }
    EXPECT_TRUE(f.hcas.empty());  // ibverbs off: hcas come from libibverbs only
    EXPECT_EQ(f.hostname, short_hostname());
}

TEST_F(ProbeNvl72, CliqueAndClusterComeFromNvml)
{
    set("FAKE_NVML_CLUSTER_UUID", "00112233-4455-6677-8899-AABBCCDDEEFF");
    set("FAKE_NVML_CLIQUE", "32766");
    m2g::NodeFacts f = nvl72();
    ASSERT_EQ(f.gpus.size(), 4u);
    for (const m2g::GpuFacts& g : f.gpus) {
        EXPECT_EQ(g.cluster_uuid, "00112233-4455-6677-8899-aabbccddeeff");
        EXPECT_EQ(g.clique_id, 32766u);
    }
}

TEST_F(ProbeNvl72, InactiveNvLinksAreCounted)
{
    set("FAKE_NVML_INACTIVE_LINKS", "2:0,2:17,3:5");
    m2g::NodeFacts f = nvl72();
    ASSERT_TRUE(f.nvml.ok) << f.nvml.detail;
    ASSERT_EQ(f.gpus.size(), 4u);
    const int active[] = {18, 18, 16, 17};
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(f.gpus[i].nvlinks, 18) << "GPU " << i;
        EXPECT_EQ(f.gpus[i].nvlinks_active, active[i]) << "GPU " << i;
    }
}

TEST_F(ProbeNvl72, GpuWithoutNvLinksHasZeroNotUnknown)
{
    set("FAKE_NVML_LINKS", "0");
    m2g::NodeFacts f = nvl72();
    ASSERT_EQ(f.gpus.size(), 4u);
    EXPECT_EQ(f.gpus[0].nvlinks, 0);
    EXPECT_EQ(f.gpus[0].nvlinks_active, 0);
}

TEST_F(ProbeNvl72, NvmlInitFailureKeepsHwlocGpus)
{
    set("FAKE_NVML_INIT_ERROR", "9");  // NVML_ERROR_DRIVER_NOT_LOADED
    m2g::NodeFacts f = nvl72();
    EXPECT_FALSE(f.nvml.ok);
    EXPECT_EQ(f.nvml.detail, "nvmlInit_v2: Driver Not Loaded (9)");
    EXPECT_EQ(f.driver_version, "");
    ASSERT_EQ(f.gpus.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        const m2g::GpuFacts& g = f.gpus[static_cast<size_t>(i)];
        SCOPED_TRACE("GPU " + std::to_string(i));
        EXPECT_EQ(g.index, i);  // hwloc order
        EXPECT_EQ(g.name, "NVIDIA GB200");  // hwloc's cuda/nvml OS devices
        EXPECT_EQ(g.uuid, "GPU-8c1d7a2e-0b3f-4c5d-9e6f-00000000000" + std::to_string(i));
        EXPECT_EQ(g.closest_nic, "mlx5_" + std::to_string(i));
        EXPECT_FALSE(g.fabric_known);
        EXPECT_EQ(g.cluster_uuid, "");
        EXPECT_EQ(g.nvlinks, -1);
        EXPECT_EQ(g.nvlinks_active, -1);
    }
}

TEST_F(ProbeNvl72, FabricNotSupported)
{
    set("FAKE_NVML_FABRIC", "unsupported");
    m2g::NodeFacts f = nvl72();
    ASSERT_TRUE(f.nvml.ok) << f.nvml.detail;
    ASSERT_EQ(f.gpus.size(), 4u);
    for (const m2g::GpuFacts& g : f.gpus) {
        EXPECT_FALSE(g.fabric_known);
        EXPECT_EQ(g.fabric_state, "not_supported");
        EXPECT_EQ(g.cluster_uuid, "");
        EXPECT_EQ(g.clique_id, 0u);
        EXPECT_EQ(g.nvlinks, 18);  // NVLink state is a separate question
    }
}

TEST_F(ProbeNvl72, FabricRegistrationInProgress)
{
    set("FAKE_NVML_FABRIC", "in_progress");
    m2g::NodeFacts f = nvl72();
    ASSERT_EQ(f.gpus.size(), 4u);
    EXPECT_TRUE(f.gpus[0].fabric_known);
    EXPECT_EQ(f.gpus[0].fabric_state, "in_progress");
    EXPECT_EQ(f.gpus[0].fabric_status, "");  // NVML: status only means something once completed
    EXPECT_EQ(f.gpus[0].cluster_uuid, "");
}

TEST_F(ProbeNvl72, FabricRegistrationFailed)
{
    set("FAKE_NVML_FABRIC_STATUS", "999");
    m2g::NodeFacts f = nvl72();
    ASSERT_EQ(f.gpus.size(), 4u);
    EXPECT_TRUE(f.gpus[1].fabric_known);
    EXPECT_EQ(f.gpus[1].fabric_state, "completed");
    EXPECT_EQ(f.gpus[1].fabric_status, "Unknown Error (999)");
}

TEST_F(ProbeNvl72, FabricCallError)
{
    set("FAKE_NVML_FABRIC", "error");
    m2g::NodeFacts f = nvl72();
    ASSERT_EQ(f.gpus.size(), 4u);
    EXPECT_FALSE(f.gpus[0].fabric_known);
    EXPECT_EQ(f.gpus[0].fabric_state, "");
    EXPECT_EQ(f.gpus[0].fabric_status, "Unknown Error (999)");
}

TEST_F(ProbeNvl72, GpusJoinOnBusIdNotIndex)
{
    // NVML enumerates in its own order; each GPU keeps its place in the tree.
    set("FAKE_NVML_BUSIDS", "00000018:03:00.0,00000008:03:00.0,00000019:03:00.0,00000009:03:00.0");
    m2g::NodeFacts f = nvl72();
    ASSERT_EQ(f.gpus.size(), 4u);
    const char* bus[] = {"0018:03:00.0", "0008:03:00.0", "0019:03:00.0", "0009:03:00.0"};
    const char* nic[] = {"mlx5_2", "mlx5_0", "mlx5_3", "mlx5_1"};
    const int numa[] = {1, 0, 1, 0};
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(f.gpus[i].index, static_cast<int>(i));
        EXPECT_EQ(f.gpus[i].pci_bus_id, bus[i]);
        EXPECT_EQ(f.gpus[i].closest_nic, nic[i]);
        EXPECT_EQ(f.gpus[i].numa_node, numa[i]);
    }
}

TEST_F(ProbeNvl72, GpuOnlyNvmlSeesHasNoLocality)
{
    set("FAKE_NVML_GPUS", "5");
    m2g::NodeFacts f = nvl72();
    ASSERT_EQ(f.gpus.size(), 5u);
    EXPECT_EQ(f.gpus[4].index, 4);
    EXPECT_EQ(f.gpus[4].pci_bus_id, "0000:44:00.0");
    EXPECT_EQ(f.gpus[4].numa_node, -1);
    EXPECT_EQ(f.gpus[4].closest_nic, "");
}

TEST_F(ProbeNvl72, GpuNvmlDoesNotListComesLast)
{
    set("FAKE_NVML_GPUS", "3");
    m2g::NodeFacts f = nvl72();
    ASSERT_TRUE(f.nvml.ok);
    ASSERT_EQ(f.gpus.size(), 4u);
    EXPECT_EQ(f.gpus[3].index, -1);
    EXPECT_EQ(f.gpus[3].pci_bus_id, "0019:03:00.0");
    EXPECT_EQ(f.gpus[3].closest_nic, "mlx5_3");
    EXPECT_FALSE(f.gpus[3].fabric_known);
}

TEST_F(ProbeNvl72, LostGpuJoinsOnUuid)
{
    set("FAKE_NVML_LOST_GPU", "1");
    m2g::NodeFacts f = nvl72();
    EXPECT_FALSE(f.nvml.ok);
    EXPECT_EQ(f.nvml.detail, "GPU 1: nvmlDeviceGetPciInfo_v3: GPU is lost (15)");
    ASSERT_EQ(f.gpus.size(), 4u);
    EXPECT_EQ(f.gpus[1].index, 1);
    EXPECT_EQ(f.gpus[1].pci_bus_id, "0009:03:00.0");  // from hwloc, found by UUID
    EXPECT_EQ(f.gpus[1].closest_nic, "mlx5_1");
}

TEST_F(ProbeNvl72, NvmlWithNoGpu)
{
    set("FAKE_NVML_GPUS", "0");
    m2g::NodeFacts f = nvl72();
    EXPECT_FALSE(f.nvml.ok);
    EXPECT_EQ(f.nvml.detail, "NVML reports no GPU");
    EXPECT_EQ(f.driver_version, "570.133.20");
    ASSERT_EQ(f.gpus.size(), 4u);  // hwloc still sees them
    EXPECT_EQ(f.gpus[3].index, 3);
}

// hwloc's NVML backend records NVLink bandwidth as a distances matrix named
// "NVLinkBandwidth" (MB/s between the GPUs' nvml OS devices, NVSwitches or
// CPUs). hwloc 2.9 has no value for NVL72's NVLink 5, so build one the way
// it does for an older NVSwitch system, export it and probe the export.
TEST_F(ProbeNvl72, NvLinkBandwidthFromHwlocDistances)
{
    hwloc_topology_t t;
    ASSERT_EQ(hwloc_topology_init(&t), 0);
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    ASSERT_EQ(hwloc_topology_set_xml(t, kNvl72.c_str()), 0);
    ASSERT_EQ(hwloc_topology_load(t), 0);
    std::vector<hwloc_obj_t> objs;
    for (hwloc_obj_t d = hwloc_get_next_osdev(t, nullptr); d; d = hwloc_get_next_osdev(t, d))
        if (d->name && std::strncmp(d->name, "nvml", 4) == 0)
            objs.push_back(d);
    ASSERT_EQ(objs.size(), 4u);
    // Each pair joined by 6 links of 50000 MB/s; 1000000 on the diagonal, as hwloc writes.
    std::vector<hwloc_uint64_t> values(16, 300000);
    for (int i = 0; i < 4; ++i)
        values[static_cast<size_t>(i * 5)] = 1000000;
    hwloc_distances_add_handle_t h = hwloc_distances_add_create(
        t, "NVLinkBandwidth", HWLOC_DISTANCES_KIND_FROM_OS | HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH, 0);
    ASSERT_NE(h, nullptr);
    ASSERT_EQ(hwloc_distances_add_values(t, h, 4, objs.data(), values.data(), 0), 0);
    ASSERT_EQ(hwloc_distances_add_commit(t, h, 0), 0);
    std::string out = ::testing::TempDir() + "m2g-probe-nvlink-" + std::to_string(getpid()) + ".xml";
    ASSERT_EQ(hwloc_topology_export_xml(t, out.c_str(), 0), 0);
    hwloc_topology_destroy(t);

    m2g::NodeFacts f = nvl72(out);
    std::remove(out.c_str());
    ASSERT_EQ(f.gpus.size(), 4u);
    for (const m2g::GpuFacts& g : f.gpus)
        EXPECT_DOUBLE_EQ(g.nvlink_gbps, 3 * 300000.0 * 8 / 1000) << g.pci_bus_id;  // 7200 Gb/s
}

// ---- NVML missing or not NVML --------------------------------------------------------

TEST_F(ProbeNvml, LibraryMissing)
{
    m2g::ProbeOptions o;
    o.hwloc_xml = kNvl72;
    o.nvml_library = kNoNvml;
    o.ibverbs = false;
    m2g::NodeFacts f = m2g::probe_node(o);
    EXPECT_FALSE(f.nvml.ok);
    EXPECT_EQ(f.nvml.detail.rfind("cannot load NVML: ", 0), 0u) << f.nvml.detail;
    EXPECT_NE(f.nvml.detail.find(kNoNvml), std::string::npos) << f.nvml.detail;
    EXPECT_EQ(f.nvml.detail.find('\n'), std::string::npos);
    EXPECT_TRUE(f.hwloc.ok);
    EXPECT_EQ(f.gpus.size(), 4u);
}

TEST_F(ProbeNvml, LibraryThatIsNotNvml)
{
    m2g::ProbeOptions o;
    o.hwloc_xml = kNvl72;
    o.nvml_library = "libm.so.6";
    o.ibverbs = false;
    m2g::NodeFacts f = m2g::probe_node(o);
    EXPECT_FALSE(f.nvml.ok);
    EXPECT_EQ(f.nvml.detail, "libm.so.6 has no nvmlInit_v2 (not NVML, or a driver older than m2g supports)");
}

TEST_F(ProbeNvml, LibraryFromEnvironment)
{
    set(m2g::kEnvNvmlLibrary, kFakeNvml);
    m2g::ProbeOptions o;
    o.hwloc_xml = kNvl72;
    o.ibverbs = false;
    m2g::NodeFacts f = m2g::probe_node(o);
    EXPECT_TRUE(f.nvml.ok) << f.nvml.detail;
    EXPECT_EQ(f.gpus.size(), 4u);

    o.nvml_library = kNoNvml;  // the option wins over the environment
    f = m2g::probe_node(o);
    EXPECT_FALSE(f.nvml.ok);
}

// ---- the live machine ----------------------------------------------------------------

TEST_F(ProbeLive, ReportsThisMachineTruthfully)
{
    std::time_t before = std::time(nullptr);
    m2g::NodeFacts f = m2g::probe_node(m2g::ProbeOptions{});
    std::time_t after = std::time(nullptr);

    EXPECT_EQ(f.hostname, short_hostname());
    EXPECT_EQ(f.hostname.find('.'), std::string::npos);
    EXPECT_GE(f.generated_at, before);
    EXPECT_LE(f.generated_at, after);

    ASSERT_TRUE(f.hwloc.ok) << f.hwloc.detail;
    EXPECT_EQ(f.pus, sysconf(_SC_NPROCESSORS_ONLN));
    HwlocCounts live = hwloc_counts("");
    EXPECT_EQ(f.packages, live.packages);
    EXPECT_EQ(f.cores, live.cores);
    EXPECT_EQ(f.numa_nodes, live.numa);
    EXPECT_EQ(f.memory_bytes, live.memory);

    int gpus = sysfs_nvidia_gpus();
    EXPECT_EQ(static_cast<int>(f.gpus.size()), gpus);
    if (gpus == 0) {
        EXPECT_FALSE(f.nvml.ok);
        EXPECT_FALSE(f.nvml.detail.empty());
        EXPECT_EQ(f.nvml.detail.find('\n'), std::string::npos);
    }

    std::vector<std::string> rdma = dir_entries("/sys/class/infiniband");
    if (rdma.empty()) {
        EXPECT_FALSE(f.ibverbs.ok);
        EXPECT_EQ(f.ibverbs.detail.rfind("no RDMA devices", 0), 0u) << f.ibverbs.detail;
        EXPECT_TRUE(f.hcas.empty());
    } else {
        EXPECT_EQ(f.hcas.size(), rdma.size());
        for (const m2g::HcaFacts& h : f.hcas) {
            EXPECT_EQ(h.node_guid.size(), 18u) << h.name;
            EXPECT_EQ(h.node_guid.rfind("0x", 0), 0u) << h.name;
        }
    }
}

}  // namespace
