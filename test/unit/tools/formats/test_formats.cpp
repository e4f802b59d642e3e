// Topology exports for Slurm's topology.yaml, Kueue, KAI, Volcano and node
// labels, and the imports back: golden files under test/fixtures (checked
// against the projects' schemas by topology-formats.sh), round trips, and the
// errors a site meets with names Kubernetes refuses.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include "test/unit/fixture_files.hpp"
#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/model/export.hpp"
#include "tools/formats/formats.hpp"

using namespace m2g;

namespace {

using m2g::test::data_file;
using m2g::test::fixture;

// Parent of every domain, switch and domain-less node, by name.
std::map<std::string, std::string> parents(const Model& m)
{
    std::map<std::string, std::string> p;
    for (const Domain& d : m.domains)
        p["domain " + d.name] = d.parent == kNone ? "" : m.switches[d.parent].name;
    for (const Switch& s : m.switches)
        p["switch " + s.name] = s.parent == kNone ? "" : m.switches[s.parent].name;
    for (const Node& n : m.nodes)
        p["node " + n.name] = n.domain != kNone ? m.domains[n.domain].name
                              : n.leaf != kNone ? m.switches[n.leaf].name
                                                : "";
    return p;
}

Model nvl8() { return load_model(M2G_FIXTURES "/nvl72-8rack.conf"); }

std::string error_of(const std::function<void()>& f)
{
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Formats, ParseFormatNamesAndRejectsOthers)
{
    EXPECT_EQ(parse_export_format("slurm-yaml"), ExportFormat::SlurmYaml);
    EXPECT_EQ(parse_export_format("volcano"), ExportFormat::Volcano);
    const std::string e = error_of([] { parse_export_format("yunikorn"); });
    EXPECT_NE(e.find("unknown export format 'yunikorn'"), std::string::npos) << e;
    EXPECT_NE(e.find("kueue, kai, volcano, labels"), std::string::npos) << e;
}

TEST(Formats, GoldenExports)
{
    const Model m = nvl8();
    EXPECT_EQ(export_slurm_yaml(m), fixture("nvl72-8rack.topology.yaml"));
    EXPECT_EQ(export_kueue(m), fixture("nvl72-8rack.kueue.yaml"));
    EXPECT_EQ(export_kai(m), fixture("nvl72-8rack.kai.yaml"));
    EXPECT_EQ(export_volcano(m), fixture("nvl72-8rack.volcano.yaml"));
    EXPECT_EQ(export_node_labels(m), fixture("nvl72-8rack.labels.yaml"));
    // The dispatcher writes the same text.
    EXPECT_EQ(export_topology(m, ExportFormat::Labels), fixture("nvl72-8rack.labels.yaml"));
    EXPECT_EQ(export_topology(m, ExportFormat::SlurmTree), export_slurm_tree(m));
}

TEST(Formats, LevelLabelsCountTiersFromTheNode)
{
    const Model m = nvl8();
    const auto l = node_level_labels(m, m.find_node("r05n07"));
    ASSERT_EQ(l.size(), 3u);  // top down
    EXPECT_EQ(l[0], std::make_pair(std::string("fabric.topograph.run/tier-1"), std::string("spine01")));
    EXPECT_EQ(l[1], std::make_pair(std::string("fabric.topograph.run/tier-0"), std::string("leaf02")));
    EXPECT_EQ(l[2], std::make_pair(std::string("accelerator.topograph.run/domain"), std::string("nvl05")));
    EXPECT_EQ(level_label_keys(m),
              (std::vector<std::string>{"fabric.topograph.run/tier-1", "fabric.topograph.run/tier-0",
                                        "accelerator.topograph.run/domain"}));
    EXPECT_EQ(slinky_topology_spec(m, m.find_node("r05n07")),
              "nvl72x8-tree:spine01:leaf02:nvl05,nvl72x8-block:nvl05");
    ExportOptions o;
    o.name = "fab";
    EXPECT_EQ(slinky_topology_spec(m, m.find_node("r01n01"), o), "fab-tree:spine01:leaf01:nvl01,fab-block:nvl01");
}

TEST(Formats, SlurmYamlRoundTripsTreeAndBlock)
{
    const Model m = nvl8();
    const std::string y = export_slurm_yaml(m);
    SlurmYamlImportOptions o;
    o.base.gpus_per_node = 4;
    o.base.leaf_as_domain = true;
    Model tree = build_model(import_slurm_yaml(y, "topology.yaml", o));  // the cluster_default: the tree
    EXPECT_EQ(parents(tree), parents(m));
    EXPECT_EQ(tree.total_gpus(), 576);

    o.topology = "nvl72x8-block";
    o.base.leaf_as_domain = false;
    Model block = build_model(import_slurm_yaml(y, "topology.yaml", o));
    EXPECT_EQ(block.domains.size(), 8u);
    EXPECT_EQ(block.switches.size(), 0u);
    EXPECT_EQ(block.domains[block.find_domain("nvl03")].nodes.size(), 18u);
}

TEST(Formats, SlurmYamlImportReadsSlurmsOwnExample)
{
    // topology.yaml(5)'s example, trimmed: a tree and a block topology; the
    // tree is cluster_default, node lists are hostlists or YAML lists.
    const char* y = R"(---
- topology: topo1
  cluster_default: false
  block:
    block_sizes: [4, 16]
    blocks:
      - block: b1
        nodes: node[01-04]
      - block: b2
        nodes: [node05, "node[06-08]"]
- topology: topo2
  cluster_default: true
  tree:
    switches:
      - switch: sw_root
        children: s[1-2]
      - switch: s1
        nodes: node[01-02]
      - switch: s2
        nodes: node[03-04]
- topology: topo3
  flat: true
)";
    Model tree = build_model(import_slurm_yaml(y, "t.yaml"));
    EXPECT_EQ(tree.switches.size(), 3u);
    EXPECT_EQ(tree.nodes.size(), 4u);
    EXPECT_EQ(tree.switches[tree.find_switch("s1")].parent, tree.find_switch("sw_root"));
    SlurmYamlImportOptions o;
    o.topology = "topo1";
    Model block = build_model(import_slurm_yaml(y, "t.yaml", o));
    EXPECT_EQ(block.domains.size(), 2u);
    EXPECT_EQ(block.domains[block.find_domain("b2")].nodes.size(), 4u);
}

TEST(Formats, SlurmYamlImportErrorsSayWhereAndWhat)
{
    EXPECT_NE(error_of([] { import_slurm_yaml("topology: x\n", "t.yaml"); }).find("a list of topologies"),
              std::string::npos);
    SlurmYamlImportOptions o;
    o.topology = "nope";
    const std::string e = error_of([&] { import_slurm_yaml("- topology: a\n  flat: true\n", "t.yaml", o); });
    EXPECT_NE(e.find("no topology named 'nope'; the file has: a"), std::string::npos) << e;
    EXPECT_NE(error_of([] { import_slurm_yaml("- topology: a\n  flat: true\n", "t.yaml"); })
                  .find("no tree or block topology"),
              std::string::npos);
    const std::string both = error_of([] {
        import_slurm_yaml("- topology: a\n  tree:\n    switches:\n      - switch: s\n        nodes: n1\n"
                          "        children: t\n",
                          "t.yaml");
    });
    EXPECT_NE(both.find("t.yaml:4: switch s needs exactly one of 'children' or 'nodes'"), std::string::npos) << both;
    const std::string bad = error_of([] { import_slurm_yaml("- topology: [a\n", "t.yaml"); });
    EXPECT_NE(bad.find("t.yaml:"), std::string::npos) << bad;
    EXPECT_NE(bad.find("not valid YAML"), std::string::npos) << bad;
}

TEST(Formats, LabelsRoundTripKeepsTheTreeAndClusterName)
{
    const Model m = nvl8();
    LabelImportOptions o;
    o.gpus_per_node = 4;
    Model back = build_model(import_node_labels(export_node_labels(m), "labels.yaml", o));
    EXPECT_EQ(parents(back), parents(m));
    EXPECT_EQ(back.cluster_name, "nvl72x8");
    EXPECT_EQ(back.total_gpus(), 576);
    EXPECT_EQ(back.switches[back.find_switch("spine01")].level, SwitchLevel::Spine);
    // And out again: the same labels.
    EXPECT_EQ(export_node_labels(back), export_node_labels(m));
}

TEST(Formats, LabelsImportReadsKubectlJsonAndLegacyTopographKeys)
{
    // As `kubectl get nodes -o json` prints it, with topograph 0.x's keys
    // and GPU capacity from the device plugin.
    const char* j = R"({"apiVersion": "v1", "kind": "List", "items": [
      {"apiVersion": "v1", "kind": "Node",
       "metadata": {"name": "gpu-a1", "labels": {"kubernetes.io/hostname": "gpu-a1",
          "network.topology.nvidia.com/accelerator": "nvl-a", "network.topology.nvidia.com/leaf": "leaf-a",
          "network.topology.nvidia.com/spine": "spine-1"}},
       "status": {"capacity": {"cpu": "144", "nvidia.com/gpu": "4"}}},
      {"apiVersion": "v1", "kind": "Node",
       "metadata": {"name": "gpu-a2", "labels": {"network.topology.nvidia.com/accelerator": "nvl-a",
          "network.topology.nvidia.com/leaf": "leaf-a", "network.topology.nvidia.com/spine": "spine-1"}},
       "status": {"capacity": {"nvidia.com/gpu": "4"}}},
      {"apiVersion": "v1", "kind": "Node",
       "metadata": {"name": "cpu-1", "labels": {"network.topology.nvidia.com/leaf": "leaf-b",
          "network.topology.nvidia.com/spine": "spine-1"}}}
    ]})";
    Model m = build_model(import_node_labels(j, "nodes.json"));
    EXPECT_EQ(m.nodes.size(), 3u);
    EXPECT_EQ(m.total_gpus(), 8);
    ASSERT_EQ(m.domains.size(), 1u);
    EXPECT_EQ(m.domains[0].nodes.size(), 2u);
    EXPECT_EQ(m.switches[m.domains[0].parent].name, "leaf-a");
    EXPECT_EQ(m.switches[m.nodes[m.find_node("cpu-1")].leaf].name, "leaf-b");
    EXPECT_EQ(m.switches[m.find_switch("leaf-b")].parent, m.find_switch("spine-1"));
}

TEST(Formats, LabelsImportErrors)
{
    EXPECT_NE(error_of([] { import_node_labels("kind: Pod\nmetadata: {name: x}\n", "x.yaml"); })
                  .find("expected a Kubernetes Node object"),
              std::string::npos);
    EXPECT_NE(error_of([] { import_node_labels("kind: List\nitems: []\n", "x.yaml"); }).find("no Node objects"),
              std::string::npos);
    const std::string twice = error_of([] {
        import_node_labels("kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: a}\n", "x.yaml");
    });
    EXPECT_NE(twice.find("node a is listed twice"), std::string::npos) << twice;
    // A domain whose nodes hang off two leaves: m2g-slinky's reading keeps
    // it under the leaf most of them use, and says so.
    std::vector<std::string> warnings;
    Model split = build_model(import_node_labels(
        "kind: Node\nmetadata: {name: a, labels: {accelerator.topograph.run/domain: d,"
        " fabric.topograph.run/tier-0: l1}}\n---\n"
        "kind: Node\nmetadata: {name: b, labels: {accelerator.topograph.run/domain: d,"
        " fabric.topograph.run/tier-0: l1}}\n---\n"
        "kind: Node\nmetadata: {name: c, labels: {accelerator.topograph.run/domain: d,"
        " fabric.topograph.run/tier-0: l2}}\n",
        "x.yaml", {}, &warnings));
    ASSERT_EQ(split.domains.size(), 1u);
    EXPECT_EQ(split.switches[split.domains[0].parent].name, "l1");
    ASSERT_FALSE(warnings.empty());
}

TEST(Formats, NamesKubernetesRefusesAreErrorsNotRenames)
{
    // Lingjun's switches are named like G6-P8-S1: fine for Slurm and as
    // label values, not as Volcano HyperNode names (RFC 1123, lower case).
    SlurmImportOptions so;
    so.gpus_per_node = 8;
    Model lj = build_model(parse_slurm_topology_conf(read_text_file(data_file("lingjun2023_topology.conf")),
                                                     "lingjun", so));
    const std::string e = error_of([&] { export_volcano(lj); });
    EXPECT_NE(e.find("cannot name a Kubernetes HyperNode"), std::string::npos) << e;
    EXPECT_NE(e.find("only lower-case letters, digits, '-' and '.'"), std::string::npos) << e;
    // Kueue levels carry the names as label values, which may be upper case.
    EXPECT_NE(export_kueue(lj).find("fabric.topograph.run/tier-2"), std::string::npos);
    // A name Kubernetes cannot take as a label value.
    ConfigSpec spec = parse_m2g_conf("NodeName=n[1-2] Gpus=4\nDomainName=rack_1/a Nodes=n[1-2]\n", "t.conf");
    const std::string lv = error_of([&] { export_node_labels(build_model(spec)); });
    EXPECT_NE(lv.find("NVLink domain 'rack_1/a' cannot be the value of label accelerator.topograph.run/domain"),
              std::string::npos)
        << lv;
    ExportOptions o;
    o.name = "My_Topology";
    EXPECT_NE(error_of([&] { export_kai(nvl8(), o); }).find("cannot name a Kubernetes Topology"), std::string::npos);
}

TEST(Formats, LingjunLabelsRoundTrip)
{
    SlurmImportOptions so;
    so.gpus_per_node = 8;
    Model lj = build_model(parse_slurm_topology_conf(read_text_file(data_file("lingjun2023_topology.conf")),
                                                     "lingjun", so));
    // Lingjun's host names are Kubernetes node names only if lower case.
    bool lower = true;
    for (const Node& n : lj.nodes)
        for (char c : n.name)
            lower = lower && !(c >= 'A' && c <= 'Z') && c != '_';
    if (!lower)
        GTEST_SKIP() << "Lingjun host names are not Kubernetes node names";
    LabelImportOptions lo;
    lo.gpus_per_node = 8;
    Model back = build_model(import_node_labels(export_node_labels(lj), "lingjun-labels", lo));
    EXPECT_EQ(parents(back), parents(lj));
    EXPECT_EQ(back.nodes.size(), 847u);
}
