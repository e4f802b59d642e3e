// AdmissionSession::submit() and modify(): every rule job_submit/m2g applies
// at submission and at `scontrol update StartTime=`, as the plugin (and the
// simulator) call them, on the eight-rack NVL72 fixture plus the policy
// lines each case needs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/base/source.hpp"
#include "core/job/annotation.hpp"
#include "core/model/config.hpp"
#include "core/power/admission_session.hpp"
#include "test/unit/event_fixture.hpp"

using namespace m2g;

namespace {

constexpr int64_t kNow = 1795982400;  // 2026-11-29T20:00:00Z
constexpr int64_t kHour = 3600;

class Submit : public testing::Test {
  protected:
    // The fixture's m2g.conf with `extra` lines appended.
    void policy(const std::string& extra)
    {
        const std::string text = read_text_file(M2G_FIXTURES "/nvl72-8rack.conf") + "\n" + extra + "\n";
        session_.adopt(std::make_shared<const Model>(build_model(parse_m2g_conf(text, "m2g.conf"))),
                       [this](int64_t) {
                           SignalsView v;
                           v.snap = std::make_shared<const Signals>(s_);
                           v.state = FeedState::Fresh;
                           return v;
                       });
    }

    void SetUp() override
    {
        s_.generated_at = kNow;
        s_.source = "test";
        session_.set_audit_log([this](const std::string& m) { audit_.push_back(m); });
        policy("");
    }

    // A 2-node, 8-GPU, one-hour job with these M2G_* variables.
    Submission job(std::vector<std::string> env) const
    {
        Submission s;
        s.spank_env = std::move(env);
        s.nodes = 2;
        s.gpus = 8;
        s.time_limit_s = kHour;
        s.uid = 1000;
        s.account = [] { return std::string("physics"); };
        s.user_name = [] { return std::string("ada"); };
        s.groups = [](const std::string&) { return std::vector<std::string>{"users"}; };
        return s;
    }

    std::string admission_of(const SubmitAnswer& a) const
    {
        return a.admin_comment ? get_annotation(*a.admin_comment, AnnotationPart::Admission) : "(none)";
    }

    Signals s_;
    std::vector<std::string> logs_, audit_;
    AdmissionSession session_{
        SessionLog{[this](LogLevel, const std::string& m) { logs_.push_back(m); }, nullptr, nullptr}, nullptr};
};

}  // namespace

TEST_F(Submit, EnforceDefersDeferrableWorkDuringAnEvent)
{
    s_.events = {test::site_event("dr1", kNow - 60, kNow + kHour, 50)};
    const SubmitAnswer a = session_.submit(job({"M2G_CLASS=training"}), kNow);
    EXPECT_FALSE(a.refused());
    EXPECT_EQ(a.begin_time, kNow + kHour);
    EXPECT_EQ(admission_of(a).rfind("defer class=training", 0), 0u) << admission_of(a);
    ASSERT_TRUE(a.counted.has_value());
    EXPECT_EQ(*a.counted, AdmissionVerdict::Defer);
}

TEST_F(Submit, MonitorRecordsWhatItWouldDoAndChangesNothing)
{
    policy("Admission=monitor");
    s_.events = {test::site_event("dr1", kNow - 60, kNow + kHour, 50)};
    const SubmitAnswer a = session_.submit(job({"M2G_CLASS=training"}), kNow);
    EXPECT_FALSE(a.refused());
    EXPECT_EQ(a.begin_time, 0);
    EXPECT_EQ(admission_of(a).rfind("monitor would defer class=training", 0), 0u) << admission_of(a);
    ASSERT_TRUE(a.counted.has_value());
    EXPECT_EQ(*a.counted, AdmissionVerdict::Defer);  // counted as what m2g would do
}

TEST_F(Submit, OffLeavesTheJobAlone)
{
    policy("Admission=off");
    s_.events = {test::site_event("dr1", kNow - 60, kNow + kHour, 50)};
    const SubmitAnswer a = session_.submit(job({"M2G_CLASS=training"}), kNow);
    EXPECT_FALSE(a.refused());
    EXPECT_FALSE(a.admin_comment.has_value());
    EXPECT_FALSE(a.counted.has_value());
    EXPECT_EQ(a.begin_time, 0);
}

TEST_F(Submit, AnIntentM2gCannotReadIsRefusedAsInvalid)
{
    const SubmitAnswer a = session_.submit(job({"M2G_CLASS=bogus"}), kNow);
    EXPECT_EQ(a.refusal, SubmitAnswer::Refusal::Invalid);
    EXPECT_EQ(a.message.rfind("m2g: ", 0), 0u) << a.message;
    ASSERT_TRUE(a.counted.has_value());
    EXPECT_EQ(*a.counted, AdmissionVerdict::Reject);
}

TEST_F(Submit, TheOwnersBeginIsKeptAndRecorded)
{
    Submission s = job({"M2G_CLASS=training"});
    s.begin_time = kNow + 2 * kHour;
    const SubmitAnswer a = session_.submit(s, kNow);
    EXPECT_EQ(a.begin_time, 0);  // nothing of m2g's: Slurm keeps the owner's --begin
    const AdmissionAnnotation note = parse_admission(admission_of(a));
    EXPECT_EQ(note.user_begin, kNow + 2 * kHour) << admission_of(a);
}

TEST_F(Submit, SlurmsDeadlineCapsADeferral)
{
    s_.events = {test::site_event("dr1", kNow - 60, kNow + 4 * kHour, 50)};
    Submission s = job({"M2G_CLASS=training"});
    s.deadline = kNow + 2 * kHour;  // must start by deadline - limit = kNow + 1 h
    const SubmitAnswer a = session_.submit(s, kNow);
    // Deferred, but never past the last start that still meets the deadline.
    EXPECT_EQ(a.begin_time, kNow + kHour) << admission_of(a);
    EXPECT_NE(a.decision.reason.find("deadline 2026-11-29T21:00:00Z before event end"), std::string::npos)
        << a.decision.reason;
}

TEST_F(Submit, ConvertRewritesTheJobsOwnIntent)
{
    policy("NoDeferAction=convert");
    s_.events = {test::site_event("dr1", kNow - 60, kNow + kHour, 50)};
    const SubmitAnswer a =
        session_.submit(job({"PATH=/bin", "M2G_CLASS=training", "SPANK_M2G_DEFER=no"}), kNow);
    ASSERT_TRUE(a.spank_env.has_value());
    EXPECT_EQ(*a.spank_env, (std::vector<std::string>{"PATH=/bin", "M2G_CLASS=training", "SPANK_M2G_DEFER=ok",
                                                      "M2G_TAGS=tenant=physics"}));
    EXPECT_TRUE(a.decision.converted);
}

TEST_F(Submit, ReservedIntentIsRefusedAndAudited)
{
    policy("PrivilegedTags=priority\nPrivilegedAccounts=ops");
    const SubmitAnswer a = session_.submit(job({"M2G_CLASS=training", "M2G_TAGS=priority=high"}), kNow);
    EXPECT_EQ(a.refusal, SubmitAnswer::Refusal::Denied);
    EXPECT_NE(a.message.find("reserved for privileged accounts"), std::string::npos) << a.message;
    ASSERT_EQ(audit_.size(), 1u);
    EXPECT_EQ(audit_[0].rfind("uid 1000 (ada) account physics: refused: reject: tag priority=high reserved", 0), 0u)
        << audit_[0];
}

TEST_F(Submit, AGrantedOverrideIsAudited)
{
    policy("PrivilegedTags=priority\nPrivilegedAccounts=physics");
    const SubmitAnswer a = session_.submit(job({"M2G_CLASS=training", "M2G_TAGS=priority=high"}), kNow);
    EXPECT_FALSE(a.refused());
    ASSERT_EQ(audit_.size(), 1u);
    EXPECT_NE(audit_[0].find("(reserved) allowed for account physics"), std::string::npos) << audit_[0];
}

TEST_F(Submit, SlurmBridgeJobsGetThePodsIntentUnlessTheyCarryTheirOwn)
{
    char path[] = "/tmp/m2g-bridge-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << R"({"version": "m2g.bridge-intents/v1", "generated_at": 1795982000,
        "pods": {"ml/train-0": {"env": {"M2G_CLASS": "inference"}}}})";
    policy(std::string("BridgeIntentsFile=") + path);
    Submission s = job({"PATH=/bin"});
    s.admin_comment = R"({"pods":["ml/train-0"]})";
    s.batch = true;
    const SubmitAnswer a = session_.submit(s, kNow);
    ASSERT_TRUE(a.spank_env.has_value());
    EXPECT_EQ(*a.spank_env,
              (std::vector<std::string>{"PATH=/bin", "M2G_CLASS=inference", "M2G_TAGS=tenant=physics"}));
    EXPECT_EQ(a.batch_env_add, (std::vector<std::string>{"SLURM_SPANK_M2G_CLASS=inference",
                                                          "SLURM_SPANK_M2G_TAGS=tenant=physics"}));
    // slurm-bridge parses its AdminComment back strictly: m2g adds nothing to it.
    EXPECT_EQ(a.admin_comment.value_or(""), s.admin_comment);

    // A job's own M2G_* variables win; the file is not consulted.
    Submission own = s;
    own.spank_env = {"M2G_CLASS=training", "M2G_TAGS=tenant=physics"};
    const SubmitAnswer b = session_.submit(own, kNow);
    EXPECT_FALSE(b.spank_env.has_value());
    EXPECT_NE(logs_.back().find("carries its own M2G_* variables"), std::string::npos) << logs_.back();
    unlink(path);
}

TEST_F(Submit, OwnersMayNotPullAHeldJobForwardOperatorsMayAndAreAudited)
{
    s_.events = {test::site_event("dr1", kNow - 60, kNow + kHour, 50)};
    const SubmitAnswer a = session_.submit(job({"M2G_CLASS=training"}), kNow);
    ASSERT_EQ(a.begin_time, kNow + kHour);
    Modification mod;
    mod.job_id = 42;
    mod.uid = 1000;
    mod.pending = true;
    mod.admin_comment = *a.admin_comment;
    mod.begin_time = a.begin_time;
    mod.requested_begin = kNow;
    mod.user_name = [] { return std::string("ada"); };
    const ModifyAnswer owner = session_.modify(mod);
    EXPECT_TRUE(owner.denied);
    EXPECT_NE(owner.message.find("only an operator or admin may move its start time earlier"), std::string::npos);
    EXPECT_TRUE(audit_.empty());

    mod.operator_ = true;
    EXPECT_FALSE(session_.modify(mod).denied);
    ASSERT_EQ(audit_.size(), 1u);
    EXPECT_EQ(audit_[0].rfind("JobId=42: operator uid 1000 (ada) moved its begin time", 0), 0u) << audit_[0];

    // Later is anyone's to choose.
    mod.operator_ = false;
    mod.requested_begin = kNow + 2 * kHour;
    EXPECT_FALSE(session_.modify(mod).denied);
}

// The tenant is the job's Slurm account: given when the job names none,
// refused when it names another, unless PrivilegedTags= lets it.
TEST_F(Submit, TheTenantIsTheJobsAccount)
{
    Submission s = job({"M2G_CLASS=training", "M2G_TAGS=project=p1"});
    s.batch = true;
    SubmitAnswer a = session_.submit(s, kNow);
    EXPECT_FALSE(a.refused());
    ASSERT_TRUE(a.spank_env.has_value());
    EXPECT_EQ(*a.spank_env, (std::vector<std::string>{"M2G_CLASS=training", "M2G_TAGS=project=p1,tenant=physics"}));
    EXPECT_EQ(a.batch_env_add, (std::vector<std::string>{"SLURM_SPANK_M2G_TAGS=project=p1,tenant=physics"}));

    // Its own account, named: nothing to change.
    a = session_.submit(job({"M2G_TAGS=tenant=physics"}), kNow);
    EXPECT_FALSE(a.refused());
    EXPECT_FALSE(a.spank_env.has_value());

    // Another tenant: refused, in every Admission mode, and audited.
    for (const char* mode : {"", "Admission=monitor", "Admission=off"}) {
        policy(mode);
        audit_.clear();
        a = session_.submit(job({"M2G_TAGS=tenant=globex"}), kNow);
        EXPECT_EQ(a.refusal, SubmitAnswer::Refusal::Denied) << mode;
        EXPECT_EQ(a.message,
                  "m2g: --m2g-tag=tenant=globex: a job's tenant is its Slurm account (physics); naming another is "
                  "reserved for privileged accounts (none) and Unix groups (none) with PrivilegedTags=tenant in "
                  "m2g.conf. Submit without the tag, or with --account=globex if you may charge that account.");
        ASSERT_EQ(audit_.size(), 1u) << mode;
        EXPECT_EQ(audit_[0], "uid 1000 (ada) account physics: refused: tag tenant=globex is not its account");
    }

    // A privileged account or group may name another tenant (audited).
    policy("PrivilegedTags=tenant\nPrivilegedGroups=users");
    audit_.clear();
    a = session_.submit(job({"M2G_TAGS=tenant=globex"}), kNow);
    EXPECT_FALSE(a.refused()) << a.message;
    ASSERT_FALSE(audit_.empty());
    EXPECT_EQ(audit_[0], "uid 1000 (ada) account physics: tag tenant=globex (not its account) allowed for group "
                         "users (PrivilegedGroups=)");
    // ... and the bound tenant itself is never "reserved".
    policy("PrivilegedTags=tenant\nPrivilegedAccounts=ops");
    a = session_.submit(job({"M2G_CLASS=training"}), kNow);
    EXPECT_FALSE(a.refused()) << a.message;

    // No account known (no accounting): the tags stay as given.
    policy("");
    Submission none = job({"M2G_TAGS=tenant=globex"});
    none.account = [] { return std::string(); };
    a = session_.submit(none, kNow);
    EXPECT_FALSE(a.refused());
    EXPECT_FALSE(a.spank_env.has_value());
}
