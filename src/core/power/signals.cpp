// m2g core: the live signals feed's data (doc/signals.md): the strict
// parser, which says where a feed is wrong and what is accepted, and the
// budgets the feed and m2g.conf give a scope at a time. SignalFeed, which
// keeps the scheduler working on the last good snapshot whatever the file
// does, is feed.cpp; both are declared in signals.hpp.
#include "core/power/signals.hpp"

#include "core/base/time.hpp"

#include <json-c/json.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <map>
#include <sstream>

#include "core/model/config.hpp"  // read_text_file
#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"
#include "core/base/json.hpp"
#include "core/base/keys.hpp"
#include "core/base/text.hpp"

namespace m2g {

namespace {

// generated_at may be this far ahead of our clock (clock skew) before the
// feed is rejected.
constexpr int64_t kMaxFutureSkew = 300;


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
    // The array `v` at `path` of objects with an id, a start and an end
    // (events, maintenance windows): each item checked against `keys`,
    // id, start and end required, ids unique, end after start; then
    // `item(object, its path, id, start, end)`. `noun` names one item in
    // messages ("event"), `item_desc` what an item must be.
    template <class F>
    void timed_items(json_object* v, const std::string& path, const char* noun, const char* item_desc,
                     std::initializer_list<const char*> keys, F&& item) const;
    void events(json_object* v, Signals& s) const;
    void openadr_events(json_object* v, Signals& s) const;
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
    const std::string what = std::string("a number ") + (exclusive ? "> " : ">= ") + general(min) + unit;
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
    std::string s = json_string_text(v);
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
    const std::string s = json_string_text(v);
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
    const std::string s = json_string_text(v);
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
            const std::optional<ThermalState> ts = enum_from(kThermalStateNames, st);
            if (!ts)
                fail(sp, "\"" + st + "\" is not a thermal state; accepted: ok, warm, hot, critical");
            t.state = *ts;
        }
        s.thermal[n] = t;
        if (t.state == ThermalState::Critical) {
            s.health.node_degraded.resize(m_.nodes.size());
            s.health.node_degraded[n] = 1;
        }
    }
}

template <class F>
void FeedParser::timed_items(json_object* v, const std::string& path, const char* noun, const char* item_desc,
                             std::initializer_list<const char*> keys, F&& item) const
{
    if (!json_object_is_type(v, json_type_array))
        expected(path, std::string("an array of ") + noun + "s", v);
    std::map<std::string, size_t> ids;
    const size_t n = json_object_array_length(v);
    for (size_t i = 0; i < n; ++i) {
        const std::string p = index(path, i);
        json_object* o = json_object_array_get_idx(v, i);
        object(o, p, item_desc);
        check_keys(o, p, keys);
        for (const char* req : {kw::kSigId, kw::kSigStart, kw::kSigEnd})
            if (!get(o, req))
                fail(at(p, req), std::string("missing; every ") + noun + " needs id, start and end");
        const std::string id = string_value(get(o, kw::kSigId), at(p, kw::kSigId), true);
        if (auto [it, fresh] = ids.emplace(id, i); !fresh)
            fail(at(p, kw::kSigId), "duplicate " + std::string(noun).substr(0, std::string(noun).find(' ')) + " id \"" + id + "\" (also " + path + "[" +
                                         std::to_string(it->second) + "]); ids must be unique");
        const int64_t start = time_value(get(o, kw::kSigStart), at(p, kw::kSigStart));
        const int64_t end = time_value(get(o, kw::kSigEnd), at(p, kw::kSigEnd));
        if (end <= start)
            fail(at(p, kw::kSigEnd), format_utc(end) + " is not after start " + format_utc(start));
        item(o, p, id, start, end);
    }
}

void FeedParser::events(json_object* v, Signals& s) const
{
    timed_items(v, kw::kSigEvents, "event",
                "an event object with id, start, end, curtail_pct or curtail_kw or limit_kw, scope",
                {kw::kSigId, kw::kSigStart, kw::kSigEnd, kw::kSigCurtailPct, kw::kSigCurtailKW, kw::kSigLimitKW,
                 kw::kSigScope},
                [&](json_object* e, const std::string& p, const std::string& id, int64_t start, int64_t end) {
        CurtailmentEvent ev;
        ev.id = id;
        ev.start = start;
        ev.end = end;
        json_object* pct = get(e, kw::kSigCurtailPct);
        json_object* kwv = get(e, kw::kSigCurtailKW);
        json_object* lim = get(e, kw::kSigLimitKW);
        if (!!pct + !!kwv + !!lim > 1)
            fail(p, "more than one of curtail_pct, curtail_kw and limit_kw; give exactly one");
        if (!pct && !kwv && !lim)
            fail(p, "no curtailment; give curtail_pct (0 < pct <= 100), curtail_kw (> 0) or limit_kw (>= 0, the most "
                    "the scope may draw)");
        if (lim) {
            ev.limit_kw = number(lim, at(p, kw::kSigLimitKW), 0, false, " (kW, the most the scope may draw)");
        } else if (pct) {
            const std::string pp = at(p, kw::kSigCurtailPct);
            ev.curtail_pct = number(pct, pp, 0, true, " (percent of the scope's budget)");
            if (ev.curtail_pct > 100)
                fail(pp, general(ev.curtail_pct) + " is out of range; accepted: 0 < curtail_pct <= 100");
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
    });
}

// OpenADR 3 event objects as a VTN serves them (GET /events): every
// interval's IMPORT_CAPACITY_LIMIT becomes a site event with limit_kw.
// m2g acts on that payload type only; any other is refused rather than
// dropped, so a feed never carries a request m2g does not follow.
void FeedParser::openadr_events(json_object* v, Signals& s) const
{
    static const std::string kLimit = "IMPORT_CAPACITY_LIMIT";
    const std::string path = kw::kSigOpenADR;
    if (!json_object_is_type(v, json_type_array))
        expected(path, "an array of OpenADR 3 event objects", v);
    std::map<std::string, std::string> ids;
    for (const CurtailmentEvent& e : s.events)
        ids.emplace(e.id, kw::kSigEvents);
    auto period = [&](json_object* o, const std::string& p, int64_t* start, double* dur) {
        json_object* ip = get(o, "intervalPeriod");
        if (!ip)
            return;
        const std::string pp = at(p, "intervalPeriod");
        object(ip, pp, "an intervalPeriod object with start and duration");
        if (json_object* st = get(ip, "start")) {
            const std::string sp = at(pp, "start");
            const std::string text = string_value(st, sp, true);
            if (text.compare(0, 10, "0001-01-01") == 0)
                fail(sp, "\"" + text + "\" (OpenADR's 'now') is not accepted; m2g needs the absolute start the VTN "
                                       "means, as an RFC 3339 time");
            *start = time_value(st, sp);
        }
        if (json_object* d = get(ip, "duration")) {
            const std::string dp = at(pp, "duration");
            const std::string text = string_value(d, dp, true);
            const std::string why = parse_iso_duration(text, dur);
            if (!why.empty())
                fail(dp, "\"" + text + "\": " + why);
        }
    };
    const size_t n = json_object_array_length(v);
    for (size_t i = 0; i < n; ++i) {
        const std::string p = index(path, i);
        json_object* o = json_object_array_get_idx(v, i);
        object(o, p, "an OpenADR 3 event object (programID, payloadDescriptors, intervalPeriod, intervals)");
        std::string eid;
        if (json_object* id = get(o, "id"))
            eid = string_value(id, at(p, "id"), true);
        else if (json_object* name = get(o, "eventName"))
            eid = string_value(name, at(p, "eventName"), true);
        else
            eid = "openadr" + std::to_string(i);
        // The descriptor says what an IMPORT_CAPACITY_LIMIT's number means.
        std::string units;
        if (json_object* pd = get(o, "payloadDescriptors")) {
            const std::string pp = at(p, "payloadDescriptors");
            if (!json_object_is_type(pd, json_type_array))
                expected(pp, "an array of eventPayloadDescriptor objects", pd);
            for (size_t k = 0; k < json_object_array_length(pd); ++k) {
                json_object* d = json_object_array_get_idx(pd, k);
                const std::string dp = index(pp, k);
                object(d, dp, "an eventPayloadDescriptor object");
                json_object* t = get(d, "payloadType");
                if (!t || string_value(t, at(dp, "payloadType"), true) != kLimit)
                    continue;
                if (json_object* u = get(d, "units"))
                    units = string_value(u, at(dp, "units"), true);
            }
        }
        int64_t start = -1;
        double dur = -1;
        period(o, p, &start, &dur);
        json_object* ivs = get(o, "intervals");
        if (!ivs)
            fail(at(p, "intervals"), "missing; an event needs intervals with IMPORT_CAPACITY_LIMIT payloads");
        const std::string ip = at(p, "intervals");
        if (!json_object_is_type(ivs, json_type_array))
            expected(ip, "an array of interval objects", ivs);
        int64_t next = start;  // intervals without a period of their own follow one another
        for (size_t k = 0; k < json_object_array_length(ivs); ++k) {
            json_object* iv = json_object_array_get_idx(ivs, k);
            const std::string kp = index(ip, k);
            object(iv, kp, "an interval object with id and payloads");
            int64_t ist = next;
            double idur = dur;
            period(iv, kp, &ist, &idur);
            if (ist < 0)
                fail(kp, "no start; give the event or the interval an intervalPeriod with start");
            if (idur <= 0)
                fail(kp, "no duration above 0; give the event or the interval an intervalPeriod with duration, e.g. "
                         "\"PT1H\"");
            std::string iid = std::to_string(k);
            if (json_object* id = get(iv, "id")) {
                if (!json_object_is_type(id, json_type_int))
                    expected(at(kp, "id"), "an integer", id);
                iid = std::to_string(json_object_get_int64(id));
            }
            json_object* pl = get(iv, "payloads");
            if (!pl || !json_object_is_type(pl, json_type_array))
                expected(at(kp, "payloads"), "an array of valuesMap objects", pl);
            for (size_t q = 0; q < json_object_array_length(pl); ++q) {
                json_object* vm = json_object_array_get_idx(pl, q);
                const std::string qp = index(at(kp, "payloads"), q);
                object(vm, qp, "a valuesMap object with type and values");
                json_object* t = get(vm, "type");
                const std::string type = t ? string_value(t, at(qp, "type"), true) : "";
                if (type != kLimit)
                    fail(at(qp, "type"), "\"" + type + "\" is not acted on; m2g follows " + kLimit +
                                             " (the most the site may import) only: leave other payload types out "
                                             "of the feed");
                if (units != "KW")
                    fail(at(p, "payloadDescriptors"),
                         units.empty() ? "no eventPayloadDescriptor with payloadType " + kLimit +
                                             " and units; m2g needs units \"KW\" to read the limit"
                                       : "units \"" + units + "\" for " + kLimit + " are not accepted; accepted: KW");
                json_object* vals = get(vm, "values");
                if (!vals || !json_object_is_type(vals, json_type_array) || json_object_array_length(vals) != 1)
                    expected(at(qp, "values"), "an array of one number (kW)", vals);
                CurtailmentEvent ev;
                ev.id = eid + "/" + iid;
                ev.start = ist;
                ev.end = idur >= kForever ? kMaxTime : ist + static_cast<int64_t>(std::llround(idur));
                ev.limit_kw = number(json_object_array_get_idx(vals, 0), index(at(qp, "values"), 0), 0, false,
                                     " (kW, the most the site may import)");
                ev.scope = EventScope::Site;
                ev.scope_name = kw::kSigScopeSite;
                if (auto [it, fresh] = ids.emplace(ev.id, kp); !fresh)
                    fail(kp, "event id \"" + ev.id + "\" is also in " + it->second + "; ids must be unique");
                s.events.push_back(std::move(ev));
            }
            next = idur >= kForever ? kMaxTime : ist + static_cast<int64_t>(std::llround(idur));
        }
    }
}

void FeedParser::maintenance(json_object* v, Signals& s) const
{
    timed_items(v, kw::kSigMaintenance, "maintenance window",
                "a window object with id, start, end, nodes and/or racks, reason",
                {kw::kSigId, kw::kSigStart, kw::kSigEnd, kw::kSigNodes, kw::kSigRacks, kw::kSigReason},
                [&](json_object* w, const std::string& p, const std::string& id, int64_t start, int64_t end) {
        MaintenanceWindow mw;
        mw.id = id;
        mw.start = start;
        mw.end = end;
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
    });
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
    if (json_string_text(schema) != kw::kSigSchemaV1)
        fail(kw::kSigSchema,
             "\"" + json_string_text(schema) + "\" is not supported; accepted: \"" + kw::kSigSchemaV1 + "\"");
    check_keys(o, "",
               {kw::kSigSchema, kw::kSigGeneratedAt, kw::kSigSource, kw::kSigPower, kw::kSigThermal, kw::kSigEvents,
                kw::kSigOpenADR, kw::kSigMaintenance, kw::kSigHealth});
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
    if (json_object* e = get(o, kw::kSigOpenADR))
        openadr_events(e, s);
    if (json_object* w = get(o, kw::kSigMaintenance))
        maintenance(w, s);
    if (json_object* h = get(o, kw::kSigHealth))
        health(h, s);
    return s;
}

}  // namespace

// ---- public functions ----------------------------------------------------------

const char* to_string(ThermalState s) { return name_of(kThermalStateNames, s, "ok"); }

std::string event_cut_text(const CurtailmentEvent& e)
{
    if (e.limit_kw >= 0)
        return "at most " + general(e.limit_kw) + " kW";
    return e.curtail_kw > 0 ? "-" + general(e.curtail_kw) + " kW" : "-" + general(e.curtail_pct) + "%";
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

// ---- budgets -------------------------------------------------------------------

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
    // A limit event is a ceiling of its own; a cut needs a budget to cut.
    double limit = -1;
    if (s)
        for (const auto& e : s->events)
            if (e.limit_kw >= 0 && e.scope == scope && e.active_at(now) &&
                (scope == EventScope::Site || e.scope_index == index))
                limit = limit < 0 ? e.limit_kw : std::min(limit, e.limit_kw);
    if (budget <= 0)
        return limit;  // -1: no budget known, no limit
    if (!s)
        return budget;
    double left = budget;
    for (const auto& e : s->events) {
        if (e.limit_kw >= 0 || e.scope != scope || !e.active_at(now))
            continue;
        if (scope != EventScope::Site && e.scope_index != index)
            continue;
        left -= e.curtail_kw > 0 ? e.curtail_kw : budget * e.curtail_pct / 100.0;
    }
    left = std::max(0.0, left);
    return limit >= 0 ? std::min(left, limit) : left;
}

double lowest_budget_kw(const Model& m, const Signals* s, EventScope scope, int index, int64_t from, int64_t to,
                        const CurtailmentEvent** upcoming)
{
    if (upcoming)
        *upcoming = nullptr;
    double low = effective_budget_kw(m, s, scope, index, from);
    if (!s)
        return low;
    for (const auto& e : s->events) {
        if (e.scope != scope || (scope != EventScope::Site && e.scope_index != index))
            continue;
        if (e.start <= from || (to > 0 && e.start >= to))
            continue;
        const double b = effective_budget_kw(m, s, scope, index, e.start);
        if (b >= 0 && (low < 0 || b < low)) {
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

}  // namespace m2g
