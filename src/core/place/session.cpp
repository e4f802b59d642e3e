// m2g core: the placement session (see session.hpp).
#include "core/place/session.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>

#include "core/job/annotation.hpp"
#include "core/model/cluster_state.hpp"
#include "core/model/config.hpp"
#include "core/power/curtail.hpp"
#include "core/base/error.hpp"
#include "core/job/intent.hpp"
#include "core/model/span.hpp"
#include "core/base/keys.hpp"

namespace m2g {

namespace {

std::vector<std::string> names(const Model& m, const std::vector<int>& idx, bool switches)
{
    std::vector<std::string> out;
    for (int i : idx)
        out.push_back(switches ? m.switches[i].name : m.domains[i].name);
    return out;
}

// The placement part of a job that waits under `policy` because of `wait`
// (None, a gate without notes, is written as Other), said as `reason`.
PlacementAnnotation waiting_part(const std::string& policy, WaitCause wait, const std::string& reason)
{
    PlacementAnnotation a;
    a.state = PlacementState::Waiting;
    a.policy = policy;
    a.wait = wait == WaitCause::None ? WaitCause::Other : wait;
    a.reason = reason;
    return a;
}

// ... of a job m2g holds while m2g-curtaild makes room for it.
std::string room_text(const std::string& policy, const GateResult& gate)
{
    PlacementAnnotation a = waiting_part(policy, WaitCause::PowerRoom, gate.room_reason);
    a.room_since = gate.room_since;
    return format(a);
}

// The AdminComment placement text of a job the signals gate keeps waiting.
std::string waiting_text(const std::string& policy, const GateResult& gate)
{
    PlacementAnnotation a = waiting_part(policy, gate.wait, gate.reason);
    a.over = gate.over;
    return format(a);
}

// ... of a job no placement serves now, with the gate's `signals` notes ("" none)
// and the start of its prefer wait (0: none runs).
std::string waiting_text(const std::string& policy, const Placement& p, const std::string& signals,
                         int64_t prefer_since)
{
    PlacementAnnotation a = waiting_part(policy, p.wait, p.reason);
    a.need = p.need;
    a.prefer_since = prefer_since;
    a.signals = signals;
    return format(a);
}

// ... of a job cons_tres placed alone (locality any), with the gate's notes.
std::string stock_text(const std::string& policy, const std::string& signals)
{
    PlacementAnnotation a;
    a.state = PlacementState::Stock;
    a.policy = policy;
    a.signals = signals;
    return format(a);
}

}  // namespace

int job_node_count(uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes)
{
    return static_cast<int>(req_nodes > min_nodes ? std::min(req_nodes, max_nodes ? max_nodes : req_nodes)
                                                  : min_nodes);
}

JobFacts shape_job(JobFacts job, int node_gpus)
{
    if (job.gpus_total <= 0 || job.gpus_per_node > 0)
        return job;
    job.nodes = std::max(job.nodes, 1);
    if (node_gpus > 0) {
        const int most = job.max_nodes > job.nodes ? job.max_nodes : job.nodes;
        const int needed = (job.gpus_total + node_gpus - 1) / node_gpus;
        job.nodes = std::clamp(needed, job.nodes, most);
    }
    job.gpus_per_node = (job.gpus_total + job.nodes - 1) / job.nodes;
    return job;
}

SelectVerdict Outcome::verdict_after(bool accepted) const
{
    if (offer != Offer::Narrowed || accepted)
        return verdict;
    return fallback_to_allowed ? SelectVerdict::Stock : SelectVerdict::Waiting;
}

PlacementSession::PlacementSession(SessionLog log, int64_t started_at)
    : log_(std::move(log)),
      stats_(kw::kPluginSelect, started_at),
      stats_writer_(stats_, kw::kPluginSelect, "select/m2g", log_.log)
{
}

PlacementSession::~PlacementSession()
{
    shutdown();
}

void PlacementSession::error(const std::string& msg) const
{
    if (log_.log)
        log_.log(LogLevel::Error, msg);
}

size_t PlacementSession::model_nodes() const
{
    return model_ ? model_->nodes.size() : 0;
}

int PlacementSession::find_node(std::string_view name) const
{
    return model_ ? model_->find_node(name) : -1;
}

bool PlacementSession::load(const std::string& conf_path, int64_t now)
{
    try {
        std::string text = read_text_file(conf_path);
        if (model_ && text == conf_text_) {
            if (log_.debug)
                log_.debug("m2g.conf unchanged; model and signals feed stay");
            return false;
        }
        auto m = std::make_unique<Model>(build_model(parse_m2g_conf(text, conf_path)));
        conf_text_ = std::move(text);
        replace_model(std::move(m));
        // Like the signals feed below: a new model never places a job
        // before it has read its HealthFile.
        refresh_health(now);
        const AdmissionPolicy& ap = model_->admission;
        stats_writer_.start(ap.stats_dir);
        if (!ap.signals_file.empty()) {
            feed_ = std::make_unique<SignalFeed>(ap.signals_file, ap.signals_ttl_sec, ap.failsafe, *model_, log_.log);
            feed_->refresh(now);  // never publish a feed that has not read its file
            feed_->start(ap.signals_poll_sec);
        }
        if (log_.verbose)
            log_.verbose("m2g.conf loaded: " + std::to_string(model_->nodes.size()) + " nodes, " +
                         std::to_string(model_->domains.size()) + " NVLink domains");
        return true;
    } catch (const std::exception& e) {
        error(std::string(e.what()) +
              (model_ ? "; keeping the previous m2g.conf in force" : "; jobs are placed by cons_tres alone"));
    }
    return false;
}

// A new model takes over: the feed (it refers to the old model) stops, the
// engine is rebuilt, and booked starts, pacing and merged health go.
void PlacementSession::replace_model(std::unique_ptr<Model> m)
{
    if (feed_)
        feed_->stop();
    feed_.reset();
    signals_ = nullptr;
    engine_ = std::make_unique<Engine>(*m);
    node_gpus_ = m->usual_node_gpus();
    model_ = std::move(m);
    // The old model's health is indexed by its nodes: it goes too, and
    // the new HealthFile (if any) is read at once.
    health_ = ClusterState{};
    health_mtime_ = 0;
    health_checked_ = 0;
    merged_for_ = nullptr;
    merged_health_mtime_ = -1;
    started_.clear();
    pacer_.clear();
}

void PlacementSession::adopt(const Model& model, SignalsSource signals, ClusterState health)
{
    stats_writer_.stop();
    auto m = std::make_unique<Model>(model);
    m->policy.health_file.clear();  // `health` stands in for it
    replace_model(std::move(m));
    conf_text_.clear();  // a later load() builds its model anew
    signals_ = std::move(signals);
    health_ = std::move(health);
    prefer_.clear();
    room_.clear();
}

SignalsView PlacementSession::signals_view(int64_t now) const
{
    if (feed_)
        return feed_->view(now);
    return signals_ ? signals_(now) : SignalsView{};
}

void PlacementSession::shutdown()
{
    stats_writer_.stop();  // writes the last counts
    if (feed_)
        feed_->stop();
    feed_.reset();
    engine_.reset();
    model_.reset();
}

JobIntent PlacementSession::intent_of(const JobFacts& job)
{
    if (job.intent)
        return *job.intent;
    // Once per job: Slurm asks about the same job many times (every pass,
    // test-only, will-run, the start), its environment unchanged.
    auto it = intents_.find(job.job_id);
    if (it != intents_.end() && it->second.env == job.spank_env)
        return it->second.intent;
    if (intents_.size() > 65536)
        intents_.clear();  // bounded: ended jobs' entries go with the rest
    JobIntent intent;
    try {
        intent = decode_intent(job.spank_env);
    } catch (const std::exception& e) {
        error("JobId=" + std::to_string(job.job_id) + ": " + e.what() + "; using the defaults");
    }
    intents_[job.job_id] = DecodedIntent{job.spank_env, intent};
    return intent;
}

void PlacementSession::refresh_health(int64_t now)
{
    const std::string& path = model_->policy.health_file;
    if (path.empty() || now - health_checked_ < 5)
        return;
    health_checked_ = now;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || st.st_mtime == health_mtime_)
        return;
    try {
        health_ = read_state_json(path, *model_).health;
        health_mtime_ = st.st_mtime;
        if (log_.verbose)
            log_.verbose("health feed " + path + " read");
    } catch (const std::exception& e) {
        health_mtime_ = st.st_mtime;  // warn once per version of the file
        error(std::string("health feed: ") + e.what() + "; keeping the last good state");
    }
}

// HealthFile state OR the snapshot's health, cached per (snapshot, file).
const ClusterState& PlacementSession::merged_health(const std::shared_ptr<const Signals>& snap)
{
    if (snap == merged_for_ && health_mtime_ == merged_health_mtime_)
        return merged_;
    merged_ = health_;
    auto merge = [](std::vector<uint8_t>& into, const std::vector<uint8_t>& from) {
        if (from.empty())
            return;
        into.resize(from.size());
        for (size_t i = 0; i < from.size(); ++i)
            into[i] = into[i] || from[i];
    };
    if (snap) {
        merge(merged_.node_degraded, snap->health.node_degraded);
        merge(merged_.domain_nvlink_fault, snap->health.domain_nvlink_fault);
        merge(merged_.domain_over_limit, snap->health.domain_over_limit);
    }
    merged_for_ = snap;
    merged_health_mtime_ = health_mtime_;
    return merged_;
}

// merged_health() with the heat gate() found, so the engine prefers cooler
// racks among equal fits (kept in decide_state_, whose vectors keep their room).
const ClusterState& PlacementSession::state_with_heat(const std::shared_ptr<const Signals>& snap)
{
    decide_state_ = merged_health(snap);
    decide_state_.domain_heat = heat_;
    return decide_state_;
}

// kW per domain of jobs started after the snapshot was written.
const std::vector<double>& PlacementSession::started_kw(const Signals* snap)
{
    const int64_t since = snap ? snap->generated_at : 0;
    while (!started_.empty() && (started_.front().time < since || started_.size() > 100000))
        started_.pop_front();
    started_kw_.assign(model_->domains.size(), 0.0);
    if (!snap)
        return started_kw_;  // gate() weighs starts against a snapshot's draw only
    for (const auto& st : started_)
        if (st.domain >= 0 && st.time >= since)
            started_kw_[st.domain] += st.kw;
    return started_kw_;
}

Outcome PlacementSession::decide(const JobFacts& job, const std::vector<uint8_t>& offered, int offered_total,
                                 const FreeGpus& free_gpus, SelectMode mode, int64_t now, const FreeAt& free_at,
                                 const std::vector<PreemptCandidate>* preemptable)
{
    try {
        return decide_impl(job, offered, offered_total, free_gpus, mode, now, free_at, preemptable);
    } catch (const std::exception& e) {
        error("JobId=" + std::to_string(job.job_id) + ": " + e.what() + "; cons_tres decides alone");
    } catch (...) {
        error("JobId=" + std::to_string(job.job_id) + ": unexpected error; cons_tres decides alone");
    }
    return Outcome{};
}

Outcome PlacementSession::decide_impl(const JobFacts& asked, const std::vector<uint8_t>& offered, int offered_total,
                                      const FreeGpus& free_gpus, SelectMode mode, int64_t now, const FreeAt& free_at,
                                      const std::vector<PreemptCandidate>* preemptable)
{
    Outcome o;  // Stock: cons_tres decides alone
    const JobFacts job = shape_job(asked, node_gpus_);
    // Jobs that name their nodes or want contiguous ones keep Slurm's way.
    if (!model_ || job.names_nodes)
        return o;
    still_waiting(job.job_id, now);
    if (offered.size() != model_->nodes.size())
        throw Error("the offer covers " + std::to_string(offered.size()) + " nodes, the model has " +
                    std::to_string(model_->nodes.size()) + " (a bug in the select adapter)");
    JobIntent intent = intent_of(job);
    const PlacementPolicy& pol = model_->policy_for(job.partition);
    std::string policy = locality_string(intent);
    if (intent.locality == Locality::Unset) {
        // DefaultTopology=, as the admin wrote it (the AdminComment shows that).
        intent.locality = pol.default_locality;
        intent.level = pol.default_level;
        policy = pol.default_topology;
    }
    o.policy = policy;

    refresh_health(now);
    const SignalsView view = signals_view(now);
    const bool planning = mode != SelectMode::RunNow;
    const bool run_now = mode == SelectMode::RunNow;

    // Live signals first (maintenance, nodes down, rack/row/site power,
    // pacing): they bound every placement, also cons_tres's own.
    GateRequest gr;
    gr.intent = intent;
    gr.gpus_per_node = job.gpus_per_node;
    gr.nodes = job.nodes;
    gr.time_limit_s = job.time_limit_s;
    gr.now = now;
    if (auto it = room_.find(job.job_id); it != room_.end()) {
        // A wait lasts while the run-now tests hold the job: one that does
        // not (room came, its wait is over, or no nodes are free) ends it,
        // and so does a gap of CurtailStartWaitSec without a test (the job
        // was not tried; it did not wait for room). A job that could start
        // again later, short of room again, waits again: the budget holds
        // whenever m2g-curtaild can make the room, and each wait is bounded.
        RoomWait& w = it->second;
        if (w.open && now - w.held <= model_->admission.curtail_start_wait_sec)
            gr.room_since = w.since;
        if (mode == SelectMode::RunNow)
            w.open = false;
    }
    // Offered nodes; gate() clears the ones it rules out.
    usable_ = offered;
    // Test-only asks whether the job could ever run (at submission, and a
    // "no" rejects it): passing signals (power, maintenance) must not
    // answer that.
    GateResult gate;
    if (mode == SelectMode::TestOnly)
        heat_.assign(model_->domains.size(), 0.0);
    else
        gate = m2g::gate(*model_, view, gr, started_kw(view.snap.get()), &pacer_, usable_, heat_, &gate_cache_);
    // The signals leave the job nothing to start on: it waits, and says why.
    auto blocked = [&]() -> Outcome {
        o.offer = Outcome::Offer::Refuse;
        o.verdict = SelectVerdict::Blocked;
        o.reason = gate.reason;
        if (run_now)
            o.annotation_now = waiting_text(policy, gate);
        return std::move(o);
    };
    if (gate.blocked)
        return blocked();
    // Work m2g may not curtail that could start now but would put the site
    // over its budget waits while m2g-curtaild makes room (gate(),
    // CurtailStartWaitSec): only a start decides, so only run-now holds it.
    auto hold_for_room = [&]() -> Outcome {
        room_[job.job_id] = RoomWait{gate.room_since, now, true};
        o.offer = Outcome::Offer::Refuse;
        o.verdict = SelectVerdict::Blocked;
        o.reason = gate.room_reason;
        o.annotation_now = room_text(policy, gate);
        return std::move(o);
    };
    const bool short_of_room = run_now && gate.room_short_kw > 0;
    // What gate() ruled out leaves Slurm's offer too, so no path below
    // (cons_tres alone included) uses those nodes.
    allowed_ = usable_;
    if (gate.trimmed_nodes > 0)
        for (size_t mi = 0; mi < offered.size(); ++mi)
            if (offered[mi] && !allowed_[mi])
                o.ruled_out.push_back(static_cast<int>(mi));
    // Too few nodes left: the signals' doing when they ruled some out
    // (their reason says which); else Slurm offered too few (every rack
    // busy) and the engine below says what the job waits for.
    const int64_t left = int64_t(offered_total) - int64_t(o.ruled_out.size());
    if (left < job.min_nodes && !o.ruled_out.empty() && !gate.reason.empty())
        return blocked();
    // Starts are booked in job_started() (a successful test here may
    // still not start: preemption, a later failure).
    // Whether enough allowed nodes have the job's GPUs free now (for
    // placements cons_tres makes: whether the job could start).
    auto enough_free_now = [&] {
        int n = 0;
        for (size_t mi = 0; mi < allowed_.size(); ++mi)
            n += allowed_[mi] && (job.gpus_per_node == 0 || free_gpus(static_cast<int>(mi)) >= job.gpus_per_node);
        return n >= job.min_nodes;
    };
    if (intent.locality == Locality::Any) {
        if (short_of_room && enough_free_now())
            return hold_for_room();
        if (run_now && !gate.reason.empty())
            o.annotation_accepted = stock_text(locality_string(intent), gate.reason);
        return o;
    }

    const int gpn = job.gpus_per_node;
    PlacementRequest req;
    req.explain = will_run_reasons_ || mode != SelectMode::WillRun;
    req.nodes = job.nodes;
    req.segment = intent.segment;
    req.locality = intent.locality;
    req.level = intent.level;
    req.spare_per_domain = pol.spare_per_domain;
    if (weights_differ_ && weight_.size() == allowed_.size())
        req.node_weight = &weight_;
    // The prefer wait runs from the first run-now test in which the job
    // could have started (a lesser placement was free), not from its
    // submission: a job that spent hours behind others in the queue has
    // not yet waited for its domain at all.
    const bool prefer = intent.locality == Locality::Prefer;
    int64_t since = prefer ? clock_of(job, now) : 0;
    auto wait_over = [&] { return job.wait_over || (since > 0 && now - since >= pol.prefer_wait_sec); };
    req.fallback = prefer && wait_over();
    const ClusterState& state = state_with_heat(view.snap);
    // Placements on nodes free now come first, also when planning, so
    // backfill starts what can start now; planning then looks further.
    // A job that takes part of a node's GPUs goes where it leaves the
    // fewest free (the engine's best fit within a domain).
    fill_usable(true, gpn, free_gpus);
    if (gpn > 0) {
        req.gpus_per_node = gpn;
        req.node_free_gpus = &node_free_;
    }
    // A job that accepts a range of nodes (-N1-64) gets as many as its
    // intent allows up to the count Slurm asks for (req_nodes: its
    // maximum), never fewer than its minimum: as cons_tres does, which
    // takes what is free. The count is fitted on the nodes free now.
    const int range_min = std::clamp(job.min_nodes, 1, req.nodes);
    if (range_min < req.nodes) {
        const int free_now = static_cast<int>(std::count(usable_.begin(), usable_.end(), uint8_t{1}));
        req.nodes = std::max(range_min, std::min(req.nodes, free_now));
    }
    auto place = [&](const PlacementRequest& r) { return place_range(r, range_min, state); };
    // Will-run with FreeAt looks further when this fails, and its answer
    // carries its own reason: this one is a probe until it places.
    const bool looks_further = mode == SelectMode::WillRun && free_at;
    PlacementRequest first = req;
    first.explain = req.explain && !looks_further;
    first.answer_only = looks_further;
    Placement p = place(first);
    if (p.ok && looks_further)
        p = place(req);
    if (!p.ok && prefer && !req.fallback && run_now) {
        // Short of its intent: could it start now on a lesser placement?
        // Then its clock starts (or runs on), and once it has run out the
        // lesser placement is taken.
        PlacementRequest lesser = req;
        lesser.fallback = true;
        Placement q = place(lesser);
        if (q.ok) {
            if (since == 0) {
                since = now;
                prefer_[job.job_id] = PreferClock{now, now};
                o.clock_started = true;
            }
            if (wait_over()) {
                req.fallback = true;
                p = std::move(q);
            }
        }
    }
    // Nothing free meets the intent, and Slurm lets this job preempt.
    PreemptPlan evict;
    if (!p.ok && preemptable && !preemptable->empty())
        evict = place_by_preemption(job, intent, req, state, free_gpus, *preemptable, p);
    if (!p.ok && planning) {
        // When and where could it run: on the nodes that free first when
        // the adapter knows (Slurm's backfill then reserves those), else
        // anywhere allowed. What is free now says nothing of then.
        req.node_free_gpus = nullptr;
        if (mode == SelectMode::WillRun && free_at)
            p = earliest_placement(req, job.gpus_per_node, state, free_at, now);
        if (!p.ok) {
            fill_usable(false, gpn, free_gpus);
            p = place(req);
        }
    }
    if (prefer && !req.fallback && since > 0)
        o.fallback_at = since + pol.prefer_wait_sec;

    if (!p.ok) {
        if (run_now)
            o.annotation_now = waiting_text(policy, p, gate.reason, o.fallback_at > 0 ? since : 0);
        o.signals = gate.reason;
        o.placement = std::move(p);
        // Best effort is allowed: cons_tres decides on everything allowed.
        if (req.locality == Locality::Prefer && req.fallback) {
            if (short_of_room && enough_free_now())
                return hold_for_room();
            return o;
        }
        o.offer = Outcome::Offer::Refuse;
        o.verdict = SelectVerdict::Waiting;
        o.reason = o.placement.reason;
        return o;
    }
    if (short_of_room)
        return hold_for_room();
    o.offer = Outcome::Offer::Narrowed;
    o.verdict = SelectVerdict::Placed;
    o.nodes = p.nodes;
    // Prefer, wait over: cons_tres on everything allowed when it refuses the placement.
    o.fallback_to_allowed = intent.locality != Locality::Strict && req.fallback && !evict.ok;
    o.reason = p.reason;
    if (evict.ok) {
        o.preempting = true;
        o.preempt = evict.victims;
        o.preempt_gpu_hours = evict.gpu_hours;
        o.evicted = evict.victims;
        o.evicted_gpu_h = evict.gpu_hours;
        o.preempt_reason = evict.reason;
    }
    name_evicted(o, job.job_id, evict.ok, now);
    o.annotate_placed = run_now;
    o.score = p.score;
    o.signals = gate.reason;
    o.placement = std::move(p);
    return o;
}

// The engine's placement for `r` on usable_, and for a job that accepts
// fewer nodes (down to `fewest`), the most nodes it places between the two
// (the fewest nodes' answer, with its reason, when none).
Placement PlacementSession::place_range(const PlacementRequest& r, int fewest, const ClusterState& state)
{
    Placement got = engine_->place(r, usable_, state);
    if (got.ok || fewest >= r.nodes)
        return got;
    PlacementRequest fewer = r;
    fewer.nodes = fewest;
    Placement best = engine_->place(fewer, usable_, state);
    if (!best.ok)
        return best;
    int lo = fewest, hi = r.nodes - 1;  // lo places, r.nodes does not
    while (lo < hi) {
        fewer.nodes = lo + (hi - lo + 1) / 2;
        Placement q = engine_->place(fewer, usable_, state);
        if (q.ok) {
            lo = fewer.nodes;
            best = std::move(q);
        } else {
            hi = fewer.nodes - 1;
        }
    }
    return best;
}

// Clear the domain (or the fewest domains) whose eviction loses the least
// work, as the intent accepts it: the engine checks the plan (segments,
// health, spare nodes) and its placement replaces `p`. The plan, or none.
PreemptPlan PlacementSession::place_by_preemption(const JobFacts& job, const JobIntent& intent,
                                                  const PlacementRequest& req, const ClusterState& state,
                                                  const FreeGpus& free_gpus,
                                                  const std::vector<PreemptCandidate>& preemptable, Placement& p)
{
    std::vector<int> free_now(allowed_.size(), 0);
    for (size_t mi = 0; mi < allowed_.size(); ++mi)
        if (allowed_[mi])
            free_now[mi] = free_gpus(static_cast<int>(mi));
    PreemptRequest pq;
    pq.nodes = req.nodes;
    pq.segment = intent.segment;
    pq.gpus_per_node = job.gpus_per_node;
    pq.one_group = intent.level == LocalityLevel::NVLink;
    // What each victim loses, as the site's jobs checkpoint and restart.
    const PlacementPolicy& cp = model_->policy;
    std::vector<PreemptCandidate> costed;
    const std::vector<PreemptCandidate>* cands = &preemptable;
    if (cp.preempt_checkpoint_sec > 0 || cp.preempt_restart_sec > 0) {
        costed = preemptable;
        for (PreemptCandidate& c : costed)
            if (c.gpus > 0 && c.ran_s >= 0)
                c.gpu_hours =
                    preempt_loss_gpu_hours(c.gpus, c.ran_s, cp.preempt_checkpoint_sec, cp.preempt_restart_sec,
                                           c.restarted);
        cands = &costed;
    }
    PreemptPlan evict = plan_preemption(*model_, pq, allowed_, free_now, *cands);
    if (!evict.ok)
        return evict;
    std::vector<uint8_t> only(allowed_.size(), 0);
    for (int mi : evict.nodes)
        only[mi] = 1;
    PlacementRequest pr = req;
    pr.node_free_gpus = nullptr;
    Placement q = engine_->place(pr, only, state);
    if (!q.ok || !(q.meets_intent || req.fallback))
        return PreemptPlan{};
    p = std::move(q);
    p.reason = evict.reason + ", then " + p.reason;
    return evict;
}

// Room earlier plans of this job made on the nodes of Narrowed `o`: their
// victims stay named (and, when no plan made `o`, their reason leads).
void PlacementSession::name_evicted(Outcome& o, uint32_t job_id, bool planned_now, int64_t now)
{
    auto it = evicted_.find(job_id);
    if (it == evicted_.end())
        return;
    auto& plans = it->second;
    plans.erase(std::remove_if(plans.begin(), plans.end(),
                               [&](const Evicted& e) { return now - e.at > kEvictedMemorySec; }),
                plans.end());
    const std::string* earlier = nullptr;
    for (const Evicted& e : plans) {
        const bool here = std::any_of(e.nodes.begin(), e.nodes.end(), [&](int mi) {
            return std::find(o.nodes.begin(), o.nodes.end(), mi) != o.nodes.end();
        });
        if (!here)
            continue;
        bool adds = false;
        for (uint32_t id : e.jobs)
            if (std::find(o.evicted.begin(), o.evicted.end(), id) == o.evicted.end())
                o.evicted.push_back(id), adds = true;
        if (adds) {
            o.evicted_gpu_h = o.evicted_gpu_h.value_or(0) + e.gpu_hours;
            earlier = &e.reason;
        }
    }
    std::sort(o.evicted.begin(), o.evicted.end());
    if (earlier && !planned_now)
        o.reason = *earlier + ", then " + o.reason;
    if (plans.empty())
        evicted_.erase(it);
}

void PlacementSession::preemption_started(uint32_t job_id, const Outcome& o, int64_t now)
{
    if (!o.preempting || o.preempt.empty())
        return;  // nothing evicted now (its victims were already leaving)
    auto& plans = evicted_[job_id];
    for (Evicted& e : plans)
        if (e.jobs == o.preempt && e.nodes == o.nodes) {
            e.at = now;  // the same plan, accepted again
            return;
        }
    plans.push_back(Evicted{o.preempt, o.preempt_gpu_hours, o.preempt_reason, o.nodes, now});
}

void PlacementSession::set_node_weights(const std::vector<uint64_t>& weights)
{
    weight_ = weights;
    weights_differ_ = std::adjacent_find(weight_.begin(), weight_.end(), std::not_equal_to<>()) != weight_.end();
}

// The annotation after cons_tres chose nodes from the narrowed set.
std::string PlacementSession::placed_annotation(const Outcome& o, const std::vector<std::string>& chosen_nodes) const
{
    if (!model_)
        return "";
    const Model& m = *model_;
    const Span s = span_of(m, chosen_nodes);
    std::vector<int> doms;
    for (const auto& u : s.domains)
        doms.push_back(u.domain);
    PlacementAnnotation a;
    a.state = PlacementState::Placed;
    a.domains = names(m, doms, false);
    a.leaves = names(m, s.leaf_switches, true);
    a.policy = o.policy;
    a.score = o.score;
    a.reason = o.reason;
    a.signals = o.signals;
    a.preempted = o.evicted;
    a.evicted_gpu_h = o.evicted_gpu_h;
    return format(a);
}

Applied PlacementSession::apply(const Outcome& o, const OfferActions& act) const
{
    auto annotate = [&](const std::string& text) {
        if (!text.empty() && act.annotate)
            act.annotate(text);
    };
    if (!o.ruled_out.empty())
        act.rule_out(o.ruled_out);
    annotate(o.annotation_now);
    Applied r;
    switch (o.offer) {
    case Outcome::Offer::Refuse:
        r.verdict = o.verdict_after(false);
        return r;
    case Outcome::Offer::Stock:
        r.accepted = act.test_offer();
        if (r.accepted)
            annotate(o.annotation_accepted);
        r.verdict = o.verdict_after(r.accepted);
        return r;
    case Outcome::Offer::Narrowed:
        break;
    }
    r.accepted = act.test_only(o.nodes);
    r.verdict = o.verdict_after(r.accepted);
    if (r.accepted && o.annotate_placed && act.annotate)
        annotate(placed_annotation(o, act.chosen()));
    if (!r.accepted && o.fallback_to_allowed)
        r.accepted = act.test_offer();  // prefer, wait over: cons_tres on everything allowed
    return r;
}

// A job began: book its power per domain until the feed reports the new
// draw, and its GPUs in the pacer while a curtailment event is active.
void PlacementSession::job_started(const JobFacts& asked, const std::vector<int>& model_nodes, int64_t now)
{
    if (!model_)
        return;
    try {
        const JobFacts job = shape_job(asked, node_gpus_);
        for (int mi : model_nodes)
            if (mi < 0 || static_cast<size_t>(mi) >= model_->nodes.size())
                throw Error("model node " + std::to_string(mi) + " out of range (a bug in the select adapter)");
        prefer_.erase(job.job_id);
        room_.erase(job.job_id);
        evicted_.erase(job.job_id);
        const JobIntent intent = intent_of(job);
        intents_.erase(job.job_id);  // a requeued job is decoded again
        // During an event, as the planner counts a start the meter has not
        // seen yet (start_w_gpu()).
        const SignalsView view = signals_view(now);
        const bool event = !active_events(view.snap.get(), now).empty();
        const double node_kw = job.gpus_per_node * start_w_gpu(model_->admission, intent, event) / 1000.0;
        for (int mi : model_nodes)
            started_.push_back({now, model_->nodes[mi].domain, node_kw});
        // Placement quality counts real starts only (a successful test may
        // still not start: preemption, a later failure).
        const int started = static_cast<int>(model_nodes.size());
        if (started > 0)
            stats_.placement(domains_spanned(*model_, model_nodes), fits_one_domain(*model_, started));
        if (event)
            pacer_.book(model_->admission, now, job.gpus_per_node * started,
                        job.gpus_per_node * power_w_per_gpu(model_->admission, intent) / 1000.0 * started);
    } catch (const std::exception& e) {
        error("JobId=" + std::to_string(asked.job_id) + ": " + e.what() + "; its start is not counted");
    } catch (...) {
        error("JobId=" + std::to_string(asked.job_id) + ": unexpected error; its start is not counted");
    }
}

int64_t PlacementSession::prefer_since(uint32_t job_id) const
{
    auto it = prefer_.find(job_id);
    return it == prefer_.end() ? 0 : it->second.since;
}

// A test saw job `job_id` at `now`: it is still around, so its prefer
// clock stays, whatever the test's answer. Once an hour, clocks of jobs no
// test has seen for kPreferClockIdleSec go (a job cancelled while pending
// is never started, so job_started() never drops its clock).
void PlacementSession::still_waiting(uint32_t job_id, int64_t now)
{
    if (now - prefer_swept_ >= 3600) {
        prefer_swept_ = now;
        for (auto it = prefer_.begin(); it != prefer_.end();)
            it = now - it->second.seen > kPreferClockIdleSec ? prefer_.erase(it) : std::next(it);
        for (auto it = room_.begin(); it != room_.end();)
            it = now - it->second.held > kPreferClockIdleSec ? room_.erase(it) : std::next(it);
    }
    auto it = prefer_.find(job_id);
    if (it != prefer_.end())
        it->second.seen = now;
}

// Job `job`'s prefer clock at `now` (0: none runs): the session's, else
// the one an earlier slurmctld wrote into its AdminComment (decide_impl
// has just called still_waiting).
int64_t PlacementSession::clock_of(const JobFacts& job, int64_t now)
{
    auto it = prefer_.find(job.job_id);
    if (it == prefer_.end()) {
        if (job.prefer_since <= 0 || job.prefer_since > now)
            return 0;
        it = prefer_.emplace(job.job_id, PreferClock{job.prefer_since, now}).first;
    }
    return it->second.since;
}

void NodeReleases::reset(size_t nodes)
{
    by_node_.resize(nodes);
    for (auto& v : by_node_)
        v.clear();
    sorted_.assign(nodes, 1);
}

void NodeReleases::add(int node, int64_t end, int gpus)
{
    if (node < 0 || static_cast<size_t>(node) >= by_node_.size())
        return;
    by_node_[node].push_back({end, gpus});
    sorted_[node] = 0;
}

int64_t NodeReleases::free_at(int node, int need, int free_now) const
{
    if (node < 0 || static_cast<size_t>(node) >= by_node_.size())
        return 0;
    std::vector<Release>& v = by_node_[node];
    if (v.empty())
        return 0;
    if (!sorted_[node]) {
        std::sort(v.begin(), v.end(), [](const Release& a, const Release& b) { return a.end < b.end; });
        sorted_[node] = 1;
    }
    const bool unknown = std::any_of(v.begin(), v.end(), [](const Release& r) { return r.gpus < 0; });
    if (need <= 0 || unknown)
        return v.back().end;
    if (free_now >= need)
        return 0;
    int64_t free = free_now;
    for (const Release& r : v) {
        free += r.gpus;
        if (free >= need)
            return r.end;
    }
    return v.back().end;  // the running jobs hold fewer than the node lacks: when all have ended
}

// usable_: the allowed nodes that have the job's `gpn` GPUs free now;
// with free_now == false, every allowed node (planning asks about the
// future: when could the job run, and where). With free_now and gpn > 0,
// node_free_ gets the free GPUs of the nodes usable now (0 elsewhere),
// read once per node.
void PlacementSession::fill_usable(bool free_now, int gpn, const FreeGpus& free_gpus)
{
    if (!free_now || gpn <= 0) {
        usable_ = allowed_;
        return;
    }
    node_free_.assign(allowed_.size(), 0);
    for (size_t mi = 0; mi < allowed_.size(); ++mi) {
        usable_[mi] = 0;
        if (!allowed_[mi])
            continue;
        const int f = free_gpus(static_cast<int>(mi));
        if (f >= gpn) {
            usable_[mi] = 1;
            node_free_[mi] = f;
        }
    }
}

// Will-run: the placement the request accepts on the allowed nodes free
// soonest. The allowed nodes' free times, ascending, are tried by bisection
// for the first at which the engine places the job on the nodes free by
// then (more free nodes never make a placement fail); the placement at that
// time. !ok when even every allowed node is not enough. The bisection
// starts at the first time with as many allowed nodes free as the job
// asks for (the engine never places it on fewer), and its probes skip the
// reason text: only the answer's is read, and it is placed again with it.
Placement PlacementSession::earliest_placement(const PlacementRequest& req, int gpus_per_node,
                                               const ClusterState& state, const FreeAt& free_at, int64_t now)
{
    const size_t n_nodes = allowed_.size();
    const size_t g = static_cast<size_t>(std::max(gpus_per_node, 0));
    if (free_orders_.size() <= g)
        free_orders_.resize(g + 1);
    FreeOrder& fo = free_orders_[g];
    if (fo.time.size() != n_nodes) {
        fo.time.assign(n_nodes, 0);
        fo.known.assign(n_nodes, 0);
        fo.order.clear();
    }
    free_time_.assign(n_nodes, 0);
    bool moved = false, any = false;
    for (size_t mi = 0; mi < n_nodes; ++mi)
        if (allowed_[mi]) {
            const int64_t t = std::max(free_at(static_cast<int>(mi), gpus_per_node), now);
            free_time_[mi] = t;
            any = true;
            if (!fo.known[mi] || fo.time[mi] != t) {
                if (!fo.known[mi])
                    fo.order.push_back(static_cast<int>(mi));
                fo.known[mi] = 1;
                fo.time[mi] = t;
                moved = true;
            }
        }
    if (!any)
        return Placement{};
    // Nodes not allowed now keep an older time in fo.order; they are
    // left out below, and the allowed ones are in order of their times
    // now (ties in any order: a probe takes every node free by its time).
    if (moved)
        std::sort(fo.order.begin(), fo.order.end(), [&](int a, int b) { return fo.time[a] < fo.time[b]; });
    by_free_time_.clear();
    for (int mi : fo.order)
        if (allowed_[static_cast<size_t>(mi)])
            by_free_time_.push_back(mi);
    times_.clear();
    for (int mi : by_free_time_)
        times_.push_back(free_time_[mi]);
    // The time by which req.nodes allowed nodes are free (the last when never).
    const int64_t enough = times_[std::min(times_.size(), static_cast<size_t>(std::max(req.nodes, 1))) - 1];
    times_.erase(std::unique(times_.begin(), times_.end()), times_.end());
    // usable_ holds the first `in` nodes of by_free_time_: those free by
    // the time tried last; each try moves that edge.
    std::fill(usable_.begin(), usable_.end(), uint8_t{0});
    size_t in = 0;
    auto place_by = [&](size_t k, const PlacementRequest& r) {
        const size_t want = static_cast<size_t>(
            std::upper_bound(by_free_time_.begin(), by_free_time_.end(), times_[k],
                             [&](int64_t t, int mi) { return t < free_time_[mi]; }) -
            by_free_time_.begin());
        for (; in < want; ++in)
            usable_[by_free_time_[in]] = 1;
        for (; in > want; --in)
            usable_[by_free_time_[in - 1]] = 0;
        return engine_->place(r, usable_, state);
    };
    size_t lo = static_cast<size_t>(std::lower_bound(times_.begin(), times_.end(), enough) - times_.begin());
    size_t hi = times_.size() - 1;
    // The probes ask only whether it places; the answer is placed whole.
    PlacementRequest probe = req;
    probe.explain = false;
    probe.answer_only = true;
    // Try the likeliest time first (likely_start()). The engine confirms
    // it (places at it, not at the time before); otherwise it narrows the
    // bisection, whose answer it cannot change. A guess that places also
    // answers whether the job places at all (more free nodes never make it
    // fail), so the probe with every allowed node is asked only when no
    // guess placed.
    // Without a reason to write, a probe that may well be the answer
    // (the guess; the last time when it is the only one left) is placed
    // whole: a placement that fails costs the same either way, and one
    // that is the answer need not be placed again.
    bool places_somewhere = false;
    const int64_t guess = likely_start(req, times_[lo]);
    if (guess > 0 && lo < hi) {
        const size_t k = static_cast<size_t>(std::lower_bound(times_.begin(), times_.end(), guess) - times_.begin());
        if (k >= lo && k < hi) {
            Placement at_k = place_by(k, req.explain ? probe : req);
            if (!at_k.ok) {
                lo = k + 1;
            } else {
                places_somewhere = true;
                if (k == lo || !place_by(k - 1, probe).ok) {
                    if (!req.explain)
                        return at_k;
                    lo = hi = k;
                } else {
                    hi = k - 1;
                }
            }
        }
    }
    if (!places_somewhere) {
        const bool answer = lo == hi && !req.explain;
        Placement at_last = place_by(times_.size() - 1, answer ? req : probe);
        if (!at_last.ok)
            return req.explain ? place_by(times_.size() - 1, req) : at_last;  // with the reason it places nowhere
        if (answer)
            return at_last;
    }
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (place_by(mid, probe).ok)
            hi = mid;
        else
            lo = mid + 1;
    }
    return place_by(hi, req);
}

// earliest_placement()'s first guess, `enough` the first time with as many
// allowed nodes free as the job asks for. A job of one node, or one that
// accepts any placement, most often starts then. A job that must fit in
// one NVLink domain (no segments), when the first domain has its nodes
// free. Other jobs: 0, no guess. Only a guess: spare nodes, health and
// power limits are the engine's to weigh.
int64_t PlacementSession::likely_start(const PlacementRequest& req, int64_t enough)
{
    const bool must = req.locality == Locality::Strict || (req.locality == Locality::Prefer && !req.fallback);
    if (!must || req.nodes < 2)
        return enough;
    if (req.level != LocalityLevel::NVLink || req.segment > 0)
        return 0;
    const Model& m = *model_;
    int64_t best = 0;
    for (const Domain& d : m.domains) {
        if (static_cast<int>(d.nodes.size()) < req.nodes)
            continue;
        domain_times_.clear();
        for (int mi : d.nodes)
            if (allowed_[static_cast<size_t>(mi)])
                domain_times_.push_back(free_time_[static_cast<size_t>(mi)]);
        if (static_cast<int>(domain_times_.size()) < req.nodes)
            continue;
        auto nth = domain_times_.begin() + (req.nodes - 1);
        std::nth_element(domain_times_.begin(), nth, domain_times_.end());
        if (best == 0 || *nth < best)
            best = *nth;
    }
    return best;
}

}  // namespace m2g
