// m2g-nodeagent (issue 19): the HTTP-free logic (request parsing, job -> GPU
// resolution from a dcgm-exporter mapping directory, clamping, the cap table
// and its state file, reconcile), NodeAgent over a scripted PowerBackend,
// the libcurl client against the agent's own HTTP server on loopback, and
// NvmlPower (the shared NVML loader, discover/nvml.hpp) over test/fake-nvml.
//
// FakePower stands for NVML: four GPUs with GB200-like limits (default and
// maximum 1200 W, minimum 200 W); a set can be made to fail on one GPU, the
// way nvmlDeviceSetPowerManagementLimit fails with NO_PERMISSION.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "discover/nvml.hpp"
#include "nodeagent/agent.hpp"
#include "nodeagent/agents.hpp"
#include "nodeagent/client.hpp"
#include "nodeagent/nvml_power.hpp"
#include "nodeagent/server.hpp"
#include "core/base/error.hpp"

namespace {

namespace na = m2g::nodeagent;

class FakePower : public na::PowerBackend {
  public:
    explicit FakePower(int n = 4) : limit(n, 1200000), draw(n, 90000) {}
    int gpu_count() override { return static_cast<int>(limit.size()); }
    unsigned draw_mw(int g) override
    {
        check(g);
        return std::min(draw[g], limit[g]);
    }
    na::GpuLimits limits(int g) override
    {
        check(g);
        if (g == fail_read_gpu)
            throw na::BackendError("GPU " + std::to_string(g) + ": nvmlDeviceGetPowerManagementLimit: GPU is lost (15)");
        return {limit[g], 1200000, 200000, 1200000};
    }
    void set_limit_mw(int g, unsigned mw) override
    {
        check(g);
        ++sets;
        if (g == fail_set_gpu)
            throw na::BackendError("GPU " + std::to_string(g) +
                                   ": nvmlDeviceSetPowerManagementLimit: Insufficient Permissions (4)");
        if (mw < 200000 || mw > 1200000)
            throw na::BackendError("GPU " + std::to_string(g) + ": out of range");
        limit[g] = mw;
    }
    void check(int g) const
    {
        if (g < 0 || g >= static_cast<int>(limit.size()))
            throw na::BackendError("GPU " + std::to_string(g) + ": Invalid Argument (2)");
    }

    std::vector<unsigned> limit, draw;
    int fail_set_gpu = -1, fail_read_gpu = -1, sets = 0;
};

// A scratch directory, removed with its files.
class TempDir {
  public:
    TempDir()
    {
        char tmpl[] = "/tmp/m2g-nodeagent-test.XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
    std::string file(const std::string& name) const { return path + "/" + name; }
    void write(const std::string& name, const std::string& text) const { std::ofstream(file(name)) << text; }
    std::string path;
};

// Is `needle` in `hay`? (EXPECT_PRED-friendly, says both on failure)
::testing::AssertionResult has(const std::string& hay, const std::string& needle)
{
    if (hay.find(needle) != std::string::npos)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "'" << needle << "' not in: " << hay;
}

std::string parse_error(const std::string& body)
{
    try {
        na::parse_cap_body(body);
    } catch (const m2g::ParseError& e) {
        return e.what();
    }
    return "(accepted)";
}

}  // namespace

// ---- parsing ------------------------------------------------------------------------------

TEST(NodeAgentParse, JobIds)
{
    EXPECT_EQ(na::parse_job_id("1"), 1u);
    EXPECT_EQ(na::parse_job_id("4242"), 4242u);
    EXPECT_EQ(na::parse_job_id("4294967293"), 4294967293u);
    for (const char* bad : {"", "0", "-1", "12a", "1.5", " 1", "4294967294", "4294967295", "99999999999", "%31"})
        EXPECT_THROW(na::parse_job_id(bad), m2g::ParseError) << bad;
    try {
        na::parse_job_id("abc");
        FAIL();
    } catch (const m2g::ParseError& e) {
        EXPECT_TRUE(has(e.what(), "job id 'abc' is not valid; expected a Slurm job id"));
    }
}

TEST(NodeAgentParse, CapBody)
{
    EXPECT_DOUBLE_EQ(na::parse_cap_body("{\"limit_w\": 300}"), 300);
    EXPECT_DOUBLE_EQ(na::parse_cap_body(" {\"limit_w\":312.5}\n"), 312.5);
    EXPECT_TRUE(has(parse_error(""), "the request has no body"));
    EXPECT_TRUE(has(parse_error("{\"limit_w\":"), "the body is not JSON"));
    EXPECT_TRUE(has(parse_error("limit_w=300"), "the body is not JSON"));
    EXPECT_TRUE(has(parse_error("{\"limit_w\":300} x"), "text after the JSON value"));
    EXPECT_TRUE(has(parse_error("[300]"), "not an object"));
    EXPECT_TRUE(has(parse_error("{}"), "has no \"limit_w\""));
    EXPECT_TRUE(has(parse_error("{\"limit_w\":300,\"gpus\":[0]}"), "unknown key \"gpus\""));
    EXPECT_TRUE(has(parse_error("{\"limit_w\":\"300\"}"), "must be a number of watts, not string"));
    EXPECT_TRUE(has(parse_error("{\"limit_w\":true}"), "must be a number of watts"));
    EXPECT_TRUE(has(parse_error("{\"limit_w\":0}"), "is not a GPU power limit"));
    EXPECT_TRUE(has(parse_error("{\"limit_w\":-5}"), "is not a GPU power limit"));
    EXPECT_TRUE(has(parse_error("{\"limit_w\":1e9}"), "is not a GPU power limit"));
    // Every message says what is accepted.
    EXPECT_TRUE(has(parse_error("{}"), "{\"limit_w\": 300}"));
}

TEST(NodeAgentParse, WattsAndClamp)
{
    EXPECT_EQ(na::watts_to_mw(300), 300000u);
    EXPECT_EQ(na::watts_to_mw(312.5), 312500u);
    EXPECT_EQ(na::mw_text(300000), "300 W");
    EXPECT_EQ(na::mw_text(312500), "312.5 W");
    EXPECT_EQ(na::clamp_limit(300000, 200000, 1200000).mw, 300000u);
    EXPECT_FALSE(na::clamp_limit(300000, 200000, 1200000).clamped);
    EXPECT_EQ(na::clamp_limit(100000, 200000, 1200000).mw, 200000u);
    EXPECT_TRUE(na::clamp_limit(100000, 200000, 1200000).clamped);
    EXPECT_EQ(na::clamp_limit(5000000, 200000, 1200000).mw, 1200000u);
    EXPECT_TRUE(na::clamp_limit(5000000, 200000, 1200000).clamped);
    EXPECT_EQ(na::clamp_limit(200000, 200000, 1200000).mw, 200000u);
    EXPECT_FALSE(na::clamp_limit(1200000, 200000, 1200000).clamped);
}

TEST(NodeAgentParse, Listen)
{
    na::Listen l = na::parse_listen("127.0.0.1:6830");
    EXPECT_EQ(l.port, 6830);
    EXPECT_TRUE(l.loopback);
    EXPECT_EQ(na::parse_listen("[::1]:0").port, 0);
    EXPECT_TRUE(na::parse_listen("[::1]:0").ipv6);
    EXPECT_FALSE(na::parse_listen("0.0.0.0:6830").loopback);
    EXPECT_EQ(na::parse_listen("localhost:7").host, "127.0.0.1");
    auto msg = [](const std::string& t) -> std::string {
        try {
            na::parse_listen(t);
        } catch (const m2g::Error& e) {
            return e.what();
        }
        return "(accepted)";
    };
    EXPECT_TRUE(has(msg("127.0.0.1:http"), "the port 'http' is not a number"));
    EXPECT_TRUE(has(msg("127.0.0.1:"), "is not a number"));
    EXPECT_TRUE(has(msg("127.0.0.1:-1"), "is not a number"));
    EXPECT_TRUE(has(msg("127.0.0.1:65536"), "port 65536 is out of range"));
    EXPECT_TRUE(has(msg("127.0.0.1:99999"), "out of range; it is 0 to 65535"));
    EXPECT_TRUE(has(msg("node1:6830"), "'node1' is not a numeric IPv4 or IPv6 address"));
    EXPECT_TRUE(has(msg("6830"), "expected HOST:PORT"));
}

// ---- the job mapping directory ----------------------------------------------------------

TEST(NodeAgentMap, ReadsDcgmMappingFiles)
{
    TempDir d;
    d.write("0", "101\n102\n");
    d.write("1", "101\n");
    d.write("2", "");           // idle GPU: the file spank_m2g leaves empty is not a job
    d.write("3", "\n 103 \r\n101\n101\n");
    d.write("README", "101\n");  // not a GPU index
    d.write("5", "not-a-job\n");
    const na::JobMap m = na::read_job_map(d.path);
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m.at(0), (std::vector<uint32_t>{101, 102}));
    EXPECT_EQ(m.at(3), (std::vector<uint32_t>{103, 101}));
    EXPECT_EQ(na::job_gpus(m, 101), (std::vector<int>{0, 1, 3}));
    EXPECT_EQ(na::job_gpus(m, 102), (std::vector<int>{0}));
    EXPECT_TRUE(na::job_gpus(m, 999).empty());
    EXPECT_TRUE(na::read_job_map(d.file("nonexistent")).empty());
    EXPECT_EQ(na::gpu_list_text({0, 1, 3}), "0,1,3");
}

TEST(NodeAgentMap, UnreadableDirectoryIsAnError)
{
    TempDir d;
    d.write("file", "x");
    EXPECT_THROW(na::read_job_map(d.file("file")), m2g::Error);  // not a directory
}

TEST(NodeAgentMap, TargetsAndEndedJobs)
{
    na::CapTable caps;
    caps[101] = {101, 300000, {{0, 300000}, {1, 300000}}};
    caps[102] = {102, 250000, {{1, 250000}, {2, 250000}}};
    EXPECT_EQ(na::gpu_target(caps, 0), 300000u);
    EXPECT_EQ(na::gpu_target(caps, 1), 250000u);  // shared: the lower cap
    EXPECT_FALSE(na::gpu_target(caps, 3).has_value());
    na::JobMap map{{1, {102}}, {2, {102}}};
    EXPECT_EQ(na::ended_jobs(caps, map), (std::vector<uint32_t>{101}));
    EXPECT_EQ(na::ended_jobs(caps, {}), (std::vector<uint32_t>{101, 102}));
    EXPECT_EQ(caps[102].lowest_mw(), 250000u);
    EXPECT_EQ(caps[102].gpu_indices(), (std::vector<int>{1, 2}));
}

TEST(NodeAgentMap, StateFileRoundTrip)
{
    na::CapTable caps;
    caps[101] = {101, 100000, {{0, 200000}, {1, 200000}}};
    caps[7] = {7, 300000, {{3, 300000}}};
    const std::string text = na::caps_to_json(caps, "r01n01");
    EXPECT_TRUE(has(text, "\"schema\":\"m2g.nodeagent-state/v1\""));
    const na::CapTable back = na::caps_from_json(text, "caps.json");
    ASSERT_EQ(back.size(), 2u);
    EXPECT_EQ(back.at(101).requested_mw, 100000u);
    EXPECT_EQ(back.at(101).gpus, (std::map<int, unsigned>{{0, 200000}, {1, 200000}}));
    EXPECT_EQ(back.at(7).gpus.at(3), 300000u);
    EXPECT_TRUE(na::caps_from_json(na::caps_to_json({}, "n"), "x").empty());
    for (const char* bad : {"", "{", "[]", "{\"schema\":\"other\",\"caps\":{}}",
                            "{\"schema\":\"m2g.nodeagent-state/v1\"}",
                            "{\"schema\":\"m2g.nodeagent-state/v1\",\"caps\":{\"x\":{}}}",
                            "{\"schema\":\"m2g.nodeagent-state/v1\",\"caps\":{\"5\":{\"requested_mw\":1}}}",
                            "{\"schema\":\"m2g.nodeagent-state/v1\",\"caps\":{\"5\":{\"requested_mw\":1,"
                            "\"gpus\":{\"a\":1}}}}"}) {
        try {
            na::caps_from_json(bad, "/var/lib/m2g-nodeagent/caps.json");
            ADD_FAILURE() << "accepted: " << bad;
        } catch (const m2g::ParseError& e) {
            EXPECT_TRUE(has(e.what(), "/var/lib/m2g-nodeagent/caps.json: ")) << bad;
            EXPECT_TRUE(has(e.what(), "remove the file to forget")) << bad;
        }
    }
}

TEST(NodeAgentMap, TokenFile)
{
    TempDir d;
    d.write("t", "  s3cret-token \nsecond line\n");
    ::chmod(d.file("t").c_str(), 0600);
    EXPECT_EQ(na::read_token_file(d.file("t")), "s3cret-token");
    ::chmod(d.file("t").c_str(), 0640);
    try {
        na::read_token_file(d.file("t"));
        FAIL();
    } catch (const m2g::Error& e) {
        EXPECT_TRUE(has(e.what(), "is accessible by group or others (mode 0640)"));
        EXPECT_TRUE(has(e.what(), "chmod 600"));
    }
    ::chmod(d.file("t").c_str(), 0604);
    EXPECT_THROW(na::read_token_file(d.file("t")), m2g::Error);
    d.write("empty", "\n");
    ::chmod(d.file("empty").c_str(), 0600);
    EXPECT_THROW(na::read_token_file(d.file("empty")), m2g::Error);
    d.write("space", "two words\n");
    ::chmod(d.file("space").c_str(), 0600);
    EXPECT_THROW(na::read_token_file(d.file("space")), m2g::Error);
    EXPECT_THROW(na::read_token_file(d.file("missing")), m2g::Error);
}

// ---- NodeAgent over FakePower ----------------------------------------------------------------

namespace {

class NodeAgentCore : public ::testing::Test {
  protected:
    void SetUp() override { opt.node = "r01n01", opt.job_map_dir = dir.file("map"); }

    // Jobs on GPUs as spank_m2g's dcgm_map_add leaves them.
    void map(int gpu, const std::string& jobs)
    {
        ::mkdir(opt.job_map_dir.c_str(), 0755);
        if (jobs.empty())
            std::remove((opt.job_map_dir + "/" + std::to_string(gpu)).c_str());
        else
            std::ofstream(opt.job_map_dir + "/" + std::to_string(gpu)) << jobs;
    }
    na::Response req(na::NodeAgent& a, const std::string& method, const std::string& path,
                     const std::string& body = "", const std::string& auth = "")
    {
        na::Request r;
        r.method = method, r.path = path, r.body = body, r.authorization = auth;
        return a.handle(r);
    }
    na::Response put(na::NodeAgent& a, uint32_t job, double w)
    {
        char b[64];
        std::snprintf(b, sizeof b, "{\"limit_w\": %g}", w);
        return req(a, "PUT", "/v1/jobs/" + std::to_string(job) + "/cap", b);
    }

    TempDir dir;
    FakePower power;
    na::AgentOptions opt;
    std::vector<std::string> logs;
    na::LogSink sink = [this](const std::string& m) { logs.push_back(m); };
};

}  // namespace

TEST_F(NodeAgentCore, CapsExactlyTheJobsGpus)
{
    opt.log = sink;
    na::NodeAgent a(power, opt);
    map(0, "101\n");
    map(1, "101\n");
    map(2, "102\n");
    const na::Response r = put(a, 101, 300);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(has(r.body, "\"job\":101"));
    EXPECT_TRUE(has(r.body, "{\"index\":0,\"limit_w\":300,\"clamped\":false"));
    EXPECT_TRUE(has(r.body, "{\"index\":1,\"limit_w\":300,\"clamped\":false"));
    EXPECT_FALSE(has(r.body, "\"index\":2"));
    EXPECT_EQ(power.limit, (std::vector<unsigned>{300000, 300000, 1200000, 1200000}));
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_EQ(logs[0], "cap job 101 GPUs 0,1: 300 W (requested 300 W; GPU 0 300 W, GPU 1 300 W)");

    const na::Response p = req(a, "GET", "/v1/power");
    EXPECT_EQ(p.status, 200);
    EXPECT_TRUE(has(p.body, "\"schema\":\"m2g.nodeagent-power/v1\",\"node\":\"r01n01\",\"draw_w\":360"));
    EXPECT_TRUE(has(p.body, "{\"index\":2,\"draw_w\":90,\"limit_w\":1200,\"default_limit_w\":1200,"
                            "\"min_limit_w\":200,\"max_limit_w\":1200,\"jobs\":[102]}"));
    EXPECT_TRUE(has(p.body, "\"caps\":{\"101\":{\"limit_w\":300,\"requested_w\":300,\"gpus\":[0,1]}}"));
}

TEST_F(NodeAgentCore, ClampsToEachGpusRange)
{
    na::NodeAgent a(power, opt);
    map(3, "7\n");
    na::Response r = put(a, 7, 50);
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(has(r.body, "\"requested_w\":50,\"limit_w\":200"));
    EXPECT_TRUE(has(r.body, "\"clamped\":true"));
    EXPECT_TRUE(has(r.body, "\"note\":\"50 W is below the lowest limit GPU 3 accepts: raised to the minimum\""));
    EXPECT_EQ(power.limit[3], 200000u);
    r = put(a, 7, 5000);
    EXPECT_TRUE(has(r.body, "\"limit_w\":1200,\"clamped\":true"));
    EXPECT_TRUE(has(r.body, "above the highest limit GPU 3 accepts"));
    EXPECT_EQ(power.limit[3], 1200000u);
    r = put(a, 7, 312.5);
    EXPECT_TRUE(has(r.body, "\"limit_w\":312.5"));
    EXPECT_EQ(power.limit[3], 312500u);
}

TEST_F(NodeAgentCore, BadRequests)
{
    na::NodeAgent a(power, opt);
    map(0, "101\n");
    na::Response r = req(a, "PUT", "/v1/jobs/101/cap", "{\"limit_w\":");
    EXPECT_EQ(r.status, 400);
    EXPECT_TRUE(has(r.body, "{\"error\":\"the body is not JSON"));
    r = req(a, "PUT", "/v1/jobs/abc/cap", "{\"limit_w\":300}");
    EXPECT_EQ(r.status, 400);
    EXPECT_TRUE(has(r.body, "job id 'abc' is not valid"));
    r = put(a, 555, 300);
    EXPECT_EQ(r.status, 404);
    EXPECT_TRUE(has(r.body, "job 555 has no GPU on node r01n01"));
    r = req(a, "POST", "/v1/jobs/101/cap", "{}");
    EXPECT_EQ(r.status, 405);
    ASSERT_EQ(r.headers.size(), 1u);
    EXPECT_EQ(r.headers[0], (std::pair<std::string, std::string>{"Allow", "PUT, DELETE"}));
    EXPECT_EQ(req(a, "DELETE", "/v1/power").status, 405);
    r = req(a, "GET", "/v2/anything");
    EXPECT_EQ(r.status, 404);
    EXPECT_TRUE(has(r.body, "the agent serves GET /v1/power"));
    EXPECT_EQ(req(a, "GET", "/v1/jobs//cap").status, 404);
    na::Request big;
    big.method = "PUT", big.path = "/v1/jobs/101/cap", big.body_too_large = true;
    EXPECT_EQ(a.handle(big).status, 413);
    EXPECT_EQ(power.sets, 0);
    EXPECT_TRUE(a.caps().empty());
}

TEST_F(NodeAgentCore, MappingNamesAGpuNvmlDoesNotHave)
{
    na::NodeAgent a(power, opt);
    map(7, "101\n");
    const na::Response r = put(a, 101, 300);
    EXPECT_EQ(r.status, 500);
    EXPECT_TRUE(has(r.body, "names GPU 7 but NVML reports 4 GPUs"));
}

TEST_F(NodeAgentCore, NvmlFailureLeavesNothingHalfApplied)
{
    opt.log = sink;
    na::NodeAgent a(power, opt);
    map(0, "101\n");
    map(1, "101\n");
    map(2, "101\n");
    power.fail_set_gpu = 2;
    const na::Response r = put(a, 101, 300);
    EXPECT_EQ(r.status, 502);
    EXPECT_TRUE(has(r.body, "NVML could not set the power limit of GPU 2 to 300 W"));
    EXPECT_TRUE(has(r.body, "Insufficient Permissions (4)"));
    EXPECT_TRUE(has(r.body, "GPUs 0,1 put back to the previous limit, nothing changed"));
    EXPECT_EQ(power.limit, (std::vector<unsigned>{1200000, 1200000, 1200000, 1200000}));
    EXPECT_TRUE(a.caps().empty());
    ASSERT_FALSE(logs.empty());
    EXPECT_TRUE(has(logs.back(), "error: PUT /v1/jobs/101/cap: NVML could not set"));

    // A GPU that cannot even be read: nothing is set at all.
    power.fail_set_gpu = -1;
    power.fail_read_gpu = 1;
    power.sets = 0;
    const na::Response r2 = put(a, 101, 300);
    EXPECT_EQ(r2.status, 502);
    EXPECT_TRUE(has(r2.body, "GPU is lost (15)"));
    EXPECT_EQ(power.sets, 0);
}

TEST_F(NodeAgentCore, DeleteRestoresAndIsIdempotent)
{
    opt.log = sink;
    na::NodeAgent a(power, opt);
    map(0, "101\n");
    map(1, "101\n");
    ASSERT_EQ(put(a, 101, 300).status, 200);
    na::Response r = req(a, "DELETE", "/v1/jobs/101/cap");
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(has(r.body, "\"restored\":true,\"gpus\":[{\"index\":0,\"limit_w\":1200},{\"index\":1,\"limit_w\":1200}]"));
    EXPECT_EQ(power.limit[0], 1200000u);
    EXPECT_EQ(logs.back(), "clear job 101 GPUs 0,1: cap removed (GPU 0 1200 W, GPU 1 1200 W)");
    r = req(a, "DELETE", "/v1/jobs/101/cap");
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(has(r.body, "\"restored\":false,\"gpus\":[]"));
    EXPECT_EQ(req(a, "DELETE", "/v1/jobs/999/cap").status, 200);
}

TEST_F(NodeAgentCore, ReconcileEndsCapsOfFinishedJobsOnce)
{
    opt.log = sink;
    na::NodeAgent a(power, opt);
    map(0, "101\n");
    map(1, "101\n");
    map(2, "102\n");
    ASSERT_EQ(put(a, 101, 300).status, 200);
    ASSERT_EQ(put(a, 102, 400).status, 200);
    logs.clear();
    a.reconcile();
    EXPECT_TRUE(logs.empty());
    map(0, "");
    map(1, "");  // job 101 ended: spank_m2g's epilog emptied its files
    a.reconcile();
    a.reconcile();
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_TRUE(has(logs[0], "reconcile: job 101 is no longer in "));
    EXPECT_TRUE(has(logs[0], "cap on GPUs 0,1 ended (GPU 0 1200 W, GPU 1 1200 W)"));
    EXPECT_EQ(power.limit, (std::vector<unsigned>{1200000, 1200000, 400000, 1200000}));
    EXPECT_EQ(a.caps().size(), 1u);
}

TEST_F(NodeAgentCore, ReconcileRetriesAFailedRestoreAndLogsItOnce)
{
    opt.log = sink;
    na::NodeAgent a(power, opt);
    map(0, "101\n");
    ASSERT_EQ(put(a, 101, 300).status, 200);
    map(0, "");
    power.fail_set_gpu = 0;
    logs.clear();
    a.reconcile();
    a.reconcile();
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_TRUE(has(logs[0], "error: reconcile: job 101 ended but its cap could not be lifted"));
    EXPECT_EQ(a.caps().size(), 1u);
    power.fail_set_gpu = -1;
    a.reconcile();
    EXPECT_TRUE(a.caps().empty());
    EXPECT_EQ(power.limit[0], 1200000u);
}

TEST_F(NodeAgentCore, SharedGpuKeepsTheStricterCap)
{
    na::NodeAgent a(power, opt);
    map(0, "101\n102\n");
    map(1, "102\n");
    ASSERT_EQ(put(a, 101, 300).status, 200);
    const na::Response r = put(a, 102, 500);
    EXPECT_TRUE(has(r.body, "{\"index\":0,\"limit_w\":300"));
    EXPECT_TRUE(has(r.body, "{\"index\":1,\"limit_w\":500"));
    EXPECT_TRUE(has(r.body, "shared with another capped job keeps the lower"));
    map(0, "102\n");  // 101 ended: GPU 0 goes to 102's cap, not the default
    a.reconcile();
    EXPECT_EQ(power.limit[0], 500000u);
    EXPECT_EQ(power.limit[1], 500000u);
}

TEST_F(NodeAgentCore, RecapMovesToTheJobsCurrentGpus)
{
    na::NodeAgent a(power, opt);
    map(0, "101\n");
    map(1, "101\n");
    ASSERT_EQ(put(a, 101, 300).status, 200);
    map(1, "");
    ASSERT_EQ(put(a, 101, 250).status, 200);
    EXPECT_EQ(power.limit[0], 250000u);
    EXPECT_EQ(power.limit[1], 1200000u);  // no longer the job's
    EXPECT_EQ(a.caps().at(101).gpu_indices(), (std::vector<int>{0}));
}

TEST_F(NodeAgentCore, TokenRequired)
{
    opt.token = "s3cret";
    na::NodeAgent a(power, opt);
    na::Response r = req(a, "GET", "/v1/power");
    EXPECT_EQ(r.status, 401);
    EXPECT_TRUE(has(r.body, "no Authorization header; this agent requires 'Authorization: Bearer <token>'"));
    ASSERT_EQ(r.headers.size(), 1u);
    EXPECT_EQ(r.headers[0].first, "WWW-Authenticate");
    EXPECT_TRUE(has(req(a, "GET", "/v1/power", "", "Bearer wrong").body, "wrong bearer token"));
    EXPECT_EQ(req(a, "GET", "/v1/power", "", "Bearer s3cretX").status, 401);
    EXPECT_EQ(req(a, "GET", "/v1/power", "", "Basic s3cret").status, 401);
    EXPECT_EQ(req(a, "PUT", "/v1/jobs/1/cap", "{\"limit_w\":1}", "").status, 401);
    EXPECT_EQ(req(a, "GET", "/v1/power", "", "Bearer s3cret").status, 200);
}

TEST_F(NodeAgentCore, StateSurvivesARestartAndAdoptPutsCapsBack)
{
    opt.state_file = dir.file("caps.json");
    opt.log = sink;
    map(0, "101\n");
    map(1, "101\n");
    map(2, "102\n");
    {
        na::NodeAgent a(power, opt);
        ASSERT_EQ(put(a, 101, 300).status, 200);
        ASSERT_EQ(put(a, 102, 400).status, 200);
    }
    std::ifstream in(opt.state_file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(has(text, "\"101\":{\"requested_mw\":300000,\"gpus\":{\"0\":300000,\"1\":300000}}"));
    struct stat st {};
    ASSERT_EQ(::stat(opt.state_file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);

    // While the agent was away: a driver reload reset GPU 0, job 102 ended.
    power.limit[0] = 1200000;
    map(2, "");
    logs.clear();
    na::NodeAgent b(power, opt);
    EXPECT_EQ(b.caps().size(), 2u);
    b.adopt();
    EXPECT_EQ(power.limit, (std::vector<unsigned>{300000, 300000, 1200000, 1200000}));
    ASSERT_EQ(b.caps().size(), 1u);
    EXPECT_EQ(b.caps().count(101), 1u);
    bool readopted = false, ended = false;
    for (const std::string& l : logs) {
        readopted = readopted || has(l, "adopt: GPU 0 had 1200 W, its cap 300 W is put back");
        ended = ended || has(l, "reconcile: job 102 is no longer in");
    }
    EXPECT_TRUE(readopted);
    EXPECT_TRUE(ended);
}

TEST_F(NodeAgentCore, CorruptStateFileRefusesToStart)
{
    opt.state_file = dir.file("caps.json");
    dir.write("caps.json", "{\"schema\":\"m2g.nodeagent-state/v1\",\"caps\":[]}");
    EXPECT_THROW(na::NodeAgent(power, opt), m2g::ParseError);
}

TEST_F(NodeAgentCore, NeverThrowsOnGarbage)
{
    na::NodeAgent a(power, opt);
    map(0, "1\n");
    const std::string junk[] = {"", "{", "}", "\xff\xfe", std::string("{\"limit_w\":3\0}", 15), "null", "[{}]",
                                "{\"limit_w\":{\"a\":1}}", "{\"limit_w\":1e400}", "{\"limit_w\":NaN}"};
    for (const char* path : {"/v1/jobs/1/cap", "/v1/jobs/%00/cap", "/v1/jobs/1/cap/x", "", "/", "//v1/power"})
        for (const std::string& body : junk)
            for (const char* m : {"PUT", "DELETE", "GET", "", "BREW"}) {
                const na::Response r = req(a, m, path, body);
                EXPECT_GE(r.status, 200);
                EXPECT_TRUE(has(r.body, "{")) << m << " " << path;
            }
}

// ---- the client against the agent's HTTP server ----------------------------------------------

TEST_F(NodeAgentCore, HttpClientEndToEnd)
{
    opt.token = "tok-123";
    na::NodeAgent a(power, opt);
    map(0, "4242\n");
    map(1, "4242\n");
    na::HttpServer srv(na::parse_listen("127.0.0.1:0"), [&a](const na::Request& r) { return a.handle(r); });
    ASSERT_GT(srv.port(), 0);
    const std::string url = srv.url() + "/";

    na::NodePower p = na::get_power(url, "tok-123", 5000);
    EXPECT_EQ(p.node, "r01n01");
    ASSERT_EQ(p.gpus.size(), 4u);
    EXPECT_DOUBLE_EQ(p.draw_w, 360);
    EXPECT_EQ(p.gpus[0].jobs, (std::vector<uint32_t>{4242}));
    EXPECT_DOUBLE_EQ(p.gpus[3].default_limit_w, 1200);
    EXPECT_TRUE(p.caps.empty());

    // What m2g forecast --measured-power reads: the mean draw of job 4242's
    // GPUs; an agent that does not answer is named, not fatal.
    const na::JobDraw d = na::job_gpu_draw({{"r01n01", url}, {"r01n02", "http://127.0.0.1:1"}}, "tok-123", 2000);
    EXPECT_EQ(d.asked, 2);
    EXPECT_EQ(d.answered, 1);
    ASSERT_EQ(d.errors.size(), 1u);
    EXPECT_EQ(d.errors[0].rfind("r01n02: ", 0), 0u) << d.errors[0];
    ASSERT_EQ(d.w_gpu.count(4242), 1u);
    double sum = 0;
    int n = 0;
    for (const na::GpuPower& g : p.gpus)
        if (std::find(g.jobs.begin(), g.jobs.end(), 4242u) != g.jobs.end()) {
            sum += g.draw_w;
            ++n;
        }
    ASSERT_GT(n, 0);
    EXPECT_DOUBLE_EQ(d.w_gpu.at(4242), sum / n);

    na::CapResult c = na::set_cap(url, "tok-123", 4242, 100, 5000);
    EXPECT_EQ(c.job_id, 4242u);
    EXPECT_DOUBLE_EQ(c.requested_w, 100);
    EXPECT_DOUBLE_EQ(c.limit_w, 200);
    ASSERT_EQ(c.gpus.size(), 2u);
    EXPECT_TRUE(c.gpus[1].clamped);
    EXPECT_DOUBLE_EQ(c.gpus[1].min_limit_w, 200);
    EXPECT_TRUE(has(c.note, "raised to the minimum"));

    p = na::get_power(url, "tok-123", 5000);
    ASSERT_EQ(p.caps.size(), 1u);
    EXPECT_EQ(p.caps[0].job_id, 4242u);
    EXPECT_EQ(p.caps[0].gpus, (std::vector<int>{0, 1}));
    EXPECT_DOUBLE_EQ(p.gpus[0].limit_w, 200);

    na::ClearResult cl = na::clear_cap(url, "tok-123", 4242, 5000);
    EXPECT_TRUE(cl.restored);
    ASSERT_EQ(cl.gpus.size(), 2u);
    EXPECT_DOUBLE_EQ(cl.gpus[0].limit_w, 1200);
    EXPECT_FALSE(na::clear_cap(url, "tok-123", 4242, 5000).restored);

    // Errors name the node URL, the request and the agent's own text.
    try {
        na::set_cap(url, "tok-123", 777, 300, 5000);
        FAIL();
    } catch (const m2g::Error& e) {
        EXPECT_TRUE(has(e.what(), "m2g-nodeagent " + srv.url() + ": PUT /v1/jobs/777/cap: HTTP 404: job 777 has no "
                                                                  "GPU on node r01n01"));
    }
    try {
        na::get_power(url, "", 5000);
        FAIL();
    } catch (const m2g::Error& e) {
        EXPECT_TRUE(has(e.what(), "HTTP 401: no Authorization header"));
    }
    EXPECT_THROW(na::set_cap(url, "tok-123", 4242, -1, 5000), m2g::Error);
}

// The agent map of m2g-curtaild and m2g forecast --agent-map, and
// NodeAgentURL='s %n and %a.
TEST(NodeAgentClient, AgentMapAndUrlPattern)
{
    char dir[] = "/tmp/m2g-agentmap-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string good = std::string(dir) + "/good", bad = std::string(dir) + "/bad";
    std::ofstream(good) << "# node url\nr01n01 http://10.0.0.7:6830\n\nr01n02 https://n2:6830  # tls\n";
    std::ofstream(bad) << "r01n01 http://10.0.0.7:6830\nr01n02 10.0.0.8:6830\n";
    const auto m = na::read_agent_map(good);
    EXPECT_EQ(m, (std::map<std::string, std::string>{{"r01n01", "http://10.0.0.7:6830"},
                                                     {"r01n02", "https://n2:6830"}}));
    try {
        na::read_agent_map(bad);
        FAIL();
    } catch (const m2g::Error& e) {
        EXPECT_TRUE(has(e.what(), bad + ":2: expected \"NODE URL\"")) << e.what();
    }
    EXPECT_EQ(na::expand_url("http://%a:6830/%n", "r01n01", "10.0.0.7"), "http://10.0.0.7:6830/r01n01");
    std::remove(good.c_str());
    std::remove(bad.c_str());
    rmdir(dir);
}

TEST(NodeAgentClient, UnreachableAgent)
{
    // A port nothing listens on: bind one, close it, use it.
    int port = 0;
    {
        FakePower p;
        na::AgentOptions o;
        o.node = "n", o.job_map_dir = "/nonexistent";
        na::NodeAgent a(p, o);
        na::HttpServer s(na::parse_listen("127.0.0.1:0"), [&a](const na::Request& r) { return a.handle(r); });
        port = s.port();
    }
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    try {
        na::get_power(url, "", 2000);
        FAIL();
    } catch (const m2g::Error& e) {
        EXPECT_TRUE(has(e.what(), "m2g-nodeagent " + url + ": GET /v1/power: cannot reach the agent ("));
    }
}

TEST(NodeAgentClient, ParsesOnlyTheDocumentedAnswers)
{
    EXPECT_THROW(na::parse_node_power("{}", "w"), m2g::Error);
    EXPECT_THROW(na::parse_node_power("{\"schema\":\"m2g.nodeagent-cap/v1\"}", "w"), m2g::Error);
    EXPECT_THROW(na::parse_cap_result("not json", "w"), m2g::Error);
    const na::NodePower p = na::parse_node_power(
        "{\"schema\":\"m2g.nodeagent-power/v1\",\"node\":\"n1\",\"draw_w\":1090.5,\"gpus\":["
        "{\"index\":0,\"draw_w\":1000.5,\"limit_w\":1200,\"default_limit_w\":1200,\"min_limit_w\":200,"
        "\"max_limit_w\":1200,\"jobs\":[9]},{\"index\":1,\"error\":\"GPU 1: GPU is lost (15)\",\"jobs\":[]}],"
        "\"caps\":{\"9\":{\"limit_w\":300,\"gpus\":[0]}}}",
        "w");
    EXPECT_DOUBLE_EQ(p.draw_w, 1090.5);
    EXPECT_DOUBLE_EQ(p.gpus[0].draw_w, 1000.5);
    EXPECT_EQ(p.gpus[1].error, "GPU 1: GPU is lost (15)");
    EXPECT_EQ(p.caps[0].job_id, 9u);
    try {
        na::parse_clear_result("{\"schema\":\"m2g.nodeagent-cap/v1\",\"node\":\"n\",\"job\":1,\"gpus\":[]}",
                               "m2g-nodeagent http://x:1: DELETE /v1/jobs/1/cap");
        FAIL();
    } catch (const m2g::Error& e) {
        EXPECT_TRUE(has(e.what(), "m2g-nodeagent http://x:1: DELETE /v1/jobs/1/cap: unexpected answer: \"restored\""));
    }
}

// ---- NvmlPower over test/fake-nvml -------------------------------------------------------------

namespace {

const char* const kFakePowerVars[] = {"FAKE_NVML_INIT_ERROR",      "FAKE_NVML_GPUS",         "FAKE_NVML_STATE_DIR",
                                      "FAKE_NVML_JOBMAP_DIR",      "FAKE_NVML_SET_LIMIT_ERROR", "FAKE_NVML_BUSY_W",
                                      "FAKE_NVML_IDLE_W",          "FAKE_NVML_DEFAULT_LIMIT_W", "FAKE_NVML_MIN_LIMIT_W",
                                      "FAKE_NVML_MAX_LIMIT_W"};

class NodeAgentNvml : public ::testing::Test {
  protected:
    void SetUp() override
    {
        clear();
        setenv("FAKE_NVML_STATE_DIR", dir.path.c_str(), 1);
    }
    void TearDown() override { clear(); }
    static void clear()
    {
        for (const char* v : kFakePowerVars)
            unsetenv(v);
    }
    static std::string error_of(const std::function<void()>& f)
    {
        try {
            f();
        } catch (const std::exception& e) {
            return e.what();
        }
        return "(no error)";
    }
    TempDir dir;
};

}  // namespace

TEST_F(NodeAgentNvml, LoaderResolvesEveryEntryPoint)
{
    const m2g::Nvml nv(M2G_FAKE_NVML, {m2g::Nvml::kInit, m2g::Nvml::kSetPowerLimit});
    ASSERT_TRUE(nv.ok()) << nv.error();
    EXPECT_TRUE(nv.missing().empty()) << nv.missing().front();
    EXPECT_TRUE(nv.has(m2g::Nvml::kEnforcedPowerLimit));
    EXPECT_EQ(nv.text(4), "Insufficient Permissions (4)");
    EXPECT_STREQ(m2g::Nvml::symbol(m2g::Nvml::kPowerLimitConstraints), "nvmlDeviceGetPowerManagementLimitConstraints");
    const m2g::Nvml none("/nonexistent/libnvidia-ml.so.1", {m2g::Nvml::kInit});
    EXPECT_FALSE(none.ok());
    EXPECT_TRUE(has(none.error(), "cannot load NVML: /nonexistent/libnvidia-ml.so.1"));
    EXPECT_TRUE(has(error_of([] { na::NvmlPower p("/nonexistent/libnvidia-ml.so.1"); }), "(--nvml names the library)"));
    setenv("FAKE_NVML_INIT_ERROR", "9", 1);
    EXPECT_TRUE(has(error_of([] { na::NvmlPower p(M2G_FAKE_NVML); }), "nvmlInit_v2: Driver Not Loaded (9)"));
}

TEST_F(NodeAgentNvml, LimitsPersistLikeADriver)
{
    {
        na::NvmlPower p(M2G_FAKE_NVML);
        EXPECT_EQ(p.gpu_count(), 4);
        EXPECT_TRUE(has(p.describe(), ", 4 GPUs"));
        const na::GpuLimits l = p.limits(0);
        EXPECT_EQ(l.limit_mw, 1200000u);
        EXPECT_EQ(l.default_mw, 1200000u);
        EXPECT_EQ(l.min_mw, 200000u);
        EXPECT_EQ(l.max_mw, 1200000u);
        EXPECT_EQ(p.draw_mw(0), 90000u);
        p.set_limit_mw(1, 300000);
        EXPECT_EQ(p.limits(1).limit_mw, 300000u);
    }
    std::ifstream in(dir.file("1.limit"));
    std::string text;
    std::getline(in, text);
    EXPECT_EQ(text, "300000");
    na::NvmlPower q(M2G_FAKE_NVML);  // another process, as it were
    EXPECT_EQ(q.limits(1).limit_mw, 300000u);
    EXPECT_EQ(q.limits(2).limit_mw, 1200000u);
}

TEST_F(NodeAgentNvml, DrawFollowsJobsAndLimit)
{
    setenv("FAKE_NVML_JOBMAP_DIR", dir.path.c_str(), 1);
    dir.write("2", "77\n");
    dir.write("3", "");
    na::NvmlPower p(M2G_FAKE_NVML);
    EXPECT_EQ(p.draw_mw(2), 1000000u);  // busy
    EXPECT_EQ(p.draw_mw(3), 90000u);    // empty file: idle
    p.set_limit_mw(2, 400000);
    EXPECT_EQ(p.draw_mw(2), 400000u);  // held to the limit
    setenv("FAKE_NVML_BUSY_W", "350", 1);
    setenv("FAKE_NVML_IDLE_W", "60", 1);
    EXPECT_EQ(p.draw_mw(2), 350000u);
    EXPECT_EQ(p.draw_mw(0), 60000u);
}

TEST_F(NodeAgentNvml, SetErrorsCarryNvmlsText)
{
    setenv("FAKE_NVML_MIN_LIMIT_W", "250", 1);
    setenv("FAKE_NVML_MAX_LIMIT_W", "1000", 1);
    setenv("FAKE_NVML_DEFAULT_LIMIT_W", "1000", 1);
    na::NvmlPower p(M2G_FAKE_NVML);
    EXPECT_EQ(p.limits(0).min_mw, 250000u);
    EXPECT_EQ(p.limits(0).default_mw, 1000000u);
    EXPECT_EQ(error_of([&] { p.set_limit_mw(0, 200000); }),
              "GPU 0: nvmlDeviceSetPowerManagementLimit: Invalid Argument (2)");
    EXPECT_EQ(error_of([&] { p.set_limit_mw(0, 1100000); }),
              "GPU 0: nvmlDeviceSetPowerManagementLimit: Invalid Argument (2)");
    setenv("FAKE_NVML_SET_LIMIT_ERROR", "4", 1);
    EXPECT_EQ(error_of([&] { p.set_limit_mw(3, 500000); }),
              "GPU 3: nvmlDeviceSetPowerManagementLimit: Insufficient Permissions (4)");
    EXPECT_EQ(p.limits(3).limit_mw, 1000000u);  // unchanged
    EXPECT_TRUE(has(error_of([&] { p.limits(4); }), "GPU 4 is not on this node (NVML reports 4 GPUs)"));
}

TEST_F(NodeAgentNvml, WithoutStateDirLimitsLiveInTheProcess)
{
    unsetenv("FAKE_NVML_STATE_DIR");
    na::NvmlPower p(M2G_FAKE_NVML);
    p.set_limit_mw(0, 500000);
    EXPECT_EQ(p.limits(0).limit_mw, 500000u);
    p.set_limit_mw(0, 1200000);  // leave the library as found
}
