// Admission: every decision path of decide(), the pacer's interval
// arithmetic, and gate()'s trimming at placement, on the eight-rack NVL72
// fixture with hand-made signals (no feed parser involved).
//
//   row1: nvl01..nvl04 = r01n[01-18]..r04n[01-18]   PowerBudgetKW=560
//   row2: nvl05..nvl08 = r05n[01-18]..r08n[01-18]   PowerBudgetKW=560
//   racks: PowerBudgetKW=132 each; site: SitePowerBudgetKW=1200; 4 GPUs/node
#include <gtest/gtest.h>

#include "test/unit/event_fixture.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "core/power/admission.hpp"
#include "core/model/config.hpp"

using namespace m2g;

namespace {

constexpr int64_t kNow = 1795982400;  // 2026-11-29T20:00:00Z
constexpr int64_t kMin = 60, kHour = 3600;

std::string data_dir()
{
    const char* d = std::getenv("M2G_DATA");
    return d ? d : M2G_FIXTURES "/../../../shared/data";
}

class Admission : public testing::Test {
  protected:
    Admission() : m(load_model(M2G_FIXTURES "/nvl72-8rack.conf"))
    {
        s.generated_at = kNow;
        s.source = "test";
        s.racks.resize(m.domains.size());
        s.rows.resize(m.fault_domains.size());
        s.thermal.resize(m.nodes.size());
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

    // A view in fail-safe Defer: stale snapshot, deferrable work held.
    SignalsView held() const
    {
        SignalsView v = view();
        v.state = FeedState::Stale;
        v.failsafe = true;
        v.hold = true;
        return v;
    }

    static AdmissionRequest job(WorkloadClass c, int gpus, DeferConsent consent = DeferConsent::Unset)
    {
        AdmissionRequest r;
        r.intent.workload_class = c;
        r.intent.defer = consent;
        r.gpus = gpus;
        r.nodes = (gpus + 3) / 4;
        r.time_limit_s = kHour;
        r.now = kNow;
        r.account = "acme";
        r.user = "alice";
        r.groups = {"users"};
        return r;
    }

    void site_event(const std::string& id, int64_t start, int64_t end, double pct)
    {
        s.events.push_back(m2g::test::site_event(id, start, end, pct));
    }

    void rack_event(const std::string& id, const std::string& rack, int64_t start, int64_t end, double pct)
    {
        s.events.push_back(m2g::test::rack_event(m, id, rack, start, end, pct));
    }

    void window(const std::string& id, int64_t start, int64_t end, const std::vector<std::string>& racks)
    {
        MaintenanceWindow w;
        w.id = id;
        w.start = start;
        w.end = end;
        for (const std::string& r : racks)
            for (int n : m.domains[m.find_domain(r)].nodes)
                w.nodes.push_back(n);
        w.reason = "firmware";
        s.maintenance.push_back(w);
    }

    std::vector<int> rack_nodes(const std::vector<std::string>& racks) const
    {
        std::vector<int> out;
        for (const std::string& r : racks)
            for (int n : m.domains[m.find_domain(r)].nodes)
                out.push_back(n);
        return out;
    }

    Model m;
    Signals s;
};

}  // namespace

// ---- built-in class defaults ---------------------------------------------

TEST(AdmissionDefaults, ClassPowerMatchesTheAcmeCdf)
{
    const std::string path = data_dir() + "/acme2023_power_thermal_cdf.csv";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path << " is missing: the built-in per-class GPU power comes from it (set M2G_DATA)";
    std::map<std::string, std::vector<std::pair<double, double>>> cdf;  // cluster -> (pct, W)
    std::string line;
    auto next = [&] {
        if (!std::getline(in, line))
            return false;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();  // the file has CRLF line ends
        return true;
    };
    next();
    EXPECT_EQ(line, "cluster,metric,unit,cdf_pct,value");
    while (next()) {
        std::istringstream ls(line);
        std::string cluster, metric, unit, pct, value;
        std::getline(ls, cluster, ',');
        std::getline(ls, metric, ',');
        std::getline(ls, unit, ',');
        std::getline(ls, pct, ',');
        std::getline(ls, value, ',');
        if (metric == "gpu_power")
            cdf[cluster].emplace_back(std::stod(pct), std::stod(value));
    }
    ASSERT_EQ(cdf.size(), 2u);
    auto quantile = [](const std::vector<std::pair<double, double>>& pts, double q) {
        for (size_t i = 1; i < pts.size(); ++i) {
            const auto [x0, y0] = pts[i - 1];
            const auto [x1, y1] = pts[i];
            if (x0 <= q && q <= x1)
                return x1 == x0 ? y0 : y0 + (y1 - y0) * (q - x0) / (x1 - x0);
        }
        return std::nan("");
    };
    const std::map<WorkloadClass, double> quantiles = {
        {WorkloadClass::Unset, 90},     {WorkloadClass::Training, 95}, {WorkloadClass::Finetune, 90},
        {WorkloadClass::Inference, 50}, {WorkloadClass::Batch, 75},    {WorkloadClass::Benchmark, 99},
        {WorkloadClass::Dataproc, 50},  {WorkloadClass::Agentic, 50}};
    ASSERT_EQ(class_power_defaults().size(), 8u);
    for (const ClassPowerDefault& d : class_power_defaults()) {
        SCOPED_TRACE(std::string("class ") + (d.cls == WorkloadClass::Unset ? "(none)" : to_string(d.cls)));
        EXPECT_EQ(d.quantile_pct, quantiles.at(d.cls));
        const double want = std::max(quantile(cdf.at("kalos"), d.quantile_pct), quantile(cdf.at("seren"), d.quantile_pct));
        EXPECT_NEAR(d.watts, want, 1.0);
    }
}

TEST(AdmissionDefaults, ClassTableAndNames)
{
    const auto c = AdmissionPolicy::default_classes();
    const bool want[8] = {false, true, true, false, true, true, true, false};
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(c[i].deferrable, want[i]) << i;
        EXPECT_EQ(c[i].power_w_per_gpu, 0) << i;
    }
    EXPECT_STREQ(to_string(FailSafe::Defer), "defer");
    EXPECT_STREQ(to_string(FailSafe::Last), "last");
    EXPECT_STREQ(to_string(FailSafe::Open), "open");
    EXPECT_STREQ(to_string(AdmissionMode::Monitor), "monitor");
    EXPECT_STREQ(to_string(AdmissionMode::Enforce), "enforce");
    EXPECT_STREQ(to_string(AdmissionMode::Off), "off");
    EXPECT_STREQ(to_string(NoDeferAction::Convert), "convert");
    EXPECT_STREQ(to_string(NoDeferAction::Reject), "reject");
    EXPECT_STREQ(to_string(MaintenanceAction::Steer), "steer");
    EXPECT_STREQ(to_string(MaintenanceAction::Defer), "defer");
    EXPECT_STREQ(to_string(Verdict::Pace), "pace");
    EXPECT_STREQ(to_string(Verdict::Reject), "reject");
}

TEST(AdmissionDefaults, PowerPrecedence)
{
    AdmissionPolicy p;
    JobIntent i;
    i.workload_class = WorkloadClass::Training;
    EXPECT_EQ(power_w_per_gpu(p, i), 413);  // built-in
    i.workload_class = WorkloadClass::Unset;
    EXPECT_EQ(power_w_per_gpu(p, i), 404);
    i.workload_class = WorkloadClass::Inference;
    EXPECT_EQ(power_w_per_gpu(p, i), 101);
    p.default_power_w_per_gpu = 700;  // DefaultPowerPerGpuW beats the built-in
    EXPECT_EQ(power_w_per_gpu(p, i), 700);
    p.classes[int(WorkloadClass::Inference)].power_w_per_gpu = 350;  // the class's PowerPerGpuW beats that
    EXPECT_EQ(power_w_per_gpu(p, i), 350);
    i.power_w_per_gpu = 900;  // the recipe beats everything
    EXPECT_EQ(power_w_per_gpu(p, i), 900);
}

TEST(AdmissionDefaults, ConsentThenClass)
{
    AdmissionPolicy p;
    JobIntent i;
    i.workload_class = WorkloadClass::Inference;
    EXPECT_FALSE(is_deferrable(p, i));
    i.defer = DeferConsent::Ok;
    EXPECT_TRUE(is_deferrable(p, i));
    i.defer = DeferConsent::Until;
    EXPECT_TRUE(is_deferrable(p, i));
    i.workload_class = WorkloadClass::Training;
    i.defer = DeferConsent::No;
    EXPECT_FALSE(is_deferrable(p, i));
    i.defer = DeferConsent::Unset;
    EXPECT_TRUE(is_deferrable(p, i));
    i.workload_class = WorkloadClass::Unset;
    EXPECT_FALSE(is_deferrable(p, i));
    p.classes[0].deferrable = true;  // DefaultDeferrable=yes
    EXPECT_TRUE(is_deferrable(p, i));
}

// ---- the pacer -------------------------------------------------------------

TEST(Pacer, NoLimitsNoPacing)
{
    AdmissionPolicy p;
    Pacer pc;
    EXPECT_EQ(pc.reserve(p, kNow + 7, 1000, 500), kNow + 7);
    EXPECT_TRUE(pc.fits_now(p, kNow, 1000, 500));
    EXPECT_EQ(pc.gpus_in_interval(p, kNow), 0);
}

TEST(Pacer, GpuCapPerAlignedInterval)
{
    AdmissionPolicy p;
    p.pace_interval_sec = 60;
    p.pace_gpus_per_interval = 8;
    Pacer pc;
    // The interval holding now+25 starts at now (aligned to the epoch).
    EXPECT_EQ(pc.reserve(p, kNow + 25, 4, 1.6), kNow + 25);  // room now: now
    EXPECT_EQ(pc.reserve(p, kNow + 30, 4, 1.6), kNow + 30);
    EXPECT_EQ(pc.gpus_in_interval(p, kNow + 59), 8);
    EXPECT_FALSE(pc.fits_now(p, kNow + 30, 1, 0.4));
    EXPECT_EQ(pc.reserve(p, kNow + 31, 4, 1.6), kNow + 60);  // next interval, at its start
    EXPECT_EQ(pc.reserve(p, kNow + 32, 2, 0.8), kNow + 60);
    EXPECT_EQ(pc.reserve(p, kNow + 33, 4, 1.6), kNow + 120);  // 6 + 4 > 8
    EXPECT_EQ(pc.reserve(p, kNow + 34, 2, 0.8), kNow + 60);   // fills the gap left at now+60
    // A job larger than a whole interval's allowance takes the first empty one.
    EXPECT_EQ(pc.reserve(p, kNow + 35, 16, 6.4), kNow + 180);
    EXPECT_EQ(pc.gpus_in_interval(p, kNow + 180), 16);
    // Intervals in the past are dropped: a minute later, now+60 holds 8.
    EXPECT_EQ(pc.reserve(p, kNow + 61, 4, 1.6), kNow + 120);
    EXPECT_EQ(pc.gpus_in_interval(p, kNow), 0);
}

TEST(Pacer, RampRateInKilowattsPerMinute)
{
    AdmissionPolicy p;
    p.pace_interval_sec = 120;
    p.ramp_rate_kw_per_min = 3;  // 6 kW per 120 s interval
    Pacer pc;
    EXPECT_EQ(pc.reserve(p, kNow, 8, 3.3), kNow);
    EXPECT_TRUE(pc.fits_now(p, kNow + 1, 4, 2.7));
    EXPECT_FALSE(pc.fits_now(p, kNow + 1, 4, 2.8));
    EXPECT_EQ(pc.reserve(p, kNow + 1, 4, 2.8), kNow + 120);
    pc.book(p, kNow + 2, 4, 2.7);  // select/m2g books what it started
    EXPECT_EQ(pc.gpus_in_interval(p, kNow + 2), 12);
    EXPECT_FALSE(pc.fits_now(p, kNow + 2, 1, 0.1));
    pc.clear();
    EXPECT_TRUE(pc.fits_now(p, kNow + 2, 1, 0.1));
}

TEST(Pacer, BoundedBookings)
{
    AdmissionPolicy p;
    p.pace_interval_sec = 60;
    p.pace_gpus_per_interval = 4;
    Pacer pc;
    int64_t last = 0;
    for (int i = 0; i < 10050; ++i)
        last = pc.reserve(p, kNow, 4, 1);
    // 10,000 intervals booked; beyond that the start is still right but not booked.
    EXPECT_EQ(last, kNow + 10000 * 60);
    EXPECT_EQ(pc.reserve(p, kNow, 4, 1), kNow + 10000 * 60);
    EXPECT_EQ(pc.gpus_in_interval(p, kNow + 9999 * 60), 4);
}

// ---- decide: the simple paths ----------------------------------------------

TEST_F(Admission, NothingInTheWayAdmits)
{
    const Decision d = decide(m, view(), job(WorkloadClass::Training, 12), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.begin_time, 0);
    EXPECT_TRUE(d.deferrable);
    EXPECT_NEAR(d.power_kw, 4.956, 1e-9);
    EXPECT_EQ(d.reason, "admit, class=training consent=default, 5.0 kW");
    EXPECT_EQ(d.message, "m2g: admit, class=training consent=default, 5.0 kW");
    EXPECT_EQ(d.annotation(), "admit");
    // Without any feed too.
    EXPECT_EQ(decide(m, SignalsView{}, job(WorkloadClass::Unset, 4), nullptr).reason,
              "admit, class=none consent=default, 1.6 kW");
}

TEST_F(Admission, OffAdmitsEverything)
{
    m.admission.mode = AdmissionMode::Off;
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    const Decision d = decide(m, held(), job(WorkloadClass::Training, 12), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.reason, "admission off");
}

TEST_F(Admission, MonitorStillDecides)
{
    m.admission.mode = AdmissionMode::Monitor;  // the plugin only records it
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    EXPECT_EQ(decide(m, view(), job(WorkloadClass::Training, 12), nullptr).verdict, Verdict::Defer);
}

// ---- 1. maintenance ----------------------------------------------------------

TEST_F(Admission, MaintenanceSteersAroundTheWindow)
{
    window("mw-1", kNow + 30 * kMin, kNow + 4 * kHour, {"nvl01"});
    const Decision d = decide(m, view(), job(WorkloadClass::Training, 8), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.avoid_nodes, rack_nodes({"nvl01"}));
    EXPECT_EQ(d.avoid_for, "maintenance mw-1");
    EXPECT_EQ(d.reason,
              "admit: steering clear of maintenance mw-1 (18 nodes avoided), class=training consent=default, 3.3 kW");
    EXPECT_EQ(d.annotation(), "admit avoid=18 nodes (maintenance mw-1)");
}

TEST_F(Admission, MaintenanceOutsideTheTimeLimitIsIgnored)
{
    window("mw-1", kNow + 2 * kHour, kNow + 4 * kHour, {"nvl01"});
    AdmissionRequest r = job(WorkloadClass::Training, 8);
    r.time_limit_s = kHour;
    Decision d = decide(m, view(), r, nullptr);
    EXPECT_TRUE(d.avoid_nodes.empty());
    r.time_limit_s = 0;  // unlimited: every future window overlaps
    d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.avoid_nodes.size(), 18u);
    // A window on nodes the job cannot use does not concern it.
    r.candidate_nodes = rack_nodes({"nvl02"});
    EXPECT_TRUE(decide(m, view(), r, nullptr).avoid_nodes.empty());
}

TEST_F(Admission, MaintenanceDefersWhenTooFewNodesRemain)
{
    window("mw-1", kNow + 30 * kMin, kNow + 4 * kHour, {"nvl01"});
    AdmissionRequest r = job(WorkloadClass::Inference, 8);  // non-deferrable: maintenance still applies
    r.candidate_nodes = rack_nodes({"nvl01", "nvl02"});
    s.node_down.assign(m.nodes.size(), 0);
    for (int k = 0; k < 17; ++k)
        s.node_down[m.domains[1].nodes[k]] = 1;  // nvl02 has one node up
    const Decision d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.verdict, Verdict::Defer);
    EXPECT_EQ(d.begin_time, kNow + 4 * kHour);
    EXPECT_EQ(d.cause, "maintenance:mw-1");
    EXPECT_EQ(d.reason, "defer: maintenance mw-1 until 2026-11-30T00:00:00Z, 1 nodes free outside it, job needs 2 "
                        "(MaintenanceAction=steer), class=inference consent=default, 0.8 kW");
    EXPECT_EQ(d.annotation(), "defer until=2026-11-30T00:00:00Z cause=maintenance:mw-1 reason=" + d.reason);
    EXPECT_EQ(d.message, "m2g: " + d.reason);
}

TEST_F(Admission, MaintenanceDeferralChainsThroughWindows)
{
    window("mw-1", kNow - kHour, kNow + kHour, {"nvl01", "nvl02"});
    window("mw-2", kNow + 90 * kMin, kNow + 3 * kHour, {"nvl02"});
    window("mw-3", kNow + 10 * kHour, kNow + 11 * kHour, {"nvl02"});
    AdmissionRequest r = job(WorkloadClass::Training, 8);
    r.candidate_nodes = rack_nodes({"nvl02"});
    r.time_limit_s = kHour;
    const Decision d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.verdict, Verdict::Defer);
    EXPECT_EQ(d.begin_time, kNow + 3 * kHour);  // past mw-1, then past mw-2; mw-3 is far enough
    EXPECT_EQ(d.cause, "maintenance:mw-1");
}

TEST_F(Admission, MaintenanceActionDeferNeverSteers)
{
    m.admission.maintenance_action = MaintenanceAction::Defer;
    window("mw-1", kNow + 30 * kMin, kNow + 4 * kHour, {"nvl01"});
    const Decision d = decide(m, view(), job(WorkloadClass::Training, 8), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Defer);
    EXPECT_EQ(d.begin_time, kNow + 4 * kHour);
    EXPECT_TRUE(d.avoid_nodes.empty());
}

TEST_F(Admission, MaintenanceAfterTheUsersOwnBegin)
{
    window("mw-1", kNow, kNow + kHour, {"nvl01"});
    AdmissionRequest r = job(WorkloadClass::Training, 8);
    r.candidate_nodes = rack_nodes({"nvl01"});
    r.user_begin = kNow + 2 * kHour;  // the window is over by then
    EXPECT_EQ(decide(m, view(), r, nullptr).verdict, Verdict::Admit);
}

TEST_F(Admission, MaintenancePastTheDeadlineRejects)
{
    window("mw-1", kNow + 90 * kMin, kNow + 4 * kHour, {"nvl01"});
    AdmissionRequest r = job(WorkloadClass::Training, 8, DeferConsent::Until);
    r.intent.defer_until = kNow + 2 * kHour;
    r.candidate_nodes = rack_nodes({"nvl01"});
    r.time_limit_s = 2 * kHour;
    Decision d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.verdict, Verdict::Reject);
    EXPECT_EQ(d.cause, "maintenance:mw-1");
    EXPECT_EQ(d.message,
              "m2g: maintenance window mw-1 (2026-11-29T21:30:00Z to 2026-11-30T00:00:00Z) covers the nodes this job "
              "can use within its time limit, and the job may not wait past its deadline 2026-11-29T22:00:00Z "
              "(--m2g-defer=until). Shorten --time to at most 90 minutes or move the deadline "
              "(--m2g-defer=until=...) past 2026-11-30T00:00:00Z.");
    EXPECT_EQ(d.reason, "reject: maintenance mw-1 lasts until 2026-11-30T00:00:00Z, past the deadline "
                        "2026-11-29T22:00:00Z, class=training consent=until=2026-11-29T22:00:00Z, 3.3 kW");
    EXPECT_EQ(d.annotation(), "reject reason=" + d.reason);
    // A window already under way: only the deadline can move.
    s.maintenance[0].start = kNow - kHour;
    d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.message,
              "m2g: maintenance window mw-1 (2026-11-29T19:00:00Z to 2026-11-30T00:00:00Z) covers the nodes this job "
              "can use within its time limit, and the job may not wait past its deadline 2026-11-29T22:00:00Z "
              "(--m2g-defer=until). Move the deadline (--m2g-defer=until=...) past 2026-11-30T00:00:00Z.");
}

// ---- 2. fail-safe hold -------------------------------------------------------

TEST_F(Admission, FailSafeHoldDefersDeferrableWork)
{
    Decision d = decide(m, held(), job(WorkloadClass::Training, 12), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Defer);
    EXPECT_EQ(d.begin_time, kNow + 300);
    EXPECT_EQ(d.cause, "failsafe");
    EXPECT_EQ(d.reason, "defer: signals feed stale (SignalsFailSafe=defer holds deferrable work), re-check at "
                        "2026-11-29T20:05:00Z, class=training consent=default, 5.0 kW");
    // Non-deferrable work carries on.
    d = decide(m, held(), job(WorkloadClass::Inference, 12), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    // The deadline caps the hold ...
    AdmissionRequest r = job(WorkloadClass::Training, 12, DeferConsent::Until);
    r.intent.defer_until = kNow + 100;
    EXPECT_EQ(decide(m, held(), r, nullptr).begin_time, kNow + 100);
    // ... and once reached, the job goes.
    r.intent.defer_until = kNow;
    d = decide(m, held(), r, nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.reason, "admit: fail-safe hold skipped: deadline 2026-11-29T20:00:00Z reached, class=training "
                        "consent=until=2026-11-29T20:00:00Z, 5.0 kW");
}

// ---- 3. curtailment events ---------------------------------------------------

TEST_F(Admission, SiteEventDefersDeferrableWorkToItsEnd)
{
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    const Decision d = decide(m, view(), job(WorkloadClass::Training, 12), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Defer);
    EXPECT_EQ(d.begin_time, kNow + 2 * kHour);
    EXPECT_EQ(d.cause, "dr-1");
    EXPECT_EQ(d.reason, "defer: DR event dr-1 (site -25%) until 2026-11-29T22:00:00Z, class=training consent=default, "
                        "5.0 kW");
    EXPECT_EQ(d.annotation(), "defer until=2026-11-29T22:00:00Z cause=dr-1 reason=" + d.reason);
    EXPECT_EQ(d.message, "m2g: " + d.reason);
}

TEST_F(Admission, LatestSiteEventWinsAndFutureEventsDoNot)
{
    site_event("dr-1", kNow - kHour, kNow + kHour, 25);
    site_event("dr-2", kNow - kMin, kNow + 3 * kHour, 0);
    s.events.back().curtail_kw = 100;
    site_event("dr-3", kNow + 5 * kHour, kNow + 6 * kHour, 50);  // not yet active
    const Decision d = decide(m, view(), job(WorkloadClass::Batch, 4), nullptr);
    EXPECT_EQ(d.begin_time, kNow + 3 * kHour);
    EXPECT_EQ(d.reason, "defer: DR event dr-2 (site -100 kW) until 2026-11-29T23:00:00Z, class=batch consent=default, "
                        "1.5 kW");
    s.events.clear();
    site_event("dr-3", kNow + 5 * kHour, kNow + 6 * kHour, 50);
    EXPECT_EQ(decide(m, view(), job(WorkloadClass::Batch, 4), nullptr).verdict, Verdict::Admit);
}

TEST_F(Admission, DeadlineBeforeEventEnd)
{
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    AdmissionRequest r = job(WorkloadClass::Training, 12, DeferConsent::Until);
    r.intent.defer_until = kNow + kHour;
    Decision d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.verdict, Verdict::Defer);
    EXPECT_EQ(d.begin_time, kNow + kHour);
    EXPECT_EQ(d.reason, "defer: DR event dr-1 (site -25%) until 2026-11-29T22:00:00Z, deadline 2026-11-29T21:00:00Z "
                        "before event end, class=training consent=until=2026-11-29T21:00:00Z, 5.0 kW");
    // At the deadline (the release thread decides again) the job runs, paced.
    m.admission.pace_gpus_per_interval = 8;
    Pacer pc;
    pc.reserve(m.admission, kNow + kHour, 8, 3.3);
    r.now = kNow + kHour;
    d = decide(m, view(), r, &pc);
    EXPECT_EQ(d.verdict, Verdict::Pace);
    EXPECT_EQ(d.begin_time, kNow + kHour + 60);
    EXPECT_EQ(d.reason, "pace: deadline 2026-11-29T21:00:00Z before event end during DR event dr-1 (site -25%) until "
                        "2026-11-29T22:00:00Z, GPUs start at 2026-11-29T21:01:00Z (RampRateKWPerMin=0 "
                        "PaceGpusPerInterval=8 PaceIntervalSec=60), class=training "
                        "consent=until=2026-11-29T21:00:00Z, 5.0 kW");
    EXPECT_EQ(d.annotation(), "pace until=2026-11-29T21:01:00Z cause=dr-1 reason=" + d.reason);
}

TEST_F(Admission, RackEventsAreLeftToPlacement)
{
    rack_event("dr-r3", "nvl03", kNow - kHour, kNow + kHour, 40);
    const Decision d = decide(m, view(), job(WorkloadClass::Training, 12), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.reason, "admit: DR event dr-r3 (rack nvl03 -40%) enforced at placement, class=training "
                        "consent=default, 5.0 kW");
}

TEST_F(Admission, NonDeferrableWorkRunsDuringEvents)
{
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    // No pacing configured: admitted, and the reason says why.
    Decision d = decide(m, view(), job(WorkloadClass::Inference, 8), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.cause, "dr-1");
    EXPECT_EQ(d.reason, "admit: non-deferrable during DR event dr-1 (site -25%) until 2026-11-29T22:00:00Z, "
                        "class=inference consent=default, 0.8 kW");
    // Pacing: 8 GPUs per minute.
    m.admission.pace_gpus_per_interval = 8;
    Pacer pc;
    d = decide(m, view(), job(WorkloadClass::Inference, 8), &pc);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.reason, "admit: non-deferrable during DR event dr-1 (site -25%) until 2026-11-29T22:00:00Z, paced: "
                        "this interval has room, class=inference consent=default, 0.8 kW");
    d = decide(m, view(), job(WorkloadClass::Agentic, 4), &pc);
    EXPECT_EQ(d.verdict, Verdict::Pace);
    EXPECT_EQ(d.begin_time, kNow + 60);
    EXPECT_EQ(d.annotation(), "pace until=2026-11-29T20:01:00Z cause=dr-1 reason=pace: non-deferrable during DR event "
                              "dr-1 (site -25%) until 2026-11-29T22:00:00Z, GPUs start at 2026-11-29T20:01:00Z "
                              "(RampRateKWPerMin=0 PaceGpusPerInterval=8 PaceIntervalSec=60), class=agentic "
                              "consent=default, 0.4 kW");
    // A dry run (no pacer) books nothing and admits.
    EXPECT_EQ(decide(m, view(), job(WorkloadClass::Agentic, 4), nullptr).verdict, Verdict::Admit);
}

TEST_F(Admission, NoDeferDuringAnEventIsRejected)
{
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    m.admission.defer_exempt_accounts = {"ops", "oncall"};
    m.admission.defer_exempt_groups = {"sre"};
    const Decision d = decide(m, view(), job(WorkloadClass::Training, 12, DeferConsent::No), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Reject);
    EXPECT_EQ(d.cause, "dr-1");
    EXPECT_EQ(d.message,
              "m2g: demand-response event dr-1 is active until 2026-11-29T22:00:00Z; account acme may not use "
              "--m2g-defer=no during events (exempt accounts: ops,oncall, groups: sre). Submit with --m2g-defer=ok, "
              "or --m2g-defer=until=now+120m (or any time after the event), or after 2026-11-29T22:00:00Z.");
    EXPECT_EQ(d.reason, "reject: DR event dr-1 (site -25%) until 2026-11-29T22:00:00Z, account acme not exempt from "
                        "deferral (NoDeferAction=reject), class=training consent=no, 5.0 kW");
    EXPECT_EQ(d.annotation(), "reject reason=" + d.reason);
    // Nobody exempt, default account.
    m.admission.defer_exempt_accounts.clear();
    m.admission.defer_exempt_groups.clear();
    AdmissionRequest r = job(WorkloadClass::Inference, 4, DeferConsent::No);
    r.account.clear();
    r.now = kNow + 30;
    EXPECT_EQ(decide(m, view(), r, nullptr).message,
              "m2g: demand-response event dr-1 is active until 2026-11-29T22:00:00Z; account (default) may not use "
              "--m2g-defer=no during events (exempt accounts: none, groups: none). Submit with --m2g-defer=ok, "
              "or --m2g-defer=until=now+120m (or any time after the event), or after 2026-11-29T22:00:00Z.");
}

TEST_F(Admission, ExemptAccountsAndGroupsMayRefuseDeferral)
{
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    m.admission.defer_exempt_accounts = {"ops"};
    m.admission.defer_exempt_groups = {"sre"};
    AdmissionRequest r = job(WorkloadClass::Training, 12, DeferConsent::No);
    r.account = "ops";
    Decision d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.reason, "admit: non-deferrable during DR event dr-1 (site -25%) until 2026-11-29T22:00:00Z, "
                        "class=training consent=no, 5.0 kW");
    r.account = "acme";
    r.groups = {"users", "sre"};
    EXPECT_EQ(decide(m, view(), r, nullptr).verdict, Verdict::Admit);
    // Without an event, --m2g-defer=no needs no exemption.
    s.events.clear();
    r.groups = {"users"};
    EXPECT_EQ(decide(m, view(), r, nullptr).verdict, Verdict::Admit);
}

TEST_F(Admission, ExemptionsAreAudited)
{
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    m.admission.defer_exempt_accounts = {"ops"};
    AdmissionRequest r = job(WorkloadClass::Training, 12, DeferConsent::No);
    r.account = "ops";
    EXPECT_EQ(decide(m, view(), r, nullptr).audit,
              std::vector<std::string>{
                  "--m2g-defer=no honoured during DR event dr-1 for exempt account ops (DeferExemptAccounts=)"});
    // Deferrable work is no override.
    EXPECT_TRUE(decide(m, view(), job(WorkloadClass::Training, 12), nullptr).audit.empty());
}

// Reserved tags and classes: privileged accounts and groups only, audited.
TEST_F(Admission, ReservedIntentNeedsPrivilege)
{
    m.admission.privileged_accounts = {"ops"};
    m.admission.privileged_groups = {"hpcadmin"};
    m.admission.privileged_tags = {"priority"};
    m.admission.privileged_classes = {"benchmark"};
    AdmissionRequest r = job(WorkloadClass::Benchmark, 4);
    r.intent.tags = {{"team", "llm"}, {"priority", "high"}};
    EXPECT_EQ(reserved_uses(m.admission, r.intent),
              (std::vector<std::string>{"class benchmark", "tag priority=high"}));
    r.account = "acme";
    r.user = "alice";
    r.groups = {"users"};
    Decision d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.verdict, Verdict::Reject);
    EXPECT_EQ(d.message,
              "m2g: class benchmark, tag priority=high is reserved for privileged accounts (ops) and Unix groups "
              "(hpcadmin), see PrivilegedTags= and PrivilegedClasses= in m2g.conf; account acme (user alice) is not "
              "one of them. Submit without it, or ask an administrator.");
    EXPECT_EQ(d.reason, "reject: class benchmark, tag priority=high reserved, account acme not privileged");
    EXPECT_TRUE(d.audit.empty());
    r.groups = {"users", "hpcadmin"};
    d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.audit, std::vector<std::string>{
                           "class benchmark, tag priority=high (reserved) allowed for group hpcadmin (PrivilegedGroups=)"});
    r.groups.clear();
    r.account = "ops";
    EXPECT_EQ(decide(m, view(), r, nullptr).audit,
              std::vector<std::string>{
                  "class benchmark, tag priority=high (reserved) allowed for account ops (PrivilegedAccounts=)"});
    // A re-evaluation does not check again; unreserved intent is nobody's business.
    r.account = "acme";
    r.check_reserved = false;
    EXPECT_EQ(decide(m, view(), r, nullptr).verdict, Verdict::Admit);
    EXPECT_EQ(decide(m, view(), job(WorkloadClass::Training, 4), nullptr).verdict, Verdict::Admit);
}

TEST_F(Admission, NoDeferConvertedToDeferrable)
{
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    m.admission.no_defer_action = NoDeferAction::Convert;
    const Decision d = decide(m, view(), job(WorkloadClass::Inference, 8, DeferConsent::No), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Defer);
    EXPECT_TRUE(d.converted);
    EXPECT_TRUE(d.deferrable);
    EXPECT_EQ(d.begin_time, kNow + 2 * kHour);
    EXPECT_EQ(d.reason, "defer: DR event dr-1 (site -25%) until 2026-11-29T22:00:00Z, --m2g-defer=no converted to "
                        "deferrable (NoDeferAction=convert), class=inference consent=no, 0.8 kW");
}

// ---- 4. site headroom ----------------------------------------------------------

TEST_F(Admission, SiteHeadroom)
{
    s.site.draw_kw = 1196;  // 4 kW free of 1200
    Decision d = decide(m, view(), job(WorkloadClass::Training, 12), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Defer);
    EXPECT_EQ(d.begin_time, kNow + 300);
    EXPECT_EQ(d.cause, "power:site");
    EXPECT_EQ(d.reason, "defer: site power 4.0 kW free of 1200.0 kW, job needs 5.0 kW, re-check at "
                        "2026-11-29T20:05:00Z, class=training consent=default, 5.0 kW");
    EXPECT_EQ(d.annotation(), "defer until=2026-11-29T20:05:00Z cause=power:site reason=" + d.reason);
    m.admission.power_retry_sec = 60;
    EXPECT_EQ(decide(m, view(), job(WorkloadClass::Training, 12), nullptr).begin_time, kNow + 60);
    // A deadline caps the re-check.
    AdmissionRequest r = job(WorkloadClass::Training, 12, DeferConsent::Until);
    r.intent.defer_until = kNow + 30;
    EXPECT_EQ(decide(m, view(), r, nullptr).begin_time, kNow + 30);
    // Non-deferrable work is admitted, with a note.
    d = decide(m, view(), job(WorkloadClass::Inference, 48), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.reason, "admit: site power 4.0 kW free of 1200.0 kW, job needs 4.8 kW, non-deferrable, "
                        "class=inference consent=default, 4.8 kW");
    // Enough room: admitted; unknown draw: no check.
    s.site.draw_kw = 1000;
    EXPECT_EQ(decide(m, view(), job(WorkloadClass::Training, 12), nullptr).verdict, Verdict::Admit);
    s.site.draw_kw = -1;
    EXPECT_EQ(decide(m, view(), job(WorkloadClass::Training, 12), nullptr).verdict, Verdict::Admit);
    // The feed's budget overrides m2g.conf's.
    s.site.budget_kw = 1000;
    s.site.draw_kw = 998;
    EXPECT_EQ(decide(m, view(), job(WorkloadClass::Training, 12), nullptr).verdict, Verdict::Defer);
}

TEST_F(Admission, AJobLargerThanTheSiteIsRejected)
{
    const char* want =
        "m2g: this job needs an estimated 1239.0 kW (3000 GPUs x 413 W), more than the site's power budget of 1200.0 "
        "kW, so it can never start. Ask for fewer GPUs, or if the estimate is too high set a recipe (--m2g-recipe) "
        "or PowerPerGpuW for its class in m2g.conf.";
    Decision d = decide(m, view(), job(WorkloadClass::Training, 3000), nullptr);
    EXPECT_EQ(d.verdict, Verdict::Reject);
    EXPECT_EQ(d.cause, "power:site");
    EXPECT_EQ(d.message, want);
    EXPECT_EQ(d.reason, "reject: job needs 1239.0 kW, site budget 1200.0 kW, class=training consent=default, 1239.0 kW");
    // m2g.conf's budget alone, without a feed.
    EXPECT_EQ(decide(m, SignalsView{}, job(WorkloadClass::Training, 3000), nullptr).message, want);
    // A recipe's lower estimate fits.
    AdmissionRequest r = job(WorkloadClass::Training, 3000);
    r.intent.power_w_per_gpu = 300;
    EXPECT_EQ(decide(m, view(), r, nullptr).verdict, Verdict::Admit);
    // During an event the budget is lower for a while only: no rejection.
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    EXPECT_EQ(decide(m, view(), job(WorkloadClass::Training, 3000), nullptr).verdict, Verdict::Defer);
}

TEST_F(Admission, UserBeginAfterTheEventAdmits)
{
    site_event("dr-1", kNow - kHour, kNow + 2 * kHour, 25);
    AdmissionRequest r = job(WorkloadClass::Training, 12);
    r.user_begin = kNow + 3 * kHour;
    const Decision d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.verdict, Verdict::Admit);
    EXPECT_EQ(d.begin_time, 0);
}

TEST_F(Admission, NeverThrowsOnOddViews)
{
    // Undersized per-index vectors, out-of-range node indices, empty ids.
    s.racks.clear();
    s.rows.clear();
    s.thermal.clear();
    MaintenanceWindow w;
    w.id = "mw;x]";
    w.start = kNow;
    w.end = kNow + kHour;
    w.nodes = {-5, 100000, 3};
    s.maintenance.push_back(w);
    s.node_down = {1};
    site_event("", kNow - 1, kNow + 1, 10);
    AdmissionRequest r = job(WorkloadClass::Training, 12);
    r.candidate_nodes = {-1, 3, 999999};
    const Decision d = decide(m, view(), r, nullptr);
    EXPECT_EQ(d.reason.find_first_of(";]\n"), std::string::npos) << d.reason;
    EXPECT_EQ(d.annotation().find_first_of(";]\n"), std::string::npos) << d.annotation();
    std::vector<uint8_t> usable(5, 1);  // shorter than the model
    std::vector<double> heat;
    const GateResult g = gate(m, view(), GateRequest{}, {}, nullptr, usable, heat);
    EXPECT_EQ(heat.size(), m.domains.size());
    EXPECT_EQ(g.reason.find_first_of(";]\n"), std::string::npos) << g.reason;
}

// ---- gate: live enforcement at placement ------------------------------------

namespace {

GateRequest gate_job(WorkloadClass c, int nodes, DeferConsent consent = DeferConsent::Unset)
{
    GateRequest r;
    r.intent.workload_class = c;
    r.intent.defer = consent;
    r.gpus_per_node = 4;
    r.nodes = nodes;
    r.time_limit_s = kHour;
    r.now = kNow;
    return r;
}

int count(const std::vector<uint8_t>& v)
{
    int n = 0;
    for (uint8_t x : v)
        n += x != 0;
    return n;
}

}  // namespace

TEST_F(Admission, GateHeatPerRack)
{
    auto set = [&](const std::string& node, double c, ThermalState st) {
        s.thermal[m.find_node(node)] = NodeThermal{true, c, st};
    };
    set("r02n01", 50, ThermalState::Ok);
    set("r02n02", 60, ThermalState::Warm);
    set("r03n01", 40, ThermalState::Ok);
    set("r03n02", 80, ThermalState::Hot);
    set("r04n05", 90, ThermalState::Critical);
    std::vector<uint8_t> usable(m.nodes.size(), 1);
    std::vector<double> heat;
    const GateResult g = gate(m, view(), gate_job(WorkloadClass::Inference, 2), {}, nullptr, usable, heat);
    ASSERT_EQ(heat.size(), 8u);
    EXPECT_EQ(heat[0], 0);  // unknown
    EXPECT_EQ(heat[1], 55);
    EXPECT_EQ(heat[2], 1060);  // a hot node: after every other rack
    EXPECT_EQ(heat[3], 1090);
    EXPECT_FALSE(g.blocked);
    EXPECT_EQ(g.reason, "");
    EXPECT_EQ(g.wait, WaitCause::None);  // nothing to say
    EXPECT_EQ(g.trimmed_nodes, 0);
    // No snapshot: all zero.
    gate(m, SignalsView{}, gate_job(WorkloadClass::Inference, 2), {}, nullptr, usable, heat);
    EXPECT_EQ(heat, std::vector<double>(8, 0.0));
}

TEST_F(Admission, GateMaintenanceAndDownNodesForEveryJob)
{
    window("mw-1", kNow + 30 * kMin, kNow + 2 * kHour, {"nvl01"});
    window("mw-2", kNow + 2 * kHour, kNow + 3 * kHour, {"nvl02"});  // after the job's hour
    s.node_down.assign(m.nodes.size(), 0);
    s.node_down[m.find_node("r05n03")] = 1;
    s.node_down[m.find_node("r05n04")] = 1;
    std::vector<uint8_t> usable(m.nodes.size(), 1);
    usable[m.find_node("r01n01")] = 0;  // not offered: not counted as trimmed
    std::vector<double> heat;
    GateResult g = gate(m, view(), gate_job(WorkloadClass::Inference, 2), {}, nullptr, usable, heat);
    EXPECT_FALSE(g.blocked);
    EXPECT_EQ(g.trimmed_nodes, 19);
    EXPECT_EQ(g.reason, "maintenance mw-1: 17 nodes avoided, 2 nodes down");
    EXPECT_EQ(g.wait, WaitCause::Maintenance);  // what the reason leads with
    EXPECT_TRUE(g.over.empty());
    EXPECT_EQ(count(usable), 144 - 20);
    EXPECT_TRUE(usable[m.find_node("r02n01")]);
    // Unlimited time: mw-2 too.
    usable.assign(m.nodes.size(), 1);
    GateRequest r = gate_job(WorkloadClass::Inference, 2);
    r.time_limit_s = 0;
    g = gate(m, view(), r, {}, nullptr, usable, heat);
    EXPECT_EQ(g.trimmed_nodes, 38);
    // No window: the down nodes lead.
    s.maintenance.clear();
    usable.assign(m.nodes.size(), 1);
    g = gate(m, view(), gate_job(WorkloadClass::Inference, 2), {}, nullptr, usable, heat);
    EXPECT_EQ(g.reason, "2 nodes down");
    EXPECT_EQ(g.wait, WaitCause::NodesDown);
}

TEST_F(Admission, GateTrimsRacksOverBudget)
{
    s.racks[0].draw_kw = 125;  // nvl01: 7 kW free of 132 (m2g.conf)
    s.racks[1].draw_kw = 100;  // nvl02: 32 kW free, 20 kW already started there
    s.racks[2].budget_kw = 100;
    s.racks[2].draw_kw = 100;  // nvl03: full by the feed's own budget
    s.racks[3].draw_kw = 0;    // nvl04: plenty
    rack_event("dr-r5", "nvl05", kNow - kHour, kNow + kHour, 50);
    s.racks[4].draw_kw = 60;  // nvl05: 132 x 50% = 66, 6 kW free
    std::vector<double> started(8, 0.0);
    started[1] = 20;
    std::vector<uint8_t> usable(m.nodes.size(), 1);
    std::vector<double> heat;
    // training: 4 x 413 W = 1.652 kW per node.
    const GateResult g = gate(m, view(), gate_job(WorkloadClass::Training, 2), started, nullptr, usable, heat);
    EXPECT_FALSE(g.blocked);
    EXPECT_EQ(g.reason, "rack nvl01 over budget: 7.0 kW free, job needs 1.7 kW/node, "
                        "rack nvl02 over budget: 12.0 kW free, job needs 1.7 kW/node, "
                        "rack nvl03 over budget: 0.0 kW free, job needs 1.7 kW/node, "
                        "rack nvl05 over budget: 6.0 kW free, job needs 1.7 kW/node");
    EXPECT_EQ(g.wait, WaitCause::RackPower);
    EXPECT_EQ(g.over, (std::vector<std::string>{"nvl01", "nvl02", "nvl03", "nvl05"}));
    auto in_rack = [&](int d) {
        int n = 0;
        for (int i : m.domains[d].nodes)
            n += usable[i] != 0;
        return n;
    };
    EXPECT_EQ(in_rack(0), 4);  // floor(7 / 1.652)
    EXPECT_TRUE(usable[m.find_node("r01n01")]);  // the first ones in model order stay
    EXPECT_FALSE(usable[m.find_node("r01n05")]);
    EXPECT_EQ(in_rack(1), 7);
    EXPECT_EQ(in_rack(2), 0);
    EXPECT_EQ(in_rack(3), 18);
    EXPECT_EQ(in_rack(4), 3);
    EXPECT_EQ(g.trimmed_nodes, 14 + 11 + 18 + 15);
    // Non-deferrable work is not trimmed for power.
    usable.assign(m.nodes.size(), 1);
    EXPECT_EQ(gate(m, view(), gate_job(WorkloadClass::Inference, 2), started, nullptr, usable, heat).trimmed_nodes, 0);
    // Nor is deferrable work whose deadline has come.
    GateRequest r = gate_job(WorkloadClass::Training, 2, DeferConsent::Until);
    r.intent.defer_until = kNow;
    EXPECT_EQ(gate(m, view(), r, started, nullptr, usable, heat).trimmed_nodes, 0);
}

TEST_F(Admission, GateClearsRowsThatCannotTakeTheJob)
{
    const int row1 = 0, row2 = 1;
    ASSERT_EQ(m.fault_domains[row1].name, "row1");
    s.rows[row1].draw_kw = 556;  // 4 kW free of 560
    s.rows[row2].draw_kw = 500;
    std::vector<double> started(8, 0.0);
    std::vector<uint8_t> usable(m.nodes.size(), 1);
    std::vector<double> heat;
    // 2 nodes x 1.652 kW = 3.3 kW: fits row1.
    GateResult g = gate(m, view(), gate_job(WorkloadClass::Training, 2), started, nullptr, usable, heat);
    EXPECT_EQ(g.trimmed_nodes, 0);
    // 3 nodes = 5.0 kW: row1 is out.
    g = gate(m, view(), gate_job(WorkloadClass::Training, 3), started, nullptr, usable, heat);
    EXPECT_EQ(g.trimmed_nodes, 72);
    EXPECT_EQ(g.reason, "row row1 over budget: 4.0 kW free, job needs 5.0 kW");
    EXPECT_EQ(g.wait, WaitCause::RowPower);
    EXPECT_EQ(g.over, std::vector<std::string>{"row1"});
    EXPECT_FALSE(usable[m.find_node("r04n18")]);
    EXPECT_TRUE(usable[m.find_node("r05n01")]);
    // Power started since the snapshot counts against the row.
    usable.assign(m.nodes.size(), 1);
    started[4] = 58;  // nvl05, in row2: 2 kW left
    g = gate(m, view(), gate_job(WorkloadClass::Training, 2), started, nullptr, usable, heat);
    EXPECT_EQ(g.reason, "row row2 over budget: 2.0 kW free, job needs 3.3 kW");
}

TEST_F(Admission, GateBlocksOnSitePowerHoldAndPacing)
{
    site_event("dr-1", kNow - kHour, kNow + kHour, 25);  // 1200 -> 900 kW
    s.site.draw_kw = 899;
    std::vector<uint8_t> usable(m.nodes.size(), 1);
    std::vector<double> heat;
    GateResult g = gate(m, view(), gate_job(WorkloadClass::Training, 2), {}, nullptr, usable, heat);
    EXPECT_TRUE(g.blocked);
    EXPECT_EQ(g.reason, "site power: 1.0 kW free of 900.0 kW (event dr-1 -25%)");
    EXPECT_EQ(g.wait, WaitCause::SitePower);
    EXPECT_EQ(g.trimmed_nodes, 0);
    // Power started since the snapshot counts too.
    s.site.draw_kw = 880;
    std::vector<double> started(8, 0.0);
    started[7] = 17;
    EXPECT_EQ(gate(m, view(), gate_job(WorkloadClass::Training, 2), started, nullptr, usable, heat).reason,
              "site power: 3.0 kW free of 900.0 kW (event dr-1 -25%)");
    EXPECT_FALSE(gate(m, view(), gate_job(WorkloadClass::Training, 1), started, nullptr, usable, heat).blocked);
    // Non-deferrable work is not blocked.
    EXPECT_FALSE(gate(m, view(), gate_job(WorkloadClass::Inference, 2), started, nullptr, usable, heat).blocked);
    // No event: no "(event ...)".
    s.events.clear();
    s.site.draw_kw = 1199;
    EXPECT_EQ(gate(m, view(), gate_job(WorkloadClass::Training, 2), {}, nullptr, usable, heat).reason,
              "site power: 1.0 kW free of 1200.0 kW");

    // Fail-safe hold.
    s.site.draw_kw = -1;
    g = gate(m, held(), gate_job(WorkloadClass::Training, 2), {}, nullptr, usable, heat);
    EXPECT_TRUE(g.blocked);
    EXPECT_EQ(g.reason, "signals stale/missing, fail-safe defer holds deferrable work");
    EXPECT_EQ(g.wait, WaitCause::Failsafe);
    EXPECT_FALSE(gate(m, held(), gate_job(WorkloadClass::Inference, 2), {}, nullptr, usable, heat).blocked);

    // Pacing, only during curtailment.
    m.admission.pace_gpus_per_interval = 8;
    Pacer pc;
    pc.book(m.admission, kNow, 8, 3.3);
    EXPECT_FALSE(gate(m, view(), gate_job(WorkloadClass::Training, 2), {}, &pc, usable, heat).blocked);
    rack_event("dr-r2", "nvl02", kNow - kHour, kNow + kHour, 10);
    g = gate(m, view(), gate_job(WorkloadClass::Training, 2), {}, &pc, usable, heat);
    EXPECT_TRUE(g.blocked);
    EXPECT_EQ(g.reason, "pacing: 8 GPUs already started this interval");
    EXPECT_EQ(g.wait, WaitCause::Pacing);
    EXPECT_FALSE(gate(m, view(), gate_job(WorkloadClass::Training, 2), {}, nullptr, usable, heat).blocked);
    // The ramp limit is about all starts: non-deferrable work is paced too.
    g = gate(m, view(), gate_job(WorkloadClass::Training, 2, DeferConsent::No), {}, &pc, usable, heat);
    EXPECT_TRUE(g.blocked);
    EXPECT_EQ(g.reason, "pacing: 8 GPUs already started this interval");
    EXPECT_TRUE(gate(m, view(), gate_job(WorkloadClass::Inference, 2), {}, &pc, usable, heat).blocked);
    // The next interval has room again.
    GateRequest later = gate_job(WorkloadClass::Inference, 2);
    later.now = kNow + m.admission.pace_interval_sec;
    EXPECT_FALSE(gate(m, view(), later, {}, &pc, usable, heat).blocked);
}

// Under CurtailMode=enforce, work m2g may not curtail that would put the
// site over its budget is not blocked, but short of room: the caller holds
// it (wait=power-room) for at most CurtailStartWaitSec while m2g-curtaild
// makes room. During an event its start counts at the highest class
// estimate, as the planner counts a start the meter has not seen.
TEST_F(Admission, GateFindsWorkItMayNotCurtailShortOfRoom)
{
    site_event("dr-1", kNow - kHour, kNow + kHour, 25);  // 1200 -> 900 kW
    s.site.draw_kw = 890;
    std::vector<uint8_t> usable(m.nodes.size(), 1);
    std::vector<double> heat;
    // Off (the default) and monitor: nothing to wait for.
    GateResult g = gate(m, view(), gate_job(WorkloadClass::Inference, 2), {}, nullptr, usable, heat);
    EXPECT_FALSE(g.blocked);
    EXPECT_EQ(g.room_short_kw, 0);
    m.admission.curtail_mode = CurtailMode::Monitor;
    EXPECT_EQ(gate(m, view(), gate_job(WorkloadClass::Inference, 2), {}, nullptr, usable, heat).room_short_kw, 0);
    m.admission.curtail_mode = CurtailMode::Enforce;
    // 8 GPUs x 440 W (benchmark's estimate, the highest) = 3.52 kW; 10 kW free.
    EXPECT_EQ(gate(m, view(), gate_job(WorkloadClass::Inference, 2), {}, nullptr, usable, heat).room_short_kw, 0);
    // 4 nodes: 7.04 kW, and 5 kW started since the reading: 2.0 kW short.
    std::vector<double> started(8, 0.0);
    started[3] = 5;
    g = gate(m, view(), gate_job(WorkloadClass::Inference, 4), started, nullptr, usable, heat);
    EXPECT_FALSE(g.blocked);
    EXPECT_NEAR(g.room_short_kw, 7.04 - 5.0, 1e-9);
    EXPECT_EQ(g.room_since, kNow);
    EXPECT_EQ(g.room_reason, "site power: 5.0 kW free of 900.0 kW, job needs 7.0 kW, m2g-curtaild is making room "
                             "(it starts by 2026-11-29T20:00:30Z regardless)");
    // The wait runs from its start: CurtailStartWaitSec later it is over.
    GateRequest r = gate_job(WorkloadClass::Inference, 4);
    r.room_since = kNow - 29;
    EXPECT_GT(gate(m, view(), r, started, nullptr, usable, heat).room_short_kw, 0);
    r.room_since = kNow - 30;
    EXPECT_EQ(gate(m, view(), r, started, nullptr, usable, heat).room_short_kw, 0);
    // --m2g-defer=no is work m2g may not curtail too; deferrable work is
    // blocked outright (site-power), not held for room.
    EXPECT_GT(gate(m, view(), gate_job(WorkloadClass::Training, 4, DeferConsent::No), started, nullptr, usable, heat)
                  .room_short_kw,
              0);
    g = gate(m, view(), gate_job(WorkloadClass::Training, 4), started, nullptr, usable, heat);
    EXPECT_TRUE(g.blocked);
    EXPECT_EQ(g.wait, WaitCause::SitePower);
    EXPECT_EQ(g.room_short_kw, 0);
    // Outside events a start counts at its class's estimate (inference 101 W).
    s.events.clear();
    s.site.draw_kw = 1199;
    g = gate(m, view(), gate_job(WorkloadClass::Inference, 4), {}, nullptr, usable, heat);
    EXPECT_NEAR(g.room_short_kw, 16 * 0.101 - 1.0, 1e-9);
    // 0 turns it off; a stale feed's draw is not trusted.
    m.admission.curtail_start_wait_sec = 0;
    EXPECT_EQ(gate(m, view(), gate_job(WorkloadClass::Inference, 4), {}, nullptr, usable, heat).room_short_kw, 0);
    m.admission.curtail_start_wait_sec = 30;
    EXPECT_EQ(gate(m, held(), gate_job(WorkloadClass::Inference, 4), {}, nullptr, usable, heat).room_short_kw, 0);
}

// Pre-event ramp: a deferrable job that would still run when an announced
// event starts is judged against the event's budget; one that ends before
// it, and non-deferrable work, are not.
TEST_F(Admission, GateJudgesJobsRunningIntoAnAnnouncedEventByItsBudget)
{
    site_event("dr-soon", kNow + 10 * kMin, kNow + 3 * kHour, 30);  // 1200 -> 840 kW from 20:10
    s.site.draw_kw = 838;
    std::vector<uint8_t> usable(m.nodes.size(), 1);
    std::vector<double> heat;
    GateRequest r = gate_job(WorkloadClass::Training, 2);  // 1 h limit: runs into the event
    GateResult g = gate(m, view(), r, {}, nullptr, usable, heat);
    EXPECT_TRUE(g.blocked);
    EXPECT_EQ(g.reason, "site power: 2.0 kW free of 840.0 kW (event dr-soon from 2026-11-29T20:10:00Z)");
    EXPECT_EQ(g.wait, WaitCause::SitePower);
    r.time_limit_s = 5 * kMin;  // done before it starts
    EXPECT_FALSE(gate(m, view(), r, {}, nullptr, usable, heat).blocked);
    r.time_limit_s = 0;  // unlimited: every announced event counts
    EXPECT_TRUE(gate(m, view(), r, {}, nullptr, usable, heat).blocked);
    EXPECT_FALSE(gate(m, view(), gate_job(WorkloadClass::Inference, 2), {}, nullptr, usable, heat).blocked);
    // The lowest budget over the span, and which event set it.
    const CurtailmentEvent* soon = nullptr;
    const SignalsView v = view();
    EXPECT_DOUBLE_EQ(lowest_budget_kw(m, v.snap.get(), EventScope::Site, kNone, kNow, kNow + kHour, &soon), 840);
    ASSERT_TRUE(soon);
    EXPECT_EQ(soon->id, "dr-soon");
    EXPECT_DOUBLE_EQ(lowest_budget_kw(m, v.snap.get(), EventScope::Site, kNone, kNow, kNow + kMin, &soon), 1200);
    EXPECT_EQ(soon, nullptr);
}
