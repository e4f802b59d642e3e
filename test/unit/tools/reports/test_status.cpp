// Status, explain and per-job energy (`m2g status`, `m2g explain`, `m2g
// job`, m2g-exporter) on the eight-rack NVL72 fixture, with Slurm's state
// (ClusterView) and the signals built by hand.
//
//   row1: nvl01..nvl04 = r01n[01-18]..r04n[01-18]   PowerBudgetKW=560
//   row2: nvl05..nvl08 = r05n[01-18]..r08n[01-18]   PowerBudgetKW=560
//   racks: PowerBudgetKW=132 each; site: SitePowerBudgetKW=1200; 4 GPUs/node
//   leaf01: nvl01..nvl04, leaf02: nvl05..nvl08
#include <gtest/gtest.h>

#include "test/unit/event_fixture.hpp"

#include <memory>
#include <string>

#include "core/job/annotation.hpp"
#include "core/model/config.hpp"
#include "tools/reports/energy.hpp"
#include "tools/reports/explain.hpp"
#include "tools/reports/status.hpp"

using namespace m2g;

namespace {

constexpr int64_t kNow = 1795982400;  // 2026-11-29T20:00:00Z
constexpr int64_t kMin = 60, kHour = 3600;

class StatusTest : public testing::Test {
  protected:
    StatusTest() : m(load_model(M2G_FIXTURES "/nvl72-8rack.conf"))
    {
        s.generated_at = kNow;
        s.source = "test";
        s.racks.resize(m.domains.size());
        s.rows.resize(m.fault_domains.size());
        s.thermal.resize(m.nodes.size());
        c.taken_at = kNow;
        c.nodes.resize(m.nodes.size());
        for (size_t n = 0; n < m.nodes.size(); ++n) {
            c.nodes[n].known = true;
            c.nodes[n].gpus_total = 4;
        }
    }

    SignalsView view() const
    {
        SignalsView v;
        v.snap = std::make_shared<const Signals>(s);
        v.state = FeedState::Fresh;
        v.age_s = 0;
        v.detail = "fresh (0 s old)";
        return v;
    }

    int node(const std::string& name) const { return m.find_node(name); }
    NodeView& nv(const std::string& name) { return c.nodes[node(name)]; }

    // Allocate `gpus` GPUs on nodes first..last of `rack` (1-based).
    void alloc(int rack, int first, int last, int gpus)
    {
        for (int i = first; i <= last; ++i)
            c.nodes[m.domains[rack - 1].nodes[i - 1]].gpus_alloc = gpus;
    }

    void site_event(const std::string& id, int64_t start, int64_t end, double pct)
    {
        s.events.push_back(m2g::test::site_event(id, start, end, pct));
    }

    void rack_event_kw(const std::string& id, const std::string& rack, int64_t start, int64_t end, double kw)
    {
        s.events.push_back(m2g::test::rack_event(m, id, rack, start, end, 0, kw));
    }

    void window(const std::string& id, int64_t start, int64_t end, const std::string& rack)
    {
        MaintenanceWindow w;
        w.id = id;
        w.start = start;
        w.end = end;
        w.nodes = m.domains[m.find_domain(rack)].nodes;
        w.reason = "firmware";
        s.maintenance.push_back(w);
    }

    JobView& job(uint32_t id, JobState state, WorkloadClass cls, int gpus, const std::string& comment,
                 const std::string& reason = "")
    {
        JobView j;
        j.id = id;
        j.name = "job" + std::to_string(id);
        j.state = state;
        j.intent.workload_class = cls;
        j.gpus = gpus;
        j.nodes = (gpus + 3) / 4;
        j.admin_comment = comment;
        j.slurm_reason = reason;
        j.submit_time = kNow - 10 * kMin;
        j.partition = "gpu";
        j.account = "acme";
        c.jobs.push_back(j);
        return c.jobs.back();
    }

    // The busy cluster most tests use:
    //   nvl01 17 of 18 nodes allocated        nvl05 NVLink fault
    //   nvl02 idle                             nvl06 idle, maintenance now
    //   nvl03 9 nodes half allocated           nvl07 1 GPU allocated
    //   nvl04 one down, one draining (busy),   nvl08 idle, r08n05 hot
    //         one degraded in the feed
    // Power: site 700 kW drawn, event dr-1 -25% site; row1 300 kW drawn;
    // nvl01 130 kW drawn; nvl03 60 kW drawn with rack event dr-rack -32 kW.
    void busy_cluster()
    {
        alloc(1, 1, 17, 4);
        alloc(3, 1, 9, 2);
        nv("r04n01").down = true;
        nv("r04n02").drained = true;
        nv("r04n02").gpus_alloc = 4;
        s.health.node_degraded.assign(m.nodes.size(), 0);
        s.health.node_degraded[node("r04n03")] = 1;
        s.health.domain_nvlink_fault.assign(m.domains.size(), 0);
        s.health.domain_nvlink_fault[m.find_domain("nvl05")] = 1;
        window("mw-1", kNow - kHour, kNow + kHour, "nvl06");
        nv("r07n01").gpus_alloc = 1;
        s.thermal[node("r08n05")] = {true, 88, ThermalState::Hot};
        s.thermal[node("r08n06")] = {true, 70, ThermalState::Warm};
        s.thermal[node("r01n01")] = {true, 65.5, ThermalState::Ok};
        s.site.draw_kw = 700;
        site_event("dr-1", kNow - kHour, kNow + kHour, 25);
        s.rows[0].draw_kw = 300;
        s.racks[0].draw_kw = 130;
        s.racks[2].draw_kw = 60;
        rack_event_kw("dr-rack", "nvl03", kNow - kHour, kNow + 2 * kHour, 32);
    }

    Model m;
    Signals s;
    ClusterView c;
};

const std::string kPlaced =
    "m2g:[domains=nvl02 leaves=leaf01 policy=prefer:nvlink score=17 reason=nvl02, best fit (17 of 18 nodes left free "
    "there) signals=rack nvl01 over budget: 0.0 kW free, job needs 1.7 kW/node; admission=admit class=training "
    "w_gpu=413]";
const std::string kStrict =
    "m2g:[waiting policy=strict:nvlink reason=waiting for an NVLink domain with 18 free healthy nodes (best now: nvl01 "
    "with 17); admission=admit class=none w_gpu=404]";
const std::string kPacing =
    "m2g:[waiting policy=prefer:nvlink reason=pacing: 4 GPUs already started this interval; admission=admit "
    "class=inference w_gpu=101]";
const std::string kSitePower =
    "m2g:[waiting policy=prefer:nvlink reason=site power: 1.0 kW free of 1200.0 kW (event dr-1 -25%); admission=admit "
    "class=inference w_gpu=101]";
const std::string kDeferred =
    "m2g:[admission=defer class=training w_gpu=413 until=2026-11-29T22:42:52Z cause=dr-test reason=defer: DR event "
    "dr-test (site -50%) until 2026-11-29T22:42:52Z, class=training consent=default, 1.7 kW]";
const std::string kReleased =
    "m2g:[admission=released at 2026-11-29T21:45:00Z: admit class=training w_gpu=413 user_begin=1795986000]";

}  // namespace

// ---- what the reports read: read_annotation()'s typed parts --------------------------

namespace {
const PlacementAnnotation& placement_of(const Annotation& a)
{
    static const PlacementAnnotation none;
    return a.placement ? *a.placement : none;
}
const AdmissionAnnotation& admission_of(const Annotation& a)
{
    static const AdmissionAnnotation none;
    return a.admission ? *a.admission : none;
}
}  // namespace

TEST(ReportsReadAnnotation, Placed)
{
    const std::string text = "owner note " + kPlaced + " trailing";
    EXPECT_TRUE(has_annotation(text));
    const Annotation r = read_annotation(text);
    const PlacementAnnotation& p = placement_of(r);
    EXPECT_EQ(p.state, PlacementState::Placed);
    EXPECT_TRUE(p.placed());
    EXPECT_EQ(p.domains, std::vector<std::string>{"nvl02"});
    EXPECT_EQ(p.leaves, std::vector<std::string>{"leaf01"});
    EXPECT_EQ(p.policy, "prefer:nvlink");
    ASSERT_TRUE(p.score);
    EXPECT_EQ(format_score(*p.score), "17");
    EXPECT_EQ(p.reason, "nvl02, best fit (17 of 18 nodes left free there)");
    EXPECT_EQ(p.signals, "rack nvl01 over budget: 0.0 kW free, job needs 1.7 kW/node");
    const AdmissionAnnotation& d = admission_of(r);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.workload_class, WorkloadClass::Training);
    EXPECT_EQ(d.w_gpu, 413);
    EXPECT_EQ(d.until, 0);
    EXPECT_EQ(cause_of(d.cause).kind, CauseKind::None);
    EXPECT_EQ(d.reason, "");
    EXPECT_FALSE(d.monitor);
    EXPECT_EQ(d.released_at, 0);
    EXPECT_FALSE(d.holds_at(kNow));
}

TEST(ReportsReadAnnotation, StrictWaiting)
{
    const Annotation r = read_annotation(kStrict);
    const PlacementAnnotation& p = placement_of(r);
    EXPECT_EQ(p.state, PlacementState::Waiting);
    EXPECT_FALSE(p.placed());
    EXPECT_EQ(p.policy, "strict:nvlink");
    EXPECT_TRUE(p.domains.empty());
    EXPECT_EQ(p.reason, "waiting for an NVLink domain with 18 free healthy nodes (best now: nvl01 with 17)");
    EXPECT_EQ(p.wait, WaitCause::NvlinkDomain) << "derived from the reason an older m2g wrote";
    EXPECT_EQ(p.signals, "");
    EXPECT_EQ(admission_of(r).verdict, Verdict::Admit);
    EXPECT_EQ(admission_of(r).workload_class, WorkloadClass::Unset) << "class=none";
    EXPECT_EQ(admission_of(r).w_gpu, 404);
}

TEST(ReportsReadAnnotation, PacingAndSitePowerWaiting)
{
    const Annotation p = read_annotation(kPacing);
    EXPECT_EQ(placement_of(p).state, PlacementState::Waiting);
    EXPECT_EQ(placement_of(p).wait, WaitCause::Pacing);
    EXPECT_EQ(placement_of(p).reason, "pacing: 4 GPUs already started this interval");
    EXPECT_EQ(admission_of(p).workload_class, WorkloadClass::Inference);
    EXPECT_EQ(admission_of(p).w_gpu, 101);
    const Annotation s = read_annotation(kSitePower);
    EXPECT_EQ(placement_of(s).wait, WaitCause::SitePower);
    EXPECT_EQ(placement_of(s).reason, "site power: 1.0 kW free of 1200.0 kW (event dr-1 -25%)");
}

TEST(ReportsReadAnnotation, DeferredAndEveryCause)
{
    const Annotation r = read_annotation(kDeferred);
    EXPECT_TRUE(has_annotation(kDeferred));
    EXPECT_FALSE(r.placement);
    const AdmissionAnnotation& a = admission_of(r);
    EXPECT_EQ(a.verdict, Verdict::Defer);
    EXPECT_EQ(a.workload_class, WorkloadClass::Training);
    EXPECT_EQ(a.w_gpu, 413);
    EXPECT_EQ(a.until, kNow + 2 * kHour + 42 * kMin + 52);
    EXPECT_TRUE(a.holds_at(kNow));
    EXPECT_FALSE(a.holds_at(a.until)) << "eligible from until=";
    const AdmissionCause c = cause_of(a.cause);
    EXPECT_EQ(c.kind, CauseKind::Event);
    EXPECT_EQ(c.id, "dr-test");
    // class= inside the reason is part of the reason, not a field.
    EXPECT_EQ(a.reason,
              "defer: DR event dr-test (site -50%) until 2026-11-29T22:42:52Z, class=training consent=default, 1.7 kW");
    // avoid= and user_begin= after the reason, monitor mode.
    const AdmissionAnnotation b = admission_of(read_annotation(
        "m2g:[admission=monitor would defer class=batch w_gpu=372 until=2026-11-29T21:00:00Z cause=maintenance:mw-1 "
        "reason=defer: maintenance mw-1 until 2026-11-29T21:00:00Z avoid=18 nodes (maintenance mw-1) "
        "user_begin=1795982000]"));
    EXPECT_TRUE(b.monitor);
    EXPECT_FALSE(b.holds_at(kNow)) << "monitor holds nothing";
    EXPECT_EQ(b.verdict, Verdict::Defer);
    EXPECT_EQ(cause_of(b.cause).kind, CauseKind::Maintenance);
    EXPECT_EQ(cause_of(b.cause).id, "mw-1");
    EXPECT_EQ(b.reason, "defer: maintenance mw-1 until 2026-11-29T21:00:00Z");
    EXPECT_EQ(b.avoid_nodes, 18);
    EXPECT_EQ(b.avoid_for, "maintenance mw-1");
    EXPECT_EQ(b.user_begin, 1795982000);
    EXPECT_EQ(cause_of("power:site").kind, CauseKind::SitePower);
    EXPECT_EQ(cause_of("failsafe").kind, CauseKind::Failsafe);
    EXPECT_EQ(cause_of("power:row-a").kind, CauseKind::Other) << "a word this m2g does not write";
    EXPECT_EQ(cause_of("").kind, CauseKind::None);
    EXPECT_EQ(admission_of(read_annotation("m2g:[admission=pace class=inference w_gpu=101 "
                                           "until=2026-11-29T20:01:00Z cause=failsafe reason=x]"))
                  .verdict,
              Verdict::Pace);
}

TEST(ReportsReadAnnotation, Released)
{
    const AdmissionAnnotation a = admission_of(read_annotation(kReleased));
    EXPECT_EQ(a.released_at, kNow + kHour + 45 * kMin);
    EXPECT_EQ(a.verdict, Verdict::Admit);
    EXPECT_EQ(a.workload_class, WorkloadClass::Training);
    EXPECT_EQ(a.w_gpu, 413);
    EXPECT_EQ(a.user_begin, 1795986000);
    EXPECT_FALSE(a.holds_at(kNow));
}

TEST(ReportsReadAnnotation, GarbageNeverThrowsAndLeavesFieldsEmpty)
{
    for (const char* text :
         {"", "no segment here", "m2g:[", "m2g:[]", "m2g:[;;;]", "m2g:[admission=]", "m2g:[waiting]",
          "m2g:[= == === reason=]", "m2g:[policy=", "m2g:[admission=released at : admit",
          "m2g:[admission=released at nonsense: defer until=soon w_gpu=abc class=gaming cause= reason=]",
          "m2g:[admission=defer w_gpu=-5 until=2026-13-45T99:00:00Z user_begin=x]", "\xff\xfe m2g:[\x01\x02=\x03]"}) {
        Annotation r;
        ASSERT_NO_THROW(r = read_annotation(text)) << text;
        const AdmissionAnnotation& a = admission_of(r);
        EXPECT_EQ(a.workload_class.value_or(WorkloadClass::Unset), WorkloadClass::Unset) << text;
        EXPECT_EQ(a.w_gpu, 0) << text;
        EXPECT_EQ(a.until, 0) << text;
        EXPECT_EQ(a.user_begin, 0) << text;
        EXPECT_FALSE(a.holds_at(kNow)) << text;
        EXPECT_TRUE(placement_of(r).domains.empty()) << text;
    }
    EXPECT_FALSE(has_annotation("no segment here"));
    EXPECT_EQ(placement_of(read_annotation("m2g:[waiting]")).state, PlacementState::Waiting);
    EXPECT_FALSE(admission_of(read_annotation("m2g:[admission=]")).verdict);
    const AdmissionAnnotation g =
        admission_of(read_annotation("m2g:[admission=released at nonsense: defer until=soon class=gaming]"));
    EXPECT_EQ(g.released_at, 0);
    EXPECT_EQ(g.verdict, Verdict::Defer);
    EXPECT_EQ(g.unknown_class, "gaming");
    EXPECT_FALSE(g.holds_at(kNow));  // no usable until=
    // Free text after policy=any is the gate's note.
    const PlacementAnnotation any = placement_of(read_annotation("m2g:[policy=any maintenance mw-1: 18 nodes avoided]"));
    EXPECT_EQ(any.state, PlacementState::Stock);
    EXPECT_TRUE(any.placed());
    EXPECT_EQ(any.policy, "any");
    EXPECT_EQ(any.signals, "maintenance mw-1: 18 nodes avoided");
}

// ---- compute_status / format_status ----------------------------------------------------

TEST_F(StatusTest, GpusPerDomainHealthAndFragmentation)
{
    busy_cluster();
    const Status st = compute_status(m, c, view(), kNow);
    EXPECT_EQ(st.at, kNow);
    EXPECT_EQ(st.gpus_total, 576);
    EXPECT_EQ(st.gpus_used, 68 + 18 + 4 + 1);
    EXPECT_EQ(st.gpus_degraded, 8 + 72);  // r04n01 down, r04n03 degraded (r04n02 drains, busy), nvl05 fault
    EXPECT_EQ(st.gpus_free, 576 - 91 - 80);
    ASSERT_EQ(st.domains.size(), 8u);
    struct Want {
        int used, free, degraded, free_nodes;
    };
    const Want want[8] = {{68, 4, 0, 1},  {0, 72, 0, 18}, {18, 54, 0, 9},  {4, 60, 8, 15},
                          {0, 0, 72, 0},  {0, 72, 0, 18}, {1, 71, 0, 17},  {0, 72, 0, 18}};
    for (int d = 0; d < 8; ++d) {
        const DomainStatus& ds = st.domains[d];
        EXPECT_EQ(ds.domain, d);
        EXPECT_EQ(ds.gpus_total, 72) << d;
        EXPECT_EQ(ds.gpus_used, want[d].used) << d;
        EXPECT_EQ(ds.gpus_free, want[d].free) << d;
        EXPECT_EQ(ds.gpus_degraded, want[d].degraded) << d;
        EXPECT_EQ(ds.free_nodes, want[d].free_nodes) << d;
        EXPECT_EQ(ds.gpus_used + ds.gpus_free + ds.gpus_degraded, ds.gpus_total) << d;
        EXPECT_EQ(ds.nvlink_fault, d == 4) << d;
        EXPECT_EQ(ds.maintenance_now, d == 5) << d;
    }
    // Free GPUs in domains that also have used GPUs: nvl01 4 + nvl03 54 +
    // nvl04 60 + nvl07 71 = 189 of 405.
    EXPECT_DOUBLE_EQ(st.fragmentation, 189.0 / 405.0);
    EXPECT_EQ(st.whole_free_domains, 3);  // nvl02, nvl06, nvl08
    // Thermal: the hottest known node per domain.
    EXPECT_EQ(st.domains[7].temp_c, 88);
    EXPECT_EQ(st.domains[7].thermal, ThermalState::Hot);
    EXPECT_EQ(st.domains[0].temp_c, 65.5);
    EXPECT_EQ(st.domains[0].thermal, ThermalState::Ok);
    EXPECT_EQ(st.domains[1].temp_c, 0);
}

TEST_F(StatusTest, UnknownNodesCountAsDownAndNoSignalsMeansConfBudgets)
{
    c.nodes.resize(18);  // Slurm reported only nvl01's nodes
    alloc(1, 1, 9, 4);
    const Status st = compute_status(m, c, SignalsView{}, kNow);
    EXPECT_EQ(st.gpus_used, 36);
    EXPECT_EQ(st.gpus_free, 36);
    EXPECT_EQ(st.gpus_degraded, 7 * 72);
    EXPECT_EQ(st.whole_free_domains, 0);
    EXPECT_DOUBLE_EQ(st.fragmentation, 1.0);
    EXPECT_EQ(st.domains[0].budget_kw, 132);
    EXPECT_EQ(st.domains[0].draw_kw, -1);
    EXPECT_FALSE(st.domains[0].power_known());
    ASSERT_EQ(st.power.size(), 1u + 2 + 8);  // site, row1, row2 (feedA/feedB are not rows), racks
    EXPECT_EQ(st.power[0].scope, "site");
    EXPECT_EQ(st.power[0].budget_kw, 1200);
    EXPECT_EQ(st.power[0].effective_kw, 1200);
    EXPECT_EQ(st.power[0].draw_kw, -1);
    EXPECT_TRUE(st.active_events.empty());
    EXPECT_TRUE(st.queues.empty());
}

TEST_F(StatusTest, PowerWithEventsBudgetsAndDraw)
{
    busy_cluster();
    s.site.budget_kw = 1000;  // the feed's budget overrides m2g.conf's 1200
    const Status st = compute_status(m, c, view(), kNow);
    ASSERT_EQ(st.power.size(), 11u);
    const PowerStatus& site = st.power[0];
    EXPECT_EQ(site.scope, "site");
    EXPECT_EQ(site.budget_kw, 1000);
    EXPECT_EQ(site.effective_kw, 750);  // -25%
    EXPECT_EQ(site.draw_kw, 700);
    EXPECT_EQ(site.headroom_kw, 50);
    EXPECT_EQ(st.power[1].scope, "row");
    EXPECT_EQ(st.power[1].name, "row1");
    EXPECT_EQ(st.power[1].headroom_kw, 260);
    EXPECT_EQ(st.power[2].name, "row2");
    EXPECT_EQ(st.power[2].draw_kw, -1);
    EXPECT_EQ(st.power[2].headroom_kw, -1);
    EXPECT_EQ(st.power[5].name, "nvl03");
    EXPECT_EQ(st.power[5].budget_kw, 132);
    EXPECT_EQ(st.power[5].effective_kw, 100);  // -32 kW rack event
    // Per domain: effective budget, draw, headroom (nothing else subtracted).
    EXPECT_EQ(st.domains[0].headroom_kw, 2);
    EXPECT_EQ(st.domains[2].budget_kw, 100);
    EXPECT_EQ(st.domains[2].draw_kw, 60);
    EXPECT_EQ(st.domains[2].headroom_kw, 40);
    // Over budget: negative headroom.
    s.racks[0].draw_kw = 140;
    EXPECT_EQ(compute_status(m, c, view(), kNow).domains[0].headroom_kw, -8);
    ASSERT_EQ(st.active_events.size(), 2u);
    EXPECT_EQ(st.active_events[0]->id, "dr-1");
    EXPECT_EQ(st.active_events[1]->id, "dr-rack");
    // The events end: budgets are whole again.
    const Status later = compute_status(m, c, view(), kNow + 3 * kHour);
    EXPECT_TRUE(later.active_events.empty());
    EXPECT_EQ(later.power[0].effective_kw, 1000);
    EXPECT_EQ(later.domains[2].budget_kw, 132);
    EXPECT_FALSE(later.domains[5].maintenance_now);
}

class QueueTest : public StatusTest {
  protected:
    void queue()
    {
        job(101, JobState::Running, WorkloadClass::Training, 68, kPlaced);
        job(102, JobState::Completing, WorkloadClass::Inference, 1, "");
        job(103, JobState::Pending, WorkloadClass::Training, 16,
            "m2g:[admission=defer class=training w_gpu=413 until=2026-11-29T21:00:00Z cause=dr-1 reason=defer: DR "
            "event dr-1]",
            "BeginTime");
        job(104, JobState::Pending, WorkloadClass::Unset, 72, kStrict, "Resources");
        job(105, JobState::Pending, WorkloadClass::Inference, 4, kPacing, "Resources");
        job(106, JobState::Pending, WorkloadClass::Batch, 8, "m2g:[admission=admit class=batch w_gpu=372]", "Priority");
        job(107, JobState::Pending, WorkloadClass::Batch, 4, "", "BeginTime").begin_time = kNow + kHour;
        job(108, JobState::Pending, WorkloadClass::Training, 8,
            "m2g:[admission=defer class=training w_gpu=413 until=2026-11-29T21:00:00Z cause=maintenance:mw-1 "
            "reason=defer: maintenance mw-1]",
            "BeginTime");
        job(109, JobState::Pending, WorkloadClass::Finetune, 8,
            "m2g:[admission=monitor would defer class=finetune w_gpu=404 until=2026-11-29T21:00:00Z cause=dr-1 "
            "reason=defer: DR event dr-1]",
            "Resources");
        job(110, JobState::Done, WorkloadClass::Training, 8, kPlaced);
        // Deferred once, the time has come: Slurm's reason counts.
        job(111, JobState::Pending, WorkloadClass::Agentic, 4,
            "m2g:[admission=defer class=agentic w_gpu=101 until=2026-11-29T19:59:50Z cause=dr-0 reason=x]", "Priority");
        job(112, JobState::Pending, WorkloadClass::Unset, 4, "", "ReqNodeNotAvail, UnavailableNodes:r04n01");
        // The class from the annotation when the intent has none.
        job(113, JobState::Pending, WorkloadClass::Unset, 4, kSitePower, "Resources");
        job(114, JobState::Pending, WorkloadClass::Unset, 4,
            "m2g:[admission=pace class=none w_gpu=404 until=2026-11-29T20:02:00Z cause=dr-1 reason=pace]", "BeginTime");
        job(115, JobState::Pending, WorkloadClass::Unset, 4,
            "m2g:[admission=defer class=none w_gpu=404 until=2026-11-29T20:05:00Z cause=power:site reason=x]",
            "BeginTime");
        job(116, JobState::Pending, WorkloadClass::Unset, 4,
            "m2g:[admission=defer class=none w_gpu=404 until=2026-11-29T20:05:00Z cause=failsafe reason=x]",
            "BeginTime");
        job(117, JobState::Pending, WorkloadClass::Unset, 4,
            "m2g:[waiting policy=prefer:nvlink reason=rack nvl01 over budget: 0.0 kW free, job needs 1.7 kW/node]",
            "Resources");
        job(118, JobState::Pending, WorkloadClass::Unset, 4, "", "");
    }
};

TEST_F(QueueTest, QueuesByClassAndPendingByReason)
{
    busy_cluster();
    queue();
    const Status st = compute_status(m, c, view(), kNow);
    ASSERT_EQ(st.queues.size(), 6u);
    auto q = [&](size_t i) { return st.queues[i]; };
    EXPECT_EQ(q(0).cls, WorkloadClass::Unset);  // 104, 112, 114..118
    EXPECT_EQ(q(0).pending, 7);
    EXPECT_EQ(q(0).deferred, 3);  // 114 paced, 115, 116
    EXPECT_EQ(q(0).gpus_pending, 72 + 6 * 4);
    EXPECT_EQ(q(1).cls, WorkloadClass::Training);
    EXPECT_EQ(q(1).pending, 2);
    EXPECT_EQ(q(1).deferred, 2);
    EXPECT_EQ(q(1).running, 1);
    EXPECT_EQ(q(1).gpus_pending, 24);
    EXPECT_EQ(q(1).gpus_running, 68);
    EXPECT_EQ(q(2).cls, WorkloadClass::Finetune);
    EXPECT_EQ(q(2).deferred, 0);  // monitor only
    EXPECT_EQ(q(3).cls, WorkloadClass::Inference);
    EXPECT_EQ(q(3).pending, 2);  // 105, 113 (class from the annotation)
    EXPECT_EQ(q(3).running, 1);  // 102 completing
    EXPECT_EQ(q(3).gpus_running, 1);
    EXPECT_EQ(q(4).cls, WorkloadClass::Batch);
    EXPECT_EQ(q(4).pending, 2);
    EXPECT_EQ(q(5).cls, WorkloadClass::Agentic);
    EXPECT_EQ(q(5).deferred, 0);
    EXPECT_EQ(st.deferred_jobs, 5);
    const std::map<std::string, int> want{
        {"BeginTime", 1},           {"None", 1},
        {"Priority", 2},            {"ReqNodeNotAvail", 1},
        {"Resources", 1},           {"deferred:event", 1},
        {"deferred:failsafe", 1},   {"deferred:maintenance", 1},
        {"deferred:site-power", 1}, {"paced", 1},
        {"waiting:nvlink-domain", 1}, {"waiting:pacing", 1},
        {"waiting:rack-power", 1},  {"waiting:site-power", 1}};
    EXPECT_EQ(st.pending_by_reason, want);
}

TEST(PendingReasonKey, WaitingKinds)
{
    JobView j;
    auto key = [&](const std::string& reason) {
        j.admin_comment = "m2g:[waiting policy=strict:nvlink reason=" + reason + "]";
        return pending_reason_key(j, read_annotation(j.admin_comment), kNow);
    };
    EXPECT_EQ(key("waiting for 2 NVLink domains with 36 free healthy nodes (best now: 3 domains)"),
              "waiting:nvlink-domain");
    EXPECT_EQ(key("waiting for a leaf switch with 20 free healthy nodes (best now: 2 leaf switches)"), "waiting:switch");
    EXPECT_EQ(key("waiting for 200 free healthy nodes under one switch (usable now: 144)"), "waiting:nodes");
    EXPECT_EQ(key("row row1 over budget: 2.0 kW free, job needs 6.6 kW"), "waiting:row-power");
    EXPECT_EQ(key("maintenance mw-1: 18 nodes avoided"), "waiting:maintenance");
    EXPECT_EQ(key("signals stale/missing, fail-safe defer holds deferrable work"), "waiting:failsafe");
    EXPECT_EQ(key("3 nodes down"), "waiting:nodes-down");
    EXPECT_EQ(key("something new"), "waiting:other");
    j.state = JobState::Running;
    EXPECT_EQ(pending_reason_key(j, read_annotation(j.admin_comment), kNow), "");
}

const char* const kGoldenStatus =
    "cluster nvl72x8 at 2026-11-29T20:00:00Z\n"
    "GPUs: 576 total, 91 used, 405 free, 80 degraded; fragmentation 0.47; 3 of 8 domains wholly free\n"
    "DOMAIN  GPUS  USED  FREE  DEGR FREE-NODES  DRAW-KW BUDGET-KW HEADROOM-KW TEMP-C  FLAGS\n"
    "nvl01     72    68     4     0          1    130.0     132.0         2.0   65.5\n"
    "nvl02     72     0    72     0         18        -     132.0           -      -\n"
    "nvl03     72    18    54     0          9     60.0     100.0        40.0      -\n"
    "nvl04     72     4    60     8         15        -     132.0           -      -\n"
    "nvl05     72     0     0    72          0        -     132.0           -      -  NVLINK-FAULT\n"
    "nvl06     72     0    72     0         18        -     132.0           -      -  MAINT\n"
    "nvl07     72     1    71     0         17        -     132.0           -      -\n"
    "nvl08     72     0    72     0         18        -     132.0           -   88.0  HOT\n"
    "POWER            BUDGET-KW EFFECTIVE-KW  DRAW-KW HEADROOM-KW\n"
    "site                1200.0        900.0    700.0       200.0\n"
    "row row1             560.0        560.0    300.0       260.0\n"
    "row row2             560.0        560.0        -           -\n"
    "events: 2 active\n"
    "  dr-1  -25% site  until 2026-11-29T21:00:00Z (ends in 1:00:00)\n"
    "  dr-rack  -32 kW rack nvl03  until 2026-11-29T22:00:00Z (ends in 2:00:00)\n"
    "queues:\n"
    "  CLASS      PENDING DEFERRED RUNNING GPUS-PENDING GPUS-RUNNING\n"
    "  none             7        3       0           96            0\n"
    "  training         2        2       1           24           68\n"
    "  finetune         1        0       0            8            0\n"
    "  inference        2        0       1            8            1\n"
    "  batch            2        0       0           12            0\n"
    "  agentic          1        0       0            4            0\n"
    "pending by reason: BeginTime 1, None 1, Priority 2, ReqNodeNotAvail 1, Resources 1, deferred:event 1, "
    "deferred:failsafe 1, deferred:maintenance 1, deferred:site-power 1, paced 1, waiting:nvlink-domain 1, "
    "waiting:pacing 1, waiting:rack-power 1, waiting:site-power 1\n"
    "signals: fresh (0 s old)\n";

TEST_F(QueueTest, GoldenTable)
{
    busy_cluster();
    queue();
    EXPECT_EQ(format_status(m, compute_status(m, c, view(), kNow), false), kGoldenStatus);
}

TEST_F(QueueTest, JsonHasTheSameFacts)
{
    busy_cluster();
    queue();
    const std::string j = format_status(m, compute_status(m, c, view(), kNow), true);
    for (const char* part :
         {"\"at\":\"2026-11-29T20:00:00Z\"", "\"gpus\":{\"total\":576,\"used\":91,\"free\":405,\"degraded\":80}",
          "\"fragmentation\":0.467", "\"whole_free_domains\":3",
          "{\"name\":\"nvl03\",\"gpus_total\":72,\"gpus_used\":18,\"gpus_free\":54,\"gpus_degraded\":0,\"free_nodes\":9,"
          "\"nodes\":18,\"nvlink_fault\":false,\"maintenance_now\":false,\"budget_kw\":100.0,\"draw_kw\":60.0,"
          "\"headroom_kw\":40.0,\"temp_c\":null,\"thermal\":\"ok\",\"jobs\":[",
          "{\"scope\":\"site\",\"name\":\"site\",\"budget_kw\":1200.0,\"effective_kw\":900.0,\"draw_kw\":700.0,"
          "\"headroom_kw\":200.0}",
          "{\"id\":\"dr-rack\",\"scope\":\"rack\",\"scope_name\":\"nvl03\",\"curtail_pct\":null,\"curtail_kw\":32.0,"
          "\"limit_kw\":null,"
          "\"start\":\"2026-11-29T19:00:00Z\",\"end\":\"2026-11-29T22:00:00Z\"}",
          "{\"class\":\"training\",\"pending\":2,\"deferred\":2,\"running\":1,\"gpus_pending\":24,\"gpus_running\":68}",
          "\"deferred:event\":1", "\"waiting:nvlink-domain\":1", "\"deferred_jobs\":5",
          "\"signals\":{\"state\":\"fresh\",\"failsafe\":false,\"hold\":false,\"age_s\":0,\"detail\":\"fresh (0 s "
          "old)\"}"})
        EXPECT_NE(j.find(part), std::string::npos) << part << "\nin " << j;
    EXPECT_EQ(j.back(), '\n');
    EXPECT_EQ(j.find('\n'), j.size() - 1);  // one line
}

// ---- explain_job ----------------------------------------------------------------------

using Strings = std::vector<std::string>;

TEST_F(StatusTest, StrictWaitingThatFitsADomainNow)
{
    busy_cluster();
    const JobView& j = job(104, JobState::Pending, WorkloadClass::Unset, 72, kStrict, "Resources");
    const Explanation e = explain_job(m, c, view(), j, kNow);
    EXPECT_EQ(e.job, 104u);
    EXPECT_EQ(e.verdict, "waiting");
    EXPECT_EQ(e.summary,
              "Job 104 is waiting for an NVLink domain with 18 free healthy nodes (best now: nvl01 with 17); policy "
              "strict:nvlink.");
    EXPECT_EQ(e.evidence, Strings{"free healthy GPUs per candidate domain: nvl02 72, nvl06 72, nvl08 72, nvl07 71, "
                                  "nvl04 60"});
    EXPECT_EQ(e.suggestions, Strings{"18 nodes fit nvl02 now (18 free healthy nodes there): Slurm starts the job at "
                                     "its next scheduling pass unless higher-priority jobs take them first"});
}

TEST_F(StatusTest, StrictWaitingThatFitsNoDomain)
{
    for (int r = 1; r <= 8; ++r)
        alloc(r, 1, r, 4);  // nvl01: 17 free nodes ... nvl08: 10
    JobView j = job(104, JobState::Pending, WorkloadClass::Unset, 72, kStrict, "Resources");
    Explanation e = explain_job(m, c, SignalsView{}, j, kNow);
    EXPECT_EQ(e.verdict, "waiting");
    // Allocated GPUs no job in the view holds: when they free is unknown.
    EXPECT_EQ(e.evidence, (Strings{"free healthy GPUs per candidate domain: nvl01 68, nvl02 64, nvl03 60, nvl04 56, "
                                   "nvl05 52",
                                   "no NVLink domain has 18 healthy nodes whose jobs have an end time"}));
    // The running jobs that hold them, by Slurm's EndTime: nvl03's job
    // ends first (its nodes 1-3, 25 min), nvl01's at 40 min, the others
    // later; nvl05's has no end (unlimited).
    for (int r = 1; r <= 8; ++r) {
        JobView& run = job(200 + r, JobState::Running, WorkloadClass::Training, 4 * r, "");
        for (int i = 1; i <= r; ++i)
            run.node_idx.push_back(m.domains[r - 1].nodes[i - 1]);
        run.start_time = kNow - kHour;
        run.end_time = r == 5 ? 0 : r == 3 ? kNow + 25 * kMin : kNow + (30 + 10 * r) * kMin;
    }
    e = explain_job(m, c, SignalsView{}, j, kNow);
    EXPECT_EQ(e.evidence.at(1), "nvl03 frees first: 18 of its nodes are free by 2026-11-29T20:25:00Z (in about 25 "
                                "min), by the running jobs' time limits (Slurm's EndTime; they may end sooner)");
    c.jobs.erase(c.jobs.end() - 8, c.jobs.end());
    EXPECT_EQ(e.suggestions,
              (Strings{"ask for --m2g-topology=prefer (takes the best placement after PreferWaitSec=300 s)",
                       "--m2g-segment=9 lets it span domains in groups of 9 (2 groups fit now)"}));
    // One free node per domain: no segment size fits now.
    for (int r = 1; r <= 8; ++r)
        alloc(r, 1, 17, 4);
    e = explain_job(m, c, SignalsView{}, j, kNow);
    EXPECT_EQ(e.suggestions,
              (Strings{"ask for --m2g-topology=prefer (takes the best placement after PreferWaitSec=300 s)",
                       "--m2g-segment=S lets it span domains in groups of S nodes"}));
    // prefer, before its wait has begun: it begins once a lesser placement
    // is free at the job's turn (its submit or begin time says nothing).
    JobView p = j;
    p.admin_comment = "m2g:[waiting policy=prefer:nvlink reason=waiting for an NVLink domain with 18 free healthy "
                      "nodes (best now: nvl01 with 1); admission=admit class=none w_gpu=404]";
    p.begin_time = kNow - kMin;
    e = explain_job(m, c, SignalsView{}, p, kNow);
    EXPECT_EQ(e.suggestions, (Strings{"its prefer wait (PreferWaitSec=300 s) starts once a placement short of its "
                                      "intent is free at its turn",
                                      "--m2g-segment=S lets it span domains in groups of S nodes"}));
    // ... and while it runs: when it falls back.
    p.admin_comment = "m2g:[waiting policy=prefer:nvlink wait=nvlink-domain need=18 prefer_since=" +
                      std::to_string(kNow - kMin) +
                      " reason=waiting for an NVLink domain with 18 free healthy nodes (best now: nvl01 with 1); "
                      "admission=admit class=none w_gpu=404]";
    e = explain_job(m, c, SignalsView{}, p, kNow);
    EXPECT_EQ(e.suggestions, (Strings{"prefer takes the best placement free from 2026-11-29T20:04:00Z "
                                      "(PreferWaitSec=300 s after 2026-11-29T19:59:00Z, when it could first have "
                                      "started on a lesser placement)",
                                      "--m2g-segment=S lets it span domains in groups of S nodes"}));
    // A job that already asks for segments gets no segment advice.
    p.intent.segment = 9;
    EXPECT_EQ(explain_job(m, c, SignalsView{}, p, kNow).suggestions.size(), 1u);
}

TEST_F(StatusTest, DeferredByADemandResponseEvent)
{
    busy_cluster();
    Model ops = m;
    ops.admission.defer_exempt_accounts = {"ops", "oncall"};
    const JobView& j = job(103, JobState::Pending, WorkloadClass::Training, 16,
                           "m2g:[admission=defer class=training w_gpu=413 until=2026-11-29T21:00:00Z cause=dr-1 "
                           "reason=defer: DR event dr-1 (site -25%) until 2026-11-29T21:00:00Z, class=training "
                           "consent=default, 6.6 kW]",
                           "BeginTime");
    const Explanation e = explain_job(ops, c, view(), j, kNow);
    EXPECT_EQ(e.verdict, "deferred");
    EXPECT_EQ(e.summary, "Job 103 is deferred until 2026-11-29T21:00:00Z by demand-response event dr-1 (-25% site).");
    EXPECT_EQ(e.evidence,
              (Strings{"demand-response event dr-1 (-25% site) until 2026-11-29T21:00:00Z; site budget 1200.0 kW, "
                       "effective 900.0 kW, draw 700.0 kW, headroom 200.0 kW",
                       "m2g admission: defer: DR event dr-1 (site -25%) until 2026-11-29T21:00:00Z, class=training "
                       "consent=default, 6.6 kW"}));
    EXPECT_EQ(e.suggestions,
              (Strings{"it starts automatically when the event ends (at the latest 2026-11-29T21:00:00Z)",
                       "accounts ops,oncall may use --m2g-defer=no during events",
                       "--m2g-defer=until=<time> caps the wait"}));
    // Without exempt accounts that suggestion goes.
    EXPECT_EQ(explain_job(m, c, view(), j, kNow).suggestions.size(), 2u);
    // The event has left the feed: say so.
    s.events.clear();
    EXPECT_EQ(explain_job(m, c, view(), j, kNow).evidence[0],
              "demand-response event dr-1 is not in the signals in force");
}

TEST_F(StatusTest, DeferredByMaintenance)
{
    window("mw-2", kNow + 2 * kHour, kNow + 4 * kHour, "nvl04");
    const JobView& j = job(108, JobState::Pending, WorkloadClass::Training, 72,
                           "m2g:[admission=defer class=training w_gpu=413 until=2026-11-30T00:00:00Z "
                           "cause=maintenance:mw-2 reason=defer: maintenance mw-2 until 2026-11-30T00:00:00Z]",
                           "BeginTime");
    const Explanation e = explain_job(m, c, view(), j, kNow);
    EXPECT_EQ(e.verdict, "deferred");
    EXPECT_EQ(e.summary, "Job 108 is deferred until 2026-11-30T00:00:00Z by maintenance window mw-2.");
    EXPECT_EQ(e.evidence, (Strings{"maintenance window mw-2 (firmware) on r04n[01-18] from 2026-11-29T22:00:00Z to "
                                   "2026-11-30T00:00:00Z",
                                   "m2g admission: defer: maintenance mw-2 until 2026-11-30T00:00:00Z"}));
    EXPECT_EQ(e.suggestions, (Strings{"it becomes eligible at 2026-11-30T00:00:00Z, after the window",
                                      "a --time of at most 120 minutes fits before the window"}));
}

TEST_F(StatusTest, DeferredByTheFailSafe)
{
    SignalsView v = view();
    v.state = FeedState::Stale;
    v.failsafe = true;
    v.hold = true;
    v.detail = "stale: generated 2026-11-29T19:50:00Z (600 s ago) by test";
    const JobView& j = job(116, JobState::Pending, WorkloadClass::Batch, 8,
                           "m2g:[admission=defer class=batch w_gpu=372 until=2026-11-29T20:05:00Z cause=failsafe "
                           "reason=defer: signals feed stale (SignalsFailSafe=defer holds deferrable work)]",
                           "BeginTime");
    const Explanation e = explain_job(m, c, v, j, kNow);
    EXPECT_EQ(e.verdict, "deferred");
    EXPECT_EQ(e.summary, "Job 116 is deferred until 2026-11-29T20:05:00Z: the signals feed is stale and "
                         "SignalsFailSafe=defer holds deferrable work.");
    EXPECT_EQ(e.evidence[0], "signals: stale: generated 2026-11-29T19:50:00Z (600 s ago) by test");
    EXPECT_EQ(e.suggestions,
              (Strings{"it is re-checked every PowerRetrySec=300 s and released once the feed is fresh again",
                       "--m2g-defer=until=<time> caps the wait"}));
}

TEST_F(StatusTest, DeferredForSitePower)
{
    s.site.draw_kw = 1198.5;
    const JobView& j = job(115, JobState::Pending, WorkloadClass::Unset, 8,
                           "m2g:[admission=defer class=none w_gpu=404 until=2026-11-29T20:05:00Z cause=power:site "
                           "reason=defer: site power 1.5 kW free of 1200.0 kW, job needs 3.2 kW]",
                           "BeginTime");
    const Explanation e = explain_job(m, c, view(), j, kNow);
    EXPECT_EQ(e.verdict, "deferred");
    EXPECT_EQ(e.summary, "Job 115 is deferred until 2026-11-29T20:05:00Z: the site has 1.5 kW of power headroom and "
                         "the job needs 3.2 kW.");
    EXPECT_EQ(e.evidence,
              (Strings{"site budget 1200.0 kW, effective 1200.0 kW, draw 1198.5 kW, headroom 1.5 kW",
                       "the job needs 3.2 kW (8 GPUs x 404 W, m2g admission (w_gpu))",
                       "m2g admission: defer: site power 1.5 kW free of 1200.0 kW, job needs 3.2 kW"}));
    EXPECT_EQ(e.suggestions,
              (Strings{"it is re-checked every PowerRetrySec=300 s and starts when the site has 3.2 kW free",
                       "--m2g-defer=until=<time> caps the wait"}));
}

TEST_F(StatusTest, RunningPlacedAndDone)
{
    JobView& j = job(101, JobState::Running, WorkloadClass::Training, 72, kPlaced);
    j.node_idx = m.domains[1].nodes;
    Explanation e = explain_job(m, c, SignalsView{}, j, kNow);
    EXPECT_EQ(e.verdict, "running");
    EXPECT_EQ(e.summary, "Job 101 runs in nvl02 (leaf leaf01), contained in one NVLink domain.");
    EXPECT_EQ(e.evidence, (Strings{"nodes: r02n[01-18]", "m2g placed it: nvl02, best fit (17 of 18 nodes left free there)",
                                   "policy prefer:nvlink, score 17",
                                   "signals at placement: rack nvl01 over budget: 0.0 kW free, job needs 1.7 kW/node"}));
    EXPECT_TRUE(e.suggestions.empty());
    // Across two domains under two leaves.
    JobView& k = job(9, JobState::Running, WorkloadClass::Training, 72,
                     "m2g:[domains=nvl04,nvl05 leaves=leaf01,leaf02 policy=prefer:nvlink score=1100 reason=2 NVLink "
                     "domains (0 whole, lower bound 1) under spine01; best effort, the nvlink intent is not met (prefer "
                     "wait over)]");
    for (int i = 9; i < 18; ++i) {
        k.node_idx.push_back(m.domains[3].nodes[i]);
        k.node_idx.push_back(m.domains[4].nodes[i - 9]);
    }
    e = explain_job(m, c, SignalsView{}, k, kNow);
    EXPECT_EQ(e.summary, "Job 9 runs across nvl04,nvl05 (leaves leaf01,leaf02), spanning 2 NVLink domains.");
    EXPECT_EQ(e.evidence[0], "nodes: r04n[10-18],r05n[01-09]");
    // Pending with a placement: about to start. Without node indices the
    // annotation tells where.
    k.state = JobState::Pending;
    k.node_idx.clear();
    e = explain_job(m, c, SignalsView{}, k, kNow);
    EXPECT_EQ(e.verdict, "placed");
    EXPECT_EQ(e.summary, "Job 9 is placed across nvl04,nvl05 (leaves leaf01,leaf02), spanning 2 NVLink domains, and "
                         "starts when Slurm launches it.");
    k.state = JobState::Done;
    EXPECT_EQ(explain_job(m, c, SignalsView{}, k, kNow).summary,
              "Job 9 has ended; it ran across nvl04,nvl05 (leaves leaf01,leaf02), spanning 2 NVLink domains.");
    EXPECT_EQ(explain_job(m, c, SignalsView{}, job(5, JobState::Running, WorkloadClass::Unset, 4, ""), kNow).summary,
              "Job 5 runs without an m2g placement record (Slurm placed it alone).");
}

// What m2g-curtaild last did to a running job is part of its explanation.
TEST_F(StatusTest, RunningJobCurtailedDuringAnEvent)
{
    JobView& j = job(102, JobState::Running, WorkloadClass::Training, 72,
                     set_annotation(kPlaced, AnnotationPart::Curtail,
                                    "cap w_gpu=300 cause=dr-1 scope=site at=2026-11-29T20:00:00Z"));
    j.node_idx = m.domains[1].nodes;
    const Annotation a = read_annotation(j.admin_comment);
    ASSERT_TRUE(a.curtail);
    EXPECT_EQ(format(*a.curtail), "cap w_gpu=300 cause=dr-1 scope=site at=2026-11-29T20:00:00Z");
    EXPECT_EQ(a.curtail->step, CurtailStep::Cap);
    EXPECT_FALSE(a.curtail->monitor);
    EXPECT_EQ(a.curtail->w_gpu, 300);
    EXPECT_EQ(a.curtail->cause, "dr-1");
    EXPECT_EQ(a.curtail->scope, "site");
    EXPECT_EQ(a.curtail->at, kNow);
    EXPECT_EQ(placement_of(a).state, PlacementState::Placed) << "the placement part is untouched";
    const Explanation e = explain_job(m, c, SignalsView{}, j, kNow);
    EXPECT_EQ(e.evidence.back(),
              "m2g-curtaild, last action during a power event: cap w_gpu=300 cause=dr-1 scope=site "
              "at=2026-11-29T20:00:00Z");
}

TEST_F(StatusTest, PacedAtPlacementAndByAdmission)
{
    Model paced = m;
    paced.admission.pace_gpus_per_interval = 8;
    paced.admission.ramp_rate_kw_per_min = 100;
    site_event("dr-1", kNow - kHour, kNow + kHour, 25);
    s.site.draw_kw = 700;
    const JobView& j = job(105, JobState::Pending, WorkloadClass::Inference, 8, kPacing, "Resources");
    Explanation e = explain_job(paced, c, view(), j, kNow);
    EXPECT_EQ(e.verdict, "paced");
    EXPECT_EQ(e.summary, "Job 105 is paced: 4 GPUs already started this interval.");
    EXPECT_EQ(e.evidence,
              (Strings{"pacing during curtailment: at most 8 GPUs (PaceGpusPerInterval) and 100.0 kW "
                       "(RampRateKWPerMin=100) start per 60 s interval; this job starts 8 GPUs (0.8 kW)",
                       "demand-response event dr-1 (-25% site) until 2026-11-29T21:00:00Z; site budget 1200.0 kW, "
                       "effective 900.0 kW, draw 700.0 kW, headroom 200.0 kW"}));
    EXPECT_EQ(e.suggestions, Strings{"it starts in the next 60 s interval with room for 8 GPUs (0.8 kW)"});
    // Admission paced it (Verdict Pace).
    const JobView& k = job(114, JobState::Pending, WorkloadClass::Unset, 4,
                           "m2g:[admission=pace class=none w_gpu=404 until=2026-11-29T20:02:00Z cause=dr-1 reason=pace: "
                           "non-deferrable during DR event dr-1]",
                           "BeginTime");
    e = explain_job(m, c, view(), k, kNow);
    EXPECT_EQ(e.verdict, "paced");
    EXPECT_EQ(e.summary, "Job 114 is paced: its GPUs start at 2026-11-29T20:02:00Z during demand-response event dr-1.");
    EXPECT_EQ(e.evidence[1], "pacing during curtailment: no PaceGpusPerInterval= or RampRateKWPerMin= limit is set; "
                             "this job starts 4 GPUs (1.6 kW)");
    EXPECT_EQ(e.suggestions, Strings{"it starts automatically at 2026-11-29T20:02:00Z"});
}

TEST_F(StatusTest, WaitingForSiteAndRackPower)
{
    site_event("dr-1", kNow - kHour, kNow + kHour, 25);
    s.site.draw_kw = 899;
    s.racks[0].draw_kw = 132;
    s.racks[1].draw_kw = 100;
    const JobView& j = job(113, JobState::Pending, WorkloadClass::Inference, 4, kSitePower, "Resources");
    Explanation e = explain_job(m, c, view(), j, kNow);
    EXPECT_EQ(e.verdict, "waiting");
    EXPECT_EQ(e.summary, "Job 113 is waiting for site power: 1.0 kW free of 1200.0 kW (event dr-1 -25%); policy "
                         "prefer:nvlink.");
    EXPECT_EQ(e.evidence,
              (Strings{"site budget 1200.0 kW, effective 900.0 kW, draw 899.0 kW, headroom 1.0 kW",
                       "the job needs 0.4 kW (4 GPUs x 101 W, m2g admission (w_gpu))",
                       "demand-response event dr-1 (-25% site) until 2026-11-29T21:00:00Z; site budget 1200.0 kW, "
                       "effective 900.0 kW, draw 899.0 kW, headroom 1.0 kW"}));
    EXPECT_EQ(e.suggestions, Strings{"it starts when the site has 0.4 kW of headroom (1.0 kW now)"});

    // Held while m2g-curtaild makes room for it (wait=power-room).
    const JobView& w = job(118, JobState::Pending, WorkloadClass::Inference, 8,
                           "m2g:[waiting policy=prefer:nvlink wait=power-room room_since=" + std::to_string(kNow - 10) +
                               " reason=site power: 1.0 kW free of 900.0 kW, job needs 3.5 kW, m2g-curtaild is making "
                               "room (it starts by 2026-11-29T20:00:20Z regardless); admission=admit class=inference "
                               "w_gpu=101]",
                           "Resources");
    e = explain_job(m, c, view(), w, kNow);
    EXPECT_EQ(e.verdict, "waiting");
    EXPECT_EQ(e.summary, "Job 118 is waiting for room under the site's power budget: 1.0 kW free of 900.0 kW, job "
                         "needs 3.5 kW, m2g-curtaild is making room (it starts by 2026-11-29T20:00:20Z regardless); "
                         "policy prefer:nvlink.");
    EXPECT_EQ(e.suggestions,
              Strings{"m2g-curtaild caps or suspends deferrable work to make room for it; it starts once the meter "
                      "shows the room, by 2026-11-29T20:00:20Z regardless (CurtailStartWaitSec)"});

    const JobView& r = job(117, JobState::Pending, WorkloadClass::Training, 72,
                           "m2g:[waiting policy=prefer:nvlink reason=rack nvl01 over budget: 0.0 kW free, job needs "
                           "1.7 kW/node; admission=admit class=training w_gpu=413]",
                           "Resources");
    e = explain_job(m, c, view(), r, kNow);
    EXPECT_EQ(e.verdict, "waiting");
    EXPECT_EQ(e.summary, "Job 117 is waiting for rack power: rack nvl01 over budget: 0.0 kW free, job needs 1.7 "
                         "kW/node; policy prefer:nvlink.");
    EXPECT_EQ(e.evidence[0], "rack nvl01 budget 132.0 kW, effective 132.0 kW, draw 132.0 kW, headroom 0.0 kW");
    EXPECT_EQ(e.suggestions, (Strings{"racks with room for a node (1.7 kW) now: nvl02 (32.0 kW free)",
                                      "it starts when racks have 1.7 kW of headroom per node it needs"}));
}

TEST_F(StatusTest, SlurmReasonsAndGarbage)
{
    busy_cluster();
    JobView& b = job(107, JobState::Pending, WorkloadClass::Batch, 4, "", "BeginTime");
    b.begin_time = kNow + kHour;
    Explanation e = explain_job(m, c, view(), b, kNow);
    EXPECT_EQ(e.verdict, "waiting");
    EXPECT_EQ(e.summary, "Job 107 waits for its begin time 2026-11-29T21:00:00Z (set by its owner or an operator, not "
                         "by m2g).");
    const JobView& g = job(7, JobState::Pending, WorkloadClass::Unset, 4, "m2g:[admission=defer until=garbage ]]]", "Priority");
    e = explain_job(m, c, view(), g, kNow);
    EXPECT_EQ(e.verdict, "waiting");
    EXPECT_EQ(e.summary, "Job 7 is pending in Slurm (reason Priority); m2g holds nothing against it.");
    // Admission=monitor: what m2g would have done, nothing enforced.
    const JobView& mon = job(109, JobState::Pending, WorkloadClass::Finetune, 8,
                             "m2g:[admission=monitor would defer class=finetune w_gpu=404 until=2026-11-29T21:00:00Z "
                             "cause=dr-1 reason=defer: DR event dr-1]",
                             "Resources");
    e = explain_job(m, c, view(), mon, kNow);
    EXPECT_EQ(e.verdict, "waiting");
    EXPECT_EQ(e.evidence.back(),
              "Admission=monitor: m2g would defer it until 2026-11-29T21:00:00Z (cause dr-1) but enforces nothing");
    EXPECT_EQ(explain_job(m, c, view(), job(118, JobState::Pending, WorkloadClass::Unset, 4, "", ""), kNow).verdict,
              "unknown");
}

TEST_F(StatusTest, ExplanationFormats)
{
    busy_cluster();
    Model ops = m;
    ops.admission.defer_exempt_accounts = {"ops"};
    const JobView& j = job(103, JobState::Pending, WorkloadClass::Training, 16,
                           "m2g:[admission=defer class=training w_gpu=413 until=2026-11-29T21:00:00Z cause=dr-1 "
                           "reason=defer: DR event dr-1]",
                           "BeginTime");
    const Explanation e = explain_job(ops, c, view(), j, kNow);
    EXPECT_EQ(format_explanation(e, false),
              "job 103: deferred\n"
              "Job 103 is deferred until 2026-11-29T21:00:00Z by demand-response event dr-1 (-25% site).\n"
              "evidence:\n"
              "  - demand-response event dr-1 (-25% site) until 2026-11-29T21:00:00Z; site budget 1200.0 kW, effective "
              "900.0 kW, draw 700.0 kW, headroom 200.0 kW\n"
              "  - m2g admission: defer: DR event dr-1\n"
              "suggestions:\n"
              "  - it starts automatically when the event ends (at the latest 2026-11-29T21:00:00Z)\n"
              "  - accounts ops may use --m2g-defer=no during events\n"
              "  - --m2g-defer=until=<time> caps the wait\n");
    EXPECT_EQ(format_explanation(e, true),
              "{\"job\":103,\"verdict\":\"deferred\",\"summary\":\"Job 103 is deferred until 2026-11-29T21:00:00Z by "
              "demand-response event dr-1 (-25% site).\",\"evidence\":[\"demand-response event dr-1 (-25% site) until "
              "2026-11-29T21:00:00Z; site budget 1200.0 kW, effective 900.0 kW, draw 700.0 kW, headroom 200.0 "
              "kW\",\"m2g admission: defer: DR event dr-1\"],\"suggestions\":[\"it starts automatically when the event "
              "ends (at the latest 2026-11-29T21:00:00Z)\",\"accounts ops may use --m2g-defer=no during "
              "events\",\"--m2g-defer=until=<time> caps the wait\"]}\n");
}

// ---- job_energy ---------------------------------------------------------------------

TEST_F(StatusTest, EnergyFromAdmissionsPowerPerGpu)
{
    JobView& j = job(101, JobState::Running, WorkloadClass::Training, 8, kPlaced);
    j.intent.power_w_per_gpu = 413;  // the adapter copies w_gpu here
    j.start_time = kNow - 2 * kHour;
    j.end_time = kNow + kHour;  // the expected end of a running job: not used
    const JobEnergy e = job_energy(m, j, EnergyPrice{0.25, "EUR"}, kNow);
    EXPECT_EQ(e.job, 101u);
    EXPECT_EQ(e.runtime_s, 7200);
    EXPECT_DOUBLE_EQ(e.gpu_hours, 16);
    EXPECT_EQ(e.power_w_per_gpu, 413);
    EXPECT_EQ(e.power_source, "m2g admission (w_gpu)");
    EXPECT_DOUBLE_EQ(e.energy_kwh, 16 * 0.413);
    EXPECT_DOUBLE_EQ(e.cost, 16 * 0.413 * 0.25);
    EXPECT_EQ(e.currency, "EUR");
    EXPECT_EQ(format_job_energy(e, j, false),
              "job 101 (job101): running, 2:00:00 on 8 GPUs = 16.00 GPU-hours\n"
              "power:  413 W per GPU (m2g admission (w_gpu))\n"
              "energy: 6.61 kWh (estimate: GPU-hours x power per GPU)\n"
              "cost:   1.65 EUR at 0.25 EUR/kWh\n");
    EXPECT_EQ(format_job_energy(e, j, true),
              "{\"job\":101,\"name\":\"job101\",\"state\":\"running\",\"gpus\":8,\"runtime_s\":7200,\"gpu_hours\":16.0,"
              "\"power_w_per_gpu\":413.0,\"power_source\":\"m2g admission (w_gpu)\",\"energy_kwh\":6.608,"
              "\"price_per_kwh\":0.25,\"cost\":1.65,\"currency\":\"EUR\"}\n");
}

TEST_F(StatusTest, EnergyFromThePolicyAndPrices)
{
    JobView& j = job(7, JobState::Done, WorkloadClass::Inference, 4, "");
    j.start_time = kNow - 3 * kHour;
    j.end_time = kNow - kHour;  // ended: its real end counts
    JobEnergy e = job_energy(m, j, energy_price(m), kNow);
    EXPECT_EQ(e.runtime_s, 7200);
    EXPECT_DOUBLE_EQ(e.gpu_hours, 8);
    EXPECT_EQ(e.power_w_per_gpu, 101);
    EXPECT_EQ(e.power_source, "class inference default (Acme p50)");
    EXPECT_DOUBLE_EQ(e.energy_kwh, 0.808);
    EXPECT_EQ(e.cost, 0);  // the fixture sets no price
    EXPECT_EQ(format_job_energy(e, j, false),
              "job 7 (job7): done, 2:00:00 on 4 GPUs = 8.00 GPU-hours\n"
              "power:  101 W per GPU (class inference default (Acme p50))\n"
              "energy: 0.81 kWh (estimate: GPU-hours x power per GPU)\n"
              "cost:   not shown (no EnergyPricePerKWh= in m2g.conf)\n");
    EXPECT_NE(format_job_energy(e, j, true).find("\"price_per_kwh\":null,\"cost\":null,\"currency\":\"EUR\""),
              std::string::npos);
    // m2g.conf's class power and price.
    Model priced = m;
    priced.admission.classes[static_cast<int>(WorkloadClass::Inference)].power_w_per_gpu = 250;
    priced.energy_price_per_kwh = 0.3;
    priced.energy_currency = "CHF";
    e = job_energy(priced, j, energy_price(priced), kNow);
    EXPECT_EQ(e.power_w_per_gpu, 250);
    EXPECT_EQ(e.power_source, "PowerPerGpuW of class inference (m2g.conf)");
    EXPECT_DOUBLE_EQ(e.cost, 8 * 0.25 * 0.3);
    EXPECT_EQ(e.currency, "CHF");
    priced.admission.classes[static_cast<int>(WorkloadClass::Inference)].power_w_per_gpu = 0;
    priced.admission.default_power_w_per_gpu = 300;
    EXPECT_EQ(job_energy(priced, j, energy_price(priced), kNow).power_source, "DefaultPowerPerGpuW (m2g.conf)");
    // No class in the intent: the annotation's class (no w_gpu there).
    JobView k = j;
    k.intent.workload_class = WorkloadClass::Unset;
    k.admin_comment = "m2g:[admission=admit class=training]";
    e = job_energy(m, k, energy_price(m), kNow);
    EXPECT_EQ(e.power_w_per_gpu, 413);
    EXPECT_EQ(e.power_source, "class training default (Acme p95)");
    k.admin_comment = "";
    EXPECT_EQ(job_energy(m, k, energy_price(m), kNow).power_source, "class none default (Acme p90)");
    // A recipe's power without an annotation.
    k.intent.power_w_per_gpu = 700;
    k.intent.recipe = "llama3-70b";
    EXPECT_EQ(job_energy(m, k, energy_price(m), kNow).power_source, "recipe llama3-70b");
    // Not started: nothing yet.
    JobView p = j;
    p.state = JobState::Pending;
    p.start_time = 0;
    e = job_energy(m, p, EnergyPrice{0.25, "EUR"}, kNow);
    EXPECT_EQ(e.runtime_s, 0);
    EXPECT_EQ(e.energy_kwh, 0);
    EXPECT_EQ(e.cost, 0);
}

// ---- the typed wait cause ------------------------------------------------------------
// Since wait= (and need=, over=) explain and status read the cause select/m2g
// typed, not the reason sentence; records without it (sacct) still read the same.

TEST_F(StatusTest, TypedRecordsExplainLikeTheSentencesTheyReplace)
{
    busy_cluster();
    s.racks[1].draw_kw = 132;  // nvl02 full too
    s.rows[1].draw_kw = 559;
    Model paced = m;
    paced.admission.pace_gpus_per_interval = 8;
    const std::string kRack =
        "m2g:[waiting policy=prefer:nvlink reason=rack nvl01 over budget: 0.0 kW free, job needs 1.7 kW/node, rack "
        "nvl02 over budget: 0.0 kW free, job needs 1.7 kW/node, row row2 over budget: 1.0 kW free, job needs 30.0 "
        "kW; admission=admit class=training w_gpu=413]";
    const std::string kRow = "m2g:[waiting policy=prefer:nvlink reason=row row2 over budget: 1.0 kW free, job needs "
                             "30.0 kW; admission=admit class=training w_gpu=413]";
    const std::string kMaint = "m2g:[waiting policy=strict:nvlink reason=maintenance mw-1: 18 nodes avoided, 2 nodes "
                               "down; admission=admit class=none w_gpu=404]";
    const std::string kFailsafe = "m2g:[waiting policy=prefer:nvlink reason=signals stale/missing, fail-safe defer "
                                  "holds deferrable work; admission=admit class=training w_gpu=413]";
    const std::pair<std::string, std::string> same[] = {
        {kStrict,
         "m2g:[waiting policy=strict:nvlink wait=nvlink-domain need=18 reason=waiting for an NVLink domain with 18 "
         "free healthy nodes (best now: nvl01 with 17); admission=admit class=none w_gpu=404]"},
        {kPacing,
         "m2g:[waiting policy=prefer:nvlink wait=pacing reason=pacing: 4 GPUs already started this interval; "
         "admission=admit class=inference w_gpu=101]"},
        {kSitePower,
         "m2g:[waiting policy=prefer:nvlink wait=site-power reason=site power: 1.0 kW free of 1200.0 kW (event dr-1 "
         "-25%); admission=admit class=inference w_gpu=101]"},
        {kRack,
         "m2g:[waiting policy=prefer:nvlink wait=rack-power over=nvl01,nvl02 reason=rack nvl01 over budget: 0.0 kW "
         "free, job needs 1.7 kW/node, rack nvl02 over budget: 0.0 kW free, job needs 1.7 kW/node, row row2 over "
         "budget: 1.0 kW free, job needs 30.0 kW; admission=admit class=training w_gpu=413]"},
        {kRow,
         "m2g:[waiting policy=prefer:nvlink wait=row-power over=row2 reason=row row2 over budget: 1.0 kW free, job "
         "needs 30.0 kW; admission=admit class=training w_gpu=413]"},
        {kMaint,
         "m2g:[waiting policy=strict:nvlink wait=maintenance reason=maintenance mw-1: 18 nodes avoided, 2 nodes down; "
         "admission=admit class=none w_gpu=404]"},
        {kFailsafe,
         "m2g:[waiting policy=prefer:nvlink wait=failsafe reason=signals stale/missing, fail-safe defer holds "
         "deferrable work; admission=admit class=training w_gpu=413]"},
    };
    for (const auto& [legacy, typed] : same) {
        JobView& j = job(120, JobState::Pending, WorkloadClass::Unset, 72, legacy, "Resources");
        const Explanation old_e = explain_job(paced, c, view(), j, kNow);
        j.admin_comment = typed;
        const Explanation new_e = explain_job(paced, c, view(), j, kNow);
        EXPECT_EQ(format_explanation(new_e, false), format_explanation(old_e, false)) << typed;
        EXPECT_EQ(format_explanation(new_e, true), format_explanation(old_e, true)) << typed;
        EXPECT_EQ(pending_reason_key(j, read_annotation(typed), kNow),
                  pending_reason_key(j, read_annotation(legacy), kNow));
        EXPECT_GT(old_e.evidence.size() + old_e.suggestions.size(), 0u) << legacy;
        // Unknown job size: the node count comes from need=, or from the sentence.
        j.nodes = 0;
        const std::string no_size = format_explanation(explain_job(paced, c, view(), j, kNow), false);
        j.admin_comment = legacy;
        EXPECT_EQ(no_size, format_explanation(explain_job(paced, c, view(), j, kNow), false)) << legacy;
        c.jobs.pop_back();
    }
}

// The typed fields decide: whatever the sentence says, it is only shown.
TEST_F(StatusTest, ExplainClassifiesByTheTypedCause)
{
    busy_cluster();
    s.racks[1].draw_kw = 132;
    JobView& j = job(121, JobState::Pending, WorkloadClass::Training, 72,
                     "m2g:[waiting policy=prefer:nvlink wait=rack-power over=nvl02 reason=the racks are full]",
                     "Resources");
    Explanation e = explain_job(m, c, view(), j, kNow);
    EXPECT_EQ(e.summary, "Job 121 is waiting for rack power: the racks are full; policy prefer:nvlink.");
    EXPECT_EQ(e.evidence[0], "rack nvl02 budget 132.0 kW, effective 132.0 kW, draw 132.0 kW, headroom 0.0 kW");
    EXPECT_EQ(pending_reason_key(j, read_annotation(j.admin_comment), kNow), "waiting:rack-power");
    // need= gives the job's size when Slurm does not.
    j.nodes = 0;
    j.admin_comment = "m2g:[waiting policy=strict:nvlink wait=nvlink-domain need=18 reason=waiting for a whole rack]";
    e = explain_job(m, c, view(), j, kNow);
    EXPECT_EQ(e.summary, "Job 121 is waiting for a whole rack; policy strict:nvlink.");
    EXPECT_EQ(e.suggestions, Strings{"18 nodes fit nvl02 now (18 free healthy nodes there): Slurm starts the job at "
                                     "its next scheduling pass unless higher-priority jobs take them first"});
    EXPECT_EQ(pending_reason_key(j, read_annotation(j.admin_comment), kNow), "waiting:nvlink-domain");
    // A sentence that reads like another cause does not change it.
    j.admin_comment = "m2g:[waiting policy=strict:nvlink wait=maintenance reason=site power: 0.0 kW free]";
    EXPECT_EQ(pending_reason_key(j, read_annotation(j.admin_comment), kNow), "waiting:maintenance");
    e = explain_job(m, c, view(), j, kNow);
    EXPECT_EQ(e.summary, "Job 121 is waiting: site power: 0.0 kW free; policy strict:nvlink.");
    EXPECT_EQ(e.evidence[0].rfind("free healthy GPUs per candidate domain: ", 0), 0u) << e.evidence[0];
    // Records select/m2g wrote without a cause when Slurm offered too few
    // nodes (before the session let the engine say why): never an empty one.
    j.admin_comment = "m2g:[waiting policy=strict:nvlink wait=other reason=]";
    e = explain_job(m, c, view(), j, kNow);
    EXPECT_EQ(e.summary, "Job 121 is waiting (Slurm: Resources); select/m2g recorded no cause; policy strict:nvlink.");
    // What the session writes now: the nodes it waits for, and what would help.
    j.admin_comment = "m2g:[waiting policy=strict:nvlink wait=nodes need=18 reason=waiting for 18 free healthy nodes "
                      "under one switch (usable now: 1)]";
    for (int r = 1; r <= 8; ++r)
        alloc(r, 1, 17, 4);
    e = explain_job(m, c, view(), j, kNow);
    EXPECT_EQ(e.summary, "Job 121 is waiting for 18 free healthy nodes under one switch (usable now: 1); policy "
                         "strict:nvlink.");
    EXPECT_EQ(e.suggestions,
              (Strings{"ask for --m2g-topology=prefer (takes the best placement after PreferWaitSec=300 s)"}));
}

TEST_F(StatusTest, EachDomainListsTheJobsRunningInIt)
{
    JobView& a = job(101, JobState::Running, WorkloadClass::Training, 72, kPlaced);
    a.node_idx = m.domains[1].nodes;
    JobView& b = job(9, JobState::Running, WorkloadClass::Training, 8, "");
    b.node_idx = {m.domains[3].nodes[17], m.domains[4].nodes[0]};
    JobView& p = job(12, JobState::Pending, WorkloadClass::Training, 8, "");
    p.node_idx = {m.domains[1].nodes[0]};  // not running: not listed
    const Status st = compute_status(m, c, SignalsView{}, kNow);
    EXPECT_EQ(st.domains[1].jobs, (std::vector<uint32_t>{101}));
    EXPECT_EQ(st.domains[3].jobs, (std::vector<uint32_t>{9}));
    EXPECT_EQ(st.domains[4].jobs, (std::vector<uint32_t>{9}));
    EXPECT_TRUE(st.domains[0].jobs.empty());
    EXPECT_NE(format_status(m, st, true).find("\"name\":\"nvl02\""), std::string::npos);
    EXPECT_NE(format_status(m, st, true).find("\"jobs\":[101]"), std::string::npos);
}
