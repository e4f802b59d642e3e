// m2g.conf parsing and validation: every error names file:line and says
// what is accepted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/power/admission.hpp"
#include "core/model/config.hpp"
#include "core/base/error.hpp"

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
              "FaultDomain, PartitionName, ClassName, or is one of ClusterName, SitePowerBudgetKW, DefaultTopology, "
              "PreferWaitSec, SparePerDomain, HealthFile, SignalsFile, SignalsTTLSec, SignalsPollSec, SignalsFailSafe, "
              "SignalsStatusFile, Admission, DefaultDeferrable, DefaultPowerPerGpuW, PowerRetrySec, RampRateKWPerMin, "
              "PaceIntervalSec, PaceGpusPerInterval, DeferExemptAccounts, DeferExemptGroups, NoDeferAction, "
              "MaintenanceAction, ReleaseCheckSec, EnergyPricePerKWh, EnergyCurrency, StatsDir, BridgeIntentsFile, "
              "PrivilegedAccounts, PrivilegedGroups, PrivilegedTags, PrivilegedClasses, CurtailMode, CapFloorW, "
              "IdlePowerPerGpuW, CurtailMarginPct, CheckpointGraceSec, CurtailIntervalSec, CurtailLeadSec, CurtailStartWaitSec, NodeAgentURL, "
              "NodeAgentTokenFile, "
              "DefaultPricePerGpuHour, PreemptCheckpointSec, PreemptRestartSec");
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

// ---- admission and signals (m2g.conf(5), ADMISSION AND SIGNALS) -------------

TEST(Config, AdmissionDefaults)
{
    const AdmissionPolicy a = build("NodeName=n1\n").admission;
    EXPECT_EQ(a.signals_file, "");
    EXPECT_EQ(a.signals_status_file, "");
    EXPECT_EQ(a.signals_ttl_sec, 300);
    EXPECT_EQ(a.signals_poll_sec, 5);
    EXPECT_EQ(a.failsafe, FailSafe::Last);
    EXPECT_EQ(a.mode, AdmissionMode::Enforce);
    EXPECT_EQ(a.default_power_w_per_gpu, 0);
    EXPECT_EQ(a.power_retry_sec, 300);
    EXPECT_EQ(a.ramp_rate_kw_per_min, 0);
    EXPECT_EQ(a.pace_interval_sec, 60);
    EXPECT_EQ(a.pace_gpus_per_interval, 0);
    EXPECT_TRUE(a.defer_exempt_accounts.empty());
    EXPECT_TRUE(a.defer_exempt_groups.empty());
    EXPECT_EQ(a.no_defer_action, NoDeferAction::Reject);
    EXPECT_EQ(a.maintenance_action, MaintenanceAction::Steer);
    EXPECT_EQ(a.release_check_sec, 5);
    for (int c = 0; c < 8; ++c) {
        EXPECT_EQ(a.classes[c].deferrable, AdmissionPolicy::default_classes()[c].deferrable) << c;
        EXPECT_EQ(a.classes[c].power_w_per_gpu, 0) << c;
    }
}

TEST(Config, AdmissionKeys)
{
    const Model m = build(
        "SignalsFile=/run/m2g/signals.json\n"
        "SignalsStatusFile=/run/m2g/signals.status.json\n"
        "SignalsTTLSec=120\n"
        "SignalsPollSec=2\n"
        "SignalsFailSafe=Defer\n"
        "Admission=monitor\n"
        "DefaultDeferrable=yes\n"
        "DefaultPowerPerGpuW=650\n"
        "PowerRetrySec=600\n"
        "RampRateKWPerMin=12.5\n"
        "PaceIntervalSec=30\n"
        "PaceGpusPerInterval=64\n"
        "DeferExemptAccounts=ops,oncall,ops\n"
        "DeferExemptGroups=sre\n"
        "PrivilegedAccounts=ops\n"
        "PrivilegedGroups=hpcadmin,sre\n"
        "PrivilegedTags=priority,sla\n"
        "PrivilegedClasses=benchmark\n"
        "NoDeferAction=convert\n"
        "MaintenanceAction=defer\n"
        "ReleaseCheckSec=10\n"
        "NodeName=n1\n"
        "ClassName=inference Deferrable=yes PowerPerGpuW=350\n"
        "classname=Training deferrable=NO\n"
        "ClassName=batch PowerPerGpuW=0\n");
    const AdmissionPolicy& a = m.admission;
    EXPECT_EQ(a.signals_file, "/run/m2g/signals.json");
    EXPECT_EQ(a.signals_status_file, "/run/m2g/signals.status.json");
    EXPECT_EQ(a.signals_ttl_sec, 120);
    EXPECT_EQ(a.signals_poll_sec, 2);
    EXPECT_EQ(a.failsafe, FailSafe::Defer);
    EXPECT_EQ(a.mode, AdmissionMode::Monitor);
    EXPECT_TRUE(a.classes[int(WorkloadClass::Unset)].deferrable);
    EXPECT_EQ(a.default_power_w_per_gpu, 650);
    EXPECT_EQ(a.power_retry_sec, 600);
    EXPECT_EQ(a.ramp_rate_kw_per_min, 12.5);
    EXPECT_EQ(a.pace_interval_sec, 30);
    EXPECT_EQ(a.privileged_accounts, std::vector<std::string>{"ops"});
    EXPECT_EQ(a.privileged_groups, (std::vector<std::string>{"hpcadmin", "sre"}));
    EXPECT_EQ(a.privileged_tags, (std::vector<std::string>{"priority", "sla"}));
    EXPECT_EQ(a.privileged_classes, std::vector<std::string>{"benchmark"});
    EXPECT_EQ(a.pace_gpus_per_interval, 64);
    EXPECT_EQ(a.defer_exempt_accounts, (std::vector<std::string>{"ops", "oncall"}));
    EXPECT_EQ(a.defer_exempt_groups, (std::vector<std::string>{"sre"}));
    EXPECT_EQ(a.no_defer_action, NoDeferAction::Convert);
    EXPECT_EQ(a.maintenance_action, MaintenanceAction::Defer);
    EXPECT_EQ(a.release_check_sec, 10);
    EXPECT_TRUE(a.classes[int(WorkloadClass::Inference)].deferrable);
    EXPECT_EQ(a.classes[int(WorkloadClass::Inference)].power_w_per_gpu, 350);
    EXPECT_FALSE(a.classes[int(WorkloadClass::Training)].deferrable);
    EXPECT_EQ(a.classes[int(WorkloadClass::Training)].power_w_per_gpu, 0);
    EXPECT_TRUE(a.classes[int(WorkloadClass::Batch)].deferrable);  // untouched default
    EXPECT_TRUE(a.classes[int(WorkloadClass::Finetune)].deferrable);
    // And what they mean for a job.
    JobIntent i;
    i.workload_class = WorkloadClass::Inference;
    EXPECT_EQ(power_w_per_gpu(a, i), 350);
    i.workload_class = WorkloadClass::Training;
    EXPECT_EQ(power_w_per_gpu(a, i), 650);
    EXPECT_FALSE(is_deferrable(a, i));
    // The other spellings of each keyword.
    const AdmissionPolicy b = build(
        "SignalsFailSafe=open\nAdmission=OFF\nNoDeferAction=reject\nMaintenanceAction=steer\nDefaultDeferrable=no\n"
        "NodeName=n1\n").admission;
    EXPECT_EQ(b.failsafe, FailSafe::Open);
    EXPECT_EQ(b.mode, AdmissionMode::Off);
    EXPECT_EQ(b.no_defer_action, NoDeferAction::Reject);
    EXPECT_EQ(b.maintenance_action, MaintenanceAction::Steer);
    EXPECT_FALSE(b.classes[0].deferrable);
    EXPECT_EQ(build("SignalsFailSafe=last\nAdmission=enforce\nNodeName=n1\n").admission.failsafe, FailSafe::Last);
}

TEST(ConfigErrors, AdmissionValues)
{
    auto err = [](const std::string& line) { return error_of(line + "\nNodeName=n1\n"); };
    EXPECT_EQ(err("SignalsFile=signals.json"), "m2g.conf:1: SignalsFile=signals.json needs an absolute path");
    EXPECT_EQ(err("SignalsStatusFile=run/status.json"),
              "m2g.conf:1: SignalsStatusFile=run/status.json needs an absolute path");
    EXPECT_EQ(err("SignalsTTLSec=0"), "m2g.conf:1: SignalsTTLSec=0 is not valid; expected a whole number from 1 to 604800");
    EXPECT_EQ(err("SignalsPollSec=1h"), "m2g.conf:1: SignalsPollSec=1h is not valid; expected a whole number from 1 to 3600");
    EXPECT_EQ(err("SignalsFailSafe=closed"),
              "m2g.conf:1: SignalsFailSafe=closed is not valid; expected last, open or defer");
    EXPECT_EQ(err("Admission=on"), "m2g.conf:1: Admission=on is not valid; expected enforce, monitor or off");
    EXPECT_EQ(err("DefaultDeferrable=true"), "m2g.conf:1: DefaultDeferrable=true is not valid; expected yes or no");
    EXPECT_EQ(err("DefaultPowerPerGpuW=9000"),
              "m2g.conf:1: DefaultPowerPerGpuW=9000 is not valid; expected watts per GPU from 0 to 5000 (0: the "
              "built-in class defaults)");
    EXPECT_EQ(err("DefaultPowerPerGpuW=700W"),
              "m2g.conf:1: DefaultPowerPerGpuW=700W is not valid; expected watts per GPU from 0 to 5000 (0: the "
              "built-in class defaults)");
    EXPECT_EQ(err("PowerRetrySec=0"), "m2g.conf:1: PowerRetrySec=0 is not valid; expected a whole number from 1 to 86400");
    EXPECT_EQ(err("RampRateKWPerMin=-3"),
              "m2g.conf:1: RampRateKWPerMin=-3 is not valid; expected a non-negative number such as 400 or 12.5");
    EXPECT_EQ(err("PaceIntervalSec=7200"),
              "m2g.conf:1: PaceIntervalSec=7200 is not valid; expected a whole number from 1 to 3600");
    EXPECT_EQ(err("PaceGpusPerInterval=-1"),
              "m2g.conf:1: PaceGpusPerInterval=-1 is not valid; expected a whole number from 0 to 1000000");
    EXPECT_EQ(err("DeferExemptAccounts=ops,,oncall"),
              "m2g.conf:1: DeferExemptAccounts=ops,,oncall is not valid; expected a comma-separated list of account "
              "names without empty entries, e.g. ops,oncall");
    EXPECT_EQ(err("DeferExemptGroups=sre,"),
              "m2g.conf:1: DeferExemptGroups=sre, is not valid; expected a comma-separated list of Unix group names "
              "without empty entries, e.g. ops,oncall");
    EXPECT_EQ(err("PrivilegedClasses=benchmark,vip"),
              "m2g.conf:1: PrivilegedClasses=benchmark,vip: unknown class 'vip'; expected training, finetune, "
              "inference, batch, benchmark, dataproc or agentic");
    EXPECT_EQ(err("PrivilegedTags=Priority").rfind("m2g.conf:1: PrivilegedTags=Priority", 0), 0u)
        << err("PrivilegedTags=Priority");
    EXPECT_EQ(err("NoDeferAction=allow"), "m2g.conf:1: NoDeferAction=allow is not valid; expected reject or convert");
    EXPECT_EQ(err("MaintenanceAction=ignore"),
              "m2g.conf:1: MaintenanceAction=ignore is not valid; expected steer or defer");
    EXPECT_EQ(err("ReleaseCheckSec=0"), "m2g.conf:1: ReleaseCheckSec=0 is not valid; expected a whole number from 1 to 3600");
    EXPECT_EQ(err("Admission="), "m2g.conf:1: Admission= needs a value");
    EXPECT_EQ(error_of("Admission=monitor\nAdmission=off\nNodeName=n1\n"), "m2g.conf:2: Admission is set twice");
    EXPECT_EQ(err("SignalsFile=/a SignalsTTLSec=60"), "m2g.conf:1: SignalsFile stands alone on its line");
    // Across keys: the feed must be read more often than it goes stale.
    EXPECT_EQ(error_of("NodeName=n1\nSignalsPollSec=5\nSignalsTTLSec=5\n"),
              "m2g.conf:3: SignalsPollSec=5 must be less than SignalsTTLSec=5 (defaults 5 and 300), or the feed goes "
              "stale between two reads");
    EXPECT_EQ(error_of("NodeName=n1\nSignalsPollSec=600\n"),
              "m2g.conf:2: SignalsPollSec=600 must be less than SignalsTTLSec=300 (defaults 5 and 300), or the feed "
              "goes stale between two reads");
}

TEST(ConfigErrors, ClassNameLines)
{
    EXPECT_EQ(error_of("NodeName=n1\nClassName=gaming Deferrable=yes\n"),
              "m2g.conf:2: ClassName=gaming is not a workload class; expected training, finetune, inference, batch, "
              "benchmark, dataproc or agentic (jobs without a class: DefaultDeferrable=, DefaultPowerPerGpuW=)");
    EXPECT_EQ(error_of("NodeName=n1\nClassName=training\nClassName=Training Deferrable=no\n"),
              "m2g.conf:3: ClassName=Training is already defined at m2g.conf:2");
    EXPECT_EQ(error_of("NodeName=n1\nClassName=training Deferrable=maybe\n"),
              "m2g.conf:2: Deferrable=maybe is not valid; expected yes or no");
    EXPECT_EQ(error_of("NodeName=n1\nClassName=training PowerPerGpuW=-1\n"),
              "m2g.conf:2: PowerPerGpuW=-1 is not valid; expected watts per GPU from 0 to 5000 (0: "
              "DefaultPowerPerGpuW, else the built-in class default)");
    EXPECT_EQ(error_of("NodeName=n1\nClassName=training Power=300\n"),
              "m2g.conf:2: unknown key 'Power' in a ClassName line; accepted keys: Deferrable, PowerPerGpuW, Curtail, CapFloorW, "
              "PricePerGpuHour");
    EXPECT_EQ(error_of("NodeName=n1\nClassName=training,batch Deferrable=no\n"),
              "m2g.conf:2: ClassName=training,batch: one name per line (hostlist expressions are accepted only in "
              "NodeName, Nodes, Domains and Switches)");
    EXPECT_EQ(error_of("NodeName=n1\nClassName= Deferrable=no\n"), "m2g.conf:2: ClassName= needs a name");
}

// ---- reporting (m2g.conf(5), REPORTING) -------------------------------------

TEST(Config, EnergyPriceKeys)
{
    const Model d = build("NodeName=n1\n");
    EXPECT_EQ(d.energy_price_per_kwh, 0);
    EXPECT_EQ(d.energy_currency, "EUR");
    const Model m = build("EnergyPricePerKWh=0.25\nenergycurrency=usd\nNodeName=n1\n");
    EXPECT_EQ(m.energy_price_per_kwh, 0.25);
    EXPECT_EQ(m.energy_currency, "USD");  // ISO 4217 codes are upper case
    EXPECT_EQ(build("EnergyPricePerKWh=0\nNodeName=n1\n").energy_price_per_kwh, 0);
}

TEST(Config, GpuHourPricesByClassWithADefault)
{
    const Model d = build("NodeName=n1\n");
    for (double p : d.price_per_gpu_hour)
        EXPECT_EQ(p, 0);
    const Model m = build("DefaultPricePerGpuHour=2.5\nNodeName=n1\nClassName=training PricePerGpuHour=4\n"
                          "ClassName=batch Deferrable=yes PricePerGpuHour=0\n");
    EXPECT_EQ(m.price_per_gpu_hour[static_cast<size_t>(WorkloadClass::Training)], 4);
    EXPECT_EQ(m.price_per_gpu_hour[static_cast<size_t>(WorkloadClass::Batch)], 0);  // 0 is a price, not "unset"
    EXPECT_EQ(m.price_per_gpu_hour[static_cast<size_t>(WorkloadClass::Inference)], 2.5);
    EXPECT_EQ(m.price_per_gpu_hour[static_cast<size_t>(WorkloadClass::Unset)], 2.5);
    EXPECT_EQ(error_of("NodeName=n1\nClassName=training PricePerGpuHour=cheap\n"),
              "m2g.conf:2: PricePerGpuHour=cheap is not valid; expected the price of one GPU-hour as a number from 0 "
              "to 1000000, e.g. 0.25 (0: no cost shown)");
    EXPECT_EQ(error_of("DefaultPricePerGpuHour=-1\nNodeName=n1\n"),
              "m2g.conf:1: DefaultPricePerGpuHour=-1 is not valid; expected the price of one GPU-hour as a number "
              "from 0 to 1000000, e.g. 0.25 (0: no cost shown)");
}

TEST(ConfigErrors, EnergyPriceValues)
{
    auto err = [](const std::string& line) { return error_of(line + "\nNodeName=n1\n"); };
    const std::string price = " is not valid; expected the price of one kWh as a number from 0 to 1000000, e.g. 0.25 "
                              "(0: no cost shown)";
    EXPECT_EQ(err("EnergyPricePerKWh=-0.1"), "m2g.conf:1: EnergyPricePerKWh=-0.1" + price);
    EXPECT_EQ(err("EnergyPricePerKWh=0.25EUR"), "m2g.conf:1: EnergyPricePerKWh=0.25EUR" + price);
    EXPECT_EQ(err("EnergyPricePerKWh=nan"), "m2g.conf:1: EnergyPricePerKWh=nan" + price);
    EXPECT_EQ(err("EnergyPricePerKWh="), "m2g.conf:1: EnergyPricePerKWh= needs a value");
    const std::string code = " is not valid; expected a three-letter ISO 4217 currency code such as EUR, USD or CHF";
    EXPECT_EQ(err("EnergyCurrency=euro"), "m2g.conf:1: EnergyCurrency=euro" + code);
    EXPECT_EQ(err("EnergyCurrency=E1R"), "m2g.conf:1: EnergyCurrency=E1R" + code);
    EXPECT_EQ(err("EnergyCurrency=\u20ac"), "m2g.conf:1: EnergyCurrency=\u20ac" + code);
    EXPECT_EQ(error_of("EnergyCurrency=EUR\nEnergyCurrency=USD\nNodeName=n1\n"),
              "m2g.conf:2: EnergyCurrency is set twice");
    EXPECT_EQ(err("EnergyCurrency=EUR EnergyPricePerKWh=1"), "m2g.conf:1: EnergyCurrency stands alone on its line");
}

TEST(Config, TheShippedExampleHasAnAdmissionBlock)
{
    const Model m = load_model(M2G_FIXTURES "/../../etc/m2g.conf.example");
    EXPECT_EQ(m.admission.signals_file, "/run/m2g/signals.json");
    EXPECT_EQ(m.admission.mode, AdmissionMode::Enforce);
    EXPECT_FALSE(m.admission.defer_exempt_accounts.empty());
}

// Where the m2g command, m2g-curtaild and m2g-exporter read m2g.conf
// (m2g(1), m2g.conf): --conf, else $M2G_CONF, else beside $SLURM_CONF,
// else /etc/slurm. The environment is restored after each case.
class ConfPath : public ::testing::Test {
  protected:
    void SetUp() override
    {
        for (const char* v : {"M2G_CONF", "SLURM_CONF"}) {
            const char* old = std::getenv(v);
            saved_.emplace_back(v, old ? std::optional<std::string>(old) : std::nullopt);
            unsetenv(v);
        }
    }
    void TearDown() override
    {
        for (const auto& [name, value] : saved_)
            value ? setenv(name, value->c_str(), 1) : unsetenv(name);
    }
    std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

TEST_F(ConfPath, GivenThenM2gConfThenBesideSlurmConfThenEtcSlurm)
{
    EXPECT_EQ(resolve_conf_path(), "/etc/slurm/m2g.conf");
    setenv("SLURM_CONF", "/opt/site/etc/slurm.conf", 1);
    EXPECT_EQ(resolve_conf_path(), "/opt/site/etc/m2g.conf");
    setenv("SLURM_CONF", "slurm.conf", 1);
    EXPECT_EQ(resolve_conf_path(), "./m2g.conf");
    setenv("SLURM_CONF", "/slurm.conf", 1);
    EXPECT_EQ(resolve_conf_path(), "/m2g.conf");
    setenv("M2G_CONF", "/tmp/trial.conf", 1);
    EXPECT_EQ(resolve_conf_path(), "/tmp/trial.conf");
    EXPECT_EQ(resolve_conf_path("given.conf"), "given.conf");
    // The plugins' rule gives the same file from Slurm's own path.
    EXPECT_EQ(conf_path("/etc/slurm/m2g.conf"), "/tmp/trial.conf");
}

TEST(Config, PreemptionCostKeys)
{
    const Model d = build("NodeName=n1\n");
    EXPECT_EQ(d.policy.preempt_checkpoint_sec, 0);
    EXPECT_EQ(d.policy.preempt_restart_sec, 0);
    const Model m = build("PreemptCheckpointSec=1800\nPreemptRestartSec=300\nNodeName=n1\n");
    EXPECT_EQ(m.policy.preempt_checkpoint_sec, 1800);
    EXPECT_EQ(m.policy.preempt_restart_sec, 300);
    EXPECT_NE(error_of("PreemptCheckpointSec=-5\nNodeName=n1\n").find("m2g.conf:1: PreemptCheckpointSec=-5"),
              std::string::npos);
    EXPECT_NE(error_of("PreemptRestartSec=soon\nNodeName=n1\n").find("m2g.conf:1: PreemptRestartSec=soon"),
              std::string::npos);
}
