// PlacementSession::adopt(): select/m2g's policy on a model, signals and
// health the caller holds (`m2g simulate`, `m2g place --signals`), and what
// decide() reports for `m2g place` (the engine's placement, why a job
// waits). On tiny.conf (test/fixtures/sim/):
//
//          leaf1           leaf2
//        d1      d2      d3      d4      NVLink domains
//      n1 n2   n3 n4   n5 n6   n7 n8     4 GPUs each (model nodes 0..7)
//      maint.  n3 degraded
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/model/config.hpp"
#include "core/place/session.hpp"

using namespace m2g;

namespace {

constexpr int64_t kNow = 1795982400;

using Offer = Outcome::Offer;
using Nodes = std::vector<int>;

class Adopt : public testing::Test {
  protected:
    Adopt() : model_(load_model(M2G_FIXTURES "/sim/tiny.conf"))
    {
        Signals s;
        s.generated_at = kNow;
        MaintenanceWindow w;
        w.id = "mw1";
        w.start = kNow - 60;
        w.end = kNow + 3600;
        w.nodes = {0, 1};
        s.maintenance = {w};
        view_.snap = std::make_shared<const Signals>(s);
        view_.state = FeedState::Fresh;
        view_.age_s = 0;
        ClusterState health;
        health.node_degraded.assign(8, 0);
        health.node_degraded[2] = 1;
        session_.adopt(model_, [this](int64_t) { return view_; }, health);
    }

    Outcome decide(int nodes, int min_nodes, const std::string& topology = "strict:nvlink")
    {
        JobFacts f;
        f.job_id = 1;
        f.spank_env = {"M2G_TOPOLOGY=" + topology};
        f.nodes = nodes;
        f.min_nodes = min_nodes;
        f.gpus_per_node = 4;
        f.time_limit_s = 3600;
        return session_.decide(f, offered_, 8, [](int) { return 4; }, SelectMode::RunNow, kNow);
    }

    Model model_;
    SignalsView view_;
    PlacementSession session_{SessionLog{}, 0};
    std::vector<uint8_t> offered_ = std::vector<uint8_t>(8, 1);
};

}  // namespace

TEST_F(Adopt, PlacesWithTheCallersSignalsAndHealth)
{
    ASSERT_TRUE(session_.active());
    EXPECT_EQ(session_.model_nodes(), 8u);
    // d1 is in maintenance, d2 has a degraded node: d3, the first best fit.
    const Outcome o = decide(2, 2);
    ASSERT_EQ(o.offer, Offer::Narrowed);
    EXPECT_EQ(o.nodes, (Nodes{4, 5}));
    EXPECT_EQ(o.ruled_out, (Nodes{0, 1}));
    EXPECT_TRUE(o.placement.ok);
    EXPECT_EQ(o.placement.nodes, o.nodes);
    EXPECT_EQ(o.placement.reason, o.reason);
    EXPECT_EQ(o.signals, "maintenance mw1: 2 nodes avoided");
}

TEST_F(Adopt, SaysWhyAJobWaits)
{
    // Six nodes offered after maintenance, five of them healthy.
    const Outcome waits = decide(6, 6);
    EXPECT_EQ(waits.offer, Offer::Refuse);
    EXPECT_EQ(waits.verdict, SelectVerdict::Waiting);
    EXPECT_FALSE(waits.placement.ok);
    EXPECT_FALSE(waits.reason.empty());
    EXPECT_EQ(waits.reason, waits.placement.reason);
    EXPECT_EQ(waits.signals, "maintenance mw1: 2 nodes avoided");

    // Seven: fewer nodes left than the job accepts, before any placement.
    const Outcome blocked = decide(7, 7);
    EXPECT_EQ(blocked.offer, Offer::Refuse);
    EXPECT_EQ(blocked.verdict, SelectVerdict::Blocked);
    EXPECT_EQ(blocked.reason, "maintenance mw1: 2 nodes avoided");
}

TEST_F(Adopt, AnyIsLeftToConsTresOnWhatTheGateAllows)
{
    const Outcome o = decide(3, 3, "any");
    EXPECT_EQ(o.offer, Offer::Stock);
    EXPECT_EQ(o.ruled_out, (Nodes{0, 1}));
    EXPECT_TRUE(o.nodes.empty());
}

TEST_F(Adopt, StartsAreBookedAgainstTheCallersSnapshot)
{
    // A site budget of 9.5 kW with no draw reported; 4 GPUs x 413 W per
    // training node, 3.304 kW a 2-node job.
    Signals s = *view_.snap;
    s.maintenance.clear();
    s.site.budget_kw = 9.5;
    s.site.draw_kw = 0;
    view_.snap = std::make_shared<const Signals>(s);
    JobFacts f;
    f.job_id = 2;
    f.spank_env = {"M2G_CLASS=training", "M2G_TOPOLOGY=any"};
    f.nodes = 2;
    f.min_nodes = 2;
    f.gpus_per_node = 4;
    auto test = [&] {
        return session_.decide(f, offered_, 8, [](int) { return 4; }, SelectMode::RunNow, kNow).offer;
    };
    EXPECT_EQ(test(), Offer::Stock);
    session_.job_started(f, {4, 5}, kNow);
    EXPECT_EQ(test(), Offer::Stock);  // 6.196 kW free
    session_.job_started(f, {6, 7}, kNow);
    EXPECT_EQ(test(), Offer::Refuse);  // 2.892 kW free
    // A later snapshot reports them (here: it reports nothing): the booking goes.
    s.generated_at = kNow + 1;
    view_.snap = std::make_shared<const Signals>(s);
    EXPECT_EQ(session_.decide(f, offered_, 8, [](int) { return 4; }, SelectMode::RunNow, kNow + 1).offer,
              Offer::Stock);
}
