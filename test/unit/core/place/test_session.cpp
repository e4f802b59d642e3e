// PlacementSession: select/m2g's policy as the adapters see it — what
// decide() tells them to do with Slurm's offer for strict, prefer and any
// jobs, with and without signals, in each select mode; what job_started()
// books; and load()'s keep-the-previous-model rule. On a small cluster:
//
//                  spine
//            ┌───────┴───────┐
//          leaf1           leaf2
//        ┌───┴───┐       ┌───┴───┐
//        d1      d2      d3      d4      NVLink domains
//      n1 n2   n3 n4   n5 n6   n7 n8     4 GPUs each (model nodes 0..7)
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/base/time.hpp"
#include "core/job/annotation.hpp"
#include "core/place/session.hpp"

using namespace m2g;

namespace {

// A waiting text's typed fields (wait=, need=, over=) are what the reader
// derives from its reason sentence alone, as for a record written before
// them: old and new records of the same wait explain alike.
void expect_typed_as_legacy(const std::string& text)
{
    const PlacementAnnotation typed = parse_placement(text);
    EXPECT_EQ(typed.state, PlacementState::Waiting) << text;
    EXPECT_NE(typed.wait, WaitCause::None) << text;
    PlacementAnnotation legacy = typed;
    legacy.wait = WaitCause::None;
    legacy.need = 0;
    legacy.over.clear();
    const std::string old_text = format(legacy);
    EXPECT_EQ(old_text.find(" wait="), std::string::npos) << old_text;
    EXPECT_EQ(parse_placement(old_text), typed) << text;
}

const char* const kCluster =
    "ClusterName=sessiontest\n"
    "NodeName=n[1-8] Gpus=4\n"
    "DomainName=d1 Nodes=n[1-2]\n"
    "DomainName=d2 Nodes=n[3-4]\n"
    "DomainName=d3 Nodes=n[5-6]\n"
    "DomainName=d4 Nodes=n[7-8]\n"
    "SwitchName=leaf1 Level=leaf Domains=d[1-2]\n"
    "SwitchName=leaf2 Level=leaf Domains=d[3-4]\n"
    "SwitchName=spine Level=spine Switches=leaf[1-2]\n"
    "DefaultPowerPerGpuW=500\n";  // 2 kW per 4-GPU node

using Offer = Outcome::Offer;

class Session : public testing::Test {
  protected:
    Session()
    {
        char tmpl[] = "/tmp/m2g-session-XXXXXX";
        if (mkdtemp(tmpl))
            dir_ = tmpl;
    }
    ~Session() override
    {
        session_.shutdown();
        for (const char* f : {"/m2g.conf", "/signals.json", "/health1.json", "/health2.json"})
            std::remove((dir_ + f).c_str());
        rmdir(dir_.c_str());
    }

    void write(const std::string& name, const std::string& text)
    {
        std::ofstream(dir_ + "/" + name, std::ios::trunc) << text;
    }

    // Load the cluster, with `extra` m2g.conf lines and, when `signals` is
    // not empty, a signals feed (its generated_at is kNow).
    void load(const std::string& extra = "", const std::string& signals = "")
    {
        std::string conf = kCluster + extra;
        if (!signals.empty()) {
            write("signals.json", "{\"schema\": \"m2g.signals/v1\", \"generated_at\": " + std::to_string(now_) +
                                      ", " + signals + "}");
            conf += "SignalsFile=" + dir_ + "/signals.json\nSignalsTTLSec=86400\nSignalsPollSec=3600\n";
        }
        write("m2g.conf", conf);
        ASSERT_TRUE(session_.load(dir_ + "/m2g.conf", now_)) << joined_logs();
    }

    // A job of `nodes` nodes with 4 GPUs each, eligible now.
    JobFacts job(const std::string& topology, int nodes, const std::string& cls = "") const
    {
        JobFacts f;
        f.job_id = 42;
        f.spank_env = {"PATH=/bin", "M2G_TOPOLOGY=" + topology};
        if (!cls.empty())
            f.spank_env.push_back("M2G_CLASS=" + cls);
        f.nodes = nodes;
        f.min_nodes = nodes;
        f.gpus_per_node = 4;
        f.time_limit_s = 3600;
        return f;
    }

    // Slurm offers every node; free_[i] GPUs are free on model node i.
    Outcome decide(const JobFacts& f, SelectMode mode)
    {
        return session_.decide(f, offered_, static_cast<int>(offered_.size()),
                               [this](int mi) { return free_.at(mi); }, mode, now_);
    }

    // A run-now test of prefer:nvlink job `id` (2 nodes) at time t.
    Outcome prefer_at(uint32_t id, int64_t t)
    {
        JobFacts f = job("prefer:nvlink", 2);
        f.job_id = id;
        return session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, t);
    }

    std::string joined_logs() const
    {
        std::string out;
        for (const auto& l : logs_)
            out += l.second + "\n";
        return out;
    }

    // What the adapter would write after cons_tres took every offered node.
    std::string placed(const Outcome& o) const
    {
        std::vector<std::string> names;
        for (int mi : o.nodes)
            names.push_back("n" + std::to_string(mi + 1));
        return session_.placed_annotation(o, names);
    }

    // Real time: the feed's poll thread judges generated_at by the clock.
    const int64_t now_ = time(nullptr);
    std::string dir_;
    std::vector<std::pair<LogLevel, std::string>> logs_;
    std::vector<std::string> details_;
    PlacementSession session_{SessionLog{[this](LogLevel l, const std::string& m) { logs_.emplace_back(l, m); },
                                         [this](const std::string& m) { details_.push_back("verbose: " + m); },
                                         [this](const std::string& m) { details_.push_back("debug: " + m); }},
                              0};
    std::vector<uint8_t> offered_ = std::vector<uint8_t>(8, 1);
    std::vector<int> free_ = std::vector<int>(8, 4);
};

TEST_F(Session, WithoutModelCons_tresDecides)
{
    EXPECT_FALSE(session_.active());
    EXPECT_EQ(session_.model_nodes(), 0u);
    const Outcome o = session_.decide(job("strict:nvlink", 2), {}, 8, nullptr, SelectMode::RunNow, now_);
    EXPECT_EQ(o.offer, Offer::Stock);
    EXPECT_EQ(o.verdict_after(true), SelectVerdict::Stock);
    EXPECT_TRUE(o.annotation_now.empty());
}

TEST_F(Session, StrictJobThatFitsOneDomainIsNarrowedToIt)
{
    load();
    EXPECT_EQ(session_.find_node("n3"), 2);
    EXPECT_EQ(session_.find_node("x9"), -1);
    free_[0] = 0;  // n1 busy: d1 cannot take two nodes, d2 fits exactly
    const Outcome o = decide(job("strict:nvlink", 2), SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{2, 3}));
    EXPECT_TRUE(o.ruled_out.empty());
    EXPECT_FALSE(o.fallback_to_allowed);  // strict: never cons_tres on everything
    EXPECT_TRUE(o.annotation_now.empty());
    EXPECT_TRUE(o.annotate_placed);
    EXPECT_EQ(o.verdict_after(true), SelectVerdict::Placed);
    EXPECT_EQ(o.verdict_after(false), SelectVerdict::Waiting);
    EXPECT_EQ(placed(o), "domains=d2 leaves=leaf1 policy=strict:nvlink score=0 reason=d2, best fit (0 of 2 nodes "
                         "left free there)");
}

TEST_F(Session, StrictJobThatCannotFitWaitsWithTheReason)
{
    load();
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};  // one free node per domain
    const Outcome o = decide(job("strict:nvlink", 2), SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Refuse);
    EXPECT_EQ(o.verdict_after(false), SelectVerdict::Waiting);
    EXPECT_EQ(o.annotation_now,
              "waiting policy=strict:nvlink wait=nvlink-domain need=2 reason=waiting for an NVLink domain with 2 free "
              "healthy nodes (best now: d1 with 1)");
    expect_typed_as_legacy(o.annotation_now);
    // Planning looks past the busy nodes: the job could run in d1 later;
    // only run-now writes AdminComment.
    const Outcome later = decide(job("strict:nvlink", 2), SelectMode::WillRun);
    ASSERT_EQ(later.offer, Offer::Narrowed);
    EXPECT_EQ(later.nodes, (std::vector<int>{0, 1}));
    EXPECT_TRUE(later.annotation_now.empty());
    EXPECT_FALSE(later.annotate_placed);
}

// Will-run with the running jobs' end times: the job is planned on the
// placement whose nodes free first, so Slurm's backfill reserves those (and
// not the first domain in rank order, which may free last).
// Every rack busy: Slurm offers fewer nodes than the job needs (it leaves
// out the fully allocated ones) and no signal ruled anything out. The
// job waits for nodes, and its AdminComment says so in the engine's
// words, never an empty cause ("Job 20 is waiting: ; policy strict:nvlink."
// in `m2g explain`, as seen on the 26.05 testbed).
TEST_F(Session, JobOfferedTooFewNodesWaitsForNodesWithTheReason)
{
    load();
    offered_ = {1, 0, 0, 0, 0, 0, 0, 0};
    free_ = {4, 0, 0, 0, 0, 0, 0, 0};
    const Outcome o = session_.decide(job("strict:nvlink", 2), offered_, 1,
                                      [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, now_);
    EXPECT_EQ(o.offer, Offer::Refuse);
    EXPECT_EQ(o.verdict_after(false), SelectVerdict::Waiting);
    EXPECT_FALSE(o.reason.empty());
    EXPECT_EQ(o.annotation_now, "waiting policy=strict:nvlink wait=nodes need=2 reason=waiting for 2 free healthy "
                                "nodes under one switch (usable now: 1)");
    expect_typed_as_legacy(o.annotation_now);
}

// srun -N1-64 on a cluster of 8 nodes: Slurm asks for 64 (req_nodes is
// the maximum) and accepts 1. The job gets as many nodes as its intent
// allows, never more than are free: it waited for 64 nodes that do not
// exist (Slurm's regression suite, test_116_42, found it).
TEST_F(Session, AJobAcceptingARangeOfNodesGetsTheMostItsIntentAllows)
{
    load();
    JobFacts f = job("strict:nvlink", 64);
    f.min_nodes = 1;
    f.max_nodes = 64;
    Outcome o = decide(f, SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed) << o.reason;
    EXPECT_EQ(o.nodes.size(), 8u) << "every node, in whole domains";
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};  // one free node per domain
    o = decide(f, SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed) << o.reason;
    EXPECT_EQ(o.nodes.size(), 1u);
    // Under the spine it takes every free node.
    o = decide(job("any", 64), SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Stock) << "locality any: cons_tres takes what is free";
    f = job("strict:spine", 64);
    f.min_nodes = 2;
    f.max_nodes = 64;
    free_.assign(8, 4);
    o = decide(f, SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed) << o.reason;
    EXPECT_EQ(o.nodes.size(), 8u);
    // Below its minimum it waits, and says for what.
    free_ = {4, 0, 0, 0, 0, 0, 0, 0};
    o = decide(f, SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Refuse);
    EXPECT_NE(o.annotation_now.find("need=2"), std::string::npos) << o.annotation_now;
}

TEST_F(Session, WillRunPlansOnTheDomainThatFreesFirst)
{
    load();
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};  // n2, n4, n6, n8 busy: no domain whole now
    const std::vector<int64_t> ends = {0, now_ + 500, 0, now_ + 100, 0, now_ + 300, 0, now_ + 200};
    const FreeAt free_at = [&](int mi, int) { return ends.at(mi); };
    const JobFacts f = job("strict:nvlink", 2);
    const Outcome o = session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::WillRun,
                                      now_, free_at);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{2, 3}));  // d2: n4 ends first
    EXPECT_NE(o.reason.find("best fit"), std::string::npos) << o.reason;  // the answer's own words, not a probe's
    // A 4-node job needs two domains under one leaf: d3+d4 (free at +300)
    // before d1+d2 (+500).
    const Outcome four = session_.decide(job("strict:leaf", 4), offered_, 8,
                                         [this](int mi) { return free_.at(mi); }, SelectMode::WillRun, now_, free_at);
    ASSERT_EQ(four.offer, Offer::Narrowed);
    EXPECT_EQ(four.nodes, (std::vector<int>{4, 5, 6, 7}));
    // Without end times (the simulator offers the nodes free at the time it
    // asks about): the best fit among everything offered, d1.
    EXPECT_EQ(decide(f, SelectMode::WillRun).nodes, (std::vector<int>{0, 1}));
    // Run-now never looks at them.
    EXPECT_EQ(session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, now_,
                              free_at)
                  .offer,
              Offer::Refuse);
}

// The session keeps the nodes' free-time order between will-run answers
// (a backfill pass asks many jobs of one state); the answer still follows
// the times of each call, the nodes offered in it, and is the same with
// and without a reason to write (the probes differ: the simulator's path
// places its first guess whole).
TEST_F(Session, WillRunFollowsEachCallsFreeTimesAndOffer)
{
    load();
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};
    std::vector<int64_t> ends = {0, now_ + 500, 0, now_ + 100, 0, now_ + 300, 0, now_ + 200};
    const FreeAt free_at = [&](int mi, int) { return ends.at(mi); };
    const JobFacts f = job("strict:nvlink", 2);
    auto answer = [&](const std::vector<uint8_t>& offer) {
        const int total = static_cast<int>(std::count(offer.begin(), offer.end(), uint8_t{1}));
        return session_.decide(f, offer, total, [this](int mi) { return free_.at(mi); }, SelectMode::WillRun, now_,
                               free_at);
    };
    for (const bool reasons : {true, false}) {
        session_.set_will_run_reasons(reasons);
        ends = {0, now_ + 500, 0, now_ + 100, 0, now_ + 300, 0, now_ + 200};
        EXPECT_EQ(answer(offered_).nodes, (std::vector<int>{2, 3})) << "d2: n4 ends first";
        ends = {0, now_ + 500, 0, now_ + 400, 0, now_ + 300, 0, now_ + 50};
        EXPECT_EQ(answer(offered_).nodes, (std::vector<int>{6, 7})) << "the times moved: d4 now";
        std::vector<uint8_t> held = offered_;
        held[7] = 0;  // another reservation holds n8
        EXPECT_EQ(answer(held).nodes, (std::vector<int>{4, 5})) << "d4 is not whole in the offer: d3";
        EXPECT_EQ(answer(offered_).nodes, (std::vector<int>{6, 7})) << "n8 offered again";
    }
    session_.set_will_run_reasons(true);
}

// A job taking one GPU of a node waits for one GPU, not for the node:
// the will-run answer plans it where a GPU frees first (NodeReleases, as
// select/m2g reads slurmctld's running jobs), here n2 at +50 although n2's
// other job runs to +900 and n1 is empty only at +300.
TEST_F(Session, WillRunPlansAOneGpuJobWhereAGpuFreesFirstNotTheWholeNode)
{
    load();
    free_ = {0, 0, 0, 0, 0, 0, 0, 0};
    NodeReleases rel;
    rel.reset(8);
    rel.add(0, now_ + 300, 4);
    rel.add(1, now_ + 50, 1);
    rel.add(1, now_ + 900, 3);
    for (int mi = 2; mi < 8; ++mi)
        rel.add(mi, now_ + 600, 4);
    const FreeAt free_at = [&](int mi, int gpus) { return rel.free_at(mi, gpus, free_.at(mi)); };
    JobFacts one = job("strict:nvlink", 1);
    one.gpus_per_node = 1;
    const Outcome o = session_.decide(one, offered_, 8, [this](int mi) { return free_.at(mi); },
                                      SelectMode::WillRun, now_, free_at);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{1}));
    // A job of whole nodes still waits for them: n1, empty at +300.
    const Outcome whole = session_.decide(job("strict:nvlink", 1), offered_, 8,
                                          [this](int mi) { return free_.at(mi); }, SelectMode::WillRun, now_, free_at);
    ASSERT_EQ(whole.offer, Offer::Narrowed);
    EXPECT_EQ(whole.nodes, (std::vector<int>{0}));
}

// A job that takes part of a node goes to the node it leaves the fewest
// GPUs free on, so whole nodes stay whole: in d1 (the best-fitting domain,
// first in rank among equals) n2 with 2 free, not the empty n1.
TEST_F(Session, AJobTakingPartOfANodeFillsTheFullestNodeThatHoldsIt)
{
    load();
    free_ = {4, 2, 4, 4, 4, 4, 4, 4};
    JobFacts two = job("strict:nvlink", 1);
    two.gpus_per_node = 2;
    Outcome o = decide(two, SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{1}));
    // Three GPUs do not fit on n2: n1.
    two.gpus_per_node = 3;
    o = decide(two, SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{0}));
    // Whole nodes: rank order within the domain, as before.
    free_ = {4, 4, 4, 4, 4, 4, 4, 4};
    o = decide(job("strict:nvlink", 1), SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{0}));
}

TEST(NodeReleases, AnswersWhenANodeHasTheGpusAJobNeeds)
{
    NodeReleases r;
    r.reset(3);
    r.add(0, 200, 2);
    r.add(0, 100, 1);
    // Node 0: one GPU free now, one back at 100, two at 200.
    EXPECT_EQ(r.free_at(0, 1, 1), 0);
    EXPECT_EQ(r.free_at(0, 2, 1), 100);
    EXPECT_EQ(r.free_at(0, 4, 1), 200);
    EXPECT_EQ(r.free_at(0, 0, 1), 200);  // the whole node: every job ended
    // A holder of unknown GPUs (--exclusive): free of it only when it ends.
    r.add(1, 50, 1);
    r.add(1, 400, -1);
    EXPECT_EQ(r.free_at(1, 1, 3), 400);
    EXPECT_EQ(r.free_at(2, 4, 4), 0);  // nothing runs there
    EXPECT_EQ(r.free_at(7, 1, 0), 0);  // outside the table
    r.reset(3);
    EXPECT_EQ(r.free_at(0, 4, 4), 0);
}

// The will-run answer tries first the time the first domain has the job's
// nodes free; when the engine will not place there (d2's NVLink is down) the
// answer is the next domain's, as without the guess.
TEST_F(Session, WillRunLooksPastADomainThatFreesFirstButIsFaulted)
{
    write("health1.json", R"({"nvlink_fault": "d2"})");
    load("HealthFile=" + dir_ + "/health1.json\n");
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};
    const std::vector<int64_t> ends = {0, now_ + 500, 0, now_ + 100, 0, now_ + 300, 0, now_ + 200};
    const FreeAt free_at = [&](int mi, int) { return ends.at(mi); };
    const Outcome o = session_.decide(job("strict:nvlink", 2), offered_, 8,
                                      [this](int mi) { return free_.at(mi); }, SelectMode::WillRun, now_, free_at);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{6, 7}));  // d4, free at +200
}

TEST_F(Session, PreferJobFallsBackOnceItsWaitIsOver)
{
    load();
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};  // one free node per domain: 2 nodes fit only across domains
    JobFacts f = job("prefer:nvlink", 2);
    auto at = [&](int64_t t) {
        return session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, t);
    };
    // A lesser placement is free at its turn: the prefer wait starts now.
    const Outcome before = at(now_);
    EXPECT_EQ(before.offer, Offer::Refuse);
    EXPECT_EQ(before.verdict_after(false), SelectVerdict::Waiting);
    EXPECT_TRUE(before.clock_started);
    EXPECT_EQ(before.fallback_at, now_ + 300);
    EXPECT_EQ(session_.prefer_since(42), now_);
    EXPECT_EQ(before.annotation_now.rfind("waiting policy=prefer:nvlink wait=nvlink-domain need=2 prefer_since=" +
                                              std::to_string(now_) + " reason=waiting for an NVLink domain",
                                          0),
              0u)
        << before.annotation_now;
    EXPECT_EQ(parse_placement(before.annotation_now).prefer_since, now_);
    expect_typed_as_legacy(before.annotation_now);

    const Outcome still = at(now_ + 299);  // PreferWaitSec=300 not over: the clock runs on
    EXPECT_EQ(still.offer, Offer::Refuse);
    EXPECT_FALSE(still.clock_started);
    EXPECT_EQ(still.fallback_at, now_ + 300);

    const Outcome after = at(now_ + 300);
    ASSERT_EQ(after.offer, Offer::Narrowed);  // best effort, still the closest nodes
    EXPECT_EQ(after.nodes, (std::vector<int>{0, 2}));  // d1 and d2, under one leaf
    EXPECT_TRUE(after.fallback_to_allowed);
    EXPECT_EQ(after.fallback_at, 0);
    EXPECT_EQ(after.verdict_after(true), SelectVerdict::Placed);
    EXPECT_EQ(after.verdict_after(false), SelectVerdict::Stock);

    // Nothing free at all: the engine finds nothing, the job says why and
    // cons_tres decides on everything allowed.
    free_.assign(8, 0);
    const Outcome none = at(now_ + 400);
    EXPECT_EQ(none.offer, Offer::Stock);
    EXPECT_EQ(none.verdict_after(true), SelectVerdict::Stock);
    EXPECT_EQ(none.annotation_now.rfind("waiting policy=prefer:nvlink wait=nodes need=2 reason=waiting for 2 ", 0), 0u)
        << none.annotation_now;
    expect_typed_as_legacy(none.annotation_now);

    // Its start ends the clock.
    session_.job_started(f, {0, 2}, now_ + 401);
    EXPECT_EQ(session_.prefer_since(42), 0);
}

// Time in the queue is not prefer wait: the clock starts at the first
// run-now test in which the job could have started short of its intent,
// however long ago it was submitted. Planning and test-only never start it.
TEST_F(Session, PreferWaitCountsFromWhenTheJobCouldFirstHaveStarted)
{
    load();
    JobFacts f = job("prefer:nvlink", 2);
    auto at = [&](int64_t t, SelectMode mode = SelectMode::RunNow) {
        return session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, mode, t);
    };
    free_ = {4, 0, 0, 0, 0, 0, 0, 0};  // one free node: nothing fits, not even across domains
    Outcome o = at(now_);
    EXPECT_EQ(o.offer, Offer::Refuse);
    EXPECT_FALSE(o.clock_started);
    EXPECT_EQ(o.fallback_at, 0);
    EXPECT_EQ(o.annotation_now.find("prefer_since="), std::string::npos) << o.annotation_now;
    EXPECT_EQ(session_.prefer_since(42), 0);

    free_ = {4, 0, 4, 0, 0, 0, 0, 0};  // two free nodes in two domains, an hour later
    o = at(now_ + 3600, SelectMode::WillRun);
    EXPECT_FALSE(o.clock_started);  // backfill planning is no start
    o = at(now_ + 3600, SelectMode::TestOnly);
    EXPECT_FALSE(o.clock_started);
    EXPECT_EQ(session_.prefer_since(42), 0);
    o = at(now_ + 3600);
    EXPECT_EQ(o.offer, Offer::Refuse);  // an hour in the queue, and the wait only begins
    EXPECT_TRUE(o.clock_started);
    EXPECT_EQ(o.fallback_at, now_ + 3600 + 300);
    // The wait is over: planning may use the lesser placement too.
    o = at(now_ + 3900);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_TRUE(o.fallback_to_allowed);

    // A job a strict or any intent: no clock.
    JobFacts s = job("strict:nvlink", 2);
    s.job_id = 43;
    EXPECT_FALSE(session_.decide(s, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, now_)
                     .clock_started);
    EXPECT_EQ(session_.prefer_since(43), 0);
}

// After a slurmctld restart the session has no clocks: the adapter passes
// the one its waiting annotation recorded (prefer_since=), and the wait
// goes on from there rather than starting again.
TEST_F(Session, PreferClockSurvivesARestartThroughTheAnnotation)
{
    load();
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};
    JobFacts f = job("prefer:nvlink", 2);
    f.prefer_since = now_ - 300;
    const Outcome o = session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow,
                                      now_);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_TRUE(o.fallback_to_allowed);
    EXPECT_FALSE(o.clock_started);
    EXPECT_EQ(session_.prefer_since(42), now_ - 300);
    // A clock in the future (a clock skew, a hand edit) is ignored.
    JobFacts g = job("prefer:nvlink", 2);
    g.job_id = 44;
    g.prefer_since = now_ + 100;
    const Outcome og = session_.decide(g, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow,
                                       now_);
    EXPECT_EQ(og.offer, Offer::Refuse);
    EXPECT_TRUE(og.clock_started);
    EXPECT_EQ(session_.prefer_since(44), now_);
}

// Jobs cancelled while pending never start: their clocks go once no test
// has seen them for a day, checked at most hourly.
TEST_F(Session, PreferClocksOfVanishedJobsAreForgotten)
{
    load();
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};
    prefer_at(1, now_);
    prefer_at(2, now_);
    EXPECT_EQ(session_.prefer_clocks(), 2u);
    prefer_at(2, now_ + 80000);         // job 2 still tested
    prefer_at(3, now_ + 86400 + 3600);  // an hour later, a sweep: job 1 was last seen over a day ago
    EXPECT_EQ(session_.prefer_since(1), 0);
    EXPECT_EQ(session_.prefer_since(2), now_);
    EXPECT_EQ(session_.prefer_clocks(), 2u);
}

// A test that sees the job keeps its clock whatever it answers, and so
// does still_waiting() (the simulator's backfill calls it for the jobs it
// had no need to test): a job blocked by signals for a day has waited,
// not vanished.
TEST_F(Session, PreferClocksOfJobsStillSeenStay)
{
    load();
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};
    prefer_at(1, now_);
    prefer_at(2, now_);
    EXPECT_EQ(session_.prefer_clocks(), 2u);
    session_.still_waiting(1, now_ + 80000);
    session_.still_waiting(3, now_ + 80000);  // no clock: none is made
    prefer_at(2, now_ + 86400 + 3600);  // a sweep: job 1 was seen 10,000 s ago, job 2 over a day ago
    EXPECT_EQ(session_.prefer_since(1), now_);
    EXPECT_EQ(session_.prefer_since(2), now_ + 86400 + 3600);  // forgotten, then started again
    EXPECT_EQ(session_.prefer_since(3), 0);
    EXPECT_EQ(session_.prefer_clocks(), 2u);
}

TEST_F(Session, DefaultTopologyComesFromThePartition)
{
    load("PartitionName=gpu DefaultTopology=strict:leaf\n");
    JobFacts f = job("", 2);
    f.spank_env = {};
    f.partition = "gpu";
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};
    Outcome o = decide(f, SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed) << o.annotation_now;
    EXPECT_EQ(o.policy, "strict:leaf");
    f.partition = "other";  // the cluster-wide prefer:nvlink
    o = decide(f, SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Refuse);
    EXPECT_EQ(o.annotation_now.rfind("waiting policy=prefer:nvlink ", 0), 0u) << o.annotation_now;
}

TEST_F(Session, TestOnlyIsNeverBlockedBySignals)
{
    load("", "\"power\": {\"site\": {\"budget_kw\": 10, \"draw_kw\": 10}}, "
             "\"maintenance\": [{\"id\": \"mw-1\", \"start\": " + std::to_string(now_ - 60) +
                 ", \"end\": " + std::to_string(now_ + 7200) + ", \"nodes\": \"n[1-2]\"}]");
    const JobFacts f = job("prefer:nvlink", 2, "training");  // deferrable: waits for site power
    const Outcome now = decide(f, SelectMode::RunNow);
    EXPECT_EQ(now.offer, Offer::Refuse);
    EXPECT_EQ(now.verdict_after(false), SelectVerdict::Blocked);
    EXPECT_TRUE(now.ruled_out.empty());  // blocked before anything is cleared
    EXPECT_EQ(now.annotation_now, "waiting policy=prefer:nvlink wait=site-power reason=site power: 0.0 kW free of "
                                  "10.0 kW, maintenance mw-1: 2 nodes avoided");
    expect_typed_as_legacy(now.annotation_now);
    const Outcome later = decide(f, SelectMode::WillRun);
    EXPECT_EQ(later.offer, Offer::Refuse);
    EXPECT_EQ(later.verdict_after(false), SelectVerdict::Blocked);
    EXPECT_TRUE(later.annotation_now.empty());
    // Could it ever run? Yes, anywhere: neither power nor maintenance answers that.
    const Outcome ever = decide(f, SelectMode::TestOnly);
    ASSERT_EQ(ever.offer, Offer::Narrowed);
    EXPECT_EQ(ever.nodes, (std::vector<int>{0, 1}));
    EXPECT_TRUE(ever.ruled_out.empty());
    EXPECT_TRUE(ever.annotation_now.empty());
    EXPECT_EQ(ever.signals, "");
}

TEST_F(Session, MaintenanceClearsNodesFromEveryPath)
{
    load("", "\"maintenance\": [{\"id\": \"mw-1\", \"start\": " + std::to_string(now_ - 60) +
                 ", \"end\": " + std::to_string(now_ + 7200) + ", \"nodes\": \"n[1-2]\"}]");
    // any: cons_tres decides, on what maintenance leaves.
    Outcome o = decide(job("any", 2), SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Stock);
    EXPECT_EQ(o.ruled_out, (std::vector<int>{0, 1}));
    EXPECT_TRUE(o.annotation_now.empty());
    EXPECT_EQ(o.annotation_accepted, "policy=any maintenance mw-1: 2 nodes avoided");
    // strict: the placement avoids them and says so.
    o = decide(job("strict:nvlink", 2), SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{2, 3}));
    EXPECT_EQ(o.ruled_out, (std::vector<int>{0, 1}));
    EXPECT_EQ(placed(o), "domains=d2 leaves=leaf1 policy=strict:nvlink score=0 reason=d2, best fit (0 of 2 nodes "
                         "left free there) signals=maintenance mw-1: 2 nodes avoided");
    // Fewer nodes left than the job's minimum: blocked, after clearing.
    o = decide(job("prefer:nvlink", 7), SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Refuse);
    EXPECT_EQ(o.verdict_after(false), SelectVerdict::Blocked);
    EXPECT_EQ(o.ruled_out, (std::vector<int>{0, 1}));
    EXPECT_EQ(o.annotation_now, "waiting policy=prefer:nvlink wait=maintenance reason=maintenance mw-1: 2 nodes avoided");
    expect_typed_as_legacy(o.annotation_now);
}

// apply() carries an Outcome out in one order for select/m2g, the simulator
// and `m2g place`: a recording cons_tres shows each call.
struct RecordingOffer {
    std::vector<std::string> calls;
    bool only_accepts = true, offer_accepts = true;
    OfferActions actions()
    {
        OfferActions a;
        a.rule_out = [this](const std::vector<int>& n) { calls.push_back("rule_out " + std::to_string(n.size())); };
        a.test_offer = [this] {
            calls.push_back("offer");
            return offer_accepts;
        };
        a.test_only = [this](const std::vector<int>& n) {
            calls.push_back("only " + std::to_string(n.size()));
            return only_accepts;
        };
        a.annotate = [this](const std::string& t) { calls.push_back("annotate " + t.substr(0, t.find(' '))); };
        a.chosen = [] { return std::vector<std::string>{"n3", "n4"}; };
        return a;
    }
};

TEST_F(Session, ApplyFallsBackToTheOfferOnlyWhenTheOutcomeAllowsIt)
{
    load("", "\"maintenance\": [{\"id\": \"mw-1\", \"start\": " + std::to_string(now_ - 60) +
                 ", \"end\": " + std::to_string(now_ + 7200) + ", \"nodes\": \"n[1-2]\"}]");
    // strict, cons_tres refuses the narrowed set: the job waits, nothing else is asked.
    const Outcome strict = decide(job("strict:nvlink", 2), SelectMode::RunNow);
    ASSERT_EQ(strict.offer, Offer::Narrowed);
    RecordingOffer r;
    r.only_accepts = false;
    Applied a = session_.apply(strict, r.actions());
    EXPECT_EQ(r.calls, (std::vector<std::string>{"rule_out 2", "only 2"}));
    EXPECT_FALSE(a.accepted);
    EXPECT_EQ(a.verdict, SelectVerdict::Waiting);
    // accepted: the placed part is written with the nodes cons_tres chose.
    r = RecordingOffer{};
    a = session_.apply(strict, r.actions());
    EXPECT_EQ(r.calls, (std::vector<std::string>{"rule_out 2", "only 2", "annotate domains=d2"}));
    EXPECT_EQ(a.verdict, SelectVerdict::Placed);

    // prefer with its wait over, refused: cons_tres on the cleared offer.
    JobFacts f = job("prefer:nvlink", 2);
    f.wait_over = true;
    const Outcome prefer = decide(f, SelectMode::RunNow);
    ASSERT_EQ(prefer.offer, Offer::Narrowed);
    ASSERT_TRUE(prefer.fallback_to_allowed);
    r = RecordingOffer{};
    r.only_accepts = false;
    a = session_.apply(prefer, r.actions());
    EXPECT_EQ(r.calls, (std::vector<std::string>{"rule_out 2", "only 2", "offer"}));
    EXPECT_TRUE(a.accepted);
    EXPECT_EQ(a.verdict, SelectVerdict::Stock);

    // any: cons_tres on the cleared offer; the accepted text only when it accepts.
    const Outcome any = decide(job("any", 2), SelectMode::RunNow);
    r = RecordingOffer{};
    a = session_.apply(any, r.actions());
    EXPECT_EQ(r.calls, (std::vector<std::string>{"rule_out 2", "offer", "annotate policy=any"}));
    r = RecordingOffer{};
    r.offer_accepts = false;
    a = session_.apply(any, r.actions());
    EXPECT_EQ(r.calls, (std::vector<std::string>{"rule_out 2", "offer"}));
    EXPECT_FALSE(a.accepted);

    // refused by the gate: cleared, the waiting text written, no cons_tres.
    const Outcome blocked = decide(job("prefer:nvlink", 7), SelectMode::RunNow);
    r = RecordingOffer{};
    a = session_.apply(blocked, r.actions());
    EXPECT_EQ(r.calls, (std::vector<std::string>{"rule_out 2", "annotate waiting"}));
    EXPECT_EQ(a.verdict, SelectVerdict::Blocked);
}

// Racks and rows over budget that leave too few nodes: the record names them.
TEST_F(Session, PowerWaitsNameTheRacksOverBudget)
{
    load("FaultDomain=row2 Type=row Domains=d[3-4]\n",
         "\"power\": {\"racks\": {\"d1\": {\"budget_kw\": 10, \"draw_kw\": 10}, "
         "\"d2\": {\"budget_kw\": 10, \"draw_kw\": 9}}, \"rows\": {\"row2\": {\"budget_kw\": 20, \"draw_kw\": 19}}}");
    // 5 nodes of 2 kW: d1 and d2 take none, row2 not the 10 kW job.
    Outcome o = decide(job("prefer:nvlink", 5, "training"), SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Refuse);
    EXPECT_EQ(o.verdict_after(false), SelectVerdict::Blocked);
    EXPECT_EQ(o.annotation_now,
              "waiting policy=prefer:nvlink wait=rack-power over=d1,d2 reason=rack d1 over budget: 0.0 kW free, job "
              "needs 2.0 kW/node, rack d2 over budget: 1.0 kW free, job needs 2.0 kW/node, row row2 over budget: 1.0 "
              "kW free, job needs 10.0 kW");
    expect_typed_as_legacy(o.annotation_now);
}

TEST_F(Session, RowWaitsNameTheRow)
{
    load("FaultDomain=row2 Type=row Domains=d[3-4]\n",
         "\"power\": {\"rows\": {\"row2\": {\"budget_kw\": 20, \"draw_kw\": 19}}}");
    // 7 nodes: row2's 4 cannot take the 14 kW job, 4 nodes are left.
    const Outcome o = decide(job("prefer:nvlink", 7, "training"), SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Refuse);
    EXPECT_EQ(o.annotation_now, "waiting policy=prefer:nvlink wait=row-power over=row2 reason=row row2 over budget: "
                                "1.0 kW free, job needs 14.0 kW");
    expect_typed_as_legacy(o.annotation_now);
}

TEST_F(Session, JobsThatNameTheirNodesAreSlurms)
{
    load("", "\"power\": {\"site\": {\"budget_kw\": 10, \"draw_kw\": 10}}");
    logs_.clear();  // the feed's "fresh" line
    JobFacts f = job("strict:nvlink", 2, "training");
    f.names_nodes = true;
    f.spank_env.push_back("M2G_SEGMENT=not-a-number");  // not even decoded
    const Outcome o = decide(f, SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Stock);
    EXPECT_EQ(o.verdict_after(true), SelectVerdict::Stock);
    EXPECT_TRUE(o.ruled_out.empty());
    EXPECT_TRUE(o.annotation_now.empty());
    EXPECT_TRUE(o.annotation_accepted.empty());
    EXPECT_TRUE(logs_.empty()) << joined_logs();
}

TEST_F(Session, JobStartedBooksItsPowerUntilTheNextSnapshot)
{
    // Rack d1: 10 kW budget, 5.5 kW drawn: room for two 2 kW nodes.
    load("", "\"power\": {\"racks\": {\"d1\": {\"budget_kw\": 10, \"draw_kw\": 5.5}}}");
    const JobFacts f = job("prefer:nvlink", 2, "training");
    Outcome o = decide(f, SelectMode::RunNow);
    EXPECT_TRUE(o.ruled_out.empty()) << o.reason;
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{0, 1}));

    session_.job_started(f, o.nodes, now_);  // 4 kW more in d1, not yet in the feed
    o = decide(f, SelectMode::RunNow);
    EXPECT_EQ(o.ruled_out, (std::vector<int>{0, 1}));
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{2, 3}));
    EXPECT_EQ(o.signals, "rack d1 over budget: 0.5 kW free, job needs 2.0 kW/node");
    // Not deferrable (no class): power never trims it.
    EXPECT_TRUE(decide(job("prefer:nvlink", 2), SelectMode::RunNow).ruled_out.empty());

    const StatsSnapshot s = session_.counters().snapshot(now_);
    EXPECT_EQ(s.placement_domains.count(), 1u);
    EXPECT_EQ(s.fit_one_domain, 1u);
}

// Under CurtailMode=enforce, work m2g may not curtail that could start now
// but would put the site over its budget waits (wait=power-room, with when
// its wait began, which m2g-curtaild reads) while m2g-curtaild makes room,
// CurtailStartWaitSec at most. Planning is not held, and a job that could
// not start anyway waits for its nodes, not for room.
TEST_F(Session, WorkItMayNotCurtailWaitsForRoomOnlyWhenItCouldStart)
{
    load("CurtailMode=enforce\nCurtailStartWaitSec=30\n",
         "\"power\": {\"site\": {\"budget_kw\": 10, \"draw_kw\": 7}}");
    // 2 nodes x 2 kW (DefaultPowerPerGpuW=500, no event) = 4 kW; 3 kW free.
    const JobFacts f = job("strict:nvlink", 2, "inference");
    auto at = [&](int64_t t, SelectMode mode) {
        return session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, mode, t);
    };
    EXPECT_EQ(at(now_, SelectMode::WillRun).offer, Offer::Narrowed) << "planning is not held";
    Outcome o = at(now_, SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Refuse);
    EXPECT_EQ(o.verdict_after(false), SelectVerdict::Blocked);
    EXPECT_EQ(o.annotation_now, "waiting policy=strict:nvlink wait=power-room room_since=" + std::to_string(now_) +
                                    " reason=site power: 3.0 kW free of 10.0 kW, job needs 4.0 kW, m2g-curtaild is "
                                    "making room (it starts by " + format_utc(now_ + 30) + " regardless)");
    EXPECT_EQ(parse_placement(o.annotation_now).room_since, now_);
    ASSERT_EQ(session_.room_waits().count(42), 1u);
    EXPECT_EQ(session_.room_waits().at(42).since, now_);
    // The wait runs on through the tests that hold it...
    EXPECT_EQ(at(now_ + 29, SelectMode::RunNow).offer, Offer::Refuse);
    EXPECT_EQ(session_.room_waits().at(42).since, now_);
    // ...and is over CurtailStartWaitSec after it began: the job starts.
    o = at(now_ + 30, SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Narrowed);
    EXPECT_FALSE(session_.room_waits().at(42).open);
    // Were it not started, and could it start later, short of room again,
    // it would wait again.
    EXPECT_EQ(at(now_ + 40, SelectMode::RunNow).offer, Offer::Refuse);
    EXPECT_EQ(session_.room_waits().at(42).since, now_ + 40);
    // A gap of CurtailStartWaitSec without a test ends a wait (the job was
    // not tried; it did not wait for room): the next hold starts a new one.
    JobFacts g = f;
    g.job_id = 43;
    auto at43 = [&](int64_t t) {
        return session_.decide(g, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, t);
    };
    EXPECT_EQ(at43(now_ + 100).offer, Offer::Refuse);
    EXPECT_EQ(at43(now_ + 110).offer, Offer::Refuse);
    EXPECT_EQ(session_.room_waits().at(43).since, now_ + 100);
    EXPECT_EQ(at43(now_ + 200).offer, Offer::Refuse);
    EXPECT_EQ(session_.room_waits().at(43).since, now_ + 200);
    EXPECT_EQ(at43(now_ + 229).offer, Offer::Refuse);
    EXPECT_EQ(at43(now_ + 230).offer, Offer::Narrowed);
    // No domain free: it waits for one, not for room, and no wait runs.
    free_ = {0, 4, 0, 4, 0, 4, 0, 4};
    g.job_id = 44;
    o = session_.decide(g, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, now_ + 240);
    EXPECT_EQ(parse_placement(o.annotation_now).wait, WaitCause::NvlinkDomain) << o.annotation_now;
    EXPECT_EQ(session_.room_waits().count(44), 0u);
    // Locality any: held when enough nodes are free.
    free_ = std::vector<int>(8, 4);
    g = job("any", 2, "inference");
    g.job_id = 45;
    o = session_.decide(g, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, now_ + 250);
    EXPECT_EQ(parse_placement(o.annotation_now).wait, WaitCause::PowerRoom) << o.annotation_now;
    // Deferrable work is blocked (site-power), not held for room.
    g = job("strict:nvlink", 2, "training");
    g.job_id = 46;
    o = session_.decide(g, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, now_ + 250);
    EXPECT_EQ(parse_placement(o.annotation_now).wait, WaitCause::SitePower) << o.annotation_now;
}

TEST_F(Session, ABrokenIntentUsesTheDefaults)
{
    load();
    JobFacts f = job("strict:nvlink", 2);
    f.spank_env = {"M2G_TOPOLOGY=sideways"};
    const Outcome o = decide(f, SelectMode::RunNow);
    EXPECT_EQ(o.policy, "prefer:nvlink");
    ASSERT_EQ(logs_.size(), 1u);
    EXPECT_EQ(logs_[0].first, LogLevel::Error);
    EXPECT_EQ(logs_[0].second.rfind("JobId=42: ", 0), 0u) << logs_[0].second;
    EXPECT_NE(logs_[0].second.find("; using the defaults"), std::string::npos) << logs_[0].second;
}

TEST_F(Session, LoadKeepsThePreviousModelOnError)
{
    write("m2g.conf", "NodeName=n[1-2] Gpus=four\n");
    EXPECT_FALSE(session_.load(dir_ + "/m2g.conf", now_));
    EXPECT_FALSE(session_.active());
    ASSERT_EQ(logs_.size(), 1u);
    EXPECT_NE(logs_[0].second.find("; jobs are placed by cons_tres alone"), std::string::npos) << logs_[0].second;

    load();
    EXPECT_EQ(details_.back(), "verbose: m2g.conf loaded: 8 nodes, 4 NVLink domains");
    EXPECT_FALSE(session_.load(dir_ + "/m2g.conf", now_));  // unchanged
    EXPECT_EQ(details_.back(), "debug: m2g.conf unchanged; model and signals feed stay");

    write("m2g.conf", std::string(kCluster) + "DomainName=d5 Nodes=n9\n");
    EXPECT_FALSE(session_.load(dir_ + "/m2g.conf", now_));
    EXPECT_TRUE(session_.active());
    EXPECT_EQ(session_.model_nodes(), 8u);
    EXPECT_NE(logs_.back().second.find("; keeping the previous m2g.conf in force"), std::string::npos)
        << logs_.back().second;
}

// A reloaded m2g.conf (scontrol reconfigure) reads its HealthFile at
// once, not at the next 5-second check, and the old model's health goes.
TEST_F(Session, AReloadReadsItsHealthFileAtOnce)
{
    write("health1.json", R"({"degraded": "n1"})");
    write("health2.json", R"({"degraded": "n3"})");
    load("HealthFile=" + dir_ + "/health1.json\n");
    Outcome o = decide(job("strict:nvlink", 2), SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed) << joined_logs();
    EXPECT_EQ(o.nodes, (std::vector<int>{2, 3}));  // d1 holds the degraded n1
    load("HealthFile=" + dir_ + "/health2.json\n");  // the same second
    o = decide(job("strict:nvlink", 2), SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed) << joined_logs();
    EXPECT_EQ(o.nodes, (std::vector<int>{0, 1}));  // n3 degraded now, n1 no longer
    load();  // no HealthFile: nothing is degraded
    o = decide(job("strict:nvlink", 2), SelectMode::RunNow);
    EXPECT_EQ(o.nodes, (std::vector<int>{0, 1}));
}

TEST(JobNodeCount, FollowsSlurmsRequest)
{
    EXPECT_EQ(job_node_count(2, 0, 0), 2);
    EXPECT_EQ(job_node_count(2, 4, 3), 3);
    EXPECT_EQ(job_node_count(2, 4, 8), 4);
    EXPECT_EQ(job_node_count(2, 0, 8), 8);
    EXPECT_EQ(job_node_count(4, 8, 2), 4);
}

}  // namespace

// sbatch --gpus=8 (or -n4 --gpus-per-task=2) without -N: cons_tres spreads
// the GPUs over as many 4-GPU nodes as hold them; m2g places that many, in
// one domain, instead of looking for one node of 8 GPUs (which made every
// such job "Requested node configuration is not available" at submit).
TEST(ShapeJob, SpreadsGpusAskedInAllOverTheFewestNodesThatHoldThem)
{
    JobFacts f;
    f.nodes = 1, f.min_nodes = 1, f.max_nodes = 1 << 30, f.gpus_total = 8;
    JobFacts s = shape_job(f, 4);
    EXPECT_EQ(s.nodes, 2);
    EXPECT_EQ(s.gpus_per_node, 4);
    f.gpus_total = 6;  // 3 + 3, as even as Slurm's --gpus over 2 nodes allows
    s = shape_job(f, 4);
    EXPECT_EQ(s.nodes, 2);
    EXPECT_EQ(s.gpus_per_node, 3);
    f.gpus_total = 3;  // fits one node
    s = shape_job(f, 4);
    EXPECT_EQ(s.nodes, 1);
    EXPECT_EQ(s.gpus_per_node, 3);
    // -N3 --gpus=8: the job's own count stays, GPUs spread over it.
    f.nodes = f.min_nodes = f.max_nodes = 3, f.gpus_total = 8;
    s = shape_job(f, 4);
    EXPECT_EQ(s.nodes, 3);
    EXPECT_EQ(s.gpus_per_node, 3);
    // -N1-2 --gpus=16: no more than the job allows.
    f.nodes = f.min_nodes = 1, f.max_nodes = 2, f.gpus_total = 16;
    EXPECT_EQ(shape_job(f, 4).nodes, 2);
    // A per-node count wins; no GPUs: unchanged.
    f.gpus_per_node = 4;
    EXPECT_EQ(shape_job(f, 4).nodes, 1);
    JobFacts none;
    EXPECT_EQ(shape_job(none, 4).gpus_per_node, 0);
}

TEST_F(Session, AJobAskingGpusInAllIsPlacedOnTheNodesThatHoldThem)
{
    load();
    free_ = {4, 0, 4, 4, 4, 4, 4, 4};
    JobFacts eight = job("strict:nvlink", 1);
    eight.max_nodes = 1 << 30;
    eight.gpus_per_node = 0;
    eight.gpus_total = 8;
    const Outcome o = decide(eight, SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{2, 3}));  // d2: d1 has one node free
}

// Node weights as topology/block applies them: the domain holding the
// lightest node first (then best fit), its lightest nodes first.
TEST_F(Session, NodeWeightsChooseTheDomainAndNodesAsTopologyBlockDoes)
{
    load();
    // d1 (n1, n2) is heavy: without weights a one-node job goes there first.
    session_.set_node_weights({100, 100, 1, 1, 1, 1, 1, 1});
    Outcome o = decide(job("strict:nvlink", 1), SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{2}));
    // Only d1 holds two free nodes: the weight gives way to the intent.
    free_ = {4, 4, 4, 0, 4, 0, 4, 0};
    o = decide(job("strict:nvlink", 2), SelectMode::RunNow);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (std::vector<int>{0, 1}));
    // A FLEX reservation's node (Slurm lowers its sched_weight for the
    // job) draws the job to its domain, and is taken first there.
    free_ = {4, 4, 4, 4, 4, 4, 4, 4};
    session_.set_node_weights({50, 50, 50, 50, 50, 1, 50, 50});
    o = decide(job("strict:nvlink", 1), SelectMode::RunNow);
    EXPECT_EQ(o.nodes, (std::vector<int>{5}));
    o = decide(job("strict:nvlink", 2), SelectMode::RunNow);
    EXPECT_EQ(o.nodes, (std::vector<int>{4, 5}));  // d3
    // Equal weights: as without any.
    session_.set_node_weights({5, 5, 5, 5, 5, 5, 5, 5});
    free_ = {4, 4, 4, 4, 4, 4, 4, 4};
    o = decide(job("strict:nvlink", 1), SelectMode::RunNow);
    EXPECT_EQ(o.nodes, (std::vector<int>{0}));
}

// With PreemptCheckpointSec= the work a victim loses is the time since its
// last checkpoint (plus PreemptRestartSec= it redoes), not all it ran: a
// job 10 h old that checkpoints hourly loses less than a 40-minute-old one.
TEST_F(Session, PreemptionCountsTheWorkSinceTheVictimsLastCheckpoint)
{
    auto cand = [](uint32_t id, int node, double ran_s) {
        PreemptCandidate c;
        c.job_id = id;
        c.gpus = 4;
        c.ran_s = ran_s;
        c.gpu_hours = 4 * ran_s / 3600;
        c.held = {{node, 4}};
        return c;
    };
    // One free node per domain; the busy one: d1 10 h 5 min, d2 40 min,
    // d3 3 h 50 min, d4 2 h 30 min.
    const std::vector<PreemptCandidate> victims{cand(11, 1, 36300), cand(12, 3, 2400), cand(13, 5, 13800),
                                                cand(14, 7, 9000)};
    auto plan = [&] {
        free_ = {4, 0, 4, 0, 4, 0, 4, 0};
        return session_.decide(job("strict:nvlink", 2), offered_, 8, [this](int mi) { return free_.at(mi); },
                               SelectMode::RunNow, now_, nullptr, &victims);
    };
    load();
    Outcome o = plan();  // without checkpoints: the youngest, job 12
    EXPECT_EQ(o.preempt, (std::vector<uint32_t>{12}));
    EXPECT_DOUBLE_EQ(o.preempt_gpu_hours, 4 * 2400 / 3600.0);
    load("PreemptCheckpointSec=3600\n");
    o = plan();  // since the last checkpoint: 5, 40, 50 and 30 min: job 11
    EXPECT_EQ(o.preempt, (std::vector<uint32_t>{11}));
    EXPECT_DOUBLE_EQ(o.preempt_gpu_hours, 4 * 300 / 3600.0);
    load("PreemptCheckpointSec=3600\nPreemptRestartSec=600\n");
    o = plan();
    EXPECT_EQ(o.preempt, (std::vector<uint32_t>{11}));
    EXPECT_DOUBLE_EQ(o.preempt_gpu_hours, 4 * 900 / 3600.0);
    EXPECT_DOUBLE_EQ(preempt_loss_gpu_hours(8, 5400, 1800, 300), 8 * 300 / 3600.0);
    EXPECT_DOUBLE_EQ(preempt_loss_gpu_hours(8, 5400, 0, 0), 12.0);
    EXPECT_DOUBLE_EQ(preempt_loss_gpu_hours(0, 5400, 0, 0), 0.0);
    // A restarted job redid 300 s first: its checkpoints came at 2100 and 3900 s.
    EXPECT_DOUBLE_EQ(preempt_loss_gpu_hours(8, 5400, 1800, 300, true), 8 * (1500 + 300) / 3600.0);
    EXPECT_DOUBLE_EQ(preempt_loss_gpu_hours(8, 200, 1800, 300, true), 8 * 300 / 3600.0);
}

// Preemption through decide(): a strict job that finds no free domain is
// narrowed to the domain whose preemption loses the least work, names its
// victims, and writes them into the AdminComment; without candidates it
// waits as before, and a job of locality any leaves preemption to cons_tres.
TEST_F(Session, StrictJobPreemptsTheCheapestDomain)
{
    load();
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};  // one free node per domain
    auto cand = [](uint32_t id, int node, double gpu_h) {
        PreemptCandidate c;
        c.job_id = id;
        c.gpu_hours = gpu_h;
        c.held = {{node, 4}};
        return c;
    };
    const std::vector<PreemptCandidate> victims{cand(11, 1, 40), cand(12, 3, 8), cand(13, 5, 20), cand(14, 7, 30)};
    JobFacts f = job("strict:nvlink", 2);
    Outcome o = session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, now_,
                                nullptr, &victims);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_TRUE(o.preempting);
    EXPECT_EQ(o.nodes, (std::vector<int>{2, 3}));  // d2: job 12, 8 GPU-h
    EXPECT_EQ(o.preempt, (std::vector<uint32_t>{12}));
    EXPECT_DOUBLE_EQ(o.preempt_gpu_hours, 8.0);
    const PlacementAnnotation a = parse_placement(placed(o));
    EXPECT_EQ(a.state, PlacementState::Placed);
    EXPECT_EQ(a.domains, (std::vector<std::string>{"d2"}));
    EXPECT_EQ(a.preempted, (std::vector<uint32_t>{12}));
    ASSERT_TRUE(a.evicted_gpu_h);
    EXPECT_DOUBLE_EQ(*a.evicted_gpu_h, 8.0);
    EXPECT_NE(a.reason.find("preempts 1 job(s) (8.0 GPU-h of work) to clear d2"), std::string::npos) << a.reason;
    EXPECT_EQ(parse_placement(format(a)), a);

    // cons_tres accepted it: Slurm evicts job 12, and the test after that
    // (its GPUs free now) places the job without preempting, and names job 12.
    session_.preemption_started(f.job_id, o, now_);
    free_ = {4, 0, 4, 4, 4, 0, 4, 0};
    o = session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, now_ + 5,
                        nullptr, &victims);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_FALSE(o.preempting);
    const PlacementAnnotation later = parse_placement(placed(o));
    EXPECT_EQ(later.preempted, (std::vector<uint32_t>{12}));
    EXPECT_NE(later.reason.find("preempts 1 job(s) (8.0 GPU-h of work) to clear d2: the least work lost of 4 domain(s) preemption could clear "
                                    "(next: d3, 20.0 GPU-h), then d2, best fit"), std::string::npos)
        << later.reason;
    // A plan Slurm dropped (another pass placed the job elsewhere) is not
    // named: only plans on the nodes the job gets are.
    {
        JobFacts g = job("strict:nvlink", 2);
        g.job_id = 77;
        free_ = {4, 0, 4, 0, 4, 0, 4, 0};
        Outcome first = session_.decide(g, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow,
                                        now_, nullptr, &victims);
        ASSERT_TRUE(first.preempting);
        session_.preemption_started(g.job_id, first, now_);  // d2, job 12: then dropped
        free_ = {4, 0, 4, 0, 4, 4, 4, 0};                    // d3 frees by itself
        Outcome then = session_.decide(g, offered_, 8, [this](int mi) { return free_.at(mi); },
                                       SelectMode::RunNow, now_ + 2, nullptr, &victims);
        ASSERT_EQ(then.offer, Offer::Narrowed);
        EXPECT_EQ(then.nodes, (std::vector<int>{4, 5}));
        EXPECT_TRUE(then.evicted.empty());
        EXPECT_FALSE(then.evicted_gpu_h);
        EXPECT_EQ(parse_placement(placed(then)).preempted.size(), 0u);
    }
    // Once it started, another job's placement names nobody.
    session_.job_started(f, o.nodes, now_ + 6);

    // A free domain: no preemption at all.
    free_ = {4, 0, 4, 4, 4, 0, 4, 0};
    o = session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow, now_, nullptr,
                        &victims);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_FALSE(o.preempting);
    EXPECT_TRUE(o.preempt.empty());
    EXPECT_EQ(parse_placement(placed(o)).preempted.size(), 0u);

    // No candidates: it waits.
    free_ = {4, 0, 4, 0, 4, 0, 4, 0};
    o = decide(f, SelectMode::RunNow);
    EXPECT_EQ(o.offer, Offer::Refuse);
    // Locality any: cons_tres decides, with Slurm's own candidates.
    o = session_.decide(job("any", 2), offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::RunNow,
                        now_, nullptr, &victims);
    EXPECT_EQ(o.offer, Offer::Stock);
    EXPECT_FALSE(o.preempting);
    // Prefer, within its wait: preempting keeps it in one domain.
    o = session_.decide(job("prefer:nvlink", 2), offered_, 8, [this](int mi) { return free_.at(mi); },
                        SelectMode::RunNow, now_, nullptr, &victims);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.preempt, (std::vector<uint32_t>{12}));
    // Will-run (backfill asking with candidates) answers with the same plan.
    o = session_.decide(f, offered_, 8, [this](int mi) { return free_.at(mi); }, SelectMode::WillRun, now_, nullptr,
                        &victims);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.preempt, (std::vector<uint32_t>{12}));
}
