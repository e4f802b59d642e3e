// plan_preemption(): which domain a preemptor clears, which jobs it evicts,
// and what that costs, on a small cluster of three 4-node NVLink domains
// (4 GPUs per node) and one node outside any domain:
//
//                  spine
//            ┌───────┴─────────┐
//          leaf1             leaf2
//    ┌────────┼────────┐       │
//    d1       d2       d3      x1
//  n1..n4   n5..n8   n9..n12        (model nodes 0..11, x1 = 12)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model/config.hpp"
#include "core/place/preempt.hpp"

using namespace m2g;

namespace {

const char* const kCluster =
    "ClusterName=preempttest\n"
    "NodeName=n[1-12] Gpus=4\n"
    "NodeName=x1 Gpus=4\n"
    "DomainName=d1 Nodes=n[1-4]\n"
    "DomainName=d2 Nodes=n[5-8]\n"
    "DomainName=d3 Nodes=n[9-12]\n"
    "SwitchName=leaf1 Level=leaf Domains=d[1-3]\n"
    "SwitchName=leaf2 Level=leaf Nodes=x1\n"
    "SwitchName=spine Level=spine Switches=leaf[1-2]\n";

class Preempt : public testing::Test {
  protected:
    Preempt() : m_(build_model(parse_m2g_conf(kCluster, "test"))) {}

    // A running job `id` holding `gpus` GPUs on each of `nodes` for `hours`.
    void run(uint32_t id, std::vector<int> nodes, int gpus, double hours)
    {
        PreemptCandidate c;
        c.job_id = id;
        for (int n : nodes) {
            c.held.emplace_back(n, gpus);
            free_[n] -= gpus < 0 ? 4 : gpus;
        }
        c.gpu_hours = (gpus < 0 ? 4 : gpus) * static_cast<double>(nodes.size()) * hours;
        cands_.push_back(c);
    }
    PreemptPlan plan(int nodes, int gpn = 4, int segment = 0, bool one_group = true)
    {
        PreemptRequest r;
        r.nodes = nodes;
        r.gpus_per_node = gpn;
        r.segment = segment;
        r.one_group = one_group;
        return plan_preemption(m_, r, allowed_, free_, cands_);
    }

    Model m_;
    std::vector<uint8_t> allowed_ = std::vector<uint8_t>(13, 1);
    std::vector<int> free_ = std::vector<int>(13, 4);
    std::vector<PreemptCandidate> cands_;
};

TEST_F(Preempt, ClearsTheDomainWhoseJobsLoseTheLeastWork)
{
    // d1: one old 4-node job (10 h); d2: two young 2-node jobs (1 h each);
    // d3: a 4-node job of 3 h.
    run(1, {0, 1, 2, 3}, 4, 10);
    run(2, {4, 5}, 4, 1);
    run(3, {6, 7}, 4, 1);
    run(4, {8, 9, 10, 11}, 4, 3);
    const PreemptPlan p = plan(4);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.nodes, (std::vector<int>{4, 5, 6, 7}));
    EXPECT_EQ(p.victims, (std::vector<uint32_t>{2, 3}));
    EXPECT_DOUBLE_EQ(p.gpu_hours, 16.0);  // 2 jobs x 8 GPUs x 1 h
    EXPECT_EQ(p.groups, (std::vector<int>{1}));
    EXPECT_EQ(p.groups_possible, 3);
    EXPECT_DOUBLE_EQ(p.next_gpu_hours, 48.0);  // d3: 16 GPUs x 3 h
    EXPECT_EQ(preempt_group_name(m_, p.next_group), "d3");
    EXPECT_NE(p.reason.find("preempts 2 job(s) (16.0 GPU-h of work) to clear d2"), std::string::npos) << p.reason;
    EXPECT_NE(p.reason.find("next: d3, 48.0 GPU-h"), std::string::npos) << p.reason;
}

TEST_F(Preempt, FreeNodesCostNothingAndOnlyTheNeededVictimsGo)
{
    // d1 has two free nodes and two busy ones; a 3-node job needs one more.
    run(1, {2}, 4, 5);
    run(2, {3}, 4, 2);
    for (int n = 4; n < 12; ++n)
        run(10 + n, {n}, 4, 1);  // d2, d3: 1-node jobs of 4 GPU-h, 12 GPU-h for 3 nodes
    const PreemptPlan p = plan(3);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.victims, (std::vector<uint32_t>{2}));  // 8 GPU-h; job 1 (20 GPU-h) stays
    EXPECT_EQ(p.nodes, (std::vector<int>{0, 1, 3}));
}

TEST_F(Preempt, LeastWorkBeatsFewestJobs)
{
    run(1, {0, 1, 2, 3}, 4, 2);  // d1: one job, 32 GPU-h
    for (int n = 4; n < 8; ++n)
        run(10 + n, {n}, 4, 1);  // d2: four jobs, 16 GPU-h
    for (int n = 8; n < 12; ++n)
        run(20 + n, {n}, 4, 3);
    const PreemptPlan p = plan(4);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.groups, (std::vector<int>{1}));
    EXPECT_EQ(p.victims.size(), 4u);
    EXPECT_DOUBLE_EQ(p.gpu_hours, 16.0);
}

TEST_F(Preempt, EqualWorkThenFewestJobs)
{
    run(1, {0, 1, 2, 3}, 4, 1);  // d1: one job, 16 GPU-h
    for (int n = 4; n < 8; ++n)
        run(10 + n, {n}, 4, 1);  // d2: four jobs, 16 GPU-h
    const PreemptPlan p = plan(4);
    ASSERT_TRUE(p.ok);
    // d3 is free: no preemption needed there, 0 GPU-h.
    EXPECT_EQ(p.groups, (std::vector<int>{2}));
    EXPECT_TRUE(p.victims.empty());
    run(30, {8, 9, 10, 11}, 4, 5);  // now d3 is dear
    const PreemptPlan q = plan(4);
    ASSERT_TRUE(q.ok);
    EXPECT_EQ(q.victims, (std::vector<uint32_t>{1}));
}

TEST_F(Preempt, PartialNodeJobsFreeOnlyTheGpusNeeded)
{
    // Each node of d1 runs a 1-GPU job (young) and a 3-GPU job (old): a
    // 1-GPU-per-node job needs only the young ones.
    for (int n = 0; n < 4; ++n) {
        run(100 + n, {n}, 1, 0.1);
        run(200 + n, {n}, 3, 10);
    }
    for (int n = 4; n < 13; ++n)
        run(300 + n, {n}, 4, 10);
    const PreemptPlan p = plan(4, 1);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.victims, (std::vector<uint32_t>{100, 101, 102, 103}));
    EXPECT_NEAR(p.gpu_hours, 0.4, 1e-9);
}

// Taking the cheapest node one at a time would evict the small job first
// and then the large one anyway; one younger large job frees the nodes for
// less (found by contrib/m2g-preempt-study on the testbed: a 9-node
// preemptor evicted a 1-node job whose node it did not use).
TEST_F(Preempt, OneLargerVictimBeatsCheapNodesThatLeadToIt)
{
    run(1, {0, 1, 2}, 4, 0.75);  // 9 GPU-h for 3 nodes
    run(2, {3}, 4, 0.5);         // 2 GPU-h for 1 node
    for (int n = 4; n < 13; ++n)
        run(10 + n, {n}, 4, 9);
    const PreemptPlan p = plan(3);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.victims, (std::vector<uint32_t>{1}));
    EXPECT_DOUBLE_EQ(p.gpu_hours, 9.0);
    EXPECT_EQ(p.nodes, (std::vector<int>{0, 1, 2}));
    // Two nodes: job 1 alone (9 GPU-h), not job 2 and then job 1 (11).
    const PreemptPlan q = plan(2);
    ASSERT_TRUE(q.ok);
    EXPECT_EQ(q.victims, (std::vector<uint32_t>{1}));
    // One node: the 1-node job.
    const PreemptPlan r = plan(1);
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.victims, (std::vector<uint32_t>{2}));
    EXPECT_EQ(r.nodes, (std::vector<int>{3}));
}

TEST_F(Preempt, AVictimOnSeveralNodesIsCountedOnce)
{
    run(1, {4, 5, 6, 7}, 4, 1);  // d2: one 4-node job, 16 GPU-h
    run(2, {0}, 4, 1.5);          // d1: four 1-node jobs, 6 GPU-h each
    run(3, {1}, 4, 1.5);
    run(4, {2}, 4, 1.5);
    run(5, {3}, 4, 1.5);
    run(6, {8, 9, 10, 11}, 4, 9);
    run(7, {12}, 4, 9);
    const PreemptPlan p = plan(4);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.victims, (std::vector<uint32_t>{1}));
    EXPECT_DOUBLE_EQ(p.gpu_hours, 16.0);
}

TEST_F(Preempt, LeavingJobsCostNothingAndAreNeverNamed)
{
    run(1, {0, 1, 2, 3}, 4, 50);
    cands_.back().leaving = true;  // evicted by an earlier pass, completing
    run(2, {4, 5, 6, 7}, 4, 0.1);
    run(3, {8, 9, 10, 11}, 4, 0.1);
    const PreemptPlan p = plan(4);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.groups, (std::vector<int>{0}));
    EXPECT_TRUE(p.victims.empty());
    EXPECT_DOUBLE_EQ(p.gpu_hours, 0.0);
}

TEST_F(Preempt, JobsOfOtherOwnersBlockANode)
{
    // n1 holds a job Slurm does not offer as a candidate: d1 cannot give 4.
    free_[0] = 0;
    run(2, {1, 2, 3}, 4, 0.1);
    run(3, {4, 5, 6, 7}, 4, 5);
    run(4, {8, 9, 10, 11}, 4, 6);
    const PreemptPlan p = plan(4);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.groups, (std::vector<int>{1}));
    EXPECT_EQ(p.groups_possible, 2);
    allowed_.assign(13, 0);
    for (int n = 0; n < 4; ++n)
        allowed_[n] = 1;  // only d1 offered
    EXPECT_FALSE(plan(4).ok);
}

TEST_F(Preempt, LargerThanADomainTakesTheFewestThenCheapestDomains)
{
    run(1, {0, 1, 2, 3}, 4, 1);
    run(2, {4, 5, 6, 7}, 4, 9);
    run(3, {8, 9, 10, 11}, 4, 2);
    run(4, {12}, 4, 0.01);  // x1, cheapest per node but its own group
    const PreemptPlan p = plan(8);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.groups, (std::vector<int>{0, 2}));
    EXPECT_EQ(p.victims, (std::vector<uint32_t>{1, 3}));
    EXPECT_NE(p.reason.find("in d1,d3"), std::string::npos) << p.reason;
    // 6 nodes: one whole domain and the cheapest 2 nodes of another.
    cands_.clear();
    free_.assign(13, 4);
    run(1, {0, 1, 2, 3}, 4, 1);
    run(5, {4, 5}, 4, 9);
    run(6, {6, 7}, 4, 0.5);
    run(3, {8, 9, 10, 11}, 4, 2);
    const PreemptPlan q = plan(6);
    ASSERT_TRUE(q.ok);
    EXPECT_EQ(q.victims, (std::vector<uint32_t>{1, 6}));
    EXPECT_EQ(q.nodes, (std::vector<int>{0, 1, 2, 3, 6, 7}));
}

TEST_F(Preempt, SegmentsStayWholeInTheirDomain)
{
    // Segments of 2: each domain has a node held by a job that is no
    // candidate, so each can give one segment; the 4-node job takes the
    // cheap pair of d1 and of d2, never 2 nodes split over domains.
    free_[0] = free_[4] = free_[8] = 0;
    run(1, {1, 2}, 4, 0.1);
    run(2, {3}, 4, 9);
    run(3, {5, 6}, 4, 0.1);
    run(4, {7}, 4, 9);
    run(5, {9, 10, 11}, 4, 9);
    const PreemptPlan p = plan(4, 4, 2, false);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.victims, (std::vector<uint32_t>{1, 3}));
    EXPECT_EQ(p.nodes, (std::vector<int>{1, 2, 5, 6}));
    EXPECT_EQ(p.groups, (std::vector<int>{0, 1}));
    // Segments of 4 fit no domain any more.
    EXPECT_FALSE(plan(4, 4, 4, false).ok);
}

TEST_F(Preempt, NothingToPlanWithoutCandidatesOrRoom)
{
    EXPECT_FALSE(plan(4).ok);  // no candidates
    run(1, {0}, 4, 1);
    EXPECT_FALSE(plan(14).ok);  // more nodes than the cluster has
    EXPECT_FALSE(plan(1, 8).ok);  // more GPUs per node than a node has
}

}  // namespace
