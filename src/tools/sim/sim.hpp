// m2g tools: a trace-driven simulator on the production placement engine
// (`m2g simulate`, doc/simulator.md).
//
// Discrete events (job submit and end, admission releases, the timeline's
// event and window edges, and for m2g the end of a job's prefer wait)
// drive one FCFS queue with EASY backfill. A job of G GPUs takes
// n = ceil(G / P) nodes with ceil(G / n) GPUs free on each (P: the largest
// node), so small jobs share nodes as under select/m2g. Where a job goes is
// the chosen policy's decision:
//   m2g       select/m2g's PlacementSession (session.hpp), the very code
//             the plugin runs (never a copy): decide() on the nodes with
//             the job's GPUs free, mode RunNow, the simulated clock, then
//             job_started(); what it leaves to cons_tres (locality any)
//             goes to the tree policy below;
//   tree      cons_tres with topology/tree as Slurm 26.05's
//             _eval_nodes_topo() evaluates a job, on the fabric alone
//             (leaf switches hold the nodes);
//   tree-nvl  the same on what `m2g topology export --format=tree` writes:
//             the NVLink domains are the lowest switches;
//   block     Slurm 26.05 topology/block's eval_nodes_block() on the
//             blocks `m2g topology export --format=block` writes: a job
//             no block at its level can hold waits;
//   block-seg the same with every job submitted with --segment=S (S: N up
//             to the largest domain, else its largest divisor that fits);
//   firstfit  the first free nodes in rank order.
// The queue head's backfill reservation is on nodes: where its policy
// would place it once enough running jobs have ended (doc/simulator.md).
// With a signals timeline or power budgets, m2g also runs admission as
// job_submit/m2g does, on a feed whose draw is the simulated one (what
// started in the snapshot's own second is not in it: select/m2g books it):
// decide() at submission, and AdmissionSession's release rules for each job
// it holds at its begin time and, where the timeline changes, for every
// pending job (the queued deferrable ones are deferred when an event
// starts). Every policy's cap violations are measured. No Slurm, no
// globals, no randomness but the seeded streams.
//
// Curtailment (m2g, CurtailMode=monitor|enforce in m2g.conf): every
// CurtailIntervalSec while a job runs, and at every timeline edge, the
// simulator hands m2g-curtaild's planner (plan_curtailment(), curtail.hpp,
// the very function the controller calls) the running jobs and a feed
// whose draw is the simulated one at that instant. Under enforce each
// action takes effect `actuation_delay_s` later (apply_curtail_action()):
// a capped job draws its cap and runs at cap_speed() of its speed, a
// suspended one holds its GPUs at IdlePowerPerGpuW and makes no progress,
// a requeued one loses its work since its last checkpoint and is submitted
// again; resumes and uncaps speed them back up. Under monitor the plans
// are counted and nothing changes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model/model.hpp"
#include "tools/sim/trace.hpp"

namespace m2g {

enum class SimPolicy { M2G, Tree, TreeNvl, Block, BlockSeg, FirstFit };

const char* to_string(SimPolicy p);
// "m2g", "tree", "tree-nvl", "block", "block-seg" or "firstfit"; throws
// ParseError naming the choices.
SimPolicy parse_sim_policy(std::string_view s);

// An empirical CDF of per-GPU power (W), e.g. metric gpu_power of one
// cluster in ../shared/data/acme2023_power_thermal_cdf.csv.
struct PowerCdf {
    std::string source;  // "file (cluster)"
    std::vector<std::pair<double, double>> points;  // (cdf_pct 0..100, W), ascending
    // Inverse CDF at u in [0,1], interpolated between points.
    double sample(double u) const;
};
// Read the Acme CSV (header: cluster,metric,unit,cdf_pct,value) for
// metric gpu_power of `cluster`. Throws ParseError naming file:line, or
// Error when the cluster has no gpu_power rows (naming the ones it has).
PowerCdf parse_power_cdf(std::string_view text, const std::string& file, const std::string& cluster);
PowerCdf read_power_cdf(const std::string& path, const std::string& cluster);

struct Signals;

struct SimOptions {
    SimPolicy policy = SimPolicy::M2G;
    int scale_gpus = 1;       // multiplies every job's GPUs before rounding up to nodes
    double load = 0;          // > 0: scale inter-arrival times to this offered load; 0: as recorded
    uint64_t seed = 0;        // != 0: jobs submitted at the same second are shuffled with this seed
    // true: jobs submitted at the same time stay in the trace's order
    // whatever the seed (a forecast's queue is in Slurm's priority order;
    // the seed then draws power only).
    bool keep_order = false;
    // The trace clock's start, the time of the timeline's generated_at
    // (a forecast: now, on the epoch clock); -1: the first submit.
    double origin = -1;
    // >= 0: the run ends at this time (the trace's clock): no event after
    // it runs, a job not started by then has start -1, and one running
    // keeps the end its start gave it (a forecast's sample runs, whose
    // bands end at the horizon); -1: until nothing is left to happen. The
    // result's statistics then cover the run up to the stop only.
    double stop_at = -1;
    // A job id: the run ends once that job has started, its start and
    // placement being all that is asked (a forecast's alternatives); not
    // with curtailment, whose controller may still move it. Empty: no such
    // stop.
    std::string stop_after_start;
    int backfill_depth = 500; // queued jobs looked at per pass (Slurm's bf_max_job_test)
    // block, block-seg: BlockSizes in nodes (the first the base block's);
    // empty: what `m2g topology export --format=block` writes. {0}:
    // Slurm's default when topology.conf has no BlockSizes (levels 0-3).
    std::vector<int> block_sizes;
    // The head's backfill reservation: true, the nodes its policy would
    // give it at the shadow time (a later job that runs past it may not
    // use them); false, a count of GPUs (the classic EASY simplification;
    // also the fallback when the policy places the head nowhere even once
    // every running job has ended).
    bool reserve_nodes = true;
    // Backfill as Slurm's backfill plugin plans it (backfill.c
    // _attempt_backfill, _add_reservation): true, every pending job in
    // priority order, up to backfill_depth (bf_max_job_test), gets the
    // earliest start its policy finds on the nodes that the running jobs
    // (by their planned ends) and the reservations of the jobs before it
    // leave; it starts if that is now, else its nodes are reserved for
    // [start, start + limit rounded up to bf_resolution_s) when the start
    // is within bf_window_s. false: EASY, one reservation, the queue
    // head's (reserve_nodes says on what).
    bool backfill_slurm = false;
    double bf_window_s = 86400;     // Slurm's bf_window default, 1440 min
    double bf_resolution_s = 60;    // Slurm's bf_resolution default
    // Slurm's bf_interval: a pass runs when this long has passed since the
    // last one and something changed since (backfill.c backfill_agent,
    // _more_work); the main scheduler's starts still come at every event.
    // 0: a pass at every event.
    double bf_interval_s = 0;
    // Signals timeline: one m2g.signals/v1 document. Its generated_at is
    // the wall-clock time of the trace's first submit; its events and
    // maintenance windows carry their own times; its budgets and health
    // hold for the whole run. Draw is not read from it: the simulator
    // computes it from the running jobs. Null: no feed.
    const Signals* timeline = nullptr;
    // Per-GPU power of each job, drawn from this CDF with the seed (a
    // fixed stream when seed is 0). Null: every job draws its class's
    // estimate (power_w_per_gpu()).
    const PowerCdf* power = nullptr;
    std::string workload_class = "training";  // every job's --m2g-class (Philly: DL training)
    // Jobs given another class: a job whose id hashes (FNV-1a 64 of the
    // id, mod 10000, / 100) below the first share's percent gets its class,
    // below the first two shares' sum the second's, and so on; the rest
    // get workload_class. Independent of seed, order and policy.
    std::vector<std::pair<std::string, double>> class_shares;  // (class, percent of jobs)
    // An event enters the feed m2g reads (admission, placement and the
    // curtailment planner) this many seconds before it starts; -1: from
    // the start of the run, as the timeline says. Budgets are measured
    // against every event whether announced or not.
    int64_t event_notice_s = -1;

    // What m2g's controllers know (doc/simulator.md, What the controller
    // knows). time_limit_factor 0: every job's time limit is its run time
    // (the oracle); F > 0: its run time times F rounded up to a whole hour,
    // the limit a user would have asked for (admission, select/m2g and
    // backfill plan with it, as Slurm's does; jobs still end when their
    // work is done).
    double time_limit_factor = 0;
    // true: every job's time limit is the trace's requested time (SWF field
    // 9), as sbatch -t gave it to Slurm; a job running past it ends there
    // (Slurm's TIMEOUT, OverTimeLimit=0). Excludes time_limit_factor.
    bool time_limits_from_trace = false;
    // true: the curtailment planner is handed each job's simulated draw
    // (the oracle); false: the class estimate (power_w_per_gpu()), what
    // m2g-curtaild knows of a job without a per-job meter.
    bool planner_exact_power = true;

    // Curtailment (m2g with CurtailMode=monitor or enforce; doc/simulator.md).
    double actuation_delay_s = 3;  // from a plan to its effect on the jobs (caps, suspend, resume)
    // The feed m2g-curtaild reads reports the draw of this many seconds ago
    // (a BMS or meter that lags): its generated_at is that long past, and
    // every change since (jobs started or ended, m2g's own caps) is not in
    // it yet. 0: the draw at the start of this second, less m2g's own
    // actions in that second.
    double meter_lag_s = 0;
    // Nodes without a working m2g-nodeagent (hostlist expressions): a cap
    // on a job with a GPU there fails, as m2g-curtaild's would; the loop
    // marks the job and suspends it instead (curtail_tick.hpp).
    std::vector<std::string> no_agent;
    // Speed of a capped job as a function of its draw under the cap over
    // its uncapped draw: (ratio, speed) points, ascending, linear between
    // them, speed 1 at ratio 1 and above, proportional to the ratio below
    // the first point. Empty: kCapSpeedDefault.
    std::vector<std::pair<double, double>> cap_speed;
    double checkpoint_interval_s = 1800;  // a job checkpoints after every this much of its work; 0: never
    double restart_overhead_s = 300;      // work a requeued job does again on restart (loading its checkpoint)
    double response_target_s = 30;        // events: time over a budget counts as late from here on
    // Also run the trace with CurtailMode=off and report what curtailment
    // changed (throughput loss, slowdown, energy shifted).
    bool curtail_baseline = true;
    bool record_site_power = false;  // fill SimResult::site_power
    // Call the planner at every round, also where nothing it reads changed
    // since a plan that found nothing to do (the same answer: for checking).
    bool curtail_every_tick = false;

    // Preemption by QOS (doc/simulator.md, Preemption): a job whose id
    // hashes (FNV-1a 64 of "qos:" and the id, mod 10000, / 100) below
    // preempt_pct runs in a QOS that preempts the others
    // (PreemptType=preempt/qos, PreemptMode=REQUEUE); 0: no preemption.
    // Preemptors are first in the queue. When one cannot start on free
    // GPUs, its policy chooses victims among the running jobs of the other
    // QOS: m2g through select/m2g's session (decide() with the candidates),
    // a baseline (and what select/m2g leaves to cons_tres) as cons_tres's
    // _run_now() does with preempt/qos's candidate order. A victim is
    // requeued: its work since its last checkpoint is lost, and it restarts
    // with restart_overhead_s. Not with curtailment.
    double preempt_pct = 0;
    // The preemptors' --m2g-topology under m2g (the baselines place every
    // job by their own rules).
    std::string preemptor_topology = "strict:nvlink";
};

// The default cap_speed curve: mean iteration-time slowdown of five
// pipeline-parallel training jobs (BERT-huge, BLOOM-3B, GPT-3 XL, T5-3B,
// Wide-ResNet-101) on four A100s under one GPU power limit of 300 down to
// 175 W, against their average draw, from the Perseus artifact (Chung et
// al., SOSP 2024; doc/simulator.md).
extern const std::vector<std::pair<double, double>> kCapSpeedDefault;
// Speed (0..1] at draw ratio `x` on `curve` (kCapSpeedDefault when empty).
double cap_speed(const std::vector<std::pair<double, double>>& curve, double x);
// Parse "0.6:0.58,0.7:0.71,..." (the --cap-speed option); throws
// ParseError naming what is accepted.
std::vector<std::pair<double, double>> parse_cap_speed(std::string_view s);

struct SimJobResult {
    std::string id;
    int gpus = 0;            // after --scale-gpus
    int nodes = 0;           // ceil(gpus / gpus_per_node)
    int gpus_per_node = 0;   // GPUs taken on each of its nodes: ceil(gpus / nodes)
    double w_gpu = 0;        // power per GPU while it runs (W)
    double submit = 0;       // after --load
    double limit = 0;        // time limit from the trace (s; 0: none); used with time_limits_from_trace
    double eligible = 0;     // when admission let it queue (submit unless deferred or paced)
    double start = -1;       // -1: rejected (can never fit, or admission rejected it)
    double end = -1;
    bool backfilled = false; // started ahead of an earlier job
    bool deferred = false;   // admission moved its begin time at least once
    std::string admission;   // the last verdict that held it, "" when admitted at once
    std::vector<int> placed; // model node indices, ascending
    int domains = 0;         // NVLink groups spanned (a node outside domains is its own group)
    int domain_lb = 0;       // fewest groups that could hold it on an empty cluster
    int leaves = 0;          // leaf switches spanned
    int leaf_lb = 0;         // fewest leaf switches that could hold it (0: no leaf switches)
    std::string workload_class;  // its --m2g-class
    bool deferrable = true;  // as admission sees it (the class's Deferrable=)
    // Curtailment (start is the first start; end the last end).
    int caps = 0, suspends = 0, requeues = 0;
    double capped_s = 0;     // time it ran under a cap
    double suspended_s = 0;  // time it was suspended
    double lost_gpu_s = 0;   // GPU-seconds of work lost to requeues (since the checkpoint, and restarts;
                             // a preemption's: the work since it, and the restart the next run redoes)
    // Preemption (SimOptions::preempt_pct).
    bool preemptor = false;  // in the preempting QOS
    bool preempted_start = false;  // a preemptor that started by evicting others (its first start)
    int preemptions = 0;     // times it was evicted for a preemptor
    int victims = 0;         // a preemptor: jobs evicted for it
    int wasted = 0;          // of which none of whose nodes it got
    double evicted_gpu_s = 0;  // a preemptor: its victims' GPUs x the time they had run
};

// One curtailment event of the timeline, as the run saw it.
struct SimEventResult {
    std::string id;
    std::string scope;        // "site", "row1", "nvl03"
    double start = 0, end = 0;  // simulation seconds (trace clock)
    double budget_kw = -1;    // effective budget during the event (-1: none known)
    double draw_at_start_kw = 0;
    double peak_draw_kw = 0;  // while the event was active
    // From start until every scope is within its effective budget; 0:
    // never over; -1: still over at its end.
    double response_s = -1;
    double over_s = 0;        // time the event's scope was over the budget while active
    double over_late_s = 0;   // of which after start + response_target_s
    double peak_over_kw = 0;  // the largest excess of the event's scope while active
    double energy_kwh = 0;    // site GPU energy while active
    double announced = 0;     // when m2g's feed first showed it (simulation seconds)
};

struct SimStats {  // one size class, or all jobs
    std::string name;
    int jobs = 0;
    double delay_mean = 0, delay_p95 = 0, delay_p99 = 0;          // start - submit
    double completion_mean = 0, completion_p95 = 0, completion_p99 = 0;  // end - submit
};

struct SimResult {
    std::string policy;
    int gpus_per_node = 0;
    int scale_gpus = 1;
    double load = 0;            // as asked (0: as recorded)
    double offered_load = 0;    // node-seconds asked / (nodes x submit span), after --load
    double arrival_factor = 1;  // inter-arrival times were multiplied by this
    uint64_t seed = 0;
    int jobs = 0;               // simulated (started) jobs
    int rejected = 0;           // larger than the policy can ever place
    int unfinished = 0;         // curtailment: still suspended or requeued when nothing more could happen
    int backfilled = 0;
    int fit_one_domain = 0;     // jobs whose lower bound is one domain
    double containment = 1;     // share of those placed in one domain (1 when there are none)
    int multi_domain_jobs = 0;  // jobs whose lower bound is more than one domain
    double span_ratio = 1;      // mean domains / lower bound over those (1 when there are none)
    double leaf_span_ratio = 1; // mean leaves / lower bound over jobs under leaf switches
    // Averaged over the busy window: from the submission at the 1% point
    // to the last start or submission, whichever is later (the makespan
    // when that has no length).
    double window_s = 0;
    double stranded_gpus = 0;   // time-averaged fraction of GPUs idle while a job waits in the queue
    double utilisation = 0;     // time-averaged fraction of GPUs allocated
    double node_utilisation = 0;  // time-averaged fraction of nodes with a job
    double utilisation_makespan = 0;  // GPU-seconds asked / (GPUs x makespan)
    double makespan_s = 0;      // first submit to last end
    SimStats all;
    std::vector<SimStats> classes;  // "node", "domain", "multi-domain"
    // Power (GPU power of running jobs; idle GPUs and hosts are not counted).
    double energy_kwh = 0;
    double peak_site_kw = 0;
    double mean_site_kw = 0;      // over the makespan
    int cap_violations = 0;       // times a scope's draw went above its effective budget
    double cap_violation_s = 0;   // time with at least one scope above its budget
    double cap_peak_over_kw = 0;  // the largest excess seen
    std::vector<SimEventResult> events;
    int deferred = 0;             // jobs admission deferred or paced at least once
    int admission_rejected = 0;   // jobs admission rejected (not in `rejected`)
    int unusable_nodes = 0;       // down or degraded in the timeline's health
    // Curtailment (m2g, CurtailMode not off; doc/simulator.md).
    std::string curtail_mode = "off";
    double actuation_delay_s = 0;
    double meter_lag_s = 0;
    int curtail_plans = 0;        // plan_curtailment() calls
    int curtail_plans_skipped = 0;  // rounds on unchanged inputs after a plan with nothing to do
    int curtail_caps = 0, curtail_uncaps = 0, curtail_suspends = 0, curtail_resumes = 0, curtail_signals = 0,
        curtail_requeues = 0;     // actions applied (monitor: reported, each once while the plan holds)
    int curtail_cap_failures = 0;  // caps that could not be applied (--no-agent): the job was re-planned
    double requeue_lost_gpu_s = 0;
    double energy_in_events_kwh = 0;  // site GPU energy while any event is active
    // Work non-deferrable jobs got done (GPU-seconds at full speed): over
    // the load window (the submission at the 1% point to the last one),
    // and while any event is active.
    double nondeferrable_work_window_gpu_s = 0;
    double nondeferrable_work_in_events_gpu_s = 0;
    // Against the same run with CurtailMode=off (baseline: it was run).
    bool baseline = false;
    int nondeferrable_jobs = 0;
    double nondeferrable_work_gpu_s = 0;   // their GPUs x run time
    double nondeferrable_delay_gpu_s = 0;  // sum of GPUs x (completion - completion off), signed
    double baseline_nondeferrable_work_window_gpu_s = 0;
    double baseline_nondeferrable_work_in_events_gpu_s = 0;
    // 1 - nondeferrable_work_window_gpu_s / the baseline's: the share of
    // their throughput lost (0.01: 1%); the same during events.
    double nondeferrable_loss = 0;
    double nondeferrable_event_loss = 0;
    double nondeferrable_curtailed_s = 0;  // time non-deferrable jobs ran capped or suspended
    int deferrable_jobs = 0;
    double deferrable_stretch_mean = 1, deferrable_stretch_p95 = 1;  // completion / completion off
    double deferrable_delay_mean_s = 0, deferrable_delay_p95_s = 0;  // completion - completion off
    double baseline_energy_kwh = 0;
    double baseline_energy_in_events_kwh = 0;
    double energy_shifted_kwh = 0;  // baseline_energy_in_events_kwh - energy_in_events_kwh
    // Preemption (SimOptions::preempt_pct > 0).
    double preempt_pct = 0;
    int preemptors = 0;           // jobs in the preempting QOS (started)
    int preemptor_one_domain = 0; // of those whose lower bound is one domain
    double preemptor_containment = 1;  // share of those placed in one domain
    double preemptor_delay_mean = 0, preemptor_delay_p95 = 0;  // their start - submit
    int preempting_starts = 0;    // preemptors that started by evicting
    int victims = 0;              // evictions
    int wasted_evictions = 0;     // victims none of whose nodes the preemptor got
    double evicted_gpu_s = 0;     // victims' GPUs x the time they had run
    double preempt_lost_gpu_s = 0;  // their work lost: since the last checkpoint, and the restart redone
    // m2g only: at each of its preemptions, what stock cons_tres + block
    // would have evicted on the same state (the same running jobs, ages and
    // free GPUs; job_test.c _run_now() on the block placer), beside what
    // m2g evicted. Counted where both found victims; paired_block_none:
    // preemptions where block found no way to start the job.
    int paired_preemptions = 0, paired_block_none = 0;
    int paired_m2g_victims = 0, paired_block_victims = 0;
    double paired_m2g_evicted_gpu_s = 0, paired_block_evicted_gpu_s = 0;  // GPUs x time run
    double paired_m2g_lost_gpu_s = 0, paired_block_lost_gpu_s = 0;        // work lost since checkpoints
    int paired_block_wasted = 0;  // block victims none of whose nodes block's placement used
    double wall_s = 0;
    double sim_jobs_per_s = 0;
    std::vector<SimJobResult> job_results;  // in submit order (after the tie shuffle)
    // With record_site_power: (time, site GPU kW from then on), at every change.
    std::vector<std::pair<double, double>> site_power;
};

// Whether the job `id` runs in the preempting QOS at a preempt_pct of
// `pct`: FNV-1a 64 of "qos:" and the id, mod 10000, / 100, below pct.
bool sim_preemptor(std::string_view id, double pct);

// Run the trace on the model. Throws Error when the options or the model
// do not allow the policy (e.g. BlockSizes Slurm would refuse).
SimResult simulate(const Model& m, const Trace& trace, const SimOptions& opts);

// `m2g simulate` output: labelled lines, or one JSON object.
std::string format_sim_result(const SimResult& r, bool json);

// One CSV line per job, in submit order, with a header: id, gpus, nodes,
// submit, eligible, start, end, domains, domain_lb, leaves, w_gpu, admission,
// nodelist (a Slurm hostlist of the model's node names).
std::string format_sim_jobs(const Model& m, const SimResult& r);

// site_power as CSV: "t,site_kw" and one line per change.
std::string format_sim_power(const SimResult& r);

}  // namespace m2g
