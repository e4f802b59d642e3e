// m2g core: the AdminComment segment, and the one writer and parser of its
// three parts (see annotation.hpp for the texts).
#include "core/job/annotation.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>
#include <utility>

#include "core/base/keys.hpp"
#include "core/base/time.hpp"

namespace m2g {

std::string one_line(std::string_view text)
{
    std::string out(text);
    for (char& c : out) {
        if (c == ']')
            c = ')';
        else if (c == ';')
            c = ',';
        else if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
    }
    return out;
}

namespace {

// ---- the segment ----------------------------------------------------------------

struct Segment {
    std::string before, after;  // text outside the segment, trimmed
    std::string placement, admission, curtail;
};

std::string trim(std::string_view s)
{
    while (!s.empty() && s.front() == ' ')
        s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ')
        s.remove_suffix(1);
    return std::string(s);
}

Segment split(std::string_view comment)
{
    Segment seg;
    const auto start = comment.find(kw::kAnnotationOpen);
    if (start == std::string_view::npos) {
        seg.before = trim(comment);
        return seg;
    }
    const size_t body = start + std::string_view(kw::kAnnotationOpen).size();
    auto end = comment.find(']', body);
    if (end == std::string_view::npos)
        end = comment.size();
    seg.before = trim(comment.substr(0, start));
    seg.after = end < comment.size() ? trim(comment.substr(end + 1)) : "";
    const std::string_view inner = comment.substr(body, end - body);
    const std::string_view admit = kw::kAnnotationAdmit;
    const std::string_view curtail = kw::kAnnotationCurtail;
    size_t pos = 0;
    while (pos <= inner.size()) {
        auto semi = inner.find(';', pos);
        if (semi == std::string_view::npos)
            semi = inner.size();
        const std::string piece = trim(inner.substr(pos, semi - pos));
        if (piece.rfind(admit, 0) == 0)
            seg.admission = piece.substr(admit.size());
        else if (piece.rfind(curtail, 0) == 0)
            seg.curtail = piece.substr(curtail.size());
        else if (!piece.empty())
            seg.placement += (seg.placement.empty() ? "" : ", ") + piece;
        pos = semi + 1;
    }
    return seg;
}

// one_line(), trimmed.
std::string clean(std::string_view text)
{
    return trim(one_line(text));
}

// ---- the parts' words -------------------------------------------------------------

// The keys of both parts, and the fixed words around them.
constexpr std::string_view kWaiting = "waiting";
constexpr std::string_view kDomains = "domains";
constexpr std::string_view kLeaves = "leaves";
constexpr std::string_view kPolicy = "policy";
constexpr std::string_view kScore = "score";
constexpr std::string_view kReason = "reason";
constexpr std::string_view kSignals = "signals";
constexpr std::string_view kWait = kw::kAnnotationWait;
constexpr std::string_view kNeed = kw::kAnnotationNeed;
constexpr std::string_view kOver = kw::kAnnotationOver;
constexpr std::string_view kPreferSince = kw::kAnnotationPreferSince;
constexpr std::string_view kRoomSince = kw::kAnnotationRoomSince;
constexpr std::string_view kPreempted = "preempted";
constexpr std::string_view kEvicted = "evicted_gpu_h";
constexpr std::string_view kReleased = "released at ";
constexpr std::string_view kMonitor = "monitor would ";
constexpr std::string_view kClass = "class";
constexpr std::string_view kClassNone = "none";  // class=none: WorkloadClass::Unset
constexpr std::string_view kWGpu = "w_gpu";
constexpr std::string_view kSignal = "signal";  // signal=[B:]N: the job's --signal, its checkpoint request
constexpr std::string_view kDefer = "defer";  // defer=no: the owner's --m2g-defer=no, honoured
constexpr std::string_view kUntil = "until";
constexpr std::string_view kCause = "cause";
constexpr std::string_view kAvoid = "avoid";
constexpr std::string_view kAvoidNodes = " nodes (";  // avoid=<n> nodes (<for>)
constexpr std::string_view kUserBegin = "user_begin";
constexpr std::string_view kNoNames = "-";  // domains=- / leaves=-: none
constexpr std::string_view kScope = "scope";  // curtail: the scope m2g-curtaild acted for
constexpr std::string_view kAt = "at";        // curtail: when

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string field(std::string_view key, std::string_view value)
{
    return std::string(key) + "=" + std::string(value);
}

struct Word {
    std::string_view text;
    size_t begin = 0, end = 0;  // in the part's text
};

std::vector<Word> words(std::string_view s)
{
    std::vector<Word> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && s[i] == ' ')
            ++i;
        size_t j = i;
        while (j < s.size() && s[j] != ' ')
            ++j;
        if (j > i)
            out.push_back({s.substr(i, j - i), i, j});
        i = j;
    }
    return out;
}

struct Key {
    std::string_view name;
    bool free_text;                      // runs on over later words until one of `ends`
    std::vector<std::string_view> ends;  // keys that end the free text
};

using Fields = std::map<std::string_view, std::string>;

// The fields of `text` (split into `ws`) from word `from` on: a word
// "key=value" with a key from `keys`, each taken once, starts a field; a
// free-text field runs on over later words, other keys included, until a
// word that starts one of its `ends` (its spacing kept); words in no field
// are left out.
Fields fields(std::string_view text, const std::vector<Word>& ws, size_t from, const std::vector<Key>& keys)
{
    std::map<std::string_view, std::pair<size_t, size_t>> spans;  // key -> [begin, end) in text
    const Key* cur = nullptr;
    for (size_t i = from; i < ws.size(); ++i) {
        const std::string_view w = ws[i].text;
        const size_t eq = w.find('=');
        const std::string_view key = eq == std::string_view::npos ? std::string_view() : w.substr(0, eq);
        const Key* hit = nullptr;
        if (!key.empty() && !spans.count(key))
            for (const Key& k : keys)
                if (k.name == key)
                    hit = &k;
        if (hit && cur && cur->free_text && std::find(cur->ends.begin(), cur->ends.end(), key) == cur->ends.end())
            hit = nullptr;
        if (hit) {
            cur = hit;
            spans[hit->name] = {ws[i].begin + eq + 1, ws[i].end};
        } else if (cur && cur->free_text) {
            auto& span = spans[cur->name];
            if (span.first == span.second)
                span.first = ws[i].begin;
            span.second = ws[i].end;
        } else {
            cur = nullptr;
        }
    }
    Fields out;
    for (const auto& [key, span] : spans)
        out[key] = std::string(text.substr(span.first, span.second - span.first));
    return out;
}

std::string value(const Fields& f, std::string_view key)
{
    const auto it = f.find(key);
    return it == f.end() ? std::string() : it->second;
}

// "nvl01,nvl02" → {"nvl01", "nvl02"}; "-" → {}.
std::vector<std::string> split_list(std::string_view s)
{
    std::vector<std::string> out;
    if (s == kNoNames)
        return out;
    size_t pos = 0;
    while (pos < s.size()) {
        size_t comma = s.find(',', pos);
        if (comma == std::string_view::npos)
            comma = s.size();
        if (comma > pos)
            out.emplace_back(s.substr(pos, comma - pos));
        pos = comma + 1;
    }
    return out;
}

std::string join_list(const std::vector<std::string>& v)
{
    if (v.empty())
        return std::string(kNoNames);
    std::string out;
    for (const std::string& s : v)
        out += (out.empty() ? "" : ",") + s;
    return out;
}

// The whole of `text` as a number, or nullopt.
std::optional<double> number(const std::string& text)
{
    if (text.empty())
        return std::nullopt;
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (!end || *end != '\0' || !std::isfinite(d))
        return std::nullopt;
    return d;
}

int64_t positive_integer(const std::string& text)
{
    if (text.empty())
        return 0;
    char* end = nullptr;
    const long long t = std::strtoll(text.c_str(), &end, 10);
    return end && *end == '\0' && t > 0 ? t : 0;
}

int64_t time_or_zero(std::string_view text)
{
    if (text.empty())
        return 0;
    try {
        return parse_signal_time(std::string(text), "time");
    } catch (...) {
        return 0;
    }
}

// "18 nodes (maintenance mw-1)" → 18, "maintenance mw-1".
bool parse_avoid(std::string_view text, int& nodes, std::string& what)
{
    size_t i = 0;
    while (i < text.size() && i < 9 && text[i] >= '0' && text[i] <= '9')
        ++i;
    if (i == 0 || text.size() < i + kAvoidNodes.size() + 1 || text.substr(i, kAvoidNodes.size()) != kAvoidNodes ||
        text.back() != ')')
        return false;
    const int n = std::atoi(std::string(text.substr(0, i)).c_str());
    if (n <= 0)
        return false;
    nodes = n;
    const size_t from = i + kAvoidNodes.size();
    what = std::string(text.substr(from, text.size() - 1 - from));
    return true;
}

// ---- waiting parts written before wait= ------------------------------------------------
// Until wait= existed, a waiting part said why only in its reason sentence,
// as Engine::place() and gate() wrote it; jobs in accounting databases
// still hold such parts, and `m2g explain` must read them as it always did.
// This is the one place that reads that sentence.

// The cause the sentence leads with. gate() puts its blocking sentence
// first ("site power: ...", "pacing: ...", "signals stale/missing, ..."),
// then its notes (maintenance, nodes down, racks, rows); the engine's
// sentences start "waiting for ".
WaitCause legacy_wait(std::string_view r)
{
    if (starts_with(r, "waiting for ")) {
        if (r.find("NVLink domain") != std::string_view::npos)
            return WaitCause::NvlinkDomain;
        if (r.find(" switch with ") != std::string_view::npos)
            return WaitCause::Switch;
        return WaitCause::Nodes;
    }
    if (starts_with(r, "site power"))
        return WaitCause::SitePower;
    if (starts_with(r, "pacing"))
        return WaitCause::Pacing;
    if (starts_with(r, "rack ") && r.find(" over budget") != std::string_view::npos)
        return WaitCause::RackPower;
    if (starts_with(r, "row ") && r.find(" over budget") != std::string_view::npos)
        return WaitCause::RowPower;
    if (starts_with(r, "maintenance "))
        return WaitCause::Maintenance;
    if (starts_with(r, "signals stale"))
        return WaitCause::Failsafe;
    size_t i = 0;
    while (i < r.size() && r[i] >= '0' && r[i] <= '9')
        ++i;
    if (i > 0 && starts_with(r.substr(i), " nodes down"))
        return WaitCause::NodesDown;
    return WaitCause::Other;
}

// The names in "<scope> <name> over budget: ..." phrases, in order:
// "rack nvl01 over budget: ..., rack nvl02 over budget: ..." → nvl01, nvl02.
std::vector<std::string> legacy_over(std::string_view r, std::string_view scope)
{
    std::vector<std::string> out;
    const std::string head = std::string(scope) + " ";
    constexpr std::string_view kOverBudget = " over budget";
    for (size_t at = r.find(head); at != std::string_view::npos; at = r.find(head, at + 1)) {
        if (at > 0 && r[at - 1] != ' ')
            continue;
        const size_t from = at + head.size();
        const size_t sp = r.find(' ', from);
        if (sp == std::string_view::npos || r.substr(sp, kOverBudget.size()) != kOverBudget)
            continue;
        out.emplace_back(r.substr(from, sp - from));
    }
    return out;
}

// The whole number right after `key` in `r` ("with 18 free" → 18), else 0.
int number_after(std::string_view r, std::string_view key)
{
    const size_t at = r.find(key);
    if (at == std::string_view::npos)
        return 0;
    const std::string rest(r.substr(at + key.size()));
    const long n = std::strtol(rest.c_str(), nullptr, 10);
    return static_cast<int>(std::clamp<long>(n, 0, INT_MAX));
}

// wait=, need= and over= of a waiting part without them, from its reason.
void derive_legacy_wait(PlacementAnnotation& p)
{
    p.wait = legacy_wait(p.reason);
    switch (p.wait) {
    case WaitCause::NvlinkDomain:
    case WaitCause::Switch:
    case WaitCause::Nodes:
        // "... with 18 free healthy nodes ...", "waiting for 36 free healthy nodes ..."
        p.need = number_after(p.reason, " with ");
        if (p.need == 0)
            p.need = number_after(p.reason, "waiting for ");
        break;
    case WaitCause::RackPower:
        p.over = legacy_over(p.reason, "rack");
        break;
    case WaitCause::RowPower:
        p.over = legacy_over(p.reason, "row");
        break;
    default:
        break;
    }
}

}  // namespace

int whole_watts(double w) { return std::isfinite(w) && w > 0 ? static_cast<int>(std::nearbyint(std::min(w, 1e9))) : 0; }

// ---- the placement part -------------------------------------------------------------

bool PlacementAnnotation::operator==(const PlacementAnnotation& o) const
{
    return std::tie(state, domains, leaves, policy, score, reason, signals, wait, need, over, prefer_since,
                    room_since, preempted, evicted_gpu_h) ==
           std::tie(o.state, o.domains, o.leaves, o.policy, o.score, o.reason, o.signals, o.wait, o.need, o.over,
                    o.prefer_since, o.room_since, o.preempted, o.evicted_gpu_h);
}

std::string format_score(double score)
{
    char buf[40];
    for (int digits = 6; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, score);
        if (std::strtod(buf, nullptr) == score)
            break;
    }
    return buf;
}

std::string format(const PlacementAnnotation& p)
{
    const std::string notes = p.signals.empty() ? "" : " " + field(kSignals, p.signals);
    std::string out;
    switch (p.state) {
    case PlacementState::None:
        return "";
    case PlacementState::Placed:
        out = field(kDomains, join_list(p.domains)) + " " + field(kLeaves, join_list(p.leaves)) + " " +
              field(kPolicy, p.policy) + (p.score ? " " + field(kScore, format_score(*p.score)) : "");
        if (!p.preempted.empty()) {
            std::vector<std::string> ids;
            for (uint32_t id : p.preempted)
                ids.push_back(std::to_string(id));
            out += " " + field(kPreempted, join_list(ids));
        }
        if (p.evicted_gpu_h)
            out += " " + field(kEvicted, format_score(*p.evicted_gpu_h));
        out += " " + field(kReason, p.reason) + notes;
        break;
    case PlacementState::Waiting:
        out = std::string(kWaiting) + " " + field(kPolicy, p.policy);
        if (p.wait != WaitCause::None) {
            out += " " + field(kWait, to_string(p.wait));
            if (p.need > 0)
                out += " " + field(kNeed, std::to_string(p.need));
            if (!p.over.empty())
                out += " " + field(kOver, join_list(p.over));
        }
        if (p.prefer_since > 0)
            out += " " + field(kPreferSince, std::to_string(p.prefer_since));
        if (p.room_since > 0)
            out += " " + field(kRoomSince, std::to_string(p.room_since));
        out += " " + field(kReason, p.reason) + notes;
        break;
    case PlacementState::Stock:
        out = field(kPolicy, p.policy) + (p.signals.empty() ? "" : " " + p.signals);
        break;
    }
    return clean(out);
}

PlacementAnnotation parse_placement(std::string_view text)
{
    PlacementAnnotation p;
    const std::vector<Word> ws = words(text);
    if (ws.empty())
        return p;
    static const std::vector<Key> keys{{kDomains, false, {}}, {kLeaves, false, {}},        {kPolicy, false, {}},
                                       {kScore, false, {}},   {kReason, true, {kSignals}}, {kSignals, true, {}},
                                       {kWait, false, {}},    {kNeed, false, {}},          {kOver, false, {}},
                                       {kPreferSince, false, {}}, {kRoomSince, false, {}},
                                       {kPreempted, false, {}}, {kEvicted, false, {}}};
    const bool waiting = ws[0].text == kWaiting;
    const Fields f = fields(text, ws, waiting ? 1 : 0, keys);
    p.policy = value(f, kPolicy);
    if (!waiting && !f.count(kDomains) && !f.count(kLeaves) && starts_with(ws[0].text, field(kPolicy, ""))) {
        // "policy=any <notes>": everything after the policy is the gate's note.
        p.state = PlacementState::Stock;
        p.signals = trim(text.substr(ws[0].end));
        return p;
    }
    p.domains = split_list(value(f, kDomains));
    p.leaves = split_list(value(f, kLeaves));
    p.score = number(value(f, kScore));
    p.reason = value(f, kReason);
    p.signals = value(f, kSignals);
    if (waiting) {
        p.state = PlacementState::Waiting;
        const std::string wait = value(f, kWait);
        if (wait.empty()) {
            derive_legacy_wait(p);
        } else {
            p.wait = wait_cause_from(wait).value_or(WaitCause::Other);  // a newer m2g's cause: other
            p.need = static_cast<int>(std::min<int64_t>(positive_integer(value(f, kNeed)), INT_MAX));
            p.over = split_list(value(f, kOver));
        }
        p.prefer_since = positive_integer(value(f, kPreferSince));
        p.room_since = positive_integer(value(f, kRoomSince));
    } else if (f.count(kDomains) || f.count(kLeaves)) {
        p.state = PlacementState::Placed;
        for (const std::string& id : split_list(value(f, kPreempted))) {
            const int64_t n = positive_integer(id);
            if (n > 0 && n <= int64_t(UINT32_MAX))
                p.preempted.push_back(static_cast<uint32_t>(n));
        }
        p.evicted_gpu_h = number(value(f, kEvicted));
    }
    return p;
}

// ---- the admission part --------------------------------------------------------------

bool AdmissionAnnotation::waits() const
{
    return !monitor && released_at == 0 && verdict && (*verdict == Verdict::Defer || *verdict == Verdict::Pace);
}

bool AdmissionAnnotation::holds_at(int64_t now) const
{
    return waits() && until > now;
}

AdmissionCause cause_of(std::string_view cause)
{
    if (cause.empty())
        return {};
    if (cause == kCauseSitePower)
        return {CauseKind::SitePower, ""};
    if (cause == kCauseFailsafe)
        return {CauseKind::Failsafe, ""};
    if (cause.substr(0, kCauseMaintenance.size()) == kCauseMaintenance)
        return {CauseKind::Maintenance, std::string(cause.substr(kCauseMaintenance.size()))};
    // Event ids are the feed's own names; m2g's own causes all hold ':'.
    if (cause.find(':') == std::string_view::npos)
        return {CauseKind::Event, std::string(cause)};
    return {CauseKind::Other, ""};
}

bool AdmissionAnnotation::operator==(const AdmissionAnnotation& o) const
{
    return std::tie(released_at, monitor, verdict, workload_class, unknown_class, w_gpu, no_defer, checkpoint_signal,
                    until, cause, reason, avoid_nodes, avoid_for, user_begin) ==
           std::tie(o.released_at, o.monitor, o.verdict, o.workload_class, o.unknown_class, o.w_gpu, o.no_defer,
                    o.checkpoint_signal, o.until, o.cause, o.reason, o.avoid_nodes, o.avoid_for, o.user_begin);
}

std::string format(const AdmissionAnnotation& a)
{
    std::string out = a.verdict ? to_string(*a.verdict) : "";
    auto add = [&out](std::string_view key, const std::string& v) { out += (out.empty() ? "" : " ") + field(key, v); };
    if (!a.unknown_class.empty())
        add(kClass, a.unknown_class);
    else if (a.workload_class)
        add(kClass, *a.workload_class == WorkloadClass::Unset ? std::string(kClassNone) : to_string(*a.workload_class));
    if (a.w_gpu > 0)
        add(kWGpu, std::to_string(a.w_gpu));
    if (a.no_defer)
        add(kDefer, "no");
    if (!a.checkpoint_signal.empty())
        add(kSignal, a.checkpoint_signal);
    if (a.until != 0)
        add(kUntil, format_utc(a.until));
    if (!a.cause.empty())
        add(kCause, a.cause);
    if (!a.reason.empty())
        add(kReason, a.reason);
    if (a.avoid_nodes > 0)
        add(kAvoid, std::to_string(a.avoid_nodes) + std::string(kAvoidNodes) + a.avoid_for + ")");
    if (a.user_begin > 0)
        add(kUserBegin, std::to_string(a.user_begin));
    if (a.monitor)
        out = std::string(kMonitor) + out;
    if (a.released_at != 0)
        out = std::string(kReleased) + format_utc(a.released_at) + ": " + out;
    return clean(out);
}

namespace {

// The words of an admission or curtail part after its optional
// "monitor would " (which sets `monitor`); `text` loses the prefix.
std::vector<Word> monitor_and_words(std::string_view& text, bool& monitor)
{
    if (starts_with(text, kMonitor)) {
        monitor = true;
        text.remove_prefix(kMonitor.size());
    }
    return words(text);
}

}  // namespace

AdmissionAnnotation parse_admission(std::string_view text)
{
    AdmissionAnnotation a;
    while (!text.empty() && text.front() == ' ')
        text.remove_prefix(1);
    if (starts_with(text, kReleased)) {
        const size_t colon = text.find(": ", kReleased.size());
        if (colon != std::string_view::npos) {
            a.released_at = time_or_zero(text.substr(kReleased.size(), colon - kReleased.size()));
            text.remove_prefix(colon + 2);
        }
    }
    const std::vector<Word> ws = monitor_and_words(text, a.monitor);
    if (ws.empty())
        return a;
    const size_t from = (a.verdict = verdict_from(ws[0].text)) ? 1 : 0;
    static const std::vector<Key> keys{{kClass, false, {}},
                                       {kWGpu, false, {}},
                                       {kDefer, false, {}},
                                       {kSignal, false, {}},
                                       {kUntil, false, {}},
                                       {kCause, false, {}},
                                       {kReason, true, {kAvoid, kUserBegin}},
                                       {kAvoid, true, {kUserBegin}},
                                       {kUserBegin, false, {}}};
    const Fields f = fields(text, ws, from, keys);
    const std::string cls = value(f, kClass);
    if (cls == kClassNone) {
        a.workload_class = WorkloadClass::Unset;
    } else if (!cls.empty()) {
        a.workload_class = workload_class_from(cls).value_or(WorkloadClass::Unset);
        if (a.workload_class == WorkloadClass::Unset)
            a.unknown_class = cls;
    }
    const std::optional<double> w = number(value(f, kWGpu));
    a.w_gpu = w ? whole_watts(*w) : 0;
    a.no_defer = value(f, kDefer) == "no";
    a.checkpoint_signal = value(f, kSignal);
    if (!parse_checkpoint_signal(a.checkpoint_signal))
        a.checkpoint_signal.clear();
    a.until = time_or_zero(value(f, kUntil));
    a.cause = value(f, kCause);
    a.reason = value(f, kReason);
    if (!parse_avoid(value(f, kAvoid), a.avoid_nodes, a.avoid_for)) {
        a.avoid_nodes = 0;
        a.avoid_for.clear();
    }
    a.user_begin = positive_integer(value(f, kUserBegin));
    return a;
}

std::optional<std::pair<int, bool>> parse_checkpoint_signal(std::string_view text)
{
    bool batch = false;
    if (text.rfind("B:", 0) == 0) {
        batch = true;
        text.remove_prefix(2);
    }
    if (text.empty() || text.size() > 2 || text.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    const int n = std::stoi(std::string(text));
    if (n < 1 || n > 64)
        return std::nullopt;
    return std::make_pair(n, batch);
}

// ---- the curtail part ------------------------------------------------------------------

bool CurtailAnnotation::operator==(const CurtailAnnotation& o) const
{
    return std::tie(monitor, step, w_gpu, cause, scope, at) ==
           std::tie(o.monitor, o.step, o.w_gpu, o.cause, o.scope, o.at);
}

std::string format(const CurtailAnnotation& c)
{
    if (!c.step)
        return "";
    std::string out = to_string(*c.step);
    if (c.w_gpu > 0)
        out += " " + field(kWGpu, std::to_string(c.w_gpu));
    if (!c.cause.empty())
        out += " " + field(kCause, c.cause);
    if (!c.scope.empty())
        out += " " + field(kScope, c.scope);
    if (c.at != 0)
        out += " " + field(kAt, format_utc(c.at));
    if (c.monitor)
        out = std::string(kMonitor) + out;
    return clean(out);
}

CurtailAnnotation parse_curtail(std::string_view text)
{
    CurtailAnnotation c;
    while (!text.empty() && text.front() == ' ')
        text.remove_prefix(1);
    const std::vector<Word> ws = monitor_and_words(text, c.monitor);
    if (ws.empty())
        return c;
    const size_t from = (c.step = curtail_step_from(ws[0].text)) ? 1 : 0;
    static const std::vector<Key> keys{
        {kWGpu, false, {}}, {kCause, false, {}}, {kScope, false, {}}, {kAt, false, {}}};
    const Fields f = fields(text, ws, from, keys);
    const std::optional<double> w = number(value(f, kWGpu));
    c.w_gpu = w ? whole_watts(*w) : 0;
    c.cause = value(f, kCause);
    c.scope = value(f, kScope);
    c.at = time_or_zero(value(f, kAt));
    return c;
}

// ---- the segment ------------------------------------------------------------------------

bool Annotation::operator==(const Annotation& o) const
{
    return placement == o.placement && admission == o.admission && curtail == o.curtail;
}

Annotation read_annotation(std::string_view admin_comment)
{
    Annotation a;
    if (!has_annotation(admin_comment))
        return a;
    const Segment seg = split(admin_comment);
    if (!seg.placement.empty())
        a.placement = parse_placement(seg.placement);
    if (!seg.admission.empty())
        a.admission = parse_admission(seg.admission);
    if (!seg.curtail.empty())
        a.curtail = parse_curtail(seg.curtail);
    return a;
}

bool has_annotation(std::string_view admin_comment)
{
    return admin_comment.find(kw::kAnnotationOpen) != std::string_view::npos;
}

std::string write_annotation(std::string_view comment, const PlacementAnnotation& part)
{
    return set_annotation(comment, AnnotationPart::Placement, format(part));
}

std::string write_annotation(std::string_view comment, const AdmissionAnnotation& part)
{
    return set_annotation(comment, AnnotationPart::Admission, format(part));
}

std::string write_annotation(std::string_view comment, const CurtailAnnotation& part)
{
    return set_annotation(comment, AnnotationPart::Curtail, format(part));
}

bool foreign_structured(std::string_view comment)
{
    const size_t i = comment.find_first_not_of(" \t\r\n");
    return i != std::string_view::npos && (comment[i] == '{' || comment[i] == '[');
}

std::string set_annotation(std::string_view comment, AnnotationPart part, std::string_view text)
{
    if (foreign_structured(comment))
        return std::string(comment);
    Segment seg = split(comment);
    (part == AnnotationPart::Placement   ? seg.placement
     : part == AnnotationPart::Admission ? seg.admission
                                         : seg.curtail) = clean(text);
    std::string inner = seg.placement;
    if (!seg.admission.empty())
        inner += (inner.empty() ? "" : "; ") + std::string(kw::kAnnotationAdmit) + seg.admission;
    if (!seg.curtail.empty())
        inner += (inner.empty() ? "" : "; ") + std::string(kw::kAnnotationCurtail) + seg.curtail;
    std::string out = seg.before;
    if (!inner.empty())
        out += (out.empty() ? "" : " ") + std::string(kw::kAnnotationOpen) + inner + "]";
    if (!seg.after.empty())
        out += (out.empty() ? "" : " ") + seg.after;
    return out;
}

std::string get_annotation(std::string_view comment, AnnotationPart part)
{
    const Segment seg = split(comment);
    return part == AnnotationPart::Placement ? seg.placement
           : part == AnnotationPart::Admission ? seg.admission
                                               : seg.curtail;
}

}  // namespace m2g
