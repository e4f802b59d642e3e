// m2g core: SignalFeed, one feed file for a plugin — the poll thread that
// reads the file when it changes, parses it off the scheduling path and
// publishes an immutable snapshot; the view the hot path takes of it; and
// the status file job_submit/m2g writes so that `m2g signals show` and
// m2g-exporter report what the plugin believes. The rule is one: whatever
// the file does, the scheduler keeps the last good snapshot or the
// configured fail-safe (signals.hpp). Parsing is signals.cpp.
#include "core/power/signals.hpp"

#include "core/base/time.hpp"

#include <fcntl.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "core/model/config.hpp"  // read_text_file
#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/base/keys.hpp"

namespace m2g {

namespace {

// A feed larger than this is refused without reading it.
constexpr int64_t kMaxFeedBytes = int64_t{64} << 20;

// ---- views -------------------------------------------------------------------

std::string failsafe_effect(FailSafe f, bool have_snap)
{
    const std::string head = std::string("fail-safe ") + to_string(f) + ": ";
    switch (f) {
    case FailSafe::Last:
        return head + (have_snap ? "using it" : "no snapshot to use, no power policy");
    case FailSafe::Open:
        return head + "no power policy";
    case FailSafe::Defer:
        return head + "deferrable work waits";
    }
    return head;
}

// The one rule behind SignalFeed::view() and read_feed_status(). `file` is
// what the last look at the file found: Fresh (it parsed), Corrupt, Missing.
SignalsView build_view(const std::string& path, int ttl, FailSafe fs, const std::shared_ptr<const Signals>& snap,
                       FeedState file, const std::string& error, int64_t corrupt_since, int64_t now)
{
    SignalsView v;
    if (path.empty()) {
        v.detail = "not configured: no SignalsFile= in m2g.conf; budgets from m2g.conf only";
        return v;
    }
    const int64_t age = snap ? std::max<int64_t>(0, now - snap->generated_at) : -1;
    const bool fresh = snap && age <= ttl;
    // A feed that disappears is a fail-safe case at once (the agent is gone
    // or removed it on purpose); a corrupt one keeps its last good snapshot
    // while that is fresh (a half-written file is a glitch).
    const bool gone = file == FeedState::Missing;
    v.failsafe = !fresh || gone;
    v.state = fresh ? file : (file == FeedState::Fresh ? FeedState::Stale : file);
    v.snap = snap;
    v.age_s = age;
    if (v.failsafe) {
        if (fs == FailSafe::Open) {
            v.snap = nullptr;
            v.age_s = -1;
        } else if (fs == FailSafe::Defer) {
            v.hold = true;
        }
    }
    std::string tail;
    if (fresh && !gone)
        tail = "using the last good snapshot (" + std::to_string(age) + " s old)";
    else if (gone && fresh)
        tail = "last good snapshot is " + std::to_string(age) + " s old; " + failsafe_effect(fs, true);
    else if (snap)
        tail = "last good snapshot is " + std::to_string(age) + " s old (TTL " + std::to_string(ttl) + " s); " +
               failsafe_effect(fs, true);
    else
        tail = "no good snapshot yet; " + failsafe_effect(fs, false);
    switch (v.state) {
    case FeedState::Fresh:
        v.detail = "fresh: generated " + format_utc(snap->generated_at) + " (" + std::to_string(age) + " s ago)" +
                   (snap->source.empty() ? "" : " by " + snap->source);
        break;
    case FeedState::Stale:
        v.detail = "stale: " + tail;
        break;
    case FeedState::Missing:
        v.detail = "missing: " + (error.empty() ? path + ": not read yet" : error) + "; " + tail;
        break;
    case FeedState::Corrupt:
        v.detail = "corrupt since " + format_utc(corrupt_since) + ": " + error + "; " + tail;
        break;
    case FeedState::NotConfigured:
        break;
    }
    return v;
}

// ---- reading the file ---------------------------------------------------------

// A feed written in place (not renamed over) can be read between two of its
// writer's write()s: a prefix, which does not parse, or, without O_TRUNC,
// the new beginning over the old end, which may parse and mix two
// documents. So a file changed in place since the last read (same inode) is
// read only once it has been left alone for kSettleNs, and any version that
// changes while it is read is dropped; both wait for the next poll. A file
// renamed over the feed (a new inode, as doc/signals.md asks) is read at once.
constexpr int64_t kSettleNs = 1'000'000'000;

struct ReadAttempt {
    enum Outcome { Read, Missing, Unsettled } outcome = Missing;
    int64_t mtime_ns = -1, size = -1, ino = -1;  // of the version read
    std::string text;
    std::string error;  // Missing: why; Read: set when the file is too large (then corrupt)
};

int64_t mtime_ns_of(const struct stat& st)
{
    return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

bool same_version(const struct stat& a, const struct stat& b)
{
    return mtime_ns_of(a) == mtime_ns_of(b) && a.st_size == b.st_size && a.st_ino == b.st_ino;
}

// `last_ino`: the inode of the version read last (-1: none).
ReadAttempt read_settled(const std::string& path, int64_t last_ino)
{
    ReadAttempt r;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        r.error = std::string("cannot open: ") + std::strerror(errno);
        return r;
    }
    struct stat before {};
    if (::fstat(fd, &before) != 0) {
        r.error = std::string("cannot read: ") + std::strerror(errno);
        ::close(fd);
        return r;
    }
    r.mtime_ns = mtime_ns_of(before);
    r.size = before.st_size;
    r.ino = static_cast<int64_t>(before.st_ino);
    struct timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    const int64_t age = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec - r.mtime_ns;
    if (r.ino == last_ino && age >= 0 && age < kSettleNs) {
        ::close(fd);  // rewritten in place a moment ago: its writer may not be done
        r.outcome = ReadAttempt::Unsettled;
        return r;
    }
    r.outcome = ReadAttempt::Read;
    if (before.st_size > kMaxFeedBytes) {
        r.error = path + ": the file is " + std::to_string(before.st_size) + " bytes; a feed may have at most " +
                  std::to_string(kMaxFeedBytes) + " bytes";
        ::close(fd);
        return r;
    }
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r.outcome = ReadAttempt::Missing;
            r.error = std::string("cannot read: ") + std::strerror(errno);
            ::close(fd);
            return r;
        }
        if (n == 0)
            break;
        r.text.append(buf, static_cast<size_t>(n));
        if (static_cast<int64_t>(r.text.size()) > kMaxFeedBytes)
            break;  // growing while read: the version check below drops it
    }
    struct stat after {};
    if (::fstat(fd, &after) != 0 || !same_version(before, after)) {
        r.outcome = ReadAttempt::Unsettled;
        r.text.clear();
    }
    ::close(fd);
    return r;
}

}  // namespace

const char* to_string(FeedState s) { return name_of(kFeedStateNames, s, "missing"); }

// ---- SignalFeed ---------------------------------------------------------------

struct SignalFeed::Published {
    std::shared_ptr<const Signals> snap;  // the last good snapshot, if any
    FeedState file = FeedState::Missing;  // the last look: Fresh (parsed), Corrupt or Missing
    std::string error;                    // Missing/Corrupt: why
    int64_t corrupt_since = 0;
};

SignalFeed::SignalFeed(std::string path, int ttl_sec, FailSafe failsafe, const Model& model, Logger log)
    : path_(std::move(path)),
      ttl_(ttl_sec),
      failsafe_(failsafe),
      model_(model),
      log_(std::move(log)),
      pub_(std::make_shared<const Published>())
{
}

SignalFeed::~SignalFeed()
{
    stop();
}

void SignalFeed::set_status_file(std::string path)
{
    std::lock_guard<std::mutex> lk(refresh_mu_);
    status_path_ = std::move(path);
    status_written_ = false;
}

SignalsView SignalFeed::make_view(const Published& p, int64_t now) const
{
    return build_view(path_, ttl_, failsafe_, p.snap, p.file, p.error, p.corrupt_since, now);
}

SignalsView SignalFeed::view(int64_t now) const
{
    const std::shared_ptr<const Published> p = std::atomic_load(&pub_);
    try {
        return make_view(*p, now);
    } catch (...) {
        // Out of memory while writing the detail: the decision fields still hold.
        SignalsView v;
        v.state = path_.empty() ? FeedState::NotConfigured : FeedState::Missing;
        if (!path_.empty()) {
            const int64_t age = p->snap ? std::max<int64_t>(0, now - p->snap->generated_at) : -1;
            v.failsafe = !(p->snap && age <= ttl_) || p->file == FeedState::Missing;
            v.snap = v.failsafe && failsafe_ == FailSafe::Open ? nullptr : p->snap;
            v.hold = v.failsafe && failsafe_ == FailSafe::Defer;
            v.age_s = v.snap ? age : -1;
        }
        return v;
    }
}

void SignalFeed::log_line(LogLevel level, const std::string& msg) noexcept
{
    try {
        if (log_)
            log_(level, msg);
    } catch (...) {
    }
}

void SignalFeed::log_transition(const SignalsView& v, bool new_error, int64_t now)
{
    (void)now;
    if (v.state == logged_ && v.failsafe == logged_failsafe_)
        return;
    const FeedState prev = logged_;
    logged_ = v.state;
    logged_failsafe_ = v.failsafe;
    if (new_error)
        return;  // the Error line of this file version said it
    if (v.state == FeedState::Fresh)
        log_line(LogLevel::Info,
                 std::string(prev == FeedState::NotConfigured ? "signals feed: " : "signals feed back: ") + v.detail);
    else
        log_line(LogLevel::Warning, "signals feed " + v.detail);
}

void SignalFeed::write_status(const SignalsView& v, const Published& p, int64_t now)
{
    JsonPtr o(json_object_new_object());
    if (!o)
        throw std::bad_alloc();
    auto put = [&](const char* key, json_object* val) { json_object_object_add(o.get(), key, val); };
    put(kw::kSigSchema, json_object_new_string(kw::kSigStatusSchemaV1));
    put(kw::kSigStatusFile, json_object_new_string(path_.c_str()));
    put(kw::kSigStatusState, json_object_new_string(to_string(v.state)));
    put(kw::kSigStatusDetail, json_object_new_string(v.detail.c_str()));
    put(kw::kSigStatusCheckedAt, json_object_new_string(format_utc(now).c_str()));
    put(kw::kSigStatusFailSafe, json_object_new_string(to_string(failsafe_)));
    put(kw::kSigStatusTtl, json_object_new_int(ttl_));
    put(kw::kSigStatusError, p.error.empty() ? nullptr : json_object_new_string(p.error.c_str()));
    put(kw::kSigStatusCorruptSince,
        p.file == FeedState::Corrupt ? json_object_new_string(format_utc(p.corrupt_since).c_str()) : nullptr);
    put(kw::kSigStatusSnapshot, p.snap ? json_tokener_parse(good_text_.c_str()) : nullptr);
    const std::string text =
        std::string(json_object_to_json_string_ext(o.get(), JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)) +
        "\n";
    const std::string tmp = status_path_ + ".tmp";
    std::string err;
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) {
        err = tmp + ": " + std::strerror(errno);
    } else {
        const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
        const int werr = errno;
        if (std::fclose(f) != 0 || !wrote)
            err = tmp + ": cannot write: " + std::strerror(wrote ? errno : werr);
        else if (std::rename(tmp.c_str(), status_path_.c_str()) != 0)
            err = status_path_ + ": cannot rename " + tmp + " over it: " + std::strerror(errno);
        if (!err.empty())
            std::remove(tmp.c_str());
    }
    if (!err.empty()) {
        if (!status_failed_)
            log_line(LogLevel::Warning, "signals status file not written (retried at each poll): " + err);
        status_failed_ = true;
        status_written_ = false;
        return;
    }
    status_failed_ = false;
    status_written_ = true;
    status_state_ = v.state;
    status_failsafe_ = v.failsafe;
    status_error_ = p.error;
    status_generation_ = generation_;
}

bool SignalFeed::refresh(int64_t now)
{
    try {
        std::lock_guard<std::mutex> lk(refresh_mu_);
        if (path_.empty())
            return false;
        const std::shared_ptr<const Published> cur = std::atomic_load(&pub_);
        auto next = std::make_shared<Published>(*cur);
        bool published = false, new_error = false;
        auto missing = [&](const std::string& why) {
            next->file = FeedState::Missing;
            next->error = path_ + ": " + why;
            seen_ = FileId{};
        };
        struct stat st {};
        if (::stat(path_.c_str(), &st) != 0) {
            missing(std::strerror(errno));
        } else if (!S_ISREG(st.st_mode)) {
            missing("not a regular file");
        } else if (FileId{int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec, int64_t{st.st_size},
                          static_cast<int64_t>(st.st_ino)} == seen_) {
            // Unchanged since the last look: only time moves.
        } else {
            ReadAttempt got = read_settled(path_, seen_.ino);
            if (got.outcome == ReadAttempt::Missing) {
                missing(got.error);
            } else if (got.outcome == ReadAttempt::Unsettled) {
                // Still being rewritten: nothing read, nothing changes (seen_
                // stays, so the next poll tries again). A feed that has never
                // read its file says so rather than "missing".
                if (!unsettled_logged_)
                    log_line(LogLevel::Warning,
                             "signals feed " + path_ +
                                 " is being rewritten in place: it changed less than " +
                                 std::to_string(kSettleNs / 1000000000) +
                                 " s ago or while it was read; keeping what is in force until it settles (an agent "
                                 "should write a temporary file and rename(2) it over the feed)");
                unsettled_logged_ = true;
                if (generation_ == 0 && next->file == FeedState::Missing && next->error.empty()) {
                    next->file = FeedState::Corrupt;
                    next->error = path_ + ": still being written in place; not read yet";
                    next->corrupt_since = now;
                }
            } else {
                unsettled_logged_ = false;
                seen_ = FileId{got.mtime_ns, got.size, got.ino};
                std::string parse_error = got.error;
                if (parse_error.empty()) {
                    try {
                        auto snap = std::make_shared<const Signals>(parse_signals(got.text, path_, model_, now));
                        next->snap = std::move(snap);
                        next->file = FeedState::Fresh;
                        next->error.clear();
                        next->corrupt_since = 0;
                        good_text_ = std::move(got.text);
                        ++generation_;
                        published = true;
                    } catch (const std::exception& e) {
                        parse_error = e.what();
                    }
                }
                if (!parse_error.empty()) {
                    if (next->file != FeedState::Corrupt)
                        next->corrupt_since = now;
                    next->file = FeedState::Corrupt;
                    next->error = parse_error;
                    new_error = true;
                }
            }
        }
        std::shared_ptr<const Published> pub = std::move(next);
        std::atomic_store(&pub_, pub);
        const SignalsView v = make_view(*pub, now);
        if (new_error)
            log_line(LogLevel::Error, "signals feed " + v.detail);
        log_transition(v, new_error, now);
        // The status file follows every change an operator would read:
        // state, fail-safe, a new snapshot, a new error, or a new cause
        // within the same state (the feed gone, then a directory in its place).
        if (!status_path_.empty() &&
            (!status_written_ || new_error || v.state != status_state_ || v.failsafe != status_failsafe_ ||
             generation_ != status_generation_ || pub->error != status_error_))
            write_status(v, *pub, now);
        return published;
    } catch (const std::exception& e) {
        log_line(LogLevel::Error, std::string("signals feed: refresh failed: ") + e.what());
    } catch (...) {
        log_line(LogLevel::Error, "signals feed: refresh failed");
    }
    return false;
}

void SignalFeed::start(int poll_sec)
{
    stop();
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = false;
    }
    const int poll = poll_sec > 0 ? poll_sec : 1;
    try {
        thread_ = std::thread([this, poll] {
            std::unique_lock<std::mutex> lk(mu_);
            while (!stop_) {
                lk.unlock();
                refresh(static_cast<int64_t>(std::time(nullptr)));
                lk.lock();
                cv_.wait_for(lk, std::chrono::seconds(poll), [this] { return stop_; });
            }
        });
    } catch (const std::exception& e) {
        log_line(LogLevel::Error, std::string("signals feed: cannot start the poll thread: ") + e.what());
    }
}

void SignalFeed::stop()
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id())
        thread_.join();
}

// ---- the status file -------------------------------------------------------------

SignalsView read_feed_status(const std::string& status_path, const Model& m, int ttl_sec, int64_t now)
{
    const std::string text = read_text_file(status_path);
    JsonPtr root(json_tokener_parse(text.c_str()));
    auto bad = [&](const std::string& msg) -> ParseError {
        return ParseError(status_path + ": " + msg + " (a status file as written by job_submit/m2g, schema " +
                          kw::kSigStatusSchemaV1 + ")");
    };
    if (!root || !json_object_is_type(root.get(), json_type_object))
        throw bad("not a JSON object");
    auto field = [&](const char* key) {
        json_object* v = nullptr;
        return json_object_object_get_ex(root.get(), key, &v) ? v : nullptr;
    };
    auto str = [&](const char* key, bool required) -> std::string {
        json_object* v = field(key);
        if (!v || json_object_is_type(v, json_type_null)) {
            if (required)
                throw bad(std::string("\"") + key + "\" is missing");
            return "";
        }
        if (!json_object_is_type(v, json_type_string))
            throw bad(std::string("\"") + key + "\" must be a string");
        return json_string_text(v);
    };
    if (str(kw::kSigSchema, true) != kw::kSigStatusSchemaV1)
        throw bad("\"schema\" is \"" + str(kw::kSigSchema, true) + "\"");
    const std::string file = str(kw::kSigStatusFile, false);
    const std::string state = str(kw::kSigStatusState, true);
    const std::string fs_word = str(kw::kSigStatusFailSafe, true);
    const std::optional<FailSafe> fs = enum_from(kFailSafeNames, fs_word);
    if (!fs)
        throw bad("\"failsafe\" is \"" + fs_word + "\"; accepted: last, open, defer");
    std::optional<FeedState> fstate = enum_from(kFeedStateNames, state);
    if (!fstate)
        throw bad("\"state\" is \"" + state + "\"; accepted: not_configured, fresh, stale, missing, corrupt");
    if (fstate == FeedState::NotConfigured)
        return build_view("", ttl_sec, *fs, nullptr, FeedState::NotConfigured, "", 0, now);
    if (fstate == FeedState::Stale)  // the file parsed: build_view() tells fresh from stale by age
        fstate = FeedState::Fresh;
    const std::string error = str(kw::kSigStatusError, false);
    int64_t since = 0;
    if (const std::string cs = str(kw::kSigStatusCorruptSince, false); !cs.empty())
        since = parse_signal_time(cs, status_path + ": corrupt_since");
    std::shared_ptr<const Signals> snap;
    json_object* sv = field(kw::kSigStatusSnapshot);
    if (sv && !json_object_is_type(sv, json_type_null)) {
        const std::string snap_text = json_object_to_json_string_ext(sv, JSON_C_TO_STRING_PLAIN);
        snap = std::make_shared<const Signals>(parse_signals(snap_text, status_path + ": snapshot", m, now));
    }
    if (fstate == FeedState::Fresh && !snap)
        throw bad("state \"" + state + "\" without a snapshot");
    return build_view(file.empty() ? status_path : file, ttl_sec, *fs, snap, *fstate, error, since, now);
}

}  // namespace m2g
