// m2g core: one pass of the curtailment controller's loop — the one loop
// m2g-curtaild runs every CurtailIntervalSec and the simulator runs at
// each of its controller rounds.
//
// The planner (curtail.hpp) says what to do; this pass does it, through
// an Actuator that m2g-curtaild backs with the node agents (caps) and
// libslurm (suspend, resume, signal, requeue) and the simulator with its
// own jobs:
//
//   enforce  plan, then each action through the actuator in the plan's
//            order; an action done is applied to the job
//            (apply_curtail_action()). A cap the actuator cannot apply
//            (node agent down, NVML failing) marks the job
//            cap_unavailable for kCapRetrySec and the pass plans again at
//            once, so that suspension covers that job in the same pass
//            (what the rest of the failed plan counted on is chosen again;
//            the actions already done stay done). At most one pass per job
//            plus one. Other actions that fail are reported and skipped.
//            When no scope is over its budget, the plan's steps are the
//            restore (resume, uncap), applied the same way.
//   monitor  plan and report, act on nothing. The same plan comes back at
//            every pass while nothing changes: an action is reported only
//            when it differs from the last one reported for that job (its
//            step, cap, cause and scope).
//   off      nothing, unless work m2g curtailed is still curtailed
//            (CurtailMode was switched to off during an event): then every
//            budget is lifted and the restore steps are planned and
//            applied as above, paced by RampRateKWPerMin; a failure is
//            reported, never re-planned.
//
// The pass never writes anything itself: what was done comes back as
// CurtailOutcome's, in order, for the caller's audit log and the job's
// AdminComment (the curtail part, CurtailAnnotation).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/job/annotation.hpp"
#include "core/model/model.hpp"
#include "core/power/curtail.hpp"
#include "core/power/signals.hpp"

namespace m2g {

// What an actuator answers: done, or why not.
struct ActResult {
    bool ok = true;
    std::string why;  // when !ok: one line, for the audit log

    static ActResult done() { return {}; }
    static ActResult failed(std::string why) { return {false, std::move(why)}; }
};

// Where the actions go. Each method gets the job as the controller knows
// it before the action (its nodes, the cap in force, its --signal) and
// reports whether the action took effect.
class CurtailActuator {
  public:
    virtual ~CurtailActuator() = default;
    // Set the per-GPU cap of every GPU of the job to `w_gpu` W. A cap on
    // some of its nodes only is no cap: an actuator that fails part-way
    // puts back what it changed (j.cap_w, 0: none) before it answers.
    virtual ActResult cap(const CurtailJob& j, double w_gpu) = 0;
    // Lift the cap (`w_gpu` 0) or raise it to `w_gpu`.
    virtual ActResult uncap(const CurtailJob& j, double w_gpu) = 0;
    virtual ActResult suspend(const CurtailJob& j) = 0;
    virtual ActResult resume(const CurtailJob& j) = 0;
    // Send the job's checkpoint signal (j.checkpoint_signal, j.checkpoint_batch_only).
    virtual ActResult signal(const CurtailJob& j) = 0;
    virtual ActResult requeue(const CurtailJob& j) = 0;
};

// One action of the pass, as the audit log and the AdminComment record it.
struct CurtailOutcome {
    CurtailAction action;
    std::string mode;       // "enforce", "monitor", "off"
    bool done = false;      // the actuator did it and the job's state follows (never in monitor)
    std::string failed;     // why the actuator could not, "" when it did (or monitor)
    // The job's curtail part to write (monitor: "monitor would ..."); nullopt when it failed.
    std::optional<CurtailAnnotation> annotation;
    uint64_t order = 0;     // done: the job's curtailment order after it (CurtailJob::order)

    // The audit log's result: "ok" or "failed: <why>".
    std::string result() const { return failed.empty() ? "ok" : "failed: " + failed; }
};

struct CurtailTickResult {
    CurtailPlan plan;                     // the last plan of the pass (empty when nothing was planned)
    std::vector<CurtailOutcome> outcomes;  // in the order they happened
    bool planned = false;                 // a plan was made (off with nothing curtailed: none)
    int plans = 0;                        // plan_curtailment() calls (re-plans after failed caps included)
};

class CurtailTick {
  public:
    // How long a job whose cap failed is not capped again (its caps are
    // taken as unavailable, so it goes straight to suspension).
    static constexpr int64_t kCapRetrySec = 60;

    // One pass at `now` over `jobs` (the running and m2g-suspended jobs as
    // the controller knows them), in the mode m.admission.curtail_mode
    // says. Jobs acted on are updated in place (apply_curtail_action()),
    // `state` too (the restore ramp's clock, enforce and off only; the
    // curtailment order). Never throws from the planner; the actuator's
    // exceptions are its own to catch.
    CurtailTickResult run(const Model& m, const SignalsView& v, std::vector<CurtailJob>& jobs, CurtailState& state,
                          CurtailActuator& act, int64_t now);

  private:
    CurtailTickResult enforce_or_monitor(const Model& m, const SignalsView& v, std::vector<CurtailJob>& jobs,
                                         CurtailState& state, CurtailActuator& act, int64_t now, bool enforce);
    CurtailTickResult restore_all(const Model& m, std::vector<CurtailJob>& jobs, CurtailState& state,
                                  CurtailActuator& act, int64_t now);

    std::map<uint32_t, int64_t> cap_failed_;     // job -> until when its caps are not tried again
    std::map<uint32_t, std::string> monitored_;  // monitor: the last action reported per job
};

// The action `a` through `act`, for job `j` (before it).
ActResult actuate(CurtailActuator& act, const CurtailAction& a, const CurtailJob& j);

}  // namespace m2g
