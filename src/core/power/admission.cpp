// m2g core: admission — the policy behind job_submit/m2g (decide), select/m2g
// (gate), `m2g` and the simulator. See admission.hpp and m2g.conf(5),
// ADMISSION AND SIGNALS.
#include "core/power/admission.hpp"

#include "core/job/annotation.hpp"
#include "core/base/keys.hpp"
#include "core/base/text.hpp"
#include "core/power/curtail.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>

namespace m2g {

// ---- power and consent ------------------------------------------------------

const std::vector<ClassPowerDefault>& class_power_defaults()
{
    // Per-GPU power of NVIDIA A100s in two production LLM clusters:
    // ../shared/data/acme2023_power_thermal_cdf.csv, metric gpu_power (W),
    // the larger of clusters kalos and seren at the class's cdf_pct,
    // interpolated linearly between the CDF's points, rounded to 1 W.
    // Heavier, steadier work sits higher in the distribution. The CDF is
    // A100 data; set DefaultPowerPerGpuW or PowerPerGpuW for other GPUs.
    // test_admission.cpp recomputes every value from the CSV.
    static const std::vector<ClassPowerDefault> kDefaults = {
        {WorkloadClass::Unset, 90, 404},      // kalos p90 403.6 W (seren 395.1)
        {WorkloadClass::Training, 95, 413},   // kalos p95 413.0 W (seren 407.7)
        {WorkloadClass::Finetune, 90, 404},   // kalos p90 403.6 W
        {WorkloadClass::Inference, 50, 101},  // kalos p50 101.4 W (seren 96.5)
        {WorkloadClass::Batch, 75, 372},      // kalos p75 371.8 W (seren 290.2)
        {WorkloadClass::Benchmark, 99, 440},  // kalos p99 439.7 W (seren 436.6)
        {WorkloadClass::Dataproc, 50, 101},   // kalos p50 101.4 W
        {WorkloadClass::Agentic, 50, 101},    // kalos p50 101.4 W
    };
    return kDefaults;
}

namespace {

int class_index(WorkloadClass c)
{
    const int i = static_cast<int>(c);
    return i >= 0 && i < 8 ? i : 0;
}

}  // namespace

double power_w_per_gpu(const AdmissionPolicy& p, const JobIntent& intent)
{
    if (intent.power_w_per_gpu > 0)
        return intent.power_w_per_gpu;
    const ClassPolicy& cp = p.classes[class_index(intent.workload_class)];
    if (cp.power_w_per_gpu > 0)
        return cp.power_w_per_gpu;
    if (p.default_power_w_per_gpu > 0)
        return p.default_power_w_per_gpu;
    for (const ClassPowerDefault& d : class_power_defaults())
        if (d.cls == intent.workload_class)
            return d.watts;
    return class_power_defaults().front().watts;
}

bool is_deferrable(const AdmissionPolicy& p, const JobIntent& intent)
{
    switch (intent.defer) {
    case DeferConsent::Ok:
    case DeferConsent::Until:
        return true;
    case DeferConsent::No:
        return false;
    case DeferConsent::Unset:
        break;
    }
    return p.classes[class_index(intent.workload_class)].deferrable;
}

// ---- pacing -----------------------------------------------------------------

namespace {

constexpr size_t kMaxSlots = 10000;  // about a week of 60 s intervals

int64_t interval_of(const AdmissionPolicy& p)
{
    return p.pace_interval_sec > 0 ? p.pace_interval_sec : 60;
}

bool pacing_limits(const AdmissionPolicy& p)
{
    return p.ramp_rate_kw_per_min > 0 || p.pace_gpus_per_interval > 0;
}

// The start of the interval holding `t` (intervals are aligned to
// multiples of their length since the epoch).
int64_t slot_start(int64_t t, int64_t iv)
{
    return t - ((t % iv) + iv) % iv;
}

bool slot_fits(const AdmissionPolicy& p, int slot_gpus, double slot_kw, int gpus, double kw)
{
    if (slot_gpus <= 0 && slot_kw <= 0)
        return true;  // an empty interval takes any job, even one larger than its allowance
    if (p.pace_gpus_per_interval > 0 && slot_gpus + gpus > p.pace_gpus_per_interval)
        return false;
    const double kw_cap = p.ramp_rate_kw_per_min * static_cast<double>(interval_of(p)) / 60.0;
    if (p.ramp_rate_kw_per_min > 0 && slot_kw + kw > kw_cap + 1e-9)
        return false;
    return true;
}

}  // namespace

int64_t Pacer::reserve(const AdmissionPolicy& p, int64_t now, int gpus, double kw)
{
    if (!pacing_limits(p))
        return now;
    const int64_t iv = interval_of(p);
    const int64_t cur = slot_start(now, iv);
    while (!slots_.empty() && slots_.front().start < cur)
        slots_.pop_front();
    int64_t t = cur;
    size_t i = 0;
    // Each step passes one booked slot, so this ends after slots_.size()+1.
    while (true) {
        if (i < slots_.size() && slots_[i].start == t) {
            if (slot_fits(p, slots_[i].gpus, slots_[i].kw, gpus, kw)) {
                slots_[i].gpus += gpus;
                slots_[i].kw += kw;
                return t == cur ? now : t;
            }
            ++i;
            t += iv;
            continue;
        }
        // No booking at t: the interval is empty.
        if (slots_.size() >= kMaxSlots)
            return t;  // bounded: the start is right, only the booking is dropped
        slots_.insert(slots_.begin() + static_cast<std::ptrdiff_t>(i), Slot{t, gpus, kw});
        return t == cur ? now : t;
    }
}

bool Pacer::fits_now(const AdmissionPolicy& p, int64_t now, int gpus, double kw) const
{
    if (!pacing_limits(p))
        return true;
    const int64_t cur = slot_start(now, interval_of(p));
    for (const Slot& s : slots_)
        if (s.start == cur)
            return slot_fits(p, s.gpus, s.kw, gpus, kw);
    return true;
}

void Pacer::book(const AdmissionPolicy& p, int64_t now, int gpus, double kw)
{
    if (!pacing_limits(p))
        return;
    const int64_t cur = slot_start(now, interval_of(p));
    while (!slots_.empty() && slots_.front().start < cur)
        slots_.pop_front();
    if (!slots_.empty() && slots_.front().start == cur) {
        slots_.front().gpus += gpus;
        slots_.front().kw += kw;
    } else if (slots_.size() < kMaxSlots) {
        slots_.push_front(Slot{cur, gpus, kw});
    }
}

int Pacer::gpus_in_interval(const AdmissionPolicy& p, int64_t now) const
{
    const int64_t cur = slot_start(now, interval_of(p));
    for (const Slot& s : slots_)
        if (s.start == cur)
            return s.gpus;
    return 0;
}

// ---- decide -----------------------------------------------------------------

namespace {

std::string class_name(WorkloadClass c)
{
    return c == WorkloadClass::Unset ? "none" : to_string(c);
}

std::string consent_name(const JobIntent& i)
{
    switch (i.defer) {
    case DeferConsent::Ok:
        return "ok";
    case DeferConsent::No:
        return "no";
    case DeferConsent::Until:
        return "until=" + format_utc(i.defer_until);
    case DeferConsent::Unset:
        break;
    }
    return "default";
}

// "(site -25%)", "(rack nvl03 -40 kW)"
std::string event_desc(const CurtailmentEvent& e)
{
    std::string scope = e.scope == EventScope::Site ? "site"
                        : e.scope == EventScope::Row ? "row " + e.scope_name
                                                     : "rack " + e.scope_name;
    return "(" + scope + " " + event_cut_text(e) + ")";
}

// Whether the job's account or one of its groups is listed, and by which
// key: "account ops (PrivilegedAccounts=)", "group gpu (DeferExemptGroups=)";
// "" when neither is.
std::string listed_by(const AdmissionRequest& r, const std::vector<std::string>& accounts, const char* accounts_key,
                      const std::vector<std::string>& groups, const char* groups_key)
{
    auto has = [](const std::vector<std::string>& v, const std::string& x) {
        return std::find(v.begin(), v.end(), x) != v.end();
    };
    if (!r.account.empty() && has(accounts, r.account))
        return "account " + r.account + " (" + accounts_key + "=)";
    for (const std::string& g : r.groups)
        if (has(groups, g))
            return "group " + g + " (" + groups_key + "=)";
    return "";
}

// Who is privileged (PrivilegedAccounts=, PrivilegedGroups=).
std::string privileged_by(const AdmissionPolicy& p, const AdmissionRequest& r)
{
    return listed_by(r, p.privileged_accounts, kw::kPrivilegedAccounts, p.privileged_groups, kw::kPrivilegedGroups);
}

// Who is exempt from deferral (DeferExemptAccounts=, DeferExemptGroups=).
std::string exempt_by(const AdmissionPolicy& p, const AdmissionRequest& r)
{
    return listed_by(r, p.defer_exempt_accounts, kw::kDeferExemptAccounts, p.defer_exempt_groups,
                     kw::kDeferExemptGroups);
}

bool exempt(const AdmissionPolicy& p, const AdmissionRequest& r) { return !exempt_by(p, r).empty(); }

// Maintenance windows on the candidate nodes overlapping [from, from+limit).
struct MaintAt {
    std::vector<const MaintenanceWindow*> windows;  // feed order
    std::vector<int> avoid;  // candidate nodes in those windows, model order
    int free = 0;            // candidate nodes in none of them and not down
};

MaintAt maintenance_at(const Model& m, const Signals& s, const std::vector<uint8_t>& cand, int64_t from,
                       int64_t limit)
{
    MaintAt out;
    const int64_t to = limit > 0 ? from + limit : 0;
    std::vector<uint8_t> in(m.nodes.size(), 0);
    for (const MaintenanceWindow& w : s.maintenance) {
        if (!w.overlaps(from, to))
            continue;
        bool touches = false;
        for (int n : w.nodes)
            if (n >= 0 && static_cast<size_t>(n) < in.size() && cand[n]) {
                in[n] = 1;
                touches = true;
            }
        if (touches)
            out.windows.push_back(&w);
    }
    for (size_t n = 0; n < in.size(); ++n) {
        if (!cand[n])
            continue;
        if (in[n])
            out.avoid.push_back(static_cast<int>(n));
        else if (!(n < s.node_down.size() && s.node_down[n]))
            ++out.free;
    }
    return out;
}

std::string window_ids(const std::vector<const MaintenanceWindow*>& ws)
{
    std::vector<std::string> ids;
    for (const MaintenanceWindow* w : ws)
        ids.push_back(w->id);
    return join(ids, ",");
}

// "a,b", or "none" for an empty list.
std::string names_or_none(const std::vector<std::string>& names)
{
    return names.empty() ? std::string("none") : join(names, ",");
}

std::string account_of(const AdmissionRequest& r)
{
    return r.account.empty() ? "(default)" : r.account;
}

// One admission decision: the request, the decision so far, and what its
// steps share.
class Decider {
  public:
    Decider(const Model& m, const SignalsView& v, const AdmissionRequest& r, Pacer* pacer)
        : m_(m), v_(v), r_(r), pacer_(pacer), p_(m.admission)
    {
        d_.deferrable = is_deferrable(p_, r.intent);
        watts_ = power_w_per_gpu(p_, r.intent);
        d_.power_kw = std::max(0, r.gpus) * watts_ / 1000.0;
        t0_ = std::max(r.now, r.user_begin);
    }

    Decision decide()
    {
        if (p_.mode == AdmissionMode::Off)
            return done(Verdict::Admit, 0, "admission off");

        // 0. Reserved intent: only privileged accounts and groups.
        if (std::optional<Decision> out = reserved_intent())
            return *out;

        s_ = v_.snap.get();
        deadline_ = r_.intent.defer == DeferConsent::Until ? r_.intent.defer_until : 0;
        deadline_reached_ = deadline_ > 0 && deadline_ <= t0_;
        tail_ = "class=" + class_name(r_.intent.workload_class) + " consent=" + consent_name(r_.intent) + ", " +
                fixed(d_.power_kw, 1) + " kW";

        // 1. Maintenance, for every job.
        if (std::optional<Decision> out = maintenance())
            return *out;
        // 2. Fail-safe hold: the feed is stale or missing and SignalsFailSafe=defer.
        if (std::optional<Decision> out = failsafe_hold())
            return *out;
        // 3. Curtailment: events active when the job could start.
        if (std::optional<Decision> out = curtailment())
            return *out;
        // 4. Site headroom, when no site event decided.
        if (std::optional<Decision> out = site_headroom())
            return *out;
        // 5. Nothing stands in the way.
        return done(Verdict::Admit, 0, with_tail("admit"));
    }

  private:
    // Every path ends here: one-line reason, message, and no begin time
    // that is not later than the job could start anyway.
    Decision done(Verdict verdict, int64_t begin, std::string reason)
    {
        d_.verdict = verdict;
        d_.begin_time = begin;
        if ((verdict == Verdict::Defer || verdict == Verdict::Pace) && begin <= t0_) {
            d_.verdict = Verdict::Admit;
            d_.begin_time = 0;
        }
        if (d_.verdict == Verdict::Admit)
            d_.begin_time = 0;
        d_.reason = one_line(std::move(reason));
        if (d_.verdict != Verdict::Reject)
            d_.message = "m2g: " + d_.reason;
        return d_;
    }

    // "admit: <notes>, <tail>", "defer: <what>, <notes>, <tail>"
    std::string with_tail(std::string head) const
    {
        for (size_t i = 0; i < notes_.size(); ++i)
            head += (i == 0 && head == "admit" ? ": " : ", ") + notes_[i];
        return head + ", " + tail_;
    }

    std::optional<Decision> reserved_intent()
    {
        if (!r_.check_reserved)
            return std::nullopt;
        const std::vector<std::string> reserved = reserved_uses(p_, r_.intent, r_.account);
        if (reserved.empty())
            return std::nullopt;
        const std::string who = privileged_by(p_, r_);
        const std::string acct = account_of(r_);
        if (who.empty()) {
            d_.message = "m2g: " + join(reserved, ", ") + " is reserved for privileged accounts (" +
                         names_or_none(p_.privileged_accounts) + ") and Unix groups (" +
                         names_or_none(p_.privileged_groups) +
                         "), see PrivilegedTags= and PrivilegedClasses= in m2g.conf; account " + acct +
                         (r_.user.empty() ? "" : " (user " + r_.user + ")") +
                         " is not one of them. Submit without it, or ask an administrator.";
            d_.refused_reserved = reserved;
            return done(Verdict::Reject, 0,
                        "reject: " + join(reserved, ", ") + " reserved, account " + acct + " not privileged");
        }
        d_.audit.push_back(join(reserved, ", ") + " (reserved) allowed for " + who);
        return std::nullopt;
    }

    std::optional<Decision> maintenance()
    {
        if (!s_ || s_->maintenance.empty())
            return std::nullopt;
        std::vector<uint8_t> cand(m_.nodes.size(), r_.candidate_nodes.empty() ? 1 : 0);
        for (int n : r_.candidate_nodes)
            if (n >= 0 && static_cast<size_t>(n) < cand.size())
                cand[n] = 1;
        const MaintAt at = maintenance_at(m_, *s_, cand, t0_, r_.time_limit_s);
        if (at.windows.empty())
            return std::nullopt;
        const std::string ids = window_ids(at.windows);
        const bool steer = p_.maintenance_action == MaintenanceAction::Steer;
        if (steer && at.free >= r_.nodes) {
            d_.avoid_nodes = at.avoid;
            d_.avoid_for = "maintenance " + ids;
            notes_.push_back("steering clear of maintenance " + ids + " (" + std::to_string(at.avoid.size()) +
                             " nodes avoided)");
            return std::nullopt;
        }
        return wait_for_maintenance(at, cand, ids, steer);
    }

    // The job waits past the maintenance windows `at` (ids `ids`) on its
    // candidate nodes, or is rejected when that is past its deadline.
    Decision wait_for_maintenance(const MaintAt& at, const std::vector<uint8_t>& cand, const std::string& ids,
                                  bool steer)
    {
        const MaintenanceWindow* first = at.windows.front();
        for (const MaintenanceWindow* w : at.windows)
            if (w->start < first->start)
                first = w;
        // Past the overlapping windows, then past those that
        // overlap from there: each round leaves at least one
        // window behind, so the loop is bounded by their number.
        int64_t t = t0_;
        MaintAt cur = at;
        for (size_t round = 0; round <= s_->maintenance.size() && !cur.windows.empty(); ++round) {
            for (const MaintenanceWindow* w : cur.windows)
                t = std::max(t, w->end);
            cur = maintenance_at(m_, *s_, cand, t, r_.time_limit_s);
            if (steer && cur.free >= r_.nodes)
                break;
        }
        d_.cause = std::string(kCauseMaintenance) + first->id;
        if (deadline_ > 0 && t > deadline_) {
            const int64_t minutes = (first->start - t0_) / 60;
            std::string fix = minutes > 0 ? "shorten --time to at most " + std::to_string(minutes) +
                                                 " minutes or move the deadline (--m2g-defer=until=...) past " +
                                                 format_utc(t)
                                           : "move the deadline (--m2g-defer=until=...) past " + format_utc(t);
            fix[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(fix[0])));
            d_.message = "m2g: maintenance window " + first->id + " (" + format_utc(first->start) + " to " +
                         format_utc(first->end) +
                         ") covers the nodes this job can use within its time limit, and the job may not "
                         "wait past its deadline " +
                         format_utc(deadline_) + " (--m2g-defer=until). " + fix + ".";
            return done(Verdict::Reject, 0,
                        with_tail("reject: maintenance " + ids + " lasts until " + format_utc(t) +
                                  ", past the deadline " + format_utc(deadline_)));
        }
        return done(Verdict::Defer, t,
                    with_tail("defer: maintenance " + ids + " until " + format_utc(t) + ", " +
                              std::to_string(at.free) + " nodes free outside it, job needs " +
                              std::to_string(r_.nodes) + " (MaintenanceAction=" +
                              to_string(p_.maintenance_action) + ")"));
    }

    std::optional<Decision> failsafe_hold()
    {
        if (!(v_.hold && d_.deferrable))
            return std::nullopt;
        if (deadline_reached_) {
            notes_.push_back("fail-safe hold skipped: deadline " + format_utc(deadline_) + " reached");
            return std::nullopt;
        }
        int64_t begin = r_.now + p_.power_retry_sec;
        if (deadline_ > 0)
            begin = std::min(begin, deadline_);
        d_.cause = kCauseFailsafe;
        return done(Verdict::Defer, std::max(begin, t0_),
                    with_tail("defer: signals feed " + std::string(to_string(v_.state)) +
                              " (SignalsFailSafe=defer holds deferrable work), re-check at " +
                              format_utc(std::max(begin, t0_))));
    }

    std::optional<Decision> curtailment()
    {
        const bool defer_ok = d_.deferrable && !deadline_reached_;
        events_ = s_ ? active_events(s_, t0_) : std::vector<const CurtailmentEvent*>{};
        if (events_.empty())
            return std::nullopt;
        const CurtailmentEvent* binding = events_.front();  // the one ending last
        const CurtailmentEvent* site = nullptr;             // the site event ending last
        for (const CurtailmentEvent* e : events_) {
            if (e->end > binding->end)
                binding = e;
            if (e->scope == EventScope::Site && (!site || e->end > site->end))
                site = e;
        }
        site_event_ = site != nullptr;
        bool deferrable = defer_ok;
        if (std::optional<Decision> out = no_defer_during(*binding, deferrable))
            return out;
        if (deferrable && site) {
            d_.cause = site->id;
            const std::string what =
                "DR event " + site->id + " " + event_desc(*site) + " until " + format_utc(site->end);
            if (deadline_ == 0 || deadline_ >= site->end)
                return done(Verdict::Defer, site->end, with_tail("defer: " + what));
            // The deadline comes first: wait until then, and run under
            // pacing as non-deferrable work from there (the release
            // thread decides again at the deadline).
            return done(Verdict::Defer, deadline_,
                        with_tail("defer: " + what + ", deadline " + format_utc(deadline_) + " before event end"));
        }
        if (d_.deferrable && deadline_reached_ && site)
            return pace_or_admit(*site, "deadline " + format_utc(deadline_) + " before event end");
        if (!deferrable && !d_.deferrable)
            return pace_or_admit(*binding, "non-deferrable");
        if (!site) {
            // Row and rack events: select/m2g keeps deferrable work off
            // those racks at placement; the rest of the site is open.
            notes_.push_back("DR event " + binding->id + " " + event_desc(*binding) + " enforced at placement");
        }
        return std::nullopt;
    }

    // --m2g-defer=no during the event `binding`: rejected or converted to
    // deferrable (NoDeferAction=), unless the job is exempt from deferral.
    std::optional<Decision> no_defer_during(const CurtailmentEvent& binding, bool& deferrable)
    {
        if (!d_.deferrable && r_.intent.defer == DeferConsent::No && !exempt(p_, r_)) {
            if (p_.no_defer_action == NoDeferAction::Reject) {
                const std::string acct = account_of(r_);
                const int64_t wait_min = std::max<int64_t>(1, (binding.end - r_.now + 59) / 60);
                d_.cause = binding.id;
                d_.message = "m2g: demand-response event " + binding.id + " is active until " +
                             format_utc(binding.end) + "; account " + acct +
                             " may not use --m2g-defer=no during events (exempt accounts: " +
                             names_or_none(p_.defer_exempt_accounts) + ", groups: " +
                             names_or_none(p_.defer_exempt_groups) +
                             "). Submit with --m2g-defer=ok, or --m2g-defer=until=now+" + std::to_string(wait_min) +
                             "m (or any time after the event), or after " + format_utc(binding.end) + ".";
                return done(Verdict::Reject, 0,
                            with_tail("reject: DR event " + binding.id + " " + event_desc(binding) + " until " +
                                      format_utc(binding.end) + ", account " + acct +
                                      " not exempt from deferral (NoDeferAction=reject)"));
            }
            d_.converted = true;
            d_.deferrable = true;
            deferrable = true;
            notes_.push_back("--m2g-defer=no converted to deferrable (NoDeferAction=convert)");
        } else if (!d_.deferrable && r_.intent.defer == DeferConsent::No) {
            d_.audit.push_back("--m2g-defer=no honoured during DR event " + binding.id + " for exempt " +
                               exempt_by(p_, r_));
        }
        return std::nullopt;
    }

    Decision pace_or_admit(const CurtailmentEvent& e, const std::string& why)
    {
        const bool paced = pacing_limits(p_) && pacer_ != nullptr && t0_ == r_.now;
        const std::string what = "DR event " + e.id + " " + event_desc(e) + " until " + format_utc(e.end);
        d_.cause = e.id;
        if (!paced) {
            notes_.insert(notes_.begin(), why + " during " + what);
            return done(Verdict::Admit, 0, with_tail("admit"));
        }
        const int64_t begin = pacer_->reserve(p_, r_.now, r_.gpus, d_.power_kw);
        if (begin <= r_.now) {
            notes_.insert(notes_.begin(), why + " during " + what + ", paced: this interval has room");
            return done(Verdict::Admit, 0, with_tail("admit"));
        }
        return done(Verdict::Pace, begin,
                    with_tail("pace: " + why + " during " + what + ", GPUs start at " + format_utc(begin) +
                              " (RampRateKWPerMin=" + general(p_.ramp_rate_kw_per_min) +
                              " PaceGpusPerInterval=" + std::to_string(p_.pace_gpus_per_interval) +
                              " PaceIntervalSec=" + std::to_string(p_.pace_interval_sec) + ")"));
    }

    std::optional<Decision> site_headroom()
    {
        if (site_event_)
            return std::nullopt;
        const double budget = effective_budget_kw(m_, s_, EventScope::Site, kNone, t0_);
        if (budget >= 0 && events_.empty() && d_.power_kw > budget) {
            d_.cause = kCauseSitePower;
            d_.message = "m2g: this job needs an estimated " + fixed(d_.power_kw, 1) + " kW (" + std::to_string(r_.gpus) +
                         " GPUs x " + general(watts_) + " W), more than the site's power budget of " + fixed(budget, 1) +
                         " kW, so it can never start. Ask for fewer GPUs, or if the estimate is too high set a "
                         "recipe (--m2g-recipe) or PowerPerGpuW for its class in m2g.conf.";
            return done(Verdict::Reject, 0,
                        with_tail("reject: job needs " + fixed(d_.power_kw, 1) + " kW, site budget " + fixed(budget, 1) +
                                  " kW"));
        }
        const double draw = s_ ? s_->site.draw_kw : -1;
        if (budget >= 0 && draw >= 0 && draw + d_.power_kw > budget) {
            const std::string what = "site power " + fixed(std::max(0.0, budget - draw), 1) + " kW free of " +
                                     fixed(budget, 1) + " kW, job needs " + fixed(d_.power_kw, 1) + " kW";
            if (d_.deferrable && !deadline_reached_) {
                int64_t begin = r_.now + p_.power_retry_sec;
                if (deadline_ > 0)
                    begin = std::min(begin, deadline_);
                begin = std::max(begin, t0_);
                d_.cause = kCauseSitePower;
                return done(Verdict::Defer, begin,
                            with_tail("defer: " + what + ", re-check at " + format_utc(begin)));
            }
            notes_.insert(notes_.begin(), what + ", non-deferrable");
        }
        return std::nullopt;
    }

    const Model& m_;
    const SignalsView& v_;
    const AdmissionRequest& r_;
    Pacer* pacer_;
    const AdmissionPolicy& p_;
    Decision d_;
    double watts_ = 0;
    int64_t t0_ = 0;
    const Signals* s_ = nullptr;
    int64_t deadline_ = 0;
    bool deadline_reached_ = false;
    std::string tail_;
    std::vector<std::string> notes_;  // what an Admit says besides the tail
    std::vector<const CurtailmentEvent*> events_;  // active when the job could start
    bool site_event_ = false;
};

}  // namespace

std::string Decision::annotation() const
{
    std::string out;
    switch (verdict) {
    case Verdict::Admit:
        out = "admit";
        break;
    case Verdict::Defer:
    case Verdict::Pace:
        out = std::string(to_string(verdict)) + " until=" + format_utc(begin_time) +
              (cause.empty() ? "" : " cause=" + cause) + " reason=" + reason;
        break;
    case Verdict::Reject:
        return one_line("reject reason=" + reason);
    }
    if (!avoid_nodes.empty())
        out += " avoid=" + std::to_string(avoid_nodes.size()) + " nodes (" + avoid_for + ")";
    return one_line(out);
}

std::string privileged_for(const AdmissionPolicy& p, const AdmissionRequest& r) { return privileged_by(p, r); }

std::vector<std::string> reserved_uses(const AdmissionPolicy& p, const JobIntent& intent, const std::string& account)
{
    std::vector<std::string> out;
    if (intent.workload_class != WorkloadClass::Unset) {
        const std::string c = to_string(intent.workload_class);
        if (std::find(p.privileged_classes.begin(), p.privileged_classes.end(), c) != p.privileged_classes.end())
            out.push_back("class " + c);
    }
    for (const auto& [k, v] : intent.tags)
        if (!(k == kw::kTagTenant && !account.empty() && v == account) &&
            std::find(p.privileged_tags.begin(), p.privileged_tags.end(), k) != p.privileged_tags.end())
            out.push_back("tag " + k + "=" + v);
    return out;
}

Decision decide(const Model& m, const SignalsView& v, const AdmissionRequest& r, Pacer* pacer)
{
    std::string what;
    try {
        return Decider(m, v, r, pacer).decide();
    } catch (const std::exception& e) {
        what = e.what();
    } catch (...) {
        what = "unknown exception";
    }
    // Better to admit than to lose a job: select/m2g still gates placement.
    Decision d;
    d.reason = one_line("m2g: internal error: " + what);
    d.message = d.reason;
    return d;
}

// ---- gate -------------------------------------------------------------------

namespace {

// Each rack's heat (mean GPU temperature of its known nodes; a rack with
// a hot or critical node sorts after every other; a feed without thermal
// data leaves every rack at 0) and the nodes down, from the snapshot.
void snapshot_facts(const Model& m, const Signals* s, std::vector<double>& heat, std::vector<int>& down)
{
    heat.assign(m.domains.size(), 0.0);
    down.clear();
    if (!s)
        return;
    for (size_t d = 0; d < m.domains.size() && !s->thermal.empty(); ++d) {
        double sum = 0;
        int known = 0;
        bool hot = false;
        for (int n : m.domains[d].nodes) {
            if (n < 0 || static_cast<size_t>(n) >= s->thermal.size() || !s->thermal[n].known)
                continue;
            sum += s->thermal[n].gpu_temp_c;
            ++known;
            hot = hot || s->thermal[n].state == ThermalState::Hot || s->thermal[n].state == ThermalState::Critical;
        }
        heat[d] = (known ? sum / known : 0.0) + (hot ? 1000.0 : 0.0);
    }
    for (size_t n = 0; n < s->node_down.size(); ++n)
        if (s->node_down[n])
            down.push_back(static_cast<int>(n));
}

GateResult gate_impl(const Model& m, const SignalsView& v, const GateRequest& r, const std::vector<double>& started_kw,
                     const Pacer* pacer, std::vector<uint8_t>& usable, std::vector<double>& heat, GateCache* cache)
{
    const AdmissionPolicy& p = m.admission;
    GateResult g;
    std::vector<std::string> notes;
    std::vector<std::string> racks_over, rows_over;
    auto note = [&](WaitCause wait, std::string text) {
        if (notes.empty())
            g.wait = wait;
        notes.push_back(std::move(text));
    };
    std::string blocked;
    WaitCause blocked_by = WaitCause::None;
    const size_t n_nodes = std::min(usable.size(), m.nodes.size());
    auto clear = [&](int n) {
        if (n >= 0 && static_cast<size_t>(n) < n_nodes && usable[n]) {
            usable[n] = 0;
            ++g.trimmed_nodes;
            return 1;
        }
        return 0;
    };
    const Signals* s = v.snap.get();
    GateCache local;
    GateCache& facts = cache ? *cache : local;
    if (!facts.filled || facts.snap != v.snap) {
        snapshot_facts(m, s, facts.heat, facts.down);
        facts.snap = v.snap;
        facts.filled = true;
    }
    heat = facts.heat;

    if (s) {
        // Maintenance and down nodes, for every job.
        const int64_t to = r.time_limit_s > 0 ? r.now + r.time_limit_s : 0;
        for (const MaintenanceWindow& w : s->maintenance) {
            if (!w.overlaps(r.now, to))
                continue;
            int k = 0;
            for (int n : w.nodes)
                k += clear(n);
            if (k)
                note(WaitCause::Maintenance, "maintenance " + w.id + ": " + std::to_string(k) + " nodes avoided");
        }
        int down = 0;
        for (int n : facts.down)
            down += clear(n);
        if (down)
            note(WaitCause::NodesDown, std::to_string(down) + " nodes down");
    }

    const bool deadline_reached = r.intent.defer == DeferConsent::Until && r.intent.defer_until <= r.now;
    if (is_deferrable(p, r.intent) && !deadline_reached) {
        if (v.hold) {
            blocked = "signals stale/missing, fail-safe defer holds deferrable work";
            blocked_by = WaitCause::Failsafe;
        }
        if (s) {
            // Pre-event ramp: a job still running when an announced event
            // starts is judged against that event's budget.
            const int64_t run_end = r.time_limit_s > 0 ? r.now + r.time_limit_s : 0;
            auto upcoming_note = [](const CurtailmentEvent* e) {
                return e ? " (event " + e->id + " from " + format_utc(e->start) + ")" : std::string();
            };
            const double node_kw = std::max(0, r.gpus_per_node) * power_w_per_gpu(p, r.intent) / 1000.0;
            const double job_kw = node_kw * std::max(0, r.nodes);
            auto started = [&](size_t d) { return d < started_kw.size() ? started_kw[d] : 0.0; };
            // Racks: as many of the job's nodes as the rack's headroom takes.
            for (size_t d = 0; d < m.domains.size(); ++d) {
                const CurtailmentEvent* soon = nullptr;
                const double budget =
                    lowest_budget_kw(m, s, EventScope::Rack, static_cast<int>(d), r.now, run_end, &soon);
                const double draw = d < s->racks.size() ? s->racks[d].draw_kw : -1;
                if (budget < 0 || draw < 0)
                    continue;
                const double head = budget - draw - started(d);
                const long allow =
                    node_kw > 0 ? static_cast<long>(std::floor(std::max(0.0, head) / node_kw)) : LONG_MAX;
                long kept = 0;
                int k = 0;
                for (int n : m.domains[d].nodes) {
                    if (n < 0 || static_cast<size_t>(n) >= n_nodes || !usable[n])
                        continue;
                    if (kept < allow)
                        ++kept;
                    else
                        k += clear(n);
                }
                if (k) {
                    note(WaitCause::RackPower, "rack " + m.domains[d].name + " over budget: " +
                                                   fixed(std::max(0.0, head), 1) + " kW free, job needs " + fixed(node_kw, 1) +
                                                   " kW/node" + upcoming_note(soon));
                    racks_over.push_back(m.domains[d].name);
                }
            }
            // Rows: the whole job must fit in the row's headroom.
            for (size_t f = 0; f < m.fault_domains.size(); ++f) {
                const FaultDomain& fd = m.fault_domains[f];
                if (fd.type != "row")
                    continue;
                const CurtailmentEvent* soon = nullptr;
                const double budget =
                    lowest_budget_kw(m, s, EventScope::Row, static_cast<int>(f), r.now, run_end, &soon);
                const double draw = f < s->rows.size() ? s->rows[f].draw_kw : -1;
                if (budget < 0 || draw < 0)
                    continue;
                std::vector<uint8_t> in_row(m.domains.size(), 0);
                for (int n : fd.nodes)
                    if (n >= 0 && static_cast<size_t>(n) < m.nodes.size() && m.nodes[n].domain != kNone)
                        in_row[m.nodes[n].domain] = 1;
                double row_started = 0;
                for (size_t d = 0; d < in_row.size(); ++d)
                    if (in_row[d])
                        row_started += started(d);
                const double head = budget - draw - row_started;
                if (head >= job_kw)
                    continue;
                int k = 0;
                for (int n : fd.nodes)
                    k += clear(n);
                if (k) {
                    note(WaitCause::RowPower, "row " + fd.name + " over budget: " + fixed(std::max(0.0, head), 1) +
                                                  " kW free, job needs " + fixed(job_kw, 1) + " kW" + upcoming_note(soon));
                    rows_over.push_back(fd.name);
                }
            }
            // The site: the job waits.
            const CurtailmentEvent* soon = nullptr;
            const double budget = lowest_budget_kw(m, s, EventScope::Site, kNone, r.now, run_end, &soon);
            if (blocked.empty() && budget >= 0 && s->site.draw_kw >= 0) {
                double all_started = 0;
                for (size_t d = 0; d < m.domains.size(); ++d)
                    all_started += started(d);
                const double head = budget - s->site.draw_kw - all_started;
                if (head < job_kw) {
                    blocked = "site power: " + fixed(std::max(0.0, head), 1) + " kW free of " + fixed(budget, 1) + " kW" +
                              upcoming_note(soon);
                    blocked_by = WaitCause::SitePower;
                    for (const CurtailmentEvent* e : active_events(s, r.now))
                        if (e->scope == EventScope::Site) {
                            blocked += " (event " + e->id + " " + event_cut_text(*e) + ")";
                            break;
                        }
                }
            }
        }
    }
    // Work m2g may not curtail, under CurtailMode=enforce: a start that
    // would put the site over the budget m2g-curtaild holds waits, at most
    // CurtailStartWaitSec, for curtailment to make room, rather than run
    // over the budget until the controller's next pass (and its meter)
    // sees it. m2g-curtaild reads the wait from the job's annotation. A
    // stale feed's draw is not trusted: the job starts.
    if (blocked.empty() && s && !v.failsafe && !(is_deferrable(p, r.intent) && !deadline_reached) &&
        p.curtail_mode == CurtailMode::Enforce && p.curtail_start_wait_sec > 0 && s->site.draw_kw >= 0) {
        const int64_t since = r.room_since > 0 ? r.room_since : r.now;
        const CurtailmentEvent* ahead = nullptr;
        const double budget =
            p.curtail_lead_sec > 0
                ? lowest_budget_kw(m, s, EventScope::Site, kNone, r.now, r.now + p.curtail_lead_sec + 1, &ahead)
                : effective_budget_kw(m, s, EventScope::Site, kNone, r.now);
        if (budget >= 0 && r.now - since < p.curtail_start_wait_sec) {
            double all_started = 0;
            for (double k : started_kw)
                all_started += k;
            // As the planner counts a start no reading has seen yet.
            bool event = ahead != nullptr;
            for (const CurtailmentEvent* e : active_events(s, r.now))
                event = event || e->scope == EventScope::Site;
            const double job_kw = std::max(0, r.gpus_per_node) * start_w_gpu(p, r.intent, event) / 1000.0 *
                                  std::max(0, r.nodes);
            const double head = budget - s->site.draw_kw - all_started;
            if (head < job_kw) {
                g.room_short_kw = job_kw - std::max(0.0, head);
                g.room_since = since;
                g.room_reason = one_line("site power: " + fixed(std::max(0.0, head), 1) + " kW free of " +
                                         fixed(budget, 1) + " kW, job needs " + fixed(job_kw, 1) +
                                         " kW, m2g-curtaild is making room (it starts by " +
                                         format_utc(since + p.curtail_start_wait_sec) + " regardless)");
            }
        }
    }
    // Pacing during curtailment, for every job: the ramp limit is about all
    // starts (select/m2g books each start when the job begins).
    if (blocked.empty() && s && pacer && pacing_limits(p) && !active_events(s, r.now).empty()) {
        const double job_kw =
            std::max(0, r.gpus_per_node) * power_w_per_gpu(p, r.intent) / 1000.0 * std::max(0, r.nodes);
        if (!pacer->fits_now(p, r.now, r.gpus_per_node * r.nodes, job_kw)) {
            blocked = "pacing: " + std::to_string(pacer->gpus_in_interval(p, r.now)) +
                      " GPUs already started this interval";
            blocked_by = WaitCause::Pacing;
        }
    }
    g.blocked = !blocked.empty();
    if (g.blocked) {
        notes.insert(notes.begin(), blocked);
        g.wait = blocked_by;
    }
    g.reason = one_line(join(notes, ", "));
    if (g.wait == WaitCause::RackPower)
        g.over = std::move(racks_over);
    else if (g.wait == WaitCause::RowPower)
        g.over = std::move(rows_over);
    return g;
}

}  // namespace

GateResult gate(const Model& m, const SignalsView& v, const GateRequest& r, const std::vector<double>& started_kw,
                const Pacer* pacer, std::vector<uint8_t>& usable, std::vector<double>& heat, GateCache* cache)
{
    try {
        return gate_impl(m, v, r, started_kw, pacer, usable, heat, cache);
    } catch (const std::exception& e) {
        GateResult g;
        g.reason = one_line(std::string("m2g: internal error: ") + e.what());
        g.wait = WaitCause::Other;
        return g;
    } catch (...) {
        GateResult g;
        g.reason = "m2g: internal error: unknown exception";
        g.wait = WaitCause::Other;
        return g;
    }
}

AdmissionAnnotation admission_annotation(const Decision& d, const JobIntent& intent, const AdmissionPolicy& ap,
                                         int64_t user_begin, bool monitor)
{
    AdmissionAnnotation a;
    a.monitor = monitor;
    a.verdict = d.verdict;
    a.workload_class = intent.workload_class;
    a.w_gpu = whole_watts(power_w_per_gpu(ap, intent));
    // Readers outside slurmctld (m2g-curtaild) cannot see the job's
    // options: say when the owner's refusal to wait was honoured.
    a.no_defer = !d.deferrable && intent.defer == DeferConsent::No;
    if (d.verdict == Verdict::Defer || d.verdict == Verdict::Pace) {
        a.until = d.begin_time;
        a.cause = d.cause;
    }
    if (d.verdict != Verdict::Admit)
        a.reason = d.reason;
    if (d.verdict != Verdict::Reject && !d.avoid_nodes.empty()) {
        a.avoid_nodes = static_cast<int>(d.avoid_nodes.size());
        a.avoid_for = d.avoid_for;
    }
    a.user_begin = std::max<int64_t>(0, user_begin);
    return a;
}

}  // namespace m2g
