// m2g core: the admission session (see admission_session.hpp).
#include "core/power/admission_session.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "core/job/annotation.hpp"
#include "core/model/config.hpp"
#include "core/job/intent.hpp"

namespace m2g {

namespace {

int64_t mtime_ns(const std::string& path)
{
    struct stat st;
    if (stat(path.c_str(), &st) != 0)
        return -1;
    return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

void cap_by_slurm_deadline(AdmissionRequest& r, const AdmissionPolicy& ap, int64_t deadline)
{
    if (deadline <= 0 || !is_deferrable(ap, r.intent))
        return;
    const int64_t latest = deadline - std::max<int64_t>(r.time_limit_s, 0);
    if (r.intent.defer != DeferConsent::Until || latest < r.intent.defer_until) {
        r.intent.defer = DeferConsent::Until;
        r.intent.defer_until = latest;
    }
}

AdmissionVerdict counted_as(Verdict v)
{
    switch (v) {
    case Verdict::Defer:
        return AdmissionVerdict::Defer;
    case Verdict::Pace:
        return AdmissionVerdict::Pace;
    case Verdict::Reject:
        return AdmissionVerdict::Reject;
    case Verdict::Admit:
        break;
    }
    return AdmissionVerdict::Admit;
}

AdmissionSession::AdmissionSession(SessionLog log, Counters* counters) : log_(std::move(log)), counters_(counters) {}

AdmissionSession::~AdmissionSession()
{
    stop();
}

void AdmissionSession::info(const std::string& msg) const
{
    if (log_.log)
        log_.log(LogLevel::Info, msg);
}

void AdmissionSession::error(const std::string& msg) const
{
    if (log_.log)
        log_.log(LogLevel::Error, msg);
}

void AdmissionSession::load(const std::string& conf_path, int64_t now)
{
    const int64_t mt = mtime_ns(conf_path);
    bool first;
    {
        std::lock_guard<std::mutex> lk(mu_);
        first = !loaded_once_;
        loaded_once_ = true;
        if (!first && mt == conf_mtime_ns_)
            return;
        conf_mtime_ns_ = mt;
    }
    std::shared_ptr<const Model> model;
    try {
        std::string text = read_text_file(conf_path);
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (model_ && text == conf_text_)
                return;  // touched, not changed: model and feed stay
        }
        model = std::make_shared<const Model>(build_model(parse_m2g_conf(text, conf_path)));
        std::lock_guard<std::mutex> lk(mu_);
        conf_text_ = std::move(text);
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lk(mu_);
        error(std::string(e.what()) + (model_ ? "; keeping the previous m2g.conf in force"
                                              : "; jobs are admitted without m2g policy"));
        return;
    }
    std::shared_ptr<SignalFeed> feed;
    const AdmissionPolicy& ap = model->admission;
    if (!ap.signals_file.empty()) {
        feed = std::make_shared<SignalFeed>(ap.signals_file, ap.signals_ttl_sec, ap.failsafe, *model, log_.log);
        feed->set_status_file(ap.signals_status_file);
        // Read the feed once before anyone sees it: a new feed that has not
        // looked at its file yet would read as missing and release (or,
        // with fail-safe defer, hold) every job m2g manages.
        feed->refresh(now);
        feed->start(ap.signals_poll_sec);
    }
    std::shared_ptr<SignalFeed> old_feed;
    {
        std::lock_guard<std::mutex> lk(mu_);
        old_feed = std::move(feed_);
        feed_ = feed;
        source_ = nullptr;
        // The feed refers to the model: keep the old pair alive until the
        // old feed is stopped below.
        std::swap(model_, model);
    }
    if (old_feed)
        old_feed->stop();
    old_feed.reset();
    info(std::string("m2g.conf ") + (first ? "loaded" : "reloaded") + ": admission " + to_string(ap.mode) +
         ", signals " + (ap.signals_file.empty() ? std::string("none") : ap.signals_file));
}

void AdmissionSession::adopt(std::shared_ptr<const Model> model, SignalsSource signals)
{
    std::shared_ptr<SignalFeed> old_feed;
    {
        std::lock_guard<std::mutex> lk(mu_);
        old_feed = std::move(feed_);
        model_ = std::move(model);
        source_ = std::move(signals);
        conf_text_.clear();
        loaded_once_ = true;
    }
    if (old_feed)
        old_feed->stop();
    pass_ = Pass{};
}

std::shared_ptr<const Model> AdmissionSession::model() const
{
    std::lock_guard<std::mutex> lk(mu_);
    return model_;
}

AdmissionContext AdmissionSession::current(int64_t now) const
{
    AdmissionContext c;
    SignalsSource source;
    {
        std::lock_guard<std::mutex> lk(mu_);
        c.model = model_;
        c.feed = feed_;
        source = source_;
    }
    if (c.feed)
        c.view = c.feed->view(now);
    else if (source)
        c.view = source(now);
    return c;
}

void AdmissionSession::stop()
{
    std::shared_ptr<SignalFeed> feed;
    {
        std::lock_guard<std::mutex> lk(mu_);
        feed = feed_;
    }
    if (feed)
        feed->stop();
}

std::shared_ptr<const Model> AdmissionSession::begin_pass(int64_t now)
{
    AdmissionContext c = current(now);
    pass_.taken = true;
    pass_.now = now;
    pass_.model = std::move(c.model);
    pass_.pressure = c.view.hold || !active_events(c.view.snap.get(), now).empty();
    pass_.view = std::move(c.view);
    return pass_.model;
}

ReleaseAction AdmissionSession::reevaluate(const PendingJobFacts& job, int64_t now)
{
    if (!pass_.taken || pass_.now != now)
        begin_pass(now);
    const ReleaseAction none;
    if (!pass_.model || !job.pending || job.held)
        return none;
    if (job.admission.empty())
        return none;  // not admitted by m2g (submitted before it was loaded, or an admin cleared it)
    const AdmissionAnnotation held = parse_admission(job.admission);
    const bool waiting = held.waits();
    const int64_t user_begin = held.user_begin;
    const int64_t begin_now = job.begin_time;
    if (waiting) {
        // m2g owns a waiting job's begin time only while it is the one m2g
        // wrote. Anyone else's change (an operator's StartTime=, the owner's
        // later one, a requeue, a dependency delay) ends m2g's hold on it,
        // and so does an until= this m2g cannot read.
        if (held.until == 0 || std::max(held.until, user_begin) != begin_now)
            return none;
    } else if (!pass_.pressure || begin_now > now) {
        return none;  // eligible and nothing to yield to, or the owner's own --begin
    }
    const Model& model = *pass_.model;
    const AdmissionPolicy& ap = model.admission;
    if (ap.mode != AdmissionMode::Enforce && !waiting)
        return none;

    const PendingRequest req = job.request ? job.request() : PendingRequest{};
    Decision d;
    JobIntent intent;
    try {
        intent = req.intent ? *req.intent : decode_intent(req.spank_env);
    } catch (const std::exception& e) {
        // An environment this m2g cannot read (an older or newer m2g wrote
        // it): decide on the defaults rather than keep the job forever.
        if (log_.debug)
            log_.debug("JobId=" + std::to_string(job.job_id) + ": " + e.what() + "; deciding with the defaults");
    }
    if (ap.mode != AdmissionMode::Enforce) {
        // Admission=monitor or off now: m2g lets go of what it holds.
        d.verdict = Verdict::Admit;
        d.reason = std::string("Admission=") + to_string(ap.mode);
    } else {
        AdmissionRequest r;
        r.intent = intent;
        r.nodes = std::max(1, req.nodes);
        r.gpus = req.gpus != 0 ? req.gpus : r.intent.gpus;
        r.time_limit_s = req.time_limit_s;
        r.now = now;
        r.user_begin = user_begin;
        r.account = req.account;
        r.check_reserved = false;  // checked when it was submitted
        if (r.intent.defer == DeferConsent::No && !ap.defer_exempt_groups.empty() && req.identity)
            req.identity(r.user, r.groups);
        r.candidate_nodes = req.candidate_nodes;
        cap_by_slurm_deadline(r, ap, req.deadline);
        d = decide(model, pass_.view, r, nullptr);
        if (d.verdict == Verdict::Reject)
            return none;  // admitted once; a later rejection would lose it: leave it as it is
    }
    int64_t begin = d.verdict == Verdict::Defer || d.verdict == Verdict::Pace ? d.begin_time : 0;
    begin = std::max(begin, user_begin);
    const bool now_waiting = begin > now;
    if (!waiting && !now_waiting)
        return none;  // eligible, and stays eligible
    if (waiting && now_waiting) {
        if (begin == begin_now)
            return none;  // unchanged
        // A re-check deferral (no known end) keeps its time while the cause
        // lasts: select/m2g blocks the job meanwhile if it comes due.
        const CauseKind kind = cause_of(held.cause).kind;
        if (held.cause == d.cause && (kind == CauseKind::SitePower || kind == CauseKind::Failsafe) && begin_now > now)
            return none;
    }

    ReleaseAction a;
    a.kind = now_waiting ? ReleaseAction::Kind::Defer : ReleaseAction::Kind::Release;
    a.begin_time = now_waiting ? begin : std::max(now, user_begin);
    AdmissionAnnotation next = admission_annotation(d, intent, ap, user_begin, false);
    next.checkpoint_signal = held.checkpoint_signal;  // what the job asked at submission
    if (waiting && !now_waiting)
        next.released_at = now;
    a.admission = format(next);
    a.reason = d.reason;
    a.verdict = d.verdict;
    info("JobId=" + std::to_string(job.job_id) + (now_waiting ? " deferred: " : " released: ") + d.reason);
    // Counted without a time: the latency histogram is about submissions.
    if (counters_) {
        if (!now_waiting)
            counters_->decision(AdmissionVerdict::Released, -1);
        else if (!waiting)
            counters_->decision(counted_as(d.verdict), -1);
    }
    return a;
}

}  // namespace m2g
