// m2g tools: power in the simulator (see simulator.hpp and doc/simulator.md):
// the feed m2g reads, job_submit/m2g's admission on it, m2g-curtaild's
// loop (CurtailTick) and its actions, and the budgets measured.
#include "tools/sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "core/job/annotation.hpp"

namespace m2g {
namespace sim {

namespace {

// The draw of each row (FaultDomain) from the nodes' draw.
void set_row_draw(const Model& m, const std::vector<double>& node_kw, Signals& s)
{
    s.rows.resize(m.fault_domains.size());
    for (size_t f = 0; f < m.fault_domains.size(); ++f) {
        double kw = 0;
        for (int n : m.fault_domains[f].nodes)
            kw += node_kw[n];
        s.rows[f].draw_kw = kw;
    }
}

// A fresh feed holding `s`, as the plugins would read it.
SignalsView fresh_view(std::shared_ptr<Signals> s)
{
    SignalsView v;
    v.snap = std::move(s);
    v.state = FeedState::Fresh;
    v.age_s = 0;
    return v;
}

}  // namespace

// The timeline as m2g's feed shows it at `now`: with event_notice_s,
// each event only from its announcement (event_notice_s before it
// starts). Budgets are measured against the whole timeline.
const Signals& Simulator::timeline_at(double now)
{
    if (!tl)
        return no_signals;
    if (opts.event_notice_s < 0)
        return *tl;
    const int64_t e = epoch(now);
    std::vector<uint8_t> mask(tl->events.size());
    for (size_t i = 0; i < tl->events.size(); ++i)
        mask[i] = e >= tl->events[i].start - opts.event_notice_s;
    if (!shown_valid || mask != shown_mask) {
        shown = *tl;
        shown.events.clear();
        for (size_t i = 0; i < tl->events.size(); ++i)
            if (mask[i])
                shown.events.push_back(tl->events[i]);
        shown_mask = std::move(mask);
        shown_valid = true;
    }
    return shown;
}

// Jobs started in the second the next snapshot is generated in: the
// BMS has not reported their draw yet; select/m2g books it
// (job_started) until a later snapshot.
SignalsView Simulator::view_at(double now)
{
    // With a lagging meter the plugins read the same reading m2g-curtaild
    // does (one feed file): the draw of meter_lag_s ago; select/m2g adds
    // the starts it booked since (started_kw), and sees room m2g-curtaild
    // made only once the reading shows it.
    if (opts.meter_lag_s > 0)
        return curtail_view(now);
    // The feed as the plugins would see it now: the timeline's budgets,
    // events, maintenance and health, and the draw the BMS would report.
    const int64_t e = epoch(now);
    snap = std::make_shared<Signals>(timeline_at(now));
    snap->generated_at = e;
    reported_kw = node_kw;
    snap->site.draw_kw = site_kw;
    snap->racks.resize(m.domains.size());
    for (size_t d = 0; d < m.domains.size(); ++d)
        snap->racks[d].draw_kw = domain_kw[d];
    recent.erase(std::remove_if(recent.begin(), recent.end(),
                                [&](int j) { return epoch(last_start[j]) < e || jobs[j].end <= now; }),
                 recent.end());
    for (int j : recent) {
        const double kw_node = jobs[j].w_gpu * jobs[j].gpus_per_node / 1000.0;
        for (int n : jobs[j].placed) {
            reported_kw[n] -= kw_node;
            if (m.nodes[n].domain != kNone)
                snap->racks[m.nodes[n].domain].draw_kw -= kw_node;
        }
        snap->site.draw_kw -= kw_node * static_cast<double>(jobs[j].placed.size());
    }
    set_row_draw(m, reported_kw, *snap);
    return fresh_view(snap);
}

void Simulator::book_power(const SimJobResult& job, double sign)
{
    const double kw_node = sign * job.w_gpu * job.gpus_per_node / 1000.0;
    for (int n : job.placed) {
        node_kw[n] += kw_node;
        if (opts.meter_lag_s > 0)
            draw_changes.push_back({clock_, n, kw_node, sign > 0});
        if (m.nodes[n].domain != kNone)
            domain_kw[m.nodes[n].domain] += kw_node;
    }
    site_kw += kw_node * static_cast<double>(job.placed.size());
}

// per-GPU draw change of a running job
void Simulator::book_w(const SimJobResult& job, double dw)
{
    const double kw_node = dw * job.gpus_per_node / 1000.0;
    for (int n : job.placed) {
        node_kw[n] += kw_node;
        if (opts.meter_lag_s > 0)
            draw_changes.push_back({clock_, n, kw_node});
        if (m.nodes[n].domain != kNone)
            domain_kw[m.nodes[n].domain] += kw_node;
    }
    site_kw += kw_node * static_cast<double>(job.placed.size());
}

void Simulator::hold(int j, int64_t begin, double now, const std::string& reason)
{
    jobs[j].deferred = true;
    jobs[j].admission = reason;
    adm_begin[j] = begin;
    events.push({std::max(now + 1, sim_time(begin)), kRelease, j});
}

// At submission: true when the job may queue now.
bool Simulator::submit(int j, double now)
{
    if (!admission_on)
        return true;
    SimJobResult& job = jobs[j];
    // The job as job_submit/m2g sees it: its class's SPANK variables, whole
    // nodes, its time limit (time_limit_of); no --begin, --deadline or account
    // in a trace.
    Submission sub;
    sub.intent = class_intent[cls_of[j]];
    sub.nodes = job.nodes;
    sub.gpus = job.gpus;
    sub.time_limit_s = time_limit_of(j);
    const int64_t e = epoch(now);
    const SubmitAnswer a = admission.submit(sub, e);
    if (a.refused()) {
        job.admission = a.decision.reason;
        ++r.admission_rejected;
        return false;
    }
    adm_text[j] = a.admin_comment ? get_annotation(*a.admin_comment, AnnotationPart::Admission) : "";
    if (a.begin_time > e) {
        hold(j, a.begin_time, now, a.decision.reason);
        return false;
    }
    return true;
}

// The release thread on pending job j (held, or queued): what it does.
ReleaseAction Simulator::release_rules(int j, double now)
{
    PendingJobFacts f;
    f.job_id = static_cast<uint32_t>(j);
    f.pending = true;
    f.admission = adm_text[j];
    f.begin_time = adm_begin[j] ? adm_begin[j] : epoch(jobs[j].eligible);
    f.request = [&, j] {
        PendingRequest q;
        q.intent = class_intent[cls_of[j]];
        q.nodes = jobs[j].nodes;
        q.gpus = jobs[j].gpus;
        q.time_limit_s = time_limit_of(j);
        return q;
    };
    const ReleaseAction a = admission.reevaluate(f, epoch(now));
    if (a.changed())
        adm_text[j] = a.admission;
    if (a.waiting())
        hold(j, a.begin_time, now, a.reason);
    return a;
}

// The release thread on a job m2g holds: released, moved, or left
// (then it is eligible once its begin time has come).
void Simulator::release_held(int j, double now)
{
    const ReleaseAction a = release_rules(j, now);
    if (a.kind == ReleaseAction::Kind::Release ||
        (a.kind == ReleaseAction::Kind::None && epoch(now) >= adm_begin[j]))
        queue_job(j, now);
}

// A release pass where the timeline changes: every job m2g holds, and
// (under pressure) every queued one, each once.
void Simulator::release_pass(double now)
{
    std::vector<int> held;
    for (size_t j = 0; j < jobs.size(); ++j)
        if (adm_begin[j])
            held.push_back(static_cast<int>(j));
    for (auto it = queue.begin(); it != queue.end();)
        it = release_rules(*it, now).waiting() ? queue.erase(it) : std::next(it);
    for (int j : held)
        release_held(j, now);
}

// Work, energy and time capped or suspended up to `t` at the rate in force.
void Simulator::advance(int j, double t)
{
    const double dt = t - rate_t[j];
    if (dt > 0) {
        work_left[j] = std::max(0.0, work_left[j] - speed[j] * dt);
        energy_ws[j] += w_now[j] * jobs[j].gpus * dt;
        if (cj[j].suspended)
            jobs[j].suspended_s += dt;
        else if (w_now[j] < jobs[j].w_gpu)
            jobs[j].capped_s += dt;
    }
    rate_t[j] = t;
}

void Simulator::set_end(int j, double end)
{
    ++running_version;
    if (in_running[j])
        running.erase(running.find({jobs[j].end, j}));
    in_running[j] = 0;
    jobs[j].end = end;
    if (std::isfinite(end)) {
        running.emplace(end, j);
        in_running[j] = 1;
        events.push({end, kEnd, j});
    }
}

// The draw and speed that j's CurtailJob implies, from `t`.
void Simulator::set_rate(int j, double t)
{
    SimJobResult& job = jobs[j];
    const double w = curtail_job_w_gpu(ap, cj[j]);
    book_w(job, w - w_now[j]);
    w_now[j] = w;
    const double was = speed[j];
    speed[j] = cj[j].suspended ? 0.0 : cap_speed(opts.cap_speed, job.w_gpu > 0 ? w / job.w_gpu : 1.0);
    if (!job.deferrable)
        nd_rate += job.gpus * (speed[j] - was);
    set_end(j, speed[j] > 0 ? t + work_left[j] / speed[j] : std::numeric_limits<double>::infinity());
}

void Simulator::drop_live(int j)
{
    const int at = live_pos[j];
    live_pos[live.back()] = at;
    live[at] = live.back();
    live.pop_back();
    live_pos[j] = -1;
}

// Curtailment. The planner's feed: the timeline as announced, with the
// simulated draw of every scope at this instant (jobs started in this
// second included: the planner counts them as in the reading), except what
// m2g's own actions changed in the snapshot's second: the planner counts
// those as not in the feed yet (and adds them itself), so the feed leaves
// them out. With a meter lag, the reading is the draw of the second
// meter_lag_s ago on the same terms: the starts in that second in it, m2g's
// own changes from its start on not.
SignalsView Simulator::curtail_view(double now)
{
    const int64_t e = epoch(now);
    auto s = std::make_shared<Signals>(timeline_at(now));
    s->generated_at = e;
    feed_kw = node_kw;
    if (opts.meter_lag_s > 0) {
        // The draw of the second meter_lag_s ago: every change booked since
        // is not in the feed (draw_changes keeps only those), except the
        // starts in that second.
        const double seen = std::floor(now - opts.meter_lag_s);
        s->generated_at = epoch(seen);
        for (const DrawChange& c : draw_changes)
            if (c.t >= seen + (c.start ? 1.0 : 0.0))
                feed_kw[c.node] -= c.kw;
    } else {
        for (int j : live)
            if (act_sec[j] >= static_cast<double>(e)) {
                const double kw_node = (w_now[j] - act_w0[j]) * jobs[j].gpus_per_node / 1000.0;
                for (int n : jobs[j].placed)
                    feed_kw[n] -= kw_node;
            }
    }
    s->site.draw_kw = 0;
    for (double kw : feed_kw)
        s->site.draw_kw += kw;
    s->racks.resize(m.domains.size());
    for (size_t d = 0; d < m.domains.size(); ++d) {
        double kw = 0;
        for (int n : m.domains[d].nodes)
            kw += feed_kw[n];
        s->racks[d].draw_kw = kw;
    }
    set_row_draw(m, feed_kw, *s);
    const int64_t age = e - s->generated_at;
    SignalsView v = fresh_view(std::move(s));
    v.age_s = age;
    return v;
}

// A requeue: the work since the last checkpoint is lost, the GPUs are
// freed, and the job is submitted again (after the feed is rebuilt).
void Simulator::requeue(int j, double t)
{
    SimJobResult& job = jobs[j];
    const double progress = attempt_work[j] - work_left[j];  // this run's work, restart included
    const double done = saved[j] + std::max(0.0, progress - attempt_overhead[j]);
    double keep = saved[j];
    if (opts.checkpoint_interval_s > 0)
        keep = std::max(keep, std::floor(done / opts.checkpoint_interval_s) * opts.checkpoint_interval_s);
    keep = std::min(keep, duration[j]);
    const double lost = std::max(0.0, progress - (keep - saved[j]));
    job.lost_gpu_s += lost * job.gpus;
    r.requeue_lost_gpu_s += lost * job.gpus;
    saved[j] = keep;
    attempt_overhead[j] = opts.restart_overhead_s;
    attempt_work[j] = opts.restart_overhead_s + (duration[j] - keep);
    drop_live(j);
    if (in_running[j])
        running.erase(running.find({job.end, j}));
    ++running_version;
    in_running[j] = 0;
    job.end = -1;
    for (int n : job.placed)
        adjust_node(n, job.gpus_per_node);
    ++version;
    book_w(job, -w_now[j]);
    w_now[j] = 0;
    if (!job.deferrable)
        nd_rate -= job.gpus * speed[j];
    ++job.requeues;
    ++inputs;
    cj[j] = CurtailJob{};
    requeued.push_back(j);
}

void Simulator::count_action(const CurtailAction& a)
{
    switch (a.step) {
    case CurtailStep::Cap:
        ++r.curtail_caps;
        break;
    case CurtailStep::Uncap:
        ++r.curtail_uncaps;
        break;
    case CurtailStep::Suspend:
        ++r.curtail_suspends;
        break;
    case CurtailStep::Resume:
        ++r.curtail_resumes;
        break;
    case CurtailStep::Signal:
        ++r.curtail_signals;
        break;
    case CurtailStep::Requeue:
        ++r.curtail_requeues;
        break;
    }
}

// An action the loop did takes effect at `t`, as the controller records
// it then, with the curtailment order the loop gave the job.
void Simulator::actuate(const CurtailAction& a, uint64_t order, double t)
{
    const int j = static_cast<int>(a.job);
    if (j < 0 || static_cast<size_t>(j) >= nj || live_pos[j] < 0)
        return;  // it ended meanwhile
    advance(j, t);
    const auto sec = static_cast<double>(epoch(t));
    if (act_sec[j] != sec) {
        act_sec[j] = sec;
        act_w0[j] = w_now[j];
    }
    CurtailState ordered;
    ordered.next_order = order;
    // The controller records the draw before the change as it judged it:
    // without a per-job meter, the class's estimate (plan_round()).
    const double metered = cj[j].w_gpu;
    if (!opts.planner_exact_power)
        cj[j].w_gpu = 0;
    apply_curtail_action(cj[j], a, ordered, ap, epoch(t));
    cj[j].w_gpu = metered;
    ++inputs;
    count_action(a);
    jobs[j].caps += a.step == CurtailStep::Cap;
    jobs[j].suspends += a.step == CurtailStep::Suspend;
    if (a.step == CurtailStep::Requeue)
        requeue(j, t);
    else
        set_rate(j, t);
}

namespace {

// m2g-curtaild's actuator in the simulator: every action is accepted
// (and takes effect actuation_delay_s later, Simulator::actuate()), except
// a cap on a job with a node without a node agent (--no-agent), which
// fails as the HTTP request would.
class SimActuator : public CurtailActuator {
  public:
    SimActuator(const Model& m, const std::vector<uint8_t>& no_agent) : m_(m), no_agent_(no_agent) {}

    ActResult cap(const CurtailJob& j, double) override { return caps(j); }
    ActResult uncap(const CurtailJob& j, double) override { return caps(j); }
    ActResult suspend(const CurtailJob&) override { return ActResult::done(); }
    ActResult resume(const CurtailJob&) override { return ActResult::done(); }
    ActResult signal(const CurtailJob&) override { return ActResult::done(); }
    ActResult requeue(const CurtailJob&) override { return ActResult::done(); }

  private:
    ActResult caps(const CurtailJob& j) const
    {
        for (int n : j.nodes)
            if (n >= 0 && static_cast<size_t>(n) < no_agent_.size() && no_agent_[n])
                return ActResult::failed("no m2g-nodeagent answers on " + m_.nodes[n].name);
        return ActResult::done();
    }

    const Model& m_;
    const std::vector<uint8_t>& no_agent_;
};

}  // namespace

// One round of the controller's loop (CurtailTick, as m2g-curtaild runs
// it): what it did takes effect actuation_delay_s later. While the last
// round's actions are still on their way the controller waits (only when
// the delay is at least CurtailIntervalSec). Returns whether it planned
// any action.
bool Simulator::plan_round(double now)
{
    if (!pending.empty())
        return true;
    if (!opts.curtail_every_tick && inputs == planned_inputs) {
        bool curtailed = false;
        for (int j : live)
            curtailed = curtailed || cj[j].cap_w > 0 || cj[j].suspended || cj[j].signalled_at > 0;
        if (!curtailed) {
            ++r.curtail_plans_skipped;
            return false;
        }
    }
    std::vector<CurtailJob> list;
    list.reserve(live.size());
    for (int j : live) {
        list.push_back(cj[j]);
        if (!opts.planner_exact_power)
            list.back().w_gpu = 0;  // the class estimate: no per-job meter
    }
    // Jobs select/m2g holds for room while their wait lasts, as
    // m2g-curtaild reads them from their annotations.
    static const std::unordered_map<uint32_t, PlacementSession::RoomWait> none;
    for (const auto& [id, w] : select ? select->room_waits() : none) {
        if (!w.open || epoch(now) - w.since >= ap.curtail_start_wait_sec || in_running[id])
            continue;
        CurtailJob c;
        c.id = id;
        c.intent = class_intent[cls_of[id]];
        c.waiting_gpus = jobs[id].gpus;
        c.start_time = epoch(now);
        if (opts.planner_exact_power)
            c.w_gpu = jobs[id].w_gpu;
        list.push_back(c);
    }
    SimActuator act(m, no_agent);
    const CurtailTickResult t = tick.run(planner_m, curtail_view(now), list, cstate, act, epoch(now));
    r.curtail_plans += t.plans;
    // A plan with actions is never taken as "nothing to do" (monitor
    // plans them again on the same inputs).
    planned_inputs = t.plan.actions.empty() ? inputs : 0;
    for (const CurtailOutcome& o : t.outcomes) {
        if (!o.failed.empty())
            r.curtail_cap_failures += o.action.step == CurtailStep::Cap;
        else if (!o.done)
            count_action(o.action);  // monitor: what it would do (reported once), nothing changes
        else
            pending.push_back({now + opts.actuation_delay_s, o.action, o.order});
    }
    if (!pending.empty())
        events.push({now + opts.actuation_delay_s, kActuate, -1});
    return !t.plan.actions.empty() || !t.outcomes.empty();
}

// Power caps: which scopes are over their effective budget now.
void Simulator::check_caps(double now)
{
    const int64_t e = epoch(now);
    bool over_any = false;
    for (Watched& w : watched) {
        const double budget = effective_budget_kw(m, tl, w.scope, w.index, e);
        if (budget < 0)
            continue;
        double draw = site_kw;
        if (w.scope == EventScope::Rack) {
            draw = domain_kw[w.index];
        } else if (w.scope == EventScope::Row) {
            draw = 0;
            for (int n : m.fault_domains[w.index].nodes)
                draw += node_kw[n];
        }
        const bool over = draw > budget + 1e-6;
        if (over) {
            r.cap_peak_over_kw = std::max(r.cap_peak_over_kw, draw - budget);
            if (!w.over)
                ++r.cap_violations;
        }
        w.over = over;
        over_any = over_any || over;
    }
    any_over = over_any;
    if (tl)
        for (size_t i = 0; i < tl->events.size(); ++i) {
            const CurtailmentEvent& ev = tl->events[i];
            SimEventResult& er = r.events[i];
            if (!ev.active_at(e))
                continue;
            const int idx = ev.scope == EventScope::Site ? kNone : ev.scope_index;
            const double budget = effective_budget_kw(m, tl, ev.scope, idx, e);
            double draw = site_kw;
            if (ev.scope == EventScope::Rack)
                draw = domain_kw[idx];
            else if (ev.scope == EventScope::Row) {
                draw = 0;
                for (int n : m.fault_domains[idx].nodes)
                    draw += node_kw[n];
            }
            er.budget_kw = budget;
            if (now <= er.start)
                er.draw_at_start_kw = draw;
            er.peak_draw_kw = std::max(er.peak_draw_kw, draw);
            if (budget >= 0)
                er.peak_over_kw = std::max(er.peak_over_kw, draw - budget);
            // Responded once its scope and every other is within budget.
            if (er.response_s < 0 && (budget < 0 || draw <= budget + 1e-6) && !over_any)
                er.response_s = now - er.start;
        }
}

// Time over budget per event, between two event times.
void Simulator::integrate_events(double from, double to)
{
    if (!tl || to <= from)
        return;
    for (size_t i = 0; i < tl->events.size(); ++i) {
        const CurtailmentEvent& ev = tl->events[i];
        SimEventResult& er = r.events[i];
        const int idx = ev.scope == EventScope::Site ? kNone : ev.scope_index;
        const double a = std::max(from, er.start), b = std::min(to, er.end);
        if (b <= a)
            continue;
        er.energy_kwh += site_kw * (b - a) / 3600.0;
        for (const Watched& w : watched)
            if (w.over && w.scope == ev.scope && w.index == idx) {
                er.over_s += b - a;
                const double late = std::max(a, er.start + opts.response_target_s);
                if (b > late)
                    er.over_late_s += b - late;
            }
    }
}

}  // namespace sim
}  // namespace m2g
