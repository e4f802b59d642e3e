// m2g discover: node facts JSON (schema m2g.node/v1) and the cluster merge,
// on hand-built facts and fabrics whose m2g.conf is worked out by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model/config.hpp"
#include "tools/formats/discover.hpp"
#include "core/base/error.hpp"

using namespace m2g;

namespace {

constexpr const char* kUuid = "6e1c7a2b-0d4f-4b8e-9a51-3c2d1e0f9a8b";

// An NVL72-style compute node: 4 GPUs in clique `clique` (0: no fabric
// info), `ports` active 400 Gb/s HCA ports.
NodeFacts host(const std::string& name, uint32_t clique, int ports = 2)
{
    NodeFacts f;
    f.hostname = name;
    f.generated_at = 1795982400;  // 2026-11-29T20:00:00Z
    f.hwloc.ok = true;
    f.packages = 2;
    f.cores = 144;
    f.pus = 144;
    f.numa_nodes = 2;
    f.memory_bytes = 1ULL << 39;
    f.nvml.ok = clique != 0;
    f.nvml.detail = clique ? "" : "unavailable: no libnvidia-ml.so.1";
    f.driver_version = clique ? "570.86.15" : "";
    for (int i = 0; i < 4; ++i) {
        GpuFacts g;
        g.index = i;
        g.pci_bus_id = "0000:0" + std::to_string(i + 1) + ":00.0";
        g.name = "NVIDIA GB200";
        g.numa_node = i / 2;
        g.closest_nic = "mlx5_" + std::to_string(i);
        if (clique) {
            g.uuid = "GPU-" + name + "-" + std::to_string(i);
            g.fabric_known = true;
            g.cluster_uuid = kUuid;
            g.clique_id = clique;
            g.fabric_state = "completed";
            g.fabric_status = "success";
            g.nvlinks = 18;
            g.nvlinks_active = 18;
            g.nvlink_gbps = 14400;
        }
        f.gpus.push_back(g);
    }
    f.ibverbs.ok = ports > 0;
    for (int h = 0; h < ports; ++h) {
        HcaFacts hca;
        hca.name = "mlx5_" + std::to_string(h);
        hca.node_guid = "0x0000000000000" + std::to_string(100 + h);
        hca.ports.push_back(PortFacts{1, "active", "infiniband", 400, "fe80::1", static_cast<uint16_t>(10 + h)});
        f.hcas.push_back(hca);
    }
    return f;
}

std::string guid(int n)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%016x", n);
    return buf;
}

// leaf1: gb01 gb02 (CAs 101, 102); leaf2: gb03 gb04; spine1 and spine2 each
// reach both leaves with one 400 Gb/s link (a two-level fat tree).
Fabric fat_tree(int hosts_per_leaf = 2)
{
    Fabric f;
    auto add = [&](bool sw, int id, const std::string& desc, const std::string& name) {
        IbNode n;
        n.is_switch = sw;
        n.guid = guid(id);
        n.description = desc;
        n.name = name;
        n.ports = sw ? 40 : 1;
        f.nodes.push_back(n);
        f.level.push_back(0);
        return static_cast<int>(f.nodes.size()) - 1;
    };
    auto link = [&](int a, int pa, int b, int pb, double rate) {
        f.nodes[a].links.push_back(IbPortLink{pa, f.nodes[b].guid, pb, "4x", rate >= 400 ? "NDR" : "HDR", rate});
        f.nodes[b].links.push_back(IbPortLink{pb, f.nodes[a].guid, pa, "4x", rate >= 400 ? "NDR" : "HDR", rate});
    };
    const int s1 = add(true, 1, "MF0;spine1:MQM9790/U1", "MF0;spine1:MQM9790/U1");
    const int s2 = add(true, 2, "MF0;spine2:MQM9790/U1", "MF0;spine2:MQM9790/U1");
    const int l1 = add(true, 11, "MF0;leaf1:MQM9790/U1", "MF0;leaf1:MQM9790/U1");
    const int l2 = add(true, 12, "MF0;leaf2:MQM9790/U1", "MF0;leaf2:MQM9790/U1");
    f.level[s1] = f.level[s2] = 2;
    f.level[l1] = f.level[l2] = 1;
    link(l1, 33, s1, 1, 400);
    link(l1, 34, s2, 1, 400);
    link(l2, 33, s1, 2, 400);
    link(l2, 34, s2, 2, 400);
    for (int h = 1; h <= 2 * hosts_per_leaf; ++h) {
        char name[16];
        std::snprintf(name, sizeof name, "gb%02d", h);
        const int ca = add(false, 100 + h, std::string(name) + " mlx5_0", name);
        link(ca, 1, h <= hosts_per_leaf ? l1 : l2, h, 400);
    }
    return f;
}

std::string error_of(const std::vector<NodeFacts>& n, const Fabric* f, const MergeOptions& o = {})
{
    try {
        merge_discovery(n, f, o);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST(DiscoverFacts, JsonRoundTripsAndCarriesSignals)
{
    NodeFacts f = host("gb01", 7);
    f.gpus[2].nvlinks_active = 16;
    f.hcas[1].ports[0].state = "init";  // link up, not active: the subnet manager has not brought it up
    f.hcas[1].ports[0].rate_gbps = 0;
    const std::string j = node_facts_json(f);
    for (const char* k : {"\"schema\": \"m2g.node/v1\"", "\"hostname\": \"gb01\"",
                          "\"generated_at\": \"2026-11-29T20:00:00Z\"", "\"clique_id\": 7",
                          "\"cluster_uuid\": \"6e1c7a2b-0d4f-4b8e-9a51-3c2d1e0f9a8b\"", "\"closest_nic\": \"mlx5_2\"",
                          "\"mlx5_1 port 1 init\"", "\"GPU 2 (0000:03:00.0): 2 of 18 NVLinks inactive\"",
                          "\"schema\": \"m2g.signals/v1\"", "\"degraded\": \"gb01\""})
        EXPECT_NE(j.find(k), std::string::npos) << k << " in\n" << j;
    const NodeFacts g = parse_node_facts(j, "gb01.json");
    EXPECT_EQ(node_facts_json(g), j);
    EXPECT_EQ(node_problems(g), (std::vector<std::string>{"mlx5_1 port 1 init",
                                                           "GPU 2 (0000:03:00.0): 2 of 18 NVLinks inactive"}));
}

// What is a problem and what is only how the node is built.
TEST(DiscoverFacts, ProblemsAreFaultsNotDesign)
{
    NodeFacts f = host("gb01", 7);
    f.hcas[1].ports[0].state = "down";  // an uncabled second port while mlx5_0 is active
    EXPECT_TRUE(node_problems(f).empty());
    f.hcas[0].ports[0].state = "down";  // no port active: the node lost its network
    EXPECT_EQ(node_problems(f), (std::vector<std::string>{"mlx5_0 port 1 down", "mlx5_1 port 1 down"}));
    NodeFacts pcie = host("h100", 0);  // PCIe cards without a bridge: every NVLink down by design
    for (GpuFacts& g : pcie.gpus) {
        g.nvlinks = 18;
        g.nvlinks_active = 0;
    }
    EXPECT_TRUE(node_problems(pcie).empty());
    // A GPU NVML does not list (index unknown) and a failed fabric query
    // survive the JSON round trip, and the failure is a problem.
    NodeFacts g = host("gb02", 7);
    g.gpus[3].index = -1;
    g.gpus[3].uuid.clear();
    g.gpus[2].fabric_known = false;
    g.gpus[2].fabric_state.clear();
    g.gpus[2].fabric_status = "Unknown Error";
    const NodeFacts back = parse_node_facts(node_facts_json(g), "gb02.json");
    EXPECT_EQ(back.gpus[3].index, -1);
    EXPECT_FALSE(back.gpus[2].fabric_known);
    EXPECT_EQ(back.gpus[2].fabric_status, "Unknown Error");
    EXPECT_EQ(node_facts_json(back), node_facts_json(g));
    EXPECT_EQ(node_problems(back),
              (std::vector<std::string>{"GPU 2 (0000:03:00.0): NVML fabric query failed: Unknown Error"}));
}

TEST(DiscoverFacts, NoGpusNoHcasIsHealthyAndUnknownsAreNull)
{
    NodeFacts f = host("login1", 0, 0);
    f.gpus.clear();
    f.ibverbs.detail = "unavailable: no RDMA devices";
    const std::string j = node_facts_json(f);
    EXPECT_NE(j.find("\"gpus\": [\n  ]"), std::string::npos) << j;
    EXPECT_NE(j.find("\"driver_version\": null"), std::string::npos) << j;
    EXPECT_NE(j.find("\"problems\": [\n  ]"), std::string::npos) << j;
    EXPECT_EQ(j.find("\"health\""), std::string::npos) << j;
    const NodeFacts g = parse_node_facts(j, "x");
    EXPECT_FALSE(g.nvml.ok);
    EXPECT_EQ(g.nvml.detail, "unavailable: no libnvidia-ml.so.1");
    EXPECT_EQ(g.ibverbs.detail, "unavailable: no RDMA devices");
}

TEST(DiscoverFacts, ParseErrorsNameThePath)
{
    auto err = [](const std::string& text) {
        try {
            parse_node_facts(text, "n.json");
        } catch (const ParseError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(err("{"), "n.json: not JSON (unexpected end of data); expected the output of `m2g discover node --json`");
    EXPECT_EQ(err(R"({"schema":"m2g.node/v2"})"), "n.json: schema: \"m2g.node/v2\" is not supported; accepted: \"m2g.node/v1\"");
    const std::string ok = node_facts_json(host("gb01", 7));
    std::string bad = ok;
    bad.replace(bad.find("\"clique_id\": 7"), 14, "\"clique_id\": \"7\"");
    EXPECT_EQ(err(bad), "n.json: gpus[0].fabric.clique_id: expected a whole number or null");
    bad = ok;
    bad.replace(bad.find("\"nvlinks_active\": 18"), 20, "\"nvlinks_active\": 19");
    EXPECT_EQ(err(bad), "n.json: gpus[0].nvlinks_active: 19 is more than nvlinks (18)");
    bad = ok;
    bad.replace(bad.find("\"hostname\": \"gb01\""), 18, "\"hostname\": \"gb 01\"");
    EXPECT_EQ(err(bad), "n.json: hostname: 'gb 01': expected a host name (letters, digits, '-', '_', '.')");
}

// Domains from cliques, leaves from the fabric, the fat tree's two spines
// joined into one parent as Slurm's topology/tree needs.
TEST(DiscoverMerge, FatTreeWithTwoDomains)
{
    const Fabric fab = fat_tree();
    const MergeResult r =
        merge_discovery({host("gb03", 8), host("gb01", 7), host("gb02", 7), host("gb04", 8)}, &fab, {});
    EXPECT_EQ(r.conf,
              "# m2g.conf written by `m2g discover merge` from 4 nodes and the ibnetdiscover fabric.\n"
              "ClusterName=m2g\n"
              "\n"
              "NodeName=gb01 Gpus=4 Nics=2 NicGbps=400\n"
              "NodeName=gb02 Gpus=4 Nics=2 NicGbps=400\n"
              "NodeName=gb03 Gpus=4 Nics=2 NicGbps=400\n"
              "NodeName=gb04 Gpus=4 Nics=2 NicGbps=400\n"
              "\n"
              "DomainName=nvl01 Nodes=gb[01-02] Size=2 NVLinkGbps=14400  # cluster UUID/clique "
              "6e1c7a2b-0d4f-4b8e-9a51-3c2d1e0f9a8b/7\n"
              "DomainName=nvl02 Nodes=gb[03-04] Size=2 NVLinkGbps=14400  # cluster UUID/clique "
              "6e1c7a2b-0d4f-4b8e-9a51-3c2d1e0f9a8b/8\n"
              "\n"
              "SwitchName=leaf1 Level=leaf Domains=nvl01 LinkGbps=800\n"
              "SwitchName=leaf2 Level=leaf Domains=nvl02 LinkGbps=800\n"
              "SwitchName=spine1 Level=spine Switches=leaf[1-2]\n");
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_EQ(r.warnings[0], "switches spine1, spine2 share the switches below them (a fat tree); m2g.conf, like "
                             "Slurm's topology/tree, joins them as spine1");
    const Model m = build_model(parse_m2g_conf(r.conf, "merged"));
    EXPECT_EQ(m.nodes.size(), 4u);
    EXPECT_EQ(m.domains.size(), 2u);
    EXPECT_EQ(m.switches.size(), 3u);
}

TEST(DiscoverMerge, SlurmNamesHostsOutsideDomainsAndNoFabric)
{
    MergeOptions o;
    o.slurm_names = "s/^gb(\\d+)$/node\\1/";
    o.cluster_name = "lab";
    const MergeResult r = merge_discovery({host("gb02", 0, 1), host("gb01", 0, 1)}, nullptr, o);
    EXPECT_EQ(r.conf,
              "# m2g.conf written by `m2g discover merge` from 2 nodes.\n"
              "ClusterName=lab\n"
              "\n"
              "NodeName=node01 Gpus=4 Nics=1 NicGbps=400\n"
              "NodeName=node02 Gpus=4 Nics=1 NicGbps=400\n");
    EXPECT_TRUE(r.warnings.empty());
    // Under a fabric, hosts without a clique hang off their leaf directly.
    const Fabric fab = fat_tree();
    const MergeResult t = merge_discovery({host("gb01", 0), host("gb02", 0), host("gb03", 0), host("gb04", 0)}, &fab, {});
    EXPECT_NE(t.conf.find("SwitchName=leaf1 Level=leaf Nodes=gb[01-02] LinkGbps=800\n"), std::string::npos) << t.conf;
}

TEST(DiscoverMerge, SplitDomainAndMissingHostAreWarnings)
{
    const Fabric fab = fat_tree();
    // gb01 gb02 gb03 in one clique: gb03 is under leaf2.
    const MergeResult r =
        merge_discovery({host("gb01", 7), host("gb02", 7), host("gb03", 7), host("gb09", 9)}, &fab, {});
    EXPECT_NE(r.conf.find("SwitchName=leaf1 Level=leaf Domains=nvl01 LinkGbps=800\n"), std::string::npos) << r.conf;
    std::string all;
    for (const std::string& w : r.warnings)
        all += w + "\n";
    EXPECT_NE(all.find("host gb09 has no HCA in the fabric (matched by HCA node GUID, else by a CA description "
                       "starting with the host name); it is under no switch in m2g.conf"), std::string::npos)
        << all;
    EXPECT_NE(all.find("NVLink domain nvl01 has hosts under 2 leaf switches; m2g.conf puts it under leaf1 (2 of its "
                       "3 hosts)"),
              std::string::npos)
        << all;
}

// Hosts are found in the fabric by HCA GUID even when the CA's description
// is the adapter's default; a leaf whose hosts we were not given is not a
// core switch; single hosts beside domains go under a sibling leaf.
TEST(DiscoverMerge, GuidMatchingDeadLeavesAndSiblingLeaf)
{
    Fabric fab = fat_tree(2);
    for (IbNode& n : fab.nodes)
        if (!n.is_switch && n.name == "gb02") {
            n.description = "MT4129 ConnectX7   Mellanox Technologies";
            n.name = "";
        }
    std::vector<NodeFacts> hosts = {host("gb01", 7), host("gb02", 0)};
    hosts[0].hcas.resize(1);
    hosts[1].hcas.resize(1);
    hosts[0].hcas[0].node_guid = guid(101);
    hosts[1].hcas[0].node_guid = "0x" + std::string(13, '0') + "066";  // 102 in hex, padded
    const MergeResult r = merge_discovery(hosts, &fab, {});
    EXPECT_NE(r.conf.find("SwitchName=leaf1 Level=leaf Domains=nvl01 LinkGbps=800\n"), std::string::npos) << r.conf;
    EXPECT_NE(r.conf.find("SwitchName=leaf1-nodes Level=leaf Nodes=gb02\n"), std::string::npos) << r.conf;
    EXPECT_NE(r.conf.find("SwitchName=spine1 Level=spine Switches=leaf1,leaf1-nodes\n"), std::string::npos) << r.conf;
    // leaf2's hosts (gb03, gb04) were not given: no leaf2, and never a core.
    EXPECT_EQ(r.conf.find("leaf2"), std::string::npos) << r.conf;
    EXPECT_EQ(r.conf.find("Level=core"), std::string::npos) << r.conf;
    std::string all;
    for (const std::string& w : r.warnings)
        all += w + "\n";
    EXPECT_NE(all.find("leaf leaf1 holds NVLink domains and hosts outside any (gb02); m2g.conf takes one kind per "
                       "switch, so those hosts are under leaf1-nodes, a leaf beside it"),
              std::string::npos)
        << all;
}

TEST(DiscoverMerge, ContradictionsAreErrors)
{
    EXPECT_EQ(error_of({}, nullptr),
              "no node facts to merge; give the JSON files `m2g discover node --json` wrote on each node");
    EXPECT_EQ(error_of({host("gb01", 7), host("gb01", 7)}, nullptr),
              "host gb01 is given twice; give each node's facts once");
    NodeFacts two = host("gb01", 7);
    two.gpus[3].clique_id = 9;
    EXPECT_EQ(error_of({two}, nullptr),
              "host gb01: its GPUs are in 2 NVLink cliques (6e1c7a2b-0d4f-4b8e-9a51-3c2d1e0f9a8b/7 (3 GPUs), "
              "6e1c7a2b-0d4f-4b8e-9a51-3c2d1e0f9a8b/9 (1 GPUs)); one host belongs to one NVLink domain");
    MergeOptions o;
    o.slurm_names = "gb(.*)";
    EXPECT_EQ(error_of({host("gb01", 7)}, nullptr, o),
              "--slurm-names 'gb(.*)'; expected s/REGEX/REPLACEMENT/ (e.g. 's/^gpu-(\\d+)$/node\\1/')");
    o.slurm_names = "s/.*/x/";
    EXPECT_EQ(error_of({host("gb01", 7), host("gb02", 7)}, nullptr, o),
              "host gb02: Slurm name x is already used by another host; check --slurm-names");
}
