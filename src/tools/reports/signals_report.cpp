// m2g tools: `m2g signals show` (see signals_report.hpp): the feed's
// budgets after events, events and maintenance ahead, health and the
// hottest nodes, as a table or one JSON object.
#include "tools/reports/signals_report.hpp"

#include <json-c/json.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "core/base/hostlist.hpp"
#include "core/base/json.hpp"  // JsonPtr
#include "core/base/keys.hpp"
#include "core/base/text.hpp"
#include "core/model/export.hpp"

namespace m2g {

namespace {


// How long until an event starts or ends: "90 s", "12 min", "2 h 0 min", "3 d 4 h".
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
            if (e.limit_kw >= 0)
                add(j, "limit_kw", dbl(e.limit_kw));
            else if (e.curtail_kw > 0)
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
            add(j, "nodes", json_object_new_string(node_hostlist(m, w.nodes).c_str()));
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
                          r.budget > 0 ? fixed(r.budget, 1).c_str() : "-",
                          r.budget > 0 ? fixed(r.effective, 1).c_str() : "-",
                          r.draw >= 0 ? fixed(r.draw, 1).c_str() : "-",
                          r.draw >= 0 && r.budget > 0 ? fixed(r.effective - r.draw, 1).c_str() : "-");
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
        const std::string cut = event_cut_text(e);
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
                           plural(w.nodes.size(), "node", "nodes") + " (" + node_hostlist(m, w.nodes) + ")" +
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
            out << (i ? "," : "") << " " << m.nodes[hot[i]].name << " " << general(t.gpu_temp_c) << " C "
                << to_string(t.state);
        }
    }
    out << "\n";
    return out.str();
}

// ---- m2g signals validate ------------------------------------------------------

std::string summarize_feed(const Signals& s, int64_t now)
{
    const int64_t age = now - s.generated_at;
    std::string out = "generated " + format_utc(s.generated_at) + " (" +
                      (age >= 0 ? std::to_string(age) + " s ago" : std::to_string(-age) + " s in the future") + ")";
    out += ", " + plural(s.events.size(), "event", "events") + " (" +
           std::to_string(active_events(&s, now).size()) + " active)";
    size_t mw_active = 0;
    for (const auto& w : s.maintenance)
        mw_active += w.start <= now && now < w.end;
    out += ", " + plural(s.maintenance.size(), "maintenance window", "maintenance windows") + " (" +
           std::to_string(mw_active) + " active)";
    size_t thermal = 0;
    for (const auto& t : s.thermal)
        thermal += t.known;
    out += ", " + plural(thermal, "thermal reading", "thermal readings");
    std::vector<std::string> health;
    const HealthCounts c = health_counts(s);
    if (c.degraded > 0)
        health.push_back(std::to_string(c.degraded) + " degraded");
    if (c.down > 0)
        health.push_back(std::to_string(c.down) + " down");
    if (c.nvlink_fault > 0)
        health.push_back(plural(static_cast<size_t>(c.nvlink_fault), "NVLink fault", "NVLink faults"));
    if (c.links_down > 0)
        health.push_back(plural(static_cast<size_t>(c.links_down), "link down", "links down"));
    std::string h;
    for (const auto& x : health)
        h += (h.empty() ? "" : ", ") + x;
    out += ", health: " + (h.empty() ? std::string("nothing reported") : h);
    return out;
}

}  // namespace m2g
