// ibnetdiscover output -> Fabric, and `m2g discover fabric` output, on
// test/fixtures/discover/fat-tree-2level.ibnet (2 spines, 4 leaves, 16
// hosts; its header says what is in it) and on small inline excerpts for
// the format's variants and for each error.
#include <gtest/gtest.h>
#include <json-c/json.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tools/formats/discover.hpp"
#include "core/base/error.hpp"

using namespace m2g;

namespace {

const std::string kDir = M2G_FIXTURES "/discover/";

std::string slurp(const std::string& path)
{
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

const Fabric& fat_tree()
{
    static const Fabric f = parse_ibnetdiscover(slurp(kDir + "fat-tree-2level.ibnet"), "fat-tree-2level.ibnet");
    return f;
}

size_t index_of(const Fabric& f, const std::string& guid)
{
    for (size_t i = 0; i < f.nodes.size(); ++i)
        if (f.nodes[i].guid == guid)
            return i;
    ADD_FAILURE() << "no node " << guid;
    return 0;
}

const IbNode& node(const Fabric& f, const std::string& guid)
{
    return f.nodes[index_of(f, guid)];
}

const IbPortLink* port(const IbNode& n, int p)
{
    for (const IbPortLink& l : n.links)
        if (l.port == p)
            return &l;
    return nullptr;
}

// The message parse_ibnetdiscover throws, "" when it does not throw.
std::string error_of(const std::string& text, const std::string& file = "t.ibnet")
{
    try {
        parse_ibnetdiscover(text, file);
    } catch (const ParseError& e) {
        return e.what();
    }
    return "";
}

// GUIDs of the fixture.
const std::string kSpine01 = "0xb83fd20300a1c000", kSpine02 = "0xb83fd20300a1c100", kLeaf01 = "0xb83fd20300a1c200",
                  kLeaf02 = "0xb83fd20300a1c300", kLeaf03 = "0xb83fd20300a1c400", kLeaf04 = "0xb83fd20300a1c500",
                  kNode001 = "0x0c42a10300a2b401", kNode016 = "0x0002c90300f1e2a0", kAnLeaf01 = "0xb83fd20300a1c210";

// A leaf with one host and one spine, in ibnetdiscover's format; `host_line`
// and `leaf_host_line` are the two ends of the host link.
std::string tiny(const std::string& leaf_host_line = "[1]\t\"H-0c42a10300a2b401\"[1](c42a10300a2b401) \t\t# "
                                                     "\"node001 mlx5_0\" lid 11 4xHDR",
                 const std::string& host_line = "[1](c42a10300a2b401) \t\"S-b83fd20300a1c200\"[1]\t\t# lid 11 lmc 0 "
                                                "\"MF0;leaf01:MQM8790/U1\" lid 3 4xHDR")
{
    return "#\n# Topology file: generated on Tue Mar  4 09:12:44 2025\n#\n"
           "# Initiated from node 0c42a10300a2b401 port 0c42a10300a2b401\n"
           "\nvendid=0x2c9\ndevid=0xd2f0\nsysimgguid=0xb83fd20300a1c200\n"
           "switchguid=0xb83fd20300a1c200(b83fd20300a1c200)\n"
           "Switch\t41 \"S-b83fd20300a1c200\"\t\t# \"MF0;leaf01:MQM8790/U1\" enhanced port 0 lid 3 lmc 0\n" +
           leaf_host_line +
           "\n"
           "[33]\t\"S-b83fd20300a1c000\"[1]\t\t# \"MF0;spine01:MQM8790/U1\" lid 1 4xNDR\n"
           "\nvendid=0x2c9\ndevid=0xd2f0\nsysimgguid=0xb83fd20300a1c000\n"
           "switchguid=0xb83fd20300a1c000(b83fd20300a1c000)\n"
           "Switch\t41 \"S-b83fd20300a1c000\"\t\t# \"MF0;spine01:MQM8790/U1\" enhanced port 0 lid 1 lmc 0\n"
           "[1]\t\"S-b83fd20300a1c200\"[33]\t\t# \"MF0;leaf01:MQM8790/U1\" lid 3 4xNDR\n"
           "\nvendid=0x2c9\ndevid=0x101b\nsysimgguid=0xc42a10300a2b401\ncaguid=0xc42a10300a2b401\n"
           "Ca\t1 \"H-0c42a10300a2b401\"\t\t# \"node001 mlx5_0\"\n" +
           host_line + "\n";
}

// Line numbers in tiny(): 10 the leaf's Switch record, 11 its host link, 12
// its uplink, 18 the spine's record, 19 its link, 25 the Ca record, 26 its link.

// A switch record whose only link has `ws` as its width-speed token.
double rate_of(const std::string& ws, std::string* width = nullptr, std::string* speed = nullptr)
{
    const Fabric f = parse_ibnetdiscover(
        "Switch\t36 \"S-0000000000000001\"\t\t# \"sw\" base port 0 lid 1 lmc 0\n"
        "[1]\t\"H-0000000000000002\"[1](2) \t\t# \"h mlx5_0\" lid 2 " +
            ws +
            "\n"
            "Ca\t1 \"H-0000000000000002\"\t\t# \"h mlx5_0\"\n",
        "rates.ibnet");
    const IbPortLink& l = f.nodes[0].links.at(0);
    if (width)
        *width = l.width;
    if (speed)
        *speed = l.speed;
    return l.rate_gbps;
}

}  // namespace

// ---- the fixture --------------------------------------------------------------

TEST(IbnetFatTree, NodesInFileOrderWithNormalizedGuids)
{
    const Fabric& f = fat_tree();
    ASSERT_EQ(f.nodes.size(), 28u);  // 6 switches, 6 aggregation nodes, 16 hosts
    ASSERT_EQ(f.level.size(), f.nodes.size());
    EXPECT_EQ(f.nodes[0].guid, kLeaf01);  // the first record of the file
    EXPECT_TRUE(f.nodes[0].is_switch);
    EXPECT_EQ(f.nodes[0].ports, 41);
    EXPECT_EQ(f.nodes[0].description, "MF0;leaf01:MQM8790/U1");
    EXPECT_EQ(f.nodes[0].name, "MF0;leaf01:MQM8790/U1");
    EXPECT_EQ(f.nodes[1].guid, kSpine01);
    int switches = 0;
    for (const IbNode& n : f.nodes) {
        switches += n.is_switch;
        EXPECT_EQ(n.guid.size(), 18u) << n.guid;  // "0x" + 16 hex digits
        EXPECT_EQ(n.guid.substr(0, 2), "0x");
        for (const IbPortLink& l : n.links)
            EXPECT_EQ(l.peer_guid.size(), 18u) << l.peer_guid;
    }
    EXPECT_EQ(switches, 6);
    // "H-0002c90300f1e2a0" (padded) and caguid=0x2c90300f1e2a0 (not): one GUID.
    const IbNode& n16 = node(f, kNode016);
    EXPECT_FALSE(n16.is_switch);
    EXPECT_EQ(port(node(f, kLeaf04), 4)->peer_guid, kNode016);
}

TEST(IbnetFatTree, HostsAreNamedByTheFirstWordOfTheirDescription)
{
    const Fabric& f = fat_tree();
    const IbNode& n1 = node(f, kNode001);
    EXPECT_EQ(n1.description, "node001 mlx5_0");
    EXPECT_EQ(n1.name, "node001");
    EXPECT_EQ(n1.ports, 1);
    ASSERT_EQ(n1.links.size(), 1u);
    const IbPortLink& l = n1.links[0];
    EXPECT_EQ(l.port, 1);
    EXPECT_EQ(l.peer_guid, kLeaf01);
    EXPECT_EQ(l.peer_port, 1);
    EXPECT_EQ(l.width, "4x");
    EXPECT_EQ(l.speed, "HDR");
    EXPECT_DOUBLE_EQ(l.rate_gbps, 200);
}

TEST(IbnetFatTree, TwoPortHcaWithOnePortCabled)
{
    const IbNode& n16 = node(fat_tree(), kNode016);
    EXPECT_EQ(n16.name, "node016");
    EXPECT_EQ(n16.description, "node016 mlx4_0");
    EXPECT_EQ(n16.ports, 2);
    ASSERT_EQ(n16.links.size(), 1u);  // port 2 is not cabled: no line
    EXPECT_EQ(n16.links[0].port, 1);
    EXPECT_EQ(n16.links[0].peer_guid, kLeaf04);
    EXPECT_EQ(n16.links[0].peer_port, 4);
    EXPECT_EQ(n16.links[0].speed, "FDR");
    EXPECT_DOUBLE_EQ(n16.links[0].rate_gbps, 56);  // 4 x 14.0625, as ibstat says
}

TEST(IbnetFatTree, DownPortsHaveNoLink)
{
    const Fabric& f = fat_tree();
    const IbNode& leaf03 = node(f, kLeaf03);
    std::vector<int> ports;
    for (const IbPortLink& l : leaf03.links)
        ports.push_back(l.port);
    EXPECT_EQ(ports, (std::vector<int>{1, 2, 3, 4, 33, 34, 35, 41}));
    EXPECT_EQ(port(node(f, kSpine02), 6), nullptr);
    EXPECT_EQ(node(f, kSpine02).links.size(), 8u);  // 7 leaf cables + the aggregation node
    EXPECT_EQ(node(f, kSpine01).links.size(), 9u);
}

TEST(IbnetFatTree, LinkLineWithoutWidthSpeedHasRateZero)
{
    const Fabric& f = fat_tree();
    const IbPortLink* s = port(node(f, kSpine02), 8);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->peer_guid, kLeaf04);
    EXPECT_EQ(s->peer_port, 36);
    EXPECT_EQ(s->width, "");
    EXPECT_EQ(s->speed, "");
    EXPECT_DOUBLE_EQ(s->rate_gbps, 0);
    // The leaf's end of the same cable says 4xHDR.
    EXPECT_DOUBLE_EQ(port(node(f, kLeaf04), 36)->rate_gbps, 200);
}

TEST(IbnetFatTree, LevelsCountFromTheHosts)
{
    const Fabric& f = fat_tree();
    for (const std::string& g : {kLeaf01, kLeaf02, kLeaf03, kLeaf04})
        EXPECT_EQ(f.level[index_of(f, g)], 1) << g;
    for (const std::string& g : {kSpine01, kSpine02})
        EXPECT_EQ(f.level[index_of(f, g)], 2) << g;
    for (size_t i = 0; i < f.nodes.size(); ++i) {
        if (!f.nodes[i].is_switch) {
            EXPECT_EQ(f.level[i], 0) << f.nodes[i].guid;
        }
    }
}

// Every switch has its SHARP aggregation node (a CA) on port 41: were it a
// host, the spines would be leaves.
TEST(IbnetFatTree, AggregationNodesAreNotHosts)
{
    const Fabric& f = fat_tree();
    const IbNode& an = node(f, kAnLeaf01);
    EXPECT_FALSE(an.is_switch);
    EXPECT_EQ(an.description, "Mellanox Technologies Aggregation Node");
    EXPECT_EQ(an.name, "");
    EXPECT_EQ(an.links.at(0).peer_guid, kLeaf01);
    EXPECT_EQ(an.links.at(0).peer_port, 41);
    EXPECT_EQ(f.level[index_of(f, kSpine01)], 2);
}

TEST(IbnetFatTree, FormatText)
{
    EXPECT_EQ(format_fabric(fat_tree(), false),
              "MF0;spine01:MQM8790/U1 level=2 guid=0xb83fd20300a1c000 hosts=0 uplinks=0 (0 Gb/s) downlinks=8\n"
              "MF0;spine02:MQM8790/U1 level=2 guid=0xb83fd20300a1c100 hosts=0 uplinks=0 (0 Gb/s) downlinks=7\n"
              "MF0;leaf01:MQM8790/U1 level=1 guid=0xb83fd20300a1c200 hosts=4 uplinks=4 (800 Gb/s) downlinks=4\n"
              "MF0;leaf02:MQM8790/U1 level=1 guid=0xb83fd20300a1c300 hosts=4 uplinks=4 (800 Gb/s) downlinks=4\n"
              "MF0;leaf03:MQM8790/U1 level=1 guid=0xb83fd20300a1c400 hosts=4 uplinks=3 (600 Gb/s) downlinks=4\n"
              "MF0;leaf04:MQM8790/U1 level=1 guid=0xb83fd20300a1c500 hosts=4 uplinks=4 (800 Gb/s) downlinks=4\n"
              "6 switches (leaves 4, spines 2), 16 hosts, 31 links, 6 SHARP aggregation nodes\n");
}

namespace {

struct JsonDoc {
    json_object* root = nullptr;
    explicit JsonDoc(const std::string& text)
    {
        json_tokener_error err = json_tokener_success;
        root = json_tokener_parse_verbose(text.c_str(), &err);
        EXPECT_EQ(err, json_tokener_success) << json_tokener_error_desc(err) << "\n" << text;
    }
    ~JsonDoc() { json_object_put(root); }
    JsonDoc(const JsonDoc&) = delete;
    JsonDoc& operator=(const JsonDoc&) = delete;
};

json_object* get(json_object* o, const char* key)
{
    json_object* v = nullptr;
    EXPECT_TRUE(json_object_object_get_ex(o, key, &v)) << key;
    return v;
}

std::string str(json_object* o, const char* key)
{
    json_object* v = get(o, key);
    return v ? json_object_get_string(v) : "(null)";
}

}  // namespace

TEST(IbnetFatTree, FormatJson)
{
    const std::string text = format_fabric(fat_tree(), true);
    JsonDoc doc(text);
    ASSERT_NE(doc.root, nullptr);
    json_object* sw = get(doc.root, "switches");
    ASSERT_EQ(json_object_array_length(sw), 6u);
    json_object* spine = json_object_array_get_idx(sw, 0);
    EXPECT_EQ(str(spine, "name"), "MF0;spine01:MQM8790/U1");
    EXPECT_EQ(json_object_get_int(get(spine, "level")), 2);
    EXPECT_EQ(json_object_array_length(get(spine, "downlinks")), 8u);
    json_object* leaf03 = json_object_array_get_idx(sw, 4);
    EXPECT_EQ(str(leaf03, "guid"), kLeaf03);
    EXPECT_EQ(json_object_get_int(get(leaf03, "level")), 1);
    json_object* hosts = get(leaf03, "hosts");
    ASSERT_EQ(json_object_array_length(hosts), 4u);
    EXPECT_STREQ(json_object_get_string(json_object_array_get_idx(hosts, 0)), "node009");
    json_object* up = get(leaf03, "uplinks");
    ASSERT_EQ(json_object_array_length(up), 3u);
    json_object* u0 = json_object_array_get_idx(up, 0);
    EXPECT_EQ(str(u0, "peer"), "MF0;spine01:MQM8790/U1");
    EXPECT_EQ(str(u0, "peer_guid"), kSpine01);
    EXPECT_EQ(json_object_get_int(get(u0, "port")), 33);
    EXPECT_EQ(json_object_get_int(get(u0, "peer_port")), 5);
    EXPECT_DOUBLE_EQ(json_object_get_double(get(u0, "rate_gbps")), 200);
    EXPECT_DOUBLE_EQ(json_object_get_double(get(leaf03, "uplink_gbps")), 600);

    json_object* hs = get(doc.root, "hosts");
    ASSERT_EQ(json_object_array_length(hs), 16u);  // aggregation nodes are not hosts
    for (size_t i = 0; i < 16; ++i) {
        json_object* h = json_object_array_get_idx(hs, i);
        if (str(h, "guid") != kNode016)
            continue;
        EXPECT_EQ(str(h, "name"), "node016");
        json_object* ports = get(h, "ports");
        ASSERT_EQ(json_object_array_length(ports), 1u);
        json_object* p = json_object_array_get_idx(ports, 0);
        EXPECT_EQ(json_object_get_int(get(p, "port")), 1);
        EXPECT_EQ(str(p, "peer"), "MF0;leaf04:MQM8790/U1");
        EXPECT_EQ(json_object_get_int(get(p, "peer_port")), 4);
        EXPECT_DOUBLE_EQ(json_object_get_double(get(p, "rate_gbps")), 56);
    }
    json_object* sum = get(doc.root, "summary");
    EXPECT_EQ(json_object_get_int(get(sum, "hosts")), 16);
    EXPECT_EQ(json_object_get_int(get(sum, "links")), 31);
    EXPECT_EQ(json_object_get_int(get(sum, "aggregation_nodes")), 6);
    EXPECT_EQ(json_object_get_int(get(get(sum, "levels"), "1")), 4);
    EXPECT_EQ(json_object_get_int(get(get(sum, "levels"), "2")), 2);
}

// ---- link rates ---------------------------------------------------------------

TEST(IbnetRates, LanesTimesLaneRate)
{
    EXPECT_DOUBLE_EQ(rate_of("1xSDR"), 2.5);
    EXPECT_DOUBLE_EQ(rate_of("4xSDR"), 10);
    EXPECT_DOUBLE_EQ(rate_of("4xDDR"), 20);
    EXPECT_DOUBLE_EQ(rate_of("4xQDR"), 40);
    EXPECT_DOUBLE_EQ(rate_of("4xFDR10"), 40);
    EXPECT_DOUBLE_EQ(rate_of("1xFDR"), 14);   // 14.0625, rounded down as sysfs and ibstat do
    EXPECT_DOUBLE_EQ(rate_of("4xFDR"), 56);   // 56.25
    EXPECT_DOUBLE_EQ(rate_of("12xFDR"), 168);  // 168.75
    EXPECT_DOUBLE_EQ(rate_of("4xEDR"), 100);
    EXPECT_DOUBLE_EQ(rate_of("12xEDR"), 300);
    EXPECT_DOUBLE_EQ(rate_of("2xHDR"), 100);
    EXPECT_DOUBLE_EQ(rate_of("4xHDR"), 200);
    EXPECT_DOUBLE_EQ(rate_of("2xNDR"), 200);
    EXPECT_DOUBLE_EQ(rate_of("4xNDR"), 400);
    EXPECT_DOUBLE_EQ(rate_of("8xNDR"), 800);
    EXPECT_DOUBLE_EQ(rate_of("4xXDR"), 800);
    std::string w, s;
    EXPECT_DOUBLE_EQ(rate_of("4xFDR10", &w, &s), 40);
    EXPECT_EQ(w, "4x");
    EXPECT_EQ(s, "FDR10");
}

// ibnetdiscover prints "??" for a width and "???" for a speed it cannot name.
TEST(IbnetRates, UnknownWidthOrSpeedIsRateZero)
{
    std::string w, s;
    EXPECT_DOUBLE_EQ(rate_of("4x???", &w, &s), 0);
    EXPECT_EQ(w, "4x");
    EXPECT_EQ(s, "");
    EXPECT_DOUBLE_EQ(rate_of("??HDR", &w, &s), 0);
    EXPECT_EQ(w, "");
    EXPECT_EQ(s, "HDR");
    EXPECT_DOUBLE_EQ(rate_of("", &w, &s), 0);
    EXPECT_EQ(w, "");
    EXPECT_EQ(s, "");
}

TEST(IbnetRates, RejectsUnknownWidthsAndSpeeds)
{
    for (const char* bad : {"3xHDR", "4xGDR", "4xhdr", "16xEDR"}) {
        std::string msg;
        try {
            rate_of(bad);
        } catch (const ParseError& e) {
            msg = e.what();
        }
        EXPECT_EQ(msg.rfind("rates.ibnet:2: link ", 0), 0u) << bad << ": " << msg;
        EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
    }
    std::string msg;
    try {
        rate_of("4xGDR");
    } catch (const ParseError& e) {
        msg = e.what();
    }
    EXPECT_EQ(msg, "rates.ibnet:2: link speed 'GDR' in '4xGDR'; expected SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR "
                   "or XDR after the width (e.g. 4xHDR)");
}

// ---- variants of the format -----------------------------------------------------

TEST(IbnetVariants, TinyFabricParses)
{
    const Fabric f = parse_ibnetdiscover(tiny(), "t.ibnet");
    ASSERT_EQ(f.nodes.size(), 3u);
    EXPECT_EQ(f.level, (std::vector<int>{1, 2, 0}));
    EXPECT_DOUBLE_EQ(port(f.nodes[0], 33)->rate_gbps, 400);  // 4xNDR
}

// -f adds " s=.. w=.. v=.." after the width-speed; Windows line ends.
TEST(IbnetVariants, FullInformationAndCrLf)
{
    std::string t = tiny("[1]\t\"H-0c42a10300a2b401\"[1](c42a10300a2b401) \t\t# \"node001 mlx5_0\" lid 11 4xHDR "
                         "s=4 w=2 v=3");
    for (size_t i = 0; (i = t.find('\n', i)) != std::string::npos; i += 2)
        t.replace(i, 1, "\r\n");
    const Fabric f = parse_ibnetdiscover(t, "t.ibnet");
    EXPECT_DOUBLE_EQ(port(f.nodes[0], 1)->rate_gbps, 200);
    EXPECT_EQ(f.nodes[0].description, "MF0;leaf01:MQM8790/U1");
    EXPECT_EQ(f.nodes[2].name, "node001");
}

// -g groups switches by chassis: "Chassis N" / "Non-Chassis Nodes" lines,
// "# Chassis N" after sysimgguid=, "[ext N]" after port numbers.
TEST(IbnetVariants, Grouping)
{
    const std::string t =
        "#\n# Topology file: generated on Tue Mar  4 09:12:44 2025\n#\n"
        "\nChassis 1 (guid 0x2c9000100d050)\n"
        "\n# Spine Nodes\n"
        "\nvendid=0x2c9\ndevid=0xbd36\nsysimgguid=0x2c9000100d050\t\t# Chassis 1\n"
        "switchguid=0x2c9000100d051(2c9000100d051)\t# Spine 1 Chip 1\n"
        "Switch\t24 \"S-0002c9000100d051\"\t\t# \"spine1 chip1\" enhanced port 0 lid 1 lmc 0\n"
        "[1][ext 7]\t\"H-0002c9030001e3f2\"[1](2c9030001e3f3) \t\t# \"n1 mlx4_0\" lid 5 4xQDR\n"
        "\nNon-Chassis Nodes\n"
        "\nvendid=0x2c9\ndevid=0x6274\nsysimgguid=0x2c9030001e3f5\ncaguid=0x2c9030001e3f2\n"
        "Ca\t2 \"H-0002c9030001e3f2\"\t\t# \"n1 mlx4_0\"\n"
        "[1](2c9030001e3f3) \t\"S-0002c9000100d051\"[1][ext 7]\t\t# lid 5 lmc 0 \"spine1 chip1\" lid 1 4xQDR\n";
    const Fabric f = parse_ibnetdiscover(t, "g.ibnet");
    ASSERT_EQ(f.nodes.size(), 2u);
    EXPECT_EQ(f.nodes[0].guid, "0x0002c9000100d051");
    EXPECT_EQ(f.nodes[0].links.at(0).peer_guid, "0x0002c9030001e3f2");
    EXPECT_EQ(f.nodes[1].links.at(0).peer_port, 1);
    EXPECT_DOUBLE_EQ(f.nodes[1].links.at(0).rate_gbps, 40);
}

// Two CAs cabled back to back: the peer's port GUID follows " (...)".
TEST(IbnetVariants, BackToBackCas)
{
    const std::string t = "Ca\t1 \"H-0000000000000a01\"\t\t# \"a mlx5_0\"\n"
                          "[1](a01) \t\"H-0000000000000b01\"[1] (b01) \t\t# lid 1 lmc 0 \"b mlx5_0\" lid 2 4xEDR\n"
                          "\n"
                          "Ca\t1 \"H-0000000000000b01\"\t\t# \"b mlx5_0\"\n"
                          "[1](b01) \t\"H-0000000000000a01\"[1] (a01) \t\t# lid 2 lmc 0 \"a mlx5_0\" lid 1 4xEDR\n";
    const Fabric f = parse_ibnetdiscover(t, "b2b.ibnet");
    ASSERT_EQ(f.nodes.size(), 2u);
    EXPECT_EQ(f.nodes[0].links.at(0).peer_guid, "0x0000000000000b01");
    EXPECT_DOUBLE_EQ(f.nodes[0].links.at(0).rate_gbps, 100);
    EXPECT_EQ(f.level, (std::vector<int>{0, 0}));
    EXPECT_EQ(format_fabric(f, false), "0 switches, 2 hosts, 1 link\n");
}

// Routers ("Rt", "R-<guid>") are checked, then left out with their links.
TEST(IbnetVariants, RoutersAreLeftOut)
{
    const std::string t =
        tiny("[1]\t\"H-0c42a10300a2b401\"[1](c42a10300a2b401) \t\t# \"node001 mlx5_0\" lid 11 4xHDR\n"
             "[40]\t\"R-0000000000000e01\"[1](e01) \t\t# \"router01\" lid 40 4xHDR") +
        "\nvendid=0x2c9\ndevid=0x101b\nrtguid=0xe01\n"
        "Rt\t2 \"R-0000000000000e01\"\t\t# \"router01\"\n"
        "[1](e01) \t\"S-b83fd20300a1c200\"[40]\t\t# lid 40 lmc 0 \"MF0;leaf01:MQM8790/U1\" lid 3 4xHDR\n";
    const Fabric f = parse_ibnetdiscover(t, "rt.ibnet");
    ASSERT_EQ(f.nodes.size(), 3u);
    EXPECT_EQ(port(f.nodes[0], 40), nullptr);
    EXPECT_EQ(f.nodes[0].links.size(), 2u);
    // ... but a link to an undefined router is still an error.
    EXPECT_NE(error_of(tiny("[1]\t\"H-0c42a10300a2b401\"[1](c42a10300a2b401) \t\t# \"node001 mlx5_0\" lid 11 4xHDR\n"
                            "[40]\t\"R-0000000000000e01\"[1](e01) \t\t# \"router01\" lid 40 4xHDR"))
                  .find("t.ibnet:12: Switch 0xb83fd20300a1c200 port 40 links to \"R-0000000000000e01\""),
              std::string::npos);
}

// A host that never set its node description shows the adapter's default.
TEST(IbnetVariants, FirmwareDescriptionNamesNoHost)
{
    const std::string fw = "MT4129 ConnectX7   Mellanox Technologies";
    std::string t = tiny("[1]\t\"H-0c42a10300a2b401\"[1](c42a10300a2b401) \t\t# \"" + fw + "\" lid 11 4xNDR");
    const std::string ca = "# \"node001 mlx5_0\"\n";
    t.replace(t.find(ca), ca.size(), "# \"" + fw + "\"\n");
    const Fabric f = parse_ibnetdiscover(t, "fw.ibnet");
    EXPECT_EQ(f.nodes[2].description, "MT4129 ConnectX7   Mellanox Technologies");
    EXPECT_EQ(f.nodes[2].name, "");
    EXPECT_EQ(f.level[0], 1);  // still a host: its switch is a leaf
    EXPECT_NE(format_fabric(f, false).find("hosts=1"), std::string::npos);
}

// ---- errors -------------------------------------------------------------------

TEST(IbnetErrors, EmptyOrNoNodes)
{
    EXPECT_EQ(error_of(""), "t.ibnet:1: no Switch or Ca record in 1 line; expected the output of ibnetdiscover "
                            "(e.g. ibnetdiscover > fabric.ibnet on a host of the fabric)");
    EXPECT_EQ(error_of("#\n# Topology file: generated on Tue Mar  4 09:12:44 2025\n#\n\n"),
              "t.ibnet:4: no Switch or Ca record in 4 lines; expected the output of ibnetdiscover "
              "(e.g. ibnetdiscover > fabric.ibnet on a host of the fabric)");
}

TEST(IbnetErrors, LinkLineOutsideARecord)
{
    EXPECT_EQ(error_of("# header\n[1]\t\"S-b83fd20300a1c000\"[1]\t\t# \"x\" lid 1 4xHDR\n"),
              "t.ibnet:2: link line '[1]\t\"S-b83fd20300a1c000\"[1]\t\t# \"x\" lid 1 4xHDR' outside a node "
              "record; expected it after its Switch, Ca or Rt line (ibnetdiscover prints a node's connected ports "
              "right after the node)");
    // An id line opens the next node's block: a link line there has no record.
    const std::string t = tiny();
    const size_t at = t.find("devid=0x101b");
    EXPECT_EQ(error_of(t.substr(0, at) + "[2]\t\"S-b83fd20300a1c200\"[2]\t\t# lid 1\n" + t.substr(at)).rfind(
                  "t.ibnet:22: link line", 0),
              0u);
}

TEST(IbnetErrors, PortCountMustBeANumber)
{
    EXPECT_EQ(error_of("Switch\tforty \"S-b83fd20300a1c200\"\t\t# \"leaf\"\n"),
              "t.ibnet:1: Switch record: the port count 'forty' is not a number from 1 to 255; expected Switch "
              "<ports> \"S-<guid>\"  # \"<description>\"");
    EXPECT_EQ(error_of("Ca\t0 \"H-0c42a10300a2b401\"\t\t# \"n\"\n"),
              "t.ibnet:1: Ca record with 0 ports; expected a port count from 1 to 255");
    EXPECT_EQ(error_of("Ca\t300 \"H-0c42a10300a2b401\"\t\t# \"n\"\n").rfind("t.ibnet:1: Ca record: the port count "
                                                                           "'300' is not a number",
                                                                           0),
              0u);
}

TEST(IbnetErrors, MalformedRecords)
{
    EXPECT_EQ(error_of("Ca\t1 \"S-0c42a10300a2b401\"\t\t# \"n\"\n"),
              "t.ibnet:1: Ca record: the node must be \"H-<guid>\" (a Ca is H-); expected Ca <ports> "
              "\"H-<guid>\"  # \"<description>\"");
    EXPECT_EQ(error_of("Switch\t41 \"S-b83fd20300a1c200zz\"\t\t# \"leaf\"\n"),
              "t.ibnet:1: Switch record: the GUID must be 1 to 16 hex digits, e.g. \"S-0c42a10300a2b3c4\"");
    EXPECT_EQ(error_of("Switch\t41 \"S-b83fd20300a1c2001\"\t\t# \"leaf\"\n"),
              "t.ibnet:1: Switch record: the GUID must be 1 to 16 hex digits, e.g. \"S-0c42a10300a2b3c4\"");
    EXPECT_EQ(error_of("Switch\t41 \"S-b83fd20300a1c200\" lid 3\n"),
              "t.ibnet:1: Switch record: unexpected 'lid' after the GUID; expected Switch <ports> \"S-<guid>\"  # "
              "\"<description>\"");
}

TEST(IbnetErrors, MalformedLinkLines)
{
    auto at_leaf_host = [](const std::string& line) {
        return error_of(tiny(line));
    };
    EXPECT_EQ(at_leaf_host("[x]\t\"H-0c42a10300a2b401\"[1]"),
              "t.ibnet:11: malformed link line '[x]\t\"H-0c42a10300a2b401\"[1]': the local port must be a number "
              "from 1 to 255 in [], expected [PORT] \"S-<guid>\"[PEER PORT] # ... lid N 4xHDR (a Switch link; "
              "\"H-\" for a CA peer, \"R-\" for a router)");
    EXPECT_EQ(at_leaf_host("[1]\tH-0c42a10300a2b401[1]"),
              "t.ibnet:11: malformed link line '[1]\tH-0c42a10300a2b401[1]': found 'H-0c42a10300a2b401[1]' where "
              "the peer node belongs; expected [PORT] \"S-<guid>\"[PEER PORT] # ... lid N 4xHDR (a Switch link; "
              "\"H-\" for a CA peer, \"R-\" for a router)");
    EXPECT_EQ(at_leaf_host("[1]\t\"X-0c42a10300a2b401\"[1]"),
              "t.ibnet:11: malformed link line '[1]\t\"X-0c42a10300a2b401\"[1]': the peer must be \"S-<guid>\" "
              "(switch), \"H-<guid>\" (CA) or \"R-<guid>\" (router)");
    EXPECT_EQ(at_leaf_host("[1]\t\"H-0c42a1030g\"[1]"),
              "t.ibnet:11: malformed link line '[1]\t\"H-0c42a1030g\"[1]': the peer GUID must be 1 to 16 hex "
              "digits, e.g. \"H-0c42a10300a2b3c4\"");
    EXPECT_EQ(at_leaf_host("[1]\t\"H-0c42a10300a2b401\""),
              "t.ibnet:11: malformed link line '[1]\t\"H-0c42a10300a2b401\"': the peer port must follow the peer "
              "in [], a number from 1 to 255; expected [PORT] \"S-<guid>\"[PEER PORT] # ... lid N 4xHDR (a Switch "
              "link; \"H-\" for a CA peer, \"R-\" for a router)");
    EXPECT_EQ(at_leaf_host("[1]\t\"H-0c42a10300a2b401\"[1](c42a10300a2b401) lid 11 4xHDR"),
              "t.ibnet:11: malformed link line '[1]\t\"H-0c42a10300a2b401\"[1](c42a10300a2b401) lid 11 4xHDR': "
              "unexpected 'lid' after the peer port; expected a # comment with the peer's description, LID and "
              "width-speed");
    EXPECT_EQ(at_leaf_host("[1]\t\"H-0c42a10300a2b401\"[1](c42a1030xyz) \t\t# \"n\" lid 11 4xHDR"),
              "t.ibnet:11: malformed port GUID after the peer port; expected 1 to 16 hex digits in (), e.g. "
              "(c42a10300a2b3c4)");
    EXPECT_EQ(at_leaf_host("[0]\t\"H-0c42a10300a2b401\"[1]"),
              "t.ibnet:11: link line '[0]\t\"H-0c42a10300a2b401\"[1]': port 0 cannot be linked; expected ports "
              "from 1");
    EXPECT_EQ(at_leaf_host("[42]\t\"H-0c42a10300a2b401\"[1]"),
              "t.ibnet:11: port 42 of the Switch at line 10, which has 41 ports; expected a port from 1 to 41");
}

TEST(IbnetErrors, PortListedTwice)
{
    EXPECT_EQ(error_of(tiny("[1]\t\"H-0c42a10300a2b401\"[1](c42a10300a2b401) \t\t# \"node001 mlx5_0\" lid 11 "
                            "4xHDR\n[1]\t\"H-0c42a10300a2b401\"[1]")),
              "t.ibnet:12: port 1 is listed twice (first at line 11); expected one line per connected port");
}

TEST(IbnetErrors, UnexpectedLine)
{
    EXPECT_EQ(error_of("ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0,1,33)\n"),
              "t.ibnet:1: unexpected line 'ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (DR path...'; "
              "expected ibnetdiscover output: a Switch, Ca or Rt record, a [port] link line, a key=value line such "
              "as vendid=0x2c9, or a # comment");
}

TEST(IbnetErrors, GuidDefinedTwice)
{
    EXPECT_EQ(error_of(tiny() + "\nCa\t1 \"H-c42a10300a2b401\"\t\t# \"node001 mlx5_1\"\n"),
              "t.ibnet:28: GUID 0x0c42a10300a2b401 is defined twice (first by the Ca at line 25); expected each "
              "node once, as one ibnetdiscover run prints it");
}

TEST(IbnetErrors, LinkToAnUndefinedGuid)
{
    const std::string t = slurp(kDir + "bad-undefined-peer.ibnet");
    EXPECT_EQ(error_of(t, "bad-undefined-peer.ibnet"),
              "bad-undefined-peer.ibnet:14: Switch 0xb83fd20300a1c200 port 2 links to \"H-0c42a10300a2b402\", "
              "which no Switch, Ca or Rt record in the file defines; expected every peer to have its own record "
              "(is the file complete?)");
}

TEST(IbnetErrors, PeerOfTheWrongType)
{
    EXPECT_EQ(error_of(tiny("[1]\t\"S-0c42a10300a2b401\"[1]\t\t# \"node001 mlx5_0\" lid 11 4xHDR")),
              "t.ibnet:11: Switch 0xb83fd20300a1c200 port 1 names its peer \"S-0c42a10300a2b401\", but line 25 "
              "defines 0x0c42a10300a2b401 as a Ca; expected \"H-\"");
}

TEST(IbnetErrors, PeerPortBeyondThePeersPorts)
{
    EXPECT_EQ(error_of(tiny("[1]\t\"H-0c42a10300a2b401\"[2](c42a10300a2b402) \t\t# \"node001 mlx5_0\" lid 11 4xHDR")),
              "t.ibnet:11: Switch 0xb83fd20300a1c200 port 1 links to port 2 of 0x0c42a10300a2b401, which has 1 "
              "ports (line 25); expected a peer port from 1 to 1");
}

TEST(IbnetErrors, BothEndsMustNameEachOther)
{
    const std::string t = slurp(kDir + "bad-asymmetric.ibnet");
    EXPECT_EQ(error_of(t, "bad-asymmetric.ibnet"),
              "bad-asymmetric.ibnet:16: Switch 0xb83fd20300a1c200 port 34 links to 0xb83fd20300a1c000 port 2, but "
              "line 24 says 0xb83fd20300a1c000 port 2 links to 0xb83fd20300a1c200 port 35; expected both ends of a "
              "link to name each other");
    // One end listed, the other port absent: accepted (a partial view).
    EXPECT_EQ(error_of(tiny("[1]\t\"H-0c42a10300a2b401\"[1](c42a10300a2b401) \t\t# \"node001 mlx5_0\" lid 11 4xHDR",
                            "")),
              "");
}

// ---- format_fabric on hand-built fabrics -------------------------------------------

TEST(IbnetFormat, UnreachableSwitchesAndOneSidedLinks)
{
    Fabric f;
    IbNode leaf{true, "0x0000000000000001", "leaf \"A\"\\1", "leaf \"A\"\\1", 36, {}};
    IbNode spine{true, "0x0000000000000002", "spine", "spine", 36, {}};
    IbNode island{true, "0x0000000000000003", "", "", 8, {}};
    IbNode host{false, "0x0000000000000004", "h1 mlx5_0", "h1", 1, {}};
    // Links listed from one side only.
    leaf.links.push_back({1, host.guid, 1, "4x", "NDR", 400});
    leaf.links.push_back({33, spine.guid, 1, "2x", "NDR", 200});
    f.nodes = {leaf, spine, island, host};
    f.level = {1, 2, 0, 0};
    EXPECT_EQ(format_fabric(f, false),
              "spine level=2 guid=0x0000000000000002 hosts=0 uplinks=0 (0 Gb/s) downlinks=1\n"
              "leaf \"A\"\\1 level=1 guid=0x0000000000000001 hosts=1 uplinks=1 (200 Gb/s) downlinks=1\n"
              "0x0000000000000003 level=0 guid=0x0000000000000003 hosts=0 uplinks=0 (0 Gb/s) downlinks=0\n"
              "3 switches (leaves 1, spines 1, unreachable 1), 1 host, 2 links\n");
    JsonDoc doc(format_fabric(f, true));  // quotes and backslashes escaped
    ASSERT_NE(doc.root, nullptr);
    json_object* sw = get(doc.root, "switches");
    EXPECT_EQ(str(json_object_array_get_idx(sw, 1), "name"), "leaf \"A\"\\1");
    json_object* ports = get(json_object_array_get_idx(get(doc.root, "hosts"), 0), "ports");
    ASSERT_EQ(json_object_array_length(ports), 1u);
    EXPECT_EQ(str(json_object_array_get_idx(ports, 0), "peer"), "leaf \"A\"\\1");
    EXPECT_EQ(json_object_get_int(get(json_object_array_get_idx(ports, 0), "peer_port")), 1);
}

TEST(IbnetFormat, CoreLevelAndMultiRailHosts)
{
    // host h1 has two HCAs on two leaves; leaves under one spine under one core.
    const std::string t =
        "Switch\t8 \"S-0000000000000001\"\t\t# \"leafA\" enhanced port 0 lid 1 lmc 0\n"
        "[1]\t\"H-00000000000000a1\"[1](a1) \t\t# \"h1 mlx5_0\" lid 11 4xNDR\n"
        "[8]\t\"S-0000000000000003\"[1]\t\t# \"spine\" lid 3 4xNDR\n"
        "Switch\t8 \"S-0000000000000002\"\t\t# \"leafB\" enhanced port 0 lid 2 lmc 0\n"
        "[1]\t\"H-00000000000000a2\"[1](a2) \t\t# \"h1 mlx5_1\" lid 12 4xNDR\n"
        "[8]\t\"S-0000000000000003\"[2]\t\t# \"spine\" lid 3 4xNDR\n"
        "Switch\t8 \"S-0000000000000003\"\t\t# \"spine\" enhanced port 0 lid 3 lmc 0\n"
        "[1]\t\"S-0000000000000001\"[8]\t\t# \"leafA\" lid 1 4xNDR\n"
        "[2]\t\"S-0000000000000002\"[8]\t\t# \"leafB\" lid 2 4xNDR\n"
        "[8]\t\"S-0000000000000004\"[1]\t\t# \"core\" lid 4 4xNDR\n"
        "Switch\t8 \"S-0000000000000004\"\t\t# \"core\" enhanced port 0 lid 4 lmc 0\n"
        "[1]\t\"S-0000000000000003\"[8]\t\t# \"spine\" lid 3 4xNDR\n"
        "Ca\t1 \"H-00000000000000a1\"\t\t# \"h1 mlx5_0\"\n"
        "[1](a1) \t\"S-0000000000000001\"[1]\t\t# lid 11 lmc 0 \"leafA\" lid 1 4xNDR\n"
        "Ca\t1 \"H-00000000000000a2\"\t\t# \"h1 mlx5_1\"\n"
        "[1](a2) \t\"S-0000000000000002\"[1]\t\t# lid 12 lmc 0 \"leafB\" lid 2 4xNDR\n";
    const Fabric f = parse_ibnetdiscover(t, "core.ibnet");
    EXPECT_EQ(f.level, (std::vector<int>{1, 1, 2, 3, 0, 0}));
    EXPECT_EQ(format_fabric(f, false),
              "core level=3 guid=0x0000000000000004 hosts=0 uplinks=0 (0 Gb/s) downlinks=1\n"
              "spine level=2 guid=0x0000000000000003 hosts=0 uplinks=1 (400 Gb/s) downlinks=2\n"
              "leafA level=1 guid=0x0000000000000001 hosts=1 uplinks=1 (400 Gb/s) downlinks=1\n"
              "leafB level=1 guid=0x0000000000000002 hosts=1 uplinks=1 (400 Gb/s) downlinks=1\n"
              "4 switches (leaves 2, spines 1, cores 1), 1 host (2 CAs), 5 links\n");
}
