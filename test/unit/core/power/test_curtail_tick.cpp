// The curtailment loop's pass (curtail_tick.hpp), driven with a fake
// actuator: a cap that fails is marked and re-planned in the same pass
// (suspension covers the job), the mark lasts kCapRetrySec, the restore
// gives the power back when the event ends, monitor reports each action
// once and acts on nothing, and off lifts every budget to restore what is
// still curtailed. Eight-rack NVL72 fixture, hand-made signals, as
// test_curtail.cpp.
#include <gtest/gtest.h>

#include "test/unit/event_fixture.hpp"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/job/annotation.hpp"
#include "core/model/config.hpp"
#include "core/power/curtail.hpp"
#include "core/power/curtail_tick.hpp"

using namespace m2g;

namespace {

constexpr int64_t kNow = 1795982400;  // 2026-11-29T20:00:00Z

// Records every call; caps fail for the jobs in `no_caps` (their node
// agent is down).
class FakeActuator : public CurtailActuator {
  public:
    ActResult cap(const CurtailJob& j, double w) override
    {
        calls.push_back("cap " + std::to_string(j.id) + " " + std::to_string(static_cast<int>(w)));
        if (no_caps.count(j.id))
            return ActResult::failed("node agent of " + std::to_string(j.id) + " unreachable");
        return ActResult::done();
    }
    ActResult uncap(const CurtailJob& j, double w) override
    {
        calls.push_back("uncap " + std::to_string(j.id) + " " + std::to_string(static_cast<int>(w)));
        return ActResult::done();
    }
    ActResult suspend(const CurtailJob& j) override { return call("suspend", j); }
    ActResult resume(const CurtailJob& j) override { return call("resume", j); }
    ActResult signal(const CurtailJob& j) override { return call("signal", j); }
    ActResult requeue(const CurtailJob& j) override { return call("requeue", j); }

    ActResult call(const std::string& what, const CurtailJob& j)
    {
        calls.push_back(what + " " + std::to_string(j.id));
        return ActResult::done();
    }

    std::set<uint32_t> no_caps;
    std::vector<std::string> calls;
};

class CurtailTickTest : public testing::Test {
  protected:
    CurtailTickTest() : m(load_model(M2G_FIXTURES "/nvl72-8rack.conf"))
    {
        m.admission.curtail_mode = CurtailMode::Enforce;
        s.generated_at = kNow;
        s.source = "test";
        s.racks.resize(m.domains.size());
        s.rows.resize(m.fault_domains.size());
        s.thermal.resize(m.nodes.size());
        s.site.budget_kw = 60;
    }

    SignalsView view() const
    {
        SignalsView v;
        v.snap = std::make_shared<const Signals>(s);
        v.state = FeedState::Fresh;
        v.age_s = 0;
        return v;
    }

    CurtailJob job(uint32_t id, WorkloadClass c, const std::string& rack, int n, double w) const
    {
        CurtailJob j;
        j.id = id;
        j.intent.workload_class = c;
        const auto& nodes = m.domains[m.find_domain(rack)].nodes;
        for (int i = 0; i < n; ++i)
            j.nodes.push_back(nodes[i]);
        j.gpus_per_node = 4;
        j.w_gpu = w;
        j.start_time = kNow - 3600 + id;
        return j;
    }

    // Two 72-GPU training jobs (400 W) and one 36-GPU inference job (101 W).
    std::vector<CurtailJob> mix() const
    {
        return {job(1, WorkloadClass::Training, "nvl01", 18, 400), job(2, WorkloadClass::Training, "nvl02", 18, 400),
                job(3, WorkloadClass::Inference, "nvl03", 9, 101)};
    }

    double draw_of(const std::vector<CurtailJob>& jobs) const
    {
        double kw = 0;
        for (const CurtailJob& j : jobs)
            kw += j.nodes.size() * j.gpus_per_node * curtail_job_w_gpu(m.admission, j) / 1000.0;
        return kw;
    }

    // The feed at `t`, drawing what `jobs` draw (the BMS caught up).
    void feed_at(const std::vector<CurtailJob>& jobs, int64_t t)
    {
        s.generated_at = t;
        s.site.draw_kw = draw_of(jobs);
    }

    static const CurtailOutcome* find(const CurtailTickResult& r, uint32_t job, CurtailStep step)
    {
        for (const CurtailOutcome& o : r.outcomes)
            if (o.action.job == job && o.action.step == step)
                return &o;
        return nullptr;
    }

    Model m;
    Signals s;
    CurtailState st;
    CurtailTick tick;
    FakeActuator act;
};

}  // namespace

TEST_F(CurtailTickTest, EnforceCapsThroughTheActuatorAndAnnotates)
{
    auto jobs = mix();
    feed_at(jobs, kNow);
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 3600, 30));  // 42 kW, target 39.9
    const CurtailTickResult r = tick.run(m, view(), jobs, st, act, kNow);
    EXPECT_EQ(r.plans, 1);
    ASSERT_EQ(r.outcomes.size(), 2u);
    for (const CurtailOutcome& o : r.outcomes) {
        EXPECT_TRUE(o.done);
        EXPECT_EQ(o.mode, "enforce");
        EXPECT_EQ(o.result(), "ok");
        ASSERT_TRUE(o.annotation);
        EXPECT_EQ(format(*o.annotation), "cap w_gpu=251 cause=dr-1 scope=site at=2026-11-29T20:00:00Z");
        EXPECT_GT(o.order, 0u);
    }
    EXPECT_EQ(jobs[0].cap_w, 251);
    EXPECT_EQ(jobs[1].cap_w, 251);
    EXPECT_EQ(jobs[0].curtailed_for, "site");
    EXPECT_EQ(act.calls.size(), 2u);
}

TEST_F(CurtailTickTest, AFailedCapIsMarkedAndReplannedInTheSamePass)
{
    auto jobs = mix();
    feed_at(jobs, kNow);
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 3600, 30));
    act.no_caps = {1};
    const CurtailTickResult r = tick.run(m, view(), jobs, st, act, kNow);
    EXPECT_EQ(r.plans, 2) << "the failed cap re-plans at once";
    const CurtailOutcome* failed = find(r, 1, CurtailStep::Cap);
    ASSERT_TRUE(failed);
    EXPECT_FALSE(failed->done);
    EXPECT_EQ(failed->result(), "failed: node agent of 1 unreachable");
    EXPECT_FALSE(failed->annotation) << "nothing happened to the job: its AdminComment stays";
    const CurtailOutcome* suspended = find(r, 1, CurtailStep::Suspend);
    ASSERT_TRUE(suspended) << "the job that cannot be capped is suspended in the same pass";
    EXPECT_TRUE(suspended->done);
    EXPECT_TRUE(jobs[0].cap_unavailable);
    EXPECT_TRUE(jobs[0].suspended);
    EXPECT_EQ(jobs[0].cap_w, 0);
    EXPECT_GT(jobs[1].cap_w, 0) << "job 2's cap (planned again) holds";
    EXPECT_EQ(find(r, 2, CurtailStep::Suspend), nullptr);
    EXPECT_EQ(act.calls.front(), "cap 1 251") << act.calls.front();
    EXPECT_LE(r.plan.scopes[0].after_kw, r.plan.scopes[0].target_kw);

    // The next pass (the feed caught up): job 1 is still marked, nothing more to do.
    feed_at(jobs, kNow + 5);
    const CurtailTickResult r2 = tick.run(m, view(), jobs, st, act, kNow + 5);
    EXPECT_TRUE(jobs[0].cap_unavailable);
    EXPECT_TRUE(r2.outcomes.empty());
    EXPECT_EQ(r2.plans, 1);
}

TEST_F(CurtailTickTest, TheMarkLastsCapRetrySec)
{
    auto jobs = mix();
    feed_at(jobs, kNow);
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 3600, 30));
    act.no_caps = {1};
    tick.run(m, view(), jobs, st, act, kNow);
    feed_at(jobs, kNow + CurtailTick::kCapRetrySec - 1);
    tick.run(m, view(), jobs, st, act, kNow + CurtailTick::kCapRetrySec - 1);
    EXPECT_TRUE(jobs[0].cap_unavailable);
    feed_at(jobs, kNow + CurtailTick::kCapRetrySec);
    tick.run(m, view(), jobs, st, act, kNow + CurtailTick::kCapRetrySec);
    EXPECT_FALSE(jobs[0].cap_unavailable) << "caps are tried again after kCapRetrySec";
}

TEST_F(CurtailTickTest, RestoreWhenNoScopeIsOver)
{
    auto jobs = mix();
    feed_at(jobs, kNow);
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 600, 30));
    act.no_caps = {1};
    tick.run(m, view(), jobs, st, act, kNow);
    ASSERT_TRUE(jobs[0].suspended);
    ASSERT_GT(jobs[1].cap_w, 0);
    // The event is over and the budget has room: everything comes back,
    // newest curtailment first, over as many passes as the ramp needs.
    s.events.clear();
    s.site.budget_kw = 100;
    act.calls.clear();
    std::vector<CurtailOutcome> all;
    for (int64_t t = kNow + 700; t < kNow + 800 && (jobs[0].suspended || jobs[1].cap_w > 0); t += 5) {
        feed_at(jobs, t);
        const CurtailTickResult r = tick.run(m, view(), jobs, st, act, t);
        EXPECT_FALSE(r.plan.over);
        all.insert(all.end(), r.outcomes.begin(), r.outcomes.end());
    }
    EXPECT_FALSE(jobs[0].suspended);
    EXPECT_EQ(jobs[1].cap_w, 0);
    EXPECT_TRUE(jobs[0].curtailed_for.empty());
    EXPECT_TRUE(jobs[1].curtailed_for.empty());
    ASSERT_FALSE(all.empty());
    for (const CurtailOutcome& o : all) {
        EXPECT_TRUE(o.action.step == CurtailStep::Resume || o.action.step == CurtailStep::Uncap);
        EXPECT_TRUE(o.done);
        ASSERT_TRUE(o.annotation);
        EXPECT_EQ(o.annotation->cause, "restore");
    }
    EXPECT_EQ(act.calls.front(), "resume 1") << "job 1's suspension was the newest curtailment";
}

TEST_F(CurtailTickTest, MonitorReportsEachActionOnceAndActsOnNothing)
{
    m.admission.curtail_mode = CurtailMode::Monitor;
    auto jobs = mix();
    feed_at(jobs, kNow);
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 3600, 30));
    const CurtailTickResult r = tick.run(m, view(), jobs, st, act, kNow);
    EXPECT_TRUE(act.calls.empty());
    ASSERT_EQ(r.outcomes.size(), 2u);
    EXPECT_EQ(r.outcomes[0].mode, "monitor");
    EXPECT_FALSE(r.outcomes[0].done);
    EXPECT_EQ(r.outcomes[0].result(), "ok");
    ASSERT_TRUE(r.outcomes[0].annotation);
    EXPECT_EQ(format(*r.outcomes[0].annotation),
              "monitor would cap w_gpu=251 cause=dr-1 scope=site at=2026-11-29T20:00:00Z");
    EXPECT_EQ(jobs[0].cap_w, 0) << "nothing applied";
    EXPECT_TRUE(jobs[0].curtailed_for.empty());

    // The same plan again: nothing new to report.
    feed_at(jobs, kNow + 5);
    const CurtailTickResult r2 = tick.run(m, view(), jobs, st, act, kNow + 5);
    EXPECT_EQ(r2.plan.actions.size(), 2u);
    EXPECT_TRUE(r2.outcomes.empty());
    // A deeper cut changes the plan: reported again.
    s.events[0] = test::site_event("dr-1", kNow - 5, kNow + 3600, 40);
    const CurtailTickResult r3 = tick.run(m, view(), jobs, st, act, kNow + 10);
    EXPECT_FALSE(r3.outcomes.empty());
    EXPECT_TRUE(act.calls.empty());
    EXPECT_EQ(st.last_restore, 0) << "monitor never moves the restore ramp's clock";
}

TEST_F(CurtailTickTest, OffRestoresWhatIsStillCurtailed)
{
    auto jobs = mix();
    feed_at(jobs, kNow);
    s.events.push_back(test::site_event("dr-1", kNow - 5, kNow + 3600, 30));
    tick.run(m, view(), jobs, st, act, kNow);
    ASSERT_GT(jobs[0].cap_w, 0);
    // Switched off during the event: the event's budget no longer holds.
    m.admission.curtail_mode = CurtailMode::Off;
    act.calls.clear();
    feed_at(jobs, kNow + 30);
    const CurtailTickResult r = tick.run(m, view(), jobs, st, act, kNow + 30);
    EXPECT_TRUE(r.planned);
    ASSERT_EQ(r.outcomes.size(), 2u);
    for (const CurtailOutcome& o : r.outcomes) {
        EXPECT_EQ(o.mode, "off");
        EXPECT_EQ(o.action.step, CurtailStep::Uncap);
        EXPECT_TRUE(o.done);
    }
    EXPECT_EQ(jobs[0].cap_w, 0);
    EXPECT_EQ(jobs[1].cap_w, 0);
    // Nothing curtailed any more: off plans nothing.
    const CurtailTickResult r2 = tick.run(m, view(), jobs, st, act, kNow + 35);
    EXPECT_FALSE(r2.planned);
    EXPECT_TRUE(r2.outcomes.empty());
    EXPECT_EQ(r2.plans, 0);
}
