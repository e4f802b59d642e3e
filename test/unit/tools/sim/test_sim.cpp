// The simulator on hand-checked traces (test/fixtures/sim/): for every
// policy the exact queue order, placements and metrics, worked out by hand
// on tiny.conf (8 nodes x 4 GPUs, four 2-node NVLink domains, two leaves).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/place/baselines.hpp"
#include "core/power/signals.hpp"
#include "tools/sim/sim.hpp"
#include "tools/sim/trace.hpp"

using namespace m2g;

namespace {

const std::string kDir = M2G_FIXTURES "/sim/";

SimResult run(const std::string& trace, SimPolicy p, SimOptions o = {})
{
    static const Model m = load_model(kDir + "tiny.conf");
    o.policy = p;
    return simulate(m, read_trace(kDir + trace), o);
}

const SimJobResult& job(const SimResult& r, const std::string& id)
{
    for (const SimJobResult& j : r.job_results)
        if (j.id == id)
            return j;
    throw Error("no job " + id);
}

// Node indices in tiny.conf: n1 is 0, ..., n8 is 7.
using Nodes = std::vector<int>;

const SimPolicy kAll[] = {SimPolicy::M2G,   SimPolicy::Tree,     SimPolicy::TreeNvl,
                          SimPolicy::Block, SimPolicy::BlockSeg, SimPolicy::FirstFit};

}  // namespace

TEST(SimPolicyName, ParsesAndRejects)
{
    for (SimPolicy p : kAll)
        EXPECT_EQ(parse_sim_policy(to_string(p)), p);
    try {
        parse_sim_policy("best");
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_NE(std::string(e.what()).find("m2g, tree, tree-nvl, block, block-seg or firstfit"), std::string::npos);
    }
}

// a (1 node), b (2 nodes), c (3 nodes), all at t=0 for 100 s.
//   m2g:       a n1 (best-fit d1), b d2 = n3 n4, c under leaf2 = n5 n6 n7
//   tree:      a n1, b leaf1's first free = n2 n3 (d1+d2), c leaf2 = n5 n6 n7
//   tree-nvl:  the domains are the lowest switches: a the first of the
//              fewest free, d1 = n1; b d2 (d1 has 1 free) = n3 n4; c no
//              domain and no leaf1 (1 free): leaf2, its domains best fit:
//              d3 (the first of the largest) n5 n6, then d4 n7
//   block:     (eval_nodes_block: of the blocks that hold the job, the
//              fewest free nodes, ties to the last) a d4 (n7), b d3 (d4
//              has 1 free) = n5 n6, c (3 nodes: level 1, blocks d1+d2 and
//              d3+d4) d1+d2, base blocks the last of the fullest first:
//              d2 (n3 n4), then d1 (n1)
//   block-seg: a, b as block; c (3 nodes, more than a domain) gets
//              --segment=1 (3 is prime): three 1-node segments, each to
//              the block with the fewest free nodes, ties to the last: d4
//              (n8), d2 (n3), d2 again (n4) — two leaves
//   firstfit:  a n1, b n2 n3, c n4 n5 n6 (two leaves)
TEST(SimPlacement, EachPolicyExact)
{
    struct Want {
        SimPolicy p;
        Nodes a, b, c;
        double containment, leaf_span;
    } wants[] = {
        {SimPolicy::M2G, {0}, {2, 3}, {4, 5, 6}, 1.0, 1.0},
        {SimPolicy::Tree, {0}, {1, 2}, {4, 5, 6}, 0.5, 1.0},
        {SimPolicy::TreeNvl, {0}, {2, 3}, {4, 5, 6}, 1.0, 1.0},
        {SimPolicy::Block, {6}, {4, 5}, {0, 2, 3}, 1.0, 1.0},
        {SimPolicy::BlockSeg, {6}, {4, 5}, {2, 3, 7}, 1.0, 4.0 / 3},
        {SimPolicy::FirstFit, {0}, {1, 2}, {3, 4, 5}, 0.5, 4.0 / 3},
    };
    for (const Want& w : wants) {
        SCOPED_TRACE(to_string(w.p));
        const SimResult r = run("placement.csv", w.p);
        EXPECT_EQ(r.policy, to_string(w.p));
        EXPECT_EQ(r.jobs, 3);
        EXPECT_EQ(job(r, "a").placed, w.a);
        EXPECT_EQ(job(r, "b").placed, w.b);
        EXPECT_EQ(job(r, "c").placed, w.c);
        for (const char* id : {"a", "b", "c"})
            EXPECT_EQ(job(r, id).start, 0);
        EXPECT_EQ(job(r, "c").domain_lb, 2);
        EXPECT_EQ(job(r, "c").domains, 2);
        EXPECT_EQ(r.fit_one_domain, 2);
        EXPECT_DOUBLE_EQ(r.containment, w.containment);
        EXPECT_EQ(r.multi_domain_jobs, 1);
        EXPECT_DOUBLE_EQ(r.span_ratio, 1.0);
        EXPECT_DOUBLE_EQ(r.leaf_span_ratio, w.leaf_span);
        EXPECT_DOUBLE_EQ(r.utilisation, 24.0 * 100 / (32 * 100));  // 24 of 32 GPUs for the whole run
        EXPECT_DOUBLE_EQ(r.node_utilisation, 0.75);
        EXPECT_DOUBLE_EQ(r.stranded_gpus, 0);
        EXPECT_DOUBLE_EQ(r.makespan_s, 100);
        EXPECT_DOUBLE_EQ(r.all.delay_mean, 0);
        EXPECT_EQ(r.cap_violations, 0);
    }
}

// j0 (6 nodes, 0..100); j1 (8 nodes, at 1) must wait for j0: reservation
// at 100, no spare nodes then. j2 (2 nodes, 50 s) ends by 100: backfilled
// at 2 onto n7 n8. j3 (2 nodes, 200 s) would not end by 100 and the
// reservation leaves no spare node: it waits behind j1 although n7 n8 are
// free from 52 to 100. Queue order: j0@0, j2@2, j1@100, j3@110. Block
// and block-seg take base blocks the last of the fullest first: j0 on
// d4 d3 d2 (n3..n8), j2 on d1, and j3 on d4 once all are free.
TEST(SimBackfill, EasyReservationEveryPolicy)
{
    for (SimPolicy p : kAll) {
        SCOPED_TRACE(to_string(p));
        const SimResult r = run("backfill.csv", p);
        const bool block = p == SimPolicy::Block || p == SimPolicy::BlockSeg;
        EXPECT_EQ(job(r, "j0").start, 0);
        EXPECT_EQ(job(r, "j2").start, 2);
        EXPECT_EQ(job(r, "j1").start, 100);
        EXPECT_EQ(job(r, "j3").start, 110);
        EXPECT_EQ(job(r, "j3").end, 310);
        EXPECT_TRUE(job(r, "j2").backfilled);
        EXPECT_FALSE(job(r, "j3").backfilled);
        EXPECT_EQ(r.backfilled, 1);
        EXPECT_EQ(job(r, "j0").placed, block ? (Nodes{2, 3, 4, 5, 6, 7}) : (Nodes{0, 1, 2, 3, 4, 5}));
        EXPECT_EQ(job(r, "j2").placed, block ? (Nodes{0, 1}) : (Nodes{6, 7}));
        EXPECT_EQ(job(r, "j1").placed, (Nodes{0, 1, 2, 3, 4, 5, 6, 7}));
        EXPECT_EQ(job(r, "j3").placed, block ? (Nodes{6, 7}) : (Nodes{0, 1}));
        EXPECT_DOUBLE_EQ(r.makespan_s, 310);
        // The busy window is [0, 110]: the last start. Queue non-empty with
        // 2 idle nodes (8 GPUs) over [1,2) and [52,100).
        EXPECT_DOUBLE_EQ(r.window_s, 110);
        EXPECT_DOUBLE_EQ(r.stranded_gpus, (8.0 * 1 + 8.0 * 48) / (32 * 110));
        EXPECT_DOUBLE_EQ(r.utilisation, (24.0 * 100 + 8 * 50 + 32 * 10) / (32 * 110));
        EXPECT_DOUBLE_EQ(r.utilisation_makespan, (24.0 * 100 + 32 * 10 + 8 * 50 + 8 * 200) / (32 * 310));
        EXPECT_DOUBLE_EQ(r.all.delay_mean, (0 + 99 + 0 + 107) / 4.0);
        EXPECT_DOUBLE_EQ(r.all.delay_p95, 107);
        EXPECT_DOUBLE_EQ(r.all.delay_p99, 107);
        EXPECT_DOUBLE_EQ(r.all.completion_mean, (100 + 109 + 50 + 307) / 4.0);
        EXPECT_DOUBLE_EQ(r.all.completion_p99, 307);
        ASSERT_EQ(r.classes.size(), 3u);
        EXPECT_EQ(r.classes[0].jobs, 0);  // node
        EXPECT_EQ(r.classes[1].jobs, 2);  // domain: j2, j3
        EXPECT_DOUBLE_EQ(r.classes[1].delay_mean, 107 / 2.0);
        EXPECT_EQ(r.classes[2].jobs, 2);  // multi-domain: j0, j1
        EXPECT_DOUBLE_EQ(r.classes[2].delay_p99, 99);
        EXPECT_DOUBLE_EQ(r.span_ratio, 1.0);
    }
}

// The same trace with time limits (--time-limit-factor 2: every job asks
// for 1 h): backfill plans with limits, as Slurm's does, so j0 is expected
// to run to 3600 and j2, which asks for an hour too, no longer ends by
// the head's shadow time; the head's reservation holds every node, so j2
// waits. j0 really ends at 100: j1 starts then, and j2 and j3 at 110.
TEST(SimBackfill, PlansWithTimeLimitsWhenJobsHaveThem)
{
    for (SimPolicy p : kAll) {
        SCOPED_TRACE(to_string(p));
        SimOptions o;
        o.time_limit_factor = 2;
        const SimResult r = run("backfill.csv", p, o);
        EXPECT_EQ(job(r, "j0").start, 0);
        EXPECT_EQ(job(r, "j1").start, 100);
        EXPECT_EQ(job(r, "j2").start, 110);
        EXPECT_EQ(job(r, "j3").start, 110);
        EXPECT_EQ(r.backfilled, 0);
    }
}

// Slurm's backfill (backfill_slurm) reserves for every pending job, not
// only the head. j0 (6 nodes, 0..100) leaves 2 nodes free; j1 and j2 (4
// nodes, 100 s each, at 1 and 2) wait for it; j3 (2 nodes, 300 s, at 3)
// would fit on the 2 free nodes now. EASY reserves j1's 4 nodes at 100
// only, so j3 starts at 3 on nodes j1 does not need, and j2 waits for j1
// to end (200). Slurm's backfill (backfill.c _attempt_backfill) also
// reserves 4 nodes for j2 at 100, the other 4 (the 2 free ones among
// them), so j3 may not start; j1 and j2 start at 100 and j3 at 200.
// Every policy places the same here. With a bf_window shorter than the
// wait (50 s), no job is planned (a start beyond the window gets no
// reservation) and j3 starts at 3: EASY's answer without a reservation.
// The backfill.csv case of EasyReservationEveryPolicy comes out the same
// (j2 ends before the head's start, so a reservation does not stop it).
TEST(SimBackfill, SlurmReservesForEveryPendingJob)
{
    for (SimPolicy p : kAll) {
        SCOPED_TRACE(to_string(p));
        SimOptions easy, slurm, narrow;
        slurm.backfill_slurm = narrow.backfill_slurm = true;
        slurm.bf_resolution_s = narrow.bf_resolution_s = 0;
        narrow.bf_window_s = 50;
        const SimResult e = run("reservations.csv", p, easy);
        const SimResult s = run("reservations.csv", p, slurm);
        const SimResult n = run("reservations.csv", p, narrow);
        EXPECT_EQ(job(e, "j3").start, 3);
        EXPECT_TRUE(job(e, "j3").backfilled);
        EXPECT_EQ(job(e, "j1").start, 100);
        EXPECT_EQ(job(e, "j2").start, 200);
        EXPECT_EQ(job(s, "j1").start, 100);
        EXPECT_EQ(job(s, "j2").start, 100);
        EXPECT_EQ(job(s, "j3").start, 200);
        EXPECT_EQ(s.backfilled, 0);
        EXPECT_EQ(job(n, "j3").start, 3);
        EXPECT_EQ(job(n, "j1").start, 100);
        EXPECT_EQ(job(n, "j2").start, 200);
        const SimResult b = run("backfill.csv", p, slurm);
        EXPECT_EQ(job(b, "j2").start, 2);
        EXPECT_TRUE(job(b, "j2").backfilled);
        EXPECT_EQ(job(b, "j1").start, 100);
        EXPECT_EQ(job(b, "j3").start, 110);
    }
}

// Slurm's backfill runs every bf_interval, when something changed since
// the last pass (backfill.c backfill_agent, _more_work), not at every
// event. On backfill.csv with 30 s: the pass at 1 (j1's submit, the
// first) reserves the cluster for j1 at 100; j2's submit at 2 comes too
// soon after it, so j2 is backfilled by the pass at 31, not at 2. The main
// scheduler's FCFS starts stay at their events (j1 at 100, j3 at 110).
TEST(SimBackfill, SlurmPassesComeEveryBfInterval)
{
    for (SimPolicy p : kAll) {
        SCOPED_TRACE(to_string(p));
        SimOptions o;
        o.backfill_slurm = true;
        o.bf_resolution_s = 0;
        o.bf_interval_s = 30;
        const SimResult r = run("backfill.csv", p, o);
        EXPECT_EQ(job(r, "j2").start, 31);
        EXPECT_TRUE(job(r, "j2").backfilled);
        EXPECT_EQ(job(r, "j1").start, 100);
        EXPECT_EQ(job(r, "j3").start, 110);
        EXPECT_EQ(r.backfilled, 1);
    }
}

// Five jobs fill the cluster but n8; j0 ends at 100 and frees n1. j5 (2
// nodes) could then run on n1 + n8, two NVLink domains. The tree
// baselines and firstfit start it at 100; m2g (prefer:nvlink,
// PreferWaitSec 300 by default) holds it for a whole domain. Its wait
// starts at 100, when it could first have started (its 100 s in the queue
// before are not prefer wait), and is over at 400: then it takes n1 + n8.
// Block and block-seg fill the blocks the other way (the fewest free
// nodes, ties to the last: j0 n7, j1 n8, j2 d3, j3 d2, j4 n1) and leave
// n2 and, from 100, n7: no base block has two free nodes, and topology/
// block does not move a 2-node job up a level (ESLURM_TOPO_NO_FIT), so j5
// waits for a whole domain until the others end at 1000: strict by
// construction.
TEST(SimIntent, M2GHoldsForADomainUntilPreferWaitEnds)
{
    for (SimPolicy p : kAll) {
        SCOPED_TRACE(to_string(p));
        const SimResult r = run("intent.csv", p);
        if (p == SimPolicy::Block || p == SimPolicy::BlockSeg) {
            EXPECT_EQ(job(r, "j0").placed, Nodes{6});
            EXPECT_EQ(job(r, "j1").placed, Nodes{7});
            EXPECT_EQ(job(r, "j2").placed, (Nodes{4, 5}));
            EXPECT_EQ(job(r, "j3").placed, (Nodes{2, 3}));
            EXPECT_EQ(job(r, "j4").placed, Nodes{0});
            EXPECT_EQ(job(r, "j5").placed, (Nodes{6, 7}));
            EXPECT_EQ(job(r, "j5").start, 1000);
            EXPECT_EQ(job(r, "j5").domains, 1);
            EXPECT_DOUBLE_EQ(r.containment, 1.0);
            EXPECT_DOUBLE_EQ(r.makespan_s, 1010);
            EXPECT_DOUBLE_EQ(r.window_s, 1000);
            // n2 idle while j5 waits, n7 too from 100.
            EXPECT_DOUBLE_EQ(r.stranded_gpus, (4.0 * 1000 + 4.0 * 900) / (32 * 1000));
            EXPECT_DOUBLE_EQ(r.all.delay_mean, 1000.0 / 6);
            EXPECT_DOUBLE_EQ(r.all.delay_p99, 1000);
            continue;
        }
        const double start = p == SimPolicy::M2G ? 400 : 100;
        EXPECT_EQ(job(r, "j0").placed, Nodes{0});
        EXPECT_EQ(job(r, "j1").placed, Nodes{1});
        EXPECT_EQ(job(r, "j2").placed, (Nodes{2, 3}));
        EXPECT_EQ(job(r, "j3").placed, (Nodes{4, 5}));
        EXPECT_EQ(job(r, "j4").placed, Nodes{6});
        EXPECT_EQ(job(r, "j5").placed, (Nodes{0, 7}));
        EXPECT_EQ(job(r, "j5").start, start);
        EXPECT_EQ(job(r, "j5").domains, 2);
        EXPECT_DOUBLE_EQ(r.containment, 5.0 / 6);
        EXPECT_DOUBLE_EQ(r.makespan_s, 1000);
        // The busy window ends at j5's start. n8 idle over [0,100) while j5
        // waits; m2g also leaves n1 + n8 idle to 400.
        EXPECT_DOUBLE_EQ(r.window_s, start);
        const double stranded = 4.0 * 100 + (p == SimPolicy::M2G ? 8.0 * 300 : 0);
        EXPECT_DOUBLE_EQ(r.stranded_gpus, stranded / (32 * start));
        EXPECT_DOUBLE_EQ(r.all.delay_mean, start / 6);
        EXPECT_DOUBLE_EQ(r.all.delay_p99, start);
    }
}

TEST(SimOptions, ScaleGpusRoundsUpToNodesAndRejectsWhatNeverFits)
{
    SimOptions o;
    o.scale_gpus = 2;
    SimResult r = run("placement.csv", SimPolicy::FirstFit, o);
    EXPECT_EQ(job(r, "a").nodes, 2);
    EXPECT_EQ(job(r, "b").nodes, 4);
    EXPECT_EQ(job(r, "c").nodes, 6);
    EXPECT_EQ(job(r, "c").start, 100);  // 12 nodes asked of 8: c waits for a and b
    o.scale_gpus = 4;                   // c: 48 GPUs = 12 nodes > 8
    r = run("placement.csv", SimPolicy::M2G, o);
    EXPECT_EQ(r.rejected, 1);
    EXPECT_EQ(r.jobs, 2);
    EXPECT_EQ(job(r, "c").start, -1);
    EXPECT_EQ(job(r, "b").start, 100);  // a and b (8 nodes each... a 4, b 8) run one after the other
    o.scale_gpus = 0;
    EXPECT_THROW(run("placement.csv", SimPolicy::M2G, o), Error);
}

// Offered load = GPU-seconds / (GPUs x submit span): 4720 / (32 x 3).
TEST(SimOptions, LoadScalesInterArrivalTimes)
{
    SimOptions o;
    o.load = 0.5;
    const SimResult r = run("backfill.csv", SimPolicy::M2G, o);
    const double factor = 4720.0 / (32 * 3) / 0.5;
    EXPECT_DOUBLE_EQ(r.arrival_factor, factor);
    EXPECT_DOUBLE_EQ(r.offered_load, 0.5);
    EXPECT_DOUBLE_EQ(job(r, "j3").submit, 3 * factor);
    EXPECT_DOUBLE_EQ(job(r, "j1").submit, factor);
    EXPECT_DOUBLE_EQ(job(r, "j1").start, 100);  // 98.3: j0 still holds 6 nodes until 100
    EXPECT_DOUBLE_EQ(job(r, "j2").start, 2 * factor);  // by then nothing runs
    EXPECT_EQ(r.backfilled, 0);
    EXPECT_THROW(run("placement.csv", SimPolicy::M2G, o), Error);  // all submitted at once: no span to scale
}

// A run may end early (a forecast's samples at the horizon, its
// alternatives once the job asked about has started): what happened
// before the stop is what the whole run has, and nothing after it starts.
TEST(SimOptions, StopAtATimeOrOnceAJobStarted)
{
    for (SimPolicy p : kAll) {
        SCOPED_TRACE(to_string(p));
        SimOptions o;
        o.backfill_slurm = true;
        o.bf_resolution_s = 0;
        const SimResult whole = run("backfill.csv", p, o);
        ASSERT_EQ(job(whole, "j3").start, 110);
        o.stop_at = 50;
        const SimResult at = run("backfill.csv", p, o);
        EXPECT_EQ(job(at, "j2").start, job(whole, "j2").start);
        EXPECT_EQ(job(at, "j2").end, job(whole, "j2").end);
        EXPECT_EQ(job(at, "j1").start, -1);
        EXPECT_EQ(job(at, "j3").start, -1);
        o.stop_at = -1;
        o.stop_after_start = "j1";
        const SimResult once = run("backfill.csv", p, o);
        EXPECT_EQ(job(once, "j1").start, 100);
        EXPECT_EQ(job(once, "j1").placed, job(whole, "j1").placed);
        EXPECT_EQ(job(once, "j3").start, -1);
    }
}
TEST(SimOptions, SeedShufflesOnlySameSecondSubmits)
{
    auto ids = [](const SimResult& r) {
        std::vector<std::string> v;
        for (const auto& j : r.job_results)
            v.push_back(j.id);
        return v;
    };
    const std::vector<std::string> trace_order = {"j0", "j1", "j2", "j3", "j4", "j5"};
    EXPECT_EQ(ids(run("intent.csv", SimPolicy::M2G)), trace_order);
    SimOptions o;
    o.seed = 7;
    const auto a = ids(run("intent.csv", SimPolicy::M2G, o)), b = ids(run("intent.csv", SimPolicy::M2G, o));
    EXPECT_EQ(a, b);
    EXPECT_NE(a, trace_order);
    EXPECT_TRUE(std::is_permutation(a.begin(), a.end(), trace_order.begin()));
    EXPECT_EQ(ids(run("backfill.csv", SimPolicy::M2G, o)), (std::vector<std::string>{"j0", "j1", "j2", "j3"}));
}

TEST(SimFormat, JsonHasTheAgreedKeys)
{
    const std::string j = format_sim_result(run("backfill.csv", SimPolicy::Tree), true);
    for (const char* k : {"\"policy\":\"tree\"", "\"jobs\":4", "\"containment\":", "\"span_ratio\":",
                          "\"stranded_gpus\":", "\"utilisation\":", "\"queue_delay_mean_s\":51.5",
                          "\"queue_delay_p99_s\":107", "\"cap_violations\":0", "\"sim_jobs_per_s\":",
                          "\"size_classes\":[{\"class\":\"node\""})
        EXPECT_NE(j.find(k), std::string::npos) << k << " in " << j;
    EXPECT_EQ(j.back(), '\n');
    const std::string t = format_sim_result(run("backfill.csv", SimPolicy::Tree), false);
    EXPECT_NE(t.find("policy: tree\n"), std::string::npos);
    EXPECT_NE(t.find("1 backfilled"), std::string::npos);
}

// Nodes in no NVLink domain are the blocks of their switch, as `m2g
// topology export --format=block` writes them; BlockSizes Slurm refuses
// (block_record.c) are errors that say what is accepted.
TEST(SimBlock, SwitchBlocksOutsideDomainsAndBlockSizesAsSlurmReadsThem)
{
    const Model m = build_model(parse_m2g_conf("NodeName=x[1-2] Gpus=8\nSwitchName=s Nodes=x[1-2]\n", "t"));
    Trace t;
    t.jobs.push_back({"one", 0, 10, 8});
    SimOptions o;
    for (SimPolicy p : {SimPolicy::Block, SimPolicy::BlockSeg, SimPolicy::Tree, SimPolicy::TreeNvl}) {
        SCOPED_TRACE(to_string(p));
        o.policy = p;  // tree-nvl: s holds the nodes itself (level 0), as the export writes it
        const SimResult r = simulate(m, t, o);
        EXPECT_EQ(r.job_results[0].placed, Nodes{0});
        EXPECT_EQ(r.job_results[0].domains, 1);
    }
    o.policy = SimPolicy::Block;
    for (const std::vector<int>& bad : {std::vector<int>{2, 3}, std::vector<int>{2, 6}, std::vector<int>{2, -2}}) {
        o.block_sizes = bad;
        try {
            simulate(m, t, o);
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("BlockSizes: "), std::string::npos) << e.what();
        }
    }
}

// eval_nodes_block() on four blocks of 18, by hand from Slurm 26.05's
// code. BlockSizes=18,36,72: a 40-node job is level 2 (all four blocks);
// base blocks the last of the fullest first while none holds the rest,
// then the last of the emptiest that does. A 20-node job is level 1
// (pairs): the pair with the fewest free nodes that holds it. A 10-node
// job is level 0: one base block or it waits, however many nodes are free.
// BlockSizes=18,72 has no level 1, so a 20-node job is level 2 with at
// most max_llblock = 2 llblocks of one base block each.
TEST(SimBlock, LevelsAndLlblocksAsEvalNodesBlock)
{
    std::string conf;
    for (int r = 0; r < 4; ++r)
        conf += "NodeName=r" + std::to_string(r) + "n[01-18] Gpus=4\nDomainName=d" + std::to_string(r) + " Nodes=r" +
                std::to_string(r) + "n[01-18]\n";
    conf += "SwitchName=leaf Level=leaf Domains=d[0-3]\n";
    const Model m = build_model(parse_m2g_conf(conf, "t"));
    auto placer = make_block_placer(m, false, {18, 36, 72});
    auto freeing = [&](std::vector<int> per_block) {
        std::vector<uint8_t> f(m.nodes.size(), 0);
        for (size_t n = 0; n < m.nodes.size(); ++n) {
            const int d = m.nodes[n].domain;
            if (per_block[d] > 0) {
                f[n] = 1;
                --per_block[d];
            }
        }
        return f;
    };
    std::vector<int> out;
    auto domains = [&] {
        std::vector<int> c(4, 0);
        for (int n : out)
            ++c[m.nodes[n].domain];
        return c;
    };
    EXPECT_TRUE(placer->place(40, freeing({18, 0, 18, 4}), out));
    EXPECT_EQ(domains(), (std::vector<int>{18, 0, 18, 4}));
    EXPECT_TRUE(placer->place(40, freeing({10, 10, 10, 10}), out));
    EXPECT_EQ(out.size(), 40u);
    EXPECT_FALSE(placer->place(40, freeing({9, 9, 9, 9}), out));  // 36 free: too few anyway
    // d2, d1 (ties: the last), then d0, which holds the last 12.
    EXPECT_TRUE(placer->place(40, freeing({14, 14, 14, 0}), out));
    EXPECT_EQ(domains(), (std::vector<int>{12, 14, 14, 0}));
    // 20 nodes: pairs {d0,d1} (12 free) and {d2,d3} (30 free): only the
    // second holds it; inside, the last of the fullest base block first.
    EXPECT_TRUE(placer->place(20, freeing({6, 6, 15, 15}), out));
    EXPECT_EQ(domains(), (std::vector<int>{0, 0, 5, 15}));
    // 10 nodes with no base block holding 10 free: waits, though 36 are free.
    EXPECT_FALSE(placer->place(10, freeing({9, 9, 9, 9}), out));
    // BlockSizes=18,72: two base blocks at most.
    auto sparse = make_block_placer(m, false, {18, 72});
    EXPECT_TRUE(sparse->place(20, freeing({10, 10, 10, 10}), out));
    EXPECT_EQ(domains(), (std::vector<int>{0, 0, 10, 10}));
    EXPECT_FALSE(sparse->place(20, freeing({10, 5, 5, 0}), out));  // 20 free, in three
    EXPECT_FALSE(placer->place(20, freeing({10, 5, 5, 0}), out));   // level 1: the pairs hold 15 and 5
    // Slurm's default levels (no BlockSizes): 0-3, so the same.
    auto dflt = make_block_placer(m, false, {});
    EXPECT_FALSE(dflt->place(10, freeing({9, 9, 9, 9}), out));
    EXPECT_TRUE(dflt->place(10, freeing({9, 10, 10, 9}), out));
    EXPECT_EQ(domains(), (std::vector<int>{0, 0, 10, 0}));
}

TEST(Trace, PhillyColumnsByName)
{
    const Trace t = parse_philly_csv("num_gpus,job_id,x,duration_s,submit_s\n8,p1,q,30.5,12\n\n1,p2,q,0,12\n", "p.csv");
    EXPECT_EQ(t.format, "philly");
    ASSERT_EQ(t.jobs.size(), 2u);
    EXPECT_EQ(t.jobs[0].id, "p1");
    EXPECT_EQ(t.jobs[0].gpus, 8);
    EXPECT_DOUBLE_EQ(t.jobs[0].duration, 30.5);
    EXPECT_DOUBLE_EQ(t.jobs[1].submit, 12);
}

TEST(Trace, PhillyErrorsNameTheLine)
{
    auto error = [](const std::string& text) {
        try {
            parse_philly_csv(text, "p.csv");
        } catch (const ParseError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const std::string h = "job_id,submit_s,duration_s,num_gpus\n";
    EXPECT_EQ(error(h + "a,0,10,1\na,0,10,1.5\n"),
              "p.csv:3: num_gpus '1.5': expected a whole number from 1 to 1000000");
    EXPECT_EQ(error(h + "a,-1,10,1\n"), "p.csv:2: submit_s '-1': expected seconds, 0 or more");
    EXPECT_EQ(error(h + "a,0,ten,1\n"), "p.csv:2: duration_s 'ten': expected seconds, 0 or more");
    EXPECT_EQ(error(h + "a,0,10\n"), "p.csv:2: 3 fields, the header has 4");
    EXPECT_NE(error("id,submit\n").find("p.csv:1: the header must name the columns"), std::string::npos);
    EXPECT_NE(error("").find("empty trace"), std::string::npos);
}

TEST(Trace, SwfSkipsUnknownRunTimesAndReadsProcessors)
{
    const Trace t = read_trace(kDir + "tiny.swf");
    EXPECT_EQ(t.format, "swf");
    EXPECT_EQ(t.skipped, 1);  // job 2: run time -1
    ASSERT_EQ(t.jobs.size(), 3u);
    EXPECT_EQ(t.jobs[0].gpus, 4);
    EXPECT_EQ(t.jobs[1].gpus, 8);  // requested processors
    EXPECT_EQ(t.jobs[2].gpus, 6);  // requested unknown: allocated
    EXPECT_DOUBLE_EQ(t.jobs[2].submit, 20);
    EXPECT_DOUBLE_EQ(t.jobs[2].duration, 30);
    try {
        parse_swf("; c\n1 0 0 10 4\n", "w.swf");
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "w.swf:2: 5 fields; an SWF job line has 18 (job, submit, wait, run time, processors, ...)");
    }
    const SimResult r = simulate(load_model(kDir + "tiny.conf"), t, SimOptions{});
    EXPECT_EQ(r.jobs, 3);
    EXPECT_EQ(r.job_results[1].start, 10);  // 2 nodes next to job 1's one
    // Unknown submit time (-1, as in LLNL-Thunder's all -1 records): skipped;
    // another negative submit time: an error.
    const Trace u = parse_swf("1 -1 -1 -1 -1 -1 -1 -1 -1 -1 1 36 -1 66 -1 2 -1 -1\n"
                              "2 5 0 10 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1\n",
                              "u.swf");
    EXPECT_EQ(u.skipped, 1);
    ASSERT_EQ(u.jobs.size(), 1u);
    EXPECT_EQ(u.jobs[0].id, "2");
    try {
        parse_swf("1 -5 0 10 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1\n", "n.swf");
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(std::string(e.what()), "n.swf:1: submit time (field 2) must be 0 or more, or -1 (unknown)");
    }
}

// ---- GPU-granular jobs, health, power and the signals timeline --------------

namespace {

Trace trace_of(std::initializer_list<TraceJob> jobs)
{
    Trace t;
    t.format = "philly";
    t.jobs = jobs;
    return t;
}

std::string shared_data()
{
    const char* d = std::getenv("M2G_DATA");
    return d ? d : M2G_FIXTURES "/../../../shared/data";
}

const Model& tiny()
{
    static const Model m = load_model(kDir + "tiny.conf");
    return m;
}

}  // namespace

// Four 1-GPU jobs share a node (select/m2g offers nodes with the job's
// GPUs free, as cons_tres does): n1; the 4-GPU job then takes n2, the best
// fit.
TEST(SimGpus, SubNodeJobsShareANode)
{
    const Trace t = trace_of({{"g1", 0, 100, 1}, {"g2", 0, 100, 1}, {"g3", 0, 100, 1}, {"g4", 0, 100, 1},
                              {"w", 0, 100, 4}, {"h", 0, 100, 6}});
    for (SimPolicy p : kAll) {
        SCOPED_TRACE(to_string(p));
        SimOptions o;
        o.policy = p;
        const SimResult r = simulate(tiny(), t, o);
        // block: the base block with the fewest nodes with the GPUs free,
        // ties to the last: d4 for the 1-GPU jobs (n7) and for w (n8).
        const bool block = p == SimPolicy::Block || p == SimPolicy::BlockSeg;
        for (const char* id : {"g1", "g2", "g3", "g4"}) {
            EXPECT_EQ(job(r, id).placed, Nodes{block ? 6 : 0});
            EXPECT_EQ(job(r, id).gpus_per_node, 1);
        }
        EXPECT_EQ(job(r, "w").placed, Nodes{block ? 7 : 1});
        EXPECT_EQ(job(r, "h").nodes, 2);  // 6 GPUs: 2 nodes x 3
        EXPECT_EQ(job(r, "h").gpus_per_node, 3);
        EXPECT_EQ(job(r, "h").start, 0);
        // 4 + 4 + 6 of 32 GPUs for the whole run; nodes: 4 of 8.
        EXPECT_DOUBLE_EQ(r.utilisation, 14.0 / 32);
        EXPECT_DOUBLE_EQ(r.node_utilisation, 4.0 / 8);
    }
}

// Nodes down or degraded in the timeline are unusable for every policy.
TEST(SimHealth, DownAndDegradedNodesAreNeverUsed)
{
    const Signals feed = parse_signals(
        R"({"schema":"m2g.signals/v1","generated_at":1767225600,"health":{"down":"n1","degraded":"n3"}})", "feed",
        tiny(), 1767225600);
    const Trace t = trace_of({{"a", 0, 100, 4}, {"b", 0, 100, 4}, {"big", 0, 100, 24}, {"never", 0, 100, 32}});
    for (SimPolicy p : kAll) {
        SCOPED_TRACE(to_string(p));
        SimOptions o;
        o.policy = p;
        o.timeline = &feed;
        const SimResult r = simulate(tiny(), t, o);
        EXPECT_EQ(r.unusable_nodes, 2);
        for (const SimJobResult& j : r.job_results)
            for (int n : j.placed)
                EXPECT_TRUE(n != 0 && n != 2) << j.id << " on node " << n;
        EXPECT_EQ(job(r, "never").start, -1);
        if (p == SimPolicy::BlockSeg) {
            // big (6 nodes) is --segment=2: three domains with 2 usable
            // nodes each, and only d3 and d4 have them.
            EXPECT_EQ(r.rejected, 2);
            EXPECT_EQ(job(r, "big").start, -1);
            continue;
        }
        EXPECT_EQ(r.rejected, 1);  // 8 nodes asked, 6 usable
        // 6 nodes: all usable ones, after a and b end at 100. They lie in 4
        // NVLink domains, one more than the 3 that 6 nodes need: m2g
        // (prefer:nvlink) holds out for its PreferWaitSec of 300 s, counted
        // from 100, when it could first have started.
        EXPECT_EQ(job(r, "big").start, p == SimPolicy::M2G ? 400 : 100);
    }
}

TEST(SimPower, CdfParsesSamplesAndNamesErrors)
{
    const std::string text =
        "cluster,metric,unit,cdf_pct,value\n"
        "a,gpu_power,W,0,50\n"
        "a,gpu_power,W,50,100\n"
        "a,gpu_power,W,100,400\n"
        "b,gpu_power,W,0,70\n"
        "a,gpu_core_temp,C,0,30\n";
    const PowerCdf c = parse_power_cdf(text, "cdf.csv", "a");
    ASSERT_EQ(c.points.size(), 3u);
    EXPECT_DOUBLE_EQ(c.sample(0), 50);
    EXPECT_DOUBLE_EQ(c.sample(0.25), 75);
    EXPECT_DOUBLE_EQ(c.sample(0.5), 100);
    EXPECT_DOUBLE_EQ(c.sample(0.75), 250);
    EXPECT_DOUBLE_EQ(c.sample(1), 400);
    auto message = [&](const std::string& t, const std::string& cl) {
        try {
            parse_power_cdf(t, "cdf.csv", cl);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message(text, "zz"), "cdf.csv: no gpu_power rows for cluster 'zz'; clusters with them: a, b");
    EXPECT_EQ(message("cluster,metric,unit,cdf_pct,value\na,gpu_power,W,10,90\na,gpu_power,W,20,80\n", "a"),
              "cdf.csv:3: a CDF must not decrease: 20% at 80 W after 10% at 90 W");
    EXPECT_EQ(message("cluster,metric,unit,cdf_pct,value\na,gpu_power,W,x,90\n", "a"),
              "cdf.csv:2: cdf_pct 'x': expected a number from 0 to 100");
    EXPECT_EQ(message("name,value\n", "a"),
              "cdf.csv:1: expected a header with the columns cluster, metric, cdf_pct and value (the Acme 2023 "
              "power/thermal CDF format)");
}

// The real Acme CDF: draws are seeded, the same for every policy, and
// inside the CDF's range.
TEST(SimPower, DrawsAreSeededAndEqualAcrossPolicies)
{
    const PowerCdf c = read_power_cdf(shared_data() + "/acme2023_power_thermal_cdf.csv", "kalos");
    const Trace t = read_trace(kDir + "intent.csv");
    SimOptions o;
    o.power = &c;
    o.seed = 3;
    o.policy = SimPolicy::M2G;
    const SimResult a = simulate(tiny(), t, o);
    o.policy = SimPolicy::FirstFit;
    const SimResult b = simulate(tiny(), t, o);
    double energy = 0;
    for (size_t i = 0; i < a.job_results.size(); ++i) {
        EXPECT_EQ(a.job_results[i].w_gpu, b.job_results[i].w_gpu);
        EXPECT_GE(a.job_results[i].w_gpu, c.points.front().second);
        EXPECT_LE(a.job_results[i].w_gpu, c.points.back().second);
        energy += a.job_results[i].w_gpu * a.job_results[i].gpus * (a.job_results[i].end - a.job_results[i].start);
    }
    EXPECT_NEAR(a.energy_kwh, energy / 3.6e6, 1e-9);
    EXPECT_NE(a.job_results[0].w_gpu, a.job_results[1].w_gpu);
}

// Site budget 10 kW; a DR event cuts 5 kW from 100 to 400 s, announced in
// the feed from the start. Training draws its class estimate, 413 W per
// GPU. A (16 GPUs, 6.608 kW, 1000 s) arrives at 0; B (4 GPUs, 1.652 kW)
// during the event; C (16 GPUs) at 600 would take the site to 13.216 kW.
//   m2g:       gate()'s pre-event ramp keeps A from starting into the
//              event (6.608 kW over its 5 kW): A starts at its end (400);
//              decide() defers B to the event's end (400) and C by
//              PowerRetrySec (300) until A has ended (1400): C starts at
//              1500. No violation.
//   baselines: A at 0, B at 150 and C at 600: two violations (the event,
//              and 600-700 over the 10 kW budget), the larger 8.26 - 5 kW.
TEST(SimPower, DemandResponseThroughDecideAndGate)
{
    const Signals feed = parse_signals(R"({"schema":"m2g.signals/v1","generated_at":1767225600,
        "power":{"site":{"budget_kw":10}},
        "events":[{"id":"dr1","start":1767225700,"end":1767226000,"curtail_kw":5,"scope":"site"}]})",
                                       "feed", tiny(), 1767225600);
    const Trace t = trace_of({{"A", 0, 1000, 16}, {"B", 150, 100, 4}, {"C", 600, 100, 16}});
    for (SimPolicy p : kAll) {
        SCOPED_TRACE(to_string(p));
        SimOptions o;
        o.policy = p;
        o.timeline = &feed;
        const SimResult r = simulate(tiny(), t, o);
        const bool m2g = p == SimPolicy::M2G;
        EXPECT_EQ(job(r, "A").start, m2g ? 400 : 0);
        EXPECT_EQ(job(r, "B").start, m2g ? 400 : 150);
        EXPECT_EQ(job(r, "B").eligible, m2g ? 400 : 150);
        EXPECT_EQ(job(r, "C").start, m2g ? 1500 : 600);
        EXPECT_EQ(r.deferred, m2g ? 3 : 0);  // A too: pending when the event starts, it is deferred to its end
        EXPECT_EQ(job(r, "B").deferred, m2g);
        if (m2g) {
            EXPECT_EQ(job(r, "B").admission.rfind("defer: DR event dr1 (site -5 kW) until 2026-01-01T00:06:40Z", 0), 0u)
                << job(r, "B").admission;
        }
        EXPECT_EQ(r.cap_violations, m2g ? 0 : 2);
        EXPECT_DOUBLE_EQ(r.cap_violation_s, m2g ? 0 : 400);
        EXPECT_NEAR(r.cap_peak_over_kw, m2g ? 0 : 8.26 - 5, 1e-9);
        ASSERT_EQ(r.events.size(), 1u);
        const SimEventResult& e = r.events[0];
        EXPECT_EQ(e.id, "dr1");
        EXPECT_EQ(e.scope, "site");
        EXPECT_DOUBLE_EQ(e.start, 100);
        EXPECT_DOUBLE_EQ(e.end, 400);
        EXPECT_DOUBLE_EQ(e.budget_kw, 5);
        EXPECT_NEAR(e.draw_at_start_kw, m2g ? 0 : 6.608, 1e-9);
        EXPECT_NEAR(e.peak_draw_kw, m2g ? 0 : 8.26, 1e-9);
        EXPECT_DOUBLE_EQ(e.response_s, m2g ? 0 : -1);  // baselines: A runs past the event
        EXPECT_DOUBLE_EQ(e.over_s, m2g ? 0 : 300);
        EXPECT_NEAR(r.peak_site_kw, m2g ? 8.26 : 13.216, 1e-9);
    }
}

TEST(SimFormat, JobLogHasOneLinePerJobWithHostlists)
{
    const SimResult r = run("placement.csv", SimPolicy::M2G);
    const std::string log = format_sim_jobs(tiny(), r);
    EXPECT_EQ(log,
              "id,gpus,nodes,submit,eligible,start,end,domains,domain_lb,leaves,w_gpu,admission,nodelist\n"
              "a,4,1,0,0,0,100,1,1,1,413,,\"n1\"\n"
              "b,8,2,0,0,0,100,1,1,1,413,,\"n[3-4]\"\n"
              "c,12,3,0,0,0,100,2,2,1,413,,\"n[5-7]\"\n");
}

// ---- The backfill reservation on nodes ---------------------------------------

// Eight 1-node jobs fill tiny.conf (block: each to the base block with the
// fewest free nodes, ties to the last: a1 a2 on d4, a3 a4 on d3, a5 a6 on
// d2, a7 a8 on d1); a2..a5 end at 10 and leave n8 (d4), n5 n6 (d3) and
// n3 (d2) free. E (4 nodes, at 5, 100 s) and F (1 node, at 6, 100 s) wait.
//   block:     E is level 1 (pairs of blocks): d1+d2 has 1 free node,
//              d3+d4 3, so E waits (ESLURM_TOPO_NO_FIT), four nodes free
//              or not, until a1 a6 a7 a8 end at 1000: the last of the
//              tied pairs, d3+d4. Its reservation on nodes is d3+d4 at
//              1000; F ends by then and backfills at 10 on n8 (d4 and d2
//              have the fewest free, the last). Counted in GPUs the
//              reservation is met at 10 already (16 GPUs free, none
//              spare), so there F, which would run past 10, waits with E
//              until 1000 (then n3, d2 the last of the emptied).
//   block-seg: E is --segment=2, two segments of 2: only d3 has two free
//              nodes at 10, so the same.
TEST(SimReservation, BlockWaitsForAWholeBlockAndNodeRuleBackfillsMeanwhile)
{
    const Trace t = trace_of({{"a1", 0, 1000, 4}, {"a2", 0, 10, 4}, {"a3", 0, 10, 4}, {"a4", 0, 10, 4},
                              {"a5", 0, 10, 4}, {"a6", 0, 1000, 4}, {"a7", 0, 1000, 4}, {"a8", 0, 1000, 4},
                              {"E", 5, 100, 16}, {"F", 6, 100, 4}});
    for (SimPolicy p : {SimPolicy::Block, SimPolicy::BlockSeg})
        for (bool by_nodes : {true, false}) {
            SCOPED_TRACE(std::string(to_string(p)) + (by_nodes ? " nodes" : " gpus"));
            SimOptions o;
            o.reserve_nodes = by_nodes;
            o.policy = p;
            const SimResult r = simulate(tiny(), t, o);
            const int at[] = {6, 7, 4, 5, 2, 3, 0, 1};
            for (int i = 1; i <= 8; ++i)
                EXPECT_EQ(job(r, "a" + std::to_string(i)).placed, Nodes{at[i - 1]});
            EXPECT_EQ(job(r, "E").start, 1000);
            EXPECT_EQ(job(r, "E").placed, (Nodes{4, 5, 6, 7}));
            EXPECT_EQ(job(r, "E").domains, 2);
            EXPECT_EQ(job(r, "F").start, by_nodes ? 10 : 1000);
            EXPECT_EQ(job(r, "F").placed, by_nodes ? Nodes{7} : Nodes{2});
            EXPECT_EQ(job(r, "F").backfilled, by_nodes);
            EXPECT_EQ(r.backfilled, by_nodes ? 1 : 0);
        }
}

// J0 (3 nodes, 100 s) and J1 (3 nodes, 1000 s) start at 0; H (4 nodes, at
// 1, 10 s) waits for J0; B (1 node, at 2, 500 s) would still run at H's
// shadow time, 100. By GPUs there are 20 free at 100 for H's 16, so B fits
// the 4 spare and goes wherever its policy puts it; by nodes it must keep
// off the nodes H's policy would take at 100.
//   tree:      J0 n1..n3 (leaf1: the first of the fewest free), J1 n5..n7
//              (leaf2). nodes: H's reservation is leaf1 whole, n1..n4; B
//              takes n8; H starts at 100 under leaf1. gpus: B takes n4 (one
//              free node under each leaf: the first), so at 100 H spans
//              both leaves, n1..n3 + n8.
//   tree-nvl:  J0 fits no domain: leaf1, domains best fit, d1 (n1 n2) then
//              d2 (n3); J1 likewise d3 + n7 under leaf2. nodes: as tree.
//              gpus: B to the first domain with the fewest free, d2 (n4);
//              H at 100 on d1, d2's n3 and d4's n8: three domains.
//   block:     J0 level 1, the last of the tied pairs, d3+d4: d4 (the
//              last of the fullest) then n5; J1 d1+d2: n3 n4 then n1. H
//              waits with n2 and n6 free. nodes: at 100 only d3+d4 holds
//              H: its reservation n5..n8; B takes n2. gpus: B goes to the
//              last of the emptiest blocks, d3 (n6), and H waits for it
//              to end at 502.
//   block-seg: J0 and J1 (3 nodes, a prime) are three 1-node segments,
//              each to the block with the fewest free, ties to the last:
//              J0 n7 n8 (d4) n5 (d3), J1 n6 (d3) n3 n4 (d2). H is two
//              segments of 2: at 100 d1 and d4 have two free nodes, so
//              its reservation is n1 n2 n7 n8, the only node free now (n1
//              or n2) is in it, and B waits; H starts at 100 and B after
//              it (n5). gpus: B takes n1 and H, with one whole block at
//              100, waits for B to end at 502.
//   firstfit:  J0 n1..n3, J1 n4..n6. nodes: H's reservation is the first 4
//              free at 100, n1..n3 + n7; B takes n8. gpus: B takes n7, H
//              n1..n3 + n8.
//   m2g:       J0 d1 + n3, J1 d3 + n7 (prefer:nvlink, fewest domains). nodes:
//              select/m2g in will-run mode on the nodes free at 100 gives
//              H d1 + d2 (n1..n4); B takes n8; H starts at 100 in two
//              domains. gpus: B takes n4 (the best-fit domain), and at 100
//              H has no two whole domains: it waits for its prefer wait and
//              then takes n1..n3 + n8.
TEST(SimReservation, EveryPolicyKeepsTheHeadsNodesFree)
{
    const Trace t = trace_of({{"J0", 0, 100, 12}, {"J1", 0, 1000, 12}, {"H", 1, 10, 16}, {"B", 2, 500, 4}});
    struct Want {
        SimPolicy p;
        bool by_nodes;
        Nodes j1, h, b;
        double h_start, b_start;  // H's -1: later than 100 (m2g's prefer wait)
    } wants[] = {
        {SimPolicy::Tree, true, {4, 5, 6}, {0, 1, 2, 3}, {7}, 100, 2},
        {SimPolicy::Tree, false, {4, 5, 6}, {0, 1, 2, 7}, {3}, 100, 2},
        {SimPolicy::TreeNvl, true, {4, 5, 6}, {0, 1, 2, 3}, {7}, 100, 2},
        {SimPolicy::TreeNvl, false, {4, 5, 6}, {0, 1, 2, 7}, {3}, 100, 2},
        {SimPolicy::Block, true, {0, 2, 3}, {4, 5, 6, 7}, {1}, 100, 2},
        {SimPolicy::Block, false, {0, 2, 3}, {4, 5, 6, 7}, {5}, 502, 2},
        {SimPolicy::BlockSeg, true, {2, 3, 5}, {0, 1, 6, 7}, {4}, 100, 100},
        {SimPolicy::BlockSeg, false, {2, 3, 5}, {0, 1, 6, 7}, {0}, 502, 2},
        {SimPolicy::FirstFit, true, {3, 4, 5}, {0, 1, 2, 6}, {7}, 100, 2},
        {SimPolicy::FirstFit, false, {3, 4, 5}, {0, 1, 2, 7}, {6}, 100, 2},
        {SimPolicy::M2G, true, {4, 5, 6}, {0, 1, 2, 3}, {7}, 100, 2},
        {SimPolicy::M2G, false, {4, 5, 6}, {0, 1, 2, 7}, {3}, -1, 2},
    };
    for (const Want& w : wants) {
        SCOPED_TRACE(std::string(to_string(w.p)) + (w.by_nodes ? " nodes" : " gpus"));
        SimOptions o;
        o.policy = w.p;
        o.reserve_nodes = w.by_nodes;
        const SimResult r = simulate(tiny(), t, o);
        const bool block = w.p == SimPolicy::Block || w.p == SimPolicy::BlockSeg;
        EXPECT_EQ(job(r, "J0").placed, block ? (Nodes{4, 6, 7}) : (Nodes{0, 1, 2}));
        EXPECT_EQ(job(r, "J1").placed, w.j1);
        EXPECT_EQ(job(r, "H").placed, w.h);
        EXPECT_EQ(job(r, "B").placed, w.b);
        if (w.h_start < 0)
            EXPECT_GT(job(r, "H").start, 100);
        else
            EXPECT_EQ(job(r, "H").start, w.h_start);
        EXPECT_EQ(job(r, "B").start, w.b_start);
        EXPECT_EQ(job(r, "B").backfilled, w.b_start == 2);
    }
}

// topology/tree as Slurm 26.05's _eval_nodes_topo(), by hand from the
// code. A domain D (a0..a3) under no switch, and a root R over two leaf
// switches of three nodes each. A 4-node job: D and R both have room; the
// top switch is the highest-level one, R, and its leaves are tied (neither
// holds 4, same parent, same count), so the first, L1, then L2: b4..b7,
// two leaves, where D alone would have held it. A 3-node job: R again;
// both leaves hold 3 with the same count: the first, L1.
TEST(SimTree, TopSwitchIsTheHighestWithRoomAsInEvalNodesTopo)
{
    const Model m = build_model(parse_m2g_conf("NodeName=a[0-3] Gpus=4\nNodeName=b[4-9] Gpus=4\n"
                                               "DomainName=D Nodes=a[0-3]\n"
                                               "SwitchName=L1 Level=leaf Nodes=b[4-6]\n"
                                               "SwitchName=L2 Level=leaf Nodes=b[7-9]\n"
                                               "SwitchName=R Level=spine Switches=L[1-2]\n",
                                               "t"));
    auto placer = make_tree_placer(m, true);
    auto names = [&](const std::vector<int>& nodes) {
        std::string s;
        for (int n : nodes)
            s += (s.empty() ? "" : " ") + m.nodes[n].name;
        return s;
    };
    std::vector<uint8_t> all(m.nodes.size(), 1);
    std::vector<int> out;
    ASSERT_TRUE(placer->place(4, all, out));
    EXPECT_EQ(names(out), "b4 b5 b6 b7");
    ASSERT_TRUE(placer->place(3, all, out));
    EXPECT_EQ(names(out), "b4 b5 b6");
    // With L1 and L2 half busy, R has 2 free nodes: the top is D.
    std::vector<uint8_t> f = all;
    for (const char* busy : {"b4", "b5", "b7", "b8"})
        f[m.find_node(busy)] = 0;
    ASSERT_TRUE(placer->place(3, f, out));
    EXPECT_EQ(names(out), "a0 a1 a2");
    EXPECT_FALSE(placer->place(5, f, out));  // 6 free, but no switch has 5: it waits
}

// Three levels (topology.conf order A1 A2 PA B1 PB R, the fabric alone):
// a 5-node job's top is R; the seed is A1 (the first, and the fuller of
// the two pods when neither holds 5); then A2, two hops from A1, beats B1,
// four hops away, though B1 alone would hold the last two: A1 + A2 + one
// node of B1. Best fit over R's leaves would have taken A1 + B1.
TEST(SimTree, LeavesCloseToThoseChosenFirstAsInEvalNodesTopo)
{
    const Model m = build_model(parse_m2g_conf("NodeName=a[1-4] Gpus=4\nNodeName=b[1-2] Gpus=4\n"
                                               "SwitchName=A1 Level=leaf Nodes=a[1-3]\n"
                                               "SwitchName=A2 Level=leaf Nodes=a4\n"
                                               "SwitchName=PA Level=spine Switches=A[1-2]\n"
                                               "SwitchName=B1 Level=leaf Nodes=b[1-2]\n"
                                               "SwitchName=PB Level=spine Switches=B1\n"
                                               "SwitchName=R Level=core Switches=PA,PB\n",
                                               "t"));
    auto placer = make_tree_placer(m, false);
    std::vector<uint8_t> all(m.nodes.size(), 1);
    std::vector<int> out;
    ASSERT_TRUE(placer->place(5, all, out));
    std::string got;
    for (int n : out)
        got += (got.empty() ? "" : " ") + m.nodes[n].name;
    EXPECT_EQ(got, "a1 a2 a3 a4 b1");
}

// backfill.csv again with limits from the trace (--time-limits-from-trace,
// SWF field 9): j2 asks for 60 s, so it ends by the head's shadow time
// (2 + 60 <= 100) and is backfilled; asking for 120 s it would not, and
// waits for j1 as in PlansWithTimeLimitsWhenJobsHaveThem. j3 runs 200 s
// but asks for 150: Slurm ends it at its limit (TIMEOUT), and so does the
// simulator. A job without a limit is an error that says what is needed.
TEST(SimBackfill, TimeLimitsFromTheTrace)
{
    auto with_j2_limit = [](double j2_limit) {
        return trace_of({{"j0", 0, 100, 24, 100},
                         {"j1", 1, 10, 32, 20},
                         {"j2", 2, 50, 8, j2_limit},
                         {"j3", 3, 200, 8, 150}});
    };
    for (SimPolicy p : kAll) {
        SCOPED_TRACE(to_string(p));
        SimOptions o;
        o.policy = p;
        o.time_limits_from_trace = true;
        const SimResult r = simulate(tiny(), with_j2_limit(60), o);
        EXPECT_EQ(job(r, "j2").start, 2);
        EXPECT_TRUE(job(r, "j2").backfilled);
        EXPECT_EQ(job(r, "j1").start, 100);
        EXPECT_EQ(job(r, "j3").start, 110);
        EXPECT_EQ(job(r, "j3").end, 260);  // 110 + its 150 s limit, not its 200 s of work
        const SimResult w = simulate(tiny(), with_j2_limit(120), o);
        EXPECT_EQ(job(w, "j2").start, 110);
        EXPECT_EQ(w.backfilled, 0);
    }
    SimOptions o;
    o.time_limits_from_trace = true;
    try {
        simulate(tiny(), trace_of({{"j0", 0, 100, 4, 0}}), o);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "job j0: no time limit in the trace (SWF field 9, requested time); --time-limits-from-trace "
                  "needs one for every job");
    }
    EXPECT_DOUBLE_EQ(read_trace(kDir + "tiny.swf").jobs[0].limit, 100);
}

namespace {

// An id with the prefix that is (or is not) in the preempting QOS at 50%.
std::string qos_id(const std::string& prefix, bool preemptor)
{
    for (int i = 0;; ++i)
        if (sim_preemptor(prefix + std::to_string(i), 50) == preemptor)
            return prefix + std::to_string(i);
}

}  // namespace

// Four 2-node jobs fill tiny.conf's four NVLink domains, started 100 s
// apart; at t=1000 a 2-node preemptor arrives. Stock cons_tres removes the
// candidates in preempt/qos's order (node count, then submission) until the
// job fits: the oldest, which has run longest (8 GPUs x 1000 s). select/m2g
// clears the domain whose eviction loses least: the youngest (8 x 700 s).
// Either way the preemptor starts at once in one domain, the victim's nodes
// all its own, and the victim is requeued: with 1800 s checkpoints it loses
// everything it ran and the 300 s of restart overhead it redoes when it
// starts again, as the preemptor ends.
TEST(SimPreempt, M2GClearsTheDomainThatLosesLeastStockTheFirstInPluginOrder)
{
    const std::string w = qos_id("w", false), x = qos_id("x", false), y = qos_id("y", false),
                      z = qos_id("z", false), p = qos_id("p", true);
    const Trace t = trace_of({{w, 0, 5000, 8}, {x, 100, 5000, 8}, {y, 200, 5000, 8}, {z, 300, 5000, 8},
                              {p, 1000, 1000, 8}});
    for (SimPolicy pol : {SimPolicy::Block, SimPolicy::M2G}) {
        SCOPED_TRACE(to_string(pol));
        SimOptions o;
        o.policy = pol;
        o.preempt_pct = 50;
        const SimResult r = simulate(tiny(), t, o);
        const std::string victim = pol == SimPolicy::M2G ? z : w;
        const double age = pol == SimPolicy::M2G ? 700 : 1000;
        EXPECT_EQ(job(r, p).start, 1000);
        EXPECT_TRUE(job(r, p).preemptor);
        EXPECT_TRUE(job(r, p).preempted_start);
        EXPECT_EQ(job(r, p).domains, 1);
        EXPECT_EQ(job(r, p).victims, 1);
        EXPECT_EQ(job(r, p).wasted, 0);
        EXPECT_DOUBLE_EQ(job(r, p).evicted_gpu_s, 8 * age);
        EXPECT_EQ(job(r, victim).preemptions, 1);
        EXPECT_EQ(job(r, p).placed, job(r, victim).placed);  // the victim's domain
        EXPECT_DOUBLE_EQ(job(r, victim).lost_gpu_s, 8 * (age + 300));  // and the restart it redoes
        // Restarted at 2000 when the preemptor ended: 300 s overhead + all 5000 s again.
        EXPECT_DOUBLE_EQ(job(r, victim).end, 2000 + 300 + 5000);
        for (const std::string& other : {w, x, y, z})
            if (other != victim) {
                EXPECT_EQ(job(r, other).preemptions, 0);
                EXPECT_EQ(job(r, other).end, job(r, other).start + 5000);
            }
        EXPECT_EQ(r.preemptors, 1);
        EXPECT_EQ(r.preempting_starts, 1);
        EXPECT_EQ(r.victims, 1);
        EXPECT_EQ(r.wasted_evictions, 0);
        EXPECT_DOUBLE_EQ(r.preemptor_containment, 1.0);
        EXPECT_DOUBLE_EQ(r.evicted_gpu_s, 8 * age);
        EXPECT_DOUBLE_EQ(r.preempt_lost_gpu_s, 8 * (age + 300));
    }
}

// A checkpoint keeps the work before it: a victim that ran 2000 s with
// 1800 s checkpoints loses 200 s and the 300 s of restart it redoes, and
// runs 300 + 3200 s when it starts again. Preemptors queue ahead of the others,
// never preempt each other, and with preemption off nothing is evicted.
TEST(SimPreempt, CheckpointsLimitTheLossAndPreemptorsQueueFirst)
{
    const std::string v = qos_id("v", false), q = qos_id("q", false), p1 = qos_id("p", true);
    std::string p2 = qos_id("pp", true);
    // The whole cluster (8 nodes) for v from 0; p1 (8 nodes) at 2000
    // evicts it; q (1 node) at 2100 and p2 (8 nodes) at 2200 both wait for
    // p1, p2 first although q was submitted before it; then v, back in its
    // place by submission (before q), from 3500 to 3500 + 300 + 3200.
    const Trace t = trace_of({{v, 0, 5000, 32}, {p1, 2000, 1000, 32}, {q, 2100, 100, 4}, {p2, 2200, 500, 32}});
    SimOptions o;
    o.policy = SimPolicy::M2G;
    o.preempt_pct = 50;
    const SimResult r = simulate(tiny(), t, o);
    EXPECT_EQ(job(r, p1).start, 2000);
    EXPECT_DOUBLE_EQ(job(r, v).lost_gpu_s, 32 * (200.0 + 300));
    EXPECT_EQ(job(r, p2).start, 3000);  // after p1, not by preempting it
    EXPECT_FALSE(job(r, p2).preempted_start);
    EXPECT_EQ(job(r, v).end, 3500 + 300 + 3200);
    EXPECT_EQ(job(r, q).start, 7000);
    EXPECT_EQ(job(r, v).preemptions, 1);
    EXPECT_EQ(r.preempting_starts, 1);

    o.preempt_pct = 0;
    const SimResult off = simulate(tiny(), t, o);
    EXPECT_EQ(off.victims, 0);
    EXPECT_EQ(job(off, p1).start, 5000);
    EXPECT_EQ(job(off, v).end, 5000);
}

TEST(SimPreempt, BadOptionsSayWhatIsAccepted)
{
    const Trace t = trace_of({{"a", 0, 10, 4}});
    SimOptions o;
    o.preempt_pct = 120;
    EXPECT_THROW(simulate(tiny(), t, o), Error);
    o.preempt_pct = 10;
    o.preemptor_topology = "tight";
    EXPECT_THROW(simulate(tiny(), t, o), ParseError);
}
