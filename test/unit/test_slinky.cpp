// The Slinky view: Kubernetes Nodes and slurmd pods (v1 wire format) to
// m2g.conf, topology annotations, signals, and pod annotations to options.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/error.hpp"
#include "topology/slinky.hpp"

using namespace m2g;

namespace {

std::string node_json(const std::string& name, const std::string& clique, const std::string& leaf,
                      const std::string& spine, const std::string& extra_spec = "",
                      const std::string& conditions = R"({"type":"Ready","status":"True"})")
{
    return R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
           R"(","resourceVersion":"7","labels":{"nvidia.com/gpu.clique":")" + clique +
           R"(","fabric.topograph.run/tier-0":")" + leaf + R"(","fabric.topograph.run/tier-1":")" +
           spine + R"("}},"spec":{)" + extra_spec + R"(},"status":{"allocatable":{"cpu":"144","nvidia.com/gpu":"4"},"conditions":[)" +
           conditions + "]}}";
}

std::string pod_json(const std::string& name, const std::string& node, const std::string& hostname)
{
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
           R"(","namespace":"slurm","labels":{"app.kubernetes.io/component":"compute"}},"spec":{"nodeName":")" + node +
           R"(","hostname":")" + hostname + R"("},"status":{"phase":"Running"}})";
}

}  // namespace

TEST(Slinky, ParsesNodesAndPods)
{
    const K8sNode n = parse_k8s_node(
        node_json("k1", "uuid-a.7", "leaf01", "spine01", R"("unschedulable":true,"taints":[{"key":"x","effect":"NoSchedule"}])"),
        "node k1");
    EXPECT_EQ(n.name, "k1");
    EXPECT_EQ(n.gpus, 4);
    EXPECT_TRUE(n.unschedulable);
    ASSERT_EQ(n.taints.size(), 1u);
    EXPECT_EQ(n.taints[0].effect, "NoSchedule");
    EXPECT_EQ(n.labels.at("nvidia.com/gpu.clique"), "uuid-a.7");
    const K8sPod p = parse_k8s_pod(pod_json("slurmd-0", "k1", "r01n01"), "pod");
    EXPECT_EQ(p.node_name, "k1");
    EXPECT_EQ(p.hostname, "r01n01");
    EXPECT_EQ(p.ns, "slurm");
    try {
        parse_k8s_node(R"({"metadata":{"name":"x","labels":{"a":1}}})", "node x");
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_STREQ(e.what(), "node x: metadata.labels.a: expected a string");
    }
}

// Four Kubernetes nodes, two cliques under two leaves of one spine; one
// cordoned, one NotReady, one hot, one under memory pressure.
TEST(Slinky, ViewFromLabels)
{
    std::vector<K8sNode> nodes = {
        parse_k8s_node(node_json("k1", "uuid-a.7", "leaf01", "spine01", R"("unschedulable":true)"), "k1"),
        parse_k8s_node(node_json("k2", "uuid-a.7", "leaf01", "spine01"), "k2"),
        parse_k8s_node(node_json("k3", "uuid-a.8", "leaf02", "spine01", "",
                                 R"({"type":"Ready","status":"False"})"), "k3"),
        parse_k8s_node(node_json("k4", "uuid-a.8", "leaf02", "spine01", "",
                                 R"({"type":"Ready","status":"True"},{"type":"GpuThermalThrottle","status":"True"},)"
                                 R"({"type":"MemoryPressure","status":"True"})"), "k4"),
    };
    std::vector<K8sPod> pods;
    for (int i = 1; i <= 4; ++i)
        pods.push_back(parse_k8s_pod(pod_json("slurmd-" + std::to_string(i), "k" + std::to_string(i),
                                              "r01n0" + std::to_string(i)), "pod"));
    pods.push_back(parse_k8s_pod(pod_json("slurmd-9", "", "r09n01"), "pod"));
    SlinkyOptions o;
    o.block_topology = "blocks";
    const SlinkyView v = build_slinky_view(nodes, pods, o, 1795982400);
    EXPECT_EQ(v.conf,
              "# m2g.conf written by m2g-slinky from Kubernetes node labels (4 Slurm nodes). Do not edit: the adapter "
              "rewrites it.\n"
              "ClusterName=slinky\n"
              "\n"
              "NodeName=r01n01 Gpus=4\n"
              "NodeName=r01n02 Gpus=4\n"
              "NodeName=r01n03 Gpus=4\n"
              "NodeName=r01n04 Gpus=4\n"
              "\n"
              "DomainName=nvl01 Nodes=r01n[01-02] Size=2  # nvidia.com/gpu.clique=uuid-a.7\n"
              "DomainName=nvl02 Nodes=r01n[03-04] Size=2  # nvidia.com/gpu.clique=uuid-a.8\n"
              "\n"
              "SwitchName=leaf01 Level=leaf Domains=nvl01\n"
              "SwitchName=leaf02 Level=leaf Domains=nvl02\n"
              "SwitchName=spine01 Level=spine Switches=leaf[01-02]\n");
    EXPECT_EQ(v.annotations.at("k1"), "default:spine01:leaf01:nvl01,blocks:nvl01");
    EXPECT_EQ(v.annotations.at("k4"), "default:spine01:leaf02:nvl02,blocks:nvl02");
    EXPECT_EQ(v.slurm_to_k8s.at("r01n03"), "k3");
    ASSERT_EQ(v.warnings.size(), 1u);
    EXPECT_EQ(v.warnings[0], "slurmd pod slurm/slurmd-9 is not scheduled on a node yet; Slurm node r09n01 is left out");
    for (const char* k : {"\"schema\": \"m2g.signals/v1\"", "\"generated_at\": \"2026-11-29T20:00:00Z\"",
                          "\"down\": \"r01n[01,03]\"", "\"degraded\": \"r01n04\"", "\"r01n04\": {\n      \"state\": \"hot\""})
        EXPECT_NE(v.signals.find(k), std::string::npos) << k << " in\n" << v.signals;
}

TEST(Slinky, NothingToDescribeIsAnError)
{
    EXPECT_THROW(build_slinky_view({}, {}, SlinkyOptions{}, 0), Error);
}

TEST(Slinky, PodAnnotationsToOptions)
{
    EXPECT_EQ(pod_m2g_options({{"m2g.slurm.net/topology", "strict:nvlink"},
                               {"m2g.slurm.net/class", "training"},
                               {"m2g.slurm.net/segment", "18"},
                               {"m2g.slurm.net/tags", "team=llm, run=7"},
                               {"other.io/x", "ignored"}}),
              (std::vector<std::string>{"--m2g-topology=strict:nvlink", "--m2g-segment=18", "--m2g-class=training",
                                        "--m2g-tag=team=llm", "--m2g-tag=run=7"}));
    try {
        pod_m2g_options({{"m2g.slurm.net/topology", "sometimes"}});
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("pod annotation m2g.slurm.net/topology=sometimes: ", 0), 0u) << e.what();
    }
    try {
        pod_m2g_options({{"m2g.slurm.net/priority", "high"}});
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "pod annotation m2g.slurm.net/priority: unknown; accepted: m2g.slurm.net/topology, "
                  "m2g.slurm.net/segment, m2g.slurm.net/class, m2g.slurm.net/defer, m2g.slurm.net/recipe, "
                  "m2g.slurm.net/tags");
    }
}
