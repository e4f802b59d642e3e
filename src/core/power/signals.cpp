// m2g core: the live signals feed (doc/signals.md). Parsing is strict and
// says where a feed is wrong; SignalFeed keeps the scheduler working on the
// last good snapshot (or the configured fail-safe) whatever the file does.
#include "core/power/signals.hpp"

#include "core/base/time.hpp"

#include <fcntl.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <map>
#include <sstream>

#include "core/model/config.hpp"  // read_text_file
#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"
#include "core/base/keys.hpp"

namespace m2g {

namespace {

// generated_at may be this far ahead of our clock (clock skew) before the
// feed is rejected.
constexpr int64_t kMaxFutureSkew = 300;
// A feed larger than this is refused without reading it.
constexpr int64_t kMaxFeedBytes = int64_t{64} << 20;

struct JsonDeleter {
    void operator()(json_object* o) const { json_object_put(o); }
};
using JsonPtr = std::unique_ptr<json_object, JsonDeleter>;

std::string num(double v)
{
    std::ostringstream ss;
    ss << v;
    return ss.str();
}

std::string describe_duration(int64_t s)
{
    if (s < 0)
        s = -s;
    if (s < 120)
        return std::to_string(s) + " s";
    if (s < 7200)
        return std::to_string(s / 60) + " min";
    if (s < 172800)
        return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
    return std::to_string(s / 86400) + " d " + std::to_string(s % 86400 / 3600) + " h";
}

// ---- the feed parser -----------------------------------------------------------

std::string got(json_object* v)
{
    switch (json_object_get_type(v)) {
    case json_type_null:
        return "null";
    case json_type_boolean:
        return json_object_get_boolean(v) ? "true" : "false";
    case json_type_int:
    case json_type_double:
        return std::string("the number ") + json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    case json_type_string: {
        std::string s(json_object_get_string(v), static_cast<size_t>(json_object_get_string_len(v)));
        if (s.size() > 60)
            s = s.substr(0, 57) + "...";
        return "the string \"" + s + "\"";
    }
    case json_type_object:
        return "an object";
    case json_type_array:
        return "an array";
    }
    return "something else";
}

std::string join(std::initializer_list<const char*> keys)
{
    std::string out;
    for (const char* k : keys)
        out += (out.empty() ? "" : ", ") + std::string(k);
    return out;
}

bool vendor_key(const char* key)
{
    return std::strncmp(key, kw::kSigVendorPrefix, std::strlen(kw::kSigVendorPrefix)) == 0;
}

std::string jstr(json_object* v)
{
    return std::string(json_object_get_string(v), static_cast<size_t>(json_object_get_string_len(v)));
}

class FeedParser {
  public:
    FeedParser(const std::string& file, const Model& m, int64_t now) : file_(file), m_(m), now_(now) {}

    Signals parse(const std::string& text);

  private:
    [[noreturn]] void fail(const std::string& path, const std::string& msg) const
    {
        throw ParseError(file_ + ": " + (path.empty() ? "" : path + ": ") + msg);
    }
    [[noreturn]] void expected(const std::string& path, const std::string& what, json_object* v) const
    {
        fail(path, "expected " + what + ", got " + got(v));
    }
    static std::string at(const std::string& path, const std::string& key)
    {
        return path.empty() ? key : path + "." + key;
    }
    static std::string index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

    void check_keys(json_object* o, const std::string& path, std::initializer_list<const char*> keys) const;
    json_object* get(json_object* o, const char* key) const
    {
        json_object* v = nullptr;
        return json_object_object_get_ex(o, key, &v) ? v : nullptr;
    }
    json_object* object(json_object* v, const std::string& path, const char* what) const
    {
        if (!json_object_is_type(v, json_type_object))
            expected(path, what, v);
        return v;
    }
    double number(json_object* v, const std::string& path, double min, bool exclusive, const char* unit) const;
    std::string string_value(json_object* v, const std::string& path, bool non_empty) const;
    int64_t time_value(json_object* v, const std::string& path) const;
    std::vector<std::string> hostlist(json_object* v, const std::string& path, const char* of) const;
    int node(const std::string& name, const std::string& path) const;
    int domain(const std::string& name, const std::string& path) const;
    int row(const std::string& name, const std::string& path) const;
    PowerReading reading(json_object* v, const std::string& path) const;
    void power(json_object* v, Signals& s) const;
    void thermal(json_object* v, Signals& s) const;
    void events(json_object* v, Signals& s) const;
    void maintenance(json_object* v, Signals& s) const;
    void health(json_object* v, Signals& s) const;

    const std::string& file_;
    const Model& m_;
    int64_t now_;
};

void FeedParser::check_keys(json_object* o, const std::string& path, std::initializer_list<const char*> keys) const
{
    json_object_object_foreach(o, key, val)
    {
        if (vendor_key(key))
            continue;
        bool known = false;
        for (const char* k : keys)
            known = known || std::strcmp(key, k) == 0;
        if (!known)
            fail(at(path, key), "unknown key; accepted " + (path.empty() ? std::string("at the top level") : "in " + path) +
                                    ": " + join(keys) + " (keys starting with \"x-\" are ignored)");
        // json-c gives JSON null as a null pointer, which get() cannot tell
        // from an absent key: refuse it here, where the key is known.
        if (!val)
            fail(at(path, key), "got null; leave optional keys out instead of setting them to null");
    }
}

double FeedParser::number(json_object* v, const std::string& path, double min, bool exclusive, const char* unit) const
{
    const std::string what = std::string("a number ") + (exclusive ? "> " : ">= ") + num(min) + unit;
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        expected(path, what, v);
    const double d = json_object_get_double(v);
    if (!std::isfinite(d) || d < min || (exclusive && d == min))
        expected(path, what, v);
    return d;
}

std::string FeedParser::string_value(json_object* v, const std::string& path, bool non_empty) const
{
    if (!json_object_is_type(v, json_type_string))
        expected(path, non_empty ? "a non-empty string" : "a string", v);
    std::string s = jstr(v);
    if (non_empty && s.empty())
        fail(path, "must not be empty");
    return s;
}

int64_t FeedParser::time_value(json_object* v, const std::string& path) const
{
    if (json_object_is_type(v, json_type_int)) {
        errno = 0;
        const int64_t t = json_object_get_int64(v);
        if (t < 0 || t > kMaxTime || errno == ERANGE)
            fail(path, got(v) + " is out of range for epoch seconds (0 to " + std::to_string(kMaxTime) + ")");
        return t;
    }
    if (!json_object_is_type(v, json_type_string))
        expected(path, "a time: an RFC 3339 string (\"2026-11-29T21:00:00Z\") or epoch seconds as an integer", v);
    const std::string s = jstr(v);
    if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos)
        fail(path, "\"" + s + "\": epoch seconds must be a JSON integer, not a string");
    int64_t t = 0;
    const std::string why = parse_rfc3339(s, &t);
    if (!why.empty())
        fail(path, "\"" + s + "\" is not a valid time (" + why + "); " + kTimeAccepted);
    return t;
}

std::vector<std::string> FeedParser::hostlist(json_object* v, const std::string& path, const char* of) const
{
    if (!json_object_is_type(v, json_type_string))
        expected(path, std::string("a string holding a hostlist of ") + of + ", e.g. \"r01n[01-04]\"", v);
    const std::string s = jstr(v);
    try {
        return hostlist_expand(s);
    } catch (const ParseError& e) {
        fail(path, "bad hostlist \"" + s + "\": " + e.what());
    }
}

int FeedParser::node(const std::string& name, const std::string& path) const
{
    const int i = m_.find_node(name);
    if (i == kNone)
        fail(path, "no node " + name + " in m2g.conf");
    return i;
}

int FeedParser::domain(const std::string& name, const std::string& path) const
{
    const int i = m_.find_domain(name);
    if (i == kNone)
        fail(path, "no NVLink domain " + name + " in m2g.conf");
    return i;
}

int FeedParser::row(const std::string& name, const std::string& path) const
{
    std::string rows;
    int found = kNone;
    for (size_t i = 0; i < m_.fault_domains.size(); ++i) {
        const FaultDomain& f = m_.fault_domains[i];
        if (f.type == "row")
            rows += (rows.empty() ? "" : ", ") + f.name;
        if (f.name == name)
            found = static_cast<int>(i);
    }
    const std::string known = rows.empty() ? "m2g.conf has none" : "rows in m2g.conf: " + rows;
    if (found == kNone)
        fail(path, "no fault domain " + name + " in m2g.conf; a row is a FaultDomain with Type=row (" + known + ")");
    if (m_.fault_domains[found].type != "row")
        fail(path, "fault domain " + name + " has Type=" + m_.fault_domains[found].type +
                       ", not row; rows are FaultDomains with Type=row (" + known + ")");
    return found;
}

PowerReading FeedParser::reading(json_object* v, const std::string& path) const
{
    object(v, path, "an object with budget_kw and/or draw_kw");
    check_keys(v, path, {kw::kSigBudgetKW, kw::kSigDrawKW});
    PowerReading r;
    if (json_object* b = get(v, kw::kSigBudgetKW))
        r.budget_kw = number(b, at(path, kw::kSigBudgetKW), 0, false, " (kW)");
    if (json_object* d = get(v, kw::kSigDrawKW))
        r.draw_kw = number(d, at(path, kw::kSigDrawKW), 0, false, " (kW)");
    return r;
}

void FeedParser::power(json_object* v, Signals& s) const
{
    const std::string path = kw::kSigPower;
    object(v, path, "an object with site, rows and/or racks");
    check_keys(v, path, {kw::kSigSite, kw::kSigRows, kw::kSigRacks});
    if (json_object* site = get(v, kw::kSigSite))
        s.site = reading(site, at(path, kw::kSigSite));
    if (json_object* rows = get(v, kw::kSigRows)) {
        const std::string p = at(path, kw::kSigRows);
        object(rows, p, "an object mapping row names (FaultDomain Type=row) to {budget_kw, draw_kw}");
        json_object_object_foreach(rows, key, val)
        {
            if (vendor_key(key))
                continue;
            const std::string kp = at(p, key);
            s.rows[row(key, kp)] = reading(val, kp);
        }
    }
    if (json_object* racks = get(v, kw::kSigRacks)) {
        const std::string p = at(path, kw::kSigRacks);
        object(racks, p, "an object mapping NVLink domain names to {budget_kw, draw_kw}");
        json_object_object_foreach(racks, key, val)
        {
            if (vendor_key(key))
                continue;
            const std::string kp = at(p, key);
            s.racks[domain(key, kp)] = reading(val, kp);
        }
    }
}

void FeedParser::thermal(json_object* v, Signals& s) const
{
    const std::string path = kw::kSigThermal;
    object(v, path, "an object mapping node names to {gpu_temp_c, state}");
    json_object_object_foreach(v, key, val)
    {
        if (vendor_key(key))
            continue;
        const std::string p = at(path, key);
        const int n = node(key, p);
        object(val, p, "an object with gpu_temp_c and/or state");
        check_keys(val, p, {kw::kSigGpuTempC, kw::kSigState});
        NodeThermal t;
        t.known = true;
        json_object* temp = get(val, kw::kSigGpuTempC);
        json_object* state = get(val, kw::kSigState);
        if (!temp && !state)
            fail(p, "empty; give gpu_temp_c (the hottest GPU, degrees C), state (ok, warm, hot, critical) or both");
        if (temp) {
            const std::string tp = at(p, kw::kSigGpuTempC);
            if (!json_object_is_type(temp, json_type_int) && !json_object_is_type(temp, json_type_double))
                expected(tp, "a number (degrees C)", temp);
            t.gpu_temp_c = json_object_get_double(temp);
            if (!std::isfinite(t.gpu_temp_c))
                expected(tp, "a number (degrees C)", temp);
        }
        if (state) {
            const std::string sp = at(p, kw::kSigState);
            const std::string st = string_value(state, sp, false);
            if (st == "ok")
                t.state = ThermalState::Ok;
            else if (st == "warm")
                t.state = ThermalState::Warm;
            else if (st == "hot")
                t.state = ThermalState::Hot;
            else if (st == "critical")
                t.state = ThermalState::Critical;
            else
                fail(sp, "\"" + st + "\" is not a thermal state; accepted: ok, warm, hot, critical");
        }
        s.thermal[n] = t;
        if (t.state == ThermalState::Critical) {
            s.health.node_degraded.resize(m_.nodes.size());
            s.health.node_degraded[n] = 1;
        }
    }
}

void FeedParser::events(json_object* v, Signals& s) const
{
    const std::string path = kw::kSigEvents;
    if (!json_object_is_type(v, json_type_array))
        expected(path, "an array of events", v);
    std::map<std::string, size_t> ids;
    const size_t n = json_object_array_length(v);
    for (size_t i = 0; i < n; ++i) {
        const std::string p = index(path, i);
        json_object* e = json_object_array_get_idx(v, i);
        object(e, p, "an event object with id, start, end, curtail_pct or curtail_kw, scope");
        check_keys(e, p, {kw::kSigId, kw::kSigStart, kw::kSigEnd, kw::kSigCurtailPct, kw::kSigCurtailKW, kw::kSigScope});
        CurtailmentEvent ev;
        for (const char* req : {kw::kSigId, kw::kSigStart, kw::kSigEnd})
            if (!get(e, req))
                fail(at(p, req), "missing; every event needs id, start and end");
        ev.id = string_value(get(e, kw::kSigId), at(p, kw::kSigId), true);
        if (auto [it, fresh] = ids.emplace(ev.id, i); !fresh)
            fail(at(p, kw::kSigId), "duplicate event id \"" + ev.id + "\" (also events[" +
                                         std::to_string(it->second) + "]); ids must be unique");
        ev.start = time_value(get(e, kw::kSigStart), at(p, kw::kSigStart));
        ev.end = time_value(get(e, kw::kSigEnd), at(p, kw::kSigEnd));
        if (ev.end <= ev.start)
            fail(at(p, kw::kSigEnd), format_utc(ev.end) + " is not after start " + format_utc(ev.start));
        json_object* pct = get(e, kw::kSigCurtailPct);
        json_object* kwv = get(e, kw::kSigCurtailKW);
        if (pct && kwv)
            fail(p, "both curtail_pct and curtail_kw; give exactly one");
        if (!pct && !kwv)
            fail(p, "no curtailment; give curtail_pct (0 < pct <= 100) or curtail_kw (> 0)");
        if (pct) {
            const std::string pp = at(p, kw::kSigCurtailPct);
            ev.curtail_pct = number(pct, pp, 0, true, " (percent of the scope's budget)");
            if (ev.curtail_pct > 100)
                fail(pp, num(ev.curtail_pct) + " is out of range; accepted: 0 < curtail_pct <= 100");
        } else {
            ev.curtail_kw = number(kwv, at(p, kw::kSigCurtailKW), 0, true, " (kW)");
        }
        ev.scope = EventScope::Site;
        ev.scope_name = kw::kSigScopeSite;
        if (json_object* sc = get(e, kw::kSigScope)) {
            const std::string sp = at(p, kw::kSigScope);
            const std::string text = string_value(sc, sp, false);
            const std::string row_prefix = kw::kSigScopeRow, rack_prefix = kw::kSigScopeRack;
            if (text == kw::kSigScopeSite) {
            } else if (text.compare(0, row_prefix.size(), row_prefix) == 0 && text.size() > row_prefix.size()) {
                ev.scope = EventScope::Row;
                ev.scope_name = text.substr(row_prefix.size());
                ev.scope_index = row(ev.scope_name, sp);
            } else if (text.compare(0, rack_prefix.size(), rack_prefix) == 0 && text.size() > rack_prefix.size()) {
                ev.scope = EventScope::Rack;
                ev.scope_name = text.substr(rack_prefix.size());
                ev.scope_index = domain(ev.scope_name, sp);
            } else {
                fail(sp, "\"" + text +
                             "\" is not a scope; accepted: \"site\", \"row:NAME\" (a FaultDomain with Type=row), "
                             "\"rack:NAME\" (an NVLink domain)");
            }
        }
        s.events.push_back(std::move(ev));
    }
}

void FeedParser::maintenance(json_object* v, Signals& s) const
{
    const std::string path = kw::kSigMaintenance;
    if (!json_object_is_type(v, json_type_array))
        expected(path, "an array of maintenance windows", v);
    std::map<std::string, size_t> ids;
    const size_t n = json_object_array_length(v);
    for (size_t i = 0; i < n; ++i) {
        const std::string p = index(path, i);
        json_object* w = json_object_array_get_idx(v, i);
        object(w, p, "a window object with id, start, end, nodes and/or racks, reason");
        check_keys(w, p, {kw::kSigId, kw::kSigStart, kw::kSigEnd, kw::kSigNodes, kw::kSigRacks, kw::kSigReason});
        MaintenanceWindow mw;
        for (const char* req : {kw::kSigId, kw::kSigStart, kw::kSigEnd})
            if (!get(w, req))
                fail(at(p, req), "missing; every maintenance window needs id, start and end");
        mw.id = string_value(get(w, kw::kSigId), at(p, kw::kSigId), true);
        if (auto [it, fresh] = ids.emplace(mw.id, i); !fresh)
            fail(at(p, kw::kSigId), "duplicate maintenance id \"" + mw.id + "\" (also maintenance[" +
                                         std::to_string(it->second) + "]); ids must be unique");
        mw.start = time_value(get(w, kw::kSigStart), at(p, kw::kSigStart));
        mw.end = time_value(get(w, kw::kSigEnd), at(p, kw::kSigEnd));
        if (mw.end <= mw.start)
            fail(at(p, kw::kSigEnd), format_utc(mw.end) + " is not after start " + format_utc(mw.start));
        json_object* nodes = get(w, kw::kSigNodes);
        json_object* racks = get(w, kw::kSigRacks);
        if (!nodes && !racks)
            fail(p, "names no capacity; give nodes (a hostlist), racks (a hostlist of NVLink domains) or both");
        std::vector<uint8_t> in(m_.nodes.size(), 0);
        if (nodes) {
            const std::string np = at(p, kw::kSigNodes);
            for (const auto& name : hostlist(nodes, np, "nodes"))
                in[node(name, np)] = 1;
        }
        if (racks) {
            const std::string rp = at(p, kw::kSigRacks);
            for (const auto& name : hostlist(racks, rp, "NVLink domains"))
                for (int nd : m_.domains[domain(name, rp)].nodes)
                    in[nd] = 1;
        }
        for (size_t k = 0; k < in.size(); ++k)
            if (in[k])
                mw.nodes.push_back(static_cast<int>(k));
        if (mw.nodes.empty())
            fail(p, "names no nodes (the hostlists are empty)");
        if (json_object* r = get(w, kw::kSigReason))
            mw.reason = string_value(r, at(p, kw::kSigReason), false);
        s.maintenance.push_back(std::move(mw));
    }
}

void FeedParser::health(json_object* v, Signals& s) const
{
    const std::string path = kw::kSigHealth;
    object(v, path, "an object with degraded, down, nvlink_fault and/or link_down hostlists");
    check_keys(v, path, {kw::kSigDegraded, kw::kSigDown, kw::kSigNvlinkFault, kw::kSigLinkDown});
    if (json_object* d = get(v, kw::kSigDegraded)) {
        const std::string p = at(path, kw::kSigDegraded);
        for (const auto& name : hostlist(d, p, "nodes")) {
            s.health.node_degraded.resize(m_.nodes.size());
            s.health.node_degraded[node(name, p)] = 1;
        }
    }
    if (json_object* d = get(v, kw::kSigDown)) {
        const std::string p = at(path, kw::kSigDown);
        for (const auto& name : hostlist(d, p, "nodes")) {
            s.node_down.resize(m_.nodes.size());
            s.node_down[node(name, p)] = 1;
        }
    }
    if (json_object* d = get(v, kw::kSigNvlinkFault)) {
        const std::string p = at(path, kw::kSigNvlinkFault);
        for (const auto& name : hostlist(d, p, "NVLink domains")) {
            s.health.domain_nvlink_fault.resize(m_.domains.size());
            s.health.domain_nvlink_fault[domain(name, p)] = 1;
        }
    }
    if (json_object* d = get(v, kw::kSigLinkDown)) {
        const std::string p = at(path, kw::kSigLinkDown);
        for (const auto& name : hostlist(d, p, "switches")) {
            if (m_.find_switch(name) == kNone)
                fail(p, "no switch " + name + " in m2g.conf");
            if (std::find(s.links_down.begin(), s.links_down.end(), name) == s.links_down.end())
                s.links_down.push_back(name);
        }
    }
}

Signals FeedParser::parse(const std::string& text)
{
    if (text.size() > static_cast<size_t>(INT32_MAX))
        fail("", "too large for a signals feed (" + std::to_string(text.size()) + " bytes)");
    JsonPtr root;
    {
        json_tokener* tok = json_tokener_new();
        if (!tok)
            throw std::bad_alloc();
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        root.reset(json_tokener_parse_ex(tok, text.c_str(), static_cast<int>(text.size())));
        const json_tokener_error err = json_tokener_get_error(tok);
        const size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (!root || err != json_tokener_success) {
            root.reset();
            if (text.find_first_not_of(" \t\r\n") == std::string::npos)
                fail("", "not valid JSON: the file is empty");
            if (err == json_tokener_continue)
                fail("", "not valid JSON: unexpected end of input (a truncated file?)");
            int line = 1, col = 1;
            for (size_t i = 0; i < end && i < text.size(); ++i) {
                if (text[i] == '\n') {
                    ++line;
                    col = 1;
                } else {
                    ++col;
                }
            }
            fail("", "not valid JSON: " + std::string(json_tokener_error_desc(err)) + " at line " +
                         std::to_string(line) + ", column " + std::to_string(col));
        }
    }
    json_object* o = root.get();
    if (!json_object_is_type(o, json_type_object))
        fail("", std::string("expected a JSON object (an ") + kw::kSigSchemaV1 + " feed), got " + got(o));
    json_object* schema = nullptr;
    if (!json_object_object_get_ex(o, kw::kSigSchema, &schema))
        fail(kw::kSigSchema, std::string("missing; the first key of a feed is \"schema\": \"") + kw::kSigSchemaV1 + "\"");
    if (!json_object_is_type(schema, json_type_string))
        expected(kw::kSigSchema, std::string("the string \"") + kw::kSigSchemaV1 + "\"", schema);
    if (jstr(schema) != kw::kSigSchemaV1)
        fail(kw::kSigSchema, "\"" + jstr(schema) + "\" is not supported; accepted: \"" + kw::kSigSchemaV1 + "\"");
    check_keys(o, "",
               {kw::kSigSchema, kw::kSigGeneratedAt, kw::kSigSource, kw::kSigPower, kw::kSigThermal, kw::kSigEvents,
                kw::kSigMaintenance, kw::kSigHealth});
    Signals s;
    json_object* gen = get(o, kw::kSigGeneratedAt);
    if (!gen)
        fail(kw::kSigGeneratedAt, std::string("missing; say when the feed was written; ") + kTimeAccepted);
    s.generated_at = time_value(gen, kw::kSigGeneratedAt);
    if (s.generated_at > now_ + kMaxFutureSkew)
        fail(kw::kSigGeneratedAt, format_utc(s.generated_at) + " is " + std::to_string(s.generated_at - now_) +
                                      " s in the future (our clock: " + format_utc(now_) +
                                      "); more than " + std::to_string(kMaxFutureSkew) +
                                      " s of clock skew: check NTP on the feed's host and here");
    if (json_object* src = get(o, kw::kSigSource))
        s.source = string_value(src, kw::kSigSource, false);
    s.racks.resize(m_.domains.size());
    s.rows.resize(m_.fault_domains.size());
    s.thermal.resize(m_.nodes.size());
    if (json_object* p = get(o, kw::kSigPower))
        power(p, s);
    if (json_object* t = get(o, kw::kSigThermal))
        thermal(t, s);
    if (json_object* e = get(o, kw::kSigEvents))
        events(e, s);
    if (json_object* w = get(o, kw::kSigMaintenance))
        maintenance(w, s);
    if (json_object* h = get(o, kw::kSigHealth))
        health(h, s);
    return s;
}

// ---- views -------------------------------------------------------------------

std::string failsafe_effect(FailSafe f, bool have_snap)
{
    const std::string head = std::string("fail-safe ") + to_string(f) + ": ";
    switch (f) {
    case FailSafe::Last:
        return head + (have_snap ? "using it" : "no snapshot to use, no power policy");
    case FailSafe::Open:
        return head + "no power policy";
    case FailSafe::Defer:
        return head + "deferrable work waits";
    }
    return head;
}

// The one rule behind SignalFeed::view() and read_feed_status(). `file` is
// what the last look at the file found: Fresh (it parsed), Corrupt, Missing.
SignalsView build_view(const std::string& path, int ttl, FailSafe fs, const std::shared_ptr<const Signals>& snap,
                       FeedState file, const std::string& error, int64_t corrupt_since, int64_t now)
{
    SignalsView v;
    if (path.empty()) {
        v.detail = "not configured: no SignalsFile= in m2g.conf; budgets from m2g.conf only";
        return v;
    }
    const int64_t age = snap ? std::max<int64_t>(0, now - snap->generated_at) : -1;
    const bool fresh = snap && age <= ttl;
    // A feed that disappears is a fail-safe case at once (the agent is gone
    // or removed it on purpose); a corrupt one keeps its last good snapshot
    // while that is fresh (a half-written file is a glitch).
    const bool gone = file == FeedState::Missing;
    v.failsafe = !fresh || gone;
    v.state = fresh ? file : (file == FeedState::Fresh ? FeedState::Stale : file);
    v.snap = snap;
    v.age_s = age;
    if (v.failsafe) {
        if (fs == FailSafe::Open) {
            v.snap = nullptr;
            v.age_s = -1;
        } else if (fs == FailSafe::Defer) {
            v.hold = true;
        }
    }
    std::string tail;
    if (fresh && !gone)
        tail = "using the last good snapshot (" + std::to_string(age) + " s old)";
    else if (gone && fresh)
        tail = "last good snapshot is " + std::to_string(age) + " s old; " + failsafe_effect(fs, true);
    else if (snap)
        tail = "last good snapshot is " + std::to_string(age) + " s old (TTL " + std::to_string(ttl) + " s); " +
               failsafe_effect(fs, true);
    else
        tail = "no good snapshot yet; " + failsafe_effect(fs, false);
    switch (v.state) {
    case FeedState::Fresh:
        v.detail = "fresh: generated " + format_utc(snap->generated_at) + " (" + std::to_string(age) + " s ago)" +
                   (snap->source.empty() ? "" : " by " + snap->source);
        break;
    case FeedState::Stale:
        v.detail = "stale: " + tail;
        break;
    case FeedState::Missing:
        v.detail = "missing: " + (error.empty() ? path + ": not read yet" : error) + "; " + tail;
        break;
    case FeedState::Corrupt:
        v.detail = "corrupt since " + format_utc(corrupt_since) + ": " + error + "; " + tail;
        break;
    case FeedState::NotConfigured:
        break;
    }
    return v;
}

}  // namespace

// ---- public functions ----------------------------------------------------------

const char* to_string(ThermalState s)
{
    switch (s) {
    case ThermalState::Ok:
        return "ok";
    case ThermalState::Warm:
        return "warm";
    case ThermalState::Hot:
        return "hot";
    case ThermalState::Critical:
        return "critical";
    }
    return "ok";
}

const char* to_string(FeedState s)
{
    switch (s) {
    case FeedState::NotConfigured:
        return "not_configured";
    case FeedState::Fresh:
        return "fresh";
    case FeedState::Stale:
        return "stale";
    case FeedState::Missing:
        return "missing";
    case FeedState::Corrupt:
        return "corrupt";
    }
    return "missing";
}

Signals parse_signals(const std::string& text, const std::string& file, const Model& m, int64_t now)
{
    return FeedParser(file, m, now).parse(text);
}

Signals parse_signals(const std::string& text, const std::string& file, const Model& m)
{
    return parse_signals(text, file, m, static_cast<int64_t>(std::time(nullptr)));
}

Signals read_signals(const std::string& path, const Model& m)
{
    return parse_signals(read_text_file(path), path, m);
}

double effective_budget_kw(const Model& m, const Signals* s, EventScope scope, int index, int64_t now)
{
    double conf = 0, feed = 0;
    switch (scope) {
    case EventScope::Site:
        conf = m.site_power_budget_kw;
        feed = s ? s->site.budget_kw : 0;
        break;
    case EventScope::Row:
        if (index < 0 || index >= static_cast<int>(m.fault_domains.size()))
            return -1;
        conf = m.fault_domains[index].power_budget_kw;
        feed = s && index < static_cast<int>(s->rows.size()) ? s->rows[index].budget_kw : 0;
        break;
    case EventScope::Rack:
        if (index < 0 || index >= static_cast<int>(m.domains.size()))
            return -1;
        conf = m.domains[index].power_budget_kw;
        feed = s && index < static_cast<int>(s->racks.size()) ? s->racks[index].budget_kw : 0;
        break;
    }
    const double budget = feed > 0 ? feed : conf;
    if (budget <= 0)
        return -1;  // no budget known: no limit
    if (!s)
        return budget;
    double left = budget;
    for (const auto& e : s->events) {
        if (e.scope != scope || !e.active_at(now))
            continue;
        if (scope != EventScope::Site && e.scope_index != index)
            continue;
        left -= e.curtail_kw > 0 ? e.curtail_kw : budget * e.curtail_pct / 100.0;
    }
    return std::max(0.0, left);
}

double lowest_budget_kw(const Model& m, const Signals* s, EventScope scope, int index, int64_t from, int64_t to,
                        const CurtailmentEvent** upcoming)
{
    if (upcoming)
        *upcoming = nullptr;
    double low = effective_budget_kw(m, s, scope, index, from);
    if (low < 0 || !s)
        return low;
    for (const auto& e : s->events) {
        if (e.scope != scope || (scope != EventScope::Site && e.scope_index != index))
            continue;
        if (e.start <= from || (to > 0 && e.start >= to))
            continue;
        const double b = effective_budget_kw(m, s, scope, index, e.start);
        if (b >= 0 && b < low) {
            low = b;
            if (upcoming)
                *upcoming = &e;
        }
    }
    return low;
}

std::vector<const CurtailmentEvent*> active_events(const Signals* s, int64_t now)
{
    std::vector<const CurtailmentEvent*> out;
    if (s)
        for (const auto& e : s->events)
            if (e.active_at(now))
                out.push_back(&e);
    return out;
}

// ---- SignalFeed ---------------------------------------------------------------

namespace {

// A feed written in place (not renamed over) can be read between two of its
// writer's write()s: a prefix, which does not parse, or, without O_TRUNC,
// the new beginning over the old end, which may parse and mix two
// documents. So a file changed in place since the last read (same inode) is
// read only once it has been left alone for kSettleNs, and any version that
// changes while it is read is dropped; both wait for the next poll. A file
// renamed over the feed (a new inode, as doc/signals.md asks) is read at once.
constexpr int64_t kSettleNs = 1'000'000'000;

struct ReadAttempt {
    enum Outcome { Read, Missing, Unsettled } outcome = Missing;
    int64_t mtime_ns = -1, size = -1, ino = -1;  // of the version read
    std::string text;
    std::string error;  // Missing: why; Read: set when the file is too large (then corrupt)
};

int64_t mtime_ns_of(const struct stat& st)
{
    return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

bool same_version(const struct stat& a, const struct stat& b)
{
    return mtime_ns_of(a) == mtime_ns_of(b) && a.st_size == b.st_size && a.st_ino == b.st_ino;
}

// `last_ino`: the inode of the version read last (-1: none).
ReadAttempt read_settled(const std::string& path, int64_t last_ino)
{
    ReadAttempt r;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        r.error = std::string("cannot open: ") + std::strerror(errno);
        return r;
    }
    struct stat before {};
    if (::fstat(fd, &before) != 0) {
        r.error = std::string("cannot read: ") + std::strerror(errno);
        ::close(fd);
        return r;
    }
    r.mtime_ns = mtime_ns_of(before);
    r.size = before.st_size;
    r.ino = static_cast<int64_t>(before.st_ino);
    struct timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    const int64_t age = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec - r.mtime_ns;
    if (r.ino == last_ino && age >= 0 && age < kSettleNs) {
        ::close(fd);  // rewritten in place a moment ago: its writer may not be done
        r.outcome = ReadAttempt::Unsettled;
        return r;
    }
    r.outcome = ReadAttempt::Read;
    if (before.st_size > kMaxFeedBytes) {
        r.error = path + ": the file is " + std::to_string(before.st_size) + " bytes; a feed may have at most " +
                  std::to_string(kMaxFeedBytes) + " bytes";
        ::close(fd);
        return r;
    }
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r.outcome = ReadAttempt::Missing;
            r.error = std::string("cannot read: ") + std::strerror(errno);
            ::close(fd);
            return r;
        }
        if (n == 0)
            break;
        r.text.append(buf, static_cast<size_t>(n));
        if (static_cast<int64_t>(r.text.size()) > kMaxFeedBytes)
            break;  // growing while read: the version check below drops it
    }
    struct stat after {};
    if (::fstat(fd, &after) != 0 || !same_version(before, after)) {
        r.outcome = ReadAttempt::Unsettled;
        r.text.clear();
    }
    ::close(fd);
    return r;
}

}  // namespace

struct SignalFeed::Published {
    std::shared_ptr<const Signals> snap;  // the last good snapshot, if any
    FeedState file = FeedState::Missing;  // the last look: Fresh (parsed), Corrupt or Missing
    std::string error;                    // Missing/Corrupt: why
    int64_t corrupt_since = 0;
};

SignalFeed::SignalFeed(std::string path, int ttl_sec, FailSafe failsafe, const Model& model, Logger log)
    : path_(std::move(path)),
      ttl_(ttl_sec),
      failsafe_(failsafe),
      model_(model),
      log_(std::move(log)),
      pub_(std::make_shared<const Published>())
{
}

SignalFeed::~SignalFeed()
{
    stop();
}

void SignalFeed::set_status_file(std::string path)
{
    std::lock_guard<std::mutex> lk(refresh_mu_);
    status_path_ = std::move(path);
    status_written_ = false;
}

SignalsView SignalFeed::make_view(const Published& p, int64_t now) const
{
    return build_view(path_, ttl_, failsafe_, p.snap, p.file, p.error, p.corrupt_since, now);
}

SignalsView SignalFeed::view(int64_t now) const
{
    const std::shared_ptr<const Published> p = std::atomic_load(&pub_);
    try {
        return make_view(*p, now);
    } catch (...) {
        // Out of memory while writing the detail: the decision fields still hold.
        SignalsView v;
        v.state = path_.empty() ? FeedState::NotConfigured : FeedState::Missing;
        if (!path_.empty()) {
            const int64_t age = p->snap ? std::max<int64_t>(0, now - p->snap->generated_at) : -1;
            v.failsafe = !(p->snap && age <= ttl_) || p->file == FeedState::Missing;
            v.snap = v.failsafe && failsafe_ == FailSafe::Open ? nullptr : p->snap;
            v.hold = v.failsafe && failsafe_ == FailSafe::Defer;
            v.age_s = v.snap ? age : -1;
        }
        return v;
    }
}

void SignalFeed::log_line(LogLevel level, const std::string& msg) noexcept
{
    try {
        if (log_)
            log_(level, msg);
    } catch (...) {
    }
}

void SignalFeed::log_transition(const SignalsView& v, bool new_error, int64_t now)
{
    (void)now;
    if (v.state == logged_ && v.failsafe == logged_failsafe_)
        return;
    const FeedState prev = logged_;
    logged_ = v.state;
    logged_failsafe_ = v.failsafe;
    if (new_error)
        return;  // the Error line of this file version said it
    if (v.state == FeedState::Fresh)
        log_line(LogLevel::Info,
                 std::string(prev == FeedState::NotConfigured ? "signals feed: " : "signals feed back: ") + v.detail);
    else
        log_line(LogLevel::Warning, "signals feed " + v.detail);
}

void SignalFeed::write_status(const SignalsView& v, const Published& p, int64_t now)
{
    JsonPtr o(json_object_new_object());
    if (!o)
        throw std::bad_alloc();
    auto put = [&](const char* key, json_object* val) { json_object_object_add(o.get(), key, val); };
    put(kw::kSigSchema, json_object_new_string(kw::kSigStatusSchemaV1));
    put(kw::kSigStatusFile, json_object_new_string(path_.c_str()));
    put(kw::kSigStatusState, json_object_new_string(to_string(v.state)));
    put(kw::kSigStatusDetail, json_object_new_string(v.detail.c_str()));
    put(kw::kSigStatusCheckedAt, json_object_new_string(format_utc(now).c_str()));
    put(kw::kSigStatusFailSafe, json_object_new_string(to_string(failsafe_)));
    put(kw::kSigStatusTtl, json_object_new_int(ttl_));
    put(kw::kSigStatusError, p.error.empty() ? nullptr : json_object_new_string(p.error.c_str()));
    put(kw::kSigStatusCorruptSince,
        p.file == FeedState::Corrupt ? json_object_new_string(format_utc(p.corrupt_since).c_str()) : nullptr);
    put(kw::kSigStatusSnapshot, p.snap ? json_tokener_parse(good_text_.c_str()) : nullptr);
    const std::string text =
        std::string(json_object_to_json_string_ext(o.get(), JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)) +
        "\n";
    const std::string tmp = status_path_ + ".tmp";
    std::string err;
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) {
        err = tmp + ": " + std::strerror(errno);
    } else {
        const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
        const int werr = errno;
        if (std::fclose(f) != 0 || !wrote)
            err = tmp + ": cannot write: " + std::strerror(wrote ? errno : werr);
        else if (std::rename(tmp.c_str(), status_path_.c_str()) != 0)
            err = status_path_ + ": cannot rename " + tmp + " over it: " + std::strerror(errno);
        if (!err.empty())
            std::remove(tmp.c_str());
    }
    if (!err.empty()) {
        if (!status_failed_)
            log_line(LogLevel::Warning, "signals status file not written (retried at each poll): " + err);
        status_failed_ = true;
        status_written_ = false;
        return;
    }
    status_failed_ = false;
    status_written_ = true;
    status_state_ = v.state;
    status_failsafe_ = v.failsafe;
    status_generation_ = generation_;
}

bool SignalFeed::refresh(int64_t now)
{
    try {
        std::lock_guard<std::mutex> lk(refresh_mu_);
        if (path_.empty())
            return false;
        const std::shared_ptr<const Published> cur = std::atomic_load(&pub_);
        auto next = std::make_shared<Published>(*cur);
        bool published = false, new_error = false;
        auto missing = [&](const std::string& why) {
            next->file = FeedState::Missing;
            next->error = path_ + ": " + why;
            seen_ = FileId{};
        };
        struct stat st {};
        if (::stat(path_.c_str(), &st) != 0) {
            missing(std::strerror(errno));
        } else if (!S_ISREG(st.st_mode)) {
            missing("not a regular file");
        } else if (FileId{int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec, int64_t{st.st_size},
                          static_cast<int64_t>(st.st_ino)} == seen_) {
            // Unchanged since the last look: only time moves.
        } else {
            ReadAttempt got = read_settled(path_, seen_.ino);
            if (got.outcome == ReadAttempt::Missing) {
                missing(got.error);
            } else if (got.outcome == ReadAttempt::Unsettled) {
                // Still being rewritten: nothing read, nothing changes (seen_
                // stays, so the next poll tries again). A feed that has never
                // read its file says so rather than "missing".
                if (!unsettled_logged_)
                    log_line(LogLevel::Warning,
                             "signals feed " + path_ +
                                 " is being rewritten in place: it changed less than " +
                                 std::to_string(kSettleNs / 1000000000) +
                                 " s ago or while it was read; keeping what is in force until it settles (an agent "
                                 "should write a temporary file and rename(2) it over the feed)");
                unsettled_logged_ = true;
                if (generation_ == 0 && next->file == FeedState::Missing && next->error.empty()) {
                    next->file = FeedState::Corrupt;
                    next->error = path_ + ": still being written in place; not read yet";
                    next->corrupt_since = now;
                }
            } else {
                unsettled_logged_ = false;
                seen_ = FileId{got.mtime_ns, got.size, got.ino};
                std::string parse_error = got.error;
                if (parse_error.empty()) {
                    try {
                        auto snap = std::make_shared<const Signals>(parse_signals(got.text, path_, model_, now));
                        next->snap = std::move(snap);
                        next->file = FeedState::Fresh;
                        next->error.clear();
                        next->corrupt_since = 0;
                        good_text_ = std::move(got.text);
                        ++generation_;
                        published = true;
                    } catch (const std::exception& e) {
                        parse_error = e.what();
                    }
                }
                if (!parse_error.empty()) {
                    if (next->file != FeedState::Corrupt)
                        next->corrupt_since = now;
                    next->file = FeedState::Corrupt;
                    next->error = parse_error;
                    new_error = true;
                }
            }
        }
        std::shared_ptr<const Published> pub = std::move(next);
        std::atomic_store(&pub_, pub);
        const SignalsView v = make_view(*pub, now);
        if (new_error)
            log_line(LogLevel::Error, "signals feed " + v.detail);
        log_transition(v, new_error, now);
        if (!status_path_.empty() && (!status_written_ || new_error || v.state != status_state_ ||
                                      v.failsafe != status_failsafe_ || generation_ != status_generation_))
            write_status(v, *pub, now);
        return published;
    } catch (const std::exception& e) {
        log_line(LogLevel::Error, std::string("signals feed: refresh failed: ") + e.what());
    } catch (...) {
        log_line(LogLevel::Error, "signals feed: refresh failed");
    }
    return false;
}

void SignalFeed::start(int poll_sec)
{
    stop();
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = false;
    }
    const int poll = poll_sec > 0 ? poll_sec : 1;
    try {
        thread_ = std::thread([this, poll] {
            std::unique_lock<std::mutex> lk(mu_);
            while (!stop_) {
                lk.unlock();
                refresh(static_cast<int64_t>(std::time(nullptr)));
                lk.lock();
                cv_.wait_for(lk, std::chrono::seconds(poll), [this] { return stop_; });
            }
        });
    } catch (const std::exception& e) {
        log_line(LogLevel::Error, std::string("signals feed: cannot start the poll thread: ") + e.what());
    }
}

void SignalFeed::stop()
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id())
        thread_.join();
}

// ---- the status file -------------------------------------------------------------

SignalsView read_feed_status(const std::string& status_path, const Model& m, int ttl_sec, int64_t now)
{
    const std::string text = read_text_file(status_path);
    JsonPtr root(json_tokener_parse(text.c_str()));
    auto bad = [&](const std::string& msg) -> ParseError {
        return ParseError(status_path + ": " + msg + " (a status file as written by job_submit/m2g, schema " +
                          kw::kSigStatusSchemaV1 + ")");
    };
    if (!root || !json_object_is_type(root.get(), json_type_object))
        throw bad("not a JSON object");
    auto field = [&](const char* key) {
        json_object* v = nullptr;
        return json_object_object_get_ex(root.get(), key, &v) ? v : nullptr;
    };
    auto str = [&](const char* key, bool required) -> std::string {
        json_object* v = field(key);
        if (!v || json_object_is_type(v, json_type_null)) {
            if (required)
                throw bad(std::string("\"") + key + "\" is missing");
            return "";
        }
        if (!json_object_is_type(v, json_type_string))
            throw bad(std::string("\"") + key + "\" must be a string");
        return jstr(v);
    };
    if (str(kw::kSigSchema, true) != kw::kSigStatusSchemaV1)
        throw bad("\"schema\" is \"" + str(kw::kSigSchema, true) + "\"");
    const std::string file = str(kw::kSigStatusFile, false);
    const std::string state = str(kw::kSigStatusState, true);
    const std::string fs_word = str(kw::kSigStatusFailSafe, true);
    FailSafe fs = FailSafe::Last;
    if (fs_word == "open")
        fs = FailSafe::Open;
    else if (fs_word == "defer")
        fs = FailSafe::Defer;
    else if (fs_word != "last")
        throw bad("\"failsafe\" is \"" + fs_word + "\"; accepted: last, open, defer");
    FeedState fstate;
    if (state == "fresh" || state == "stale")
        fstate = FeedState::Fresh;
    else if (state == "missing")
        fstate = FeedState::Missing;
    else if (state == "corrupt")
        fstate = FeedState::Corrupt;
    else if (state == "not_configured")
        return build_view("", ttl_sec, fs, nullptr, FeedState::NotConfigured, "", 0, now);
    else
        throw bad("\"state\" is \"" + state + "\"; accepted: not_configured, fresh, stale, missing, corrupt");
    const std::string error = str(kw::kSigStatusError, false);
    int64_t since = 0;
    if (const std::string cs = str(kw::kSigStatusCorruptSince, false); !cs.empty())
        since = parse_signal_time(cs, status_path + ": corrupt_since");
    std::shared_ptr<const Signals> snap;
    json_object* sv = field(kw::kSigStatusSnapshot);
    if (sv && !json_object_is_type(sv, json_type_null)) {
        const std::string snap_text = json_object_to_json_string_ext(sv, JSON_C_TO_STRING_PLAIN);
        snap = std::make_shared<const Signals>(parse_signals(snap_text, status_path + ": snapshot", m, now));
    }
    if (fstate == FeedState::Fresh && !snap)
        throw bad("state \"" + state + "\" without a snapshot");
    return build_view(file.empty() ? status_path : file, ttl_sec, fs, snap, fstate, error, since, now);
}

// ---- m2g signals show ----------------------------------------------------------

namespace {

std::string kw_text(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

std::string hostlist_of(const Model& m, const std::vector<int>& nodes)
{
    std::vector<std::string> names;
    names.reserve(nodes.size());
    for (int n : nodes)
        names.push_back(m.nodes[n].name);
    return hostlist_compress(names);
}

std::string scope_text(const CurtailmentEvent& e)
{
    switch (e.scope) {
    case EventScope::Site:
        return kw::kSigScopeSite;
    case EventScope::Row:
        return kw::kSigScopeRow + e.scope_name;
    case EventScope::Rack:
        return kw::kSigScopeRack + e.scope_name;
    }
    return "";
}

struct PowerRow {
    std::string label, name;
    double budget = 0, effective = 0, draw = -1;
};

std::vector<PowerRow> power_rows(const Model& m, const Signals* s, int64_t now)
{
    std::vector<PowerRow> rows;
    auto add = [&](const std::string& label, const std::string& name, double conf, const PowerReading* r,
                   EventScope scope, int index) {
        PowerRow row;
        row.label = label;
        row.name = name;
        row.budget = r && r->budget_kw > 0 ? r->budget_kw : conf;
        row.effective = effective_budget_kw(m, s, scope, index, now);
        row.draw = r ? r->draw_kw : -1;
        if (row.budget > 0 || row.draw >= 0)
            rows.push_back(row);
    };
    add("site", "site", m.site_power_budget_kw, s ? &s->site : nullptr, EventScope::Site, kNone);
    for (size_t i = 0; i < m.fault_domains.size(); ++i)
        if (m.fault_domains[i].type == "row")
            add("row", m.fault_domains[i].name, m.fault_domains[i].power_budget_kw,
                s && i < s->rows.size() ? &s->rows[i] : nullptr, EventScope::Row, static_cast<int>(i));
    for (size_t i = 0; i < m.domains.size(); ++i)
        add("rack", m.domains[i].name, m.domains[i].power_budget_kw, s && i < s->racks.size() ? &s->racks[i] : nullptr,
            EventScope::Rack, static_cast<int>(i));
    return rows;
}

struct HealthCounts {
    int degraded = 0, down = 0, nvlink_fault = 0, links_down = 0;
};

HealthCounts health_counts(const Signals& s)
{
    HealthCounts h;
    h.degraded = static_cast<int>(std::count(s.health.node_degraded.begin(), s.health.node_degraded.end(), 1));
    h.down = static_cast<int>(std::count(s.node_down.begin(), s.node_down.end(), 1));
    h.nvlink_fault =
        static_cast<int>(std::count(s.health.domain_nvlink_fault.begin(), s.health.domain_nvlink_fault.end(), 1));
    h.links_down = static_cast<int>(s.links_down.size());
    return h;
}

// Nodes with a temperature, hottest first.
std::vector<int> hottest(const Signals& s, size_t limit)
{
    std::vector<int> nodes;
    for (size_t i = 0; i < s.thermal.size(); ++i)
        if (s.thermal[i].known)
            nodes.push_back(static_cast<int>(i));
    std::stable_sort(nodes.begin(), nodes.end(), [&](int a, int b) {
        if (s.thermal[a].state != s.thermal[b].state)
            return s.thermal[a].state > s.thermal[b].state;
        return s.thermal[a].gpu_temp_c > s.thermal[b].gpu_temp_c;
    });
    if (nodes.size() > limit)
        nodes.resize(limit);
    return nodes;
}

std::string plural(size_t n, const char* one, const char* many)
{
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// A number as people write it: at most 3 decimals, at least one ("128.2",
// "1200.0"), not the binary expansion ("128.19999999999999").
json_object* json_number(double d)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", d);
    std::string s = buf;
    while (s.size() > 2 && s.back() == '0' && s[s.size() - 2] != '.')
        s.pop_back();
    if (s == "-0.0")
        s = "0.0";
    return json_object_new_double_s(std::strtod(s.c_str(), nullptr), s.c_str());
}

std::string format_json(const Model& m, const SignalsView& v, int64_t now)
{
    JsonPtr o(json_object_new_object());
    auto add = [](json_object* obj, const char* k, json_object* val) { json_object_object_add(obj, k, val); };
    auto dbl = [](double d) { return json_number(d); };
    add(o.get(), "state", json_object_new_string(to_string(v.state)));
    add(o.get(), "failsafe", json_object_new_boolean(v.failsafe));
    add(o.get(), "hold", json_object_new_boolean(v.hold));
    add(o.get(), "age_s", json_object_new_int64(v.age_s));
    add(o.get(), "detail", json_object_new_string(v.detail.c_str()));
    const Signals* s = v.snap.get();
    add(o.get(), "generated_at", s ? json_object_new_string(format_utc(s->generated_at).c_str()) : nullptr);
    add(o.get(), "source", s && !s->source.empty() ? json_object_new_string(s->source.c_str()) : nullptr);
    json_object* power = json_object_new_object();
    json_object* rows = json_object_new_object();
    json_object* racks = json_object_new_object();
    for (const PowerRow& r : power_rows(m, s, now)) {
        json_object* e = json_object_new_object();
        add(e, "budget_kw", r.budget > 0 ? dbl(r.budget) : nullptr);
        add(e, "effective_kw", r.effective >= 0 ? dbl(r.effective) : nullptr);
        add(e, "draw_kw", r.draw >= 0 ? dbl(r.draw) : nullptr);
        add(e, "headroom_kw", r.draw >= 0 && r.budget > 0 ? dbl(r.effective - r.draw) : nullptr);
        if (r.label == "site")
            add(power, "site", e);
        else
            add(r.label == "row" ? rows : racks, r.name.c_str(), e);
    }
    add(power, "rows", rows);
    add(power, "racks", racks);
    add(o.get(), "power", power);
    json_object* events = json_object_new_array();
    json_object* maint = json_object_new_array();
    if (s) {
        for (const auto& e : s->events) {
            if (e.end <= now)
                continue;
            json_object* j = json_object_new_object();
            add(j, "id", json_object_new_string(e.id.c_str()));
            add(j, "active", json_object_new_boolean(e.active_at(now)));
            add(j, "scope", json_object_new_string(scope_text(e).c_str()));
            add(j, "start", json_object_new_string(format_utc(e.start).c_str()));
            add(j, "end", json_object_new_string(format_utc(e.end).c_str()));
            if (e.curtail_kw > 0)
                add(j, "curtail_kw", dbl(e.curtail_kw));
            else
                add(j, "curtail_pct", dbl(e.curtail_pct));
            json_object_array_add(events, j);
        }
        for (const auto& w : s->maintenance) {
            if (w.end <= now)
                continue;
            json_object* j = json_object_new_object();
            add(j, "id", json_object_new_string(w.id.c_str()));
            add(j, "active", json_object_new_boolean(w.start <= now));
            add(j, "start", json_object_new_string(format_utc(w.start).c_str()));
            add(j, "end", json_object_new_string(format_utc(w.end).c_str()));
            add(j, "nodes", json_object_new_string(hostlist_of(m, w.nodes).c_str()));
            add(j, "node_count", json_object_new_int(static_cast<int>(w.nodes.size())));
            add(j, "reason", json_object_new_string(w.reason.c_str()));
            json_object_array_add(maint, j);
        }
    }
    add(o.get(), "events", events);
    add(o.get(), "maintenance", maint);
    if (s) {
        const HealthCounts h = health_counts(*s);
        json_object* hj = json_object_new_object();
        add(hj, "degraded", json_object_new_int(h.degraded));
        add(hj, "down", json_object_new_int(h.down));
        add(hj, "nvlink_fault", json_object_new_int(h.nvlink_fault));
        add(hj, "links_down", json_object_new_int(h.links_down));
        add(o.get(), "health", hj);
        json_object* tj = json_object_new_object();
        int reported = 0;
        for (const auto& t : s->thermal)
            reported += t.known ? 1 : 0;
        add(tj, "reported", json_object_new_int(reported));
        json_object* hot = json_object_new_array();
        for (int n : hottest(*s, 5)) {
            json_object* j = json_object_new_object();
            add(j, "node", json_object_new_string(m.nodes[n].name.c_str()));
            add(j, "gpu_temp_c", dbl(s->thermal[n].gpu_temp_c));
            add(j, "state", json_object_new_string(to_string(s->thermal[n].state)));
            json_object_array_add(hot, j);
        }
        add(tj, "hottest", hot);
        add(o.get(), "thermal", tj);
    } else {
        add(o.get(), "health", nullptr);
        add(o.get(), "thermal", nullptr);
    }
    return std::string(json_object_to_json_string_ext(o.get(), JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) +
           "\n";
}

}  // namespace

std::string format_signals(const Model& m, const SignalsView& v, int64_t now, bool json)
{
    if (json)
        return format_json(m, v, now);
    std::ostringstream out;
    const Signals* s = v.snap.get();
    out << "state:     " << to_string(v.state) << "\n";
    out << "detail:    " << v.detail << "\n";
    if (v.state != FeedState::NotConfigured)
        out << "fail-safe: " << (v.failsafe ? (v.hold ? "in effect, deferrable work waits" : "in effect")
                                            : "not in effect")
            << "\n";
    if (!s)
        out << "power:     budgets from m2g.conf only (no feed data in use)\n";
    const std::vector<PowerRow> rows = power_rows(m, s, now);
    if (!rows.empty()) {
        char line[160];
        std::snprintf(line, sizeof line, "%-16s %10s %10s %10s %10s\n", "POWER (kW)", "BUDGET", "EFFECTIVE", "DRAW",
                      "HEADROOM");
        out << line;
        for (const PowerRow& r : rows) {
            const std::string label = r.label == "site" ? "site" : r.label + " " + r.name;
            std::snprintf(line, sizeof line, "%-16s %10s %10s %10s %10s\n", label.c_str(),
                          r.budget > 0 ? kw_text(r.budget).c_str() : "-",
                          r.budget > 0 ? kw_text(r.effective).c_str() : "-",
                          r.draw >= 0 ? kw_text(r.draw).c_str() : "-",
                          r.draw >= 0 && r.budget > 0 ? kw_text(r.effective - r.draw).c_str() : "-");
            out << line;
        }
    }
    if (!s)
        return out.str();
    std::vector<std::string> ev_lines;
    for (const auto& e : s->events) {
        if (e.end <= now)
            continue;
        const bool active = e.active_at(now);
        const std::string cut = e.curtail_kw > 0 ? "-" + num(e.curtail_kw) + " kW" : "-" + num(e.curtail_pct) + "%";
        ev_lines.push_back(std::string("  ") + (active ? "active    " : "upcoming  ") + e.id + "  " + scope_text(e) +
                           " " + cut + "  " + format_utc(e.start) + " .. " + format_utc(e.end) + " (" +
                           (active ? "ends in " + describe_duration(e.end - now)
                                   : "starts in " + describe_duration(e.start - now)) +
                           ")");
    }
    out << "events:    " << (ev_lines.empty() ? "none active or upcoming" : plural(ev_lines.size(), "active or upcoming", "active or upcoming")) << "\n";
    for (const auto& l : ev_lines)
        out << l << "\n";
    std::vector<std::string> mw_lines;
    for (const auto& w : s->maintenance) {
        if (w.end <= now)
            continue;
        const bool active = w.start <= now;
        mw_lines.push_back(std::string("  ") + (active ? "active    " : "upcoming  ") + w.id + "  " +
                           format_utc(w.start) + " .. " + format_utc(w.end) + "  " +
                           plural(w.nodes.size(), "node", "nodes") + " (" + hostlist_of(m, w.nodes) + ")" +
                           (w.reason.empty() ? "" : "  " + w.reason));
    }
    out << "maintenance: " << (mw_lines.empty() ? "none active or upcoming" : plural(mw_lines.size(), "window", "windows"))
        << "\n";
    for (const auto& l : mw_lines)
        out << l << "\n";
    const HealthCounts h = health_counts(*s);
    out << "health:    " << h.degraded << " degraded, " << h.down << " down, "
        << plural(static_cast<size_t>(h.nvlink_fault), "NVLink domain", "NVLink domains") << " with a fault, "
        << plural(static_cast<size_t>(h.links_down), "switch", "switches") << " with a link down";
    if (!s->links_down.empty()) {
        std::string names;
        for (const auto& n : s->links_down)
            names += (names.empty() ? "" : ",") + n;
        out << " (" << names << ")";
    }
    out << "\n";
    int reported = 0;
    for (const auto& t : s->thermal)
        reported += t.known ? 1 : 0;
    out << "thermal:   " << plural(static_cast<size_t>(reported), "node reported", "nodes reported");
    const std::vector<int> hot = hottest(*s, 5);
    if (!hot.empty()) {
        out << "; hottest:";
        for (size_t i = 0; i < hot.size(); ++i) {
            const NodeThermal& t = s->thermal[hot[i]];
            out << (i ? "," : "") << " " << m.nodes[hot[i]].name << " " << num(t.gpu_temp_c) << " C "
                << to_string(t.state);
        }
    }
    out << "\n";
    return out.str();
}

}  // namespace m2g
