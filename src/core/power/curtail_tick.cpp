// m2g core: one pass of the curtailment controller's loop (see
// curtail_tick.hpp).
#include "core/power/curtail_tick.hpp"

#include <set>
#include <utility>

namespace m2g {

namespace {

CurtailJob* find_job(std::vector<CurtailJob>& jobs, uint32_t id)
{
    for (CurtailJob& j : jobs)
        if (j.id == id)
            return &j;
    return nullptr;
}

// What a monitor pass reported for a job: the same again is not reported.
std::string said(const CurtailAction& a)
{
    return to_string(a.step) + std::to_string(a.cap_w) + a.cause + a.scope;
}

CurtailOutcome outcome(const CurtailAction& a, const std::string& mode)
{
    CurtailOutcome o;
    o.action = a;
    o.mode = mode;
    return o;
}

}  // namespace

ActResult actuate(CurtailActuator& act, const CurtailAction& a, const CurtailJob& j)
{
    switch (a.step) {
    case CurtailStep::Cap:
        return act.cap(j, a.cap_w);
    case CurtailStep::Uncap:
        return act.uncap(j, a.cap_w);
    case CurtailStep::Suspend:
        return act.suspend(j);
    case CurtailStep::Resume:
        return act.resume(j);
    case CurtailStep::Signal:
        return act.signal(j);
    case CurtailStep::Requeue:
        return act.requeue(j);
    }
    return ActResult::failed("unknown step");
}

CurtailTickResult CurtailTick::run(const Model& m, const SignalsView& v, std::vector<CurtailJob>& jobs,
                                   CurtailState& state, CurtailActuator& act, int64_t now)
{
    // What is remembered per job holds only while the job is here: one
    // that ended (or was requeued and runs again) starts afresh.
    std::set<uint32_t> here;
    for (CurtailJob& j : jobs) {
        here.insert(j.id);
        const auto f = cap_failed_.find(j.id);
        j.cap_unavailable = f != cap_failed_.end() && f->second > now;
    }
    for (auto it = cap_failed_.begin(); it != cap_failed_.end();)
        it = here.count(it->first) && it->second > now ? std::next(it) : cap_failed_.erase(it);
    for (auto it = monitored_.begin(); it != monitored_.end();)
        it = here.count(it->first) ? std::next(it) : monitored_.erase(it);

    switch (m.admission.curtail_mode) {
    case CurtailMode::Enforce:
        return enforce_or_monitor(m, v, jobs, state, act, now, true);
    case CurtailMode::Monitor:
        return enforce_or_monitor(m, v, jobs, state, act, now, false);
    case CurtailMode::Off:
        break;
    }
    return restore_all(m, jobs, state, act, now);
}

CurtailTickResult CurtailTick::enforce_or_monitor(const Model& m, const SignalsView& v, std::vector<CurtailJob>& jobs,
                                                  CurtailState& state, CurtailActuator& act, int64_t now,
                                                  bool enforce)
{
    const AdmissionPolicy& ap = m.admission;
    const std::string mode = enforce ? "enforce" : "monitor";
    CurtailTickResult r;
    r.planned = true;
    // Each pass that meets a cap it cannot apply marks that job and plans
    // again, so there are at most as many passes as jobs, plus one.
    for (size_t pass = 0; pass <= jobs.size(); ++pass) {
        // Monitor plans on a copy of the state: nothing it plans happens,
        // so the restore ramp's clock must not move.
        CurtailState trial = state;
        r.plan = plan_curtailment(m, v, jobs, trial, now);
        ++r.plans;
        bool failed = false;
        for (const CurtailAction& a : r.plan.actions) {
            CurtailJob* cj = find_job(jobs, a.job);
            if (!cj)
                continue;
            if (!enforce) {
                // Monitor: the same plan comes back every pass; report it once.
                std::string& last = monitored_[a.job];
                if (last == said(a))
                    continue;
                last = said(a);
                CurtailOutcome o = outcome(a, mode);
                o.annotation = curtail_annotation(a, now, true);
                r.outcomes.push_back(std::move(o));
                continue;
            }
            const ActResult res = actuate(act, a, *cj);
            CurtailOutcome o = outcome(a, mode);
            if (!res.ok) {
                o.failed = res.why.empty() ? "failed" : res.why;
                r.outcomes.push_back(std::move(o));
                if (a.step != CurtailStep::Cap)
                    continue;
                // A cap that cannot be applied: mark the job and plan again
                // at once, so that suspension covers it in this same pass.
                // The rest of this plan counted on that cap; what it would
                // suspend is chosen again, with the job that could not be
                // capped first in line.
                cap_failed_[a.job] = now + kCapRetrySec;
                cj->cap_unavailable = true;
                failed = true;
                break;
            }
            apply_curtail_action(*cj, a, state, ap, now);
            o.done = true;
            o.order = cj->order;
            o.annotation = curtail_annotation(a, now);
            r.outcomes.push_back(std::move(o));
        }
        if (enforce)
            state.last_restore = trial.last_restore;  // the restore ramp's clock
        if (!failed)
            break;
    }
    return r;
}

CurtailTickResult CurtailTick::restore_all(const Model& m, std::vector<CurtailJob>& jobs, CurtailState& state,
                                           CurtailActuator& act, int64_t now)
{
    CurtailTickResult r;
    bool any = false;
    for (const CurtailJob& j : jobs)
        any = any || !j.curtailed_for.empty();
    if (!any)
        return r;
    // Off with work still curtailed: give everything back, paced. No
    // budget is in force any more, whatever the feed says.
    Model open = m;
    open.site_power_budget_kw = 0;
    for (auto& d : open.domains)
        d.power_budget_kw = 0;
    for (auto& f : open.fault_domains)
        f.power_budget_kw = 0;
    r.planned = true;
    r.plan = plan_curtailment(open, SignalsView{}, jobs, state, now);
    ++r.plans;
    for (const CurtailAction& a : r.plan.actions) {
        CurtailJob* cj = find_job(jobs, a.job);
        CurtailOutcome o = outcome(a, "off");
        if (!cj) {
            o.failed = "not running";
            r.outcomes.push_back(std::move(o));
            continue;
        }
        const ActResult res = actuate(act, a, *cj);
        if (!res.ok) {
            o.failed = res.why.empty() ? "failed" : res.why;
            r.outcomes.push_back(std::move(o));
            continue;
        }
        apply_curtail_action(*cj, a, state, m.admission, now);
        o.done = true;
        o.order = cj->order;
        o.annotation = curtail_annotation(a, now);
        r.outcomes.push_back(std::move(o));
    }
    return r;
}

}  // namespace m2g
