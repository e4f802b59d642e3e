// `m2g simulate --policy m2g` runs select/m2g's PlacementSession and
// job_submit/m2g's AdmissionSession, not copies of their rules: the release
// thread's pass when an event starts, the power select/m2g books for jobs
// the feed has not reported yet, and what select/m2g leaves to cons_tres.
// On tiny.conf (test/fixtures/sim/): 8 nodes x 4 GPUs, four 2-node NVLink
// domains under two leaves; every job is --m2g-class=training (413 W/GPU,
// 6.608 kW per 16-GPU job).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/power/signals.hpp"
#include "tools/sim/sim.hpp"
#include "tools/sim/trace.hpp"

using namespace m2g;

namespace {

constexpr int64_t kEpoch = 1767225600;  // the trace's first submit, 2026-01-01T00:00:00Z

const Model& tiny()
{
    static const Model m = load_model(M2G_FIXTURES "/sim/tiny.conf");
    return m;
}

Trace trace_of(std::initializer_list<TraceJob> jobs)
{
    Trace t;
    t.format = "philly";
    t.jobs = jobs;
    return t;
}

const SimJobResult& job(const SimResult& r, const std::string& id)
{
    for (const SimJobResult& j : r.job_results)
        if (j.id == id)
            return j;
    throw Error("no job " + id);
}

Signals feed(const std::string& body)
{
    return parse_signals(R"({"schema":"m2g.signals/v1","generated_at":1767225600,)" + body + "}", "feed", tiny(),
                         kEpoch);
}

}  // namespace

// A (32 GPUs, the whole cluster) runs 0-1000; B (4 GPUs) queues at 50. A
// site event from 100 to 400: the release thread's next pass defers the
// queued, deferrable B to the event's end, where it is eligible again (and
// waits for A).
TEST(SimRelease, QueuedDeferrableJobIsDeferredWhenAnEventStarts)
{
    const Signals f = feed(R"("power":{"site":{"budget_kw":20}},
        "events":[{"id":"dr1","start":1767225700,"end":1767226000,"curtail_kw":5,"scope":"site"}])");
    SimOptions o;
    o.timeline = &f;
    const SimResult r = simulate(tiny(), trace_of({{"A", 0, 1000, 32}, {"B", 50, 100, 4}}), o);
    EXPECT_EQ(job(r, "A").start, 0);
    EXPECT_TRUE(job(r, "B").deferred);
    EXPECT_EQ(job(r, "B").admission.rfind("defer: DR event dr1 (site -5 kW) until 2026-01-01T00:06:40Z", 0), 0u)
        << job(r, "B").admission;
    EXPECT_EQ(job(r, "B").eligible, 400);
    EXPECT_EQ(job(r, "B").start, 1000);
    EXPECT_EQ(r.deferred, 1);

    // The baselines have no admission: B just waits for A.
    o.policy = SimPolicy::Tree;
    const SimResult t = simulate(tiny(), trace_of({{"A", 0, 1000, 32}, {"B", 50, 100, 4}}), o);
    EXPECT_FALSE(job(t, "B").deferred);
    EXPECT_EQ(job(t, "B").eligible, 50);
    EXPECT_EQ(job(t, "B").start, 1000);
}

// Site budget 14 kW. Three 16-GPU jobs in the first second (0, 0.4, 0.7 s):
// the feed's snapshot of that second reports none of them; select/m2g books
// each start until a later snapshot does. The second fits (6.608 kW booked,
// 7.392 kW free), the third does not (13.216 booked) and waits for the
// first to end at 100.
TEST(SimSessions, StartsAreBookedUntilTheFeedReportsThem)
{
    const Signals f = feed(R"("power":{"site":{"budget_kw":14}})");
    SimOptions o;
    o.timeline = &f;
    const SimResult r =
        simulate(tiny(), trace_of({{"a", 0, 100, 16}, {"b", 0.4, 100, 16}, {"c", 0.7, 100, 16}}), o);
    EXPECT_EQ(job(r, "a").start, 0);
    EXPECT_DOUBLE_EQ(job(r, "b").start, 0.4);
    EXPECT_EQ(job(r, "c").start, 100);
    EXPECT_FALSE(job(r, "c").deferred);  // admitted: the snapshot showed no draw yet
    EXPECT_EQ(r.cap_violations, 0);
    EXPECT_NEAR(r.peak_site_kw, 2 * 6.608, 1e-9);
}

// DefaultTopology=any: select/m2g leaves every job to cons_tres over
// topology/m2g's switches (the tree-nvl policy's model of it), so m2g
// places as tree-nvl does.
TEST(SimSessions, LocalityAnyIsLeftToConsTres)
{
    const Model any = build_model(parse_m2g_conf(read_text_file(M2G_FIXTURES "/sim/tiny.conf") +
                                                     "DefaultTopology=any\n",
                                                 "tiny+any.conf"));
    const Trace t = trace_of({{"a", 0, 100, 4}, {"b", 0, 100, 8}, {"c", 0, 100, 12}, {"d", 1, 50, 8}});
    SimOptions o;
    const SimResult m2g = simulate(any, t, o);
    o.policy = SimPolicy::TreeNvl;
    const SimResult tree = simulate(any, t, o);
    for (const char* id : {"a", "b", "c", "d"}) {
        SCOPED_TRACE(id);
        EXPECT_EQ(job(m2g, id).placed, job(tree, id).placed);
        EXPECT_EQ(job(m2g, id).start, job(tree, id).start);
    }
}
