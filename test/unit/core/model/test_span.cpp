// Where a node set sits: the words behind `m2g topology locate` and the demo.
#include <gtest/gtest.h>

#include "core/model/config.hpp"
#include "core/base/hostlist.hpp"
#include "core/model/span.hpp"

using namespace m2g;

namespace {
std::string where(const Model& m, const std::string& hl)
{
    auto nodes = hostlist_expand(hl);
    return describe(m, span_of(m, nodes), nodes.size());
}
}  // namespace

TEST(Span, WholeDomainsUnderOneLeaf)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    EXPECT_EQ(where(m, "r02n[01-18],r04n[01-18]"),
              "36 nodes in 2 NVLink domains (nvl02 18/18, nvl04 18/18, all whole) under 1 leaf switch (leaf01)");
    Span s = span_of(m, hostlist_expand("r04n[01-18],r02n[01-18]"));
    EXPECT_EQ(s.whole_domains(m), 2);
    EXPECT_EQ(m.domains[s.domains[0].domain].name, "nvl02");  // rank order, not input order
    EXPECT_EQ(m.switches[s.top_switch].name, "leaf01");
}

TEST(Span, PartialDomainsAcrossLeaves)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    EXPECT_EQ(where(m, "r01n[01-18],r05n[01-04]"),
              "22 nodes in 2 NVLink domains (nvl01 18/18, nvl05 4/18, 1 whole) under 2 leaf switches "
              "(leaf01,leaf02), joined at spine01");
    EXPECT_EQ(where(m, "r03n07"), "1 node in 1 NVLink domain (nvl03 1/18) under 1 leaf switch (leaf01)");
    EXPECT_EQ(where(m, "r03n[01-02],gpu99"),
              "3 nodes in 1 NVLink domain (nvl03 2/18) under 1 leaf switch (leaf01); 1 not in m2g.conf");
}

TEST(Span, NodesOutsideDomainsAndSeparateFabrics)
{
    Model m = build_model(parse_m2g_conf("NodeName=a[1-4],b[1-2] Gpus=8\n"
                                         "SwitchName=s1 Nodes=a[1-4]\n"
                                         "SwitchName=s2 Nodes=b[1-2]\n",
                                         "m2g.conf"));
    EXPECT_EQ(where(m, "a[1-2]"), "2 nodes outside any NVLink domain under 1 leaf switch (s1)");
    EXPECT_EQ(where(m, "a1,b1"),
              "2 nodes outside any NVLink domain under 2 leaf switches (s1,s2), across separate fabrics");
}
