// m2g core: curtailment planner (see curtail.hpp).
#include "core/power/curtail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/power/admission.hpp"

namespace m2g {

namespace {

std::string kw1(double kw)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", kw);
    return buf;
}

std::string watts(double w)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", w);
    return buf;
}

int class_index(WorkloadClass c)
{
    return static_cast<int>(c);
}

// A scope with a budget, and which model nodes it holds.
struct Scope {
    CurtailScope out;
    std::vector<uint8_t> member;  // per model node
    double base_kw = 0;           // draw as judged before this plan
};

// GPUs of `j` inside `s`.
int gpus_in(const Scope& s, const CurtailJob& j)
{
    int n = 0;
    for (int node : j.nodes)
        if (node >= 0 && node < static_cast<int>(s.member.size()) && s.member[node])
            ++n;
    return n * std::max(0, j.gpus_per_node);
}

int job_gpus(const CurtailJob& j)
{
    return static_cast<int>(j.nodes.size()) * std::max(0, j.gpus_per_node);
}

double uncapped_w(const AdmissionPolicy& p, const CurtailJob& j)
{
    return j.w_gpu > 0 ? j.w_gpu : power_w_per_gpu(p, j.intent);
}

double floor_w(const AdmissionPolicy& p, const CurtailJob& j)
{
    const ClassPolicy& cp = p.classes[class_index(j.intent.workload_class)];
    return cp.cap_floor_w > 0 ? cp.cap_floor_w : p.cap_floor_w;
}

// The first active event on a scope, by id.
std::string event_on(const Signals* s, EventScope scope, int index, int64_t now)
{
    for (const CurtailmentEvent* e : active_events(s, now))
        if (e->scope == scope && (scope == EventScope::Site || e->scope_index == index))
            return e->id;
    return "";
}

// The draw a scope's feed reports, -1 when it has none.
double feed_draw(const Signals* s, EventScope scope, int index)
{
    if (!s)
        return -1;
    switch (scope) {
    case EventScope::Site:
        return s->site.draw_kw;
    case EventScope::Row:
        return index < static_cast<int>(s->rows.size()) ? s->rows[index].draw_kw : -1;
    case EventScope::Rack:
        return index < static_cast<int>(s->racks.size()) ? s->racks[index].draw_kw : -1;
    }
    return -1;
}

std::vector<Scope> build_scopes(const Model& m, const SignalsView& v, const std::vector<CurtailJob>& jobs,
                                int64_t now)
{
    const Signals* s = v.snap.get();
    const AdmissionPolicy& p = m.admission;
    std::vector<Scope> out;
    auto add = [&](EventScope scope, int index, const std::string& name, std::vector<uint8_t> member) {
        const double budget = effective_budget_kw(m, s, scope, index, now);
        if (budget < 0)
            return;
        Scope sc;
        sc.out.scope = scope;
        sc.out.index = index;
        sc.out.name = name;
        sc.out.budget_kw = budget;
        sc.out.target_kw = budget * (1.0 - p.curtail_margin_pct / 100.0);
        sc.out.cause = event_on(s, scope, index, now);
        sc.member = std::move(member);
        // A stale or missing feed's draw is not trusted: the jobs' estimates stand in.
        const double fd = v.failsafe ? -1 : feed_draw(s, scope, index);
        double est = 0, lag = 0;
        for (const CurtailJob& j : jobs) {
            const int g = gpus_in(sc, j);
            if (g == 0)
                continue;
            const double w = curtail_job_w_gpu(p, j);
            est += g * w / 1000.0;
            // A change in the snapshot's own second may not be in it yet:
            // counted as not (one pass of too little is better than a job
            // suspended for nothing).
            if (s && j.changed_at >= s->generated_at && j.w_gpu_before > 0)
                lag += g * (w - j.w_gpu_before) / 1000.0;
        }
        if (fd >= 0) {
            sc.base_kw = std::max(0.0, fd + lag);
            sc.out.draw_from_feed = true;
        } else {
            sc.base_kw = est;
        }
        sc.out.draw_kw = sc.base_kw;
        out.push_back(std::move(sc));
    };
    const size_t nn = m.nodes.size();
    for (size_t d = 0; d < m.domains.size(); ++d) {
        std::vector<uint8_t> mem(nn, 0);
        for (int n : m.domains[d].nodes)
            mem[n] = 1;
        add(EventScope::Rack, static_cast<int>(d), m.domains[d].name, std::move(mem));
    }
    for (size_t f = 0; f < m.fault_domains.size(); ++f) {
        std::vector<uint8_t> mem(nn, 0);
        for (int n : m.fault_domains[f].nodes)
            mem[n] = 1;
        add(EventScope::Row, static_cast<int>(f), m.fault_domains[f].name, std::move(mem));
    }
    add(EventScope::Site, kNone, "site", std::vector<uint8_t>(nn, 1));
    return out;
}

bool may_touch(const AdmissionPolicy& p, const CurtailJob& j, CurtailLevel at_least)
{
    return static_cast<int>(curtail_level(p, j.intent)) >= static_cast<int>(at_least);
}

}  // namespace

const char* to_string(CurtailStep s)
{
    switch (s) {
    case CurtailStep::Cap:
        return "cap";
    case CurtailStep::Suspend:
        return "suspend";
    case CurtailStep::Signal:
        return "signal";
    case CurtailStep::Requeue:
        return "requeue";
    case CurtailStep::Resume:
        return "resume";
    case CurtailStep::Uncap:
        return "uncap";
    }
    return "cap";
}

double curtail_job_w_gpu(const AdmissionPolicy& p, const CurtailJob& j)
{
    if (j.suspended)
        return std::min(p.idle_power_w_per_gpu, uncapped_w(p, j));
    const double w = uncapped_w(p, j);
    return j.cap_w > 0 ? std::min(w, j.cap_w) : w;
}

CurtailLevel curtail_level(const AdmissionPolicy& p, const JobIntent& intent)
{
    const ClassPolicy& cp = p.classes[class_index(intent.workload_class)];
    // A job that may not wait is left alone unless its class opted in.
    if (!is_deferrable(p, intent) && !cp.curtail_set)
        return CurtailLevel::None;
    return cp.curtail;
}

CurtailPlan plan_curtailment(const Model& m, const SignalsView& v, const std::vector<CurtailJob>& jobs,
                             CurtailState& state, int64_t now)
{
    CurtailPlan plan;
    try {
        const AdmissionPolicy& p = m.admission;
        std::vector<Scope> scopes = build_scopes(m, v, jobs, now);
        // The planner's working copy: per-GPU draw and state after the
        // actions planned so far.
        std::vector<CurtailJob> work = jobs;
        std::vector<double> w0(jobs.size());
        for (size_t i = 0; i < jobs.size(); ++i)
            w0[i] = curtail_job_w_gpu(p, jobs[i]);
        // Jobs this plan requeues: they leave their GPUs (draw 0 from here on).
        std::vector<uint8_t> gone(jobs.size(), 0);
        auto draw = [&](const Scope& sc) {
            double d = sc.base_kw;
            for (size_t i = 0; i < work.size(); ++i) {
                const int g = gpus_in(sc, work[i]);
                if (g)
                    d += g * ((gone[i] ? 0.0 : curtail_job_w_gpu(p, work[i])) - w0[i]) / 1000.0;
            }
            return d;
        };
        auto cause_of = [](const Scope& sc) {
            return sc.out.cause.empty() ? "power:" + sc.out.name : sc.out.cause;
        };
        auto why = [&](const Scope& sc, double d) {
            std::string w = (sc.out.scope == EventScope::Site ? std::string("site") : sc.out.name) +
                            " over budget";
            if (!sc.out.cause.empty())
                w += " during " + sc.out.cause;
            return w + ": " + kw1(d) + " kW drawn, target " + kw1(sc.out.target_kw) + " kW (budget " +
                   kw1(sc.out.budget_kw) + " kW)";
        };

        // Requeues whose checkpoint grace has run out come first: they were
        // decided in an earlier plan.
        for (size_t i = 0; i < work.size(); ++i) {
            CurtailJob& j = work[i];
            if (j.signalled_at > 0 && now - j.signalled_at >= p.checkpoint_grace_sec) {
                gone[i] = 1;
                CurtailAction a;
                a.step = CurtailStep::Requeue;
                a.job = j.id;
                a.scope = j.curtailed_for;
                a.cause = "checkpoint-grace";
                a.delta_kw = -job_gpus(j) * curtail_job_w_gpu(p, j) / 1000.0;
                a.reason = "requeued " + std::to_string(now - j.signalled_at) + " s after its checkpoint signal";
                plan.actions.push_back(a);
            }
        }

        for (Scope& sc : scopes) {
            // Act when a scope is over its budget; then bring it to the
            // target (the budget less the margin). Between the two nothing
            // happens, so meter noise never caps and lifts in turn.
            double d = draw(sc);
            if (d <= sc.out.budget_kw)
                continue;
            plan.over = true;
            const std::string reason = why(sc, d);
            const std::string cause = cause_of(sc);
            // 1. caps, water-filled to one per-GPU level.
            std::vector<size_t> cand;
            for (size_t i = 0; i < work.size(); ++i) {
                const CurtailJob& j = work[i];
                if (!j.suspended && j.signalled_at == 0 && !j.cap_unavailable && gpus_in(sc, j) > 0 &&
                    may_touch(p, j, CurtailLevel::Cap) &&
                    curtail_job_w_gpu(p, j) > floor_w(p, j))
                    cand.push_back(i);
            }
            const double excess = d - sc.out.target_kw;
            auto saved = [&](double level) {
                double kw = 0;
                for (size_t i : cand) {
                    const double cur = curtail_job_w_gpu(p, work[i]);
                    const double to = std::max(level, floor_w(p, work[i]));
                    if (cur > to)
                        kw += gpus_in(sc, work[i]) * (cur - to) / 1000.0;
                }
                return kw;
            };
            if (!cand.empty()) {
                double lo = 0, hi = 0;
                for (size_t i : cand)
                    hi = std::max(hi, curtail_job_w_gpu(p, work[i]));
                double level = 0;
                if (saved(0) > excess) {
                    // The highest level that still saves enough.
                    for (int it = 0; it < 60; ++it) {
                        const double mid = (lo + hi) / 2;
                        (saved(mid) >= excess ? lo : hi) = mid;
                    }
                    level = std::floor(lo);
                }
                for (size_t i : cand) {
                    CurtailJob& j = work[i];
                    const double cur = curtail_job_w_gpu(p, j);
                    const double to = std::floor(std::max(level, floor_w(p, j)));
                    if (cur - to < 1)
                        continue;
                    CurtailAction a;
                    a.step = CurtailStep::Cap;
                    a.job = j.id;
                    a.cap_w = to;
                    a.delta_kw = -job_gpus(j) * (cur - to) / 1000.0;
                    a.scope = sc.out.name;
                    a.cause = cause;
                    a.reason = reason + "; GPUs capped to " + watts(to) + " W";
                    apply_curtail_action(j, a, state, p, now);
                    plan.actions.push_back(a);
                }
                d = draw(sc);
            }
            // 2. suspend (or signal for a requeue) until under the target.
            while (d > sc.out.target_kw) {
                const double left = d - sc.out.target_kw;
                // Jobs whose caps could not be applied come first: m2g cannot
                // shape their power any other way.
                bool uncappable = false;
                for (const CurtailJob& j : work)
                    uncappable = uncappable || (j.cap_unavailable && !j.suspended && j.signalled_at == 0 &&
                                                gpus_in(sc, j) > 0 && may_touch(p, j, CurtailLevel::Suspend));
                int best = -1, biggest = -1;
                double best_kw = 0, big_kw = 0;
                for (size_t i = 0; i < work.size(); ++i) {
                    const CurtailJob& j = work[i];
                    const int g = gpus_in(sc, j);
                    if (j.suspended || j.signalled_at > 0 || g == 0 || !may_touch(p, j, CurtailLevel::Suspend) ||
                        (uncappable && !j.cap_unavailable))
                        continue;
                    const double kw = g * (curtail_job_w_gpu(p, j) - std::min(p.idle_power_w_per_gpu,
                                                                              uncapped_w(p, j))) / 1000.0;
                    if (kw <= 0)
                        continue;
                    auto newer = [&](int other) { return j.start_time > work[other].start_time; };
                    if (kw >= left && (best < 0 || kw < best_kw || (kw == best_kw && newer(best)))) {
                        best = static_cast<int>(i);
                        best_kw = kw;
                    }
                    if (biggest < 0 || kw > big_kw || (kw == big_kw && newer(biggest))) {
                        biggest = static_cast<int>(i);
                        big_kw = kw;
                    }
                }
                const int pick = best >= 0 ? best : biggest;
                if (pick < 0) {
                    plan.short_of_target = true;
                    break;
                }
                CurtailJob& j = work[pick];
                CurtailAction a;
                const bool requeue = curtail_level(p, j.intent) == CurtailLevel::Requeue && j.checkpoint_signal > 0;
                a.step = requeue ? CurtailStep::Signal : CurtailStep::Suspend;
                a.job = j.id;
                a.scope = sc.out.name;
                a.cause = cause;
                a.delta_kw = -job_gpus(j) * (curtail_job_w_gpu(p, j) -
                                             std::min(p.idle_power_w_per_gpu, uncapped_w(p, j))) / 1000.0;
                a.reason = reason + (requeue ? "; checkpoint signal, requeue in " +
                                                   std::to_string(p.checkpoint_grace_sec) + " s"
                                             : std::string("; suspended"));
                apply_curtail_action(j, a, state, p, now);
                plan.actions.push_back(a);
                d = draw(sc);
            }
        }
        for (Scope& sc : scopes)
            sc.out.after_kw = draw(sc);
        if (plan.over)
            state.last_restore = 0;  // the next restore ramps from when it can start

        // Restore, only when nothing is over, and never on a stale or
        // missing feed while an event of its last snapshot lasts: the
        // jobs' estimates are not a meter reading.
        const bool blind = v.failsafe && !active_events(v.snap.get(), now).empty();
        if (!plan.over && blind)
            plan.held_back = true;
        if (!plan.over && !blind) {
            std::vector<size_t> back;
            for (size_t i = 0; i < work.size(); ++i)
                if ((work[i].suspended || work[i].cap_w > 0) && work[i].signalled_at == 0)
                    back.push_back(i);
            // Suspended jobs first, then caps; newest curtailment first.
            std::sort(back.begin(), back.end(), [&](size_t a, size_t b) {
                if (work[a].suspended != work[b].suspended)
                    return work[a].suspended;
                return work[a].order > work[b].order;
            });
            bool waiting_for_ramp = false;  // the next step waits for RampRateKWPerMin alone
            double allowance = -1;  // kW; -1: no ramp limit
            if (p.ramp_rate_kw_per_min > 0 && !back.empty()) {
                // The ramp accrues from the last restore step (at most a
                // minute's worth); the first time there is something to give
                // back, from one interval ago, so that a step larger than
                // one interval's ramp still comes after enough passes.
                if (state.last_restore <= 0)
                    state.last_restore = now - p.curtail_interval_sec;
                allowance = p.ramp_rate_kw_per_min * std::clamp<int64_t>(now - state.last_restore, 1, 60) / 60.0;
            }
            for (size_t i : back) {
                CurtailJob& j = work[i];
                const double cur = curtail_job_w_gpu(p, j);
                // What this step may give back: the room under every scope's
                // target (so that it does not go over again) and the ramp.
                double room = allowance < 0 ? 1e18 : allowance - plan.restore_kw;
                std::string tight;
                for (Scope& sc : scopes) {
                    const int g = gpus_in(sc, j);
                    if (g == 0)
                        continue;
                    const double line = sc.out.target_kw;
                    const double r = (line - draw(sc)) * job_gpus(j) / g;  // whole-job kW this scope allows
                    if (r < room) {
                        room = r;
                        tight = sc.out.name;
                    }
                }
                CurtailAction a;
                a.job = j.id;
                a.scope = j.curtailed_for;
                a.cause = "restore";
                if (j.suspended) {
                    CurtailJob resumed = j;
                    resumed.suspended = false;
                    const double need = job_gpus(j) * (curtail_job_w_gpu(p, resumed) - cur) / 1000.0;
                    if (need > room) {
                        waiting_for_ramp = tight.empty();
                        break;  // strict reverse order: nothing after it comes back first
                    }
                    a.step = CurtailStep::Resume;
                    a.cap_w = j.cap_w;
                    a.delta_kw = need;
                    a.reason = "resumed: power is back under budget";
                } else {
                    const double full = uncapped_w(p, j);
                    const double need = job_gpus(j) * (full - cur) / 1000.0;
                    if (need <= room) {
                        a.step = CurtailStep::Uncap;
                        a.cap_w = 0;
                        a.delta_kw = need;
                        a.reason = "cap lifted: power is back under budget";
                    } else {
                        const double up = std::floor(room * 1000.0 / std::max(1, job_gpus(j)));
                        if (up < 10) {
                            waiting_for_ramp = tight.empty();
                            break;
                        }
                        a.step = CurtailStep::Uncap;
                        a.cap_w = cur + up;
                        a.delta_kw = job_gpus(j) * up / 1000.0;
                        a.reason = "cap raised to " + watts(a.cap_w) + " W (" +
                                   (tight.empty() ? std::string("RampRateKWPerMin") : "room under " + tight) + ")";
                    }
                }
                apply_curtail_action(j, a, state, p, now);
                plan.actions.push_back(a);
                plan.restore_kw += a.delta_kw;
                plan.restoring = true;
                if (a.step == CurtailStep::Uncap && a.cap_w > 0)
                    break;  // partly raised: the rest waits for the next plan
            }
            // The ramp accrues only while it is what holds the next step
            // back: time spent with no room under a target (or nothing to
            // give back) must not come out later as one burst.
            if (plan.restoring)
                state.last_restore = now;
            else if (!waiting_for_ramp)
                state.last_restore = back.empty() ? 0 : now;
            for (Scope& sc : scopes)
                sc.out.after_kw = draw(sc);
        }

        int caps = 0, stops = 0, back_n = 0;
        for (const CurtailAction& a : plan.actions) {
            if (a.step == CurtailStep::Cap)
                ++caps;
            else if (a.step == CurtailStep::Suspend || a.step == CurtailStep::Signal || a.step == CurtailStep::Requeue)
                ++stops;
            else
                ++back_n;
        }
        for (Scope& sc : scopes)
            plan.scopes.push_back(sc.out);
        if (plan.actions.empty())
            plan.summary = plan.over       ? "over budget, nothing m2g may act on"
                           : plan.held_back ? "signals feed " + std::string(to_string(v.state)) +
                                                  " during an event: nothing is given back until it is fresh"
                                            : "every scope under its target";
        else
            plan.summary = std::to_string(caps) + " cap(s), " + std::to_string(stops) + " suspend/requeue step(s), " +
                           std::to_string(back_n) + " restore step(s)";
        if (plan.short_of_target)
            plan.summary += "; still over target after every allowed action";
    } catch (const std::exception& e) {
        plan = CurtailPlan{};
        plan.summary = std::string("m2g: internal error: ") + e.what();
    }
    return plan;
}

void apply_curtail_action(CurtailJob& j, const CurtailAction& a, CurtailState& state, const AdmissionPolicy& p,
                          int64_t now)
{
    // Several steps in one second (a cap, then a suspension): the draw
    // before the first is what the feed may still show.
    if (j.changed_at != now || j.w_gpu_before <= 0)
        j.w_gpu_before = curtail_job_w_gpu(p, j);
    j.changed_at = now;
    switch (a.step) {
    case CurtailStep::Cap:
        j.cap_w = a.cap_w;
        break;
    case CurtailStep::Suspend:
        j.suspended = true;
        break;
    case CurtailStep::Signal:
        j.signalled_at = now;
        break;
    case CurtailStep::Requeue:
        j.signalled_at = 0;
        j.suspended = false;
        j.cap_w = 0;
        break;
    case CurtailStep::Resume:
        j.suspended = false;
        break;
    case CurtailStep::Uncap:
        j.cap_w = a.cap_w;
        break;
    }
    if (a.step == CurtailStep::Cap || a.step == CurtailStep::Suspend || a.step == CurtailStep::Signal) {
        if (j.curtailed_for.empty())
            j.curtailed_for = a.scope;
        j.order = state.next_order++;  // the last action on it: restore undoes the newest first
    } else if (!j.suspended && j.cap_w <= 0 && j.signalled_at == 0) {
        j.curtailed_for.clear();
        j.order = 0;
    }
}

std::string curtail_annotation(const CurtailAction& a, int64_t now)
{
    std::string s = to_string(a.step);
    if ((a.step == CurtailStep::Cap || a.step == CurtailStep::Uncap || a.step == CurtailStep::Resume) && a.cap_w > 0)
        s += " w_gpu=" + watts(a.cap_w);
    if (!a.cause.empty())
        s += " cause=" + a.cause;
    if (!a.scope.empty())
        s += " scope=" + a.scope;
    s += " at=" + format_utc(now);
    return s;
}

}  // namespace m2g
