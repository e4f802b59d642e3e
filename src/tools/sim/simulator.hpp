// m2g tools: the simulator's run — one object per simulate() call (sim.hpp
// is the interface; doc/simulator.md what it models). Internal to
// src/tools/sim/: its parts live in
//   sim_cluster.cpp  the run's set-up: options, jobs (scale, order, classes,
//                    power, load), lower bounds, the nodes' free GPUs
//   sim_queue.cpp    the event loop, the FCFS queue, placement through the
//                    policy or select/m2g's session, EASY backfill
//   sim_power.cpp    the feed m2g reads, admission (job_submit/m2g's
//                    session), curtailment (m2g-curtaild's planner), power
//                    and budgets measured
//   sim_results.cpp  the metrics of a finished run, the CurtailMode=off
//                    comparison, and the output formats
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/job/intent.hpp"
#include "core/place/baselines.hpp"
#include "core/place/session.hpp"
#include "core/power/admission.hpp"
#include "core/power/admission_session.hpp"
#include "core/power/curtail.hpp"
#include "core/power/curtail_tick.hpp"
#include "core/power/signals.hpp"
#include "tools/sim/sim.hpp"

namespace m2g {
namespace sim {

// "%.6g"; times on the trace clock (10^7 s and more) to the millisecond.
std::string num(double v);
std::string num_t(double v);

// At equal times: ends first. kActuate and kTick only with curtailment.
enum EventKind { kEnd = 0, kSignal = 1, kSubmit = 2, kRelease = 3, kWake = 4, kActuate = 5, kTick = 6, kBackfill = 7 };

struct Event {
    double t;
    int kind;
    int job;
    bool operator>(const Event& o) const
    {
        return t != o.t ? t > o.t : kind != o.kind ? kind > o.kind : job > o.job;
    }
};

// A scope with a power budget the run watches: the site, a row (fault
// domain) or a rack (NVLink domain).
struct Watched {
    EventScope scope;
    int index;
    std::string name;
    bool over = false;
};

class Simulator {
  public:
    // Checks the options and sets the run up; throws Error as simulate().
    Simulator(const Model& m, const Trace& trace, const SimOptions& opts);
    SimResult run();

  private:
    // ---- set-up (sim_cluster.cpp) -------------------------------------------
    void check_options();
    void choose_policy();
    std::vector<int> block_sizes() const;
    void watch_budgets();
    void build_jobs();
    void scale_load();
    void lower_bounds();
    void node_state();
    void runtime_state();
    int64_t epoch(double t) const { return epoch0 + static_cast<int64_t>(std::floor(t - first_submit)); }
    double sim_time(int64_t e) const { return first_submit + static_cast<double>(e - epoch0); }
    int usable_nodes(int per_node);
    const std::vector<uint8_t>& usable_for(int per_node);
    JobFacts facts_of(int j);
    int64_t time_limit_of(int j) const;
    // Whether backfill and select/m2g plan with time limits rather than
    // run times (time_limit_factor or time_limits_from_trace).
    bool plans_on_limits() const;
    // When backfill expects running job j to end: its end, or with time
    // limits (time_limit_factor > 0) its start plus its limit, as Slurm's
    // backfill plans with time limits.
    double plan_end(int j) const;
    // How long backfill expects job j to run: its run time, or its limit.
    double plan_len(int j) const;
    // The running jobs by plan_end(), for the reservation walks.
    const std::vector<std::pair<double, int>>& planned_ends();

    // ---- queue, placement, backfill (sim_queue.cpp) --------------------------
    void push_timeline_events();
    void start_pinned();
    void run_events();
    bool select_nodes(const JobFacts& f, const std::vector<uint8_t>& offer, const FreeGpus& free_now,
                      SelectMode mode, double now);
    bool fits_empty(int index, double now);
    void adjust_node(int n, int delta_gpus);
    void release(int j);
    void start_job(int j, double now);
    bool try_place(int j, double now);
    void enqueue(int j);
    void queue_job(int j, double now);
    bool reserve_head(int head, double now, double& shadow);
    int will_run_free_at(int head, double now, double& shadow, const uint64_t* held = nullptr);
    void hide_reserved(bool hide);
    void hide_nodes(const std::vector<int>& nodes, bool hide);
    void blocked_during(double t0, double t1);
    void blocked_list();
    void backfill_slurm(double now);
    void backfill_pass(double now);
    bool could_start_now(int j, double now);
    bool backfill_one(int j, int head, double now);
    bool reserved_free_at(int head, double t);
    bool try_place_outside(int j, double now);
    void schedule(double now);
    // Preemption (SimOptions::preempt_pct).
    std::vector<PreemptCandidate> preempt_candidates(double now) const;
    bool stock_preempt(Placer& pl, int j, const std::vector<PreemptCandidate>& cands,
                       std::vector<uint32_t>& victims, const std::vector<uint8_t>* allowed);
    // Work job v loses if evicted now (GPU-s: since its last checkpoint,
    // and the restart overhead it redoes), and the work it keeps.
    double evict_loss(int v, double now, double* keep = nullptr) const;
    bool preempt_for(int j, double now);
    void evict(int victim, double now);

    // ---- the feed, admission, curtailment, budgets (sim_power.cpp) -----------
    const Signals& timeline_at(double now);
    SignalsView view_at(double now);
    void book_power(const SimJobResult& job, double sign);
    void book_w(const SimJobResult& job, double dw);
    void hold(int j, int64_t begin, double now, const std::string& reason);
    bool submit(int j, double now);
    ReleaseAction release_rules(int j, double now);
    void release_held(int j, double now);
    void release_pass(double now);
    void advance(int j, double t);
    void set_end(int j, double end);
    void set_rate(int j, double t);
    void drop_live(int j);
    SignalsView curtail_view(double now);
    void requeue(int j, double t);
    void count_action(const CurtailAction& a);
    void actuate(const CurtailAction& a, uint64_t order, double t);
    bool plan_round(double now);
    void check_caps(double now);
    void integrate_events(double from, double to);

    // ---- results (sim_results.cpp) --------------------------------------------
    void collect_results();
    void compare_with_baseline();

    // ---- the run ----------------------------------------------------------------
    const std::chrono::steady_clock::time_point wall0 = std::chrono::steady_clock::now();
    const Model& m;
    // The model m2g-curtaild's loop plans on: m, but a GPU without a job
    // adds nothing to the feed (the simulated draws leave idle GPUs out).
    Model planner_m;
    const Trace& trace;
    const SimOptions& opts;
    std::vector<JobIntent> class_intent;  // the classes jobs may carry: [0] the default, then one per share
    SimResult r;
    std::vector<SimJobResult>& jobs = r.job_results;
    int gpn = 0, total_gpus = 0, nnodes = 0;
    const Signals* tl = nullptr;

    // m2g: select/m2g's PlacementSession; cons_tres's part (and every
    // baseline) is a Placer.
    std::unique_ptr<Placer> placer;
    std::unique_ptr<PlacementSession> select;
    std::unique_ptr<Placer> block_ref;  // m2g with preemption: stock block, for the paired comparison
    int64_t prefer_wait_s = 0;
    double prefer_wait = 0;

    std::vector<uint8_t> node_ok;  // not down or degraded in the timeline's health
    std::vector<int> node_gpus;    // m.nodes[n].gpus, side by side for the per-node loops
    std::vector<Watched> watched;
    int64_t epoch0 = 0;
    bool power_aware = false;   // select/m2g's gate reads the simulated feed (Admission=enforce)
    bool admission_on = false;  // job_submit/m2g decides (Admission=enforce or monitor)

    std::vector<int> cls_of;        // each job's class (index into class_intent)
    // Preemption: per job, its checkpointed work, the length of its current
    // run (pre_len; duration until its first eviction), the restart
    // overhead in that, and the seconds its evicted runs took.
    std::vector<double> pre_saved, pre_len, pre_overhead, pre_ran;
    std::vector<std::vector<int>> pinned;  // running from its submit on these nodes (TraceJob::running_on)
    std::vector<double> duration;   // each job's run time
    double first_submit = 0;
    size_t w0 = 0;                  // the submission at the 1% point

    std::vector<int> group_sizes, leaf_sizes;  // descending
    int max_group = 1;
    std::vector<int> node_leaf;

    // Free GPUs per node; healthy nodes by free GPUs.
    std::vector<int> node_free;
    std::vector<int> free_count;  // healthy nodes with exactly k free GPUs
    int free_gpus = 0;
    uint64_t version = 1;
    std::vector<std::vector<uint8_t>> usable;  // usable[g]: healthy nodes with g GPUs free
    std::vector<uint64_t> usable_version;

    std::vector<int> picked;
    std::vector<uint8_t> stock_offer;
    bool clock_started = false;
    std::map<std::tuple<int, int, int>, bool> ever_fits;
    std::vector<uint8_t> scratch;

    // Power of the running jobs, and the feed m2g reads.
    std::vector<double> node_kw, domain_kw;
    double site_kw = 0;
    std::shared_ptr<Signals> snap;
    std::vector<int> recent;
    std::vector<double> reported_kw;  // per node
    std::vector<double> last_start;   // of its current run
    const Signals no_signals{};
    Signals shown;
    std::vector<uint8_t> shown_mask;
    bool shown_valid = false;
    SignalsView view;  // valid during one pass when power_aware

    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
    std::list<int> queue;                           // eligible waiting jobs, FCFS (job index order)
    std::multiset<std::pair<double, int>> running;  // (end, job)
    uint64_t running_version = 1;  // moves with every change to `running` (planned_ends' cache)
    double power_integral = 0, over_integral = 0;
    struct Segment {
        double t0, t1;
        int busy_gpus, busy_nodes, stranded;
    };
    std::vector<Segment> segments;  // the state between two event times
    int busy_gpus = 0;
    double nd_rate = 0;  // GPUs x speed of the running non-deferrable jobs: their work per second
    double window_a = 0, window_b = 0;  // the load window (after --load)
    double last_t = 0, last_end = 0;
    int stranded_now = 0, busy_nodes = 0;
    bool any_over = false;
    std::set<std::tuple<int, int, int, int>> failed;

    // Curtailment.
    const AdmissionPolicy& ap;
    bool curtail = false, enforce = false;
    size_t nj = 0;
    std::vector<CurtailJob> cj;
    std::vector<double> work_left, rate_t, speed, w_now, saved, energy_ws;
    // Per job: the second of m2g's last action on it and its simulated
    // per-GPU draw before the first action of that second (the feed of that
    // second leaves them out, curtail_view()).
    std::vector<double> act_sec, act_w0;
    std::vector<double> attempt_work, attempt_overhead;
    std::vector<uint8_t> in_running;
    // select/m2g holds the job for room (wait=power-room) since this time:
    // its wait's end is an event (then it starts regardless); 0 none.
    std::vector<int64_t> room_woken;
    std::vector<int> live, live_pos;  // jobs holding GPUs (running or suspended)
    CurtailState cstate;
    CurtailTick tick;  // m2g-curtaild's loop
    struct Pending {
        double t;          // in effect from
        CurtailAction a;
        uint64_t order;    // the job's curtailment order the loop gave it
    };
    std::deque<Pending> pending;  // done by the loop, not in effect yet
    std::vector<uint8_t> no_agent;  // per node: caps fail there (SimOptions::no_agent)
    std::vector<int> requeued;
    bool tick_pending = false;
    uint64_t inputs = 1, planned_inputs = 0;

    // Admission.
    AdmissionSession admission;
    std::vector<std::string> adm_text;  // each job's AdminComment admission part
    std::vector<int64_t> adm_begin;     // the begin time m2g holds a job until, 0: not held
    std::vector<double> feed_kw;        // per node
    // Meter lag (SimOptions::meter_lag_s): every change of a node's draw
    // booked in the last meter_lag_s seconds (and the second before), in
    // time order; clock_ is the time of the event being handled.
    struct DrawChange {
        double t;
        int node;
        double kw;
        bool start = false;  // a job's start (the planner counts one in the reading's second as in it)
    };
    std::deque<DrawChange> draw_changes;
    double clock_ = 0;

    // Backfill.
    std::vector<int> reserved;
    std::vector<std::pair<double, int>> ending;
    std::vector<size_t> group_end;
    std::vector<int> fut_free, fut_try;
    std::vector<uint8_t> fut_offer;
    NodeReleases node_rel;  // will_run_free_at: per node, when its running jobs give GPUs back (ms)
    // will_run_free_at's node_rel answers (ms), per node x GPU count, for
    // one state (version, running_version); kUnknownMs: not yet asked.
    static constexpr int64_t kUnknownMs = INT64_MIN;
    std::vector<int64_t> free_ms_memo;
    uint64_t free_ms_memo_version = 0, free_ms_memo_running = 0;
    // The same as select/m2g's FreeAt answers (epoch seconds, 0: free by
    // `free_ep_now`), for the same state and that time.
    std::vector<int64_t> free_ep_memo;
    double free_ep_now = -1;
    uint64_t node_end_version = 0;  // the running_version node_rel was built for
    std::vector<std::pair<double, int>> plan_ends_;  // planned_ends()
    uint64_t plan_ends_version = 0;  // the running_version plan_ends_ was built for
    std::vector<std::vector<uint8_t>> usable_outside;
    std::vector<uint64_t> usable_outside_version;
    std::set<std::tuple<int, int, int, int>> failed_outside;
    struct Kept {
        int head;
        int64_t since;
        bool over;
        double shadow;  // -1: none kept
        bool same(const Kept& o) const { return head == o.head && since == o.since && over == o.over; }
    } kept{-1, 0, false, -1};
    std::vector<int> reserved_free;        // reserved nodes with k GPUs free
    // Slurm's backfill (SimOptions::backfill_slurm): this pass's
    // reservations, and the nodes one of them holds during a job's run.
    // One reservation of the pass, its nodes as a bitmap (node_space's
    // bitstr_t): the pass ORs and ANDs them once per candidate start.
    struct BfReservation {
        std::vector<uint64_t> bits;
        double t0, t1;
    };
    std::vector<BfReservation> bf_plan;
    std::vector<int> blocked;
    std::vector<uint64_t> blocked_bits, picked_bits;
    std::vector<int> bf_deferred;          // candidates whose reservation waits (backfill_slurm)
    // Per pass, for g = 0..gpn: the healthy nodes that hold g GPUs at all
    // (when every job on them has ended), a bitmap, for backfill_one's
    // window test.
    std::vector<std::vector<uint64_t>> bf_capable;
    // And the healthy nodes with g GPUs free now, for could_start_now's
    // count: built for `version` (0: at the pass's start).
    std::vector<std::vector<uint64_t>> bf_free;
    uint64_t bf_free_version = 0;
    // SimOptions::bf_interval_s: when the last pass ran, whether anything
    // changed since (backfill.c _more_work), and whether a kBackfill event
    // for the next pass is queued.
    double bf_last = -1;
    bool bf_more_work = false;
    bool bf_wake_pending = false;
    uint64_t reserved_free_version = 0;    // 0: count them again
};

}  // namespace sim
}  // namespace m2g
