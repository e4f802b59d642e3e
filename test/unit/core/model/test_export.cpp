// Export to Slurm's topology files, import from topology.conf, the readable
// tree: golden files under test/fixtures, and round trips through the real
// 847-host Lingjun fabric.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "test/unit/fixture_files.hpp"
#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/model/export.hpp"

using namespace m2g;

namespace {

using m2g::test::data_file;
using m2g::test::fixture;

// Every switch's parent and the leaf of every node, by name.
struct Shape {
    std::map<std::string, std::string> switch_parent;
    std::map<std::string, std::string> node_parent;
    bool operator==(const Shape& o) const
    {
        return switch_parent == o.switch_parent && node_parent == o.node_parent;
    }
};

Shape shape_of(const Model& m)
{
    Shape s;
    const auto sw = slurm_switches(m);
    for (const auto& x : sw) {
        s.switch_parent[x.name] = x.parent == kNone ? "" : sw[x.parent].name;
        for (int n : x.nodes)
            s.node_parent[m.nodes[n].name] = x.name;
    }
    return s;
}

Model import(const std::string& text, SlurmImportOptions opts = {})
{
    return build_model(parse_slurm_topology_conf(text, "topology.conf", opts));
}

}  // namespace

TEST(Export, ShowTreeMatchesGolden)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    EXPECT_EQ(render_tree(m), fixture("nvl72-8rack.show"));
    EXPECT_EQ(render_tree(load_model(M2G_FIXTURES "/dgx-h100-pod.conf")), fixture("dgx-h100-pod.show"));
}

TEST(Export, SlurmTreeMatchesGolden)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    EXPECT_EQ(export_slurm_tree(m), fixture("nvl72-8rack.tree"));
    EXPECT_EQ(export_slurm_tree(load_model(M2G_FIXTURES "/dgx-h100-pod.conf")), fixture("dgx-h100-pod.tree"));
}

TEST(Export, SlurmBlockMatchesGolden)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    EXPECT_EQ(export_slurm_block(m), fixture("nvl72-8rack.block"));
}

TEST(Export, SlurmSwitchLevelsPutDomainsAtZero)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    const auto sw = slurm_switches(m);
    ASSERT_EQ(sw.size(), 11u);
    EXPECT_EQ(sw[0].name, "nvl01");
    EXPECT_EQ(sw[0].level, 0);
    EXPECT_EQ(sw[0].nodes.size(), 18u);
    EXPECT_EQ(sw[8].name, "leaf01");
    EXPECT_EQ(sw[8].level, 1);
    EXPECT_EQ(sw[10].name, "spine01");
    EXPECT_EQ(sw[10].level, 2);
    EXPECT_EQ(sw[10].parent, kNone);
    EXPECT_EQ(sw[0].parent, 8);
    EXPECT_EQ(sw[7].parent, 9);
}

TEST(Export, NvlinkDomainsSurviveTreeExportAndImport)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    SlurmImportOptions opts;
    opts.gpus_per_node = 4;
    opts.leaf_as_domain = true;
    Model back = import(export_slurm_tree(m), opts);
    EXPECT_EQ(shape_of(back), shape_of(m));
    ASSERT_EQ(back.domains.size(), 8u);
    EXPECT_EQ(back.domains[3].name, "nvl04");
    EXPECT_EQ(back.total_gpus(), 576);
    EXPECT_EQ(back.switches[back.find_switch("spine01")].link_gbps, 57600);
}

TEST(Export, M2gConfWriterRoundTrips)
{
    for (const char* f : {"/nvl72-8rack.conf", "/dgx-h100-pod.conf"}) {
        Model m = load_model(std::string(M2G_FIXTURES) + f);
        const std::string text = write_m2g_conf(m);
        Model back = build_model(parse_m2g_conf(text, "written"));
        EXPECT_EQ(write_m2g_conf(back), text) << f;
        EXPECT_EQ(shape_of(back), shape_of(m)) << f;
        EXPECT_EQ(back.fault_domains.size(), m.fault_domains.size()) << f;
    }
}

TEST(Lingjun, ImportExportReimportKeepsNodesAndParents)
{
    const std::string original = read_text_file(data_file("lingjun2023_topology.conf"));
    SlurmImportOptions opts;
    opts.gpus_per_node = 8;
    Model first = import(original, opts);
    EXPECT_EQ(first.nodes.size(), 847u);
    EXPECT_EQ(first.switches.size(), 123u);
    EXPECT_EQ(first.roots().size(), 1u);
    EXPECT_EQ(first.switches[first.find_switch("G6")].level, SwitchLevel::Core);
    EXPECT_EQ(first.switches[first.find_switch("G6-P8")].level, SwitchLevel::Spine);
    EXPECT_EQ(first.switches[first.find_switch("G6-P8-S1")].level, SwitchLevel::Leaf);

    // Through m2g.conf and back out as topology.conf, then in again.
    const std::string conf = write_m2g_conf(first);
    Model via_conf = build_model(parse_m2g_conf(conf, "lingjun.m2g.conf"));
    const std::string exported = export_slurm_tree(via_conf);
    Model second = import(exported, opts);

    EXPECT_EQ(shape_of(second), shape_of(first));
    std::set<std::string> a, b;
    for (const auto& n : first.nodes)
        a.insert(n.name);
    for (const auto& n : second.nodes)
        b.insert(n.name);
    EXPECT_EQ(a, b);
    EXPECT_EQ(second.total_gpus(), 847 * 8);
    // Every host sits under the same ToR, aggregation and core switch.
    const Shape s = shape_of(second);
    EXPECT_EQ(s.node_parent.at("lj000"), "G6-P8-S1");
    EXPECT_EQ(s.switch_parent.at("G6-P8-S1"), "G6-P8");
    EXPECT_EQ(s.switch_parent.at("G6-P8"), "G6");
}

TEST(Lingjun, IrregularTorSizesAreKept)
{
    Model m = import(read_text_file(data_file("lingjun2023_topology.conf")));
    std::map<size_t, int> hosts_per_tor;
    for (const auto& s : m.switches)
        if (s.level == SwitchLevel::Leaf)
            ++hosts_per_tor[s.nodes.size()];
    // From the data's README: 8 hosts on 68 ToRs, 7 on 23, 6 on 15, 5 on 7.
    EXPECT_EQ(hosts_per_tor[8], 68);
    EXPECT_EQ(hosts_per_tor[7], 23);
    EXPECT_EQ(hosts_per_tor[6], 15);
    EXPECT_EQ(hosts_per_tor[5], 7);
}

TEST(ImportErrors, NameTheLine)
{
    try {
        import("SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n3 Switches=s1\n");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "topology.conf:2: SwitchName=s2 needs exactly one of Switches= or Nodes=");
    }
    try {
        import("BlockName=b1 Nodes=n[1-2]\n");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "topology.conf:1: unknown key 'BlockName'; a topology/tree topology.conf line starts with "
                  "SwitchName=");
    }
}
