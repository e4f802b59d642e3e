// m2g tools: what the cluster looks like to m2g right now — the facts behind
// `m2g status`, m2g-exporter and `m2g status --plot` — and the view of
// Slurm's nodes and jobs every report starts from (ClusterView; `m2g
// explain` is explain.hpp, `m2g job` energy.hpp). Slurm-free: the CLI and
// the exporter fill a ClusterView from libslurm (src/slurmapi/), tests fill
// it by hand.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job/intent.hpp"
#include "core/model/model.hpp"
#include "core/place/engine.hpp"
#include "core/power/signals.hpp"
#include "core/job/annotation.hpp"

namespace m2g {

// ---- input: Slurm's state, in model terms ---------------------------------------

struct NodeView {
    bool known = false;      // Slurm reported this model node
    bool down = false;       // DOWN, FAIL, NO_RESPOND, POWERED_DOWN, ...
    bool drained = false;    // DRAIN or DRAINING
    int gpus_total = 0;      // configured GPUs (Gres gpu:N), else the model's
    int gpus_alloc = 0;      // allocated to jobs now
};

enum class JobState { Pending, Running, Completing, Done };
const char* to_string(JobState s);

struct JobView {
    uint32_t id = 0;
    std::string name;
    JobState state = JobState::Pending;
    std::string slurm_reason;   // Slurm's Reason (e.g. "BeginTime", "Resources")
    std::string admin_comment;  // with the m2g:[...] segment
    std::string partition;
    std::string account;
    std::string user;
    JobIntent intent;           // from the m2g annotation/env; class, defer, recipe power, ...
    int nodes = 0;              // requested (pending) or allocated (running)
    int gpus = 0;               // whole job
    int64_t submit_time = 0;
    int64_t begin_time = 0;     // eligible from (0: none)
    int64_t start_time = 0;     // 0: not started
    int64_t end_time = 0;       // 0: not ended; for running jobs the expected end
    int64_t time_limit_s = 0;   // <= 0 unlimited
    uint32_t priority = 0;      // Slurm's priority (pending jobs start in its order)
    std::vector<int> node_idx;  // allocated model nodes
    bool suspended = false;     // Running here, SUSPENDED in Slurm
    double measured_w_gpu = -1;  // running: its GPUs' mean draw as the node agents report it (W), -1 unknown
    int warn_signal = 0;        // --signal=[B:]SIG[@TIME]: SIG as job_submit/m2g recorded it (signal=), 0 none
    bool warn_batch_only = false;  // --signal=B:...: to the batch shell only
};

// Slurm's backfill scheduler as slurmctld runs it: SchedulerType and the
// bf_ keys of SchedulerParameters, read as 26.05's backfill.c
// _load_config() reads them (a key anywhere in the string, case apart; a
// value out of its range logged and replaced by the default). What the
// forecast's runs plan with, so that they reproduce this site's plan.
struct BackfillConf {
    bool enabled = true;       // SchedulerType=sched/backfill and bf_interval != -1
    double interval_s = 30;    // bf_interval (the simulator's 0: a pass at every event)
    double window_s = 86400;   // bf_window (minutes in slurm.conf)
    double resolution_s = 60;  // bf_resolution
    int max_job_test = 500;    // bf_max_job_test
    // Values slurmctld rejects, each with the default it (and so the
    // forecast) uses instead.
    std::vector<std::string> problems;
};

// schedtype: SchedulerType ("sched/backfill", "sched/builtin"; empty:
// unknown, taken as backfill); sched_params: SchedulerParameters, may be
// empty.
BackfillConf backfill_conf(std::string_view schedtype, std::string_view sched_params);

struct ClusterView {
    std::vector<NodeView> nodes;  // per model node
    std::vector<JobView> jobs;    // pending and running (and recently done, for `m2g job`)
    int64_t taken_at = 0;
    BackfillConf backfill;        // Slurm's defaults unless the loader read slurmctld's
};

// ---- status ---------------------------------------------------------------------

struct DomainStatus {
    int domain = kNone;
    int gpus_total = 0, gpus_used = 0, gpus_free = 0;  // free = on healthy up nodes
    int gpus_degraded = 0;       // on down/drained/degraded nodes or in an NVLink-faulted domain
    // GPUs partition: used = allocated anywhere (a draining node's jobs
    // included), free = unallocated on healthy nodes, degraded =
    // unallocated on unhealthy ones; used + free + degraded == total. A
    // node Slurm did not report (NodeView::known false) counts as down.
    int free_nodes = 0;          // healthy nodes with every GPU free
    bool nvlink_fault = false;
    double budget_kw = -1, draw_kw = -1, headroom_kw = -1;  // -1 unknown/none
    // budget_kw: the effective rack budget (events applied); headroom_kw =
    // budget_kw - draw_kw, negative when over budget: valid only when both
    // budget_kw >= 0 and draw_kw >= 0 (power_known()).
    double temp_c = 0;           // hottest known GPU, 0 unknown
    ThermalState thermal = ThermalState::Ok;
    bool maintenance_now = false;
    int nodes_total = 0;         // model nodes in the domain
    std::vector<uint32_t> jobs;  // running (or completing) jobs with a node in it, by id
    bool power_known() const { return budget_kw >= 0 && draw_kw >= 0; }
};

struct PowerStatus {
    std::string scope;  // "site", "row", "rack"
    std::string name;
    double budget_kw = -1, effective_kw = -1, draw_kw = -1, headroom_kw = -1;
    // budget: the feed's, else m2g.conf's; effective: events applied;
    // headroom = effective - draw (may be negative), valid when both are >= 0.
};

struct ClassQueue {
    WorkloadClass cls = WorkloadClass::Unset;
    int pending = 0, running = 0, deferred = 0;  // deferred: pending with an m2g defer/pace
    int gpus_pending = 0, gpus_running = 0;
};

struct Status {
    int64_t at = 0;
    int gpus_total = 0, gpus_used = 0, gpus_free = 0, gpus_degraded = 0;
    // Fragmentation: share (0..1) of free healthy GPUs that sit in domains
    // which also have used GPUs (a whole-domain job cannot use them).
    double fragmentation = 0;
    int whole_free_domains = 0;
    std::vector<DomainStatus> domains;   // model order
    std::vector<PowerStatus> power;      // site, rows, racks (those with a budget or draw)
    std::vector<const CurtailmentEvent*> active_events;  // point into the view's snapshot
    std::vector<ClassQueue> queues;      // classes with any job, WorkloadClass order
    // Pending jobs by reason key. The keys are a Prometheus label value,
    // so the set is bounded: ids (events, windows, nodes) never appear.
    //   deferred:event        admission deferred it for a demand-response event
    //   deferred:maintenance  ... for a maintenance window (cause maintenance:<id>)
    //   deferred:site-power   ... for site power headroom (cause power:site)
    //   deferred:failsafe     ... stale/missing signals under SignalsFailSafe=defer
    //   deferred:other        ... another or no cause
    //   paced                 admission paced its start during curtailment
    //   waiting:<what>        select/m2g's last "waiting" placement, by its wait= cause
    //                         (kw::kWaitCauses): nvlink-domain, switch, nodes, site-power,
    //                         rack-power, row-power, pacing, maintenance, failsafe, nodes-down, other
    //   <Slurm reason>        otherwise Slurm's reason word: "Resources", "Priority",
    //                         "BeginTime" (a begin time m2g did not set), "Dependency", ...;
    //                         "None" when Slurm gives none
    std::map<std::string, int> pending_by_reason;
    int deferred_jobs = 0;
    SignalsView signals;
};

Status compute_status(const Model& m, const ClusterView& c, const SignalsView& v, int64_t now);

// When each model node will have every GPU free, by the running jobs'
// expected ends (Slurm's EndTime: start plus time limit): `now` for a free
// healthy node, -1 for one that is not healthy or runs a job without an
// end. What `m2g explain` says of the domain that frees first.
std::vector<int64_t> node_free_at(const Model& m, const ClusterView& c, const SignalsView& v, int64_t now);

// The Status::pending_by_reason key of a pending job (see there).
std::string pending_reason_key(const JobView& job, const Annotation& a, int64_t now);

// A readable table (domains, power, events, queues), or one JSON object.
std::string format_status(const Model& m, const Status& s, bool json);

}  // namespace m2g
