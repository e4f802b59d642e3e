// m2g core: the plugins' own counters — how many decisions select/m2g and
// job_submit/m2g made and with what verdict, how long each took, how many
// NVLink domains each placed job spans — published for m2g-exporter.
//
// Counters lives inside slurmctld: every update is a relaxed atomic add (no
// lock, no allocation, no I/O), so counting costs nothing measurable on the
// scheduling path. At most every kw::kStatsPublishSec the plugin takes a
// snapshot and writes it as one JSON object ("m2g.stats/v1") into
// StatsDir=/<plugin>.json, replaced atomically (temp file + rename), so a
// reader never sees half a file. m2g-exporter reads those files; the counts
// start at 0 when slurmctld starts (Prometheus handles counter resets).
//
// File (doc/metrics.md):
//   {"schema": "m2g.stats/v1", "plugin": "select", "pid": 4242,
//    "started_at": 1795986000, "written_at": 1795986120,
//    "decisions": {"placed": 12, "waiting": 3, "blocked": 0, "stock": 40},
//    "latency_us": {"bounds": [10, 25, ...], "counts": [..., +Inf], "sum": 5123.5},
//    "placement_domains": {"bounds": [1, 2, 3, 4, 8, 16], "counts": [...], "sum": 17},
//    "fit_one_domain": 10, "contained": 9}
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/log.hpp"
#include "core/model/model.hpp"

namespace m2g {

// Fixed bucket bounds (upper, inclusive; +Inf is implied after the last).
inline constexpr std::array<double, 9> kLatencyBoundsUs = {10, 25, 50, 100, 250, 500, 1000, 2500, 5000};
inline constexpr std::array<double, 6> kDomainBounds = {1, 2, 3, 4, 8, 16};

enum class SelectVerdict { Placed, Waiting, Blocked, Stock };
enum class AdmissionVerdict { Admit, Defer, Pace, Reject, Released };
const char* to_string(SelectVerdict v);     // kw::kSelectVerdicts
const char* to_string(AdmissionVerdict v);  // kw::kAdmissionVerdicts

// A histogram as read back: counts per bucket (not cumulative), the last
// one for +Inf; count() is their sum.
struct HistogramData {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // bounds.size() + 1
    double sum = 0;
    uint64_t count() const;
    // Cumulative count of observations <= bounds[i] (i == bounds.size(): all).
    uint64_t cumulative(size_t i) const;
};

// One plugin's counters at one moment.
struct StatsSnapshot {
    std::string plugin;  // kw::kPluginSelect | kw::kPluginAdmission
    int64_t pid = 0;
    int64_t started_at = 0;
    int64_t written_at = 0;
    std::map<std::string, uint64_t> decisions;  // every verdict of the plugin, also those at 0
    HistogramData latency_us;
    HistogramData placement_domains;  // select only (empty bounds for admission)
    uint64_t fit_one_domain = 0;      // select only
    uint64_t contained = 0;
};

// Thread-safe counters of one plugin. Trivially destructible on purpose: a
// plugin thread that outlives static destruction at exit may still count.
class Counters {
  public:
    // `plugin`: kw::kPluginSelect or kw::kPluginAdmission (a string literal).
    Counters(const char* plugin, int64_t started_at);

    // One decision: its verdict (SelectVerdict/AdmissionVerdict as int) and,
    // when latency_ns >= 0, how long it took.
    void decision(int verdict, int64_t latency_ns);
    void decision(SelectVerdict v, int64_t latency_ns) { decision(static_cast<int>(v), latency_ns); }
    void decision(AdmissionVerdict v, int64_t latency_ns) { decision(static_cast<int>(v), latency_ns); }
    // A job placed: the NVLink domains it spans, and whether its node count
    // fits one domain of the model.
    void placement(int domains, bool fits_one_domain);

    StatsSnapshot snapshot(int64_t now) const;

    // True at most once per `period_s` (and at the first call): the caller
    // publishes. Safe to call from several threads; one of them wins.
    bool publish_due(int64_t now, int period_s);

  private:
    static constexpr size_t kMaxVerdicts = 5;
    const char* plugin_;
    int64_t started_at_;
    std::atomic<uint64_t> decisions_[kMaxVerdicts] = {};
    std::atomic<uint64_t> latency_[kLatencyBoundsUs.size() + 1] = {};
    std::atomic<uint64_t> latency_sum_ns_{0};
    std::atomic<uint64_t> domains_[kDomainBounds.size() + 1] = {};
    std::atomic<uint64_t> domains_sum_{0};
    std::atomic<uint64_t> fit_one_{0};
    std::atomic<uint64_t> contained_{0};
    std::atomic<int64_t> last_publish_{INT64_MIN};
};

// The NVLink groups `nodes` (model indices) span: distinct domains, plus
// one per node outside any domain.
int domains_spanned(const Model& m, const std::vector<int>& nodes);
// Whether `nodes` nodes fit in one NVLink domain of `m` (its largest).
bool fits_one_domain(const Model& m, int nodes);

// JSON text of a snapshot (schema m2g.stats/v1), and back. The parser
// throws ParseError naming `file` and what is wrong.
std::string stats_to_json(const StatsSnapshot& s);
StatsSnapshot parse_stats_json(const std::string& text, const std::string& file);

// Write `s` to `path` atomically (a temp file in the same directory, then
// rename). Throws Error naming the file and the system error.
void write_stats_file(const std::string& path, const StatsSnapshot& s);
// Read a stats file. Throws Error (cannot read) or ParseError.
StatsSnapshot read_stats_file(const std::string& path);

// <dir>/select.json, <dir>/admission.json.
std::string stats_path(const std::string& dir, const char* plugin);

// Publishes one plugin's Counters to StatsDir= every kw::kStatsPublishSec
// from a thread of its own, so the file I/O never runs under slurmctld's
// scheduling locks. A failed write is logged once per failure streak
// ("<error>; m2g-exporter will not see <owner>'s counters until this is
// fixed"), the first good write after it at Info.
class StatsWriter {
  public:
    // `counters` must outlive the writer; `plugin` is kw::kPluginSelect or
    // kw::kPluginAdmission; `owner` names the plugin in messages ("select/m2g").
    StatsWriter(const Counters& counters, const char* plugin, std::string owner, Logger log);
    ~StatsWriter();  // stop()
    StatsWriter(const StatsWriter&) = delete;
    StatsWriter& operator=(const StatsWriter&) = delete;

    // (Re)start publishing into `dir` (after stop()); "" only stops.
    void start(const std::string& dir);
    // Stop the thread after one last write (the final counts). No-op when
    // not running.
    void stop();

  private:
    void write();

    const Counters& counters_;
    const char* plugin_;
    const std::string owner_;
    Logger log_;
    std::thread thread_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool failed_ = false;  // writer thread only
    std::string path_;
};

}  // namespace m2g
