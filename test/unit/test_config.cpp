// m2g.conf parsing and validation: every error names file:line and says
// what is accepted.
#include <gtest/gtest.h>

#include <string>

#include "topology/config.hpp"
#include "topology/error.hpp"

using namespace m2g;

namespace {

Model build(const std::string& text, std::vector<std::string>* warnings = nullptr)
{
    return build_model(parse_m2g_conf(text, "m2g.conf"), warnings);
}

// The message of the error `text` raises, or "" if it loads.
std::string error_of(const std::string& text)
{
    try {
        build(text);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

const std::string kTwoRacks =
    "NodeName=r[01-02]n[01-18] Gpus=4\n"
    "DomainName=nvl01 Nodes=r01n[01-18] Size=18\n"
    "DomainName=nvl02 Nodes=r02n[01-18] Size=18\n"
    "SwitchName=leaf01 Domains=nvl[01-02]\n";

}  // namespace

TEST(Config, LoadsTheEightRackFixture)
{
    std::vector<std::string> warnings;
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf", &warnings);
    EXPECT_TRUE(warnings.empty());
    EXPECT_EQ(m.cluster_name, "nvl72x8");
    EXPECT_EQ(m.nodes.size(), 144u);
    EXPECT_EQ(m.total_gpus(), 576);
    ASSERT_EQ(m.domains.size(), 8u);
    EXPECT_EQ(m.domains[2].name, "nvl03");
    EXPECT_EQ(m.domains[2].size, 18);
    EXPECT_EQ(m.domains[2].gpus, 72);
    EXPECT_EQ(m.nodes[m.find_node("r03n07")].domain, 2);
    ASSERT_EQ(m.switches.size(), 3u);
    const Switch& spine = m.switches[m.find_switch("spine01")];
    EXPECT_EQ(spine.level, SwitchLevel::Spine);
    EXPECT_EQ(spine.height, 1);
    EXPECT_EQ(spine.all_nodes.size(), 144u);
    EXPECT_EQ(spine.link_gbps, 57600);
    EXPECT_EQ(m.domains[m.find_domain("nvl06")].parent, m.find_switch("leaf02"));
    ASSERT_EQ(m.fault_domains.size(), 4u);
    EXPECT_EQ(m.fault_domains[0].nodes.size(), 72u);
    EXPECT_EQ(m.fault_domains[0].power_budget_kw, 560);
    EXPECT_EQ(m.site_power_budget_kw, 1200);
}

TEST(Config, RanksFollowTheTreeNotDeclarationOrder)
{
    Model m = build(
        "NodeName=a[1-2],b[1-2] Gpus=4\n"
        "DomainName=da Nodes=a[1-2]\n"
        "DomainName=db Nodes=b[1-2]\n"
        "SwitchName=s1 Domains=db\n"
        "SwitchName=s2 Domains=da\n"
        "SwitchName=top Switches=s[1-2]\n");
    EXPECT_EQ(m.nodes[m.find_node("b1")].rank, 0);
    EXPECT_EQ(m.nodes[m.find_node("b2")].rank, 1);
    EXPECT_EQ(m.nodes[m.find_node("a1")].rank, 2);
}

TEST(Config, AnyDomainSizeNotOnlyPowersOfTwo)
{
    Model m = load_model(M2G_FIXTURES "/dgx-h100-pod.conf");
    EXPECT_EQ(m.domains.size(), 5u);
    EXPECT_EQ(m.domains[0].size, 1);
    EXPECT_EQ(m.switches[m.find_switch("core01")].level, SwitchLevel::Core);
    EXPECT_EQ(m.switches[m.find_switch("leaf03")].all_nodes.size(), 5u);
    Model odd = build("NodeName=n[1-7] Gpus=4\nDomainName=d Nodes=n[1-7] Size=9\n");
    EXPECT_EQ(odd.domains[0].size, 9);
    EXPECT_EQ(odd.domains[0].nodes.size(), 7u);
}

TEST(Config, CommentsContinuationCaseAndBlankLines)
{
    Model m = build(
        "# comment\n\n"
        "nodename=n[1-2] GPUS=8   # trailing comment\n"
        "DomainName=d \\\n"
        "   Nodes=n[1-2]\n"
        "ClusterName=x\\#1\n");
    EXPECT_EQ(m.nodes.size(), 2u);
    EXPECT_EQ(m.nodes[0].gpus, 8);
    EXPECT_EQ(m.domains[0].nodes.size(), 2u);
    EXPECT_EQ(m.cluster_name, "x#1");
}

TEST(Config, WarnsAboutNodesNoSwitchReachesAndSeveralRoots)
{
    std::vector<std::string> w;
    build(kTwoRacks + "NodeName=login1\nNodeName=x1\nSwitchName=other Nodes=x1\n", &w);
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0], "1 node(s) are not reached by any switch: login1");
    EXPECT_EQ(w[1], "the fabric has 2 roots (leaf01,other); jobs cannot span them");
}

// ---- every validation error, with its message ----------------------------

TEST(ConfigErrors, UnknownKeyNamesLineAndAcceptedKeys)
{
    EXPECT_EQ(error_of("NodeName=n1 Gpus=4\nDomainName=d Nodes=n1 Sise=4\n"),
              "m2g.conf:2: unknown key 'Sise' in a DomainName line; accepted keys: Nodes, Size, NVLinkGbps, "
              "PowerBudgetKW");
    EXPECT_EQ(error_of("NodeName=n1 Gpus=4\nRackName=r1\n"),
              "m2g.conf:2: unknown key 'RackName'; a line starts with one of NodeName, DomainName, SwitchName, "
              "FaultDomain, PartitionName, or is one of ClusterName, SitePowerBudgetKW, DefaultTopology, PreferWaitSec, SparePerDomain, "
              "HealthFile");
}

TEST(ConfigErrors, DuplicateNode)
{
    EXPECT_EQ(error_of("NodeName=n[1-4] Gpus=4\nNodeName=n[4-5] Gpus=4\n"),
              "m2g.conf:2: node n4 is already declared at m2g.conf:1; declare each node once");
}

TEST(ConfigErrors, NodeInTwoDomains)
{
    EXPECT_EQ(error_of("NodeName=n[1-4] Gpus=4\n"
                       "DomainName=a Nodes=n[1-2]\n"
                       "DomainName=b Nodes=n[2-3]\n"),
              "m2g.conf:3: node n2 is in DomainName=b and already in DomainName=a (m2g.conf:2); a node belongs to "
              "one NVLink domain");
    EXPECT_EQ(error_of("NodeName=n[1-4] Gpus=4\nDomainName=a Nodes=n[1-2],n1\n"),
              "m2g.conf:2: DomainName=a lists node n1 twice");
}

TEST(ConfigErrors, UndefinedSwitchDomainAndNode)
{
    EXPECT_EQ(error_of(kTwoRacks + "SwitchName=spine Switches=leaf[01-02]\n"),
              "m2g.conf:5: SwitchName=spine lists switch leaf02, which no SwitchName line defines");
    EXPECT_EQ(error_of(kTwoRacks + "SwitchName=leaf02 Domains=nvl03\n"),
              "m2g.conf:5: SwitchName=leaf02 lists domain nvl03, which no DomainName line defines");
    EXPECT_EQ(error_of("NodeName=n1 Gpus=4\nDomainName=d Nodes=n[1-2]\n"),
              "m2g.conf:2: DomainName=d lists node n2, which no NodeName line declares");
}

TEST(ConfigErrors, Cycle)
{
    EXPECT_EQ(error_of(kTwoRacks +
                       "SwitchName=a Switches=b\n"
                       "SwitchName=b Switches=c\n"
                       "SwitchName=c Switches=a\n"),
              "m2g.conf:5: switch cycle: a -> c -> b -> a; the fabric must be a tree");
    EXPECT_EQ(error_of(kTwoRacks + "SwitchName=a Switches=a\n"),
              "m2g.conf:5: SwitchName=a lists itself as a child");
}

TEST(ConfigErrors, DomainLargerThanDeclaredSize)
{
    EXPECT_EQ(error_of("NodeName=r01n[01-19] Gpus=4\nDomainName=nvl01 Nodes=r01n[01-19] Size=18\n"),
              "m2g.conf:2: DomainName=nvl01 has 19 nodes but Size=18; raise Size or move nodes to another domain");
}

TEST(ConfigErrors, TreeShape)
{
    EXPECT_EQ(error_of(kTwoRacks + "SwitchName=leaf02 Domains=nvl02\n"),
              "m2g.conf:5: domain nvl02 is attached to SwitchName=leaf02 and to SwitchName=leaf01 (m2g.conf:4); a "
              "domain has one leaf switch");
    EXPECT_EQ(error_of(kTwoRacks + "SwitchName=s1 Switches=leaf01\nSwitchName=s2 Switches=leaf01\n"),
              "m2g.conf:6: switch leaf01 is a child of SwitchName=s2 and of SwitchName=s1 (m2g.conf:5); the fabric "
              "must be a tree");
    EXPECT_EQ(error_of(kTwoRacks + "SwitchName=x Nodes=r01n01\n"),
              "m2g.conf:5: node r01n01 is in DomainName=nvl01; attach the domain with Domains=, not its nodes with "
              "Nodes=");
    EXPECT_EQ(error_of("NodeName=n1\nSwitchName=a Nodes=n1\nSwitchName=b Nodes=n1\n"),
              "m2g.conf:3: node n1 is attached to SwitchName=b and to SwitchName=a (m2g.conf:2); a node has one leaf "
              "switch");
    EXPECT_EQ(error_of(kTwoRacks + "SwitchName=s Domains=nvl01 Switches=leaf01\n"),
              "m2g.conf:5: SwitchName=s needs exactly one of Switches=, Domains= or Nodes= (its children)");
    EXPECT_EQ(error_of(kTwoRacks + "SwitchName=nvl01 Switches=leaf01\n"),
              "m2g.conf:5: SwitchName=nvl01 has the name of DomainName=nvl01 (m2g.conf:2); Slurm's topology needs one "
              "namespace for both");
    EXPECT_EQ(error_of(kTwoRacks + "SwitchName=leaf01 Domains=nvl01\n"),
              "m2g.conf:5: SwitchName=leaf01 is already defined at m2g.conf:4");
    EXPECT_EQ(error_of(kTwoRacks + "SwitchName=s Level=leaf Switches=leaf01\n"),
              "m2g.conf:5: SwitchName=s is Level=leaf but lists Switches=; a leaf holds Domains= or Nodes=");
    EXPECT_EQ(error_of("NodeName=n1\nSwitchName=s Level=spine Nodes=n1\n"),
              "m2g.conf:2: SwitchName=s is Level=spine but holds no switches; use Level=leaf for a switch with "
              "Domains= or Nodes=");
}

TEST(ConfigErrors, BadValues)
{
    EXPECT_EQ(error_of("NodeName=n1 Gpus=four\n"),
              "m2g.conf:1: Gpus=four is not valid; expected a whole number from 0 to 1024");
    EXPECT_EQ(error_of("NodeName=n1 Gpus=-1\n"),
              "m2g.conf:1: Gpus=-1 is not valid; expected a whole number from 0 to 1024");
    EXPECT_EQ(error_of("NodeName=n1\nDomainName=d Nodes=n1 Size=0\n"),
              "m2g.conf:2: Size=0 is not valid; expected a whole number from 1 to 1000000");
    EXPECT_EQ(error_of("NodeName=n1 NicGbps=fast\n"),
              "m2g.conf:1: NicGbps=fast is not valid; expected a non-negative number such as 400 or 12.5");
    EXPECT_EQ(error_of("NodeName=n1\nSwitchName=s Level=tor Nodes=n1\n"),
              "m2g.conf:2: Level=tor is not valid; expected leaf, spine or core");
    EXPECT_EQ(error_of("NodeName=n1\nFaultDomain=f Type=zone Nodes=n1\n"),
              "m2g.conf:2: Type=zone is not valid; expected one of rack, row, pdu, power_feed, cooling, room");
    EXPECT_EQ(error_of("NodeName=n1 Gpus=4 Gpus=8\n"), "m2g.conf:1: key Gpus given twice");
    EXPECT_EQ(error_of("NodeName=n1 Gpus=\n"), "m2g.conf:1: Gpus= needs a value");
    EXPECT_EQ(error_of("NodeName=n1 fast\n"), "m2g.conf:1: expected Key=Value, found \"fast\"");
    EXPECT_EQ(error_of("NodeName=n1\nDomainName=d[1-2] Nodes=n1\n"),
              "m2g.conf:2: DomainName=d[1-2]: one name per line (hostlist expressions are accepted only in "
              "NodeName, Nodes, Domains and Switches)");
    EXPECT_EQ(error_of("NodeName=n1\nDomainName=d\n"), "m2g.conf:2: DomainName=d needs Nodes=<hostlist>");
    EXPECT_EQ(error_of("ClusterName=a\nClusterName=b\nNodeName=n1\n"), "m2g.conf:2: ClusterName is set twice");
    EXPECT_EQ(error_of("ClusterName=a Gpus=4\n"), "m2g.conf:1: ClusterName stands alone on its line");
    EXPECT_EQ(error_of("# nothing\n"), "no nodes declared: add NodeName=<hostlist> lines");
    EXPECT_NE(error_of("NodeName=n[1-\n").find("m2g.conf:1: NodeName=: "), std::string::npos);
}

TEST(Config, PlacementPolicyKeys)
{
    Model m = build("DefaultTopology=strict:leaf\nPreferWaitSec=60\nSparePerDomain=1\nHealthFile=/run/m2g/health.json\n"
                    "NodeName=n1\n");
    EXPECT_EQ(m.policy.default_topology, "strict:leaf");
    EXPECT_EQ(m.policy.prefer_wait_sec, 60);
    EXPECT_EQ(m.policy.spare_per_domain, 1);
    EXPECT_EQ(m.policy.health_file, "/run/m2g/health.json");
    EXPECT_EQ(build("NodeName=n1\n").policy.default_topology, "prefer:nvlink");
    EXPECT_EQ(error_of("DefaultTopology=tight\nNodeName=n1\n"),
              "m2g.conf:1: DefaultTopology=tight: expected strict, prefer or any, optionally followed by :nvlink, leaf or "
              "spine (e.g. strict:nvlink)");
    EXPECT_EQ(error_of("HealthFile=health.json\nNodeName=n1\n"), "m2g.conf:1: HealthFile=health.json needs an absolute path");
    // Partition defaults inherit what they do not set.
    Model p = build("PreferWaitSec=60\nNodeName=n1\nPartitionName=gpu DefaultTopology=strict:nvlink\n"
                    "PartitionName=batch DefaultTopology=any PreferWaitSec=0\n");
    EXPECT_EQ(p.policy_for("gpu").default_topology, "strict:nvlink");
    EXPECT_EQ(p.policy_for("gpu").prefer_wait_sec, 60);
    EXPECT_EQ(p.policy_for("batch").prefer_wait_sec, 0);
    EXPECT_EQ(p.policy_for("debug").default_topology, "prefer:nvlink");
    EXPECT_EQ(error_of("NodeName=n1\nPartitionName=gpu Topology=strict\n"),
              "m2g.conf:2: unknown key 'Topology' in a PartitionName line; accepted keys: DefaultTopology, "
              "PreferWaitSec, SparePerDomain");
    EXPECT_EQ(error_of("NodeName=n1\nPartitionName=gpu\nPartitionName=gpu\n"),
              "m2g.conf:3: PartitionName=gpu is already defined at m2g.conf:2");
    EXPECT_EQ(error_of("PreferWaitSec=-5\nNodeName=n1\n"),
              "m2g.conf:1: PreferWaitSec=-5 is not valid; expected a whole number from 0 to 604800");
}

TEST(ConfigErrors, MissingFileNamesThePath)
{
    try {
        load_model("/nonexistent/m2g.conf");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "/nonexistent/m2g.conf: cannot open: No such file or directory");
    }
}
