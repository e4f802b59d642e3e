// m2g tools: `m2g status`, `m2g explain`, `m2g job` and the facts behind
// m2g-exporter: Slurm's state (a ClusterView) and the signals, in model
// terms. Slurm-free; see status.hpp for the contract.
#include "tools/reports/status.hpp"

#include <json-c/json.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "core/power/admission.hpp"
#include "core/job/annotation.hpp"
#include "core/base/hostlist.hpp"
#include "core/base/keys.hpp"

namespace m2g {

namespace {

// ---- small text helpers -------------------------------------------------------

std::string fmt(const char* f, double d)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, f, d);
    std::string s = buf;
    if (s == "-0.0" || s == "-0.00" || s == "-0")
        s.erase(0, 1);
    return s;
}

std::string kw1(double d) { return fmt("%.1f", d); }

// 25 → "25", 12.5 → "12.5"
std::string num(double d) { return fmt("%g", d); }

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string join(const std::vector<std::string>& v, const char* sep)
{
    std::string out;
    for (size_t i = 0; i < v.size(); ++i)
        out += (i ? sep : "") + v[i];
    return out;
}

// Class names as AdminComment and the exporter write them: "none" for Unset.
std::string class_label(WorkloadClass c) { return c == WorkloadClass::Unset ? "none" : to_string(c); }

std::string hostlist_of(const Model& m, const std::vector<int>& nodes)
{
    std::vector<std::string> names;
    for (int n : nodes)
        if (n >= 0 && static_cast<size_t>(n) < m.nodes.size())
            names.push_back(m.nodes[n].name);
    try {
        return hostlist_compress(names);
    } catch (...) {
        return join(names, ",");
    }
}

// "1-02:03:04" / "2:00:00" (Slurm's elapsed time)
std::string elapsed(double seconds)
{
    int64_t s = static_cast<int64_t>(std::max(0.0, seconds));
    const int64_t d = s / 86400;
    s %= 86400;
    char buf[64];
    if (d > 0)
        std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(d),
                      static_cast<long long>(s / 3600), static_cast<long long>(s % 3600 / 60),
                      static_cast<long long>(s % 60));
    else
        std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                      static_cast<long long>(s % 3600 / 60), static_cast<long long>(s % 60));
    return buf;
}

// ---- per-node facts -----------------------------------------------------------

struct NodeFacts {
    int gpus = 0;
    int alloc = 0;
    bool healthy = false;
};

bool flag(const std::vector<uint8_t>& v, int i) { return i >= 0 && static_cast<size_t>(i) < v.size() && v[i]; }

std::vector<NodeFacts> node_facts(const Model& m, const ClusterView& c, const Signals* s)
{
    std::vector<NodeFacts> out(m.nodes.size());
    for (size_t n = 0; n < m.nodes.size(); ++n) {
        const NodeView nv = n < c.nodes.size() ? c.nodes[n] : NodeView{};
        NodeFacts& f = out[n];
        f.gpus = nv.gpus_total > 0 ? nv.gpus_total : m.nodes[n].gpus;
        f.alloc = std::clamp(nv.gpus_alloc, 0, f.gpus);
        const int i = static_cast<int>(n);
        const int d = m.nodes[n].domain;
        f.healthy = nv.known && !nv.down && !nv.drained &&
                    !(s && (flag(s->health.node_degraded, i) || flag(s->node_down, i) ||
                            flag(s->health.domain_nvlink_fault, d)));
    }
    return out;
}

}  // namespace

// ---- parse_annotation -------------------------------------------------------------

const char* to_string(PlacementKind k)
{
    switch (k) {
    case PlacementKind::Placed:
        return "placed";
    case PlacementKind::Waiting:
        return "waiting";
    case PlacementKind::None:
        break;
    }
    return "";
}

const char* to_string(JobState s)
{
    switch (s) {
    case JobState::Pending:
        return "pending";
    case JobState::Running:
        return "running";
    case JobState::Completing:
        return "completing";
    case JobState::Done:
        return "done";
    }
    return "pending";
}

ParsedAnnotation parse_annotation(std::string_view admin_comment) noexcept
{
    ParsedAnnotation a;
    try {
        a.found = has_annotation(admin_comment);
        const Annotation read = read_annotation(admin_comment);
        if (read.placement) {
            const PlacementAnnotation& p = *read.placement;
            a.placement = p.state == PlacementState::Waiting ? PlacementKind::Waiting
                          : p.state == PlacementState::None  ? PlacementKind::None
                                                             : PlacementKind::Placed;
            a.policy = p.policy;
            a.domains = p.domains;
            a.leaves = p.leaves;
            a.score = p.score ? format_score(*p.score) : "";
            a.placement_reason = p.reason;
            a.signals = p.signals;
            a.wait = p.wait;
            a.need = p.need;
            a.over = p.over;
            a.prefer_since = p.prefer_since;
        }
        if (read.admission) {
            const AdmissionAnnotation& d = *read.admission;
            a.verdict = d.verdict ? to_string(*d.verdict) : "";
            a.monitor = d.monitor;
            a.released_at = d.released_at;
            a.cls = !d.unknown_class.empty() ? d.unknown_class
                    : d.workload_class       ? class_label(*d.workload_class)
                                             : "";
            a.workload_class = d.workload_class.value_or(WorkloadClass::Unset);
            a.w_gpu = d.w_gpu;
            a.until = d.until;
            a.cause = d.cause;
            a.admission_reason = d.reason;
            a.avoid = d.avoid_nodes > 0 ? std::to_string(d.avoid_nodes) + " nodes (" + d.avoid_for + ")" : "";
            a.user_begin = d.user_begin;
        }
        a.curtail = get_annotation(admin_comment, AnnotationPart::Curtail);
    } catch (...) {
        // Out of memory on a comment: whatever was parsed stays.
    }
    return a;
}


bool admission_holds(const ParsedAnnotation& a, int64_t now)
{
    return (a.verdict == "defer" || a.verdict == "pace") && !a.monitor && a.released_at == 0 && a.until > now;
}

std::string pending_reason_key(const JobView& job, const ParsedAnnotation& a, int64_t now)
{
    if (job.state != JobState::Pending)
        return "";
    if (admission_holds(a, now)) {
        if (a.verdict == "pace")
            return "paced";
        if (starts_with(a.cause, "maintenance:"))
            return "deferred:maintenance";
        if (a.cause == "power:site")
            return "deferred:site-power";
        if (a.cause == "failsafe")
            return "deferred:failsafe";
        return a.cause.empty() || a.cause.find(':') != std::string::npos ? "deferred:other" : "deferred:event";
    }
    if (a.placement == PlacementKind::Waiting)
        return "waiting:" + std::string(to_string(a.wait));
    // Slurm's reason word: "ReqNodeNotAvail, UnavailableNodes:..." → "ReqNodeNotAvail".
    std::string r = job.slurm_reason.substr(0, job.slurm_reason.find_first_of(" ,:(;="));
    return r.empty() ? "None" : r;
}

// ---- compute_status ---------------------------------------------------------------

Status compute_status(const Model& m, const ClusterView& c, const SignalsView& v, int64_t now)
{
    Status st;
    st.at = now;
    st.signals = v;
    const Signals* s = v.snap.get();
    const std::vector<NodeFacts> nf = node_facts(m, c, s);
    for (const NodeFacts& f : nf) {
        st.gpus_total += f.gpus;
        st.gpus_used += f.alloc;
        (f.healthy ? st.gpus_free : st.gpus_degraded) += f.gpus - f.alloc;
    }

    std::vector<uint8_t> maint(m.nodes.size(), 0);
    if (s)
        for (const MaintenanceWindow& w : s->maintenance)
            if (w.start <= now && now < w.end)
                for (int n : w.nodes)
                    if (n >= 0 && static_cast<size_t>(n) < maint.size())
                        maint[n] = 1;

    int free_in_domains = 0, free_in_mixed = 0;
    for (size_t d = 0; d < m.domains.size(); ++d) {
        DomainStatus ds;
        ds.domain = static_cast<int>(d);
        ds.nodes_total = static_cast<int>(m.domains[d].nodes.size());
        bool whole_free = !m.domains[d].nodes.empty();
        for (int n : m.domains[d].nodes) {
            const NodeFacts& f = nf[n];
            ds.gpus_total += f.gpus;
            ds.gpus_used += f.alloc;
            if (f.healthy) {
                ds.gpus_free += f.gpus - f.alloc;
                ds.free_nodes += f.alloc == 0 ? 1 : 0;
            } else {
                ds.gpus_degraded += f.gpus - f.alloc;
            }
            whole_free = whole_free && f.healthy && f.alloc == 0;
            ds.maintenance_now = ds.maintenance_now || maint[n];
            if (s && static_cast<size_t>(n) < s->thermal.size() && s->thermal[n].known) {
                ds.temp_c = std::max(ds.temp_c, s->thermal[n].gpu_temp_c);
                ds.thermal = std::max(ds.thermal, s->thermal[n].state);
            }
        }
        ds.nvlink_fault = s && flag(s->health.domain_nvlink_fault, static_cast<int>(d));
        ds.budget_kw = effective_budget_kw(m, s, EventScope::Rack, static_cast<int>(d), now);
        ds.draw_kw = s && d < s->racks.size() ? s->racks[d].draw_kw : -1;
        if (ds.draw_kw < 0)
            ds.draw_kw = -1;
        ds.headroom_kw = ds.power_known() ? ds.budget_kw - ds.draw_kw : -1;
        st.whole_free_domains += whole_free ? 1 : 0;
        free_in_domains += ds.gpus_free;
        free_in_mixed += ds.gpus_used > 0 ? ds.gpus_free : 0;
        st.domains.push_back(ds);
    }
    st.fragmentation = free_in_domains > 0 ? static_cast<double>(free_in_mixed) / free_in_domains : 0.0;

    // Power: the site, rows, racks with a budget or a draw.
    auto power_row = [&](const char* scope, const std::string& name, double conf, double feed, double draw,
                         EventScope es, int index) {
        PowerStatus p;
        p.scope = scope;
        p.name = name;
        p.budget_kw = feed > 0 ? feed : conf > 0 ? conf : -1;
        p.effective_kw = effective_budget_kw(m, s, es, index, now);
        p.draw_kw = draw >= 0 ? draw : -1;
        p.headroom_kw = p.effective_kw >= 0 && p.draw_kw >= 0 ? p.effective_kw - p.draw_kw : -1;
        if (p.budget_kw >= 0 || p.draw_kw >= 0)
            st.power.push_back(p);
    };
    power_row("site", "site", m.site_power_budget_kw, s ? s->site.budget_kw : 0, s ? s->site.draw_kw : -1,
              EventScope::Site, kNone);
    for (size_t f = 0; f < m.fault_domains.size(); ++f)
        if (m.fault_domains[f].type == "row") {
            const bool fed = s && f < s->rows.size();
            power_row("row", m.fault_domains[f].name, m.fault_domains[f].power_budget_kw,
                      fed ? s->rows[f].budget_kw : 0, fed ? s->rows[f].draw_kw : -1, EventScope::Row,
                      static_cast<int>(f));
        }
    for (size_t d = 0; d < m.domains.size(); ++d) {
        const bool fed = s && d < s->racks.size();
        power_row("rack", m.domains[d].name, m.domains[d].power_budget_kw, fed ? s->racks[d].budget_kw : 0,
                  fed ? s->racks[d].draw_kw : -1, EventScope::Rack, static_cast<int>(d));
    }
    st.active_events = active_events(s, now);

    // Queues by class, and pending jobs by reason.
    std::array<ClassQueue, 8> q;
    std::array<bool, 8> seen{};
    for (const JobView& j : c.jobs) {
        if (j.state == JobState::Done)
            continue;
        const ParsedAnnotation a = parse_annotation(j.admin_comment);
        WorkloadClass cls = j.intent.workload_class;
        if (cls == WorkloadClass::Unset)
            cls = a.workload_class;
        const int ci = std::clamp(static_cast<int>(cls), 0, 7);
        ClassQueue& cq = q[ci];
        cq.cls = static_cast<WorkloadClass>(ci);
        seen[ci] = true;
        const int gpus = std::max(0, j.gpus);
        if (j.state == JobState::Pending) {
            ++cq.pending;
            cq.gpus_pending += gpus;
            if (admission_holds(a, now)) {
                ++cq.deferred;
                ++st.deferred_jobs;
            }
            ++st.pending_by_reason[pending_reason_key(j, a, now)];
        } else {
            ++cq.running;
            cq.gpus_running += gpus;
        }
    }
    for (int i = 0; i < 8; ++i)
        if (seen[i])
            st.queues.push_back(q[i]);
    return st;
}

// ---- format_status ----------------------------------------------------------------

namespace {

struct JsonDeleter {
    void operator()(json_object* o) const { json_object_put(o); }
};
using JsonPtr = std::unique_ptr<json_object, JsonDeleter>;

// A number with at most `decimals` places, trailing zeros trimmed to one.
json_object* jnum(double d, int decimals = 1)
{
    char f[8];
    std::snprintf(f, sizeof f, "%%.%df", decimals);
    std::string s = fmt(f, d);
    while (s.find('.') != std::string::npos && s.size() > 2 && s.back() == '0' && s[s.size() - 2] != '.')
        s.pop_back();
    return json_object_new_double_s(std::strtod(s.c_str(), nullptr), s.c_str());
}

json_object* jkw(double d) { return d >= 0 ? jnum(d) : nullptr; }

json_object* jstr(const std::string& s) { return json_object_new_string_len(s.data(), static_cast<int>(s.size())); }

std::string json_text(json_object* o)
{
    return std::string(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) +
           "\n";
}

void add(json_object* o, const char* k, json_object* v) { json_object_object_add(o, k, v); }

std::string kw_cell(double d) { return d >= 0 ? kw1(d) : "-"; }

std::string event_cut(const CurtailmentEvent& e)
{
    return e.curtail_kw > 0 ? "-" + num(e.curtail_kw) + " kW" : "-" + num(e.curtail_pct) + "%";
}

std::string event_scope(const CurtailmentEvent& e)
{
    switch (e.scope) {
    case EventScope::Site:
        return "site";
    case EventScope::Row:
        return "row " + e.scope_name;
    case EventScope::Rack:
        return "rack " + e.scope_name;
    }
    return "site";
}

std::string domain_flags(const DomainStatus& d)
{
    std::vector<std::string> f;
    if (d.nvlink_fault)
        f.emplace_back("NVLINK-FAULT");
    if (d.maintenance_now)
        f.emplace_back("MAINT");
    if (d.thermal == ThermalState::Hot)
        f.emplace_back("HOT");
    if (d.thermal == ThermalState::Critical)
        f.emplace_back("CRITICAL");
    if (d.power_known() && d.headroom_kw < 0)
        f.emplace_back("OVER-BUDGET");
    return join(f, ",");
}

std::string status_json(const Model& m, const Status& s)
{
    JsonPtr o(json_object_new_object());
    add(o.get(), "at", jstr(format_utc(s.at)));
    add(o.get(), "cluster", jstr(m.cluster_name));
    json_object* g = json_object_new_object();
    add(g, "total", json_object_new_int(s.gpus_total));
    add(g, "used", json_object_new_int(s.gpus_used));
    add(g, "free", json_object_new_int(s.gpus_free));
    add(g, "degraded", json_object_new_int(s.gpus_degraded));
    add(o.get(), "gpus", g);
    add(o.get(), "fragmentation", jnum(s.fragmentation, 3));
    add(o.get(), "whole_free_domains", json_object_new_int(s.whole_free_domains));
    json_object* doms = json_object_new_array();
    for (const DomainStatus& d : s.domains) {
        json_object* e = json_object_new_object();
        const bool named = d.domain >= 0 && static_cast<size_t>(d.domain) < m.domains.size();
        add(e, "name", jstr(named ? m.domains[d.domain].name : std::to_string(d.domain)));
        add(e, "gpus_total", json_object_new_int(d.gpus_total));
        add(e, "gpus_used", json_object_new_int(d.gpus_used));
        add(e, "gpus_free", json_object_new_int(d.gpus_free));
        add(e, "gpus_degraded", json_object_new_int(d.gpus_degraded));
        add(e, "free_nodes", json_object_new_int(d.free_nodes));
        add(e, "nodes", json_object_new_int(d.nodes_total));
        add(e, "nvlink_fault", json_object_new_boolean(d.nvlink_fault));
        add(e, "maintenance_now", json_object_new_boolean(d.maintenance_now));
        add(e, "budget_kw", jkw(d.budget_kw));
        add(e, "draw_kw", jkw(d.draw_kw));
        add(e, "headroom_kw", d.power_known() ? jnum(d.headroom_kw) : nullptr);
        add(e, "temp_c", d.temp_c > 0 ? jnum(d.temp_c) : nullptr);
        add(e, "thermal", json_object_new_string(to_string(d.thermal)));
        json_object_array_add(doms, e);
    }
    add(o.get(), "domains", doms);
    json_object* power = json_object_new_array();
    for (const PowerStatus& p : s.power) {
        json_object* e = json_object_new_object();
        add(e, "scope", jstr(p.scope));
        add(e, "name", jstr(p.name));
        add(e, "budget_kw", jkw(p.budget_kw));
        add(e, "effective_kw", jkw(p.effective_kw));
        add(e, "draw_kw", jkw(p.draw_kw));
        add(e, "headroom_kw", p.effective_kw >= 0 && p.draw_kw >= 0 ? jnum(p.headroom_kw) : nullptr);
        json_object_array_add(power, e);
    }
    add(o.get(), "power", power);
    json_object* events = json_object_new_array();
    for (const CurtailmentEvent* ev : s.active_events) {
        json_object* e = json_object_new_object();
        add(e, "id", jstr(ev->id));
        add(e, "scope", json_object_new_string(ev->scope == EventScope::Site  ? "site"
                                               : ev->scope == EventScope::Row ? "row"
                                                                              : "rack"));
        add(e, "scope_name", jstr(ev->scope == EventScope::Site ? std::string("site") : ev->scope_name));
        add(e, "curtail_pct", ev->curtail_pct > 0 ? jnum(ev->curtail_pct, 3) : nullptr);
        add(e, "curtail_kw", ev->curtail_kw > 0 ? jnum(ev->curtail_kw, 3) : nullptr);
        add(e, "start", jstr(format_utc(ev->start)));
        add(e, "end", jstr(format_utc(ev->end)));
        json_object_array_add(events, e);
    }
    add(o.get(), "active_events", events);
    json_object* queues = json_object_new_array();
    for (const ClassQueue& q : s.queues) {
        json_object* e = json_object_new_object();
        add(e, "class", jstr(class_label(q.cls)));
        add(e, "pending", json_object_new_int(q.pending));
        add(e, "deferred", json_object_new_int(q.deferred));
        add(e, "running", json_object_new_int(q.running));
        add(e, "gpus_pending", json_object_new_int(q.gpus_pending));
        add(e, "gpus_running", json_object_new_int(q.gpus_running));
        json_object_array_add(queues, e);
    }
    add(o.get(), "queues", queues);
    json_object* reasons = json_object_new_object();
    for (const auto& [k, n] : s.pending_by_reason)
        add(reasons, k.c_str(), json_object_new_int(n));
    add(o.get(), "pending_by_reason", reasons);
    add(o.get(), "deferred_jobs", json_object_new_int(s.deferred_jobs));
    json_object* sig = json_object_new_object();
    add(sig, "state", json_object_new_string(to_string(s.signals.state)));
    add(sig, "failsafe", json_object_new_boolean(s.signals.failsafe));
    add(sig, "hold", json_object_new_boolean(s.signals.hold));
    add(sig, "age_s", s.signals.age_s >= 0 ? json_object_new_int64(s.signals.age_s) : nullptr);
    add(sig, "detail", jstr(s.signals.detail));
    add(o.get(), "signals", sig);
    return json_text(o.get());
}

}  // namespace

std::string format_status(const Model& m, const Status& s, bool json)
{
    if (json)
        return status_json(m, s);
    std::ostringstream out;
    char line[256];
    out << "cluster " << (m.cluster_name.empty() ? "-" : m.cluster_name) << " at " << format_utc(s.at) << "\n";
    out << "GPUs: " << s.gpus_total << " total, " << s.gpus_used << " used, " << s.gpus_free << " free, "
        << s.gpus_degraded << " degraded; fragmentation " << fmt("%.2f", s.fragmentation) << "; "
        << s.whole_free_domains << " of " << s.domains.size() << " domains wholly free\n";
    if (!s.domains.empty()) {
        int w = 6;
        for (const DomainStatus& d : s.domains)
            if (d.domain >= 0 && static_cast<size_t>(d.domain) < m.domains.size())
                w = std::max(w, static_cast<int>(m.domains[d.domain].name.size()));
        std::snprintf(line, sizeof line, "%-*s %5s %5s %5s %5s %10s %8s %9s %11s %6s  %s", w, "DOMAIN", "GPUS",
                      "USED", "FREE", "DEGR", "FREE-NODES", "DRAW-KW", "BUDGET-KW", "HEADROOM-KW", "TEMP-C", "FLAGS");
        out << line << "\n";
        for (const DomainStatus& d : s.domains) {
            const std::string name = d.domain >= 0 && static_cast<size_t>(d.domain) < m.domains.size()
                                         ? m.domains[d.domain].name
                                         : std::to_string(d.domain);
            std::snprintf(line, sizeof line, "%-*s %5d %5d %5d %5d %10d %8s %9s %11s %6s  %s", w, name.c_str(),
                          d.gpus_total, d.gpus_used, d.gpus_free, d.gpus_degraded, d.free_nodes,
                          kw_cell(d.draw_kw).c_str(), kw_cell(d.budget_kw).c_str(),
                          d.power_known() ? kw1(d.headroom_kw).c_str() : "-",
                          d.temp_c > 0 ? kw1(d.temp_c).c_str() : "-", domain_flags(d).c_str());
            std::string l = line;
            while (!l.empty() && l.back() == ' ')
                l.pop_back();
            out << l << "\n";
        }
    }
    // Site and rows; racks are the domain lines above.
    bool header = false;
    for (const PowerStatus& p : s.power) {
        if (p.scope == "rack")
            continue;
        if (!header) {
            std::snprintf(line, sizeof line, "%-16s %9s %12s %8s %11s", "POWER", "BUDGET-KW", "EFFECTIVE-KW",
                          "DRAW-KW", "HEADROOM-KW");
            out << line << "\n";
            header = true;
        }
        const std::string label = p.scope == "site" ? "site" : p.scope + " " + p.name;
        std::snprintf(line, sizeof line, "%-16s %9s %12s %8s %11s", label.c_str(), kw_cell(p.budget_kw).c_str(),
                      kw_cell(p.effective_kw).c_str(), kw_cell(p.draw_kw).c_str(),
                      p.effective_kw >= 0 && p.draw_kw >= 0 ? kw1(p.headroom_kw).c_str() : "-");
        out << line << "\n";
    }
    out << "events: " << (s.active_events.empty() ? "none active" : std::to_string(s.active_events.size()) + " active")
        << "\n";
    for (const CurtailmentEvent* e : s.active_events)
        out << "  " << e->id << "  " << event_cut(*e) << " " << event_scope(*e) << "  until " << format_utc(e->end)
            << " (ends in " << elapsed(static_cast<double>(e->end - s.at)) << ")\n";
    if (s.queues.empty()) {
        out << "queues: no jobs\n";
    } else {
        out << "queues:\n";
        std::snprintf(line, sizeof line, "  %-10s %7s %8s %7s %12s %12s", "CLASS", "PENDING", "DEFERRED", "RUNNING",
                      "GPUS-PENDING", "GPUS-RUNNING");
        out << line << "\n";
        for (const ClassQueue& q : s.queues) {
            std::snprintf(line, sizeof line, "  %-10s %7d %8d %7d %12d %12d", class_label(q.cls).c_str(), q.pending,
                          q.deferred, q.running, q.gpus_pending, q.gpus_running);
            out << line << "\n";
        }
    }
    std::vector<std::string> reasons;
    for (const auto& [k, n] : s.pending_by_reason)
        reasons.push_back(k + " " + std::to_string(n));
    out << "pending by reason: " << (reasons.empty() ? "none" : join(reasons, ", ")) << "\n";
    // The detail starts with the state ("fresh: generated ... by ...").
    out << "signals: " << (s.signals.detail.empty() ? to_string(s.signals.state) : s.signals.detail) << "\n";
    return out.str();
}

// ---- explain ---------------------------------------------------------------------

namespace {

std::string domain_name(const Model& m, int d)
{
    return d >= 0 && static_cast<size_t>(d) < m.domains.size() ? m.domains[d].name : std::to_string(d);
}

// The job's power per GPU and where that figure comes from (job_energy,
// explanations): admission's w_gpu (the adapter puts it into the intent),
// else the policy's.
std::pair<double, std::string> job_power(const Model& m, const JobView& job, const ParsedAnnotation& a)
{
    if (job.intent.power_w_per_gpu > 0) {
        if (a.w_gpu > 0 || job.intent.recipe.empty())
            return {job.intent.power_w_per_gpu, "m2g admission (w_gpu)"};
        return {job.intent.power_w_per_gpu, "recipe " + job.intent.recipe};
    }
    JobIntent in = job.intent;
    if (in.workload_class == WorkloadClass::Unset)
        in.workload_class = a.workload_class;
    const double w = power_w_per_gpu(m.admission, in);
    const int ci = std::clamp(static_cast<int>(in.workload_class), 0, 7);
    const std::string cls = class_label(in.workload_class);
    if (m.admission.classes[ci].power_w_per_gpu > 0)
        return {w, "PowerPerGpuW of class " + cls + " (m2g.conf)"};
    if (m.admission.default_power_w_per_gpu > 0)
        return {w, "DefaultPowerPerGpuW (m2g.conf)"};
    for (const ClassPowerDefault& d : class_power_defaults())
        if (d.cls == in.workload_class)
            return {w, "class " + cls + " default (Acme p" + num(d.quantile_pct) + ")"};
    return {w, "built-in default"};
}

const PowerStatus* find_power(const Status& st, const std::string& scope, const std::string& name)
{
    for (const PowerStatus& p : st.power)
        if (p.scope == scope && (scope == "site" || p.name == name))
            return &p;
    return nullptr;
}

// "site budget 1200.0 kW, effective 900.0 kW, draw 850.0 kW, headroom 50.0 kW"
std::string power_facts(const Status& st, const std::string& scope, const std::string& name)
{
    const std::string label = scope == "site" ? "site" : scope + " " + name;
    const PowerStatus* p = find_power(st, scope, name);
    if (!p)
        return label + ": no budget or draw known";
    std::string out = label + (p->budget_kw >= 0 ? " budget " + kw1(p->budget_kw) + " kW, effective " +
                                                       kw1(p->effective_kw) + " kW"
                                                 : " no budget");
    out += p->draw_kw >= 0 ? ", draw " + kw1(p->draw_kw) + " kW" : ", draw unknown";
    if (p->effective_kw >= 0 && p->draw_kw >= 0)
        out += ", headroom " + kw1(p->headroom_kw) + " kW";
    return out;
}

const CurtailmentEvent* find_event(const SignalsView& v, const std::string& id)
{
    if (v.snap)
        for (const CurtailmentEvent& e : v.snap->events)
            if (e.id == id)
                return &e;
    return nullptr;
}

// "demand-response event dr-1 (-25% site) until <end>; site budget ..."
std::string event_facts(const Status& st, const CurtailmentEvent& e)
{
    const std::string scope = e.scope == EventScope::Site ? "site" : e.scope == EventScope::Row ? "row" : "rack";
    return "demand-response event " + e.id + " (" + event_cut(e) + " " + event_scope(e) + ") until " +
           format_utc(e.end) + "; " + power_facts(st, scope, e.scope_name);
}

struct Where {
    std::vector<std::string> domains, leaves;
    bool outside = false;  // some nodes are in no domain
    std::string nodes;     // hostlist, "" unknown
};

Where where_of(const Model& m, const JobView& job, const ParsedAnnotation& a)
{
    Where w;
    std::vector<int> idx;
    for (int n : job.node_idx)
        if (n >= 0 && static_cast<size_t>(n) < m.nodes.size())
            idx.push_back(n);
    if (idx.empty()) {
        w.domains = a.domains;
        w.leaves = a.leaves;
        return w;
    }
    std::sort(idx.begin(), idx.end(), [&](int x, int y) { return m.nodes[x].rank < m.nodes[y].rank; });
    auto add_once = [](std::vector<std::string>& v, const std::string& s) {
        if (std::find(v.begin(), v.end(), s) == v.end())
            v.push_back(s);
    };
    for (int n : idx) {
        const Node& node = m.nodes[n];
        int leaf = node.leaf;
        if (node.domain != kNone) {
            add_once(w.domains, m.domains[node.domain].name);
            leaf = m.domains[node.domain].parent;
        } else {
            w.outside = true;
        }
        if (leaf != kNone)
            add_once(w.leaves, m.switches[leaf].name);
    }
    w.nodes = hostlist_of(m, idx);
    return w;
}

// "in nvl02 (leaf leaf01), contained in one NVLink domain"
std::string where_text(const Where& w)
{
    if (w.domains.empty())
        return w.nodes.empty() ? "" : "on " + w.nodes + ", outside NVLink domains";
    std::string out = (w.domains.size() == 1 ? "in " : "across ") + join(w.domains, ",");
    if (!w.leaves.empty())
        out += std::string(" (") + (w.leaves.size() == 1 ? "leaf " : "leaves ") + join(w.leaves, ",") + ")";
    if (w.domains.size() == 1 && !w.outside)
        out += ", contained in one NVLink domain";
    else
        out += ", spanning " + std::to_string(w.domains.size()) + " NVLink domain" +
               (w.domains.size() == 1 ? "" : "s") + (w.outside ? " and nodes outside them" : "");
    return out;
}

// "free healthy GPUs per candidate domain: nvl02 72, nvl03 72, nvl01 68" (top 5 by free)
std::string free_per_domain(const Model& m, const Status& st)
{
    std::vector<const DomainStatus*> ds;
    for (const DomainStatus& d : st.domains)
        ds.push_back(&d);
    std::stable_sort(ds.begin(), ds.end(),
                     [](const DomainStatus* x, const DomainStatus* y) { return x->gpus_free > y->gpus_free; });
    std::vector<std::string> items;
    for (size_t i = 0; i < ds.size() && i < 5; ++i)
        items.push_back(domain_name(m, ds[i]->domain) + " " + std::to_string(ds[i]->gpus_free));
    return "free healthy GPUs per candidate domain: " + (items.empty() ? std::string("none") : join(items, ", "));
}

// "site power: 1.0 kW free" → "1.0 kW free"; text without ": " as it is.
std::string after_colon(const std::string& r)
{
    const size_t at = r.find(": ");
    return at == std::string::npos ? r : r.substr(at + 2);
}

class Explainer {
  public:
    Explainer(const Model& m, const ClusterView& c, const SignalsView& v, const JobView& job, int64_t now)
        : m_(m), v_(v), job_(job), now_(now), st_(compute_status(m, c, v, now)),
          a_(parse_annotation(job.admin_comment))
    {
        e_.job = job.id;
        const auto [w, src] = job_power(m, job, a_);
        watts_ = a_.w_gpu > 0 ? a_.w_gpu : w;
        watts_source_ = a_.w_gpu > 0 ? "m2g admission (w_gpu)" : src;
        job_kw_ = std::max(0, job.gpus) * watts_ / 1000.0;
        id_ = "Job " + std::to_string(job.id);
    }

    Explanation run()
    {
        switch (job_.state) {
        case JobState::Done:
            placed("done", " has ended; it ran ");
            break;
        case JobState::Running:
        case JobState::Completing:
            placed("running", " runs ");
            break;
        case JobState::Pending:
            pending();
            break;
        }
        if (a_.monitor && (a_.verdict == "defer" || a_.verdict == "pace"))
            e_.evidence.push_back("Admission=monitor: m2g would " + a_.verdict + " it until " + format_utc(a_.until) +
                                  (a_.cause.empty() ? "" : " (cause " + a_.cause + ")") + " but enforces nothing");
        return e_;
    }

  private:
    void placed(const char* verdict, const std::string& verb)
    {
        e_.verdict = verdict;
        const Where w = where_of(m_, job_, a_);
        const std::string where = where_text(w);
        if (where.empty())
            e_.summary = id_ + verb + "without an m2g placement record (Slurm placed it alone).";
        else
            e_.summary = id_ + verb + where + ".";
        if (e_.verdict == "running" && where.empty())
            e_.summary = id_ + " runs without an m2g placement record (Slurm placed it alone).";
        placement_evidence(w);
    }

    void placement_evidence(const Where& w)
    {
        if (!w.nodes.empty())
            e_.evidence.push_back("nodes: " + w.nodes);
        if (!a_.placement_reason.empty())
            e_.evidence.push_back("m2g placed it: " + a_.placement_reason);
        if (!a_.policy.empty())
            e_.evidence.push_back("policy " + a_.policy + (a_.score.empty() ? "" : ", score " + a_.score));
        if (!a_.signals.empty())
            e_.evidence.push_back("signals at placement: " + a_.signals);
        if (!a_.curtail.empty())
            e_.evidence.push_back("m2g-curtaild, last action during a power event: " + a_.curtail);
    }

    void pending()
    {
        if (admission_holds(a_, now_))
            return a_.verdict == "pace" ? paced_by_admission() : deferred();
        if (a_.placement == PlacementKind::Waiting)
            return waiting();
        if (a_.placement == PlacementKind::Placed) {
            e_.verdict = "placed";
            const Where w = where_of(m_, job_, a_);
            e_.summary = id_ + " is placed " + where_text(w) + ", and starts when Slurm launches it.";
            placement_evidence(w);
            return;
        }
        const std::string key = pending_reason_key(job_, a_, now_);
        if (key == "BeginTime" && job_.begin_time > now_) {
            e_.verdict = "waiting";
            e_.summary = id_ + " waits for its begin time " + format_utc(job_.begin_time) +
                         " (set by its owner or an operator, not by m2g).";
            return;
        }
        if (job_.slurm_reason.empty() && !a_.found) {
            e_.verdict = "unknown";
            e_.summary = id_ + " is pending; neither Slurm nor m2g gives a reason yet.";
            return;
        }
        e_.verdict = "waiting";
        e_.summary = id_ + " is pending in Slurm (reason " + key + "); m2g holds nothing against it.";
        e_.evidence.push_back(free_per_domain(m_, st_));
    }

    // ---- admission holds it -------------------------------------------------
    void deferred()
    {
        e_.verdict = "deferred";
        const std::string until = format_utc(a_.until);
        const std::string cap = "--m2g-defer=until=<time> caps the wait";
        if (starts_with(a_.cause, "maintenance:")) {
            const std::string id = a_.cause.substr(std::string("maintenance:").size());
            e_.summary = id_ + " is deferred until " + until + " by maintenance window " + id + ".";
            const MaintenanceWindow* w = nullptr;
            if (v_.snap)
                for (const MaintenanceWindow& x : v_.snap->maintenance)
                    if (x.id == id)
                        w = &x;
            if (w) {
                e_.evidence.push_back("maintenance window " + w->id + (w->reason.empty() ? "" : " (" + w->reason + ")") +
                                      " on " + hostlist_of(m_, w->nodes) + " from " + format_utc(w->start) + " to " +
                                      format_utc(w->end));
            } else {
                e_.evidence.push_back("maintenance window " + id + " is not in the signals in force");
            }
            admission_reason();
            e_.suggestions.push_back("it becomes eligible at " + until + ", after the window");
            if (w && w->start > now_) {
                const int64_t minutes = (w->start - now_) / 60;
                if (minutes > 0)
                    e_.suggestions.push_back("a --time of at most " + std::to_string(minutes) +
                                             " minutes fits before the window");
            }
            return;
        }
        if (a_.cause == "failsafe") {
            e_.summary = id_ + " is deferred until " + until + ": the signals feed is " + to_string(v_.state) +
                         " and SignalsFailSafe=defer holds deferrable work.";
            e_.evidence.push_back("signals: " + (v_.detail.empty() ? std::string(to_string(v_.state)) : v_.detail));
            admission_reason();
            e_.suggestions.push_back("it is re-checked every PowerRetrySec=" +
                                     std::to_string(m_.admission.power_retry_sec) +
                                     " s and released once the feed is fresh again");
            e_.suggestions.push_back(cap);
            return;
        }
        if (a_.cause == "power:site") {
            const PowerStatus* p = find_power(st_, "site", "site");
            e_.summary = id_ + " is deferred until " + until + ": the site has " +
                         (p && p->effective_kw >= 0 && p->draw_kw >= 0 ? kw1(std::max(0.0, p->headroom_kw)) + " kW"
                                                                       : "too little") +
                         " of power headroom and the job needs " + kw1(job_kw_) + " kW.";
            e_.evidence.push_back(power_facts(st_, "site", "site"));
            e_.evidence.push_back(job_need());
            admission_reason();
            e_.suggestions.push_back("it is re-checked every PowerRetrySec=" +
                                     std::to_string(m_.admission.power_retry_sec) + " s and starts when the site has " +
                                     kw1(job_kw_) + " kW free");
            e_.suggestions.push_back(cap);
            return;
        }
        if (!a_.cause.empty() && a_.cause.find(':') == std::string::npos) {
            const CurtailmentEvent* ev = find_event(v_, a_.cause);
            e_.summary = id_ + " is deferred until " + until + " by demand-response event " + a_.cause +
                         (ev ? " (" + event_cut(*ev) + " " + event_scope(*ev) + ")" : "") + ".";
            if (ev)
                e_.evidence.push_back(event_facts(st_, *ev));
            else
                e_.evidence.push_back("demand-response event " + a_.cause + " is not in the signals in force");
            admission_reason();
            e_.suggestions.push_back("it starts automatically when the event ends (at the latest " + until + ")");
            if (!m_.admission.defer_exempt_accounts.empty())
                e_.suggestions.push_back("accounts " + join(m_.admission.defer_exempt_accounts, ",") +
                                         " may use --m2g-defer=no during events");
            e_.suggestions.push_back(cap);
            return;
        }
        e_.summary = id_ + " is deferred until " + until + " by m2g admission" +
                     (a_.cause.empty() ? "" : " (cause " + a_.cause + ")") + ".";
        admission_reason();
        e_.suggestions.push_back("it becomes eligible at " + until);
    }

    void paced_by_admission()
    {
        e_.verdict = "paced";
        const CurtailmentEvent* ev = a_.cause.empty() ? nullptr : find_event(v_, a_.cause);
        e_.summary = id_ + " is paced: its GPUs start at " + format_utc(a_.until) +
                     (ev ? " during demand-response event " + ev->id : "") + ".";
        if (ev)
            e_.evidence.push_back(event_facts(st_, *ev));
        e_.evidence.push_back(pacing_limits());
        admission_reason();
        e_.suggestions.push_back("it starts automatically at " + format_utc(a_.until));
    }

    // ---- select/m2g waits -----------------------------------------------------
    // By the typed cause (wait=); the reason sentence is only shown.
    void waiting()
    {
        e_.verdict = "waiting";
        const std::string& r = a_.placement_reason;
        const WaitCause wait = a_.wait;
        const std::string policy = a_.policy.empty() ? "" : "; policy " + a_.policy;
        if (wait == WaitCause::Pacing) {
            e_.verdict = "paced";
            e_.summary = id_ + " is paced: " + after_colon(r) + ".";
            e_.evidence.push_back(pacing_limits());
            events_evidence();
            e_.suggestions.push_back("it starts in the next " + std::to_string(m_.admission.pace_interval_sec) +
                                     " s interval with room for " + std::to_string(std::max(0, job_.gpus)) +
                                     " GPUs (" + kw1(job_kw_) + " kW)");
            return;
        }
        e_.summary = id_ + summary_of(wait, r) + policy + ".";
        if (wait == WaitCause::SitePower) {
            e_.evidence.push_back(power_facts(st_, "site", "site"));
            e_.evidence.push_back(job_need());
            events_evidence();
            const PowerStatus* p = find_power(st_, "site", "site");
            e_.suggestions.push_back("it starts when the site has " + kw1(job_kw_) + " kW of headroom" +
                                     (p && p->effective_kw >= 0 && p->draw_kw >= 0
                                          ? " (" + kw1(std::max(0.0, p->headroom_kw)) + " kW now)"
                                          : ""));
            return;
        }
        if (wait == WaitCause::RackPower || wait == WaitCause::RowPower) {
            const std::string scope = wait == WaitCause::RackPower ? "rack" : "row";
            for (const std::string& name : a_.over)
                e_.evidence.push_back(power_facts(st_, scope, name));
            events_evidence();
            const int per_node = job_.nodes > 0 ? std::max(0, job_.gpus) / job_.nodes : 0;
            const double node_kw = per_node * watts_ / 1000.0;
            if (wait == WaitCause::RackPower) {
                std::vector<std::string> room;
                for (const DomainStatus& d : st_.domains)
                    if (d.power_known() && d.headroom_kw >= node_kw && room.size() < 5)
                        room.push_back(domain_name(m_, d.domain) + " (" + kw1(d.headroom_kw) + " kW free)");
                if (!room.empty())
                    e_.suggestions.push_back("racks with room for a node (" + kw1(node_kw) +
                                             " kW) now: " + join(room, ", "));
                e_.suggestions.push_back("it starts when racks have " + kw1(node_kw) +
                                         " kW of headroom per node it needs");
            } else {
                e_.suggestions.push_back("it starts when a row has " + kw1(job_kw_) + " kW of headroom");
            }
            return;
        }
        if (wait == WaitCause::Failsafe) {
            e_.evidence.push_back("signals: " + (v_.detail.empty() ? std::string(to_string(v_.state)) : v_.detail));
            e_.suggestions.push_back("it starts once the signals feed is fresh again");
            return;
        }
        e_.evidence.push_back(free_per_domain(m_, st_));
        if (!a_.signals.empty())
            e_.evidence.push_back("signals at placement: " + a_.signals);
        if (topology_wait(wait))
            topology_suggestions(wait);
    }

    // The engine's waits: the job waits for free healthy nodes in one place.
    static bool topology_wait(WaitCause w)
    {
        return w == WaitCause::NvlinkDomain || w == WaitCause::Switch || w == WaitCause::Nodes;
    }

    // " is waiting for an NVLink domain ...", " is waiting for site power: 1.0 kW free ..."
    static std::string summary_of(WaitCause wait, const std::string& r)
    {
        if (topology_wait(wait))
            return " is " + r;  // the engine's sentence starts "waiting for "
        if (wait == WaitCause::SitePower)
            return " is waiting for site power: " + after_colon(r);
        if (wait == WaitCause::RackPower || wait == WaitCause::RowPower)
            return " is waiting for " + std::string(wait == WaitCause::RackPower ? "rack" : "row") + " power: " + r;
        return " is waiting: " + r;
    }

    void topology_suggestions(WaitCause wait)
    {
        const int nodes = job_.nodes > 0 ? job_.nodes : a_.need;
        const PlacementPolicy& pol = m_.policy_for(job_.partition);
        if (wait == WaitCause::NvlinkDomain && nodes > 0) {
            // Best fit among the domains that hold the job now.
            const DomainStatus* fit = nullptr;
            for (const DomainStatus& d : st_.domains)
                if (d.free_nodes >= nodes && (!fit || d.free_nodes < fit->free_nodes))
                    fit = &d;
            if (fit) {
                e_.suggestions.push_back(std::to_string(nodes) + " nodes fit " + domain_name(m_, fit->domain) +
                                         " now (" + std::to_string(fit->free_nodes) +
                                         " free healthy nodes there): Slurm starts the job at its next scheduling "
                                         "pass unless higher-priority jobs take them first");
                return;
            }
        }
        if (starts_with(a_.policy, "strict")) {
            e_.suggestions.push_back("ask for --m2g-topology=prefer (takes the best placement after PreferWaitSec=" +
                                     std::to_string(pol.prefer_wait_sec) + " s)");
        } else if (starts_with(a_.policy, "prefer")) {
            // The prefer wait runs from the first time it could have started
            // short of its intent (prefer_since=); before that it has not
            // begun.
            const int64_t since = a_.prefer_since;
            if (since > 0 && since + pol.prefer_wait_sec > now_)
                e_.suggestions.push_back("prefer takes the best placement free from " +
                                         format_utc(since + pol.prefer_wait_sec) + " (PreferWaitSec=" +
                                         std::to_string(pol.prefer_wait_sec) + " s after " + format_utc(since) +
                                         ", when it could first have started on a lesser placement)");
            else if (since == 0)
                e_.suggestions.push_back("its prefer wait (PreferWaitSec=" + std::to_string(pol.prefer_wait_sec) +
                                         " s) starts once a placement short of its intent is free at its turn");
        }
        if (wait != WaitCause::NvlinkDomain || job_.intent.segment > 0 || nodes < 2)
            return;
        // The largest segment size that divides the job and fits now.
        for (int seg = nodes - 1; seg >= 2; --seg) {
            if (nodes % seg)
                continue;
            int groups = 0;
            for (const DomainStatus& d : st_.domains)
                groups += d.free_nodes / seg;
            if (groups >= nodes / seg) {
                e_.suggestions.push_back("--m2g-segment=" + std::to_string(seg) +
                                         " lets it span domains in groups of " + std::to_string(seg) + " (" +
                                         std::to_string(nodes / seg) + " groups fit now)");
                return;
            }
        }
        e_.suggestions.push_back("--m2g-segment=S lets it span domains in groups of S nodes");
    }

    // ---- shared facts -----------------------------------------------------------
    void admission_reason()
    {
        if (!a_.admission_reason.empty())
            e_.evidence.push_back("m2g admission: " + a_.admission_reason);
    }

    void events_evidence()
    {
        for (const CurtailmentEvent* ev : st_.active_events)
            e_.evidence.push_back(event_facts(st_, *ev));
    }

    std::string job_need() const
    {
        return "the job needs " + kw1(job_kw_) + " kW (" + std::to_string(std::max(0, job_.gpus)) + " GPUs x " +
               num(watts_) + " W, " + watts_source_ + ")";
    }

    std::string pacing_limits() const
    {
        const AdmissionPolicy& p = m_.admission;
        std::vector<std::string> caps;
        if (p.pace_gpus_per_interval > 0)
            caps.push_back(std::to_string(p.pace_gpus_per_interval) + " GPUs (PaceGpusPerInterval)");
        if (p.ramp_rate_kw_per_min > 0)
            caps.push_back(kw1(p.ramp_rate_kw_per_min * p.pace_interval_sec / 60.0) + " kW (RampRateKWPerMin=" +
                           num(p.ramp_rate_kw_per_min) + ")");
        const std::string job = "this job starts " + std::to_string(std::max(0, job_.gpus)) + " GPUs (" +
                                kw1(job_kw_) + " kW)";
        if (caps.empty())
            return "pacing during curtailment: no PaceGpusPerInterval= or RampRateKWPerMin= limit is set; " + job;
        return "pacing during curtailment: at most " + join(caps, " and ") + " start per " +
               std::to_string(p.pace_interval_sec) + " s interval; " + job;
    }

    const Model& m_;
    const SignalsView& v_;
    const JobView& job_;
    const int64_t now_;
    const Status st_;
    const ParsedAnnotation a_;
    double watts_ = 0;
    std::string watts_source_;
    double job_kw_ = 0;
    std::string id_;
    Explanation e_;
};

}  // namespace

Explanation explain_job(const Model& m, const ClusterView& c, const SignalsView& v, const JobView& job, int64_t now)
{
    try {
        return Explainer(m, c, v, job, now).run();
    } catch (const std::exception& ex) {
        Explanation e;
        e.job = job.id;
        e.verdict = "unknown";
        e.summary = std::string("m2g: internal error: ") + ex.what();
        return e;
    } catch (...) {
        Explanation e;
        e.job = job.id;
        e.verdict = "unknown";
        e.summary = "m2g: internal error: unknown exception";
        return e;
    }
}

std::string format_explanation(const Explanation& e, bool json)
{
    if (json) {
        JsonPtr o(json_object_new_object());
        add(o.get(), "job", json_object_new_int64(e.job));
        add(o.get(), "verdict", jstr(e.verdict));
        add(o.get(), "summary", jstr(e.summary));
        json_object* ev = json_object_new_array();
        for (const std::string& s : e.evidence)
            json_object_array_add(ev, jstr(s));
        add(o.get(), "evidence", ev);
        json_object* sg = json_object_new_array();
        for (const std::string& s : e.suggestions)
            json_object_array_add(sg, jstr(s));
        add(o.get(), "suggestions", sg);
        return json_text(o.get());
    }
    std::ostringstream out;
    out << "job " << e.job << ": " << e.verdict << "\n" << e.summary << "\n";
    if (!e.evidence.empty()) {
        out << "evidence:\n";
        for (const std::string& s : e.evidence)
            out << "  - " << s << "\n";
    }
    if (!e.suggestions.empty()) {
        out << "suggestions:\n";
        for (const std::string& s : e.suggestions)
            out << "  - " << s << "\n";
    }
    return out.str();
}

// ---- per-job energy -------------------------------------------------------------------

EnergyPrice energy_price(const Model& m)
{
    EnergyPrice p;
    p.per_kwh = m.energy_price_per_kwh;
    p.currency = m.energy_currency.empty() ? "EUR" : m.energy_currency;
    return p;
}

JobEnergy job_energy(const Model& m, const JobView& job, const EnergyPrice& price, int64_t now)
{
    JobEnergy e;
    e.job = job.id;
    if (job.start_time > 0) {
        const bool ended = job.state == JobState::Done || job.state == JobState::Completing;
        const int64_t end = ended && job.end_time > 0 ? job.end_time : now;
        e.runtime_s = static_cast<double>(std::max<int64_t>(0, end - job.start_time));
    }
    e.gpu_hours = std::max(0, job.gpus) * e.runtime_s / 3600.0;
    const ParsedAnnotation a = parse_annotation(job.admin_comment);
    const auto [w, src] = job_power(m, job, a);
    e.power_w_per_gpu = w;
    e.power_source = src;
    e.energy_kwh = e.gpu_hours * w / 1000.0;
    e.price_per_kwh = price.per_kwh > 0 ? price.per_kwh : 0;
    e.cost = e.energy_kwh * e.price_per_kwh;
    e.currency = price.currency;
    return e;
}

std::string format_job_energy(const JobEnergy& e, const JobView& job, bool json)
{
    if (json) {
        JsonPtr o(json_object_new_object());
        add(o.get(), "job", json_object_new_int64(e.job));
        add(o.get(), "name", jstr(job.name));
        add(o.get(), "state", json_object_new_string(to_string(job.state)));
        add(o.get(), "gpus", json_object_new_int(std::max(0, job.gpus)));
        add(o.get(), "runtime_s", json_object_new_int64(static_cast<int64_t>(e.runtime_s)));
        add(o.get(), "gpu_hours", jnum(e.gpu_hours, 3));
        add(o.get(), "power_w_per_gpu", jnum(e.power_w_per_gpu));
        add(o.get(), "power_source", jstr(e.power_source));
        add(o.get(), "energy_kwh", jnum(e.energy_kwh, 3));
        add(o.get(), "price_per_kwh", e.price_per_kwh > 0 ? jnum(e.price_per_kwh, 4) : nullptr);
        add(o.get(), "cost", e.price_per_kwh > 0 ? jnum(e.cost, 2) : nullptr);
        add(o.get(), "currency", jstr(e.currency));
        return json_text(o.get());
    }
    std::ostringstream out;
    out << "job " << e.job << (job.name.empty() ? "" : " (" + job.name + ")") << ": " << to_string(job.state) << ", "
        << elapsed(e.runtime_s) << " on " << std::max(0, job.gpus) << " GPUs = " << fmt("%.2f", e.gpu_hours)
        << " GPU-hours\n";
    out << "power:  " << num(e.power_w_per_gpu) << " W per GPU (" << e.power_source << ")\n";
    out << "energy: " << fmt("%.2f", e.energy_kwh) << " kWh (estimate: GPU-hours x power per GPU)\n";
    if (e.price_per_kwh > 0)
        out << "cost:   " << fmt("%.2f", e.cost) << " " << e.currency << " at " << num(e.price_per_kwh) << " "
            << e.currency << "/kWh\n";
    else
        out << "cost:   not shown (no EnergyPricePerKWh= in m2g.conf)\n";
    return out.str();
}

}  // namespace m2g
