// The signals feed: the m2g.signals/v1 parser (every malformed feed names
// where it is wrong and what is accepted), effective budgets, and
// SignalFeed's state machine: fresh, stale, missing, corrupt, recovery, the
// three fail-safes, log-once, the status file and the poll thread.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"
#include "core/power/signals.hpp"
#include "tools/reports/signals_report.hpp"  // format_signals, for FormatTextAndJson

using namespace m2g;

namespace {

constexpr int64_t kNow = 1795986000;  // 2026-11-29T21:00:00Z
const char* kFixtures = M2G_FIXTURES "/signals";

const Model& model()
{
    static const Model m = load_model(M2G_FIXTURES "/nvl72-8rack.conf");
    return m;
}

// The message parse_signals throws for `text`, or "ok".
std::string err(const std::string& text, int64_t now = kNow)
{
    try {
        parse_signals(text, "signals.json", model(), now);
        return "ok";
    } catch (const ParseError& e) {
        return e.what();
    }
}

// A feed with the two required keys and `body` (more keys, or "").
std::string feed(const std::string& body, const std::string& generated = "\"2026-11-29T20:59:00Z\"")
{
    return "{\"schema\": \"m2g.signals/v1\", \"generated_at\": " + generated + (body.empty() ? "" : ", " + body) + "}";
}

const std::string kEvent = R"("id": "e", "start": "2026-11-29T21:00:00Z", "end": "2026-11-29T22:00:00Z")";

std::string read(const std::string& path)
{
    return read_text_file(path);
}

int node(const char* name)
{
    return model().find_node(name);
}

int fault_domain(const char* name)
{
    for (size_t i = 0; i < model().fault_domains.size(); ++i)
        if (model().fault_domains[i].name == name)
            return static_cast<int>(i);
    return kNone;
}

}  // namespace

// ---- times ----------------------------------------------------------------------

TEST(SignalTime, Rfc3339AndEpoch)
{
    EXPECT_EQ(parse_signal_time("2026-11-29T21:00:00Z", "t"), kNow);
    EXPECT_EQ(parse_signal_time("2026-11-29T22:00:00+01:00", "t"), kNow);
    EXPECT_EQ(parse_signal_time("2026-11-29T15:30:00-05:30", "t"), kNow);
    EXPECT_EQ(parse_signal_time("2026-11-29t21:00:00.999z", "t"), kNow);  // fraction truncated
    EXPECT_EQ(parse_signal_time("1795986000", "t"), kNow);
    EXPECT_EQ(parse_signal_time("1970-01-01T00:00:00Z", "t"), 0);
    EXPECT_EQ(parse_signal_time("2028-02-29T00:00:00Z", "t"), 1835395200);  // leap day
    EXPECT_EQ(format_utc(kNow), "2026-11-29T21:00:00Z");
    EXPECT_EQ(format_utc(parse_signal_time("2000-02-29T12:34:56Z", "t")), "2000-02-29T12:34:56Z");
}

TEST(SignalTime, BadTimesSayWhatIsAccepted)
{
    const std::string accepted =
        "accepted: RFC 3339 (\"2026-11-29T21:00:00Z\", \"2026-11-29T22:00:00+01:00\", fractional seconds allowed) "
        "or epoch seconds";
    auto msg = [](const std::string& t) {
        try {
            parse_signal_time(t, "--at");
            return std::string("ok");
        } catch (const ParseError& e) {
            return std::string(e.what());
        }
    };
    EXPECT_EQ(msg("2026-11-29 21:00"), "--at: \"2026-11-29 21:00\" is not a valid time (not a time); " + accepted);
    EXPECT_EQ(msg("2026-11-29T21:00:00"),
              "--at: \"2026-11-29T21:00:00\" is not a valid time (no UTC offset: end it with Z or +hh:mm); " + accepted);
    EXPECT_EQ(msg("2026-13-01T00:00:00Z"),
              "--at: \"2026-13-01T00:00:00Z\" is not a valid time (month 13 out of range); " + accepted);
    EXPECT_EQ(msg("2027-02-29T00:00:00Z"),
              "--at: \"2027-02-29T00:00:00Z\" is not a valid time (day 29 out of range); " + accepted);
    EXPECT_EQ(msg("2026-11-29T24:00:00Z"),
              "--at: \"2026-11-29T24:00:00Z\" is not a valid time (time of day out of range); " + accepted);
    EXPECT_EQ(msg("2026-11-29T21:00:00+24:00"),
              "--at: \"2026-11-29T21:00:00+24:00\" is not a valid time (UTC offset out of range); " + accepted);
    EXPECT_EQ(msg("2026-11-29T21:00:00.Z"), "--at: \"2026-11-29T21:00:00.Z\" is not a valid time (not a time); " + accepted);
    EXPECT_EQ(msg("2026-11-29T21:00:00Zjunk"),
              "--at: \"2026-11-29T21:00:00Zjunk\" is not a valid time (not a time); " + accepted);
    EXPECT_EQ(msg(""), "--at: \"\" is not a valid time (not a time); " + accepted);
    EXPECT_EQ(msg("999999999999"), "--at: 999999999999 is out of range for epoch seconds");
}

// ---- parsing good feeds ------------------------------------------------------------

TEST(SignalsParse, FullFixtureResolvesEveryName)
{
    const Model& m = model();
    const Signals s = parse_signals(read(std::string(kFixtures) + "/good/full.json"), "full.json", m, kNow);
    EXPECT_EQ(s.generated_at, kNow - 300);
    EXPECT_EQ(s.source, "bms-agent on mgmt01");
    EXPECT_EQ(s.site.budget_kw, 1000);
    EXPECT_EQ(s.site.draw_kw, 800);
    ASSERT_EQ(s.racks.size(), m.domains.size());
    ASSERT_EQ(s.rows.size(), m.fault_domains.size());
    ASSERT_EQ(s.thermal.size(), m.nodes.size());
    EXPECT_EQ(s.racks[m.find_domain("nvl01")].budget_kw, 120);
    EXPECT_EQ(s.racks[m.find_domain("nvl05")].budget_kw, 0);  // not in the feed
    EXPECT_EQ(s.racks[m.find_domain("nvl05")].draw_kw, 131);
    EXPECT_EQ(s.racks[m.find_domain("nvl02")].draw_kw, -1);
    EXPECT_EQ(s.rows[fault_domain("row1")].budget_kw, 500);
    EXPECT_EQ(s.rows[fault_domain("row2")].draw_kw, 450);
    EXPECT_FALSE(s.rows[fault_domain("feedA")].draw_kw >= 0);

    EXPECT_TRUE(s.thermal[node("r01n01")].known);
    EXPECT_EQ(s.thermal[node("r01n01")].gpu_temp_c, 71.5);
    EXPECT_EQ(s.thermal[node("r01n01")].state, ThermalState::Warm);
    EXPECT_EQ(s.thermal[node("r02n01")].state, ThermalState::Ok);  // temperature only
    EXPECT_EQ(s.thermal[node("r02n02")].gpu_temp_c, 0);            // state only
    EXPECT_FALSE(s.thermal[node("r03n01")].known);

    ASSERT_EQ(s.events.size(), 4u);
    EXPECT_EQ(s.events[0].id, "dr-1");
    EXPECT_EQ(s.events[0].scope, EventScope::Site);  // the default
    EXPECT_EQ(s.events[0].scope_name, "site");
    EXPECT_EQ(s.events[0].curtail_pct, 25);
    EXPECT_EQ(s.events[1].scope, EventScope::Row);
    EXPECT_EQ(s.events[1].scope_index, fault_domain("row2"));
    EXPECT_EQ(s.events[1].scope_name, "row2");
    EXPECT_EQ(s.events[1].curtail_kw, 50);
    EXPECT_EQ(s.events[2].scope, EventScope::Rack);
    EXPECT_EQ(s.events[2].scope_index, m.find_domain("nvl03"));

    ASSERT_EQ(s.maintenance.size(), 2u);
    EXPECT_EQ(s.maintenance[0].nodes.size(), 36u);  // r01n[01-18] and the rack nvl02
    std::vector<std::string> names;
    for (int n : s.maintenance[0].nodes)
        names.push_back(m.nodes[n].name);
    EXPECT_EQ(hostlist_compress(names), "r01n[01-18],r02n[01-18]");
    EXPECT_EQ(s.maintenance[0].reason, "PDU swap");
    EXPECT_TRUE(s.maintenance[1].overlaps(kNow, 0));
    EXPECT_FALSE(s.maintenance[0].overlaps(kNow, kNow + 3600));

    // health: degraded (plus the critical thermal node), down, NVLink fault, links.
    ASSERT_EQ(s.health.node_degraded.size(), m.nodes.size());
    EXPECT_EQ(s.health.node_degraded[node("r04n01")], 1);
    EXPECT_EQ(s.health.node_degraded[node("r04n02")], 1);
    EXPECT_EQ(s.health.node_degraded[node("r05n03")], 1);  // thermal critical
    EXPECT_EQ(s.health.node_degraded[node("r05n02")], 0);  // hot is not degraded
    EXPECT_EQ(std::count(s.health.node_degraded.begin(), s.health.node_degraded.end(), 1), 3);
    ASSERT_EQ(s.node_down.size(), m.nodes.size());
    EXPECT_EQ(s.node_down[node("r05n07")], 1);
    ASSERT_EQ(s.health.domain_nvlink_fault.size(), m.domains.size());
    EXPECT_EQ(s.health.domain_nvlink_fault[m.find_domain("nvl06")], 1);
    EXPECT_EQ(s.links_down, std::vector<std::string>{"leaf02"});
}

TEST(SignalsParse, MinimalFeedLeavesHealthEmpty)
{
    const Signals s = parse_signals(read(std::string(kFixtures) + "/good/minimal.json"), "f", model(), kNow);
    EXPECT_EQ(s.generated_at, kNow - 300);
    EXPECT_TRUE(s.source.empty());
    EXPECT_EQ(s.site.budget_kw, 0);
    EXPECT_EQ(s.site.draw_kw, -1);
    EXPECT_EQ(s.racks.size(), model().domains.size());
    EXPECT_TRUE(s.health.node_degraded.empty());
    EXPECT_TRUE(s.health.domain_nvlink_fault.empty());
    EXPECT_TRUE(s.node_down.empty());
    EXPECT_TRUE(s.events.empty());
    EXPECT_TRUE(s.maintenance.empty());
}

TEST(SignalsParse, EpochTimesOffsetsAndRackMaintenance)
{
    const Signals s =
        parse_signals(read(std::string(kFixtures) + "/good/epoch-and-offsets.json"), "f", model(), kNow);
    EXPECT_EQ(s.generated_at, kNow - 300);
    EXPECT_EQ(s.site.draw_kw, 0);
    ASSERT_EQ(s.events.size(), 2u);
    EXPECT_EQ(s.events[0].start, kNow);
    EXPECT_EQ(s.events[0].end, kNow + 1800);
    EXPECT_EQ(s.events[0].curtail_kw, 10.5);
    EXPECT_EQ(s.events[1].curtail_pct, 100);
    ASSERT_EQ(s.maintenance.size(), 1u);
    EXPECT_EQ(s.maintenance[0].start, kNow + 1800);
    EXPECT_EQ(s.maintenance[0].nodes.size(), 72u);
    EXPECT_TRUE(s.node_down.empty());  // "" names nobody
}

TEST(SignalsParse, VendorExtensionKeysAreIgnoredEverywhere)
{
    const Signals s =
        parse_signals(read(std::string(kFixtures) + "/good/vendor-extensions.json"), "f", model(), kNow);
    EXPECT_EQ(s.site.budget_kw, 1100);
    EXPECT_EQ(s.rows[fault_domain("row1")].draw_kw, 200);
    EXPECT_EQ(s.thermal[node("r03n04")].gpu_temp_c, 75);
    EXPECT_EQ(s.events.size(), 1u);
    EXPECT_EQ(s.maintenance.size(), 1u);
    EXPECT_EQ(s.node_down[node("r03n02")], 1);
    // An "x" key without the dash is not an extension.
    EXPECT_EQ(err(feed("\"xsite\": 1")),
              "signals.json: xsite: unknown key; accepted at the top level: schema, generated_at, source, power, "
              "thermal, events, openadr_events, maintenance, health (keys starting with \"x-\" are ignored)");
}

TEST(SignalsParse, ShippedExampleIsValid)
{
    const Signals s = parse_signals(read(M2G_FIXTURES "/../../etc/signals.example.json"), "f", model(), kNow);
    EXPECT_EQ(s.generated_at, kNow);
    EXPECT_EQ(s.events.size(), 2u);
    EXPECT_EQ(s.events[1].start, parse_signal_time("2026-11-30T16:00:00Z", "t"));
}

// ---- parsing bad feeds: every message names the file, the JSON path, what is accepted ----

TEST(SignalsParse, NotJsonOrNotAnObject)
{
    EXPECT_EQ(err(""), "signals.json: not valid JSON: the file is empty");
    EXPECT_EQ(err("{\"schema\": \"m2g.signals/v1\",\n"),
              "signals.json: not valid JSON: unexpected end of input (a truncated file?)");
    EXPECT_EQ(err("{\"schema\": \"m2g.signals/v1\",\n  \"generated_at\": 1,,\n}"),
              "signals.json: not valid JSON: quoted object property name expected at line 2, column 21");
    EXPECT_EQ(err(feed("") + " {}"), "signals.json: not valid JSON: unexpected character at line 1, column 70");
    EXPECT_EQ(err("[1, 2]"), "signals.json: expected a JSON object (an m2g.signals/v1 feed), got an array");
    EXPECT_EQ(err("\"m2g.signals/v1\""),
              "signals.json: expected a JSON object (an m2g.signals/v1 feed), got the string \"m2g.signals/v1\"");
}

TEST(SignalsParse, SchemaIsRequiredAndVersioned)
{
    EXPECT_EQ(err("{\"generated_at\": 1}"),
              "signals.json: schema: missing; the first key of a feed is \"schema\": \"m2g.signals/v1\"");
    EXPECT_EQ(err("{\"schema\": \"m2g.signals/v2\", \"generated_at\": 1}"),
              "signals.json: schema: \"m2g.signals/v2\" is not supported; accepted: \"m2g.signals/v1\"");
    EXPECT_EQ(err("{\"schema\": 1, \"generated_at\": 1}"),
              "signals.json: schema: expected the string \"m2g.signals/v1\", got the number 1");
}

TEST(SignalsParse, GeneratedAtIsRequiredValidAndNotInTheFuture)
{
    const std::string accepted =
        "accepted: RFC 3339 (\"2026-11-29T21:00:00Z\", \"2026-11-29T22:00:00+01:00\", fractional seconds allowed) "
        "or epoch seconds";
    EXPECT_EQ(err("{\"schema\": \"m2g.signals/v1\"}"),
              "signals.json: generated_at: missing; say when the feed was written; " + accepted);
    EXPECT_EQ(err(feed("", "\"yesterday\"")),
              "signals.json: generated_at: \"yesterday\" is not a valid time (not a time); " + accepted);
    EXPECT_EQ(err(feed("", "\"2026-11-31T00:00:00Z\"")),
              "signals.json: generated_at: \"2026-11-31T00:00:00Z\" is not a valid time (day 31 out of range); " +
                  accepted);
    EXPECT_EQ(err(feed("", "\"1795986000\"")),
              "signals.json: generated_at: \"1795986000\": epoch seconds must be a JSON integer, not a string");
    EXPECT_EQ(err(feed("", "1795986000.5")),
              "signals.json: generated_at: expected a time: an RFC 3339 string (\"2026-11-29T21:00:00Z\") or epoch "
              "seconds as an integer, got the number 1795986000.5");
    EXPECT_EQ(err(feed("", "-1")),
              "signals.json: generated_at: the number -1 is out of range for epoch seconds (0 to 253402300799)");
    EXPECT_EQ(err(feed("", "null")),
              "signals.json: generated_at: got null; leave optional keys out instead of setting them to null");
    // Up to 300 s of clock skew is tolerated; more is an error that says so.
    EXPECT_EQ(err(feed("", "\"2026-11-29T21:05:00Z\"")), "ok");
    EXPECT_EQ(err(feed("", "\"2026-11-29T21:05:01Z\"")),
              "signals.json: generated_at: 2026-11-29T21:05:01Z is 301 s in the future (our clock: "
              "2026-11-29T21:00:00Z); more than 300 s of clock skew: check NTP on the feed's host and here");
    // Far in the past is fine for the parser: SignalFeed calls it stale.
    EXPECT_EQ(err(feed("", "0")), "ok");
}

TEST(SignalsParse, UnknownKeysAtEveryLevel)
{
    const std::string x = " (keys starting with \"x-\" are ignored)";
    EXPECT_EQ(err(feed("\"evnets\": []")),
              "signals.json: evnets: unknown key; accepted at the top level: schema, generated_at, source, power, "
              "thermal, events, openadr_events, maintenance, health" + x);
    EXPECT_EQ(err(feed("\"power\": {\"sites\": {}}")),
              "signals.json: power.sites: unknown key; accepted in power: site, rows, racks" + x);
    EXPECT_EQ(err(feed("\"power\": {\"site\": {\"budget\": 1}}")),
              "signals.json: power.site.budget: unknown key; accepted in power.site: budget_kw, draw_kw" + x);
    EXPECT_EQ(err(feed("\"power\": {\"racks\": {\"nvl01\": {\"draw\": 1}}}")),
              "signals.json: power.racks.nvl01.draw: unknown key; accepted in power.racks.nvl01: budget_kw, draw_kw" + x);
    EXPECT_EQ(err(feed("\"thermal\": {\"r01n01\": {\"temp\": 1}}")),
              "signals.json: thermal.r01n01.temp: unknown key; accepted in thermal.r01n01: gpu_temp_c, state" + x);
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 5, \"reason\": \"DR\"}]")),
              "signals.json: events[0].reason: unknown key; accepted in events[0]: id, start, end, curtail_pct, "
              "curtail_kw, limit_kw, scope" + x);
    EXPECT_EQ(err(feed("\"maintenance\": [{" + kEvent + ", \"nodes\": \"r01n01\", \"why\": \"\"}]")),
              "signals.json: maintenance[0].why: unknown key; accepted in maintenance[0]: id, start, end, nodes, "
              "racks, reason" + x);
    EXPECT_EQ(err(feed("\"health\": {\"drained\": \"r01n01\"}")),
              "signals.json: health.drained: unknown key; accepted in health: degraded, down, nvlink_fault, "
              "link_down" + x);
    EXPECT_EQ(err(feed("\"x-anything\": {\"nested\": [1, {}]}, \"power\": {\"x-y\": 1, \"site\": {\"x-z\": \"\"}}")),
              "ok");
}

TEST(SignalsParse, WrongTypesSayWhatWasExpected)
{
    EXPECT_EQ(err(feed("\"source\": 7")), "signals.json: source: expected a string, got the number 7");
    EXPECT_EQ(err(feed("\"power\": []")),
              "signals.json: power: expected an object with site, rows and/or racks, got an array");
    EXPECT_EQ(err(feed("\"power\": {\"site\": 1200}")),
              "signals.json: power.site: expected an object with budget_kw and/or draw_kw, got the number 1200");
    EXPECT_EQ(err(feed("\"power\": {\"site\": {\"budget_kw\": \"1200\"}}")),
              "signals.json: power.site.budget_kw: expected a number >= 0 (kW), got the string \"1200\"");
    EXPECT_EQ(err(feed("\"power\": {\"site\": {\"draw_kw\": true}}")),
              "signals.json: power.site.draw_kw: expected a number >= 0 (kW), got true");
    EXPECT_EQ(err(feed("\"power\": {\"site\": {\"draw_kw\": -0.5}}")),
              "signals.json: power.site.draw_kw: expected a number >= 0 (kW), got the number -0.5");
    EXPECT_EQ(err(feed("\"power\": {\"site\": {\"draw_kw\": NaN}}")),
              "signals.json: power.site.draw_kw: expected a number >= 0 (kW), got the number NaN");
    EXPECT_EQ(err(feed("\"power\": {\"rows\": [\"row1\"]}")),
              "signals.json: power.rows: expected an object mapping row names (FaultDomain Type=row) to {budget_kw, "
              "draw_kw}, got an array");
    EXPECT_EQ(err(feed("\"power\": {\"racks\": {\"nvl01\": null}}")),
              "signals.json: power.racks.nvl01: expected an object with budget_kw and/or draw_kw, got null");
    EXPECT_EQ(err(feed("\"thermal\": [\"r01n01\"]")),
              "signals.json: thermal: expected an object mapping node names to {gpu_temp_c, state}, got an array");
    EXPECT_EQ(err(feed("\"thermal\": {\"r01n01\": 70}")),
              "signals.json: thermal.r01n01: expected an object with gpu_temp_c and/or state, got the number 70");
    EXPECT_EQ(err(feed("\"thermal\": {\"r01n01\": {\"gpu_temp_c\": \"70\"}}")),
              "signals.json: thermal.r01n01.gpu_temp_c: expected a number (degrees C), got the string \"70\"");
    EXPECT_EQ(err(feed("\"thermal\": {\"r01n01\": {\"state\": 3}}")),
              "signals.json: thermal.r01n01.state: expected a string, got the number 3");
    EXPECT_EQ(err(feed("\"events\": {}")), "signals.json: events: expected an array of events, got an object");
    EXPECT_EQ(err(feed("\"events\": [\"dr-1\"]")),
              "signals.json: events[0]: expected an event object with id, start, end, curtail_pct or curtail_kw or "
              "limit_kw, scope, got the string \"dr-1\"");
    EXPECT_EQ(err(feed("\"events\": [{\"id\": 1, \"start\": 1, \"end\": 2, \"curtail_kw\": 1}]")),
              "signals.json: events[0].id: expected a non-empty string, got the number 1");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": \"25%\"}]")),
              "signals.json: events[0].curtail_pct: expected a number > 0 (percent of the scope's budget), got the "
              "string \"25%\"");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_kw\": 5, \"scope\": [\"site\"]}]")),
              "signals.json: events[0].scope: expected a string, got an array");
    EXPECT_EQ(err(feed("\"maintenance\": \"r01n01\"")),
              "signals.json: maintenance: expected an array of maintenance windows, got the string \"r01n01\"");
    EXPECT_EQ(err(feed("\"maintenance\": [{" + kEvent + ", \"nodes\": [\"r01n01\"]}]")),
              "signals.json: maintenance[0].nodes: expected a string holding a hostlist of nodes, e.g. "
              "\"r01n[01-04]\", got an array");
    EXPECT_EQ(err(feed("\"maintenance\": [{" + kEvent + ", \"racks\": \"nvl01\", \"reason\": 5}]")),
              "signals.json: maintenance[0].reason: expected a string, got the number 5");
    EXPECT_EQ(err(feed("\"health\": \"r01n01\"")),
              "signals.json: health: expected an object with degraded, down, nvlink_fault and/or link_down "
              "hostlists, got the string \"r01n01\"");
    EXPECT_EQ(err(feed("\"health\": {\"nvlink_fault\": null}")),
              "signals.json: health.nvlink_fault: got null; leave optional keys out instead of setting them to null");
    EXPECT_EQ(err("{\"schema\": null, \"generated_at\": 1}"),
              "signals.json: schema: expected the string \"m2g.signals/v1\", got null");
}

TEST(SignalsParse, UnknownNamesNameTheNameAndThePath)
{
    EXPECT_EQ(err(feed("\"power\": {\"racks\": {\"nvl99\": {\"draw_kw\": 1}}}")),
              "signals.json: power.racks.nvl99: no NVLink domain nvl99 in m2g.conf");
    EXPECT_EQ(err(feed("\"power\": {\"rows\": {\"row3\": {\"draw_kw\": 1}}}")),
              "signals.json: power.rows.row3: no fault domain row3 in m2g.conf; a row is a FaultDomain with Type=row "
              "(rows in m2g.conf: row1, row2)");
    EXPECT_EQ(err(feed("\"thermal\": {\"r09n01\": {\"gpu_temp_c\": 70}}")),
              "signals.json: thermal.r09n01: no node r09n01 in m2g.conf");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_kw\": 5, \"scope\": \"rack:nvl09\"}]")),
              "signals.json: events[0].scope: no NVLink domain nvl09 in m2g.conf");
    EXPECT_EQ(err(feed("\"maintenance\": [{" + kEvent + ", \"nodes\": \"r01n[18-19]\"}]")),
              "signals.json: maintenance[0].nodes: no node r01n19 in m2g.conf");
    EXPECT_EQ(err(feed("\"maintenance\": [{" + kEvent + ", \"racks\": \"nvl[08-09]\"}]")),
              "signals.json: maintenance[0].racks: no NVLink domain nvl09 in m2g.conf");
    EXPECT_EQ(err(feed("\"health\": {\"degraded\": \"r01n01,gpu7\"}")),
              "signals.json: health.degraded: no node gpu7 in m2g.conf");
    EXPECT_EQ(err(feed("\"health\": {\"down\": \"r10n01\"}")), "signals.json: health.down: no node r10n01 in m2g.conf");
    EXPECT_EQ(err(feed("\"health\": {\"nvlink_fault\": \"r01n01\"}")),
              "signals.json: health.nvlink_fault: no NVLink domain r01n01 in m2g.conf");
    EXPECT_EQ(err(feed("\"health\": {\"link_down\": \"leaf02,spine09\"}")),
              "signals.json: health.link_down: no switch spine09 in m2g.conf");
}

TEST(SignalsParse, RowOfAnotherTypeIsNotARow)
{
    EXPECT_EQ(err(feed("\"power\": {\"rows\": {\"feedA\": {\"budget_kw\": 400}}}")),
              "signals.json: power.rows.feedA: fault domain feedA has Type=power_feed, not row; rows are FaultDomains "
              "with Type=row (rows in m2g.conf: row1, row2)");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_kw\": 5, \"scope\": \"row:feedB\"}]")),
              "signals.json: events[0].scope: fault domain feedB has Type=power_feed, not row; rows are FaultDomains "
              "with Type=row (rows in m2g.conf: row1, row2)");
    const Model flat = build_model(parse_m2g_conf("NodeName=n[1-2] Gpus=4\nSwitchName=s Nodes=n[1-2]\n", "m2g.conf"));
    try {
        parse_signals(feed("\"power\": {\"rows\": {\"row1\": {}}}"), "signals.json", flat, kNow);
        ADD_FAILURE() << "no error";
    } catch (const ParseError& e) {
        EXPECT_STREQ(e.what(), "signals.json: power.rows.row1: no fault domain row1 in m2g.conf; a row is a "
                               "FaultDomain with Type=row (m2g.conf has none)");
    }
}

TEST(SignalsParse, ThermalNeedsAReadingAndAKnownState)
{
    EXPECT_EQ(err(feed("\"thermal\": {\"r01n01\": {}}")),
              "signals.json: thermal.r01n01: empty; give gpu_temp_c (the hottest GPU, degrees C), state (ok, warm, "
              "hot, critical) or both");
    EXPECT_EQ(err(feed("\"thermal\": {\"r01n01\": {\"x-sensor\": 1}}")),
              "signals.json: thermal.r01n01: empty; give gpu_temp_c (the hottest GPU, degrees C), state (ok, warm, "
              "hot, critical) or both");
    EXPECT_EQ(err(feed("\"thermal\": {\"r01n01\": {\"state\": \"Hot\"}}")),
              "signals.json: thermal.r01n01.state: \"Hot\" is not a thermal state; accepted: ok, warm, hot, critical");
}

TEST(SignalsParse, CurtailmentIsExactlyOneOfPctAndKwInRange)
{
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 10, \"curtail_kw\": 50}]")),
              "signals.json: events[0]: more than one of curtail_pct, curtail_kw and limit_kw; give exactly one");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"limit_kw\": 10, \"curtail_kw\": 50}]")),
              "signals.json: events[0]: more than one of curtail_pct, curtail_kw and limit_kw; give exactly one");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + "}]")),
              "signals.json: events[0]: no curtailment; give curtail_pct (0 < pct <= 100), curtail_kw (> 0) or "
              "limit_kw (>= 0, the most the scope may draw)");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"limit_kw\": -1}]")),
              "signals.json: events[0].limit_kw: expected a number >= 0 (kW, the most the scope may draw), got the "
              "number -1");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"limit_kw\": 0}]")), "ok");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 100.5}]")),
              "signals.json: events[0].curtail_pct: 100.5 is out of range; accepted: 0 < curtail_pct <= 100");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 0}]")),
              "signals.json: events[0].curtail_pct: expected a number > 0 (percent of the scope's budget), got the "
              "number 0");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_kw\": -10}]")),
              "signals.json: events[0].curtail_kw: expected a number > 0 (kW), got the number -10");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 100}]")), "ok");
}

TEST(SignalsParse, EventsAndWindowsNeedIdsAndOrderedTimes)
{
    EXPECT_EQ(err(feed(R"("events": [{"id": "e", "start": "2026-11-29T22:00:00Z", "end": "2026-11-29T22:00:00Z", "curtail_pct": 5}])")),
              "signals.json: events[0].end: 2026-11-29T22:00:00Z is not after start 2026-11-29T22:00:00Z");
    EXPECT_EQ(err(feed(R"("events": [{"id": "e", "start": 1795990000, "end": 1795986000, "curtail_pct": 5}])")),
              "signals.json: events[0].end: 2026-11-29T21:00:00Z is not after start 2026-11-29T22:06:40Z");
    EXPECT_EQ(err(feed(R"("events": [{"start": 1, "end": 2, "curtail_pct": 5}])")),
              "signals.json: events[0].id: missing; every event needs id, start and end");
    EXPECT_EQ(err(feed(R"("events": [{"id": "e", "end": 2, "curtail_pct": 5}])")),
              "signals.json: events[0].start: missing; every event needs id, start and end");
    EXPECT_EQ(err(feed(R"("events": [{"id": "", "start": 1, "end": 2, "curtail_pct": 5}])")),
              "signals.json: events[0].id: must not be empty");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 5}, {" + kEvent + ", \"curtail_kw\": 5}]")),
              "signals.json: events[1].id: duplicate event id \"e\" (also events[0]); ids must be unique");
    EXPECT_EQ(err(feed(R"("events": [{"id": "e", "start": "now", "end": 2, "curtail_pct": 5}])")),
              "signals.json: events[0].start: \"now\" is not a valid time (not a time); accepted: RFC 3339 "
              "(\"2026-11-29T21:00:00Z\", \"2026-11-29T22:00:00+01:00\", fractional seconds allowed) or epoch seconds");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 5, \"scope\": \"row:\"}]")),
              "signals.json: events[0].scope: \"row:\" is not a scope; accepted: \"site\", \"row:NAME\" (a "
              "FaultDomain with Type=row), \"rack:NAME\" (an NVLink domain)");
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 5, \"scope\": \"Site\"}]")),
              "signals.json: events[0].scope: \"Site\" is not a scope; accepted: \"site\", \"row:NAME\" (a "
              "FaultDomain with Type=row), \"rack:NAME\" (an NVLink domain)");
    EXPECT_EQ(err(feed(R"("maintenance": [{"id": "m", "start": 5, "end": 4, "nodes": "r01n01"}])")),
              "signals.json: maintenance[0].end: 1970-01-01T00:00:04Z is not after start 1970-01-01T00:00:05Z");
    EXPECT_EQ(err(feed(R"("maintenance": [{"id": "m", "start": 1, "end": 2, "nodes": "r01n01"},
                                          {"id": "m", "start": 1, "end": 2, "nodes": "r01n02"}])")),
              "signals.json: maintenance[1].id: duplicate maintenance id \"m\" (also maintenance[0]); ids must be "
              "unique");
    EXPECT_EQ(err(feed(R"("maintenance": [{"id": "m", "start": 1, "nodes": "r01n01"}])")),
              "signals.json: maintenance[0].end: missing; every maintenance window needs id, start and end");
    EXPECT_EQ(err(feed(R"("maintenance": [{"id": "m", "start": 1, "end": 2, "reason": "PDU"}])")),
              "signals.json: maintenance[0]: names no capacity; give nodes (a hostlist), racks (a hostlist of NVLink "
              "domains) or both");
    EXPECT_EQ(err(feed(R"("maintenance": [{"id": "m", "start": 1, "end": 2, "nodes": ""}])")),
              "signals.json: maintenance[0]: names no nodes (the hostlists are empty)");
    // The same id may be used once for an event and once for a window.
    EXPECT_EQ(err(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 5}], \"maintenance\": [{" + kEvent +
                       ", \"nodes\": \"r01n01\"}]")),
              "ok");
}

TEST(SignalsParse, BadHostlistsQuoteTheExpression)
{
    EXPECT_EQ(err(feed("\"health\": {\"degraded\": \"r01n[01-\"}")).rfind(
                  "signals.json: health.degraded: bad hostlist \"r01n[01-\": ", 0),
              0u);
    EXPECT_EQ(err(feed("\"health\": {\"down\": \"r01n[05-03]\"}")).rfind(
                  "signals.json: health.down: bad hostlist \"r01n[05-03]\": ", 0),
              0u);
    EXPECT_EQ(err(feed("\"maintenance\": [{" + kEvent + ", \"racks\": \"nvl[1-2]x\"}]"))
                  .rfind("signals.json: maintenance[0].racks: bad hostlist \"nvl[1-2]x\": ", 0),
              0u);
}

// Every bad fixture is rejected with the message test/fixtures/signals/bad/cases.tsv
// promises (the same list drives test/integration/signals-schema.sh).
TEST(SignalsParse, BadFixturesMatchTheCaseList)
{
    std::ifstream list(std::string(kFixtures) + "/bad/cases.tsv");
    ASSERT_TRUE(list) << "cases.tsv";
    int n = 0;
    for (std::string line; std::getline(list, line);) {
        if (line.empty() || line[0] == '#')
            continue;
        std::istringstream f(line);
        std::string name, level, message;
        std::getline(f, name, '\t');
        std::getline(f, level, '\t');
        std::getline(f, message);
        const std::string path = std::string(kFixtures) + "/bad/" + name + ".json";
        std::string got;
        try {
            parse_signals(read(path), path, model(), kNow);
            got = "ok";
        } catch (const ParseError& e) {
            got = e.what();
        }
        const std::string want = path + ": " + message;
        if (!want.empty() && want.back() == '*')
            EXPECT_EQ(got.substr(0, want.size() - 1), want.substr(0, want.size() - 1)) << name;
        else
            EXPECT_EQ(got, want) << name;
        EXPECT_TRUE(level == "schema" || level == "m2g") << name << ": level " << level;
        ++n;
    }
    EXPECT_GE(n, 30);
}

// ---- effective budgets ---------------------------------------------------------------

TEST(EffectiveBudget, FeedBudgetElseConfMinusActiveEventsOnTheSameScope)
{
    const Model& m = model();
    const int row1 = fault_domain("row1"), row2 = fault_domain("row2");
    const int nvl01 = m.find_domain("nvl01"), nvl03 = m.find_domain("nvl03");
    // Without a feed: m2g.conf's budgets.
    EXPECT_EQ(effective_budget_kw(m, nullptr, EventScope::Site, kNone, kNow), 1200);
    EXPECT_EQ(effective_budget_kw(m, nullptr, EventScope::Row, row1, kNow), 560);
    EXPECT_EQ(effective_budget_kw(m, nullptr, EventScope::Rack, nvl01, kNow), 132);
    EXPECT_EQ(effective_budget_kw(m, nullptr, EventScope::Row, fault_domain("feedA"), kNow), -1);  // none declared
    EXPECT_EQ(effective_budget_kw(m, nullptr, EventScope::Rack, 99, kNow), -1);                   // bad index

    const Signals s = parse_signals(read(std::string(kFixtures) + "/good/full.json"), "f", m, kNow);
    // site: feed 1000 (not 1200), dr-1 25% active -> 750; dr-past is over.
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Site, kNone, kNow), 750);
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Site, kNone, kNow - 3600), 1000);  // before dr-1
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Site, kNone, parse_signal_time("2026-11-28T09:30:00Z", "t")),
              900);  // dr-past, 100 kW
    // rows: row1 from the feed (500), untouched by row2's event; row2 from m2g.conf minus 50 kW.
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Row, row1, kNow), 500);
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Row, row2, kNow), 510);
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Row, row2, kNow + 3600), 560);  // the event ended (end exclusive)
    // racks: nvl01 from the feed; nvl03's 50% event is tomorrow.
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Rack, nvl01, kNow), 120);
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Rack, nvl03, kNow), 132);
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Rack, nvl03, parse_signal_time("2026-11-30T09:00:00Z", "t")),
              66);

    auto at = active_events(&s, kNow);
    ASSERT_EQ(at.size(), 2u);
    EXPECT_EQ(at[0]->id, "dr-1");
    EXPECT_EQ(at[1]->id, "dr-row2");
    EXPECT_TRUE(active_events(nullptr, kNow).empty());
}

TEST(EffectiveBudget, EventsAddUpAndFloorAtZero)
{
    const Model& m = model();
    const Signals s = parse_signals(
        feed("\"events\": [{\"id\": \"a\", \"start\": 1, \"end\": 2000000000, \"curtail_pct\": 50},"
             " {\"id\": \"b\", \"start\": 1, \"end\": 2000000000, \"curtail_kw\": 200},"
             " {\"id\": \"c\", \"start\": 1, \"end\": 2000000000, \"curtail_kw\": 500, \"scope\": \"rack:nvl02\"}]"),
        "f", m, kNow);
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Site, kNone, kNow), 1200 - 600 - 200);
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Rack, m.find_domain("nvl02"), kNow), 0);  // 132 - 500: nothing starts
    // -1: no budget known (no limit), events or not.
    const Model none = build_model(parse_m2g_conf("NodeName=n[1-2] Gpus=4\nSwitchName=s Nodes=n[1-2]\n", "m2g.conf"));
    const Signals t = parse_signals(feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 50}]"), "f", none, kNow);
    EXPECT_EQ(effective_budget_kw(none, &t, EventScope::Site, kNone, kNow), -1);
}

// ---- SignalFeed ------------------------------------------------------------------------

namespace {

class FeedTest : public testing::Test {
  protected:
    void SetUp() override
    {
        char tmpl[] = "/tmp/m2g-signals-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        path_ = dir_ + "/signals.json";
    }
    void TearDown() override
    {
        const std::string cmd = "rm -rf '" + dir_ + "'";
        (void)std::system(cmd.c_str());
    }

    // Write the feed atomically, as an agent should (temp file + rename).
    void write(const std::string& text, const std::string& path = "")
    {
        const std::string p = path.empty() ? path_ : path;
        const std::string tmp = p + ".new";
        {
            std::ofstream out(tmp, std::ios::trunc);
            out << text;
        }
        ASSERT_EQ(std::rename(tmp.c_str(), p.c_str()), 0);
    }
    // A good feed generated `age` seconds before kNow.
    static std::string good(int64_t age, const std::string& body = "")
    {
        return feed(body.empty() ? "\"source\": \"bms\"" : body, std::to_string(kNow - age));
    }
    Logger logger()
    {
        return [this](LogLevel l, const std::string& msg) { logs_.emplace_back(l, msg); };
    }
    int count(LogLevel l) const
    {
        int n = 0;
        for (const auto& e : logs_)
            n += e.first == l;
        return n;
    }
    std::string last_log() const { return logs_.empty() ? "" : logs_.back().second; }

    std::string dir_, path_;
    std::vector<std::pair<LogLevel, std::string>> logs_;
};

}  // namespace

TEST_F(FeedTest, NotConfigured)
{
    SignalFeed f("", 300, FailSafe::Last, model(), logger());
    EXPECT_FALSE(f.refresh(kNow));
    const SignalsView v = f.view(kNow);
    EXPECT_EQ(v.state, FeedState::NotConfigured);
    EXPECT_EQ(v.snap, nullptr);
    EXPECT_FALSE(v.failsafe);
    EXPECT_FALSE(v.hold);
    EXPECT_EQ(v.detail, "not configured: no SignalsFile= in m2g.conf; budgets from m2g.conf only");
    EXPECT_TRUE(logs_.empty());
}

TEST_F(FeedTest, FreshThenStaleLogsOnce)
{
    write(good(12));
    SignalFeed f(path_, 300, FailSafe::Last, model(), logger());
    EXPECT_TRUE(f.refresh(kNow));
    SignalsView v = f.view(kNow);
    EXPECT_EQ(v.state, FeedState::Fresh);
    EXPECT_FALSE(v.failsafe);
    ASSERT_NE(v.snap, nullptr);
    EXPECT_EQ(v.age_s, 12);
    EXPECT_EQ(v.detail, "fresh: generated 2026-11-29T20:59:48Z (12 s ago) by bms");
    ASSERT_EQ(logs_.size(), 1u);
    EXPECT_EQ(logs_[0].first, LogLevel::Info);
    EXPECT_EQ(logs_[0].second, "signals feed: fresh: generated 2026-11-29T20:59:48Z (12 s ago) by bms");

    // The TTL is inclusive; one second later the snapshot is stale.
    EXPECT_EQ(f.view(kNow + 288).state, FeedState::Fresh);
    for (int i = 0; i < 5; ++i)
        EXPECT_FALSE(f.refresh(kNow + 289 + i * 10));
    v = f.view(kNow + 408);
    EXPECT_EQ(v.state, FeedState::Stale);
    EXPECT_TRUE(v.failsafe);
    EXPECT_FALSE(v.hold);
    EXPECT_NE(v.snap, nullptr);  // fail-safe last: kept
    EXPECT_EQ(v.detail, "stale: last good snapshot is 420 s old (TTL 300 s); fail-safe last: using it");
    EXPECT_EQ(count(LogLevel::Warning), 1);
    EXPECT_EQ(logs_.back().second, "signals feed stale: last good snapshot is 301 s old (TTL 300 s); fail-safe last: using it");

    // A new file: back to fresh, logged once at Info.
    write(good(0, "\"source\": \"bms2\""));
    EXPECT_TRUE(f.refresh(kNow + 400));
    EXPECT_EQ(f.view(kNow + 400).state, FeedState::Stale);  // kNow is 400 s old too
    write(feed("\"source\": \"bms3\"", std::to_string(kNow + 400)));
    EXPECT_TRUE(f.refresh(kNow + 401));
    EXPECT_FALSE(f.refresh(kNow + 402));
    EXPECT_EQ(f.view(kNow + 402).state, FeedState::Fresh);
    EXPECT_EQ(count(LogLevel::Info), 2);
    EXPECT_EQ(last_log(), "signals feed back: fresh: generated 2026-11-29T21:06:40Z (1 s ago) by bms3");
    EXPECT_EQ(count(LogLevel::Warning), 1);
}

TEST_F(FeedTest, MissingFileThenRecovery)
{
    SignalFeed f(path_, 300, FailSafe::Open, model(), logger());
    SignalsView v = f.view(kNow);  // before any refresh
    EXPECT_EQ(v.state, FeedState::Missing);
    EXPECT_TRUE(v.failsafe);
    EXPECT_EQ(v.detail, "missing: " + path_ + ": not read yet; no good snapshot yet; fail-safe open: no power policy");
    for (int i = 0; i < 3; ++i)
        EXPECT_FALSE(f.refresh(kNow + i));
    v = f.view(kNow);
    EXPECT_EQ(v.state, FeedState::Missing);
    EXPECT_TRUE(v.failsafe);
    EXPECT_EQ(v.snap, nullptr);
    EXPECT_EQ(v.age_s, -1);
    EXPECT_EQ(v.detail,
              "missing: " + path_ + ": No such file or directory; no good snapshot yet; fail-safe open: no power policy");
    ASSERT_EQ(logs_.size(), 1u);
    EXPECT_EQ(logs_[0].first, LogLevel::Warning);
    EXPECT_EQ(logs_[0].second, "signals feed " + v.detail);

    write(good(5));
    EXPECT_TRUE(f.refresh(kNow));
    EXPECT_EQ(f.view(kNow).state, FeedState::Fresh);
    ASSERT_EQ(logs_.size(), 2u);
    EXPECT_EQ(logs_[1].first, LogLevel::Info);
    EXPECT_EQ(logs_[1].second, "signals feed back: fresh: generated 2026-11-29T20:59:55Z (5 s ago) by bms");

    // Deleted after a good read: the fail-safe at once (here open: no snapshot).
    ASSERT_EQ(::unlink(path_.c_str()), 0);
    EXPECT_FALSE(f.refresh(kNow + 10));
    v = f.view(kNow + 10);
    EXPECT_EQ(v.state, FeedState::Missing);
    EXPECT_TRUE(v.failsafe);
    EXPECT_EQ(v.snap, nullptr);
    EXPECT_EQ(v.detail,
              "missing: " + path_ + ": No such file or directory; last good snapshot is 15 s old; fail-safe open: "
              "no power policy");
    v = f.view(kNow + 400);
    EXPECT_TRUE(v.failsafe);
    EXPECT_EQ(v.snap, nullptr);  // open
    EXPECT_EQ(v.detail, "missing: " + path_ +
                            ": No such file or directory; last good snapshot is 405 s old (TTL 300 s); fail-safe open: "
                            "no power policy");
    EXPECT_EQ(count(LogLevel::Warning), 2);
}

TEST_F(FeedTest, UnreadableFileIsMissing)
{
    if (::geteuid() == 0)
        GTEST_SKIP() << "root reads any file";
    write(good(5));
    ASSERT_EQ(::chmod(path_.c_str(), 0), 0);
    SignalFeed f(path_, 300, FailSafe::Last, model(), logger());
    EXPECT_FALSE(f.refresh(kNow));
    EXPECT_EQ(f.view(kNow).state, FeedState::Missing);
    EXPECT_EQ(f.view(kNow).detail, "missing: " + path_ +
                                       ": cannot open: Permission denied; no good snapshot yet; fail-safe last: no "
                                       "snapshot to use, no power policy");
}

TEST_F(FeedTest, DirectoryIsMissingNotACrash)
{
    ASSERT_EQ(::mkdir(path_.c_str(), 0755), 0);
    SignalFeed f(path_, 300, FailSafe::Last, model(), logger());
    EXPECT_FALSE(f.refresh(kNow));
    EXPECT_EQ(f.view(kNow).detail,
              "missing: " + path_ + ": not a regular file; no good snapshot yet; fail-safe last: no snapshot to use, no "
                                    "power policy");
}

TEST_F(FeedTest, CorruptKeepsTheLastGoodSnapshotAndLogsOncePerVersion)
{
    write(good(10));
    SignalFeed f(path_, 300, FailSafe::Last, model(), logger());
    ASSERT_TRUE(f.refresh(kNow));
    const auto first = f.view(kNow).snap;
    logs_.clear();

    write("{\"schema\": \"m2g.signals/v1\", \"generated_at\": ");  // truncated
    for (int i = 0; i < 5; ++i)
        EXPECT_FALSE(f.refresh(kNow + 20 + i));
    SignalsView v = f.view(kNow + 20);
    EXPECT_EQ(v.state, FeedState::Corrupt);
    EXPECT_FALSE(v.failsafe);
    EXPECT_EQ(v.snap, first);
    EXPECT_EQ(v.detail, "corrupt since 2026-11-29T21:00:20Z: " + path_ +
                            ": not valid JSON: unexpected end of input (a truncated file?); using the last good "
                            "snapshot (30 s old)");
    ASSERT_EQ(logs_.size(), 1u);
    EXPECT_EQ(logs_[0].first, LogLevel::Error);
    EXPECT_EQ(logs_[0].second, "signals feed corrupt since 2026-11-29T21:00:20Z: " + path_ +
                                   ": not valid JSON: unexpected end of input (a truncated file?); using the last good "
                                   "snapshot (30 s old)");

    // Another broken version: one more Error, "since" unchanged.
    write(feed("\"power\": {\"racks\": {\"nvl99\": {}}}", std::to_string(kNow + 30)));
    EXPECT_FALSE(f.refresh(kNow + 30));
    EXPECT_FALSE(f.refresh(kNow + 31));
    EXPECT_EQ(count(LogLevel::Error), 2);
    EXPECT_EQ(last_log(), "signals feed corrupt since 2026-11-29T21:00:20Z: " + path_ +
                              ": power.racks.nvl99: no NVLink domain nvl99 in m2g.conf; using the last good snapshot "
                              "(40 s old)");

    // The last good snapshot ages out while the file stays broken: one warning.
    for (int i = 0; i < 3; ++i)
        EXPECT_FALSE(f.refresh(kNow + 400 + i));
    v = f.view(kNow + 400);
    EXPECT_EQ(v.state, FeedState::Corrupt);
    EXPECT_TRUE(v.failsafe);
    EXPECT_EQ(v.snap, first);  // last
    EXPECT_EQ(v.detail, "corrupt since 2026-11-29T21:00:20Z: " + path_ +
                            ": power.racks.nvl99: no NVLink domain nvl99 in m2g.conf; last good snapshot is 410 s old "
                            "(TTL 300 s); fail-safe last: using it");
    EXPECT_EQ(count(LogLevel::Warning), 1);
    EXPECT_EQ(count(LogLevel::Error), 2);

    // Fixed: back, at Info, "since" forgotten.
    write(good(-400));
    EXPECT_TRUE(f.refresh(kNow + 401));
    v = f.view(kNow + 401);
    EXPECT_EQ(v.state, FeedState::Fresh);
    EXPECT_NE(v.snap, first);
    EXPECT_EQ(last_log(), "signals feed back: fresh: generated 2026-11-29T21:06:40Z (1 s ago) by bms");
    write("not json");
    EXPECT_FALSE(f.refresh(kNow + 500));
    EXPECT_EQ(f.view(kNow + 500).detail.rfind("corrupt since 2026-11-29T21:08:20Z: ", 0), 0u);
}

TEST_F(FeedTest, CorruptWithoutAnyGoodSnapshot)
{
    write("[]");
    SignalFeed f(path_, 300, FailSafe::Defer, model(), logger());
    EXPECT_FALSE(f.refresh(kNow));
    const SignalsView v = f.view(kNow);
    EXPECT_EQ(v.state, FeedState::Corrupt);
    EXPECT_TRUE(v.failsafe);
    EXPECT_TRUE(v.hold);
    EXPECT_EQ(v.snap, nullptr);
    EXPECT_EQ(v.detail, "corrupt since 2026-11-29T21:00:00Z: " + path_ +
                            ": expected a JSON object (an m2g.signals/v1 feed), got an array; no good snapshot yet; "
                            "fail-safe defer: deferrable work waits");
    ASSERT_EQ(logs_.size(), 1u);
    EXPECT_EQ(logs_[0].first, LogLevel::Error);
}

TEST_F(FeedTest, FutureGeneratedAtIsJudgedAgainstRefreshTime)
{
    write(good(-301));
    SignalFeed f(path_, 300, FailSafe::Last, model(), logger());
    EXPECT_FALSE(f.refresh(kNow));
    EXPECT_EQ(f.view(kNow).state, FeedState::Corrupt);
    EXPECT_NE(last_log().find("301 s in the future"), std::string::npos);
}

TEST_F(FeedTest, EachFailSafe)
{
    write(good(0));
    SignalFeed last(path_, 60, FailSafe::Last, model(), nullptr);  // a null logger is fine
    SignalFeed open(path_, 60, FailSafe::Open, model(), logger());
    SignalFeed defer(path_, 60, FailSafe::Defer, model(), logger());
    for (SignalFeed* f : {&last, &open, &defer}) {
        ASSERT_TRUE(f->refresh(kNow));
        const SignalsView v = f->view(kNow + 60);
        EXPECT_EQ(v.state, FeedState::Fresh);
        EXPECT_FALSE(v.failsafe);
        EXPECT_FALSE(v.hold);
        EXPECT_NE(v.snap, nullptr);
    }
    SignalsView v = last.view(kNow + 61);
    EXPECT_EQ(v.state, FeedState::Stale);
    EXPECT_TRUE(v.failsafe);
    EXPECT_FALSE(v.hold);
    EXPECT_NE(v.snap, nullptr);
    EXPECT_EQ(v.age_s, 61);
    EXPECT_EQ(v.detail, "stale: last good snapshot is 61 s old (TTL 60 s); fail-safe last: using it");

    v = open.view(kNow + 61);
    EXPECT_EQ(v.state, FeedState::Stale);
    EXPECT_TRUE(v.failsafe);
    EXPECT_FALSE(v.hold);
    EXPECT_EQ(v.snap, nullptr);
    EXPECT_EQ(v.age_s, -1);
    EXPECT_EQ(v.detail, "stale: last good snapshot is 61 s old (TTL 60 s); fail-safe open: no power policy");

    v = defer.view(kNow + 61);
    EXPECT_EQ(v.state, FeedState::Stale);
    EXPECT_TRUE(v.failsafe);
    EXPECT_TRUE(v.hold);
    EXPECT_NE(v.snap, nullptr);
    EXPECT_EQ(v.detail, "stale: last good snapshot is 61 s old (TTL 60 s); fail-safe defer: deferrable work waits");

    // Missing with nothing ever read: last has nothing to keep; defer holds.
    SignalFeed none_last(dir_ + "/absent.json", 60, FailSafe::Last, model(), nullptr);
    SignalFeed none_defer(dir_ + "/absent.json", 60, FailSafe::Defer, model(), nullptr);
    none_last.refresh(kNow);
    none_defer.refresh(kNow);
    EXPECT_EQ(none_last.view(kNow).snap, nullptr);
    EXPECT_FALSE(none_last.view(kNow).hold);
    EXPECT_TRUE(none_defer.view(kNow).hold);
    EXPECT_TRUE(none_defer.view(kNow).failsafe);
}

TEST_F(FeedTest, UnchangedStatMeansNoReparse)
{
    write(good(10));
    SignalFeed f(path_, 300, FailSafe::Last, model(), logger());
    ASSERT_TRUE(f.refresh(kNow));
    const auto snap = f.view(kNow).snap;
    struct stat before {};
    ASSERT_EQ(::stat(path_.c_str(), &before), 0);
    // Same size, same inode, then the old mtime put back: the feed must not
    // look inside (it would find a broken file).
    {
        std::fstream io(path_, std::ios::in | std::ios::out);
        io.seekp(0);
        io << "X";
    }
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, path_.c_str(), times, 0), 0);
    for (int i = 0; i < 3; ++i)
        EXPECT_FALSE(f.refresh(kNow + i));
    EXPECT_EQ(f.view(kNow).state, FeedState::Fresh);
    EXPECT_EQ(f.view(kNow).snap, snap);
    EXPECT_EQ(count(LogLevel::Error), 0);
    // A real change (another mtime) is read. Older than 1 s: a file changed
    // in place is read only once it has settled.
    const struct timespec later[2] = {{before.st_mtim.tv_sec - 10, 0}, {before.st_mtim.tv_sec - 10, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path_.c_str(), later, 0), 0);
    EXPECT_FALSE(f.refresh(kNow + 5));
    EXPECT_EQ(f.view(kNow + 5).state, FeedState::Corrupt);
}

TEST_F(FeedTest, ReplacedFileIsPickedUpEvenWithTheSameSizeAndMtime)
{
    write(good(10, "\"source\": \"aaa\""));
    SignalFeed f(path_, 300, FailSafe::Last, model(), logger());
    ASSERT_TRUE(f.refresh(kNow));
    struct stat before {};
    ASSERT_EQ(::stat(path_.c_str(), &before), 0);
    // Same length, same mtime, new inode (rename over): still a new file.
    const std::string tmp = dir_ + "/next.json";
    {
        std::ofstream out(tmp);
        out << good(10, "\"source\": \"bbb\"");
    }
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, tmp.c_str(), times, 0), 0);
    ASSERT_EQ(std::rename(tmp.c_str(), path_.c_str()), 0);
    EXPECT_TRUE(f.refresh(kNow + 1));
    EXPECT_EQ(f.view(kNow + 1).snap->source, "bbb");
}

TEST_F(FeedTest, StatusFileRoundTrip)
{
    const std::string status = dir_ + "/status.json";
    write(good(10));
    SignalFeed f(path_, 300, FailSafe::Defer, model(), logger());
    f.set_status_file(status);
    ASSERT_TRUE(f.refresh(kNow));
    SignalsView mine = f.view(kNow + 5), theirs = read_feed_status(status, model(), 300, kNow + 5);
    EXPECT_EQ(theirs.state, FeedState::Fresh);
    EXPECT_EQ(theirs.detail, mine.detail);
    ASSERT_NE(theirs.snap, nullptr);
    EXPECT_EQ(theirs.snap->generated_at, kNow - 10);
    EXPECT_EQ(theirs.snap->source, "bms");
    const std::string text = read(status);
    EXPECT_NE(text.find("\"schema\": \"m2g.signals-status/v1\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"failsafe\": \"defer\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"checked_at\": \"2026-11-29T21:00:00Z\""), std::string::npos) << text;

    // Staleness is recomputed for the reader's `now` and TTL.
    theirs = read_feed_status(status, model(), 300, kNow + 400);
    EXPECT_EQ(theirs.state, FeedState::Stale);
    EXPECT_TRUE(theirs.hold);
    EXPECT_EQ(theirs.detail, f.view(kNow + 400).detail);
    EXPECT_EQ(read_feed_status(status, model(), 1000, kNow + 400).state, FeedState::Fresh);

    // Unchanged state: the file is not rewritten.
    struct stat st1 {};
    ASSERT_EQ(::stat(status.c_str(), &st1), 0);
    ASSERT_EQ(::unlink(status.c_str()), 0);
    EXPECT_FALSE(f.refresh(kNow + 1));
    EXPECT_NE(::access(status.c_str(), F_OK), 0);

    // Corrupt: the error, the time it started and the last good snapshot.
    write("{");
    EXPECT_FALSE(f.refresh(kNow + 20));
    theirs = read_feed_status(status, model(), 300, kNow + 20);
    mine = f.view(kNow + 20);
    EXPECT_EQ(theirs.state, FeedState::Corrupt);
    EXPECT_FALSE(theirs.failsafe);
    ASSERT_NE(theirs.snap, nullptr);
    EXPECT_EQ(theirs.snap->generated_at, kNow - 10);
    EXPECT_EQ(theirs.detail, mine.detail);

    // Missing and never read.
    ASSERT_EQ(::unlink(path_.c_str()), 0);
    SignalFeed g(path_, 300, FailSafe::Open, model(), nullptr);
    g.set_status_file(status);
    g.refresh(kNow);
    theirs = read_feed_status(status, model(), 300, kNow);
    EXPECT_EQ(theirs.state, FeedState::Missing);
    EXPECT_EQ(theirs.snap, nullptr);
    EXPECT_EQ(theirs.detail, g.view(kNow).detail);

    // Still missing, for another reason (a directory where the feed was):
    // the status says the new one (the state alone did not change).
    ASSERT_EQ(::mkdir(path_.c_str(), 0755), 0);
    g.refresh(kNow + 1);
    theirs = read_feed_status(status, model(), 300, kNow + 1);
    EXPECT_EQ(theirs.state, FeedState::Missing);
    EXPECT_NE(theirs.detail.find("not a regular file"), std::string::npos) << theirs.detail;
    EXPECT_EQ(theirs.detail, g.view(kNow + 1).detail);
    ASSERT_EQ(::rmdir(path_.c_str()), 0);
}

TEST_F(FeedTest, StatusFileErrors)
{
    write(good(10));
    SignalFeed f(path_, 300, FailSafe::Last, model(), logger());
    f.set_status_file(dir_ + "/no/such/dir/status.json");
    EXPECT_TRUE(f.refresh(kNow));
    write(good(5));
    EXPECT_TRUE(f.refresh(kNow + 1));  // still publishes; the status write fails again, silently
    EXPECT_EQ(count(LogLevel::Warning), 1);
    EXPECT_EQ(logs_.back().second, "signals status file not written (retried at each poll): " + dir_ +
                                       "/no/such/dir/status.json.tmp: No such file or directory");

    auto msg = [&](const std::string& text) {
        write(text, dir_ + "/s.json");
        try {
            read_feed_status(dir_ + "/s.json", model(), 300, kNow);
            return std::string("ok");
        } catch (const Error& e) {
            return std::string(e.what());
        }
    };
    const std::string tail = " (a status file as written by job_submit/m2g, schema m2g.signals-status/v1)";
    EXPECT_EQ(msg("[]"), dir_ + "/s.json: not a JSON object" + tail);
    EXPECT_EQ(msg("{\"schema\": \"m2g.signals/v1\"}"), dir_ + "/s.json: \"schema\" is \"m2g.signals/v1\"" + tail);
    EXPECT_EQ(msg("{\"schema\": \"m2g.signals-status/v1\", \"state\": \"fresh\", \"failsafe\": \"last\"}"),
              dir_ + "/s.json: state \"fresh\" without a snapshot" + tail);
    EXPECT_EQ(msg("{\"schema\": \"m2g.signals-status/v1\", \"state\": \"fresh\", \"failsafe\": \"maybe\"}"),
              dir_ + "/s.json: \"failsafe\" is \"maybe\"; accepted: last, open, defer" + tail);
    try {
        read_feed_status(dir_ + "/absent.json", model(), 300, kNow);
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), dir_ + "/absent.json: cannot open: No such file or directory");
    }
}

TEST_F(FeedTest, PollThreadStartsAtOnceAndStopsPromptly)
{
    write(feed("", std::to_string(std::time(nullptr))));
    std::atomic<int> lines{0};
    SignalFeed f(path_, 300, FailSafe::Last, model(), [&](LogLevel, const std::string&) { ++lines; });
    f.start(3600);  // the first refresh is immediate, the next an hour away
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (f.view(std::time(nullptr)).state != FeedState::Fresh && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(f.view(std::time(nullptr)).state, FeedState::Fresh);
    const auto t0 = std::chrono::steady_clock::now();
    f.stop();
    const auto took = std::chrono::steady_clock::now() - t0;
    // Woken, not timed out (the poll period is an hour); generous for busy CI.
    EXPECT_LT(took, std::chrono::seconds(2));
    f.stop();  // idempotent
    f.start(1);
    f.start(1);  // restarting joins the previous thread
    f.stop();
    EXPECT_EQ(lines.load(), 1);  // "signals feed: fresh ..."
    // The destructor stops a running thread.
    {
        SignalFeed g(path_, 300, FailSafe::Last, model(), nullptr);
        g.start(3600);
    }
}

// One thread keeps replacing the file with good and broken versions and
// refreshing; another reads view() as fast as it can. Every view must be
// consistent (run under -fsanitize=thread this also proves there is no race).
TEST_F(FeedTest, ConcurrentRefreshAndView)
{
    write(good(0));
    SignalFeed f(path_, 300, FailSafe::Open, model(), nullptr);
    ASSERT_TRUE(f.refresh(kNow));
    std::atomic<bool> done{false};
    std::atomic<long> views{0};
    std::atomic<int> bad{0};
    std::thread reader([&] {
        while (!done.load()) {
            const SignalsView v = f.view(kNow + 1);
            ++views;
            const bool ok = v.snap && !v.failsafe && v.snap->generated_at >= kNow - 1 &&
                            v.snap->generated_at <= kNow + 200 &&
                            (v.state == FeedState::Fresh || v.state == FeedState::Corrupt) &&
                            (v.state != FeedState::Corrupt || v.detail.find("corrupt since") == 0);
            if (!ok)
                ++bad;
        }
    });
    int published = 0;
    for (int i = 0; i < 200; ++i) {
        if (i % 2)
            write("{\"schema\": \"m2g.signals/v1\", \"generated_at\": " + std::to_string(i));  // broken
        else
            write(feed("\"thermal\": {\"r01n01\": {\"gpu_temp_c\": " + std::to_string(i) + "}}",
                       std::to_string(kNow + i)));
        published += f.refresh(kNow + 1) ? 1 : 0;
    }
    done = true;
    reader.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_GT(views.load(), 0);
    EXPECT_EQ(published, 100);
    EXPECT_EQ(f.view(kNow + 1).state, FeedState::Corrupt);
    EXPECT_EQ(f.view(kNow + 1).snap->thermal[node("r01n01")].gpu_temp_c, 198);
}

// ---- m2g signals show -----------------------------------------------------------------------

TEST_F(FeedTest, FormatTextAndJson)
{
    write(read(std::string(kFixtures) + "/good/full.json"));
    SignalFeed f(path_, 600, FailSafe::Last, model(), nullptr);
    ASSERT_TRUE(f.refresh(kNow));
    const SignalsView v = f.view(kNow);
    const std::string text = format_signals(model(), v, kNow, false);
    const std::string want_head =
        "state:     fresh\n"
        "detail:    fresh: generated 2026-11-29T20:55:00Z (300 s ago) by bms-agent on mgmt01\n"
        "fail-safe: not in effect\n"
        "POWER (kW)           BUDGET  EFFECTIVE       DRAW   HEADROOM\n"
        "site                 1000.0      750.0      800.0      -50.0\n"
        "row row1              500.0      500.0      300.0      200.0\n"
        "row row2              560.0      510.0      450.0       60.0\n"
        "rack nvl01            120.0      120.0       90.0       30.0\n"
        "rack nvl02            132.0      132.0          -          -\n";
    EXPECT_EQ(text.substr(0, want_head.size()), want_head) << text;
    EXPECT_NE(text.find("rack nvl05            132.0      132.0      131.0        1.0\n"), std::string::npos) << text;
    EXPECT_NE(text.find("events:    3 active or upcoming\n"
                        "  active    dr-1  site -25%  2026-11-29T20:30:00Z .. 2026-11-29T23:00:00Z (ends in 2 h 0 min)\n"
                        "  active    dr-row2  row:row2 -50 kW  2026-11-29T21:00:00Z .. 2026-11-29T22:00:00Z (ends in 60 min)\n"
                        "  upcoming  dr-nvl03  rack:nvl03 -50%  2026-11-30T09:00:00Z .. 2026-11-30T10:00:00Z (starts in 12 h 0 min)\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("maintenance: 2 windows\n"
                        "  upcoming  mw-17  2026-11-30T08:00:00Z .. 2026-11-30T12:00:00Z  36 nodes (r01n[01-18],r02n[01-18])  PDU swap\n"
                        "  active    mw-18  2026-11-29T20:00:00Z .. 2026-11-29T22:00:00Z  2 nodes (r08n[17-18])\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("health:    3 degraded, 1 down, 1 NVLink domain with a fault, 1 switch with a link down (leaf02)\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("thermal:   5 nodes reported; hottest: r05n03 92 C critical, r05n02 84 C hot, r01n01 71.5 C warm, "
                        "r02n01 60 C ok, r02n02 0 C ok\n"),
              std::string::npos)
        << text;

    const std::string json = format_signals(model(), v, kNow, true);
    EXPECT_EQ(json.rfind("{\"state\":\"fresh\",\"failsafe\":false,\"hold\":false,\"age_s\":300,\"detail\":\"fresh: "
                         "generated 2026-11-29T20:55:00Z (300 s ago) by bms-agent on mgmt01\",\"generated_at\":"
                         "\"2026-11-29T20:55:00Z\",\"source\":\"bms-agent on mgmt01\",\"power\":{\"site\":{"
                         "\"budget_kw\":1000.0,\"effective_kw\":750.0,\"draw_kw\":800.0,\"headroom_kw\":-50.0},",
                         0),
              0u)
        << json;
    EXPECT_NE(json.find("{\"id\":\"mw-17\",\"active\":false,\"start\":\"2026-11-30T08:00:00Z\",\"end\":"
                        "\"2026-11-30T12:00:00Z\",\"nodes\":\"r01n[01-18],r02n[01-18]\",\"node_count\":36,\"reason\":"
                        "\"PDU swap\"}"),
              std::string::npos)
        << json;
    EXPECT_NE(json.find("\"health\":{\"degraded\":3,\"down\":1,\"nvlink_fault\":1,\"links_down\":1}"), std::string::npos)
        << json;
    EXPECT_EQ(json.back(), '\n');

    // Without a snapshot: m2g.conf's budgets only.
    SignalFeed none("", 300, FailSafe::Last, model(), nullptr);
    const std::string empty = format_signals(model(), none.view(kNow), kNow, false);
    EXPECT_EQ(empty.substr(0, empty.find("POWER")),
              "state:     not_configured\n"
              "detail:    not configured: no SignalsFile= in m2g.conf; budgets from m2g.conf only\n"
              "power:     budgets from m2g.conf only (no feed data in use)\n");
    EXPECT_NE(empty.find("site                 1200.0     1200.0          -          -\n"), std::string::npos) << empty;
    EXPECT_EQ(format_signals(model(), none.view(kNow), kNow, true).rfind("{\"state\":\"not_configured\"", 0), 0u);
}

TEST(SignalsEnums, Names)
{
    EXPECT_STREQ(to_string(ThermalState::Critical), "critical");
    EXPECT_STREQ(to_string(ThermalState::Warm), "warm");
    EXPECT_STREQ(to_string(FeedState::NotConfigured), "not_configured");
    EXPECT_STREQ(to_string(FeedState::Stale), "stale");
    EXPECT_STREQ(to_string(FeedState::Corrupt), "corrupt");
}

TEST_F(FeedTest, NeverPublishesADocumentCaughtMidWrite)
{
    // An agent that rewrites the feed in place, without O_TRUNC, in two
    // write()s 2 ms apart: between them the file holds the new first half
    // over the old second half, which parses. The event id sits at the
    // start and its end at the end, so a mix shows as an id with the other
    // document's end. (Regression: the poll used to publish such a mix.)
    const int64_t end_a = kNow + 3000, end_b = kNow + 5000;
    auto doc = [](const std::string& id, int64_t end) {
        return "{\"schema\": \"m2g.signals/v1\", \"events\": [{\"id\": \"" + id +
               "\", \"start\": " + std::to_string(kNow - 60) + ", \"curtail_pct\": 50, \"x-pad\": \"" +
               std::string(2000, 'p') + "\", \"end\": " + std::to_string(end) + "}], \"generated_at\": " +
               std::to_string(kNow) + "}";
    };
    const std::string a = doc("dr-a", end_a), b = doc("dr-b", end_b);
    ASSERT_EQ(a.size(), b.size());
    write(a);
    SignalFeed f(path_, 300, FailSafe::Last, model(), logger());
    ASSERT_TRUE(f.refresh(kNow));

    std::atomic<bool> stop{false};
    std::atomic<int> versions{0};
    std::thread writer([&] {
        const int fd = ::open(path_.c_str(), O_WRONLY);
        ASSERT_GE(fd, 0);
        const size_t h = a.size() / 2;
        for (int n = 0; !stop; ++n) {
            const std::string& d = n % 2 ? a : b;
            ASSERT_EQ(::pwrite(fd, d.data(), h, 0), ssize_t(h));
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            ASSERT_EQ(::pwrite(fd, d.data() + h, d.size() - h, off_t(h)), ssize_t(d.size() - h));
            ++versions;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        ::close(fd);
    });
    int mixed = 0, reads = 0;
    // At least 1.5 s and more than 100 versions (a busy machine writes fewer
    // per second), at most 15 s.
    const auto start = std::chrono::steady_clock::now();
    const auto until = start + std::chrono::milliseconds(1500), give_up = start + std::chrono::seconds(15);
    for (auto now = start; (now < until || versions.load() <= 100) && now < give_up;
         now = std::chrono::steady_clock::now()) {
        reads += f.refresh(kNow);
        const SignalsView v = f.view(kNow);
        ASSERT_NE(v.snap, nullptr);
        ASSERT_EQ(v.snap->events.size(), 1u);
        const CurtailmentEvent& e = v.snap->events[0];
        mixed += !((e.id == "dr-a" && e.end == end_a) || (e.id == "dr-b" && e.end == end_b));
        std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
    stop = true;
    writer.join();
    EXPECT_GT(versions.load(), 100);
    EXPECT_EQ(mixed, 0) << "published a mix of two documents (" << reads << " versions published)";
    // The writer stopped in the middle of a version or after a whole one;
    // finish it as the agent would, and the next poll reads it.
    write(b);
    EXPECT_TRUE(f.refresh(kNow));
    const SignalsView v = f.view(kNow);
    EXPECT_EQ(v.state, FeedState::Fresh);
    ASSERT_NE(v.snap, nullptr);
    EXPECT_EQ(v.snap->events[0].id, "dr-b");
    EXPECT_EQ(v.snap->events[0].end, end_b);
}

TEST_F(FeedTest, AFeedRewrittenInPlaceIsReadOnceItSettles)
{
    write(good(10, "\"source\": \"one\""));
    SignalFeed f(path_, 300, FailSafe::Last, model(), logger());
    ASSERT_TRUE(f.refresh(kNow));
    // Rewritten in place (same inode) every 5 ms: not read while it keeps
    // changing; what is in force stays, and one warning says why.
    std::atomic<bool> stop{false};
    std::thread writer([&] {
        while (!stop) {
            std::ofstream out(path_, std::ios::in | std::ios::out);
            out << good(10, "\"source\": \"two\"");
            out.close();
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(f.refresh(kNow));
    EXPECT_FALSE(f.refresh(kNow + 1));
    stop = true;
    writer.join();
    SignalsView v = f.view(kNow + 1);
    EXPECT_EQ(v.state, FeedState::Fresh);
    ASSERT_NE(v.snap, nullptr);
    EXPECT_EQ(v.snap->source, "one");
    int said = 0;
    for (const auto& e : logs_)
        said += e.second.find("is being rewritten in place") != std::string::npos;
    EXPECT_EQ(said, 1);
    EXPECT_EQ(count(LogLevel::Error), 0);
    // Left alone for a second, it is read.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    EXPECT_TRUE(f.refresh(kNow + 2));
    v = f.view(kNow + 2);
    EXPECT_EQ(v.state, FeedState::Fresh);
    EXPECT_EQ(v.snap->source, "two");
}

// ---- limits and OpenADR 3 events -------------------------------------------------------

TEST(EffectiveBudget, ALimitIsACeilingAndBindsWithoutABudget)
{
    const Model& m = model();
    const Signals s = parse_signals(
        feed("\"events\": [{\"id\": \"a\", \"start\": 1, \"end\": 2000000000, \"curtail_kw\": 200},"
             " {\"id\": \"l\", \"start\": 1, \"end\": 2000000000, \"limit_kw\": 900},"
             " {\"id\": \"r\", \"start\": 1, \"end\": 2000000000, \"limit_kw\": 50, \"scope\": \"rack:nvl02\"}]"),
        "f", m, kNow);
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Site, kNone, kNow), 900);  // min(1200 - 200, 900)
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Rack, m.find_domain("nvl02"), kNow), 50);
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Rack, m.find_domain("nvl01"), kNow), 132);
    EXPECT_EQ(event_cut_text(s.events[1]), "at most 900 kW");
    EXPECT_EQ(event_cut_text(s.events[0]), "-200 kW");
    // No budget anywhere: the limit alone binds, while it lasts; lowest_budget_kw sees it coming.
    const Model none = build_model(parse_m2g_conf("NodeName=n[1-2] Gpus=4\nSwitchName=s Nodes=n[1-2]\n", "m2g.conf"));
    const Signals t = parse_signals(
        feed("\"events\": [{\"id\": \"l\", \"start\": \"2026-11-29T22:00:00Z\", \"end\": \"2026-11-29T23:00:00Z\", "
             "\"limit_kw\": 3}]"),
        "f", none, kNow);
    EXPECT_EQ(effective_budget_kw(none, &t, EventScope::Site, kNone, kNow), -1);
    EXPECT_EQ(effective_budget_kw(none, &t, EventScope::Site, kNone, kNow + 3600), 3);
    const CurtailmentEvent* up = nullptr;
    EXPECT_EQ(lowest_budget_kw(none, &t, EventScope::Site, kNone, kNow, kNow + 7200, &up), 3);
    ASSERT_NE(up, nullptr);
    EXPECT_EQ(up->id, "l");
    EXPECT_EQ(lowest_budget_kw(none, &t, EventScope::Site, kNone, kNow, kNow + 1800, &up), -1);
}

namespace {

// An OpenADR 3 event as a VTN serves it, with `intervals` and `descriptor` units.
std::string adr_event(const std::string& intervals, const std::string& units = "\"KW\"",
                      const std::string& period = R"({"start": "2026-11-29T22:00:00Z", "duration": "PT1H"})")
{
    return R"({"id": "ev-7", "createdDateTime": "2026-11-29T20:00:00Z", "modificationDateTime": "2026-11-29T20:00:00Z",
        "objectType": "EVENT", "programID": "grid-dr", "eventName": "evening peak",
        "payloadDescriptors": [{"objectType": "EVENT_PAYLOAD_DESCRIPTOR", "payloadType": "IMPORT_CAPACITY_LIMIT",
                                "units": )" + units + R"(}],
        "intervalPeriod": )" + period + R"(, "intervals": )" + intervals + "}";
}

}  // namespace

TEST(SignalsParse, OpenADRImportCapacityLimitsBecomeSiteLimitEvents)
{
    const Model& m = model();
    const Signals s = parse_signals(
        feed("\"events\": [{" + kEvent + ", \"curtail_pct\": 10}], \"openadr_events\": [" +
             adr_event(R"([{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [800]}]},
                           {"id": 1, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [600.5]}]},
                           {"id": 5, "intervalPeriod": {"start": "2026-11-30T02:00:00Z", "duration": "PT30M"},
                            "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [0]}]}])") +
             "]"),
        "f", m, kNow);
    ASSERT_EQ(s.events.size(), 4u);
    EXPECT_EQ(s.events[1].id, "ev-7/0");
    EXPECT_EQ(format_utc(s.events[1].start), "2026-11-29T22:00:00Z");
    EXPECT_EQ(format_utc(s.events[1].end), "2026-11-29T23:00:00Z");
    EXPECT_EQ(s.events[1].limit_kw, 800);
    EXPECT_EQ(s.events[2].id, "ev-7/1");  // follows the first, same duration
    EXPECT_EQ(format_utc(s.events[2].start), "2026-11-29T23:00:00Z");
    EXPECT_EQ(s.events[2].limit_kw, 600.5);
    EXPECT_EQ(format_utc(s.events[3].start), "2026-11-30T02:00:00Z");  // its own period
    EXPECT_EQ(format_utc(s.events[3].end), "2026-11-30T02:30:00Z");
    EXPECT_EQ(s.events[3].limit_kw, 0);
    EXPECT_EQ(s.events[3].scope, EventScope::Site);
    // 1200 (m2g.conf) - 10% then the 800 kW ceiling.
    EXPECT_EQ(effective_budget_kw(m, &s, EventScope::Site, kNone, kNow + 3600 + 60), 800);
    // P9999Y: until further notice.
    const Signals f = parse_signals(
        feed("\"openadr_events\": [" +
             adr_event(R"([{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [700]}]}])", "\"KW\"",
                       R"({"start": "2026-11-29T22:00:00Z", "duration": "P9999Y"})") +
             "]"),
        "f", m, kNow);
    EXPECT_EQ(f.events[0].end, kMaxTime);
}

TEST(SignalsParse, OpenADREventsRefuseWhatM2gDoesNotFollow)
{
    const std::string one = R"([{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [800]}]}])";
    EXPECT_EQ(err(feed("\"openadr_events\": [" +
                       adr_event(R"([{"id": 0, "payloads": [{"type": "PRICE", "values": [0.3]}]}])") + "]")),
              "signals.json: openadr_events[0].intervals[0].payloads[0].type: \"PRICE\" is not acted on; m2g follows "
              "IMPORT_CAPACITY_LIMIT (the most the site may import) only: leave other payload types out of the feed");
    EXPECT_EQ(err(feed("\"openadr_events\": [" + adr_event(one, "\"KWH\"") + "]")),
              "signals.json: openadr_events[0].payloadDescriptors: units \"KWH\" for IMPORT_CAPACITY_LIMIT are not "
              "accepted; accepted: KW");
    EXPECT_EQ(err(feed("\"openadr_events\": [" + adr_event(one, "\"KW\"", R"({"start": "0001-01-01T00:00:00Z",
                       "duration": "PT1H"})") + "]")),
              "signals.json: openadr_events[0].intervalPeriod.start: \"0001-01-01T00:00:00Z\" (OpenADR's 'now') is "
              "not accepted; m2g needs the absolute start the VTN means, as an RFC 3339 time");
    EXPECT_EQ(err(feed("\"openadr_events\": [" + adr_event(one, "\"KW\"", R"({"start": "2026-11-29T22:00:00Z",
                       "duration": "P1M"})") + "]")),
              "signals.json: openadr_events[0].intervalPeriod.duration: \"P1M\": years and months are not accepted "
              "(their length depends on the date); give weeks, days, hours, minutes or seconds, or P9999Y for until "
              "further notice");
    EXPECT_EQ(err(feed("\"openadr_events\": [" +
                       adr_event(R"([{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [-5]}]}])") +
                       "]")),
              "signals.json: openadr_events[0].intervals[0].payloads[0].values[0]: expected a number >= 0 (kW, the "
              "most the site may import), got the number -5");
    EXPECT_EQ(err(feed("\"openadr_events\": {}")),
              "signals.json: openadr_events: expected an array of OpenADR 3 event objects, got an object");
}

TEST(IsoDuration, OpenADRDurationsReadAndWritten)
{
    double s = 0;
    EXPECT_EQ(parse_iso_duration("PT15M", &s), "");
    EXPECT_EQ(s, 900);
    EXPECT_EQ(parse_iso_duration("P1DT2H30M0.5S", &s), "");
    EXPECT_EQ(s, 86400 + 9000 + 0.5);
    EXPECT_EQ(parse_iso_duration("P2W", &s), "");
    EXPECT_EQ(s, 2 * 604800);
    EXPECT_EQ(parse_iso_duration("P9999Y", &s), "");
    EXPECT_EQ(s, kForever);
    EXPECT_NE(parse_iso_duration("PT", &s), "");
    EXPECT_NE(parse_iso_duration("15M", &s), "");
    EXPECT_NE(parse_iso_duration("PT1M1H", &s), "");  // out of order
    EXPECT_NE(parse_iso_duration("PT1.5H", &s), "");
    EXPECT_EQ(format_iso_duration(900), "PT15M");
    EXPECT_EQ(format_iso_duration(5400), "PT1H30M");
    EXPECT_EQ(format_iso_duration(86400), "P1D");
    EXPECT_EQ(format_iso_duration(90061), "P1DT1H1M1S");
    EXPECT_EQ(format_iso_duration(0), "PT0S");
}
