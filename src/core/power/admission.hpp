// m2g core: admission — whether a job may start now, later, slowly, or not
// at all, given power, thermal, demand-response and maintenance signals,
// the job's class and consent, and tenant policy. job_submit/m2g calls
// decide() at submission and again from its release thread; select/m2g
// calls gate() at placement; `m2g` and the simulator call both. One policy,
// no copies.
//
// Decisions (Verdict):
//   Admit   the job is eligible now (or at the user's own --begin);
//   Defer   begin time moved to when the reason ends (an event's end, a
//           maintenance window's end, or a re-check PowerRetrySec later),
//           never past the user's --m2g-defer=until deadline;
//   Pace    during curtailment, the job's GPUs start in the first pacing
//           interval with room, so the power ramp stays within
//           RampRateKWPerMin / PaceGpusPerInterval;
//   Reject  only with a message that says what to change.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/model/admission_policy.hpp"
#include "core/job/intent.hpp"
#include "core/job/verdict.hpp"
#include "core/model/model.hpp"
#include "core/model/state.hpp"
#include "core/power/signals.hpp"

namespace m2g {

// Built-in per-GPU power by class, in W, drawn from the Acme 2023 A100
// power CDF (../shared/data/acme2023_power_thermal_cdf.csv, metric
// gpu_power, the larger of the kalos and seren clusters at the class's
// quantile, interpolated, rounded to 1 W): no class p90 404, training p95
// 413, finetune p90 404, inference p50 101, batch p75 372, benchmark p99
// 440, dataproc p50 101, agentic p50 101. In WorkloadClass order.
// test_admission.cpp recomputes them from the CSV.
struct ClassPowerDefault {
    WorkloadClass cls;
    double quantile_pct;  // cdf_pct used
    double watts;
};
const std::vector<ClassPowerDefault>& class_power_defaults();

// Power per GPU for a job: the recipe's (or --m2g-recipe's) value, else the
// class's PowerPerGpuW, else DefaultPowerPerGpuW, else the built-in default.
double power_w_per_gpu(const AdmissionPolicy& p, const JobIntent& intent);

// Whether the job may be deferred: --m2g-defer=ok/until → yes, =no → no,
// unset → its class's Deferrable (jobs without a class: the Unset row).
bool is_deferrable(const AdmissionPolicy& p, const JobIntent& intent);

// Paces GPU starts during curtailment: per interval of PaceIntervalSec, at
// most PaceGpusPerInterval GPUs and RampRateKWPerMin x interval kW start.
// A job larger than one interval's allowance gets an interval to itself.
// Not thread-safe: the owner serialises calls.
class Pacer {
  public:
    // The start of the first interval at or after `now` with room for
    // `gpus` GPUs drawing `kw`, and book them there.
    int64_t reserve(const AdmissionPolicy& p, int64_t now, int gpus, double kw);
    // Whether `gpus`/`kw` may start in the interval holding `now` without
    // booking them (select/m2g asks this, then calls book()).
    bool fits_now(const AdmissionPolicy& p, int64_t now, int gpus, double kw) const;
    void book(const AdmissionPolicy& p, int64_t now, int gpus, double kw);
    // GPUs booked in the interval holding `now` (for messages).
    int gpus_in_interval(const AdmissionPolicy& p, int64_t now) const;
    void clear() { slots_.clear(); }

  private:
    struct Slot {
        int64_t start;
        int gpus;
        double kw;
    };
    std::deque<Slot> slots_;  // ascending start; slots before now are dropped
};

struct AdmissionRequest {
    JobIntent intent;
    int gpus = 0;            // GPUs of the whole job
    int nodes = 1;
    int64_t time_limit_s = 0;  // <= 0: unlimited
    int64_t now = 0;
    int64_t user_begin = 0;  // the user's --begin (epoch s), 0: none
    std::string account;     // may be empty (Slurm fills the default later)
    std::string user;
    std::vector<std::string> groups;  // the user's Unix groups, by name
    std::vector<int> candidate_nodes;  // model nodes the job could use (its partition); empty: all
    // Check reserved tags and classes (PrivilegedTags=, PrivilegedClasses=):
    // at submission; a re-evaluation of a job admitted once does not.
    bool check_reserved = true;
};

// The reserved parts of `intent` under `p` ("tag priority=high", "class
// benchmark"), in a fixed order; empty when it uses none.
// A tenant tag equal to `account` (the job's own, as job_submit/m2g binds
// it) is not reserved.
std::vector<std::string> reserved_uses(const AdmissionPolicy& p, const JobIntent& intent,
                                       const std::string& account = "");

// Why `r` is privileged: "account X (PrivilegedAccounts=)", "group G
// (PrivilegedGroups=)", or "" when it is not.
std::string privileged_for(const AdmissionPolicy& p, const AdmissionRequest& r);

struct Decision {
    Verdict verdict = Verdict::Admit;
    int64_t begin_time = 0;   // Defer/Pace: when the job becomes eligible; else 0
    bool deferrable = false;
    bool converted = false;   // --m2g-defer=no turned into deferrable (NoDeferAction=convert)
    double power_kw = 0;      // the job's estimated draw
    std::string cause;        // event id, "maintenance:<id>", "power:site", "failsafe", ""
    std::vector<int> avoid_nodes;  // maintenance: model nodes select/m2g must not use
    std::string avoid_for;    // what avoid_nodes are for: "maintenance mw-1,mw-2"
    std::string reason;       // one line for AdminComment, no ';' or ']'
    std::string message;      // to the user (sbatch prints it): rejection or --m2g-explain
    // Overrides granted to this job (reserved intent used by a privileged
    // account or group, --m2g-defer=no honoured for an exempt one), one line
    // each, for the audit log.
    std::vector<std::string> audit;
    // Reject for reserved intent: what it used ("tag priority=high"), for
    // the audit log; empty for every other verdict.
    std::vector<std::string> refused_reserved;
    // The AdminComment admission part, without the "admission=" that
    // set_annotation() adds: "admit", "defer until=<RFC 3339 UTC>
    // cause=<cause> reason=<reason>", "pace until=... cause=... reason=...",
    // "reject reason=...", followed by " avoid=<n> nodes (<avoid_for>)"
    // when select/m2g must avoid nodes. One line, no ';' or ']'.
    std::string annotation() const;
};

// Decide, in this order (m2g.conf(5), ADMISSION AND SIGNALS), judging
// times from max(now, user_begin):
//   0. Admission=off: admit.
//   1. maintenance windows overlapping the time limit on candidate nodes
//      (every job): steer (avoid_nodes) or defer past them; reject when
//      that is past an until= deadline;
//   2. fail-safe hold: defer deferrable work by PowerRetrySec;
//   3. active events: deferrable work waits for the last site event's end
//      (row/rack events are left to gate()); --m2g-defer=no from accounts
//      not exempt: reject or convert; other non-deferrable work is paced;
//   4. site headroom: reject a job larger than the site's budget; defer
//      deferrable work that does not fit the draw by PowerRetrySec;
//   5. admit.
// Monitor mode is the caller's business: decide() returns the real
// decision. `pacer` may be null (no pacing booked, e.g. a dry run). Never
// throws on any feed state: an internal error admits, with the reason
// "m2g: internal error: ...". Thread-safe apart from `pacer`.
Decision decide(const Model& m, const SignalsView& v, const AdmissionRequest& r, Pacer* pacer);

// ---- select/m2g: live enforcement at placement --------------------------------
struct GateRequest {
    JobIntent intent;
    int gpus_per_node = 0;
    int nodes = 1;
    int64_t time_limit_s = 0;  // <= 0: unlimited
    int64_t now = 0;
    // When the job began to wait for room (GateResult::room_short_kw), 0:
    // it has not: the wait runs CurtailStartWaitSec from then.
    int64_t room_since = 0;
};

struct GateResult {
    bool blocked = false;  // the job must not start now
    std::string reason;    // why it waits, or what was avoided ("" when nothing)
    int trimmed_nodes = 0; // usable nodes removed (maintenance, rack/row budget)
    // What `reason` leads with, typed: why the job waits when it is blocked
    // (SitePower, Pacing, Failsafe) or when the trimmed offer is too small
    // (Maintenance, NodesDown, RackPower, RowPower, the first that trimmed);
    // Other for an internal error; None when `reason` is empty.
    WaitCause wait = WaitCause::None;
    // RackPower: the racks over budget that trimmed the offer; RowPower:
    // the rows; in `reason`'s order. Empty for every other cause.
    std::vector<std::string> over;
    // A job m2g may not curtail (not deferrable) that would put the site
    // over the budget m2g-curtaild holds (CurtailMode=enforce): the kW it
    // needs beyond what the feed shows free, 0 when it fits or its wait
    // (CurtailStartWaitSec from room_since) is over. Not a block: the
    // caller holds the job (WaitCause::PowerRoom, room_reason) only when it
    // could start now, so that m2g-curtaild makes room for a job that
    // takes it.
    double room_short_kw = 0;
    int64_t room_since = 0;   // the wait's start (the request's, or now)
    std::string room_reason;  // "site power: 2.0 kW free of 120.0 kW, job needs 12.8 kW, m2g-curtaild is making room (...)"
};

// Narrow `usable` (per model node) for a job about to be placed:
//   - every job: nodes whose maintenance window overlaps [now, now+limit);
//     nodes marked down in the feed;
//   - deferrable jobs: racks (domains) and rows whose effective budget
//     (active events applied) minus draw minus `started_kw` (per domain,
//     power of jobs started since the snapshot) cannot take the job's
//     nodes there; the site likewise (blocked); a Defer fail-safe blocks;
//     Pace limits during curtailment via `pacer` (not booked here).
// Fills `heat` (per domain, lower is cooler) so the engine prefers cooler
// racks. Never throws.
// What gate() reads from a snapshot alone (each rack's heat, the nodes
// down), kept by a caller that gates many jobs on the same snapshot
// (select/m2g: every test until the feed's next one): gate() fills it when
// its snapshot is not the view's and reads it otherwise.
struct GateCache {
    std::shared_ptr<const Signals> snap;
    bool filled = false;
    std::vector<double> heat;
    std::vector<int> down;
};

GateResult gate(const Model& m, const SignalsView& v, const GateRequest& r, const std::vector<double>& started_kw,
                const Pacer* pacer, std::vector<uint8_t>& usable, std::vector<double>& heat,
                GateCache* cache = nullptr);

struct AdmissionAnnotation;

// What job_submit/m2g records for decision `d` on a job with `intent`
// under `ap`: the verdict with until=, cause= and reason= (Defer, Pace;
// reason= also Reject), avoid= (not Reject), the class and the power per
// GPU admission assumed, the owner's own --begin (`user_begin`, 0 none)
// and, with `monitor`, that nothing was enforced. The release thread sets
// released_at itself.
AdmissionAnnotation admission_annotation(const Decision& d, const JobIntent& intent, const AdmissionPolicy& ap,
                                         int64_t user_begin, bool monitor);

}  // namespace m2g
