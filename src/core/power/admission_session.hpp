// m2g core: the admission session — job_submit/m2g's state and release rules
// behind one facade, so the plugin keeps only what reads or writes Slurm's
// structs and the simulator runs the very same rules:
//
//   load()         m2g.conf → model and signals feed; a broken file keeps
//                  the model in force; unchanged text keeps both;
//   current()      the model and signals view in force (the submission
//                  path: decide() on them, admission_annotation() into
//                  AdminComment);
//   begin_pass()   one release pass: the model, the view and whether
//                  anything presses (an active event, a fail-safe hold) are
//                  taken once, so every job of the pass sees the same ones;
//   reevaluate()   one pending job m2g admitted: nothing, or a new begin
//                  time with the admission text to write.
//
// The release rules (reevaluate()), reading and writing the admission part
// through annotation.hpp's AdmissionAnnotation (parse_admission(),
// admission_annotation(), format()):
//   - held jobs, jobs m2g did not admit (no admission part), and waiting
//     jobs whose begin time is no longer the one m2g wrote (an operator's
//     StartTime=, a requeue) are left alone;
//   - a waiting (deferred or paced) job is decided again: the reason has
//     ended → released now (never before the user's own --begin); the
//     reason moved (an event extended) → its begin time moves with it; a
//     re-check deferral (power:site, failsafe) keeps its time while its
//     cause lasts;
//   - under pressure (an active event or a fail-safe hold) an eligible job
//     is decided again and deferred or paced when decide() says so;
//   - Admission=monitor or off releases what m2g holds and defers nothing;
//   - a job decide() would now reject stays as it is (it was admitted once).
//
// For one release pass the adapter does, under slurmctld's job lock:
//
//   model = s.begin_pass(now); if (!model) return;
//   for each job: ReleaseAction a = s.reevaluate(facts_of(job), now);
//                 a.changed(): begin_time = a.begin_time, write a.admission
//                 (set_annotation), state reason WAIT_TIME when a.waiting().
//
// No Slurm header, no globals. load() and current() are thread-safe (the
// submission path and the release thread share the session);
// begin_pass()/reevaluate() belong to one thread (the release thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "core/base/log.hpp"
#include "core/job/bridge.hpp"
#include "core/job/recipes.hpp"
#include "core/power/admission.hpp"
#include "core/model/model.hpp"
#include "core/power/signals.hpp"
#include "core/obs/stats.hpp"

namespace m2g {

// Slurm cancels a job that cannot finish by its --deadline (`deadline`,
// epoch s, <= 0: none): a deferrable job may be deferred at most until
// deadline - time limit.
void cap_by_slurm_deadline(AdmissionRequest& r, const AdmissionPolicy& ap, int64_t deadline);

// The counter a verdict goes to (Admission=monitor counts what m2g would do).
AdmissionVerdict counted_as(Verdict v);

// What reevaluate() needs beyond the cheap facts, asked for only when the
// job is decided again (most jobs of most passes are not).
struct PendingRequest {
    std::vector<std::string> spank_env;  // "KEY=VALUE" (the M2G_* intent)
    std::optional<JobIntent> intent;     // typed, when the caller has it (then spank_env is not read)
    int nodes = 1;                       // at least 1
    int gpus = 0;                        // from the job's TRES; 0: unknown (then the intent's)
    int64_t time_limit_s = 0;            // <= 0: unlimited
    std::string account;
    int64_t deadline = 0;                // Slurm's --deadline (epoch s), 0: none
    // Model nodes of the job's partition (empty: all).
    std::vector<int> candidate_nodes;
    // The user and their groups by name: called only when an exemption may
    // hang on them (--m2g-defer=no and DeferExemptGroups= set). May be empty.
    std::function<void(std::string& user, std::vector<std::string>& groups)> identity;
};

// One pending job as the release thread sees it.
struct PendingJobFacts {
    uint32_t job_id = 0;
    bool pending = false;    // pending, with job details
    bool held = false;       // priority 0: held jobs stay as they are
    std::string admission;   // its AdminComment admission part (get_annotation()), "" none
    int64_t begin_time = 0;  // its begin time now (epoch s)
    std::function<PendingRequest()> request;
};

// What to do with one job.
struct ReleaseAction {
    enum class Kind {
        None,     // leave the job as it is
        Defer,    // waits until begin_time (deferred or paced)
        Release,  // eligible from begin_time (now, or the user's own --begin)
    };
    Kind kind = Kind::None;
    int64_t begin_time = 0;
    std::string admission;  // the new admission part's text (set_annotation())
    std::string reason;     // decide()'s one-line reason
    Verdict verdict = Verdict::Admit;  // decide()'s verdict
    bool changed() const { return kind != Kind::None; }
    bool waiting() const { return kind == Kind::Defer; }
};

// One submission as job_submit/m2g sees it (the simulator makes the same).
// Cheap facts by value; what needs a lookup (the user's name, groups) by a
// call made only when a rule needs it.
struct Submission {
    std::vector<std::string> spank_env;  // "KEY=VALUE": the M2G_* intent spank_m2g encoded
    // Typed, when the caller has it (the simulator): then spank_env is only
    // what NoDeferAction=convert would rewrite. slurm-bridge intents apply
    // to spank_env only.
    std::optional<JobIntent> intent;
    std::string admin_comment;           // as submitted (slurm-bridge's {"pods": [...]})
    bool batch = false;                  // sbatch: a script with an environment of its own
    int nodes = 1;                       // at least 1
    int gpus = 0;                        // from the job's TRES (job_gpus); 0: none asked (the intent's)
    int64_t time_limit_s = 0;            // <= 0: unlimited
    int64_t begin_time = 0;              // the job's own --begin (epoch s), 0: none
    int64_t deadline = 0;                // Slurm's --deadline (epoch s), 0: none
    uint32_t uid = 0;
    std::string checkpoint_signal;       // the job's --signal as "[B:]N" ("" none)
    // --account, else the user's default ("" unknown): asked once admission runs.
    std::function<std::string()> account;
    // Model nodes of its partition (empty: all), for the model in force.
    std::function<std::vector<int>(const Model&)> candidate_nodes;
    std::function<std::string()> user_name;                                // by uid
    std::function<std::vector<std::string>(const std::string&)> groups;   // of that user
    // What the job gave of its own size (job_submit/m2g; asked_known false:
    // the caller does not say, and a recipe never sizes the job).
    bool asked_known = false;
    AskedSize asked;
};

// What to do with it. The adapter applies exactly this to Slurm's job
// description; it decides nothing itself.
struct SubmitAnswer {
    enum class Refusal {
        None,
        Invalid,  // the request itself is wrong (an intent m2g cannot read, refused pod annotations)
        Denied,   // admission rejects it (Admission=enforce)
    };
    Refusal refusal = Refusal::None;
    std::string message;                // to the user: why refused, or --m2g-explain's answer ("" none)
    std::optional<std::vector<std::string>> spank_env;  // the job's new SPANK environment (nullopt: unchanged)
    std::vector<std::string> batch_env_add;  // for the batch script's environment (SLURM_SPANK_M2G_*)
    int64_t begin_time = 0;             // > 0: the job's begin time from now on
    std::optional<std::string> admin_comment;  // the job's new AdminComment (nullopt: unchanged)
    RecipeSize size;                    // nodes, GPUs per node, time limit the recipe sets (0: the job's own)
    std::optional<AdmissionVerdict> counted;   // the submission's counter (nullopt: not decided)
    Decision decision;                  // what decide() said (Admit when it did not run)
    bool refused() const { return refusal != Refusal::None; }
};

// A change of a pending job's begin time (scontrol update StartTime=).
struct Modification {
    uint32_t job_id = 0;
    uint32_t uid = 0;
    bool operator_ = false;             // Slurm's validate_operator(uid): an operator or admin
    bool pending = false;
    std::string admin_comment;
    int64_t begin_time = 0;             // now (epoch s)
    int64_t requested_begin = 0;        // asked for; 0: the update does not touch it
    std::function<std::string()> user_name;
};

struct ModifyAnswer {
    bool denied = false;
    std::string message;  // to the user when denied
};

// The model and signals in force at one moment.
struct AdmissionContext {
    std::shared_ptr<const Model> model;  // null: no m2g.conf loaded
    std::shared_ptr<SignalFeed> feed;    // null: no SignalsFile= (or a caller's source)
    SignalsView view;
};

class AdmissionSession {
  public:
    // `counters` (may be null) counts releases and re-deferrals; it
    // outlives the session. `log`: Info for each release and deferral,
    // debug for intents it cannot read; also the feed's sink.
    AdmissionSession(SessionLog log, Counters* counters);
    ~AdmissionSession();  // stop()
    AdmissionSession(const AdmissionSession&) = delete;
    AdmissionSession& operator=(const AdmissionSession&) = delete;

    // (Re)load m2g.conf from `conf_path` when its mtime changed (always on
    // the first call). Unchanged text keeps model and feed; a new model
    // gets a new feed (SignalsFile=, SignalsStatusFile=), read once at
    // `now` before anyone sees it. On error the previous model stays in
    // force and the reason is logged. Throws only when the feed's poll
    // thread cannot start.
    void load(const std::string& conf_path, int64_t now);

    // Instead of load(): a fixed model with signals from `signals`
    // (SignalsSource, session.hpp: the simulator's timeline). No file is
    // read, no thread started.
    void adopt(std::shared_ptr<const Model> model, SignalsSource signals);

    // The model in force (null: none).
    std::shared_ptr<const Model> model() const;
    // The model and the signals view for `now`.
    AdmissionContext current(int64_t now) const;

    // Start a release pass at `now`: the pass's model, null without one
    // (nothing to do).
    std::shared_ptr<const Model> begin_pass(int64_t now);
    // Decide one pending job again (see the rules above). A `now` other
    // than the pass's begins a new pass. Throws only what the request's
    // callbacks throw.
    ReleaseAction reevaluate(const PendingJobFacts& job, int64_t now);

    // One submission (job_submit/m2g's job_submit(), and the simulator's):
    // every admission rule in order — slurm-bridge intents, Admission=off,
    // the intent read, reserved intent, exemptions, Slurm's --deadline,
    // decide(), monitor or enforce, conversion to deferrable, the
    // AdminComment record, --m2g-explain. Logs releases' and refusals'
    // lines and the audit lines through the session's log. Never throws:
    // an internal error admits the job unchanged and logs why.
    SubmitAnswer submit(const Submission& s, int64_t now);

    // A change of a pending job (job_modify): owners may not move a job m2g
    // holds earlier than m2g's begin time; operators and admins may, and
    // that is audited.
    ModifyAnswer modify(const Modification& mod) const;

    // Where overrides m2g grants or refuses go (reserved intent, deferral
    // exemptions, an operator moving m2g's begin time): one line each, which
    // the plugin logs with a prefix of its own so that sites can route them.
    void set_audit_log(std::function<void(const std::string&)> audit) { audit_ = std::move(audit); }

    // Stop the signals feed's thread (the model stays).
    void stop();

  private:
    struct Pass {
        bool taken = false;
        int64_t now = 0;
        std::shared_ptr<const Model> model;
        SignalsView view;
        bool pressure = false;  // an event is active or the fail-safe holds deferrable work
    };

    void info(const std::string& msg) const;
    void error(const std::string& msg) const;
    void audit(const std::string& msg) const;
    // slurm-bridge: the pods' intent added to `env`; false when refused.
    bool apply_bridge_intent(const AdmissionPolicy& ap, const Submission& s, std::vector<std::string>& env,
                             SubmitAnswer& a);
    SubmitAnswer submit_impl(const Submission& s, int64_t now);
    bool bind_tenant(const AdmissionPolicy& ap, const Submission& s, std::vector<std::string>& env,
                     SubmitAnswer& a);
    bool size_job(const Model& m, const Submission& s, const std::vector<std::string>& env, SubmitAnswer& a,
                  int& nodes, int& gpus, int64_t& time_limit_s) const;

    SessionLog log_;
    std::function<void(const std::string&)> audit_;
    Counters* counters_;
    mutable std::mutex mu_;  // model_, feed_, source_, conf_*
    std::shared_ptr<const Model> model_;
    std::shared_ptr<SignalFeed> feed_;
    SignalsSource source_;
    std::string conf_text_;  // the m2g.conf the model was built from
    int64_t conf_mtime_ns_ = -1;
    bool loaded_once_ = false;
    Pass pass_;  // the release thread's
    BridgeIntentsFile bridge_;  // BridgeIntentsFile=, read again when it changes
};

}  // namespace m2g
