// AdmissionSession: job_submit/m2g's release rules as its release thread
// sees them. Each job is submitted as the plugin submits it (decide() and
// admission_annotation() at kNow), then handed to reevaluate() after the feed
// changed, and what it answers is applied as the plugin applies it. On the
// eight-rack NVL72 fixture (test/fixtures/nvl72-8rack.conf), site events
// only:
//
//   kNow                 +20 min   +1 h           +2 h
//    |---- event dr1 (site -50%) ----|
//    |                     (ended early)  (or extended) ----|
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "test/unit/event_fixture.hpp"
#include "core/power/admission_session.hpp"
#include "core/job/annotation.hpp"
#include "core/model/config.hpp"
#include "core/base/keys.hpp"

using namespace m2g;

namespace {

constexpr int64_t kNow = 1795982400;  // 2026-11-29T20:00:00Z
constexpr int64_t kMin = 60, kHour = 3600;

using Kind = ReleaseAction::Kind;

class Release : public testing::Test {
  protected:
    Release() : model_(std::make_shared<const Model>(load_model(M2G_FIXTURES "/nvl72-8rack.conf")))
    {
        s_.generated_at = kNow;
        s_.source = "test";
        s_.racks.resize(model_->domains.size());
        s_.rows.resize(model_->fault_domains.size());
        adopt(model_);
    }

    void adopt(std::shared_ptr<const Model> m)
    {
        session_.adopt(std::move(m), [this](int64_t) { return view(); });
    }

    // The feed as the plugin's SignalFeed would hand it over: fresh.
    SignalsView view() const
    {
        SignalsView v;
        v.snap = std::make_shared<const Signals>(s_);
        v.state = FeedState::Fresh;
        v.age_s = 0;
        return v;
    }

    // A 2-node job of `cls` submitted at kNow (with the owner's own
    // --begin `user_begin`, 0 none): what job_submit/m2g leaves in Slurm.
    PendingJobFacts submitted(const std::string& cls, int64_t user_begin = 0)
    {
        AdmissionRequest r;
        r.intent = decode_intent({"M2G_CLASS=" + cls});
        r.gpus = 8;
        r.nodes = 2;
        r.time_limit_s = kHour;
        r.now = kNow;
        r.user_begin = user_begin;
        const Decision d = decide(*model_, view(), r, nullptr);
        PendingJobFacts f;
        f.job_id = 7;
        f.pending = true;
        f.admission = format(admission_annotation(d, r.intent, model_->admission, user_begin, false));
        f.begin_time = std::max({d.begin_time, user_begin, kNow});
        f.request = [cls] {
            PendingRequest q;
            q.spank_env = {"PATH=/bin", "M2G_CLASS=" + cls};
            q.nodes = 2;
            q.gpus = 8;
            q.time_limit_s = kHour;
            return q;
        };
        return f;
    }

    // reevaluate() at `now`, applied to `f` as the plugin applies it.
    ReleaseAction pass(PendingJobFacts& f, int64_t now)
    {
        const ReleaseAction a = session_.reevaluate(f, now);
        if (a.changed()) {
            f.begin_time = a.begin_time;
            f.admission = a.admission;
        }
        return a;
    }

    uint64_t counted(const char* verdict) const { return counters_.snapshot(kNow).decisions.at(verdict); }

    Signals s_;
    std::shared_ptr<const Model> model_;
    std::vector<std::string> logs_;
    Counters counters_{kw::kPluginAdmission, kNow};
    AdmissionSession session_{
        SessionLog{[this](LogLevel, const std::string& m) { logs_.push_back(m); }, nullptr, nullptr}, &counters_};
};

}  // namespace

TEST_F(Release, DeferredJobIsReleasedWhenItsEventEnds)
{
    s_.events = {test::site_event("dr1", kNow - 10 * kMin, kNow + kHour, 50)};
    PendingJobFacts f = submitted("training");
    ASSERT_EQ(f.admission.rfind("defer class=training w_gpu=413 until=2026-11-29T21:00:00Z cause=dr1", 0), 0u)
        << f.admission;
    ASSERT_EQ(f.begin_time, kNow + kHour);

    // While the event lasts, the job stays as it is.
    EXPECT_EQ(pass(f, kNow + 10 * kMin).kind, Kind::None);
    EXPECT_EQ(f.begin_time, kNow + kHour);

    // The event ends early: the next pass releases it, now.
    s_.events[0].end = kNow + 20 * kMin;
    const ReleaseAction a = pass(f, kNow + 30 * kMin);
    EXPECT_EQ(a.kind, Kind::Release);
    EXPECT_FALSE(a.waiting());
    EXPECT_EQ(a.begin_time, kNow + 30 * kMin);
    EXPECT_EQ(a.verdict, Verdict::Admit);
    EXPECT_EQ(f.admission.rfind("released at 2026-11-29T20:30:00Z: admit class=training w_gpu=413", 0), 0u)
        << f.admission;
    EXPECT_EQ(counted("released"), 1u);
    ASSERT_EQ(logs_.size(), 1u);
    EXPECT_EQ(logs_[0].rfind("JobId=7 released: admit", 0), 0u) << logs_[0];

    // Released and eligible: later passes leave it.
    EXPECT_EQ(pass(f, kNow + 40 * kMin).kind, Kind::None);
    EXPECT_EQ(counted("released"), 1u);
}

TEST_F(Release, ExtendedEventMovesTheBeginTime)
{
    s_.events = {test::site_event("dr1", kNow - 10 * kMin, kNow + kHour, 50)};
    PendingJobFacts f = submitted("training");
    ASSERT_EQ(f.begin_time, kNow + kHour);

    s_.events[0].end = kNow + 2 * kHour;
    const ReleaseAction a = pass(f, kNow + 10 * kMin);
    EXPECT_EQ(a.kind, Kind::Defer);
    EXPECT_TRUE(a.waiting());
    EXPECT_EQ(a.begin_time, kNow + 2 * kHour);
    EXPECT_EQ(f.begin_time, kNow + 2 * kHour);
    EXPECT_NE(f.admission.find("until=2026-11-29T22:00:00Z cause=dr1"), std::string::npos) << f.admission;
    // Moving a deferral is not a new one.
    EXPECT_EQ(counted("defer"), 0u);

    // Unchanged at the next pass.
    EXPECT_EQ(pass(f, kNow + 20 * kMin).kind, Kind::None);
}

TEST_F(Release, NewEventDefersAnEligibleDeferrableJob)
{
    PendingJobFacts f = submitted("training");
    ASSERT_EQ(f.admission.rfind("admit class=training", 0), 0u) << f.admission;
    ASSERT_EQ(f.begin_time, kNow);
    // Nothing presses: eligible jobs are not decided again.
    bool asked = false;
    PendingJobFacts probe = f;
    probe.request = [&] {
        asked = true;
        return f.request();
    };
    EXPECT_EQ(pass(probe, kNow + 5 * kMin).kind, Kind::None);
    EXPECT_FALSE(asked);

    s_.events = {test::site_event("dr1", kNow + 10 * kMin, kNow + kHour, 50)};
    const ReleaseAction a = pass(f, kNow + 15 * kMin);
    EXPECT_EQ(a.kind, Kind::Defer);
    EXPECT_EQ(a.verdict, Verdict::Defer);
    EXPECT_EQ(a.begin_time, kNow + kHour);
    EXPECT_EQ(f.admission.rfind("defer class=training w_gpu=413 until=2026-11-29T21:00:00Z cause=dr1", 0), 0u)
        << f.admission;
    EXPECT_EQ(counted("defer"), 1u);
    ASSERT_EQ(logs_.size(), 1u);
    EXPECT_EQ(logs_[0].rfind("JobId=7 deferred: defer: DR event dr1", 0), 0u) << logs_[0];
}

TEST_F(Release, NonDeferrableJobIsUntouched)
{
    PendingJobFacts f = submitted("inference");
    ASSERT_EQ(f.admission.rfind("admit class=inference", 0), 0u) << f.admission;
    s_.events = {test::site_event("dr1", kNow + 10 * kMin, kNow + kHour, 50)};
    const std::string before = f.admission;
    EXPECT_EQ(pass(f, kNow + 15 * kMin).kind, Kind::None);
    EXPECT_EQ(f.admission, before);
    EXPECT_EQ(f.begin_time, kNow);
    EXPECT_TRUE(logs_.empty());
}

TEST_F(Release, HeldForeignAndMovedJobsAreLeftAlone)
{
    s_.events = {test::site_event("dr1", kNow - 10 * kMin, kNow + kHour, 50)};
    PendingJobFacts deferred = submitted("training");
    s_.events.clear();  // the reason is gone: only the rules below keep these jobs

    PendingJobFacts held = deferred;
    held.held = true;
    EXPECT_EQ(pass(held, kNow + 5 * kMin).kind, Kind::None);

    PendingJobFacts running = deferred;
    running.pending = false;
    EXPECT_EQ(pass(running, kNow + 5 * kMin).kind, Kind::None);

    PendingJobFacts foreign = deferred;
    foreign.admission = "";  // submitted before m2g, or an admin cleared it
    EXPECT_EQ(pass(foreign, kNow + 5 * kMin).kind, Kind::None);

    PendingJobFacts moved = deferred;
    moved.begin_time = kNow + 3 * kHour;  // an operator's StartTime=
    EXPECT_EQ(pass(moved, kNow + 5 * kMin).kind, Kind::None);

    // The same job as m2g left it is released.
    EXPECT_EQ(pass(deferred, kNow + 5 * kMin).kind, Kind::Release);
}

TEST_F(Release, ReleaseKeepsTheOwnersBegin)
{
    s_.events = {test::site_event("dr1", kNow - 10 * kMin, kNow + kHour, 50)};
    PendingJobFacts f = submitted("training", kNow + 40 * kMin);
    ASSERT_NE(f.admission.find(" user_begin=" + std::to_string(kNow + 40 * kMin)), std::string::npos)
        << f.admission;
    ASSERT_EQ(f.begin_time, kNow + kHour);

    s_.events[0].end = kNow + 20 * kMin;
    const ReleaseAction a = pass(f, kNow + 30 * kMin);
    EXPECT_EQ(a.begin_time, kNow + 40 * kMin);  // not before the owner's --begin
    EXPECT_NE(f.admission.find(" user_begin="), std::string::npos) << f.admission;
}

TEST_F(Release, MonitorLetsGoOfWhatItHolds)
{
    s_.events = {test::site_event("dr1", kNow - 10 * kMin, kNow + kHour, 50)};
    PendingJobFacts deferred = submitted("training");
    PendingJobFacts eligible = submitted("inference");
    auto monitor = std::make_shared<Model>(*model_);
    monitor->admission.mode = AdmissionMode::Monitor;
    adopt(monitor);

    const ReleaseAction a = pass(deferred, kNow + 5 * kMin);
    EXPECT_EQ(a.kind, Kind::Release);
    EXPECT_EQ(a.reason, "Admission=monitor");
    EXPECT_EQ(a.begin_time, kNow + 5 * kMin);
    // Under Admission=monitor nothing is deferred, also under pressure.
    EXPECT_EQ(pass(eligible, kNow + 5 * kMin).kind, Kind::None);
}

TEST_F(Release, WithoutModelNothingHappens)
{
    AdmissionSession empty(SessionLog{}, nullptr);
    EXPECT_EQ(empty.begin_pass(kNow), nullptr);
    s_.events = {test::site_event("dr1", kNow - 10 * kMin, kNow + kHour, 50)};
    PendingJobFacts f = submitted("training");
    EXPECT_EQ(empty.reevaluate(f, kNow + 2 * kHour).kind, Kind::None);
}

// load(): the plugin's m2g.conf; a broken file keeps the model in force.
TEST(AdmissionSessionLoad, KeepsThePreviousModelOnError)
{
    char tmpl[] = "/tmp/m2g-admission-session-XXXXXX";
    ASSERT_TRUE(mkdtemp(tmpl));
    const std::string dir = tmpl, conf = dir + "/m2g.conf";
    std::vector<std::pair<LogLevel, std::string>> logs;
    AdmissionSession s(SessionLog{[&](LogLevel l, const std::string& m) { logs.emplace_back(l, m); }, nullptr, nullptr},
                       nullptr);
    std::ofstream(conf) << "NodeName=n[1-4] Gpus=4\nDomainName=d1 Nodes=n[1-4]\n";
    s.load(conf, kNow);
    const std::shared_ptr<const Model> first = s.model();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->nodes.size(), 4u);
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_EQ(logs[0].second, "m2g.conf loaded: admission enforce, signals none");

    // Unchanged mtime: not even read.
    s.load(conf, kNow);
    EXPECT_EQ(s.model(), first);
    EXPECT_EQ(logs.size(), 1u);

    usleep(10000);
    std::ofstream(conf, std::ios::trunc) << "NodeName=n[1-4] Gpus=4\nNoSuchKey=1\n";
    s.load(conf, kNow);
    EXPECT_EQ(s.model(), first);
    ASSERT_EQ(logs.size(), 2u);
    EXPECT_EQ(logs[1].first, LogLevel::Error);
    EXPECT_NE(logs[1].second.find("NoSuchKey"), std::string::npos) << logs[1].second;
    EXPECT_NE(logs[1].second.find("; keeping the previous m2g.conf in force"), std::string::npos);

    usleep(10000);
    std::ofstream(conf, std::ios::trunc) << "NodeName=n[1-8] Gpus=4\n";
    s.load(conf, kNow);
    ASSERT_TRUE(s.model());
    EXPECT_EQ(s.model()->nodes.size(), 8u);
    EXPECT_EQ(logs.back().second, "m2g.conf reloaded: admission enforce, signals none");
    EXPECT_EQ(s.current(kNow).model, s.model());

    std::remove(conf.c_str());
    rmdir(dir.c_str());
}
