// The placement engine on golden cases that read like documentation:
// test/fixtures/placement/*.case holds the story, the cluster, its state,
// the request, and the expected `m2g place` output. M2G_REGOLD=1 rewrites
// the expected parts (review the diff before committing).
#include <gtest/gtest.h>
#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/job/annotation.hpp"
#include "core/model/cluster_state.hpp"
#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/place/engine.hpp"

using namespace m2g;

namespace {

const std::string kDir = M2G_FIXTURES "/placement";

std::string data_dir()
{
    const char* d = std::getenv("M2G_DATA");
    return d ? d : M2G_FIXTURES "/../../../shared/data";
}

struct Case {
    std::string head;  // everything up to and including "expect:"
    std::string topology, topology_slurm, state, request, expect;
};

Case read_case(const std::string& path)
{
    Case c;
    std::istringstream in(read_text_file(path));
    bool expecting = false;
    for (std::string line; std::getline(in, line);) {
        if (expecting) {
            c.expect += line + "\n";
            continue;
        }
        c.head += line + "\n";
        auto value = [&](const char* key) {
            const std::string k = std::string(key) + ": ";
            return line.rfind(k, 0) == 0 ? line.substr(k.size()) : std::string();
        };
        if (line == "expect:")
            expecting = true;
        else if (!value("topology").empty())
            c.topology = value("topology");
        else if (!value("topology-slurm").empty())
            c.topology_slurm = value("topology-slurm");
        else if (!value("state").empty())
            c.state = value("state");
        else if (!value("request").empty())
            c.request = value("request");
    }
    return c;
}

std::string run_case(const Case& c)
{
    Model m;
    if (!c.topology.empty()) {
        m = load_model(M2G_FIXTURES "/" + c.topology);
    } else {
        SlurmImportOptions o;
        o.gpus_per_node = 8;
        const std::string path = data_dir() + "/" + c.topology_slurm;
        m = build_model(parse_slurm_topology_conf(read_text_file(path), path, o));
    }
    DescribedState st;
    if (!c.state.empty())
        st = parse_state_json(c.state, "state", m);
    else
        st.usable.assign(m.nodes.size(), 1);
    int gpn = 0;
    for (const auto& n : m.nodes)
        gpn = std::max(gpn, n.gpus);
    Engine e(m);
    return format_placement(m, e.place(parse_request(c.request, gpn), st.usable, st.health), false);
}

std::vector<std::string> case_files()
{
    std::vector<std::string> out;
    if (DIR* d = opendir(kDir.c_str())) {
        while (dirent* e = readdir(d)) {
            const std::string n = e->d_name;
            if (n.size() > 5 && n.substr(n.size() - 5) == ".case")
                out.push_back(n);
        }
        closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

class GoldenPlacement : public testing::TestWithParam<std::string> {};

TEST_P(GoldenPlacement, MatchesExpected)
{
    const std::string path = kDir + "/" + GetParam();
    const Case c = read_case(path);
    const std::string got = run_case(c);
    if (std::getenv("M2G_REGOLD")) {
        std::ofstream(path) << c.head << got;
        return;
    }
    EXPECT_EQ(got, c.expect) << path;
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenPlacement, testing::ValuesIn(case_files()),
                         [](const testing::TestParamInfo<std::string>& i) {
                             std::string n = i.param.substr(0, i.param.size() - 5);
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

TEST(Placement, AllCasesArePresent)
{
    EXPECT_EQ(case_files().size(), 9u);
}

TEST(Placement, SegmentsMustDivideTheJob)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    Engine e(m);
    std::vector<uint8_t> all(m.nodes.size(), 1);
    Placement p = e.place(parse_request("nodes=20,segment=8", 4), all, {});
    EXPECT_FALSE(p.ok);
    EXPECT_EQ(p.reason, "20 nodes are not a whole number of segments of 8; ask for a multiple of --m2g-segment");
}

TEST(Placement, SparePerDomainIsKeptFree)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    Engine e(m);
    std::vector<uint8_t> all(m.nodes.size(), 1);
    Placement p = e.place(parse_request("nodes=17,spare=1,topology=strict", 4), all, {});
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.nodes.size(), 17u);
    EXPECT_FALSE(e.place(parse_request("nodes=18,spare=1,topology=strict", 4), all, {}).ok);
}

namespace {

// The eight racks with their first 10 nodes busy: 8 free in every rack.
std::vector<uint8_t> eight_free_per_rack(const Model& m)
{
    std::vector<uint8_t> usable(m.nodes.size(), 1);
    for (int d = 0; d < 8; ++d)
        for (int k = 0; k < 10; ++k)
            usable[m.domains[d].nodes[k]] = 0;
    return usable;
}

// The first rack's NVLink is down.
ClusterState first_rack_nvlink_fault(const Model& m)
{
    ClusterState st;
    st.domain_nvlink_fault.assign(m.domains.size(), 0);
    st.domain_nvlink_fault[0] = 1;
    return st;
}

}  // namespace

// A probe (explain = false) places exactly as the explained request and
// waits for the same typed cause; only the sentence is left out (the
// will-run bisection reads none of its probes' words).
TEST(Placement, ProbesPlaceAsExplainedRequestsWithoutWords)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    Engine e(m);
    const std::vector<uint8_t> usable = eight_free_per_rack(m);
    const ClusterState faulty = first_rack_nvlink_fault(m);
    for (const char* r : {"nodes=6,topology=strict", "nodes=12,topology=prefer", "nodes=12,topology=prefer,fallback=yes",
                          "nodes=70,topology=any", "nodes=20,segment=8"}) {
        for (const ClusterState& st : {ClusterState{}, faulty}) {
            SCOPED_TRACE(r);
            PlacementRequest req = parse_request(r, 4);
            const Placement said = e.place(req, usable, st);
            req.explain = false;
            const Placement probe = e.place(req, usable, st);
            EXPECT_EQ(probe.ok, said.ok);
            EXPECT_EQ(probe.nodes, said.nodes);
            EXPECT_EQ(probe.domains_used, said.domains_used);
            EXPECT_EQ(probe.score, said.score);
            EXPECT_EQ(probe.wait, said.wait);
            EXPECT_EQ(probe.need, said.need);
            EXPECT_FALSE(said.reason.empty());
            if (said.wait != WaitCause::Other) {  // a request the engine cannot serve says why either way
                EXPECT_TRUE(probe.reason.empty()) << probe.reason;
            }
        }
    }
}

TEST(Placement, PreferFallsBackOnlyAfterItsWait)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    Engine e(m);
    const std::vector<uint8_t> usable = eight_free_per_rack(m);
    EXPECT_FALSE(e.place(parse_request("nodes=12,topology=prefer", 4), usable, {}).ok);
    Placement p = e.place(parse_request("nodes=12,topology=prefer,fallback=yes", 4), usable, {});
    ASSERT_TRUE(p.ok);
    EXPECT_FALSE(p.meets_intent);
    EXPECT_EQ(p.domains_used, 2);
    EXPECT_TRUE(e.place(parse_request("nodes=12,topology=any", 4), usable, {}).ok);
}

// A placement that waits says why in a type (Placement::wait, need), and
// that type is what the legacy reader of AdminComment derives from the
// same sentence: a job explains alike whichever m2g wrote its record.
TEST(Placement, WaitsCarryATypedCause)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    Engine e(m);
    const std::vector<uint8_t> usable = eight_free_per_rack(m);
    const ClusterState faulty = first_rack_nvlink_fault(m);
    PlacementRequest none;
    none.nodes = 0;
    struct Want {
        PlacementRequest req;
        ClusterState state;
        WaitCause wait;
        int need;
        std::string reason;
    };
    const Want want[] = {
        {parse_request("nodes=12,topology=prefer", 4), {}, WaitCause::NvlinkDomain, 12,
         "waiting for an NVLink domain with 12 free healthy nodes (best now: nvl01 with 8)"},
        {parse_request("nodes=36,topology=strict", 4), {}, WaitCause::NvlinkDomain, 36,
         "waiting for 2 NVLink domains with 36 free healthy nodes (best now: 5 domains)"},
        {parse_request("nodes=40,topology=strict:leaf", 4), {}, WaitCause::Switch, 40,
         "waiting for a leaf switch with 40 free healthy nodes (best now: 2 leaf switches)"},
        {parse_request("nodes=100,topology=strict", 4), faulty, WaitCause::Nodes, 100,
         "waiting for 100 free healthy nodes under one switch (usable now: 56; avoided: nvl01 (NVLink fault))"},
        {parse_request("nodes=20,segment=8", 4), {}, WaitCause::Other, 0,
         "20 nodes are not a whole number of segments of 8; ask for a multiple of --m2g-segment"},
        {none, {}, WaitCause::Other, 0, "the job asks for no nodes"},
    };
    for (const Want& w : want) {
        const Placement p = e.place(w.req, usable, w.state);
        EXPECT_FALSE(p.ok) << p.reason;
        EXPECT_EQ(p.reason, w.reason);
        EXPECT_EQ(p.wait, w.wait) << p.reason;
        EXPECT_EQ(p.need, w.need) << p.reason;
        const PlacementAnnotation legacy = parse_placement("waiting policy=strict:nvlink reason=" + p.reason);
        EXPECT_EQ(legacy.wait, p.wait) << p.reason;
        EXPECT_EQ(legacy.need, p.need) << p.reason;
    }
    // Placed: no wait.
    EXPECT_EQ(e.place(parse_request("nodes=8", 4), usable, {}).wait, WaitCause::None);
}

TEST(Placement, RequestErrors)
{
    auto msg = [](const char* r) {
        try {
            parse_request(r, 4);
        } catch (const ParseError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(msg("cores=4"), "request: unknown key 'cores'; accepted: nodes, gpus, segment, topology, fallback, spare "
                              "(e.g. gpus=72,topology=strict:nvlink)");
    EXPECT_EQ(msg("nodes=0"), "request nodes=0: expected a whole number from 1 to 1000000");
    EXPECT_EQ(msg("segment=4"), "request 'segment=4': give nodes=N or gpus=N");
    EXPECT_EQ(parse_request("gpus=72", 4).nodes, 18);
    EXPECT_EQ(parse_request("gpus=10", 4).nodes, 3);
}

// ---- heat: equal fits go to the cooler rack -----------------------------------

TEST(Placement, EqualFitsPreferTheCoolerRack)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    Engine e(m);
    std::vector<uint8_t> all(m.nodes.size(), 1);
    ClusterState st;
    // No heat: the first rack in tree order.
    EXPECT_EQ(e.place(parse_request("nodes=18", 4), all, st).nodes.front(), m.find_node("r01n01"));
    st.domain_heat = {70, 50, 50, 50, 40, 50, 1060, 50};
    Placement p = e.place(parse_request("nodes=18", 4), all, st);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.domains, std::vector<int>{m.find_domain("nvl05")});
    EXPECT_EQ(p.reason, "nvl05, best fit (0 of 18 nodes left free there)");
    // Two whole racks: under the cooler leaf (equal otherwise), the coolest
    // rack, then the coolest beside it.
    st.domain_heat = {50, 50, 50, 50, 45, 30, 1060, 48};
    p = e.place(parse_request("nodes=36", 4), all, st);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.domains, (std::vector<int>{m.find_domain("nvl05"), m.find_domain("nvl06")}));
    EXPECT_EQ(p.leaves.size(), 1u);
}

TEST(Placement, HeatNeverBeatsABetterFit)
{
    Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    Engine e(m);
    std::vector<uint8_t> usable(m.nodes.size(), 1);
    for (int k = 0; k < 2; ++k)
        usable[m.domains[0].nodes[k]] = 0;  // nvl01: 16 free, the tightest fit for 16
    ClusterState st;
    st.domain_heat.assign(8, 40);
    st.domain_heat[0] = 1080;  // hot, but the fit is better
    const Placement p = e.place(parse_request("nodes=16", 4), usable, st);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.domains, std::vector<int>{0});
    EXPECT_EQ(p.score, 0);
    // A heat vector shorter than the model counts as unknown (0) for the rest.
    st.domain_heat = {5};
    EXPECT_TRUE(e.place(parse_request("nodes=18", 4), usable, st).ok);
}
