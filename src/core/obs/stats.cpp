// m2g core: plugin counters and their m2g.stats/v1 file (see stats.hpp).
#include "core/obs/stats.hpp"

#include <json-c/json.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <memory>
#include <utility>

#include "core/model/config.hpp"  // read_text_file
#include "core/base/enum_names.hpp"
#include "core/base/error.hpp"
#include "core/base/keys.hpp"

namespace m2g {

namespace {

struct JsonDeleter {
    void operator()(json_object* o) const { json_object_put(o); }
};
using JsonPtr = std::unique_ptr<json_object, JsonDeleter>;

template <size_t N>
size_t bucket_of(const std::array<double, N>& bounds, double v)
{
    return static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
}

bool is_select(const char* plugin) { return std::strcmp(plugin, kw::kPluginSelect) == 0; }

size_t verdict_count(const char* plugin)
{
    return is_select(plugin) ? kw::kSelectVerdicts.size() : kw::kAdmissionVerdicts.size();
}

constexpr auto kSelectVerdictNames = enum_names<SelectVerdict::Stock>(kw::kSelectVerdicts);
constexpr auto kAdmissionVerdictNames = enum_names<AdmissionVerdict::Released>(kw::kAdmissionVerdicts);

const char* verdict_name(const char* plugin, size_t i)
{
    return is_select(plugin) ? kw::kSelectVerdicts[i] : kw::kAdmissionVerdicts[i];
}

template <size_t N>
HistogramData histogram(const std::array<double, N>& bounds, const std::atomic<uint64_t>* counts, double sum)
{
    HistogramData h;
    h.bounds.assign(bounds.begin(), bounds.end());
    for (size_t i = 0; i <= N; ++i)
        h.counts.push_back(counts[i].load(std::memory_order_relaxed));
    h.sum = sum;
    return h;
}

json_object* histogram_json(const HistogramData& h)
{
    json_object* o = json_object_new_object();
    json_object* b = json_object_new_array();
    for (double v : h.bounds)
        json_object_array_add(b, json_object_new_double(v));
    json_object* c = json_object_new_array();
    for (uint64_t v : h.counts)
        json_object_array_add(c, json_object_new_int64(static_cast<int64_t>(v)));
    json_object_object_add(o, kw::kStatsBounds, b);
    json_object_object_add(o, kw::kStatsCounts, c);
    json_object_object_add(o, kw::kStatsSum, json_object_new_double(h.sum));
    return o;
}

// The reader: every known key checked, unknown keys ignored (a newer
// plugin may add some).
class Reader {
  public:
    explicit Reader(const std::string& file) : file_(file) {}

    [[noreturn]] void fail(const std::string& path, const std::string& what) const
    {
        throw ParseError(file_ + ": " + path + ": " + what + " (schema " + kw::kStatsSchemaV1 +
                         ", see doc/metrics.md)");
    }
    json_object* get(json_object* o, const char* key, bool required) const
    {
        json_object* v = nullptr;
        if (!json_object_object_get_ex(o, key, &v) || !v) {
            if (required)
                fail(key, "missing");
            return nullptr;
        }
        return v;
    }
    uint64_t count(json_object* v, const std::string& path) const
    {
        if (!json_object_is_type(v, json_type_int))
            fail(path, "expected a non-negative integer");
        const int64_t n = json_object_get_int64(v);
        if (n < 0)
            fail(path, "expected a non-negative integer");
        return static_cast<uint64_t>(n);
    }
    double number(json_object* v, const std::string& path) const
    {
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
            fail(path, "expected a number");
        const double d = json_object_get_double(v);
        if (!std::isfinite(d) || d < 0)
            fail(path, "expected a finite number >= 0");
        return d;
    }
    HistogramData histogram(json_object* o, const std::string& path) const
    {
        if (!json_object_is_type(o, json_type_object))
            fail(path, "expected an object with bounds, counts and sum");
        HistogramData h;
        json_object* b = get(o, kw::kStatsBounds, true);
        json_object* c = get(o, kw::kStatsCounts, true);
        if (!json_object_is_type(b, json_type_array) || !json_object_is_type(c, json_type_array))
            fail(path, "bounds and counts must be arrays");
        for (size_t i = 0; i < json_object_array_length(b); ++i) {
            const double v = number(json_object_array_get_idx(b, i), path + ".bounds[" + std::to_string(i) + "]");
            if (!h.bounds.empty() && v <= h.bounds.back())
                fail(path + ".bounds", "bounds must increase");
            h.bounds.push_back(v);
        }
        if (json_object_array_length(c) != h.bounds.size() + 1)
            fail(path + ".counts", "expected " + std::to_string(h.bounds.size() + 1) +
                                       " counts (one per bound, then +Inf)");
        for (size_t i = 0; i < json_object_array_length(c); ++i)
            h.counts.push_back(count(json_object_array_get_idx(c, i), path + ".counts[" + std::to_string(i) + "]"));
        h.sum = number(get(o, kw::kStatsSum, true), path + ".sum");
        return h;
    }

  private:
    const std::string& file_;
};

}  // namespace

const char* to_string(SelectVerdict v) { return name_of(kSelectVerdictNames, v); }
const char* to_string(AdmissionVerdict v) { return name_of(kAdmissionVerdictNames, v); }

uint64_t HistogramData::count() const
{
    uint64_t n = 0;
    for (uint64_t c : counts)
        n += c;
    return n;
}

uint64_t HistogramData::cumulative(size_t i) const
{
    uint64_t n = 0;
    for (size_t j = 0; j <= i && j < counts.size(); ++j)
        n += counts[j];
    return n;
}

Counters::Counters(const char* plugin, int64_t started_at) : plugin_(plugin), started_at_(started_at) {}

void Counters::decision(int verdict, int64_t latency_ns)
{
    if (verdict >= 0 && static_cast<size_t>(verdict) < verdict_count(plugin_))
        decisions_[verdict].fetch_add(1, std::memory_order_relaxed);
    if (latency_ns < 0)
        return;
    latency_[bucket_of(kLatencyBoundsUs, latency_ns / 1000.0)].fetch_add(1, std::memory_order_relaxed);
    latency_sum_ns_.fetch_add(static_cast<uint64_t>(latency_ns), std::memory_order_relaxed);
}

void Counters::placement(int domains, bool fits_one)
{
    if (domains < 1)
        return;
    domains_[bucket_of(kDomainBounds, domains)].fetch_add(1, std::memory_order_relaxed);
    domains_sum_.fetch_add(static_cast<uint64_t>(domains), std::memory_order_relaxed);
    if (fits_one) {
        fit_one_.fetch_add(1, std::memory_order_relaxed);
        if (domains == 1)
            contained_.fetch_add(1, std::memory_order_relaxed);
    }
}

StatsSnapshot Counters::snapshot(int64_t now) const
{
    StatsSnapshot s;
    s.plugin = plugin_;
    s.pid = static_cast<int64_t>(::getpid());
    s.started_at = started_at_;
    s.written_at = now;
    for (size_t i = 0; i < verdict_count(plugin_); ++i)
        s.decisions[verdict_name(plugin_, i)] = decisions_[i].load(std::memory_order_relaxed);
    s.latency_us = histogram(kLatencyBoundsUs, latency_, latency_sum_ns_.load(std::memory_order_relaxed) / 1000.0);
    if (is_select(plugin_)) {
        s.placement_domains =
            histogram(kDomainBounds, domains_, static_cast<double>(domains_sum_.load(std::memory_order_relaxed)));
        // Read contained before fit_one: contained <= fit_one in the snapshot.
        s.contained = contained_.load(std::memory_order_acquire);
        s.fit_one_domain = std::max(s.contained, fit_one_.load(std::memory_order_acquire));
    }
    return s;
}

bool Counters::publish_due(int64_t now, int period_s)
{
    int64_t last = last_publish_.load(std::memory_order_relaxed);
    if (last != INT64_MIN && now - last < period_s && now >= last)  // (a clock step back publishes)
        return false;
    return last_publish_.compare_exchange_strong(last, now, std::memory_order_relaxed);
}

int domains_spanned(const Model& m, const std::vector<int>& nodes)
{
    std::vector<int> doms;
    int alone = 0;
    for (int n : nodes) {
        if (n < 0 || static_cast<size_t>(n) >= m.nodes.size())
            continue;
        if (m.nodes[n].domain == kNone)
            ++alone;
        else
            doms.push_back(m.nodes[n].domain);
    }
    std::sort(doms.begin(), doms.end());
    return alone + static_cast<int>(std::unique(doms.begin(), doms.end()) - doms.begin());
}

bool fits_one_domain(const Model& m, int nodes)
{
    size_t largest = m.nodes.empty() ? 0 : 1;  // a node outside any domain is a group of one
    for (const Domain& d : m.domains)
        largest = std::max(largest, d.nodes.size());
    return nodes >= 1 && static_cast<size_t>(nodes) <= largest;
}

std::string stats_to_json(const StatsSnapshot& s)
{
    JsonPtr o(json_object_new_object());
    json_object_object_add(o.get(), kw::kStatsSchema, json_object_new_string(kw::kStatsSchemaV1));
    json_object_object_add(o.get(), kw::kStatsPlugin, json_object_new_string(s.plugin.c_str()));
    json_object_object_add(o.get(), kw::kStatsPid, json_object_new_int64(s.pid));
    json_object_object_add(o.get(), kw::kStatsStartedAt, json_object_new_int64(s.started_at));
    json_object_object_add(o.get(), kw::kStatsWrittenAt, json_object_new_int64(s.written_at));
    json_object* d = json_object_new_object();
    for (const auto& [verdict, n] : s.decisions)
        json_object_object_add(d, verdict.c_str(), json_object_new_int64(static_cast<int64_t>(n)));
    json_object_object_add(o.get(), kw::kStatsDecisions, d);
    json_object_object_add(o.get(), kw::kStatsLatency, histogram_json(s.latency_us));
    if (!s.placement_domains.bounds.empty()) {
        json_object_object_add(o.get(), kw::kStatsDomains, histogram_json(s.placement_domains));
        json_object_object_add(o.get(), kw::kStatsFitOne, json_object_new_int64(static_cast<int64_t>(s.fit_one_domain)));
        json_object_object_add(o.get(), kw::kStatsContained, json_object_new_int64(static_cast<int64_t>(s.contained)));
    }
    return std::string(json_object_to_json_string_ext(o.get(), JSON_C_TO_STRING_PLAIN |
                                                                    JSON_C_TO_STRING_NOSLASHESCAPE)) +
           "\n";
}

StatsSnapshot parse_stats_json(const std::string& text, const std::string& file)
{
    json_tokener* tok = json_tokener_new();
    if (!tok)
        throw Error(file + ": out of memory");
    JsonPtr root(json_tokener_parse_ex(tok, text.c_str(), static_cast<int>(text.size())));
    const json_tokener_error jerr = json_tokener_get_error(tok);
    json_tokener_free(tok);
    if (!root || jerr != json_tokener_success)
        throw ParseError(file + ": not valid JSON (" +
                         (jerr == json_tokener_success ? std::string("empty") : json_tokener_error_desc(jerr)) +
                         "); expected one " + kw::kStatsSchemaV1 + " object (doc/metrics.md)");
    const Reader r(file);
    if (!json_object_is_type(root.get(), json_type_object))
        r.fail("$", "expected an object");
    json_object* schema = r.get(root.get(), kw::kStatsSchema, true);
    if (!json_object_is_type(schema, json_type_string) ||
        std::strcmp(json_object_get_string(schema), kw::kStatsSchemaV1) != 0)
        r.fail(kw::kStatsSchema, std::string("expected \"") + kw::kStatsSchemaV1 + "\"");
    StatsSnapshot s;
    json_object* plugin = r.get(root.get(), kw::kStatsPlugin, true);
    s.plugin = json_object_is_type(plugin, json_type_string) ? json_object_get_string(plugin) : "";
    if (s.plugin != kw::kPluginSelect && s.plugin != kw::kPluginAdmission)
        r.fail(kw::kStatsPlugin, std::string("expected \"") + kw::kPluginSelect + "\" or \"" + kw::kPluginAdmission + "\"");
    if (json_object* v = r.get(root.get(), kw::kStatsPid, false))
        s.pid = static_cast<int64_t>(r.count(v, kw::kStatsPid));
    s.started_at = static_cast<int64_t>(r.count(r.get(root.get(), kw::kStatsStartedAt, true), kw::kStatsStartedAt));
    s.written_at = static_cast<int64_t>(r.count(r.get(root.get(), kw::kStatsWrittenAt, true), kw::kStatsWrittenAt));
    json_object* d = r.get(root.get(), kw::kStatsDecisions, true);
    if (!json_object_is_type(d, json_type_object))
        r.fail(kw::kStatsDecisions, "expected an object of verdict: count");
    json_object_object_foreach(d, key, val) s.decisions[key] =
        r.count(val, std::string(kw::kStatsDecisions) + "." + key);
    s.latency_us = r.histogram(r.get(root.get(), kw::kStatsLatency, true), kw::kStatsLatency);
    if (json_object* h = r.get(root.get(), kw::kStatsDomains, false)) {
        s.placement_domains = r.histogram(h, kw::kStatsDomains);
        s.fit_one_domain = r.count(r.get(root.get(), kw::kStatsFitOne, true), kw::kStatsFitOne);
        s.contained = r.count(r.get(root.get(), kw::kStatsContained, true), kw::kStatsContained);
        if (s.contained > s.fit_one_domain)
            r.fail(kw::kStatsContained, "more than fit_one_domain");
    }
    return s;
}

void write_stats_file(const std::string& path, const StatsSnapshot& s)
{
    const std::string text = stats_to_json(s);
    // A fresh temporary name (mkstemp: O_EXCL, never through a symlink), so
    // nobody who can write StatsDir= can make slurmctld truncate another file.
    std::string tmp = path + ".XXXXXX";
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0)
        throw Error(path + ": cannot create a temporary file next to it: " + std::strerror(errno) +
                    " (is StatsDir= a writable directory?)");
    ::fchmod(fd, 0644);
    FILE* f = ::fdopen(fd, "w");
    if (!f) {
        const int e = errno;
        ::close(fd);
        std::remove(tmp.c_str());
        throw Error(tmp + ": cannot open: " + std::strerror(e));
    }
    const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    const int werr = errno;
    if (std::fclose(f) != 0 || !wrote) {
        const int e = wrote ? errno : werr;
        std::remove(tmp.c_str());
        throw Error(tmp + ": cannot write: " + std::strerror(e));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        std::remove(tmp.c_str());
        throw Error(path + ": cannot rename " + tmp + " over it: " + std::strerror(e));
    }
}

StatsSnapshot read_stats_file(const std::string& path)
{
    return parse_stats_json(read_text_file(path), path);
}

std::string stats_path(const std::string& dir, const char* plugin)
{
    const char* file = std::strcmp(plugin, kw::kPluginSelect) == 0 ? kw::kStatsSelectFile : kw::kStatsAdmissionFile;
    return dir + (dir.empty() || dir.back() == '/' ? "" : "/") + file;
}

// ---- StatsWriter -------------------------------------------------------------

StatsWriter::StatsWriter(const Counters& counters, const char* plugin, std::string owner, Logger log)
    : counters_(counters), plugin_(plugin), owner_(std::move(owner)), log_(std::move(log))
{
}

StatsWriter::~StatsWriter()
{
    stop();
}

void StatsWriter::start(const std::string& dir)
{
    stop();
    if (dir.empty())
        return;
    path_ = stats_path(dir, plugin_);
    stop_ = false;
    thread_ = std::thread([this] {
        std::unique_lock<std::mutex> lk(mu_);
        for (;;) {
            cv_.wait_for(lk, std::chrono::seconds(kw::kStatsPublishSec), [this] { return stop_; });
            const bool last = stop_;
            lk.unlock();
            write();
            lk.lock();
            if (last)
                return;
        }
    });
}

void StatsWriter::stop()
{
    if (!thread_.joinable())
        return;
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void StatsWriter::write()
{
    try {
        write_stats_file(path_, counters_.snapshot(time(nullptr)));
        if (failed_ && log_)
            log_(LogLevel::Info, "counters written to " + path_ + " again");
        failed_ = false;
    } catch (const std::exception& e) {
        if (!failed_ && log_)
            log_(LogLevel::Error,
                 std::string(e.what()) + "; m2g-exporter will not see " + owner_ + "'s counters until this is fixed");
        failed_ = true;
    }
}

}  // namespace m2g
