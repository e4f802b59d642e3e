// Plugin counters: verdicts, the latency and domains histograms (bucket
// edges included), NVLink containment, the publish clock, the m2g.stats/v1
// file (round trip, atomic replace, every malformed file named), counting
// from many threads, and StatsDir= in m2g.conf.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/obs/stats.hpp"
#include "core/base/keys.hpp"

using namespace m2g;

namespace {

constexpr int64_t kNow = 1795986000;  // 2026-11-29T21:00:00Z

const Model& model()
{
    static const Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    return m;
}

// A scratch directory, removed with its files.
struct TempDir {
    std::string path;
    TempDir()
    {
        char tmpl[] = "/tmp/m2g-stats-XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir()
    {
        if (DIR* d = opendir(path.c_str())) {
            while (dirent* e = readdir(d))
                if (e->d_name[0] != '.')
                    unlink((path + "/" + e->d_name).c_str());
            closedir(d);
        }
        rmdir(path.c_str());
    }
    std::vector<std::string> files() const
    {
        std::vector<std::string> out;
        if (DIR* d = opendir(path.c_str())) {
            while (dirent* e = readdir(d))
                if (e->d_name[0] != '.')
                    out.emplace_back(e->d_name);
            closedir(d);
        }
        return out;
    }
};

std::string parse_error(const std::string& text)
{
    try {
        parse_stats_json(text, "/run/m2g/select.json");
    } catch (const ParseError& e) {
        return e.what();
    }
    return "ok";
}

const std::string kGood =
    R"({"schema": "m2g.stats/v1", "plugin": "select", "pid": 7, "started_at": 100, "written_at": 200,
        "decisions": {"placed": 2, "waiting": 1, "blocked": 0, "stock": 5},
        "latency_us": {"bounds": [10, 25], "counts": [1, 2, 3], "sum": 99.5},
        "placement_domains": {"bounds": [1, 2], "counts": [2, 0, 0], "sum": 2},
        "fit_one_domain": 2, "contained": 2, "x-future": true})";

}  // namespace

TEST(Stats, VerdictNamesAreTheWellKnownOnes)
{
    EXPECT_STREQ(to_string(SelectVerdict::Placed), "placed");
    EXPECT_STREQ(to_string(SelectVerdict::Stock), "stock");
    EXPECT_STREQ(to_string(AdmissionVerdict::Admit), "admit");
    EXPECT_STREQ(to_string(AdmissionVerdict::Released), "released");
    const StatsSnapshot sel = Counters(kw::kPluginSelect, kNow).snapshot(kNow);
    EXPECT_EQ(sel.decisions.size(), kw::kSelectVerdicts.size()) << "every verdict is reported, also at 0";
    const StatsSnapshot adm = Counters(kw::kPluginAdmission, kNow).snapshot(kNow);
    EXPECT_EQ(adm.decisions.size(), kw::kAdmissionVerdicts.size());
    EXPECT_TRUE(adm.placement_domains.bounds.empty()) << "admission has no placements";
}

TEST(Stats, DecisionsCountByVerdict)
{
    Counters c(kw::kPluginAdmission, kNow);
    c.decision(AdmissionVerdict::Admit, 1000);
    c.decision(AdmissionVerdict::Admit, 1000);
    c.decision(AdmissionVerdict::Defer, 2000);
    c.decision(AdmissionVerdict::Released, -1);  // counted, not timed
    c.decision(42, 500);                         // unknown verdict: timed only
    const StatsSnapshot s = c.snapshot(kNow + 5);
    EXPECT_EQ(s.decisions.at("admit"), 2u);
    EXPECT_EQ(s.decisions.at("defer"), 1u);
    EXPECT_EQ(s.decisions.at("pace"), 0u);
    EXPECT_EQ(s.decisions.at("released"), 1u);
    EXPECT_EQ(s.latency_us.count(), 4u);
    EXPECT_DOUBLE_EQ(s.latency_us.sum, 4.5);  // microseconds
    EXPECT_EQ(s.started_at, kNow);
    EXPECT_EQ(s.written_at, kNow + 5);
    EXPECT_EQ(s.pid, static_cast<int64_t>(getpid()));
}

TEST(Stats, LatencyBucketsIncludeTheirUpperBound)
{
    Counters c(kw::kPluginSelect, kNow);
    c.decision(SelectVerdict::Placed, 0);          // le=10
    c.decision(SelectVerdict::Placed, 10000);      // exactly 10 us: le=10
    c.decision(SelectVerdict::Placed, 10001);      // le=25
    c.decision(SelectVerdict::Placed, 5000000);    // exactly 5 ms: le=5000
    c.decision(SelectVerdict::Placed, 5000001);    // +Inf
    c.decision(SelectVerdict::Placed, 90000000000);  // 90 s: +Inf
    const HistogramData h = c.snapshot(kNow).latency_us;
    ASSERT_EQ(h.bounds.size(), kLatencyBoundsUs.size());
    ASSERT_EQ(h.counts.size(), kLatencyBoundsUs.size() + 1);
    EXPECT_EQ(h.counts[0], 2u);
    EXPECT_EQ(h.counts[1], 1u);
    EXPECT_EQ(h.counts[8], 1u);
    EXPECT_EQ(h.counts[9], 2u);
    EXPECT_EQ(h.cumulative(0), 2u);
    EXPECT_EQ(h.cumulative(1), 3u);
    EXPECT_EQ(h.cumulative(8), 4u);
    EXPECT_EQ(h.cumulative(9), h.count()) << "+Inf is everything";
    EXPECT_EQ(h.count(), 6u);
}

TEST(Stats, PlacementDomainsAndContainment)
{
    Counters c(kw::kPluginSelect, kNow);
    c.placement(1, true);    // fits one, in one
    c.placement(1, true);
    c.placement(2, true);    // fits one, split over two
    c.placement(2, false);   // 36 nodes: needs two
    c.placement(5, false);   // le=8
    c.placement(17, false);  // +Inf
    c.placement(0, true);    // nothing placed: ignored
    const StatsSnapshot s = c.snapshot(kNow);
    const HistogramData& h = s.placement_domains;
    ASSERT_EQ(h.counts.size(), kDomainBounds.size() + 1);
    EXPECT_EQ(h.counts[0], 2u);  // le=1
    EXPECT_EQ(h.counts[1], 2u);  // le=2
    EXPECT_EQ(h.counts[4], 1u);  // le=8
    EXPECT_EQ(h.counts[6], 1u);  // +Inf
    EXPECT_EQ(h.count(), 6u);
    EXPECT_DOUBLE_EQ(h.sum, 1 + 1 + 2 + 2 + 5 + 17);
    EXPECT_EQ(s.fit_one_domain, 3u);
    EXPECT_EQ(s.contained, 2u);
}

TEST(Stats, DomainsSpannedAndFitsOneDomain)
{
    const Model& m = model();
    const int r1 = m.find_node("r01n01"), r1b = m.find_node("r01n18"), r2 = m.find_node("r02n05");
    ASSERT_GE(r1, 0);
    ASSERT_GE(r2, 0);
    EXPECT_EQ(domains_spanned(m, {}), 0);
    EXPECT_EQ(domains_spanned(m, {r1, r1b}), 1);
    EXPECT_EQ(domains_spanned(m, {r1, r2, r1b}), 2);
    EXPECT_EQ(domains_spanned(m, {r1, -1, 100000}), 1) << "indices outside the model are ignored";
    EXPECT_TRUE(fits_one_domain(m, 1));
    EXPECT_TRUE(fits_one_domain(m, 18));
    EXPECT_FALSE(fits_one_domain(m, 19));
    EXPECT_FALSE(fits_one_domain(m, 0));
}

TEST(Stats, PublishAtMostOncePerPeriod)
{
    Counters c(kw::kPluginSelect, kNow);
    EXPECT_TRUE(c.publish_due(kNow, 10)) << "the first call publishes";
    EXPECT_FALSE(c.publish_due(kNow, 10));
    EXPECT_FALSE(c.publish_due(kNow + 9, 10));
    EXPECT_TRUE(c.publish_due(kNow + 10, 10));
    EXPECT_FALSE(c.publish_due(kNow + 11, 10));
    EXPECT_TRUE(c.publish_due(kNow - 100, 10)) << "a clock stepped back does not stop publishing";
}

TEST(Stats, CountsFromManyThreadsAddUp)
{
    Counters c(kw::kPluginSelect, kNow);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&c, t] {
            for (int i = 0; i < 20000; ++i) {
                c.decision(static_cast<SelectVerdict>(t), 1000 * (i % 7));
                c.placement(1 + t, t == 0);
            }
        });
    for (auto& th : threads)
        th.join();
    const StatsSnapshot s = c.snapshot(kNow);
    for (const char* v : kw::kSelectVerdicts)
        EXPECT_EQ(s.decisions.at(v), 20000u) << v;
    EXPECT_EQ(s.latency_us.count(), 80000u);
    EXPECT_EQ(s.placement_domains.count(), 80000u);
    EXPECT_EQ(s.fit_one_domain, 20000u);
    EXPECT_EQ(s.contained, 20000u);
}

TEST(Stats, JsonRoundTrip)
{
    Counters c(kw::kPluginSelect, kNow);
    c.decision(SelectVerdict::Placed, 12345);
    c.decision(SelectVerdict::Waiting, 67);
    c.placement(1, true);
    c.placement(3, false);
    const StatsSnapshot a = c.snapshot(kNow + 30);
    const StatsSnapshot b = parse_stats_json(stats_to_json(a), "x");
    EXPECT_EQ(b.plugin, "select");
    EXPECT_EQ(b.pid, a.pid);
    EXPECT_EQ(b.started_at, kNow);
    EXPECT_EQ(b.written_at, kNow + 30);
    EXPECT_EQ(b.decisions, a.decisions);
    EXPECT_EQ(b.latency_us.bounds, a.latency_us.bounds);
    EXPECT_EQ(b.latency_us.counts, a.latency_us.counts);
    EXPECT_DOUBLE_EQ(b.latency_us.sum, 12.412);
    EXPECT_EQ(b.placement_domains.counts, a.placement_domains.counts);
    EXPECT_DOUBLE_EQ(b.placement_domains.sum, 4);
    EXPECT_EQ(b.fit_one_domain, 1u);
    EXPECT_EQ(b.contained, 1u);
    EXPECT_NE(stats_to_json(a).find("\"schema\":\"m2g.stats/v1\""), std::string::npos);
}

TEST(Stats, ParsesTheDocumentedShapeAndIgnoresUnknownKeys)
{
    const StatsSnapshot s = parse_stats_json(kGood, "f");
    EXPECT_EQ(s.decisions.at("stock"), 5u);
    EXPECT_EQ(s.latency_us.count(), 6u);
    EXPECT_DOUBLE_EQ(s.latency_us.sum, 99.5);
    EXPECT_EQ(s.placement_domains.cumulative(0), 2u);
}

TEST(Stats, MalformedFilesAreNamed)
{
    auto with = [](const std::string& from, const std::string& to) {
        std::string t = kGood;
        t.replace(t.find(from), from.size(), to);
        return t;
    };
    EXPECT_NE(parse_error("{").find("/run/m2g/select.json: not valid JSON"), std::string::npos) << parse_error("{");
    EXPECT_NE(parse_error("[]").find("$: expected an object"), std::string::npos);
    EXPECT_NE(parse_error(with("m2g.stats/v1", "m2g.stats/v2")).find("schema: expected \"m2g.stats/v1\""),
              std::string::npos);
    EXPECT_NE(parse_error(with("\"select\"", "\"topology\"")).find("plugin: expected"), std::string::npos);
    EXPECT_NE(parse_error(with("\"counts\": [1, 2, 3]", "\"counts\": [1, 2]")).find("latency_us.counts: expected 3 counts"),
              std::string::npos);
    EXPECT_NE(parse_error(with("\"placed\": 2", "\"placed\": -2")).find("decisions.placed: expected a non-negative integer"),
              std::string::npos);
    EXPECT_NE(parse_error(with("[10, 25]", "[25, 10]")).find("latency_us.bounds: bounds must increase"),
              std::string::npos);
    EXPECT_NE(parse_error(with("\"contained\": 2", "\"contained\": 3")).find("contained: more than fit_one_domain"),
              std::string::npos);
    EXPECT_NE(parse_error(with("\"written_at\": 200,", "")).find("written_at: missing"), std::string::npos);
    EXPECT_NE(parse_error(with("\"sum\": 99.5", "\"sum\": \"x\"")).find("latency_us.sum: expected a number"),
              std::string::npos);
}

TEST(Stats, WriteIsAtomicAndReadsBack)
{
    TempDir dir;
    const std::string path = stats_path(dir.path, kw::kPluginAdmission);
    EXPECT_EQ(path, dir.path + "/admission.json");
    EXPECT_EQ(stats_path(dir.path + "/", kw::kPluginSelect), dir.path + "/select.json");
    Counters c(kw::kPluginAdmission, kNow);
    c.decision(AdmissionVerdict::Pace, 3000);
    write_stats_file(path, c.snapshot(kNow));
    c.decision(AdmissionVerdict::Pace, 3000);
    write_stats_file(path, c.snapshot(kNow + 10));  // replaces it
    const StatsSnapshot s = read_stats_file(path);
    EXPECT_EQ(s.decisions.at("pace"), 2u);
    EXPECT_EQ(s.written_at, kNow + 10);
    EXPECT_EQ(dir.files(), std::vector<std::string>{"admission.json"}) << "no temp file is left behind";
}

TEST(Stats, WriteErrorsNameTheFile)
{
    Counters c(kw::kPluginSelect, kNow);
    try {
        write_stats_file("/nonexistent-m2g-dir/select.json", c.snapshot(kNow));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("/nonexistent-m2g-dir/select.json: cannot create a temporary file", 0), 0u)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("StatsDir="), std::string::npos) << e.what();
    }
    EXPECT_THROW(read_stats_file("/nonexistent-m2g-dir/select.json"), Error);
}

TEST(Stats, WriterPublishesTheLastCountsWhenStopped)
{
    TempDir dir;
    Counters c(kw::kPluginSelect, kNow);
    std::vector<std::string> logs;
    StatsWriter w(c, kw::kPluginSelect, "select/m2g", [&](LogLevel, const std::string& m) { logs.push_back(m); });
    w.stop();  // not running: nothing to do
    w.start(dir.path);
    c.decision(SelectVerdict::Placed, 1000);
    w.stop();
    EXPECT_EQ(read_stats_file(dir.path + "/select.json").decisions.at("placed"), 1u);
    EXPECT_TRUE(logs.empty());

    // A directory that cannot be written: one line per failure streak.
    w.start("/nonexistent-m2g-dir");
    w.stop();
    w.start("/nonexistent-m2g-dir");
    w.stop();
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_NE(logs[0].find("; m2g-exporter will not see select/m2g's counters until this is fixed"),
              std::string::npos)
        << logs[0];
    w.start(dir.path);
    w.stop();
    ASSERT_EQ(logs.size(), 2u);
    EXPECT_EQ(logs[1], "counters written to " + dir.path + "/select.json again");
}

TEST(Stats, StatsDirInM2gConf)
{
    const char* base = "NodeName=n[1-2] Gpus=4\n";
    EXPECT_EQ(parse_m2g_conf(base, "m2g.conf").admission.stats_dir, "") << "default: not published";
    EXPECT_EQ(parse_m2g_conf(std::string(base) + "StatsDir=/run/m2g\n", "m2g.conf").admission.stats_dir, "/run/m2g");
    EXPECT_EQ(parse_m2g_conf(std::string(base) + "statsdir=/run/m2g\n", "m2g.conf").admission.stats_dir, "/run/m2g");
    try {
        parse_m2g_conf(std::string(base) + "StatsDir=run/m2g\n", "m2g.conf");
        FAIL() << "a relative StatsDir was accepted";
    } catch (const ParseError& e) {
        EXPECT_STREQ(e.what(), "m2g.conf:2: StatsDir=run/m2g needs an absolute path");
    }
    EXPECT_THROW(parse_m2g_conf(std::string(base) + "StatsDir=/a\nStatsDir=/b\n", "m2g.conf"), ParseError);
}
