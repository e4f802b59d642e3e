// The Slinky view: Kubernetes Nodes and slurmd pods (v1 wire format) to
// m2g.conf, topology annotations, signals, and pod annotations to options.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.hpp"
#include "core/job/intent.hpp"
#include "core/job/recipes.hpp"
#include "tools/formats/slinky.hpp"

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

// topograph before v1.0 and the pod-hostname label slurm-operator sets.
TEST(Slinky, OldTopographKeysAndPodHostnameLabel)
{
    const K8sNode n = parse_k8s_node(
        R"({"metadata":{"name":"k1","labels":{"network.topology.nvidia.com/accelerator":"nvl-a",)"
        R"("network.topology.nvidia.com/leaf":"sw-leaf-1","network.topology.nvidia.com/spine":"sw-spine-1"}},)"
        R"("spec":{},"status":{"allocatable":{"nvidia.com/gpu":"4"},"conditions":[{"type":"Ready","status":"True"}]}})",
        "k1");
    const K8sPod p = parse_k8s_pod(
        R"({"metadata":{"name":"slurm-worker-gpu-0","namespace":"slurm","creationTimestamp":"2026-11-30T01:00:00Z",)"
        R"("labels":{"nodeset.slinky.slurm.net/pod-hostname":"gpu-0"}},"spec":{"nodeName":"k1","hostname":"other"}})",
        "pod");
    EXPECT_EQ(p.created, 1796000400);
    const SlinkyView v = build_slinky_view({n}, {p}, SlinkyOptions{}, 1796000400);
    EXPECT_EQ(v.slurm_to_k8s.at("gpu-0"), "k1");
    EXPECT_EQ(v.annotations.at("k1"), "default:sw-spine-1:sw-leaf-1:nvl01");
    EXPECT_NE(v.conf.find("DomainName=nvl01 Nodes=gpu-0 Size=1  # network.topology.nvidia.com/accelerator=nvl-a"),
              std::string::npos)
        << v.conf;
    // A slurmd pod being deleted is no Slurm node any more.
    const K8sPod gone = parse_k8s_pod(
        R"({"metadata":{"name":"w1","deletionTimestamp":"2026-11-30T01:00:00Z"},"spec":{"nodeName":"k1"}})", "pod");
    EXPECT_TRUE(gone.deleting);
    EXPECT_THROW(parse_k8s_pod(R"({"metadata":{"name":"w","creationTimestamp":"yesterday"}})", "pod"), ParseError);
}

namespace {

K8sPod bridge_pod(const std::string& ns, const std::string& name, std::map<std::string, std::string> ann)
{
    K8sPod p;
    p.ns = ns;
    p.name = name;
    p.scheduler = "slurm-bridge-scheduler";
    p.created = 1796000400;  // 2026-11-30T01:00:00Z
    p.annotations = std::move(ann);
    return p;
}

}  // namespace

// Annotations -> the M2G_* variables spank_m2g would send -> the document
// job_submit/m2g reads -> one intent per job.
TEST(Slinky, BridgeIntentsRoundTrip)
{
    const RecipeCatalog catalog = parse_recipes(
        "RecipeName=llama3-70b-finetune Model=llama3-70b Gpus=64 Topology=strict:nvlink Class=finetune\n", "r.conf");
    std::vector<K8sPod> pods = {
        bridge_pod("ml", "train-0", {{"m2g.slurm.net/topology", "strict:nvlink"}, {"m2g.slurm.net/class", "training"},
                                     {"m2g.slurm.net/defer", "until=now+2h"}, {"m2g.slurm.net/tags", "team=llm"}}),
        bridge_pod("ml", "train-1", {{"m2g.slurm.net/topology", "strict:nvlink"}, {"m2g.slurm.net/class", "training"},
                                     {"m2g.slurm.net/defer", "until=now+2h"}, {"m2g.slurm.net/tags", "team=llm"}}),
        bridge_pod("ml", "odd-0", {{"m2g.slurm.net/class", "inference"}}),
        bridge_pod("ml", "bad-0", {{"m2g.slurm.net/class", "bogus"}}),
        bridge_pod("ml", "ft-0", {{"m2g.slurm.net/recipe", "llama3-70b-finetune"}, {"m2g.slurm.net/class", "batch"}}),
        bridge_pod("web", "plain", {}),
    };
    const BridgeIntent t0 = pod_bridge_intent(pods[0], nullptr);
    EXPECT_EQ(t0.error, "");
    EXPECT_EQ(t0.env, (std::vector<std::pair<std::string, std::string>>{{"M2G_TOPOLOGY", "strict:nvlink"},
                                                                         {"M2G_CLASS", "training"},
                                                                         {"M2G_DEFER", "until=1796007600"},
                                                                         {"M2G_TAGS", "team=llm"}}))
        << "now+2h counts from the pod's creation";
    EXPECT_EQ(pod_bridge_intent(pods[4], nullptr).error,
              "pod annotation m2g.slurm.net/recipe=llama3-70b-finetune: m2g-slinky has no recipe catalog (start it "
              "with --recipes FILE)");
    const BridgeIntent ft = pod_bridge_intent(pods[4], &catalog);
    ASSERT_EQ(ft.error, "");
    std::map<std::string, std::string> fenv(ft.env.begin(), ft.env.end());
    EXPECT_EQ(fenv["M2G_CLASS"], "batch") << "an explicit annotation wins over the recipe";
    EXPECT_EQ(fenv["M2G_TOPOLOGY"], "strict:nvlink");
    EXPECT_EQ(fenv["M2G_GPUS"], "64");
    EXPECT_EQ(fenv["M2G_RECIPE"], "llama3-70b-finetune");

    const std::string text = bridge_intents_json(pods, &catalog, 1796001000);
    const BridgeIntents doc = parse_bridge_intents(text, "bridge-intents.json");
    EXPECT_EQ(doc.generated_at, 1796001000);
    ASSERT_EQ(doc.pods.size(), 6u);
    EXPECT_TRUE(doc.pods.at("web/plain").env.empty());
    EXPECT_EQ(doc.pods.at("ml/bad-0").error.rfind("pod annotation m2g.slurm.net/class=bogus: ", 0), 0u);

    // AdminComment as slurm-bridge writes it.
    EXPECT_EQ(bridge_pods(R"({"pods":["ml/train-0","ml/train-1"]})"),
              (std::vector<std::string>{"ml/train-0", "ml/train-1"}));
    EXPECT_TRUE(bridge_pods("m2g:[place=...]").empty());
    EXPECT_TRUE(bridge_pods(R"({"pods":"ml/train-0"})").empty());
    EXPECT_TRUE(bridge_pods("{not json").empty());

    BridgeResolution r = resolve_bridge_intent(doc, {"ml/train-0", "ml/train-1", "ml/train-2"});
    EXPECT_EQ(r.intent.error, "");
    EXPECT_EQ(r.unknown, std::vector<std::string>{"ml/train-2"});
    EXPECT_EQ(decode_intent({"M2G_TOPOLOGY=strict:nvlink"}).locality, Locality::Strict);
    std::vector<std::string> lines;
    for (const auto& [k, v] : r.intent.env)
        lines.push_back(k + "=" + v);
    const JobIntent ji = decode_intent(lines);
    EXPECT_EQ(ji.workload_class, WorkloadClass::Training);
    EXPECT_EQ(ji.defer_until, 1796007600);
    EXPECT_EQ(ji.tag("team"), "llm");

    r = resolve_bridge_intent(doc, {"ml/train-0", "ml/odd-0"});
    EXPECT_EQ(r.intent.error,
              "pods ml/train-0 and ml/odd-0 of one job ask for different m2g.slurm.net/* annotations; give every pod "
              "of the job the same ones");
    r = resolve_bridge_intent(doc, {"ml/bad-0"});
    EXPECT_EQ(r.intent.error.rfind("pod ml/bad-0: pod annotation m2g.slurm.net/class=bogus: ", 0), 0u)
        << r.intent.error;
    r = resolve_bridge_intent(doc, {"web/plain"});
    EXPECT_EQ(r.intent.error, "");
    EXPECT_TRUE(r.intent.env.empty());
}

TEST(Slinky, BridgeIntentsFileErrors)
{
    const auto msg = [](const std::string& text) {
        try {
            parse_bridge_intents(text, "f.json");
        } catch (const ParseError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_EQ(msg("[]"), "f.json: expected a JSON object");
    EXPECT_EQ(msg(R"({"version":"v0"})"), "f.json: version: 'v0'; expected m2g.bridge-intents/v1");
    EXPECT_EQ(msg(R"({"version":"m2g.bridge-intents/v1","pods":{}})"), "f.json: generated_at: expected epoch seconds");
    EXPECT_EQ(msg(R"({"version":"m2g.bridge-intents/v1","generated_at":1,"pods":{"a/b":{}}})"),
              "f.json: pods.a/b: expected env or error");
    EXPECT_EQ(msg(R"({"version":"m2g.bridge-intents/v1","generated_at":1,"pods":{"a/b":{"env":{"PATH":"/bin"}}}})"),
              "f.json: pods.a/b.env.PATH: expected an M2G_* variable with a string value");
    EXPECT_EQ(msg(R"({"version":"m2g.bridge-intents/v1","generated_at":1,"pods":{"a/b":{"env":{"M2G_CLASS":"x"}}}})")
                  .rfind("f.json: pods.a/b.env: spank_job_env M2G_CLASS=x: unknown class", 0),
              0u);
}
