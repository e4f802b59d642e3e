// m2g core: curtailment — acting on running work so that every power scope
// (site, row, rack) stays under its effective budget during a
// demand-response event, and giving the power back when it ends.
//
// Admission (admission.hpp) only decides what may start; a -30% event
// against a full cluster needs running jobs to give power back. The
// planner here is pure: from the signals snapshot, the running jobs as
// they are now (caps in force, suspended or not) and the policy in
// m2g.conf (CURTAILMENT in m2g.conf(5)), plan_curtailment() returns the
// ordered actions that bring every scope under its target, or — when no
// scope is over and no event needs it any more — the next restore steps.
// The controller (m2g-curtaild) applies them through the node agents
// (caps) and libslurm (suspend, resume, signal, requeue); the simulator
// applies them to its own jobs. One policy, no copies.
//
// Order of actions for an over-budget scope, narrowest scope first (racks,
// then rows, then the site), each stage only when the one before is not
// enough:
//   1. caps: the GPUs of running jobs whose class allows it (Curtail=cap,
//      suspend or requeue) are capped to one common per-GPU level, never
//      under the class's CapFloorW, found by water-filling so that the
//      scope's draw falls to its target;
//   2. suspend or requeue: jobs whose class allows it (Curtail=suspend or
//      requeue), the smallest job that clears what is left first (else the
//      largest, repeated), so that the fewest jobs stop. Requeue sends the
//      job's own --signal (a checkpoint request) first and requeues it
//      CheckpointGraceSec later; a job without --signal is suspended
//      instead (a requeue without a checkpoint would lose its work).
//      Jobs whose caps could not be applied (cap_unavailable) go straight
//      to this stage.
// Jobs that are not deferrable (inference and agentic by default, and any
// job submitted with --m2g-defer=no) are never touched unless their
// class's Curtail= is set explicitly in m2g.conf (the site's opt-in).
//
// A scope is acted on when its draw is over its budget, and then brought
// to its target, the budget less CurtailMarginPct.
//
// Restore: when no scope is over its budget, the work m2g curtailed comes
// back in the reverse order (suspended jobs resume, newest suspension
// first, then caps are lifted), each step only when it fits under every
// scope's target (so that a restore never pushes a scope back over: the
// band between target and budget is the hysteresis) and within
// RampRateKWPerMin since the last
// restore (0: no ramp limit). Nothing is given back while the feed is
// stale or missing and an event of its last snapshot is still active, nor
// while its reading predates m2g's last change (until the meter confirms
// what that change did).
//
// Room: a job m2g may not curtail that would put the site over its budget
// waits, at most CurtailStartWaitSec, while the plan makes room for it
// (CurtailJob::waiting_gpus): a start answered before it happens, not after
// the next pass and the meter show it.
//
// Draw: a scope's draw is the feed's measured draw (the BMS), plus what
// m2g's own actions changed after the snapshot was generated (the feed
// lags the caps) and the estimate of every job that started after it
// (Slurm's job list is current, the meter lags). Where the feed has no draw for a scope, the sum of the
// running jobs' estimates stands in. A job's draw is its GPUs times its
// per-GPU estimate (measured by the node agents where known, else the
// class's PowerPerGpuW), capped by its cap; a suspended job's GPUs draw
// IdlePowerPerGpuW.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/admission_policy.hpp"
#include "core/job/annotation.hpp"
#include "core/job/intent.hpp"
#include "core/job/verdict.hpp"
#include "core/model/model.hpp"
#include "core/power/signals.hpp"

namespace m2g {

// One change m2g made to a job's cap or suspension, with the job's per-GPU
// draw (as the planner judged it) just before: what a feed generated before
// `at` still shows for the job.
struct CurtailChange {
    int64_t at = 0;
    double w_gpu_before = 0;
};

// One running (or m2g-suspended, or signalled) job as the controller sees it.
struct CurtailJob {
    uint32_t id = 0;
    JobIntent intent;            // class and --m2g-defer, from the job's options
    std::vector<int> nodes;      // model node indices
    int gpus_per_node = 0;
    double w_gpu = 0;            // uncapped draw per GPU (W); <= 0: the class estimate (power_w_per_gpu)
    double cap_w = 0;            // per-GPU cap m2g has in force, 0: none
    bool suspended = false;      // m2g suspended it
    int64_t signalled_at = 0;    // m2g sent the checkpoint signal (requeue pending), 0: not
    // m2g's changes to its cap or suspension over the last
    // kCurtailChangeKeepSec, oldest first, one per second (for the feed-lag
    // correction: a feed older than several changes shows the draw before
    // the first of them, not before the last).
    std::vector<CurtailChange> changes;
    int64_t start_time = 0;      // when it started running
    std::string curtailed_for;   // the scope m2g acted for ("site", "nvl03"), "" when not curtailed
    uint64_t order = 0;          // when m2g last curtailed it (a counter): restore goes newest first
    int checkpoint_signal = 0;   // its --signal (signal= in the annotation), 0 none: a requeue class suspends it
    bool checkpoint_batch_only = false;  // its --signal is B: (to the batch shell only)
    bool cap_unavailable = false;  // a cap could not be applied (node agent down, NVML failing): skip to suspension
    // > 0: not running but pending, held by select/m2g until there is room
    // for it (wait=power-room, CurtailStartWaitSec), with this many GPUs:
    // it counts in the site's draw as a job starting now would (nodes
    // empty), whatever the reading's time, so that the plan makes room for
    // it, and it is never acted on.
    int waiting_gpus = 0;
};

// CurtailStep (cap, suspend, signal, requeue, resume, uncap): core/job/verdict.hpp.

struct CurtailAction {
    CurtailStep step = CurtailStep::Cap;
    uint32_t job = 0;
    double cap_w = 0;     // Cap/Uncap: the new per-GPU cap (Uncap: 0, lifted; > 0 raised to)
    double delta_kw = 0;  // estimated change of the job's draw (negative: saves)
    std::string scope;    // the scope acted for ("site", "row1", "nvl03")
    std::string cause;    // the event id in force there, else "power:<scope>"
    std::string reason;   // one line: what and why, for the job's annotation and the audit log
};

// One scope's numbers before and after the plan.
struct CurtailScope {
    EventScope scope = EventScope::Site;
    int index = kNone;
    std::string name;
    double budget_kw = -1;  // effective now (events applied), -1 none
    double target_kw = -1;  // budget minus CurtailMarginPct
    double draw_kw = -1;    // as judged (feed, corrected for m2g's own changes since), -1 unknown
    double after_kw = -1;   // after the planned actions (estimate)
    bool draw_from_feed = false;
    std::string cause;      // active event id on this scope, "" none
};

struct CurtailPlan {
    std::vector<CurtailAction> actions;  // in the order to apply them
    std::vector<CurtailScope> scopes;    // every scope with a budget
    bool over = false;         // some scope is over its budget now
    bool short_of_target = false;  // after every allowed action some scope is still over its target
    bool restoring = false;    // the actions are restore steps
    bool held_back = false;    // a restore waits: the feed is stale or missing while an event lasts
    bool awaiting_meter = false;  // a restore waits: the feed's reading predates m2g's last change
    double restore_kw = 0;     // kW given back by this plan's restore steps
    std::string summary;       // one line for the log
};

// Controller state that outlives one plan (the restore ramp).
struct CurtailState {
    int64_t last_restore = 0;  // when the last restore step was planned
    uint64_t next_order = 1;
};

// The per-GPU draw counted for a job with `intent` that starts now, before
// any meter has seen it (W): its stated draw (--m2g-power) where it has
// one; else, while an event holds the scope (`event`), the highest
// estimate of any class (a class's estimate is a percentile: in the
// simulator an inference job estimated at 101 W per GPU drew 397 W); else
// its class's estimate. select/m2g weighs a start by it during events, the
// planner a job no reading has seen yet.
double start_w_gpu(const AdmissionPolicy& p, const JobIntent& intent, bool event);

// What an annotation's w_gpu= (the draw job_submit/m2g assumed, read back
// into intent.power_w_per_gpu) says of the job itself: that draw when it
// is the job's own (--m2g-power, a recipe), 0 when it is its class's
// estimate under `p` (then the planner's rules for estimates apply: the
// highest class estimate for a start no meter has seen during an event).
// A stated draw equal to the class's estimate reads as the estimate.
double own_w_gpu(const AdmissionPolicy& p, const JobIntent& annotated);

// The per-GPU draw the planner assumes for `j` now (cap and suspension
// applied), in W.
double curtail_job_w_gpu(const AdmissionPolicy& p, const CurtailJob& j);

// How long a job's changes are kept for the feed-lag correction: a feed
// older than this is stale long before (SignalsTtlSec), and is not used.
constexpr int64_t kCurtailChangeKeepSec = 3600;

// The per-GPU draw of `j` that a feed generated at `t` shows: its GPUs idle
// (`idle_w`: AdmissionPolicy::unused_gpu_w, IdlePowerPerGpuW by default)
// when the job started after `t` (Slurm says so before the meter does; a
// start in the feed's own second counts as in it), else its draw before the
// first of m2g's changes at or after `t` (a change in the feed's own second
// counts as not in it yet), else `w_now`.
double curtail_w_gpu_seen(const CurtailJob& j, int64_t t, double w_now, double idle_w);

// When m2g last changed the job's cap or suspension, 0: never (kept).
int64_t curtail_last_change(const CurtailJob& j);

// Whether m2g may act on `j` at all, and how far (None: never).
CurtailLevel curtail_level(const AdmissionPolicy& p, const JobIntent& intent);

// Plan. Pure apart from `state` (restore pacing and the curtailment order
// counter), which the caller keeps between calls. Never throws: an internal
// error returns an empty plan whose summary says so.
CurtailPlan plan_curtailment(const Model& m, const SignalsView& v, const std::vector<CurtailJob>& jobs,
                             CurtailState& state, int64_t now);

// Apply `a` to `j` as the controller or simulator does once the action has
// taken effect (cap, suspension, order, changed_at).
void apply_curtail_action(CurtailJob& j, const CurtailAction& a, CurtailState& state, const AdmissionPolicy& p,
                          int64_t now);

// The AdminComment curtail part for a job m2g acted on with `a` at `now`
// (format() writes it: "cap w_gpu=300 cause=dr-1 scope=site at=<RFC 3339>",
// "suspend cause=dr-1 scope=site at=...", "uncap cause=restore scope=site
// at=..."); `monitor`: CurtailMode=monitor, what it would have done.
CurtailAnnotation curtail_annotation(const CurtailAction& a, int64_t now, bool monitor = false);

}  // namespace m2g
