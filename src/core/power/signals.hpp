// m2g core: the live signals feed — power, thermal, demand-response events,
// maintenance windows and health, written by an external agent as one JSON
// file (schema "m2g.signals/v1": doc/signals.md, doc/signals.schema.json).
//
// Two layers:
//   parse_signals()  text → Signals, resolved against the model (names to
//                    indices); throws ParseError naming the file, the JSON
//                    path and what is accepted. No side effects.
//   SignalFeed       owns one feed file for a plugin: a poll thread reads
//                    the file when it changes, parses it off the scheduling
//                    path and publishes an immutable snapshot with an atomic
//                    swap. The hot path (job_submit, select) only calls
//                    view(), which never blocks on I/O and never throws.
//
// Bad feeds never crash and never silently drop policy:
//   corrupt  → the last good snapshot stays in force; logged once per
//              version of the file;
//   stale    → (generated_at older than the TTL) and
//   missing  → the configured fail-safe (SignalsFailSafe=, see FailSafe),
//              with one warning per change of state.
//
// signals.cpp holds the parser and the budgets, feed.cpp SignalFeed and its
// status file; what `m2g signals show|validate` print is the command's
// (tools/reports/signals_report.hpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/enum_names.hpp"
#include "core/model/admission_policy.hpp"  // FailSafe
#include "core/base/log.hpp"
#include "core/base/time.hpp"  // parse_signal_time, format_utc
#include "core/model/model.hpp"
#include "core/model/state.hpp"  // ClusterState

namespace m2g {

// A power reading at one scope. Both values are optional in the feed.
struct PowerReading {
    double budget_kw = 0;  // 0: not in the feed (m2g.conf's PowerBudgetKW applies)
    double draw_kw = -1;   // -1: not in the feed (unknown)
};

enum class ThermalState { Ok, Warm, Hot, Critical };
inline constexpr auto kThermalStateNames = enum_names<ThermalState::Critical>({"ok", "warm", "hot", "critical"});
const char* to_string(ThermalState s);

struct NodeThermal {
    bool known = false;
    double gpu_temp_c = 0;  // hottest GPU of the node
    ThermalState state = ThermalState::Ok;
};

enum class EventScope { Site, Row, Rack };
inline constexpr auto kEventScopeNames = enum_names<EventScope::Rack>({"site", "row", "rack"});

// A demand-response (or any curtailment) event. Exactly one of
// curtail_pct > 0, curtail_kw > 0 and limit_kw >= 0: a cut from the
// scope's budget, or a ceiling on its draw (OpenADR 3's
// IMPORT_CAPACITY_LIMIT), which binds even where no budget is configured.
struct CurtailmentEvent {
    std::string id;
    int64_t start = 0;  // epoch seconds
    int64_t end = 0;    // epoch seconds, > start
    double curtail_pct = 0;  // of the scope's budget, 0 < pct <= 100
    double curtail_kw = 0;
    double limit_kw = -1;    // -1: not a limit
    EventScope scope = EventScope::Site;
    int scope_index = kNone;  // Row: fault domain index; Rack: domain index
    std::string scope_name;   // "site", "row1", "nvl03"
    bool active_at(int64_t t) const { return start <= t && t < end; }
};

// What an event does to its scope's budget, for people: "-25%", "-50 kW",
// "at most 400 kW".
std::string event_cut_text(const CurtailmentEvent& e);

struct MaintenanceWindow {
    std::string id;
    int64_t start = 0;
    int64_t end = 0;
    std::vector<int> nodes;  // model node indices (racks expanded)
    std::string reason;
    // Whether [from, to) overlaps the window; `to` <= 0 means unbounded.
    bool overlaps(int64_t from, int64_t to) const { return from < end && (to <= 0 || to > start); }
};

// One parsed feed, with every name resolved to a model index.
struct Signals {
    int64_t generated_at = 0;  // epoch seconds
    std::string source;
    PowerReading site;
    std::vector<PowerReading> racks;  // per model domain (sized domains.size())
    std::vector<PowerReading> rows;   // per model fault domain (only Type=row ones can be set)
    std::vector<NodeThermal> thermal;  // per model node (sized nodes.size())
    std::vector<CurtailmentEvent> events;
    std::vector<MaintenanceWindow> maintenance;
    ClusterState health;                // degraded / NVLink faults from "health" and "thermal"
    std::vector<uint8_t> node_down;     // per node (empty: none)
    std::vector<std::string> links_down;  // switch names with a failed uplink (informational)
};

// Parse feed text. `file` names the source in messages; `m` resolves names
// (unknown node, rack or row names are errors).
Signals parse_signals(const std::string& text, const std::string& file, const Model& m);
// The same, judging "generated_at in the future" against `now` (tests,
// SignalFeed::refresh) instead of the wall clock.
Signals parse_signals(const std::string& text, const std::string& file, const Model& m, int64_t now);
Signals read_signals(const std::string& path, const Model& m);



enum class FeedState {
    NotConfigured,  // no SignalsFile=
    Fresh,          // a good snapshot younger than the TTL
    Stale,          // the newest good snapshot is older than the TTL
    Missing,        // the file does not exist / cannot be read, no snapshot yet or ever
    Corrupt,        // the file is broken; the last good snapshot (if any) is used while fresh
};
inline constexpr auto kFeedStateNames =
    enum_names<FeedState::Corrupt>({"not_configured", "fresh", "stale", "missing", "corrupt"});
const char* to_string(FeedState s);

// What the hot path sees: the snapshot in force and how to treat it.
struct SignalsView {
    std::shared_ptr<const Signals> snap;  // null: nothing to use (open)
    FeedState state = FeedState::NotConfigured;
    bool failsafe = false;   // the fail-safe is in effect (stale or missing)
    bool hold = false;       // fail-safe Defer in effect: deferrable work waits
    int64_t age_s = -1;      // now - generated_at of snap, -1 without one
    std::string detail;      // one line: "fresh: generated ... (12 s ago) by ...", "corrupt since ...: <error>; using ..."
};

// Signals a caller supplies instead of a SignalsFile= feed (the simulator's
// timeline, `m2g place --signals`): the view for `now`.
using SignalsSource = std::function<SignalsView(int64_t now)>;

class SignalFeed {
  public:
    // `model` must outlive the feed (plugins replace the feed with the model).
    SignalFeed(std::string path, int ttl_sec, FailSafe failsafe, const Model& model, Logger log);
    ~SignalFeed();
    SignalFeed(const SignalFeed&) = delete;
    SignalFeed& operator=(const SignalFeed&) = delete;

    // Check the file (stat; read and parse only when it changed) and log
    // state changes. Never throws. Returns true when a new snapshot was
    // published. Called by the poll thread; tests call it directly.
    bool refresh(int64_t now);

    // The snapshot and state for `now`. Lock-free, never throws, no I/O.
    SignalsView view(int64_t now) const;

    // Start/stop the poll thread (refresh every `poll_sec`). stop() joins.
    void start(int poll_sec);
    void stop();

    // After every change of state or snapshot, write what this feed
    // believes to `path` (JSON: state, detail, times, and the snapshot in
    // force as the feed wrote it), atomically (temp file + rename), so
    // `m2g signals show` reports the plugin's belief, not just the file's.
    // "" (the default) writes nothing. Call before start().
    void set_status_file(std::string path);

    const std::string& path() const { return path_; }

  private:
    struct Published;  // what refresh() last learnt; defined in feed.cpp
    SignalsView make_view(const Published& p, int64_t now) const;
    void log_line(LogLevel level, const std::string& msg) noexcept;
    void log_transition(const SignalsView& v, bool new_error, int64_t now);
    void write_status(const SignalsView& v, const Published& p, int64_t now);

    const std::string path_;
    const int ttl_;
    const FailSafe failsafe_;
    const Model& model_;
    Logger log_;
    // Last good snapshot, file state, error: replaced as one immutable
    // object (std::atomic_load/store), so view() sees a consistent triple.
    std::shared_ptr<const Published> pub_;
    // Poll-thread only (under refresh_mu_).
    struct FileId {
        int64_t mtime_ns = -1, size = -1, ino = -1;
        bool operator==(const FileId& o) const { return mtime_ns == o.mtime_ns && size == o.size && ino == o.ino; }
    } seen_;
    FeedState logged_ = FeedState::NotConfigured;  // NotConfigured: nothing logged yet
    bool logged_failsafe_ = false;
    bool unsettled_logged_ = false;  // "being written in place" said for this streak
    std::string good_text_;      // the last good feed as read, for the status file
    std::string status_path_;
    FeedState status_state_ = FeedState::NotConfigured;  // as last written
    bool status_failsafe_ = false;
    std::string status_error_;        // as last written: a new cause in the same state rewrites it
    uint64_t generation_ = 0;         // +1 per published snapshot
    uint64_t status_generation_ = 0;  // as last written
    bool status_written_ = false;
    bool status_failed_ = false;  // a write failed and was logged
    std::mutex refresh_mu_;
    std::thread thread_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
};

// Read a status file written by a SignalFeed and rebuild the view it
// describes for `now` (age and staleness recomputed with `ttl_sec`).
// Throws Error/ParseError naming the file.
SignalsView read_feed_status(const std::string& status_path, const Model& m, int ttl_sec, int64_t now);

// The effective budget of a scope at `now`: the feed's budget (else
// m2g.conf's), minus every active event on that scope, floored at 0 (a
// 100% curtailment leaves 0: nothing may start). -1 when no budget is known
// (no limit). `index` is a domain (Rack) or fault domain (Row) index.
double effective_budget_kw(const Model& m, const Signals* s, EventScope scope, int index, int64_t now);

// The lowest effective budget of a scope over [from, to) (`to` <= 0:
// unbounded): at `from` and at the start of every later event on that scope
// inside the span. A job that would still run when an announced event
// starts is judged against the event's budget (the pre-event ramp). When
// the lowest is an upcoming event's, `upcoming` (if given) points at it,
// else it is set to null. -1 when no budget is known.
double lowest_budget_kw(const Model& m, const Signals* s, EventScope scope, int index, int64_t from, int64_t to,
                        const CurtailmentEvent** upcoming = nullptr);

// Active events at `now` (any scope), in feed order.
std::vector<const CurtailmentEvent*> active_events(const Signals* s, int64_t now);

}  // namespace m2g
