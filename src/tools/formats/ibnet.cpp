// m2g tools: the InfiniBand fabric as `ibnetdiscover` prints it
// (infiniband-diags, rdma-core), and `m2g discover fabric` output.
//
// What the parser reads is ibnetdiscover's default topology output (also
// with -g grouping, -f full information and --node-name-map):
//
//   # comments                         ignored (the header, "# Spine Nodes"...)
//   vendid=0x2c9, devid=, sysimgguid=,  id lines: any key=value line is ignored
//   switchguid=, caguid=, rtguid=...    (it opens the next node's block)
//   Chassis 1 (guid 0x...),             -g grouping lines, ignored
//   Non-Chassis Nodes, Hostname: ...
//   Switch  41 "S-<guid>"  # "desc" enhanced port 0 lid 1 lmc 0
//   Ca      1 "H-<guid>"   # "desc"
//   Rt      2 "R-<guid>"   # "desc"
//   [p][ext e](portguid)  "S-<guid>"[q][ext e](portguid)  # ... lid N 4xHDR
//
// Only connected ports are printed by ibnetdiscover; a port that is down or
// uncabled simply has no line. A link line's comment ends with the active
// width and speed ("4xHDR", "2xNDR", "4xFDR10"); it may be missing (older
// versions, or a port whose speed was not read): rate 0, width/speed "".
//
// Choices (m2g(1), DISCOVERY):
// - GUIDs are "0x" + 16 lower-case hex digits, zero-padded: ibnetdiscover
//   prints "S-0008f10400410015" but "switchguid=0x8f10400410015" and
//   "(8f10403960559)"; every GUID m2g keeps is padded the same way.
// - Link rate = lanes x lane rate: SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR
//   14.0625, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s; FDR is rounded down to a
//   whole Gb/s as the kernel's sysfs rate and ibstat print it (4xFDR = 56,
//   1xFDR = 14, 12xFDR = 168). Widths 1x, 2x, 4x, 8x, 12x.
// - Rt (router) records are read and checked but left out of the Fabric, and
//   so are links to routers: a router joins subnets, it is not a level of
//   this fat tree.
// - A CA whose description contains "Aggregation Node" is a switch's SHARP
//   aggregation node (a CA inside the switch ASIC, on its last port, e.g.
//   port 41 of a Quantum HDR switch): it stays in Fabric.nodes but is not a
//   host, so it makes no switch a leaf and counts in no hosts=/links total.
// - A CA's name is its host name, the description's first word
//   ("node001 mlx5_0" -> node001), except "" when the description is the
//   adapter firmware's default ("MT4129 ConnectX7 Mellanox Technologies":
//   the host never set its node description, so the host is unknown) and for
//   aggregation nodes. A switch's name is its description.
#include <json-c/json.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "tools/formats/discover.hpp"
#include "core/base/error.hpp"

namespace m2g {

namespace {

constexpr const char* kPortLineForm =
    "[PORT] \"S-<guid>\"[PEER PORT] # ... lid N 4xHDR (a Switch link; \"H-\" for a CA peer, \"R-\" for a router)";

[[noreturn]] void fail(const std::string& file, int line, const std::string& msg)
{
    throw ParseError(file + ":" + std::to_string(line) + ": " + msg);
}

bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && is_space(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && is_space(s.back()))
        s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> words(std::string_view s)
{
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && is_space(s[i]))
            ++i;
        const size_t b = i;
        while (i < s.size() && !is_space(s[i]))
            ++i;
        if (i > b)
            out.push_back(s.substr(b, i - b));
    }
    return out;
}

// A line shortened for an error message.
std::string quote(std::string_view s)
{
    std::string t(trim(s));
    if (t.size() > 60)
        t = t.substr(0, 57) + "...";
    return "'" + t + "'";
}

std::string format_gbps(double g)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4f", g);
    std::string s = buf;
    while (!s.empty() && s.back() == '0')
        s.pop_back();
    if (!s.empty() && s.back() == '.')
        s.pop_back();
    return s == "-0" ? "0" : s;
}

struct LaneRate {
    const char* speed;
    double gbps;
};
const LaneRate kLaneRates[] = {{"SDR", 2.5},  {"DDR", 5},   {"QDR", 10},  {"FDR10", 10}, {"FDR", 14.0625},
                               {"EDR", 25},   {"HDR", 50},  {"NDR", 100}, {"XDR", 200}};
const int kWidths[] = {1, 2, 4, 8, 12};

// One line being read left to right.
class Cursor {
  public:
    Cursor(std::string_view s, const std::string& file, int line) : s_(s), file_(file), line_(line) {}

    void ws()
    {
        while (i_ < s_.size() && is_space(s_[i_]))
            ++i_;
    }
    bool at_end() const { return i_ >= s_.size(); }
    char peek() const { return at_end() ? '\0' : s_[i_]; }
    bool take(char c)
    {
        if (peek() != c)
            return false;
        ++i_;
        return true;
    }
    bool take(std::string_view w)
    {
        if (s_.substr(i_, w.size()) != w)
            return false;
        i_ += w.size();
        return true;
    }
    std::string_view rest() const { return s_.substr(std::min(i_, s_.size())); }
    // The next run of non-space characters, for error messages.
    std::string next_word() const
    {
        size_t e = i_;
        while (e < s_.size() && !is_space(s_[e]))
            ++e;
        return e > i_ ? "'" + std::string(s_.substr(i_, e - i_)) + "'" : "the end of the line";
    }
    // A decimal number from 0 to `max`.
    bool number(int& out, int max)
    {
        size_t e = i_;
        long v = 0;
        while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) {
            v = v * 10 + (s_[e] - '0');
            if (v > max)
                return false;
            ++e;
        }
        if (e == i_)
            return false;
        out = static_cast<int>(v);
        i_ = e;
        return true;
    }
    // 1 to 16 hex digits, normalized to "0x" + 16 lower-case digits.
    bool guid(std::string& out)
    {
        size_t e = i_;
        while (e < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[e])))
            ++e;
        if (e == i_ || e - i_ > 16)
            return false;
        std::string hex(16 - (e - i_), '0');
        for (size_t k = i_; k < e; ++k)
            hex += static_cast<char>(std::tolower(static_cast<unsigned char>(s_[k])));
        out = "0x" + hex;
        i_ = e;
        return true;
    }
    // "[ext N]" as -g grouping prints it after a port number.
    void ext_port(const char* which)
    {
        if (!take("[ext"))
            return;
        ws();
        int n = 0;
        if (!number(n, 65535) || !take(']'))
            fail(file_, line_, std::string("malformed [ext N] after the ") + which + "; expected e.g. [ext 12]");
    }
    // "(<hex>)", a port GUID: checked, not kept.
    void port_guid(const char* whose)
    {
        if (!take('('))
            return;
        std::string g;
        if (!guid(g) || !take(')'))
            fail(file_, line_,
                 std::string("malformed port GUID after the ") + whose + "; expected 1 to 16 hex digits in (), e.g. "
                 "(c42a10300a2b3c4)");
    }

  private:
    std::string_view s_;
    size_t i_ = 0;
    const std::string& file_;
    int line_;
};

char type_letter(std::string_view keyword)
{
    return keyword == "Switch" ? 'S' : keyword == "Ca" ? 'H' : 'R';
}

const char* type_keyword(char letter)
{
    return letter == 'S' ? "Switch" : letter == 'H' ? "Ca" : "Rt";
}

struct RawLink {
    IbPortLink link;
    char peer_type = 0;
    int line = 0;
};

struct RawNode {
    char type = 0;  // 'S', 'H', 'R'
    int line = 0;
    std::string guid, description;
    int ports = 0;
    std::vector<RawLink> links;
};

// "4xHDR", "2xNDR", "4xFDR10", "4x???" (speed unknown), "??HDR" (width
// unknown). Returns false when `t` is not a width-speed token at all.
bool width_speed(std::string_view t, IbPortLink& l, const std::string& file, int line)
{
    int lanes = 0;
    std::string_view speed;
    if (t.substr(0, 2) == "??") {
        speed = t.substr(2);
    } else {
        size_t i = 0;
        while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])))
            ++i;
        if (i == 0 || i > 2 || i >= t.size() || t[i] != 'x')
            return false;
        lanes = std::atoi(std::string(t.substr(0, i)).c_str());
        speed = t.substr(i + 1);
        if (std::find(std::begin(kWidths), std::end(kWidths), lanes) == std::end(kWidths))
            fail(file, line,
                 "link width '" + std::string(t.substr(0, i + 1)) + "' in '" + std::string(t) +
                     "'; expected 1x, 2x, 4x, 8x or 12x");
    }
    if (speed == "???") {
        l.width = lanes ? std::to_string(lanes) + "x" : "";
        return true;
    }
    const LaneRate* r = nullptr;
    for (const LaneRate& lr : kLaneRates)
        if (speed == lr.speed)
            r = &lr;
    if (!r)
        fail(file, line,
             "link speed '" + std::string(speed) + "' in '" + std::string(t) +
                 "'; expected SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR or XDR after the width (e.g. 4xHDR)");
    l.width = lanes ? std::to_string(lanes) + "x" : "";
    l.speed = r->speed;
    if (lanes) {
        l.rate_gbps = lanes * r->gbps;
        if (l.speed == "FDR")
            l.rate_gbps = std::floor(l.rate_gbps);
    }
    return true;
}

// The comment of a link line: switch side `"peer desc" lid N 4xHDR`, CA side
// `lid L lmc M "peer desc" lid N 4xHDR`, then maybe ` s=.. w=.. v=..` (-f),
// ` slot N` or ` (scp)`. The width-speed token follows the last "lid N".
void link_comment(std::string_view comment, IbPortLink& l, const std::string& file, int line)
{
    const size_t q = comment.rfind('"');
    const std::vector<std::string_view> w = words(q == std::string_view::npos ? comment : comment.substr(q + 1));
    for (size_t k = w.size(); k-- > 0;) {
        if (w[k] != "lid")
            continue;
        if (k + 2 < w.size())
            width_speed(w[k + 2], l, file, line);
        return;
    }
}

RawLink parse_link_line(std::string_view text, const std::string& file, int line)
{
    RawLink r;
    r.line = line;
    IbPortLink& l = r.link;
    Cursor c(text, file, line);
    c.take('[');
    if (!c.number(l.port, 255) || !c.take(']'))
        fail(file, line,
             "malformed link line " + quote(text) + ": the local port must be a number from 1 to 255 in [], "
             "expected " + kPortLineForm);
    c.ext_port("local port");
    c.ws();
    c.port_guid("local port");
    c.ws();
    if (!c.take('"'))
        fail(file, line,
             "malformed link line " + quote(text) + ": found " + c.next_word() +
                 " where the peer node belongs; expected " + kPortLineForm);
    const char t = c.peek();
    if ((t != 'S' && t != 'H' && t != 'R') || !(c.take(t) && c.take('-')))
        fail(file, line,
             "malformed link line " + quote(text) + ": the peer must be \"S-<guid>\" (switch), \"H-<guid>\" (CA) "
             "or \"R-<guid>\" (router)");
    r.peer_type = t;
    if (!c.guid(l.peer_guid) || !c.take('"'))
        fail(file, line,
             "malformed link line " + quote(text) + ": the peer GUID must be 1 to 16 hex digits, e.g. \"" +
                 std::string(1, t) + "-0c42a10300a2b3c4\"");
    if (!c.take('[') || !c.number(l.peer_port, 255) || !c.take(']'))
        fail(file, line,
             "malformed link line " + quote(text) + ": the peer port must follow the peer in [], a number from 1 "
             "to 255; expected " + kPortLineForm);
    c.ext_port("peer port");
    c.ws();
    c.port_guid("peer port");
    c.ws();
    if (c.take('#'))
        link_comment(c.rest(), l, file, line);
    else if (!c.at_end())
        fail(file, line,
             "malformed link line " + quote(text) + ": unexpected " + c.next_word() +
                 " after the peer port; expected a # comment with the peer's description, LID and width-speed");
    if (l.port < 1 || l.peer_port < 1)
        fail(file, line, "link line " + quote(text) + ": port 0 cannot be linked; expected ports from 1");
    return r;
}

RawNode parse_record(std::string_view text, const std::string& keyword, const std::string& file, int line)
{
    RawNode n;
    n.type = type_letter(keyword);
    n.line = line;
    const std::string form = keyword + " <ports> \"" + n.type + "-<guid>\"  # \"<description>\"";
    Cursor c(text, file, line);
    c.take(keyword);
    c.ws();
    if (!c.number(n.ports, 255))
        fail(file, line,
             std::string(keyword) + " record: the port count " + c.next_word() +
                 " is not a number from 1 to 255; expected " + form);
    if (n.ports < 1)
        fail(file, line, std::string(keyword) + " record with 0 ports; expected a port count from 1 to 255");
    c.ws();
    if (!c.take('"'))
        fail(file, line, std::string(keyword) + " record: found " + c.next_word() + " after the port count; expected " +
                             form);
    const char t = c.peek();
    if (t != n.type || !(c.take(t) && c.take('-')))
        fail(file, line,
             std::string(keyword) + " record: the node must be \"" + n.type + "-<guid>\" (a " + keyword +
                 " is " + n.type + "-); expected " + form);
    if (!c.guid(n.guid) || !c.take('"'))
        fail(file, line,
             std::string(keyword) + " record: the GUID must be 1 to 16 hex digits, e.g. \"" + n.type +
                 "-0c42a10300a2b3c4\"");
    c.ws();
    if (c.take('#')) {
        const std::string_view cm = c.rest();
        const size_t a = cm.find('"'), b = cm.rfind('"');
        if (a != std::string_view::npos && b > a)
            n.description = std::string(cm.substr(a + 1, b - a - 1));
    } else if (!c.at_end()) {
        fail(file, line,
             std::string(keyword) + " record: unexpected " + c.next_word() + " after the GUID; expected " + form);
    }
    return n;
}

// vendid=0x2c9, devid=0xd2f0, sysimgguid=..., switchguid=...(...), caguid=...
bool is_id_line(std::string_view s)
{
    size_t i = 0;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_'))
        ++i;
    return i > 0 && i < s.size() && s[i] == '=' && std::isalpha(static_cast<unsigned char>(s[0]));
}

// The -g grouping lines ibnetdiscover prints between node blocks.
bool is_grouping_line(std::string_view s)
{
    return s == "Non-Chassis Nodes" || s.substr(0, 8) == "Chassis " || s.substr(0, 9) == "Hostname:";
}

bool is_aggregation_node(const IbNode& n)
{
    return !n.is_switch && n.description.find("Aggregation Node") != std::string::npos;
}

// "MT4129 ConnectX7   Mellanox Technologies": the firmware's description,
// left when the host never set its own (rdma-ndd, /sys/class/infiniband/*/node_desc).
bool is_firmware_description(std::string_view first_word)
{
    if (first_word.size() < 3 || first_word.substr(0, 2) != "MT")
        return false;
    return std::all_of(first_word.begin() + 2, first_word.end(),
                       [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
}

std::string ca_name(const IbNode& n)
{
    if (is_aggregation_node(n))
        return "";
    const std::vector<std::string_view> w = words(n.description);
    if (w.empty() || is_firmware_description(w[0]))
        return "";
    return std::string(w[0]);
}

// Each node's links, with the ones only its peer lists added (a hand-built
// Fabric may list a link from one side only; ibnetdiscover lists both).
std::vector<std::vector<IbPortLink>> all_links(const Fabric& f, const std::map<std::string, size_t>& by_guid)
{
    std::vector<std::vector<IbPortLink>> out(f.nodes.size());
    for (size_t i = 0; i < f.nodes.size(); ++i)
        out[i] = f.nodes[i].links;
    for (size_t i = 0; i < f.nodes.size(); ++i) {
        for (const IbPortLink& l : f.nodes[i].links) {
            const auto it = by_guid.find(l.peer_guid);
            if (it == by_guid.end())
                continue;
            std::vector<IbPortLink>& peer = out[it->second];
            const bool listed = std::any_of(peer.begin(), peer.end(),
                                            [&](const IbPortLink& p) { return p.port == l.peer_port; });
            if (!listed) {
                IbPortLink back = l;
                back.port = l.peer_port;
                back.peer_guid = f.nodes[i].guid;
                back.peer_port = l.port;
                peer.push_back(back);
            }
        }
    }
    return out;
}

std::map<std::string, size_t> index_by_guid(const Fabric& f)
{
    std::map<std::string, size_t> m;
    for (size_t i = 0; i < f.nodes.size(); ++i)
        m.emplace(f.nodes[i].guid, i);
    return m;
}

bool is_host(const IbNode& n)
{
    return !n.is_switch && !is_aggregation_node(n);
}

// Levels by breadth-first search from the hosts: 1 for a switch with a host,
// k+1 for a switch whose nearest level is k, 0 for CAs and the unreached.
std::vector<int> compute_levels(const Fabric& f)
{
    const std::map<std::string, size_t> by_guid = index_by_guid(f);
    const std::vector<std::vector<IbPortLink>> links = all_links(f, by_guid);
    std::vector<int> level(f.nodes.size(), 0);
    std::vector<size_t> queue;
    for (size_t i = 0; i < f.nodes.size(); ++i) {
        if (!f.nodes[i].is_switch)
            continue;
        for (const IbPortLink& l : links[i]) {
            const auto it = by_guid.find(l.peer_guid);
            if (it != by_guid.end() && is_host(f.nodes[it->second])) {
                level[i] = 1;
                queue.push_back(i);
                break;
            }
        }
    }
    for (size_t head = 0; head < queue.size(); ++head) {
        const size_t u = queue[head];
        for (const IbPortLink& l : links[u]) {
            const auto it = by_guid.find(l.peer_guid);
            if (it == by_guid.end())
                continue;
            const size_t v = it->second;
            if (f.nodes[v].is_switch && level[v] == 0) {
                level[v] = level[u] + 1;
                queue.push_back(v);
            }
        }
    }
    return level;
}

}  // namespace

Fabric parse_ibnetdiscover(std::string_view text, const std::string& file)
{
    std::vector<RawNode> raw;
    std::map<std::string, size_t> by_guid;
    long current = -1;  // the record link lines belong to
    int no = 0;
    while (!text.empty() || no == 0) {
        const size_t nl = text.find('\n');
        const std::string_view line = trim(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        ++no;
        if (line.empty() || line.front() == '#')
            continue;
        if (line.front() == '[') {
            if (current < 0)
                fail(file, no,
                     "link line " + quote(line) + " outside a node record; expected it after its Switch, Ca or Rt "
                     "line (ibnetdiscover prints a node's connected ports right after the node)");
            RawNode& n = raw[static_cast<size_t>(current)];
            RawLink r = parse_link_line(line, file, no);
            if (r.link.port > n.ports)
                fail(file, no,
                     "port " + std::to_string(r.link.port) + " of the " + type_keyword(n.type) + " at line " +
                         std::to_string(n.line) + ", which has " + std::to_string(n.ports) +
                         " ports; expected a port from 1 to " + std::to_string(n.ports));
            for (const RawLink& o : n.links)
                if (o.link.port == r.link.port)
                    fail(file, no,
                         "port " + std::to_string(r.link.port) + " is listed twice (first at line " +
                             std::to_string(o.line) + "); expected one line per connected port");
            n.links.push_back(std::move(r));
            continue;
        }
        const std::vector<std::string_view> w = words(line);
        if (w[0] == "Switch" || w[0] == "Ca" || w[0] == "Rt") {
            RawNode n = parse_record(line, std::string(w[0]), file, no);
            const auto ins = by_guid.emplace(n.guid, raw.size());
            if (!ins.second)
                fail(file, no,
                     "GUID " + n.guid + " is defined twice (first by the " + type_keyword(raw[ins.first->second].type) +
                         " at line " + std::to_string(raw[ins.first->second].line) +
                         "); expected each node once, as one ibnetdiscover run prints it");
            current = static_cast<long>(raw.size());
            raw.push_back(std::move(n));
            continue;
        }
        if (is_id_line(line) || is_grouping_line(line)) {
            current = -1;
            continue;
        }
        fail(file, no,
             "unexpected line " + quote(line) + "; expected ibnetdiscover output: a Switch, Ca or Rt record, a "
             "[port] link line, a key=value line such as vendid=0x2c9, or a # comment");
    }
    bool any = false;
    for (const RawNode& n : raw)
        any = any || n.type != 'R';
    if (!any)
        fail(file, no,
             "no Switch or Ca record in " + std::to_string(no) + (no == 1 ? " line" : " lines") +
                 "; expected the output of ibnetdiscover (e.g. ibnetdiscover > fabric.ibnet on a host of the fabric)");

    // Every link names a node of the file, of the type it says, a port it
    // has, and, when that port is listed too, that port points back.
    for (const RawNode& n : raw) {
        for (const RawLink& r : n.links) {
            const IbPortLink& l = r.link;
            const std::string here = type_keyword(n.type) + std::string(" ") + n.guid + " port " +
                                     std::to_string(l.port);
            const auto it = by_guid.find(l.peer_guid);
            if (it == by_guid.end())
                fail(file, r.line,
                     here + " links to \"" + r.peer_type + "-" + l.peer_guid.substr(2) +
                         "\", which no Switch, Ca or Rt record in the file defines; expected every peer to have its "
                         "own record (is the file complete?)");
            const RawNode& p = raw[it->second];
            if (p.type != r.peer_type)
                fail(file, r.line,
                     here + " names its peer \"" + r.peer_type + "-" + l.peer_guid.substr(2) + "\", but line " +
                         std::to_string(p.line) + " defines " + l.peer_guid + " as a " + type_keyword(p.type) +
                         "; expected \"" + p.type + "-\"");
            if (l.peer_port > p.ports)
                fail(file, r.line,
                     here + " links to port " + std::to_string(l.peer_port) + " of " + l.peer_guid + ", which has " +
                         std::to_string(p.ports) + " ports (line " + std::to_string(p.line) +
                         "); expected a peer port from 1 to " + std::to_string(p.ports));
            for (const RawLink& b : p.links) {
                if (b.link.port != l.peer_port)
                    continue;
                if (b.link.peer_guid != n.guid || b.link.peer_port != l.port)
                    fail(file, r.line,
                         here + " links to " + l.peer_guid + " port " + std::to_string(l.peer_port) + ", but line " +
                             std::to_string(b.line) + " says " + l.peer_guid + " port " +
                             std::to_string(l.peer_port) + " links to " + b.link.peer_guid + " port " +
                             std::to_string(b.link.peer_port) + "; expected both ends of a link to name each other");
                break;
            }
        }
    }

    Fabric f;
    for (RawNode& n : raw) {
        if (n.type == 'R')
            continue;
        IbNode node;
        node.is_switch = n.type == 'S';
        node.guid = n.guid;
        node.description = n.description;
        node.ports = n.ports;
        for (RawLink& r : n.links)
            if (r.peer_type != 'R')
                node.links.push_back(std::move(r.link));
        node.name = node.is_switch ? node.description : ca_name(node);
        f.nodes.push_back(std::move(node));
    }
    f.level = compute_levels(f);
    return f;
}

namespace {

struct JsonDeleter {
    void operator()(json_object* o) const { json_object_put(o); }
};
using JsonPtr = std::unique_ptr<json_object, JsonDeleter>;

json_object* json_gbps(double g)
{
    const std::string s = format_gbps(g);
    return json_object_new_double_s(std::strtod(s.c_str(), nullptr), s.c_str());
}

json_object* json_string(const std::string& s)
{
    return json_object_new_string_len(s.c_str(), static_cast<int>(s.size()));
}

const char* level_label(int level)
{
    switch (level) {
    case 0:
        return "unreachable";
    case 1:
        return "leaves";
    case 2:
        return "spines";
    case 3:
        return "cores";
    default:
        return nullptr;
    }
}

}  // namespace

std::string format_fabric(const Fabric& f, bool json)
{
    const std::map<std::string, size_t> by_guid = index_by_guid(f);
    const std::vector<std::vector<IbPortLink>> links = all_links(f, by_guid);
    auto level = [&](size_t i) { return i < f.level.size() ? f.level[i] : 0; };
    auto label = [&](size_t i) { return f.nodes[i].name.empty() ? f.nodes[i].guid : f.nodes[i].name; };
    auto peer_label = [&](const IbPortLink& l) {
        const auto it = by_guid.find(l.peer_guid);
        return it == by_guid.end() ? l.peer_guid : label(it->second);
    };
    auto peer_index = [&](const IbPortLink& l) -> long {
        const auto it = by_guid.find(l.peer_guid);
        return it == by_guid.end() ? -1 : static_cast<long>(it->second);
    };

    std::vector<size_t> switches;
    std::vector<size_t> cas;
    size_t aggregation = 0;
    for (size_t i = 0; i < f.nodes.size(); ++i) {
        if (f.nodes[i].is_switch)
            switches.push_back(i);
        else if (is_aggregation_node(f.nodes[i]))
            ++aggregation;
        else
            cas.push_back(i);
    }
    std::sort(switches.begin(), switches.end(), [&](size_t a, size_t b) {
        if (level(a) != level(b))
            return level(a) > level(b);
        if (label(a) != label(b))
            return label(a) < label(b);
        return f.nodes[a].guid < f.nodes[b].guid;
    });

    // Each physical link once, leaving out aggregation nodes.
    std::set<std::pair<std::string, std::string>> cables;
    for (size_t i = 0; i < f.nodes.size(); ++i) {
        if (is_aggregation_node(f.nodes[i]))
            continue;
        for (const IbPortLink& l : links[i]) {
            const long p = peer_index(l);
            if (p >= 0 && is_aggregation_node(f.nodes[static_cast<size_t>(p)]))
                continue;
            std::string a = f.nodes[i].guid + ":" + std::to_string(l.port);
            std::string b = l.peer_guid + ":" + std::to_string(l.peer_port);
            if (b < a)
                std::swap(a, b);
            cables.emplace(a, b);
        }
    }
    std::set<std::string> host_names;
    for (size_t i : cas)
        host_names.insert(label(i));

    struct SwitchView {
        std::vector<std::string> hosts;  // sorted, distinct
        std::vector<const IbPortLink*> up, down, lateral;
        double up_gbps = 0;
    };
    auto view = [&](size_t s) {
        SwitchView v;
        std::set<std::string> hosts;
        for (const IbPortLink& l : links[s]) {
            const long p = peer_index(l);
            if (p >= 0 && is_aggregation_node(f.nodes[static_cast<size_t>(p)]))
                continue;
            if (p >= 0 && !f.nodes[static_cast<size_t>(p)].is_switch) {
                hosts.insert(label(static_cast<size_t>(p)));
                v.down.push_back(&l);
            } else if (p >= 0 && level(s) > 0 && level(static_cast<size_t>(p)) > level(s)) {
                v.up.push_back(&l);
                v.up_gbps += l.rate_gbps;
            } else if (p >= 0 && level(static_cast<size_t>(p)) < level(s)) {
                v.down.push_back(&l);
            } else {
                v.lateral.push_back(&l);
            }
        }
        v.hosts.assign(hosts.begin(), hosts.end());
        return v;
    };

    std::map<int, size_t> per_level;
    for (size_t s : switches)
        ++per_level[level(s)];

    if (json) {
        auto add = [](json_object* o, const char* k, json_object* v) { json_object_object_add(o, k, v); };
        auto link_json = [&](const IbPortLink& l) {
            json_object* o = json_object_new_object();
            add(o, "port", json_object_new_int(l.port));
            add(o, "peer", json_string(peer_label(l)));
            add(o, "peer_guid", json_string(l.peer_guid));
            add(o, "peer_port", json_object_new_int(l.peer_port));
            add(o, "width", l.width.empty() ? nullptr : json_string(l.width));
            add(o, "speed", l.speed.empty() ? nullptr : json_string(l.speed));
            add(o, "rate_gbps", json_gbps(l.rate_gbps));
            return o;
        };
        auto link_array = [&](const std::vector<const IbPortLink*>& ls) {
            json_object* a = json_object_new_array();
            for (const IbPortLink* l : ls)
                json_object_array_add(a, link_json(*l));
            return a;
        };
        JsonPtr root(json_object_new_object());
        json_object* sw = json_object_new_array();
        for (size_t s : switches) {
            const IbNode& n = f.nodes[s];
            const SwitchView v = view(s);
            json_object* o = json_object_new_object();
            add(o, "name", json_string(label(s)));
            add(o, "guid", json_string(n.guid));
            add(o, "description", json_string(n.description));
            add(o, "level", json_object_new_int(level(s)));
            add(o, "ports", json_object_new_int(n.ports));
            json_object* hosts = json_object_new_array();
            for (const std::string& h : v.hosts)
                json_object_array_add(hosts, json_string(h));
            add(o, "hosts", hosts);
            add(o, "uplinks", link_array(v.up));
            add(o, "uplink_gbps", json_gbps(v.up_gbps));
            add(o, "downlinks", link_array(v.down));
            add(o, "lateral", link_array(v.lateral));
            json_object_array_add(sw, o);
        }
        add(root.get(), "switches", sw);
        json_object* hosts = json_object_new_array();
        for (size_t i : cas) {
            const IbNode& n = f.nodes[i];
            json_object* o = json_object_new_object();
            add(o, "name", n.name.empty() ? nullptr : json_string(n.name));
            add(o, "guid", json_string(n.guid));
            add(o, "description", json_string(n.description));
            json_object* ports = json_object_new_array();
            for (const IbPortLink& l : links[i])
                json_object_array_add(ports, link_json(l));
            add(o, "ports", ports);
            json_object_array_add(hosts, o);
        }
        add(root.get(), "hosts", hosts);
        json_object* summary = json_object_new_object();
        add(summary, "switches", json_object_new_int(static_cast<int>(switches.size())));
        json_object* levels = json_object_new_object();
        for (const auto& [lv, count] : per_level)
            add(levels, std::to_string(lv).c_str(), json_object_new_int(static_cast<int>(count)));
        add(summary, "levels", levels);
        add(summary, "hosts", json_object_new_int(static_cast<int>(host_names.size())));
        add(summary, "cas", json_object_new_int(static_cast<int>(cas.size())));
        add(summary, "links", json_object_new_int(static_cast<int>(cables.size())));
        add(summary, "aggregation_nodes", json_object_new_int(static_cast<int>(aggregation)));
        add(root.get(), "summary", summary);
        return std::string(json_object_to_json_string_ext(
                   root.get(), JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)) +
               "\n";
    }

    std::string out;
    for (size_t s : switches) {
        const SwitchView v = view(s);
        out += label(s) + " level=" + std::to_string(level(s)) + " guid=" + f.nodes[s].guid +
               " hosts=" + std::to_string(v.hosts.size()) + " uplinks=" + std::to_string(v.up.size()) + " (" +
               format_gbps(v.up_gbps) + " Gb/s) downlinks=" + std::to_string(v.down.size());
        if (!v.lateral.empty())
            out += " lateral=" + std::to_string(v.lateral.size());
        out += "\n";
    }
    out += std::to_string(switches.size()) + (switches.size() == 1 ? " switch" : " switches");
    if (!switches.empty()) {
        std::string parts;
        // leaves, spines, cores, level 4..., then the unreachable
        for (const auto& [lv, count] : per_level) {
            if (lv == 0)
                continue;
            const char* name = level_label(lv);
            parts += (parts.empty() ? "" : ", ") + (name ? std::string(name) : "level " + std::to_string(lv)) + " " +
                     std::to_string(count);
        }
        if (per_level.count(0))
            parts += (parts.empty() ? "" : ", ") + std::string("unreachable ") + std::to_string(per_level[0]);
        out += " (" + parts + ")";
    }
    out += ", " + std::to_string(host_names.size()) + (host_names.size() == 1 ? " host" : " hosts");
    if (cas.size() != host_names.size())
        out += " (" + std::to_string(cas.size()) + " CAs)";
    out += ", " + std::to_string(cables.size()) + (cables.size() == 1 ? " link" : " links");
    if (aggregation > 0)
        out += ", " + std::to_string(aggregation) + " SHARP aggregation node" + (aggregation == 1 ? "" : "s");
    out += "\n";
    return out;
}

}  // namespace m2g
