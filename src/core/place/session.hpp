// m2g core: the placement session — all of select/m2g's policy for one
// slurmctld behind one facade, so every Slurm release's adapter (the 22.05
// select_cons_tres wrapper, the 26.05 one) runs the same code:
//
//   load()         m2g.conf → model, engine, signals feed, stats writer;
//                  a broken file keeps the model in force;
//   decide()       one select_p_job_test: signals gate (maintenance, down
//                  nodes, rack/row/site power, pacing), then locality
//                  any / prefer / strict through the placement engine, the
//                  prefer fallback and the AdminComment texts;
//   job_started()  one select_p_job_begin: book the job's power per rack
//                  until the feed reports it, its GPUs in the pacer, and
//                  the placement counters.
//
// The adapter keeps only what reads or writes Slurm's structs: mapping
// Slurm node indexes to model indexes (find_node), filling JobFacts from
// job_record_t, calling cons_tres with the bitmaps an Outcome describes,
// writing AdminComment with set_annotation(), and timing each call for
// counters(). For one job_test the adapter calls decide(), then apply()
// with its OfferActions (cons_tres on Slurm's bitmaps), which carries the
// Outcome out in this order:
//
//   clear o.ruled_out from the offer;
//   write o.annotation_now (if any);
//   Offer::Refuse    → fail;
//   Offer::Stock     → cons_tres on the offer; accepted: write o.annotation_accepted (if any);
//   Offer::Narrowed  → cons_tres on o.nodes only; accepted: those are the
//                      job's nodes, and with o.annotate_placed write
//                      placed_annotation(o, chosen names); refused and
//                      o.fallback_to_allowed: cons_tres on the offer;
//   count o.verdict_after(accepted).
//
// The simulator and `m2g place` run the same policy on a model they hold:
// adopt() takes it with their signals and health instead of m2g.conf's
// feeds, then decide() and job_started() as above (mode RunNow, the
// simulated clock).
//
// No Slurm header, no globals. Not thread-safe: slurmctld calls the select
// plugin under its job and node locks, which serialise the calls; the
// signals feed and the stats writer run threads of their own.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/power/admission.hpp"
#include "core/base/log.hpp"
#include "core/model/model.hpp"
#include "core/place/engine.hpp"
#include "core/place/preempt.hpp"
#include "core/power/signals.hpp"
#include "core/obs/stats.hpp"

namespace m2g {

// What a select_p_job_test call asks (Slurm's SELECT_MODE_*).
enum class SelectMode {
    RunNow,    // start the job now: the only mode that writes AdminComment
    TestOnly,  // could the job ever run (submission): signals never block it
    WillRun,   // when and where could it run (backfill, sbatch --test-only)
};

// What the adapter reads from job_record_t.
struct JobFacts {
    uint32_t job_id = 0;
    std::string partition;               // "" none
    std::vector<std::string> spank_env;  // spank_job_env: "KEY=VALUE" (the M2G_* intent)
    // The intent, typed, when the caller has it (the simulator, `m2g
    // place`): then spank_env is not read. Otherwise the session decodes
    // spank_env once per job and keeps it while the environment is the same.
    std::optional<JobIntent> intent;
    int nodes = 1;                       // nodes the job needs (job_node_count())
    int min_nodes = 1;                   // fewest nodes Slurm accepts for it
    int max_nodes = 0;                   // most nodes it accepts; 0: nodes
    int gpus_per_node = 0;               // asked per node (--gpus-per-node, --gres); 0: none or unknown
    // GPUs asked in all (--gpus, or --gpus-per-task times the tasks) when
    // not per node; shape_job() spreads them over nodes.
    int gpus_total = 0;
    int64_t time_limit_s = 0;            // <= 0: unlimited
    // The prefer wait (PreferWaitSec=) counts from the first run-now test
    // in which the job could have started on the nodes free then, with a
    // placement short of its intent: the session keeps that clock. These
    // two only seed or override it:
    int64_t prefer_since = 0;  // the clock of an earlier slurmctld (AdminComment prefer_since=); 0 none
    bool wait_over = false;    // the caller says the wait is over (`m2g place fallback=yes`, test-only)
    bool names_nodes = false;  // named (-w) or contiguous nodes: Slurm decides alone
};

// The node count a job_test places for: req_nodes when above min_nodes
// (capped by max_nodes when set), else min_nodes.
int job_node_count(uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes);

// The job as it is placed: a job that asks its GPUs in all (gpus_total)
// gets them spread evenly over its nodes (gpus_per_node), and when its node
// count is open (max_nodes above nodes) over the fewest nodes of node_gpus
// GPUs that hold them, as cons_tres fills nodes (sbatch --gpus=8 without
// -N: two 4-GPU nodes, not one node of 8). A per-node count wins.
JobFacts shape_job(JobFacts job, int node_gpus);

// GPUs free now on a model node (the adapter reads Slurm's gres state).
// Only asked for nodes Slurm offers, and only when the job wants GPUs.
using FreeGpus = std::function<int(int model_node)>;

// When a model node is expected to have `gpus` GPUs free of the jobs
// running on it now (epoch s; 0 or anything up to now: free now); gpus 0:
// free of every job. Will-run answers use it to plan the job on the nodes
// that free first (the adapter reads running jobs' end times into a
// NodeReleases). A job of one GPU waits for one GPU, not for the node.
using FreeAt = std::function<int64_t(int model_node, int gpus)>;

// The jobs running on each model node, as their ends give GPUs back: what
// select/m2g reads from slurmctld's job list and the simulator from its
// running jobs, so both answer FreeAt the same way.
class NodeReleases {
public:
    static constexpr int64_t kNever = std::numeric_limits<int64_t>::max() / 4;
    void reset(size_t nodes);
    // A job on `node` until `end` (kNever: suspended, or no time limit)
    // holding `gpus` of its GPUs (< 0: unknown, the node is free of it
    // only when it ends).
    void add(int node, int64_t end, int gpus);
    // When `node` has `need` GPUs free, `free_now` of them free now: 0 when
    // it has them now, else the end by which enough have ended; need <= 0,
    // or a holder of unknown GPUs: when every job on it has ended (0 none).
    int64_t free_at(int node, int need, int free_now) const;

private:
    struct Release {
        int64_t end;
        int gpus;
    };
    // Sorted by end on the first question about a node (mutable for that).
    mutable std::vector<std::vector<Release>> by_node_;
    mutable std::vector<uint8_t> sorted_;
};

// What decide() tells the adapter to do with Slurm's bitmap.
struct Outcome {
    enum class Offer {
        Stock,     // cons_tres decides on the whole (cleared) offer
        Refuse,    // the job cannot start: fail without asking cons_tres
        Narrowed,  // offer cons_tres only `nodes`
    };
    Offer offer = Offer::Stock;
    // Model nodes the signals ruled out: clear them from Slurm's offer
    // before any cons_tres call (also before a Refuse).
    std::vector<int> ruled_out;
    std::vector<int> nodes;            // Narrowed: the model nodes to offer
    bool fallback_to_allowed = false;  // Narrowed refused by cons_tres: ask it again on the cleared offer
    std::string annotation_now;        // write before calling cons_tres ("": none)
    std::string annotation_accepted;   // Stock: write when cons_tres accepts ("": none)
    // Narrowed by preemption (decide()'s `preemptable`): the jobs to evict,
    // ascending id, and the work they lose; the adapter offers cons_tres
    // only these candidates. Empty: the job starts without preempting.
    bool preempting = false;  // placed by a preemption plan (preempt may be empty: its victims are leaving)
    std::vector<uint32_t> preempt;
    double preempt_gpu_hours = 0;
    // What the AdminComment names: this plan's victims, and those an
    // earlier accepted plan evicted for the job (preemption_started()),
    // with the work they lost; nullopt: no preemption made this room.
    std::vector<uint32_t> evicted;
    std::optional<double> evicted_gpu_h;
    std::string preempt_reason;  // the plan's own reason (reason = it, then the engine's)
    bool annotate_placed = false;      // Narrowed accepted: write placed_annotation()

    // The verdict to count, once cons_tres answered (`accepted`; ignored
    // for Refuse and Stock): Narrowed accepted → Placed; refused →
    // Stock when it fell back, else Waiting.
    SelectVerdict verdict_after(bool accepted) const;

    // For verdict_after() and placed_annotation().
    SelectVerdict verdict = SelectVerdict::Stock;
    std::string policy;        // "strict:nvlink", ...
    double score = 0;          // the engine's placement
    std::string reason;        // Narrowed: the engine's; Refuse: why the job waits
    std::string signals;       // what the signals gate avoided or noted ("": nothing)
    // The engine's placement when it ran (Narrowed, or Refuse because no
    // placement meets the intent): what `m2g place` reports.
    Placement placement;
    // Prefer locality, waiting for its intent although a lesser placement
    // was free: when its prefer wait ends (epoch s; 0 no clock runs), and
    // whether this call started the clock.
    int64_t fallback_at = 0;
    bool clock_started = false;
};

// What applying an Outcome asks of Slurm's cons_tres, or of what stands in
// for it (the simulator's tree placer, `m2g place`'s report). Model node
// indices throughout; the adapter maps them to its bitmaps.
struct OfferActions {
    std::function<void(const std::vector<int>& model_nodes)> rule_out;  // clear them from the offer
    std::function<bool()> test_offer;                                  // cons_tres on the offer as cleared
    std::function<bool(const std::vector<int>& model_nodes)> test_only;  // on these only; true: the job's nodes
    std::function<void(const std::string& text)> annotate;             // empty: nothing is written
    std::function<std::vector<std::string>()> chosen;                  // node names the job got, after a test
};

// apply()'s answer: whether the job got nodes, and the verdict to count.
struct Applied {
    bool accepted = false;
    SelectVerdict verdict = SelectVerdict::Stock;
};

// Where the session logs: `log` (Info, Warning, Error; also the signals
// feed's and the stats writer's sink), and the two levels below Info that
// Slurm calls verbose() and debug(). Empty functions drop the lines.
class PlacementSession {
  public:
    // `started_at` (epoch s) stamps the counters (m2g.stats/v1 started_at).
    PlacementSession(SessionLog log, int64_t started_at);
    ~PlacementSession();  // shutdown()
    PlacementSession(const PlacementSession&) = delete;
    PlacementSession& operator=(const PlacementSession&) = delete;

    // (Re)load m2g.conf from `conf_path`. Unchanged text keeps everything;
    // a new model replaces the engine, the signals feed (read once at
    // `now` before it is used) and the stats writer, and forgets booked
    // starts and pacing. On error the previous model stays in force (or
    // none: cons_tres alone) and the reason is logged. Never throws.
    // Returns true when a new model took over: the adapter rebuilds its
    // node map.
    bool load(const std::string& conf_path, int64_t now);

    // Instead of load(): place on a copy of `model` with signals from
    // `signals` (may be empty: none) and `health` standing in for
    // HealthFile=. No file is read, no thread started, no counters
    // written; booked starts and pacing are forgotten.
    void adopt(const Model& model, SignalsSource signals, ClusterState health = {});

    bool active() const { return model_ != nullptr; }
    // The model in force (nullptr without one); valid until the next load().
    const Model* model() const { return model_.get(); }
    // Model nodes (0 without a model), and a node's model index or -1.
    size_t model_nodes() const;
    int find_node(std::string_view name) const;

    // Decide one job_test. `offered`: per model node, whether Slurm offers
    // it (sized model_nodes()); `offered_total`: every node Slurm offers,
    // in the model or not (they count towards min_nodes). Never throws: an
    // error is logged and cons_tres decides alone.
    // With `free_at` (will-run only), a job that cannot start now is
    // planned on the placement its intent accepts whose nodes free first;
    // without it, on the best fit among all offered nodes as if all were
    // free (the simulator offers the nodes free at the time it asks about).
    // With `preemptable` (the jobs Slurm's preempt plugin lets this one
    // preempt, REQUEUE or CANCEL, plus jobs already leaving), a job that
    // cannot start now on free GPUs is placed where preempting evicts the
    // least work (plan_preemption()), within its intent; Outcome::preempt
    // names the victims.
    Outcome decide(const JobFacts& job, const std::vector<uint8_t>& offered, int offered_total,
                   const FreeGpus& free_gpus, SelectMode mode, int64_t now, const FreeAt& free_at = nullptr,
                   const std::vector<PreemptCandidate>* preemptable = nullptr);

    // The AdminComment placement text once cons_tres chose
    // `chosen_nodes` (Slurm node names) from a Narrowed offer.
    std::string placed_annotation(const Outcome& o, const std::vector<std::string>& chosen_nodes) const;

    // Carry `o` out through `act` in the order above (the only place that
    // order lives; select/m2g, the simulator and `m2g place` call it).
    Applied apply(const Outcome& o, const OfferActions& act) const;

    // Slurm's scheduling weight of each model node (node_record's
    // sched_weight; lower is used first), read by the adapter before each
    // decide(); empty or all equal: weights play no part. With weights
    // that differ, the engine weighs them as topology/block does
    // (PlacementRequest::node_weight): Slurm raises the weight of nodes
    // outside a job's FLEX reservation and of powered-down nodes, so those
    // count too.
    void set_node_weights(const std::vector<uint64_t>& weights);

    // Whether will-run answers carry their reason text (default: yes, as
    // select/m2g logs them). The simulator reads only a will-run answer's
    // nodes and times, and asks hundreds of thousands per forecast: without
    // the text the same answer costs fewer placements (the bisection's last
    // probe is the answer, not placed again to be explained).
    void set_will_run_reasons(bool on) { will_run_reasons_ = on; }

    // A job began on `model_nodes` (its nodes the model knows): book its
    // power per domain until the feed's next snapshot, its GPUs in the
    // pacer while an event is active, count the placement and drop its
    // prefer clock. Never throws.
    void job_started(const JobFacts& job, const std::vector<int>& model_nodes, int64_t now);

    // cons_tres accepted run-now Outcome `o` that preempts (o.preempting):
    // Slurm evicts its victims, and the job starts once they are gone, on
    // a later test; that placement names them when it uses the plan's
    // nodes. Forgotten when the job starts, or after kEvictedMemorySec.
    void preemption_started(uint32_t job_id, const Outcome& o, int64_t now);

    // Job `job_id`'s prefer clock: when it could first have started (epoch
    // s), 0 when none runs.
    int64_t prefer_since(uint32_t job_id) const;
    // A test saw the job (decide() calls it; the simulator too, for jobs its
    // backfill pass had no need to test): its prefer clock stays.
    void still_waiting(uint32_t job_id, int64_t now);
    // Prefer clocks held (jobs that were not tested for a day are forgotten).
    size_t prefer_clocks() const { return prefer_.size(); }
    // Jobs held for room (WaitCause::PowerRoom), by job id: when their
    // wait began, when a test last held them, and whether the wait is on.
    // A run-now test that does not hold the job ends its wait, and so does
    // a gap of CurtailStartWaitSec without a test; a later hold starts a
    // new wait. A job leaves when it starts. m2g-curtaild counts a job only
    // while its wait is on and lasts.
    struct RoomWait {
        int64_t since;
        int64_t held;
        bool open;
    };
    const std::unordered_map<uint32_t, RoomWait>& room_waits() const { return room_; }

    // The decision counters, kept across reloads (the adapter counts each
    // job_test's verdict and time here).
    Counters& counters() { return stats_; }

    // Write the last counts, stop the feed, drop the model (plugin fini).
    void shutdown();

  private:
    struct Start {
        int64_t time;
        int domain;
        double kw;
    };
    // A job's prefer wait: since when it could have started, and when a
    // test last saw it (jobs cancelled while pending are never started;
    // their clocks go after kPreferClockIdleSec).
    struct PreferClock {
        int64_t since;
        int64_t seen;
    };
    static constexpr int64_t kPreferClockIdleSec = 86400;
    // A preemption plan cons_tres accepted (preemption_started()). Slurm
    // may still drop it (slurmctld tests a job several times in one pass),
    // so a later placement names only the plans whose nodes it uses.
    struct Evicted {
        std::vector<uint32_t> jobs;
        double gpu_hours;
        std::string reason;
        std::vector<int> nodes;
        int64_t at;
    };
    static constexpr int64_t kEvictedMemorySec = 600;

    Outcome decide_impl(const JobFacts& job, const std::vector<uint8_t>& offered, int offered_total,
                        const FreeGpus& free_gpus, SelectMode mode, int64_t now, const FreeAt& free_at,
                        const std::vector<PreemptCandidate>* preemptable);
    Placement place_range(const PlacementRequest& r, int fewest, const ClusterState& state);
    PreemptPlan place_by_preemption(const JobFacts& job, const JobIntent& intent, const PlacementRequest& req,
                                    const ClusterState& state, const FreeGpus& free_gpus,
                                    const std::vector<PreemptCandidate>& preemptable, Placement& p);
    void name_evicted(Outcome& o, uint32_t job_id, bool planned_now, int64_t now);
    Placement earliest_placement(const PlacementRequest& req, int gpus_per_node, const ClusterState& state,
                                 const FreeAt& free_at, int64_t now);
    int64_t likely_start(const PlacementRequest& req, int64_t enough);
    void fill_usable(bool free_now, int gpn, const FreeGpus& free_gpus);
    JobIntent intent_of(const JobFacts& job);
    int64_t clock_of(const JobFacts& job, int64_t now);
    void replace_model(std::unique_ptr<Model> m);
    SignalsView signals_view(int64_t now) const;
    void refresh_health(int64_t now);
    const ClusterState& merged_health(const std::shared_ptr<const Signals>& snap);
    const ClusterState& state_with_heat(const std::shared_ptr<const Signals>& snap);
    const std::vector<double>& started_kw(const Signals* snap);
    void error(const std::string& msg) const;

    SessionLog log_;
    std::unique_ptr<Model> model_;
    std::unique_ptr<Engine> engine_;
    std::string conf_text_;  // the m2g.conf the model was built from
    // HealthFile=: re-read when it changes, checked at most every 5 s.
    ClusterState health_;
    int64_t health_mtime_ = 0;
    int64_t health_checked_ = 0;
    // SignalsFile=: its own poll thread parses it; decide() only takes
    // the published snapshot.
    std::unique_ptr<SignalFeed> feed_;
    SignalsSource signals_;  // adopt()'s, when there is no feed
    // HealthFile state merged with the snapshot's health, rebuilt when
    // either changes.
    ClusterState merged_;
    ClusterState decide_state_;  // merged_ with this test's heat (kept: its vectors' room)
    std::shared_ptr<const Signals> merged_for_;  // held, so its address cannot be reused
    int64_t merged_health_mtime_ = -1;
    // Power of jobs started since the snapshot in force was written.
    std::deque<Start> started_;
    Pacer pacer_;  // GPU starts during curtailment
    std::unordered_map<uint32_t, PreferClock> prefer_;  // by job id
    std::unordered_map<uint32_t, RoomWait> room_;       // by job id
    std::unordered_map<uint32_t, std::vector<Evicted>> evicted_;  // by preemptor job id
    int64_t prefer_swept_ = 0;
    Counters stats_;
    StatsWriter stats_writer_;
    // Scratch, reused between calls.
    std::vector<uint8_t> usable_;    // per model node
    std::vector<uint8_t> allowed_;   // per model node
    std::vector<int> node_free_;     // per model node: GPUs free now (jobs taking part of a node)
    int node_gpus_ = 0;              // the model's usual GPUs per node (shape_job())
    std::vector<uint64_t> weight_;   // per model node: Slurm's sched_weight (set_node_weights())
    bool weights_differ_ = false;
    bool will_run_reasons_ = true;
    std::vector<int64_t> free_time_;  // per model node: earliest_placement()'s
    std::vector<int64_t> times_;
    std::vector<int> by_free_time_;   // the allowed nodes, soonest free first
    // earliest_placement()'s free-time order per GPU count asked, kept
    // between calls: the last free time seen per node and every node seen
    // ordered by it. Sorted again only when an allowed node's time moved
    // (a backfill pass asks many jobs with the same GPUs per node of one
    // cluster state).
    struct FreeOrder {
        std::vector<int64_t> time;   // per model node
        std::vector<uint8_t> known;  // per model node
        std::vector<int> order;      // the known nodes, soonest free first
    };
    std::vector<FreeOrder> free_orders_;  // by GPUs per node
    std::vector<int64_t> domain_times_;  // likely_start()'s
    std::vector<double> started_kw_;  // per domain
    std::vector<double> heat_;        // per domain
    GateCache gate_cache_;            // gate()'s facts of the last snapshot
    struct DecodedIntent {
        std::vector<std::string> env;
        JobIntent intent;
    };
    std::unordered_map<uint32_t, DecodedIntent> intents_;  // intent_of()'s, by job id
};

}  // namespace m2g
