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
    const CurtailmentEvent* ahead = nullptr;  // the budget is this announced event's, not yet started
    std::vector<uint8_t> member;  // per model node
    double base_kw = 0;           // draw as judged before this plan
};

// GPUs of `j` inside `s`.
int gpus_in(const Scope& s, const CurtailJob& j)
{
    if (j.waiting_gpus > 0)  // not placed yet: the site's
        return s.out.scope == EventScope::Site ? j.waiting_gpus : 0;
    int n = 0;
    for (int node : j.nodes)
        if (node >= 0 && node < static_cast<int>(s.member.size()) && s.member[node])
            ++n;
    return n * std::max(0, j.gpus_per_node);
}

int job_gpus(const CurtailJob& j)
{
    if (j.waiting_gpus > 0)
        return j.waiting_gpus;
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

// What the planner counts for a job no reading has seen yet while an event
// holds its scope: its metered or stated draw where it has one, else the
// highest estimate of any class. Its draw is unknown until the meter shows
// it, and a class's estimate is a percentile: in the simulator an inference
// job estimated at 101 W per GPU drew 397 W, and its start put the site
// 7 kW over the event's budget until the reading caught up. Outside events
// the class's estimate stands, as admission judged the job by it.
double unmetered_w_gpu(const AdmissionPolicy& p, const CurtailJob& j)
{
    const double w = curtail_job_w_gpu(p, j);
    if (j.suspended || j.w_gpu > 0)
        return w;
    const double hi = std::max(w, start_w_gpu(p, j.intent, true));
    return j.cap_w > 0 ? std::min(hi, j.cap_w) : hi;
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
        // An announced event's budget holds CurtailLeadSec before it starts,
        // so that the site is under it when it does: with a meter that lags
        // and estimates that miss, shedding takes a few passes.
        const CurtailmentEvent* ahead = nullptr;
        const double budget = p.curtail_lead_sec > 0
                                  ? lowest_budget_kw(m, s, scope, index, now, now + p.curtail_lead_sec + 1, &ahead)
                                  : effective_budget_kw(m, s, scope, index, now);
        if (budget < 0)
            return;
        Scope sc;
        sc.ahead = ahead;
        sc.out.scope = scope;
        sc.out.index = index;
        sc.out.name = name;
        sc.out.budget_kw = budget;
        sc.out.target_kw = budget * (1.0 - p.curtail_margin_pct / 100.0);
        sc.out.cause = ahead ? ahead->id : event_on(s, scope, index, now);
        sc.member = std::move(member);
        // A stale or missing feed's draw is not trusted: the jobs' estimates stand in.
        const double fd = v.failsafe ? -1 : feed_draw(s, scope, index);
        double est = 0, lag = 0;
        const double unused_w = p.unused_gpu_w >= 0 ? p.unused_gpu_w : p.idle_power_w_per_gpu;
        for (const CurtailJob& j : jobs) {
            const int g = gpus_in(sc, j);
            if (g == 0)
                continue;
            const double w = curtail_job_w_gpu(p, j);
            est += g * w / 1000.0;
            // A job that started in the reading's own second may be in it
            // or not: counted as in it, since counting it twice suspends
            // work for nothing and one pass of too little is the lesser
            // error (the meter shows it by the next reading). m2g's own
            // changes in that second are counted as not in it
            // (curtail_w_gpu_seen): the draw follows a cap or a suspension
            // only after it is applied.
            if (s) {
                const bool unseen = j.waiting_gpus > 0 || (j.start_time > 0 && j.start_time > s->generated_at);
                const double wn = unseen && !sc.out.cause.empty() ? unmetered_w_gpu(p, j) : w;
                lag += g * (wn - curtail_w_gpu_seen(j, s->generated_at, wn, unused_w)) / 1000.0;
            }
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
    if (j.waiting_gpus > 0)  // not running: nothing to act on
        return false;
    return static_cast<int>(curtail_level(p, j.intent)) >= static_cast<int>(at_least);
}

}  // namespace

double own_w_gpu(const AdmissionPolicy& p, const JobIntent& annotated)
{
    if (annotated.power_w_per_gpu <= 0)
        return 0;
    JobIntent cls;
    cls.workload_class = annotated.workload_class;
    return whole_watts(power_w_per_gpu(p, cls)) == whole_watts(annotated.power_w_per_gpu) ? 0
                                                                                          : annotated.power_w_per_gpu;
}

double start_w_gpu(const AdmissionPolicy& p, const JobIntent& intent, bool event)
{
    const double w = power_w_per_gpu(p, intent);
    if (!event || intent.power_w_per_gpu > 0)
        return w;
    double hi = w;
    for (int c = 0; c <= static_cast<int>(WorkloadClass::Agentic); ++c) {
        JobIntent any;
        any.workload_class = static_cast<WorkloadClass>(c);
        hi = std::max(hi, power_w_per_gpu(p, any));
    }
    return hi;
}

double curtail_job_w_gpu(const AdmissionPolicy& p, const CurtailJob& j)
{
    if (j.suspended)
        return std::min(p.idle_power_w_per_gpu, uncapped_w(p, j));
    const double w = uncapped_w(p, j);
    return j.cap_w > 0 ? std::min(w, j.cap_w) : w;
}

double curtail_w_gpu_seen(const CurtailJob& j, int64_t t, double w_now, double idle_w)
{
    if (j.waiting_gpus > 0 || (j.start_time > 0 && j.start_time > t))
        return std::min(idle_w, w_now);  // it started after the reading (or waits): its GPUs were idle in it
    for (const CurtailChange& c : j.changes)
        if (c.at >= t)
            return c.w_gpu_before > 0 ? c.w_gpu_before : w_now;
    return w_now;
}

int64_t curtail_last_change(const CurtailJob& j)
{
    return j.changes.empty() ? 0 : j.changes.back().at;
}

CurtailLevel curtail_level(const AdmissionPolicy& p, const JobIntent& intent)
{
    const ClassPolicy& cp = p.classes[class_index(intent.workload_class)];
    // A job that may not wait is left alone unless its class opted in.
    if (!is_deferrable(p, intent) && !cp.curtail_set)
        return CurtailLevel::None;
    return cp.curtail;
}

namespace {

// "site over budget during dr-a: 210.0 kW drawn, target 190.0 kW (budget 200.0 kW)"
std::string over_budget(const Scope& sc, double d)
{
    std::string w = (sc.out.scope == EventScope::Site ? std::string("site") : sc.out.name) + " over budget";
    if (sc.ahead)
        w += " for " + sc.out.cause + " (from " + format_utc(sc.ahead->start) + ")";
    else if (!sc.out.cause.empty())
        w += " during " + sc.out.cause;
    return w + ": " + kw1(d) + " kW drawn, target " + kw1(sc.out.target_kw) + " kW (budget " +
           kw1(sc.out.budget_kw) + " kW)";
}

std::string cause_of(const Scope& sc)
{
    return sc.out.cause.empty() ? "power:" + sc.out.name : sc.out.cause;
}

// One plan: the scopes, the planner's working copy of the jobs, and the
// actions so far.
class Planner {
  public:
    Planner(const Model& m, const SignalsView& v, const std::vector<CurtailJob>& jobs, CurtailState& state,
            int64_t now)
        : p_(m.admission), v_(v), state_(state), now_(now), scopes_(build_scopes(m, v, jobs, now)), work_(jobs),
          w0_(jobs.size()), gone_(jobs.size(), 0)
    {
        for (size_t i = 0; i < jobs.size(); ++i)
            w0_[i] = curtail_job_w_gpu(p_, jobs[i]);
    }

    CurtailPlan run()
    {
        requeue_after_grace();
        for (Scope& sc : scopes_)
            bring_under_budget(sc);
        for (Scope& sc : scopes_)
            sc.out.after_kw = draw(sc);
        if (plan_.over)
            state_.last_restore = 0;  // the next restore ramps from when it can start

        // Restore, only when nothing is over, and never on a stale or
        // missing feed while an event of its last snapshot lasts: the
        // jobs' estimates are not a meter reading.
        const bool blind = v_.failsafe && !active_events(v_.snap.get(), now_).empty();
        if (!plan_.over && blind)
            plan_.held_back = true;
        // Nor before the meter shows m2g's last changes: the draw judged
        // until then rests on the estimates of what they did (a class's
        // estimate can be far from the job's draw), and a restore on it
        // can overshoot and be curtailed again at every pass.
        if (!plan_.over && !blind && unconfirmed())
            plan_.awaiting_meter = true;
        else if (!plan_.over && !blind)
            restore();
        summarize();
        return std::move(plan_);
    }

  private:
    // Some change of m2g's is newer than the feed's reading (the draw of a
    // scope comes from the feed, not from the estimates alone).
    bool unconfirmed() const
    {
        const Signals* s = v_.snap.get();
        if (!s)
            return false;
        bool from_feed = false;
        for (const Scope& sc : scopes_)
            from_feed = from_feed || sc.out.draw_from_feed;
        if (!from_feed)
            return false;
        for (const CurtailJob& j : work_)
            if (curtail_last_change(j) >= s->generated_at)
                return true;
        return false;
    }

    // A scope's draw after the actions planned so far.
    double draw(const Scope& sc) const
    {
        double d = sc.base_kw;
        for (size_t i = 0; i < work_.size(); ++i) {
            const int g = gpus_in(sc, work_[i]);
            if (g)
                d += g * ((gone_[i] ? 0.0 : curtail_job_w_gpu(p_, work_[i])) - w0_[i]) / 1000.0;
        }
        return d;
    }

    void act(CurtailJob& j, const CurtailAction& a)
    {
        apply_curtail_action(j, a, state_, p_, now_);
        plan_.actions.push_back(a);
    }

    // Requeues whose checkpoint grace has run out come first: they were
    // decided in an earlier plan.
    void requeue_after_grace()
    {
        for (size_t i = 0; i < work_.size(); ++i) {
            CurtailJob& j = work_[i];
            if (j.signalled_at > 0 && now_ - j.signalled_at >= p_.checkpoint_grace_sec) {
                gone_[i] = 1;
                CurtailAction a;
                a.step = CurtailStep::Requeue;
                a.job = j.id;
                a.scope = j.curtailed_for;
                a.cause = "checkpoint-grace";
                a.delta_kw = -job_gpus(j) * curtail_job_w_gpu(p_, j) / 1000.0;
                a.reason = "requeued " + std::to_string(now_ - j.signalled_at) + " s after its checkpoint signal";
                plan_.actions.push_back(a);
            }
        }
    }

    void bring_under_budget(Scope& sc)
    {
        // Act when a scope is over its budget; then bring it to the
        // target (the budget less the margin). Between the two nothing
        // happens, so meter noise never caps and lifts in turn.
        double d = draw(sc);
        if (d <= sc.out.budget_kw)
            return;
        plan_.over = true;
        const std::string reason = over_budget(sc, d);
        const std::string cause = cause_of(sc);
        // 1. caps, water-filled to one per-GPU level.
        d = cap(sc, d, reason, cause);
        // 2. suspend (or signal for a requeue) until under the target.
        stop_until_under_target(sc, d, reason, cause);
    }

    std::vector<size_t> cap_candidates(const Scope& sc) const
    {
        std::vector<size_t> cand;
        for (size_t i = 0; i < work_.size(); ++i) {
            const CurtailJob& j = work_[i];
            if (!j.suspended && j.signalled_at == 0 && !j.cap_unavailable && gpus_in(sc, j) > 0 &&
                may_touch(p_, j, CurtailLevel::Cap) &&
                curtail_job_w_gpu(p_, j) > floor_w(p_, j))
                cand.push_back(i);
        }
        return cand;
    }

    // kW the candidates would save capped to `level` W per GPU.
    double saved(const Scope& sc, const std::vector<size_t>& cand, double level) const
    {
        double kw = 0;
        for (size_t i : cand) {
            const double cur = curtail_job_w_gpu(p_, work_[i]);
            const double to = std::max(level, floor_w(p_, work_[i]));
            if (cur > to)
                kw += gpus_in(sc, work_[i]) * (cur - to) / 1000.0;
        }
        return kw;
    }

    double water_level(const Scope& sc, const std::vector<size_t>& cand, double excess) const
    {
        double lo = 0, hi = 0;
        for (size_t i : cand)
            hi = std::max(hi, curtail_job_w_gpu(p_, work_[i]));
        double level = 0;
        if (saved(sc, cand, 0) > excess) {
            // The highest level that still saves enough.
            for (int it = 0; it < 60; ++it) {
                const double mid = (lo + hi) / 2;
                (saved(sc, cand, mid) >= excess ? lo : hi) = mid;
            }
            level = std::floor(lo);
        }
        return level;
    }

    // Caps the scope's candidates; returns its draw after.
    double cap(const Scope& sc, double d, const std::string& reason, const std::string& cause)
    {
        const std::vector<size_t> cand = cap_candidates(sc);
        const double excess = d - sc.out.target_kw;
        if (cand.empty())
            return d;
        const double level = water_level(sc, cand, excess);
        for (size_t i : cand) {
            CurtailJob& j = work_[i];
            const double cur = curtail_job_w_gpu(p_, j);
            const double to = std::floor(std::max(level, floor_w(p_, j)));
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
            act(j, a);
        }
        return draw(sc);
    }

    // The job to suspend next in `sc`, `left` kW over its target: the
    // smallest that is enough, else the biggest; -1 none.
    int pick_to_stop(const Scope& sc, double left) const
    {
        // Jobs whose caps could not be applied come first: m2g cannot
        // shape their power any other way.
        bool uncappable = false;
        for (const CurtailJob& j : work_)
            uncappable = uncappable || (j.cap_unavailable && !j.suspended && j.signalled_at == 0 &&
                                        gpus_in(sc, j) > 0 && may_touch(p_, j, CurtailLevel::Suspend));
        int best = -1, biggest = -1;
        double best_kw = 0, big_kw = 0;
        for (size_t i = 0; i < work_.size(); ++i) {
            const CurtailJob& j = work_[i];
            const int g = gpus_in(sc, j);
            if (j.suspended || j.signalled_at > 0 || g == 0 || !may_touch(p_, j, CurtailLevel::Suspend) ||
                (uncappable && !j.cap_unavailable))
                continue;
            const double kw = g * (curtail_job_w_gpu(p_, j) - std::min(p_.idle_power_w_per_gpu,
                                                                       uncapped_w(p_, j))) / 1000.0;
            if (kw <= 0)
                continue;
            auto newer = [&](int other) { return j.start_time > work_[other].start_time; };
            if (kw >= left && (best < 0 || kw < best_kw || (kw == best_kw && newer(best)))) {
                best = static_cast<int>(i);
                best_kw = kw;
            }
            if (biggest < 0 || kw > big_kw || (kw == big_kw && newer(biggest))) {
                biggest = static_cast<int>(i);
                big_kw = kw;
            }
        }
        return best >= 0 ? best : biggest;
    }

    void stop_until_under_target(const Scope& sc, double d, const std::string& reason, const std::string& cause)
    {
        while (d > sc.out.target_kw) {
            const int pick = pick_to_stop(sc, d - sc.out.target_kw);
            if (pick < 0) {
                plan_.short_of_target = true;
                break;
            }
            CurtailJob& j = work_[pick];
            CurtailAction a;
            const bool requeue = curtail_level(p_, j.intent) == CurtailLevel::Requeue && j.checkpoint_signal > 0;
            a.step = requeue ? CurtailStep::Signal : CurtailStep::Suspend;
            a.job = j.id;
            a.scope = sc.out.name;
            a.cause = cause;
            a.delta_kw = -job_gpus(j) * (curtail_job_w_gpu(p_, j) -
                                         std::min(p_.idle_power_w_per_gpu, uncapped_w(p_, j))) / 1000.0;
            a.reason = reason + (requeue ? "; checkpoint signal, requeue in " +
                                               std::to_string(p_.checkpoint_grace_sec) + " s"
                                         : std::string("; suspended"));
            act(j, a);
            d = draw(sc);
        }
    }

    // The curtailed jobs to give back to, in the order they come back.
    std::vector<size_t> restore_order() const
    {
        std::vector<size_t> back;
        for (size_t i = 0; i < work_.size(); ++i)
            if ((work_[i].suspended || work_[i].cap_w > 0) && work_[i].signalled_at == 0)
                back.push_back(i);
        // Suspended jobs first, then caps; newest curtailment first.
        std::sort(back.begin(), back.end(), [&](size_t a, size_t b) {
            if (work_[a].suspended != work_[b].suspended)
                return work_[a].suspended;
            return work_[a].order > work_[b].order;
        });
        return back;
    }

    // kW this pass may give back by RampRateKWPerMin; -1: no ramp limit.
    double ramp_allowance(const std::vector<size_t>& back)
    {
        double allowance = -1;
        if (p_.ramp_rate_kw_per_min > 0 && !back.empty()) {
            // The ramp accrues from the last restore step (at most a
            // minute's worth); the first time there is something to give
            // back, from one interval ago, so that a step larger than
            // one interval's ramp still comes after enough passes.
            if (state_.last_restore <= 0)
                state_.last_restore = now_ - p_.curtail_interval_sec;
            allowance = p_.ramp_rate_kw_per_min * std::clamp<int64_t>(now_ - state_.last_restore, 1, 60) / 60.0;
        }
        return allowance;
    }

    // What this step may give back: the room under every scope's
    // target (so that it does not go over again) and the ramp. `tight`:
    // the scope that allows least, "" when the ramp does.
    double room_for(const CurtailJob& j, double allowance, std::string& tight) const
    {
        double room = allowance < 0 ? 1e18 : allowance - plan_.restore_kw;
        for (const Scope& sc : scopes_) {
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
        return room;
    }

    // One restore step for `j`; false when nothing after it may come back
    // in this plan.
    bool give_back(CurtailJob& j, double allowance, bool& waiting_for_ramp)
    {
        const double cur = curtail_job_w_gpu(p_, j);
        std::string tight;
        const double room = room_for(j, allowance, tight);
        CurtailAction a;
        a.job = j.id;
        a.scope = j.curtailed_for;
        a.cause = "restore";
        if (j.suspended) {
            CurtailJob resumed = j;
            resumed.suspended = false;
            const double need = job_gpus(j) * (curtail_job_w_gpu(p_, resumed) - cur) / 1000.0;
            if (need > room) {
                waiting_for_ramp = tight.empty();
                return false;  // strict reverse order: nothing after it comes back first
            }
            a.step = CurtailStep::Resume;
            a.cap_w = j.cap_w;
            a.delta_kw = need;
            a.reason = "resumed: power is back under budget";
        } else {
            const double full = uncapped_w(p_, j);
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
                    return false;
                }
                a.step = CurtailStep::Uncap;
                a.cap_w = cur + up;
                a.delta_kw = job_gpus(j) * up / 1000.0;
                a.reason = "cap raised to " + watts(a.cap_w) + " W (" +
                           (tight.empty() ? std::string("RampRateKWPerMin") : "room under " + tight) + ")";
            }
        }
        act(j, a);
        plan_.restore_kw += a.delta_kw;
        plan_.restoring = true;
        return !(a.step == CurtailStep::Uncap && a.cap_w > 0);  // partly raised: the rest waits for the next plan
    }

    void restore()
    {
        const std::vector<size_t> back = restore_order();
        bool waiting_for_ramp = false;  // the next step waits for RampRateKWPerMin alone
        const double allowance = ramp_allowance(back);  // kW; -1: no ramp limit
        for (size_t i : back)
            if (!give_back(work_[i], allowance, waiting_for_ramp))
                break;
        // The ramp accrues only while it is what holds the next step
        // back: time spent with no room under a target (or nothing to
        // give back) must not come out later as one burst.
        if (plan_.restoring)
            state_.last_restore = now_;
        else if (!waiting_for_ramp)
            state_.last_restore = back.empty() ? 0 : now_;
        for (Scope& sc : scopes_)
            sc.out.after_kw = draw(sc);
    }

    void summarize()
    {
        int caps = 0, stops = 0, back_n = 0;
        for (const CurtailAction& a : plan_.actions) {
            if (a.step == CurtailStep::Cap)
                ++caps;
            else if (a.step == CurtailStep::Suspend || a.step == CurtailStep::Signal || a.step == CurtailStep::Requeue)
                ++stops;
            else
                ++back_n;
        }
        for (Scope& sc : scopes_)
            plan_.scopes.push_back(sc.out);
        if (plan_.actions.empty())
            plan_.summary = plan_.over       ? "over budget, nothing m2g may act on"
                            : plan_.held_back ? "signals feed " + std::string(to_string(v_.state)) +
                                                    " during an event: nothing is given back until it is fresh"
                            : plan_.awaiting_meter ? "every scope under its target; nothing is given back until the "
                                                     "feed shows m2g's last changes"
                                                   : "every scope under its target";
        else
            plan_.summary = std::to_string(caps) + " cap(s), " + std::to_string(stops) +
                            " suspend/requeue step(s), " + std::to_string(back_n) + " restore step(s)";
        if (plan_.short_of_target)
            plan_.summary += "; still over target after every allowed action";
    }

    const AdmissionPolicy& p_;
    const SignalsView& v_;
    CurtailState& state_;
    const int64_t now_;
    std::vector<Scope> scopes_;
    // The planner's working copy: per-GPU draw and state after the
    // actions planned so far.
    std::vector<CurtailJob> work_;
    std::vector<double> w0_;
    // Jobs this plan requeues: they leave their GPUs (draw 0 from here on).
    std::vector<uint8_t> gone_;
    CurtailPlan plan_;
};

}  // namespace

CurtailPlan plan_curtailment(const Model& m, const SignalsView& v, const std::vector<CurtailJob>& jobs,
                             CurtailState& state, int64_t now)
{
    CurtailPlan plan;
    try {
        plan = Planner(m, v, jobs, state, now).run();
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
    std::vector<CurtailChange>& ch = j.changes;
    ch.erase(ch.begin(), std::find_if(ch.begin(), ch.end(), [now](const CurtailChange& c) {
                 return c.at >= now - kCurtailChangeKeepSec;
             }));
    if (ch.empty() || ch.back().at != now || ch.back().w_gpu_before <= 0)
        ch.push_back({now, curtail_job_w_gpu(p, j)});
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

CurtailAnnotation curtail_annotation(const CurtailAction& a, int64_t now, bool monitor)
{
    CurtailAnnotation c;
    c.monitor = monitor;
    c.step = a.step;
    if (a.step == CurtailStep::Cap || a.step == CurtailStep::Uncap || a.step == CurtailStep::Resume)
        c.w_gpu = whole_watts(a.cap_w);
    c.cause = a.cause;
    c.scope = a.scope;
    c.at = now;
    return c;
}

}  // namespace m2g
