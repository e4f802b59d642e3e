// m2g tools: `m2g status` and the facts behind m2g-exporter — Slurm's state
// (a ClusterView) and the signals, in model terms: GPUs per NVLink domain,
// power, events, queues by class, pending jobs by reason. Slurm-free; see
// status.hpp for the contract.
#include "tools/reports/status.hpp"

#include <json-c/json.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "core/base/enum_names.hpp"
#include "tools/reports/report_util.hpp"

namespace m2g {

using namespace reports;  // the words every report writes alike

namespace {

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

// ---- jobs: state names, why one is pending -----------------------------------------

namespace {
constexpr auto kJobStateNames = enum_names<JobState::Done>({"pending", "running", "completing", "done"});
// The <why> of a deferred job's "deferred:<why>", by its cause's kind.
constexpr auto kDeferredWhy =
    enum_names<CauseKind::Other>({"other", "event", "maintenance", "site-power", "failsafe", "other"});
}  // namespace

const char* to_string(JobState s) { return name_of(kJobStateNames, s, "pending"); }

std::string pending_reason_key(const JobView& job, const Annotation& a, int64_t now)
{
    if (job.state != JobState::Pending)
        return "";
    if (a.admission && a.admission->holds_at(now)) {
        if (a.admission->verdict == Verdict::Pace)
            return "paced";
        return std::string("deferred:") + name_of(kDeferredWhy, cause_of(a.admission->cause).kind, "other");
    }
    if (a.placement && a.placement->state == PlacementState::Waiting)
        return "waiting:" + std::string(to_string(a.placement->wait));
    // Slurm's reason word: "ReqNodeNotAvail, UnavailableNodes:..." → "ReqNodeNotAvail".
    std::string r = job.slurm_reason.substr(0, job.slurm_reason.find_first_of(" ,:(;="));
    return r.empty() ? "None" : r;
}

// ---- compute_status ---------------------------------------------------------------

std::vector<int64_t> node_free_at(const Model& m, const ClusterView& c, const SignalsView& v, int64_t now)
{
    const std::vector<NodeFacts> nf = node_facts(m, c, v.snap.get());
    std::vector<int64_t> at(m.nodes.size(), now);
    std::vector<uint8_t> held(m.nodes.size(), 0);
    for (size_t n = 0; n < nf.size(); ++n)
        if (!nf[n].healthy)
            at[n] = -1;
    for (const JobView& j : c.jobs) {
        if (j.state != JobState::Running && j.state != JobState::Completing)
            continue;
        for (int n : j.node_idx) {
            if (n < 0 || static_cast<size_t>(n) >= at.size())
                continue;
            held[n] = 1;
            if (at[n] >= 0)
                at[n] = j.end_time > 0 ? std::max(at[n], j.end_time) : -1;
        }
    }
    // GPUs allocated to no job the view holds: when they free is unknown.
    for (size_t n = 0; n < nf.size(); ++n)
        if (nf[n].alloc > 0 && !held[n])
            at[n] = -1;
    return at;
}

BackfillConf backfill_conf(std::string_view schedtype, std::string_view sched_params)
{
    BackfillConf b;
    if (!schedtype.empty() && schedtype != "sched/backfill") {
        b.enabled = false;  // sched/builtin: the main scheduler only, in priority order
        return b;
    }
    std::string params(sched_params);
    std::transform(params.begin(), params.end(), params.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    // backfill.c: xstrcasestr(sched_params, "bf_window=") then atoi(): a
    // value is the digits after the key, and a key with none reads as 0.
    auto value = [&](const char* key) -> std::optional<long> {
        const size_t at = params.find(key);
        if (at == std::string::npos)
            return std::nullopt;
        return std::strtol(params.c_str() + at + std::strlen(key), nullptr, 10);
    };
    auto reject = [&](const char* key, long v, const std::string& range, const std::string& dflt) {
        b.problems.push_back("SchedulerParameters " + std::string(key) + std::to_string(v) + " is out of range (" +
                             range + "): slurmctld uses " + dflt + ", and so does the forecast");
    };
    if (const auto v = value("bf_interval=")) {  // BACKFILL_INTERVAL 30, MAX_BACKFILL_INTERVAL 10800
        if (*v == -1)
            b.enabled = false;  // backfill skips every cycle
        else if (*v < 1 || *v > 10800)
            reject("bf_interval=", *v, "1 to 10800 s, or -1", "30 s");
        else
            b.interval_s = static_cast<double>(*v);
    }
    if (const auto v = value("bf_window=")) {  // minutes; BACKFILL_WINDOW 1 day, MAX_BACKFILL_WINDOW 30 days
        if (*v < 1 || *v > 30 * 1440)
            reject("bf_window=", *v, "1 to 43200 min", "1440 min");
        else
            b.window_s = static_cast<double>(*v) * 60;
    }
    if (const auto v = value("bf_max_job_test=")) {  // DEF_BF_MAX_JOB_TEST 500, MAX_BF_MAX_JOB_TEST 1000000
        if (*v < 1 || *v > 1000000)
            reject("bf_max_job_test=", *v, "1 to 1000000", "500");
        else
            b.max_job_test = static_cast<int>(*v);
    }
    if (const auto v = value("bf_resolution=")) {  // BACKFILL_RESOLUTION 60, MAX_BACKFILL_RESOLUTION 3600
        if (*v < 1 || *v > 3600)
            reject("bf_resolution=", *v, "1 to 3600 s", "60 s");
        else
            b.resolution_s = static_cast<double>(*v);
    }
    return b;
}

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
        for (const JobView& j : c.jobs)
            if ((j.state == JobState::Running || j.state == JobState::Completing) &&
                std::any_of(j.node_idx.begin(), j.node_idx.end(), [&](int n) {
                    return n >= 0 && static_cast<size_t>(n) < m.nodes.size() && m.nodes[n].domain == static_cast<int>(d);
                }))
                ds.jobs.push_back(j.id);
        std::sort(ds.jobs.begin(), ds.jobs.end());
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
        const Annotation a = read_annotation(j.admin_comment);
        WorkloadClass cls = j.intent.workload_class;
        if (cls == WorkloadClass::Unset && a.admission)
            cls = a.admission->workload_class.value_or(WorkloadClass::Unset);
        const int ci = std::clamp(static_cast<int>(cls), 0, 7);
        ClassQueue& cq = q[ci];
        cq.cls = static_cast<WorkloadClass>(ci);
        seen[ci] = true;
        const int gpus = std::max(0, j.gpus);
        if (j.state == JobState::Pending) {
            ++cq.pending;
            cq.gpus_pending += gpus;
            if (a.admission && a.admission->holds_at(now)) {
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

json_object* jkw(double d) { return d >= 0 ? jnum(d) : nullptr; }

std::string kw_cell(double d) { return d >= 0 ? kw1(d) : "-"; }

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
        json_object* jobs = json_object_new_array();
        for (uint32_t id : d.jobs)
            json_object_array_add(jobs, json_object_new_int64(id));
        add(e, "jobs", jobs);
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
        add(e, "limit_kw", ev->limit_kw >= 0 ? jnum(ev->limit_kw, 3) : nullptr);
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

}  // namespace m2g
