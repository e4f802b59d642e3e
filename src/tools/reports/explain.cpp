// m2g tools: `m2g explain` — why a job waits, was deferred or paced, or went
// where it went, from the cluster now (compute_status), the signals in
// force and m2g's own annotation on the job; see explain.hpp.
#include "tools/reports/explain.hpp"

#include <json-c/json.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "tools/reports/report_util.hpp"

namespace m2g {

using namespace reports;  // the words every report writes alike

namespace {

std::string domain_name(const Model& m, int d)
{
    return d >= 0 && static_cast<size_t>(d) < m.domains.size() ? m.domains[d].name : std::to_string(d);
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

Where where_of(const Model& m, const JobView& job, const PlacementAnnotation& a)
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
    w.nodes = node_hostlist(m, idx);
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
    Explainer(const Model& m, const ClusterView& c, const SignalsView& v, const JobView& job, int64_t now,
              const Forecast* fc)
        : m_(m), v_(v), job_(job), now_(now), fc_(fc), st_(compute_status(m, c, v, now)),
          ann_(read_annotation(job.admin_comment)), found_(has_annotation(job.admin_comment)),
          pl_(ann_.placement.value_or(PlacementAnnotation{})), ad_(ann_.admission.value_or(AdmissionAnnotation{})),
          cause_(cause_of(ad_.cause)), free_at_(node_free_at(m, c, v, now))
    {
        e_.job = job.id;
        const auto [w, src] = job_power(m, job, ad_);
        watts_ = ad_.w_gpu > 0 ? ad_.w_gpu : w;
        watts_source_ = ad_.w_gpu > 0 ? "m2g admission (w_gpu)" : src;
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
            forecast_evidence();
            break;
        }
        if (ad_.monitor && (ad_.verdict == Verdict::Defer || ad_.verdict == Verdict::Pace))
            e_.evidence.push_back("Admission=monitor: m2g would " + std::string(to_string(*ad_.verdict)) + " it until " +
                                  format_utc(ad_.until) +
                                  (ad_.cause.empty() ? "" : " (cause " + ad_.cause + ")") + " but enforces nothing");
        return e_;
    }

  private:
    void placed(const char* verdict, const std::string& verb)
    {
        e_.verdict = verdict;
        const Where w = where_of(m_, job_, pl_);
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
        if (!pl_.reason.empty())
            e_.evidence.push_back("m2g placed it: " + pl_.reason);
        if (pl_.evicted_gpu_h) {
            std::string ids;
            for (uint32_t id : pl_.preempted)
                ids += (ids.empty() ? "" : ", ") + std::to_string(id);
            char work[32];
            std::snprintf(work, sizeof work, *pl_.evicted_gpu_h < 1 ? "%.2f" : "%.1f", *pl_.evicted_gpu_h);
            e_.evidence.push_back(pl_.preempted.empty()
                                      ? std::string("started by preemption on nodes its victims were leaving")
                                      : "preempted job" + std::string(pl_.preempted.size() == 1 ? " " : "s ") + ids +
                                            " to make room (" + work + " GPU-h of " +
                                            (pl_.preempted.size() == 1 ? "its" : "their") + " work lost)");
        }
        if (!pl_.policy.empty())
            e_.evidence.push_back("policy " + pl_.policy + (pl_.score ? ", score " + format_score(*pl_.score) : ""));
        if (!pl_.signals.empty())
            e_.evidence.push_back("signals at placement: " + pl_.signals);
        if (ann_.curtail && ann_.curtail->step)
            e_.evidence.push_back("m2g-curtaild, last action during a power event: " + format(*ann_.curtail));
    }

    void pending()
    {
        if (ad_.holds_at(now_))
            return ad_.verdict == Verdict::Pace ? paced_by_admission() : deferred();
        if (pl_.state == PlacementState::Waiting)
            return waiting();
        if (pl_.placed()) {
            e_.verdict = "placed";
            const Where w = where_of(m_, job_, pl_);
            e_.summary = id_ + " is placed " + where_text(w) + ", and starts when Slurm launches it.";
            placement_evidence(w);
            return;
        }
        const std::string key = pending_reason_key(job_, ann_, now_);
        if (key == "BeginTime" && job_.begin_time > now_) {
            e_.verdict = "waiting";
            e_.summary = id_ + " waits for its begin time " + format_utc(job_.begin_time) +
                         " (set by its owner or an operator, not by m2g).";
            return;
        }
        if (job_.slurm_reason.empty() && !found_) {
            e_.verdict = "unknown";
            e_.summary = id_ + " is pending; neither Slurm nor m2g gives a reason yet.";
            return;
        }
        e_.verdict = "waiting";
        e_.summary = id_ + " is pending in Slurm (reason " + key + "); m2g holds nothing against it.";
        e_.evidence.push_back(free_per_domain(m_, st_));
    }

    // ---- the forecast: when, and what would start it sooner ------------------
    std::string in_words(int64_t t) const
    {
        return t <= now_ ? "at Slurm's next scheduling pass" : "in " + about(static_cast<double>(t - now_));
    }

    void forecast_evidence()
    {
        if (!fc_)
            return;
        const auto it = std::find_if(fc_->jobs.begin(), fc_->jobs.end(),
                                     [&](const ForecastJob& j) { return j.id == job_.id; });
        if (it == fc_->jobs.end())
            return;
        const ForecastJob& fj = *it;
        if (fj.start < 0)
            e_.evidence.push_back("m2g forecast: with " + fj.topology +
                                  " it never starts as the cluster stands (no placement that intent accepts on the "
                                  "healthy nodes)");
        else
            e_.evidence.push_back("m2g forecast: with " + fj.topology + " it should start " + in_words(fj.start) +
                                  (fj.start > now_ ? " (by " + format_utc(fj.start) + ")" : "") + " on " +
                                  fj.nodes_list + ", if every job runs to its time limit (most end sooner)");
        for (const ForecastAlternative& a : fj.alternatives) {
            if (a.start < 0 || (fj.start >= 0 && a.start + 60 >= fj.start))
                continue;  // not sooner by a minute or more
            e_.suggestions.push_back("with --m2g-topology=" + a.topology + " it would start " + in_words(a.start) +
                                     " instead of " + (fj.start < 0 ? std::string("never") : in_words(fj.start)) +
                                     " (on " + a.nodes + ", " + std::to_string(a.domains) +
                                     (a.domains == 1 ? " NVLink domain)" : " NVLink domains)"));
        }
    }

    // ---- admission holds it -------------------------------------------------
    void deferred()
    {
        e_.verdict = "deferred";
        const std::string until = format_utc(ad_.until);
        const std::string cap = "--m2g-defer=until=<time> caps the wait";
        if (cause_.kind == CauseKind::Maintenance) {
            const std::string& id = cause_.id;
            e_.summary = id_ + " is deferred until " + until + " by maintenance window " + id + ".";
            const MaintenanceWindow* w = nullptr;
            if (v_.snap)
                for (const MaintenanceWindow& x : v_.snap->maintenance)
                    if (x.id == id)
                        w = &x;
            if (w) {
                e_.evidence.push_back("maintenance window " + w->id + (w->reason.empty() ? "" : " (" + w->reason + ")") +
                                      " on " + node_hostlist(m_, w->nodes) + " from " + format_utc(w->start) + " to " +
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
        if (cause_.kind == CauseKind::Failsafe) {
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
        if (cause_.kind == CauseKind::SitePower) {
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
        if (cause_.kind == CauseKind::Event) {
            const CurtailmentEvent* ev = find_event(v_, ad_.cause);
            e_.summary = id_ + " is deferred until " + until + " by demand-response event " + ad_.cause +
                         (ev ? " (" + event_cut(*ev) + " " + event_scope(*ev) + ")" : "") + ".";
            if (ev)
                e_.evidence.push_back(event_facts(st_, *ev));
            else
                e_.evidence.push_back("demand-response event " + ad_.cause + " is not in the signals in force");
            admission_reason();
            e_.suggestions.push_back("it starts automatically when the event ends (at the latest " + until + ")");
            if (!m_.admission.defer_exempt_accounts.empty())
                e_.suggestions.push_back("accounts " + join(m_.admission.defer_exempt_accounts, ",") +
                                         " may use --m2g-defer=no during events");
            e_.suggestions.push_back(cap);
            return;
        }
        e_.summary = id_ + " is deferred until " + until + " by m2g admission" +
                     (ad_.cause.empty() ? "" : " (cause " + ad_.cause + ")") + ".";
        admission_reason();
        e_.suggestions.push_back("it becomes eligible at " + until);
    }

    void paced_by_admission()
    {
        e_.verdict = "paced";
        const CurtailmentEvent* ev = ad_.cause.empty() ? nullptr : find_event(v_, ad_.cause);
        e_.summary = id_ + " is paced: its GPUs start at " + format_utc(ad_.until) +
                     (ev ? " during demand-response event " + ev->id : "") + ".";
        if (ev)
            e_.evidence.push_back(event_facts(st_, *ev));
        e_.evidence.push_back(pacing_limits());
        admission_reason();
        e_.suggestions.push_back("it starts automatically at " + format_utc(ad_.until));
    }

    // ---- select/m2g waits -----------------------------------------------------
    // By the typed cause (wait=); the reason sentence is only shown.
    void waiting()
    {
        e_.verdict = "waiting";
        const std::string& r = pl_.reason;
        const WaitCause wait = pl_.wait;
        const std::string policy = pl_.policy.empty() ? "" : "; policy " + pl_.policy;
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
        if (r.empty() && wait == WaitCause::Other)  // a record from an m2g that left the cause out
            e_.summary = id_ + " is waiting" + (job_.slurm_reason.empty() ? "" : " (Slurm: " + job_.slurm_reason + ")") +
                         "; select/m2g recorded no cause" + policy + ".";
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
        if (wait == WaitCause::PowerRoom) {
            e_.evidence.push_back(power_facts(st_, "site", "site"));
            e_.evidence.push_back(job_need());
            events_evidence();
            e_.suggestions.push_back("m2g-curtaild caps or suspends deferrable work to make room for it; it starts "
                                     "once the meter shows the room" +
                                     (pl_.room_since > 0
                                          ? ", by " + format_utc(pl_.room_since + m_.admission.curtail_start_wait_sec) +
                                                " regardless (CurtailStartWaitSec)"
                                          : std::string()));
            return;
        }
        if (wait == WaitCause::RackPower || wait == WaitCause::RowPower) {
            const std::string scope = wait == WaitCause::RackPower ? "rack" : "row";
            for (const std::string& name : pl_.over)
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
        if (!pl_.signals.empty())
            e_.evidence.push_back("signals at placement: " + pl_.signals);
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
        if (wait == WaitCause::PowerRoom)
            return " is waiting for room under the site's power budget: " + after_colon(r);
        if (wait == WaitCause::RackPower || wait == WaitCause::RowPower)
            return " is waiting for " + std::string(wait == WaitCause::RackPower ? "rack" : "row") + " power: " + r;
        return " is waiting: " + r;
    }

    // Waits for NVLink domains: wait=nvlink-domain, or too few nodes
    // free at all (wait=nodes) under an :nvlink policy.
    bool nvlink_wait(WaitCause wait) const
    {
        return wait == WaitCause::NvlinkDomain ||
               (wait == WaitCause::Nodes && pl_.policy.find(":nvlink") != std::string::npos);
    }

    // The domain where `nodes` nodes are free first, by the running jobs'
    // expected ends (Slurm's EndTime), as evidence: "nvl03 frees first:
    // 18 of its nodes are free by <time> (in about 25 min) ...". Only a job
    // that one domain can hold, in whole nodes (no segments).
    void frees_first(int nodes)
    {
        if (job_.intent.segment > 0)
            return;
        int best = -1;
        int64_t best_at = 0;
        for (size_t d = 0; d < m_.domains.size(); ++d) {
            std::vector<int64_t> at;
            for (int n : m_.domains[d].nodes)
                if (n >= 0 && static_cast<size_t>(n) < free_at_.size() && free_at_[n] >= 0)
                    at.push_back(free_at_[n]);
            if (static_cast<int>(at.size()) < nodes)
                continue;
            std::nth_element(at.begin(), at.begin() + (nodes - 1), at.end());
            const int64_t t = at[nodes - 1];
            if (best < 0 || t < best_at) {
                best = static_cast<int>(d);
                best_at = t;
            }
        }
        if (best < 0) {
            e_.evidence.push_back("no NVLink domain has " + std::to_string(nodes) +
                                  " healthy nodes whose jobs have an end time");
            return;
        }
        const std::string when = about(static_cast<double>(best_at - now_));
        e_.evidence.push_back(domain_name(m_, best) + " frees first: " + std::to_string(nodes) +
                              " of its nodes are free by " + format_utc(best_at) + " (in " + when +
                              "), by the running jobs' time limits (Slurm's EndTime; they may end sooner)");
    }

    void topology_suggestions(WaitCause wait)
    {
        const int nodes = job_.nodes > 0 ? job_.nodes : pl_.need;
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
        if (nvlink_wait(wait) && nodes > 0)
            frees_first(nodes);
        if (starts_with(pl_.policy, "strict")) {
            e_.suggestions.push_back("ask for --m2g-topology=prefer (takes the best placement after PreferWaitSec=" +
                                     std::to_string(pol.prefer_wait_sec) + " s)");
        } else if (starts_with(pl_.policy, "prefer")) {
            // The prefer wait runs from the first time it could have started
            // short of its intent (prefer_since=); before that it has not
            // begun.
            const int64_t since = pl_.prefer_since;
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
        if (!ad_.reason.empty())
            e_.evidence.push_back("m2g admission: " + ad_.reason);
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
    const Forecast* fc_;            // may be null
    const Status st_;
    const Annotation ann_;          // read_annotation(): the one reader of the text
    const bool found_;              // the comment holds an m2g segment
    const PlacementAnnotation pl_;  // select/m2g's part; state None when it has none
    const AdmissionAnnotation ad_;  // job_submit/m2g's part; no verdict when it has none
    const AdmissionCause cause_;    // ad_.cause, classified
    const std::vector<int64_t> free_at_;  // node_free_at(): when each node is whole and free
    double watts_ = 0;
    std::string watts_source_;
    double job_kw_ = 0;
    std::string id_;
    Explanation e_;
};

}  // namespace

Explanation explain_job(const Model& m, const ClusterView& c, const SignalsView& v, const JobView& job, int64_t now,
                        const Forecast* fc)
{
    try {
        return Explainer(m, c, v, job, now, fc).run();
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

}  // namespace m2g
