// m2g tools: the forecast (see forecast.hpp and doc/forecast.md): the live
// state as a simulator trace (running jobs on their nodes, pending jobs in
// Slurm's priority order with their intent), one run on the class
// estimates for the starts, `samples` runs on drawn power for the bands.
#include "tools/reports/forecast.hpp"

#include <json-c/json.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>

#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"
#include "core/base/keys.hpp"
#include "core/base/text.hpp"
#include "core/base/time.hpp"
#include "core/job/annotation.hpp"
#include "tools/reports/report_util.hpp"

namespace m2g {

using namespace reports;

namespace {

const char* const kAlternatives[] = {"strict:nvlink", "prefer:nvlink", "any"};

// Job ids of the arrivals (ForecastOptions::past_submissions): above any
// Slurm job id in use (MaxJobId is at most 0x03ff0000).
constexpr uint32_t kArrivalId = 0x80000000u;

// The --m2g-topology a job is placed with: what select/m2g recorded
// (policy=), else its partition's default.
std::string topology_of(const Model& m, const JobView& j)
{
    const std::optional<PlacementAnnotation> pl = read_annotation(j.admin_comment).placement;
    if (pl && !pl->policy.empty())
        return pl->policy;
    return m.policy_for(j.partition).default_topology;
}

// Slurm's queue order: priority, then submit time, then job id
// (slurmctld/job_scheduler.c sort_job_queue2(), within one partition tier).
std::vector<const JobView*> pending_in_order(const ClusterView& c)
{
    std::vector<const JobView*> out;
    for (const JobView& j : c.jobs)
        if (j.state == JobState::Pending)
            out.push_back(&j);
    std::stable_sort(out.begin(), out.end(), [](const JobView* a, const JobView* b) {
        if (a->priority != b->priority)
            return a->priority > b->priority;
        if (a->submit_time != b->submit_time)
            return a->submit_time < b->submit_time;
        return a->id < b->id;
    });
    return out;
}

struct Built {
    Trace trace;
    std::vector<const JobView*> pending;  // forecast, in order
    int running = 0;
    int arrivals = 0;  // replayed past submissions
    std::vector<std::string> notes;
};

// The trace of the cluster now. `override_id`'s topology is `override_topology`.
// Run time as a share of the time limit (ForecastOptions::runtime_ratios,
// ascending): for a job that has run `ran` of its limit (0 pending), the
// median of the ratios above that (sample 0) or one drawn with sample `s`'s
// stream for job `id`; 1 (its limit) when it has outrun every one.
double ratio_for(const std::vector<double>& sorted, double ran, int sample, uint32_t id)
{
    const auto lo = std::upper_bound(sorted.begin(), sorted.end(), ran);
    const size_t n = static_cast<size_t>(sorted.end() - lo);
    if (n == 0)
        return 1;
    if (sample == 0)
        return n % 2 ? lo[n / 2] : (lo[n / 2 - 1] + lo[n / 2]) / 2;
    // splitmix64 of (sample, id): independent of order and of other jobs.
    uint64_t z = (static_cast<uint64_t>(sample) << 32 | id) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo[static_cast<size_t>(z % n)];
}

// The run time / limit ratios to draw a job's from (ForecastOptions::
// runtime_limits): those of the past jobs whose limits fell in the job's
// log2 bin of seconds, widened a bin each side at a time (up to 3) until
// there are kNear; all of them when that is not enough or the limits are
// not known. Sorted, as ratio_for() wants them; one list per bin.
class RatioHistory {
  public:
    explicit RatioHistory(const ForecastOptions& o) : all_(o.runtime_ratios)
    {
        std::sort(all_.begin(), all_.end());
        if (o.runtime_limits.size() != o.runtime_ratios.size())
            return;
        for (size_t i = 0; i < o.runtime_ratios.size(); ++i)
            by_bin_[bin(o.runtime_limits[i])].push_back(o.runtime_ratios[i]);
    }
    bool empty() const { return all_.empty(); }
    const std::vector<double>& near(double limit)
    {
        if (by_bin_.empty())
            return all_;
        const int b = bin(limit);
        auto [it, added] = near_.try_emplace(b);
        std::vector<double>& v = it->second;
        if (added) {
            auto take = [&](int k) {
                if (auto f = by_bin_.find(k); f != by_bin_.end())
                    v.insert(v.end(), f->second.begin(), f->second.end());
            };
            take(b);
            for (int d = 1; d <= 3 && v.size() < kNear; ++d) {
                take(b - d);
                take(b + d);
            }
            if (v.size() < kNear)
                v = all_;
            std::sort(v.begin(), v.end());
        }
        return v;
    }

  private:
    static constexpr size_t kNear = 50;
    static int bin(double limit_s) { return std::ilogb(std::max(limit_s, 1.0)); }
    std::vector<double> all_;
    std::map<int, std::vector<double>> by_bin_, near_;
};

// The trace of the cluster now. `override_id`'s topology is
// `override_topology`. Each job's limit is what is left of its time limit;
// its duration that (sample 0 without ratios: Slurm's assumption) or, with
// o.runtime_ratios, its ratio's share of the limit (ratio_for), drawn
// among the ratios of jobs with limits near its own (RatioHistory).
Built build_trace(const Model& m, const ClusterView& c, int64_t now, const ForecastOptions& o, uint32_t override_id,
                  const std::string& override_topology, int sample = 0)
{
    RatioHistory ratios(o);
    Built b;
    b.trace.format = "forecast";
    const double t0 = static_cast<double>(now);
    std::vector<int> used(m.nodes.size(), 0);
    int no_gpus = 0, outside = 0, squeezed = 0;
    for (const JobView& j : c.jobs) {
        if (j.state != JobState::Running && j.state != JobState::Completing)
            continue;
        if (j.gpus <= 0) {
            ++no_gpus;
            continue;
        }
        if (j.node_idx.empty()) {
            ++outside;
            continue;
        }
        const int n = static_cast<int>(j.node_idx.size());
        int per_node = (j.gpus + n - 1) / n;
        for (int x : j.node_idx)
            per_node = std::min(per_node, m.nodes[static_cast<size_t>(x)].gpus - used[static_cast<size_t>(x)]);
        if (per_node < (j.gpus + n - 1) / n)
            ++squeezed;
        if (per_node <= 0)
            continue;
        for (int x : j.node_idx)
            used[static_cast<size_t>(x)] += per_node;
        double end = j.end_time > now ? static_cast<double>(j.end_time)
                     : j.time_limit_s > 0 && j.start_time > 0
                         ? static_cast<double>(j.start_time + j.time_limit_s)
                         : t0 + o.unlimited_s;
        if (j.state == JobState::Completing || end <= t0)
            end = t0 + 1;  // ending now (completing, or past its limit)
        TraceJob t;
        t.id = std::to_string(j.id);
        t.submit = t0;
        t.limit = end - t0;
        t.duration = t.limit;
        if (!ratios.empty() && j.state == JobState::Running && j.start_time > 0 && end > t0 + 1) {
            const double limit = end - static_cast<double>(j.start_time), ran = t0 - static_cast<double>(j.start_time);
            if (limit > 0) {
                const double r = ratio_for(ratios.near(limit), ran / limit, sample, j.id);
                t.duration = std::clamp(r * limit - ran, 1.0, t.limit);
            }
        }
        t.gpus = per_node * n;
        t.running_on = j.node_idx;
        if (j.measured_w_gpu > 0)
            t.w_gpu = j.measured_w_gpu;
        JobIntent in = j.intent;
        apply_option(in, kw::kOptTopology, topology_of(m, j), now);
        t.intent = in;
        b.trace.jobs.push_back(std::move(t));
        ++b.running;
    }
    int pending_no_gpus = 0;
    for (const JobView* j : pending_in_order(c)) {
        if (j->gpus <= 0) {
            ++pending_no_gpus;
            continue;
        }
        TraceJob t;
        t.id = std::to_string(j->id);
        t.submit = std::max(t0, static_cast<double>(j->begin_time));
        t.limit = j->time_limit_s > 0 ? static_cast<double>(j->time_limit_s) : o.unlimited_s;
        t.duration = ratios.empty() ? t.limit
                                    : std::clamp(ratio_for(ratios.near(t.limit), 0, sample, j->id) * t.limit, 1.0, t.limit);
        t.gpus = j->gpus;
        t.nodes = j->nodes;
        JobIntent in = j->intent;
        apply_option(in, kw::kOptTopology, j->id == override_id ? override_topology : topology_of(m, *j), now);
        t.intent = in;
        b.trace.jobs.push_back(std::move(t));
        b.pending.push_back(j);
    }
    // The arrivals: the past's submissions, one period back (or more, for a sample).
    if (!o.past_submissions.empty()) {
        int64_t earliest = now;
        for (const auto& p : o.past_submissions)
            earliest = std::min(earliest, p.submit);
        const int64_t period = static_cast<int64_t>(std::llround(o.arrival_period_s));
        int64_t k = sample == 0 ? 1 : 1 + (sample - 1) % std::max(1, o.arrival_periods);
        while (k > 1 && earliest > now - k * period)
            --k;
        const int64_t from = now - k * period, to = from + static_cast<int64_t>(std::llround(o.horizon_s));
        const std::string topo = m.policy_for("").default_topology;
        for (size_t i = 0; i < o.past_submissions.size(); ++i) {
            const auto& p = o.past_submissions[i];
            if (p.submit < from || p.submit >= to || p.gpus <= 0)
                continue;
            const uint32_t id = kArrivalId + static_cast<uint32_t>(i);
            TraceJob t;
            t.id = std::to_string(id);
            t.submit = std::max(t0, static_cast<double>(p.submit + k * period));
            t.limit = p.time_limit_s > 0 ? static_cast<double>(p.time_limit_s) : o.unlimited_s;
            t.duration = ratios.empty() ? t.limit
                                        : std::clamp(ratio_for(ratios.near(t.limit), 0, sample, id) * t.limit, 1.0, t.limit);
            t.gpus = p.gpus;
            t.nodes = p.nodes;
            JobIntent in = p.intent;
            apply_option(in, kw::kOptTopology, topo, now);
            t.intent = in;
            b.trace.jobs.push_back(std::move(t));
            ++b.arrivals;
        }
    }
    if (no_gpus)
        b.notes.push_back(std::to_string(no_gpus) + " running jobs hold no GPUs: left out (their nodes' GPUs count as free)");
    if (outside)
        b.notes.push_back(std::to_string(outside) + " running jobs are on nodes m2g.conf does not declare: left out");
    if (squeezed)
        b.notes.push_back(std::to_string(squeezed) +
                          " running jobs hold more GPUs than their nodes have free in m2g.conf: counted with fewer");
    if (pending_no_gpus)
        b.notes.push_back(std::to_string(pending_no_gpus) + " pending jobs ask for no GPUs: not forecast");
    return b;
}

// The timeline the runs read: the feed in force (its events, maintenance,
// budgets, health) from `now`, with the nodes Slurm has down or drained.
Signals timeline_of(const Model& m, const ClusterView& c, const SignalsView& v, int64_t now)
{
    Signals s = v.snap ? *v.snap
                       : parse_signals("{\"schema\": \"m2g.signals/v1\", \"generated_at\": \"" + format_utc(now) +
                                           "\", \"source\": \"m2g forecast\"}",
                                       "(none)", m, now);
    s.generated_at = now;
    s.node_down.resize(m.nodes.size(), 0);
    for (size_t n = 0; n < m.nodes.size() && n < c.nodes.size(); ++n)
        if (!c.nodes[n].known || c.nodes[n].down || c.nodes[n].drained)
            s.node_down[n] = 1;
    return s;
}

SimOptions sim_options(const Signals& tl, const BackfillConf& bf, int64_t now)
{
    SimOptions so;
    so.policy = SimPolicy::M2G;
    so.keep_order = true;
    so.origin = static_cast<double>(now);
    so.timeline = &tl;
    // Slurm's backfill plan (backfill.c) as slurmctld is configured; with
    // none (sched/builtin, bf_interval=-1) only the main scheduler starts jobs.
    so.backfill_slurm = true;
    so.backfill_depth = bf.enabled ? bf.max_job_test : 0;
    so.bf_interval_s = bf.interval_s;
    so.bf_window_s = bf.window_s;
    so.bf_resolution_s = bf.resolution_s;
    so.time_limits_from_trace = true;  // it plans with time limits, whatever jobs run for
    so.curtail_baseline = false;
    so.record_site_power = true;
    return so;
}

struct Run {
    SimResult r;
    std::map<std::string, size_t> index;  // job id -> job_results index
};

// fn(0) .. fn(n - 1) on up to `threads` threads, each index once, taken
// in order by whichever thread is free (so a long fn(0) is started first
// and the rest share the other threads); the first exception (by index)
// is rethrown once all have finished.
template <class Fn>
void each_index(size_t n, int threads, const Fn& fn)
{
    const size_t t = std::min(n, static_cast<size_t>(std::max(1, threads)));
    if (t <= 1) {
        for (size_t i = 0; i < n; ++i)
            fn(i);
        return;
    }
    std::vector<std::exception_ptr> errors(n);
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    pool.reserve(t);
    for (size_t w = 0; w < t; ++w)
        pool.emplace_back([&] {
            for (size_t i = next++; i < n; i = next++) {
                try {
                    fn(i);
                } catch (...) {
                    errors[i] = std::current_exception();
                }
            }
        });
    for (std::thread& th : pool)
        th.join();
    for (const std::exception_ptr& e : errors)
        if (e)
            std::rethrow_exception(e);
}

Run run_once(const Model& m, const Trace& t, const SimOptions& so)
{
    Run run;
    run.r = simulate(m, t, so);
    for (size_t i = 0; i < run.r.job_results.size(); ++i)
        run.index.emplace(run.r.job_results[i].id, i);
    return run;
}

std::string nodes_of(const Model& m, const SimJobResult& j)
{
    std::vector<std::string> names;
    for (int n : j.placed)
        names.push_back(m.nodes[static_cast<size_t>(n)].name);
    return hostlist_compress(names);
}

// The q-quantile (q in [0,1]) of the distribution sorted `v` was drawn
// from, for a band a new outcome should fall in: Hyndman and Fan's
// definition 6 (position q(n + 1) among the n values, interpolated, held
// at the ends), whose P10-P90 holds a new draw 80% of the time. The usual
// definition 7 (position 1 + q(n - 1)) draws the band in: with 20 runs its
// P10-P90 holds a new draw (18.1 - 2.9) / 21 = 72% of the time. The median
// is the same under both.
double quantile(const std::vector<double>& v, double q)
{
    if (v.empty())
        return 0;
    const double n = static_cast<double>(v.size());
    const double pos = std::clamp(q * (n + 1), 1.0, n) - 1;  // 0-based
    const size_t i = static_cast<size_t>(pos);
    const double f = pos - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

// kW per point of the grid: the site from the run's recorded series,
// rows and racks from its jobs (start, end, nodes, draw).
struct Draws {
    std::vector<double> site;
    std::vector<std::vector<double>> rows, racks;  // [index][point]
};

Draws draws_of(const Model& m, const SimResult& r, const std::vector<int>& row_ids, double t0, double step, int points)
{
    Draws d;
    d.site.assign(static_cast<size_t>(points), 0.0);
    d.rows.assign(row_ids.size(), std::vector<double>(static_cast<size_t>(points), 0.0));
    d.racks.assign(m.domains.size(), std::vector<double>(static_cast<size_t>(points), 0.0));
    size_t k = 0;
    for (int p = 0; p < points; ++p) {
        const double t = t0 + step * p;
        while (k < r.site_power.size() && r.site_power[k].first <= t)
            ++k;
        // (The run's running sum may end a hair below zero.)
        d.site[static_cast<size_t>(p)] = k > 0 ? std::max(0.0, r.site_power[k - 1].second) : 0.0;
    }
    std::vector<int> row_of_fd(m.fault_domains.size(), -1);
    for (size_t i = 0; i < row_ids.size(); ++i)
        row_of_fd[static_cast<size_t>(row_ids[i])] = static_cast<int>(i);
    for (const SimJobResult& j : r.job_results) {
        if (j.start < 0)
            continue;
        const double kw_node = j.w_gpu * j.gpus_per_node / 1000.0;
        const int p0 = std::max(0, static_cast<int>(std::ceil((j.start - t0) / step)));
        for (int p = p0; p < points; ++p) {
            const double t = t0 + step * p;
            if (j.end >= 0 && t >= j.end)
                break;
            for (int n : j.placed) {
                const Node& node = m.nodes[static_cast<size_t>(n)];
                if (node.domain != kNone)
                    d.racks[static_cast<size_t>(node.domain)][static_cast<size_t>(p)] += kw_node;
                for (int fd : node.fault_domains)
                    if (row_of_fd[static_cast<size_t>(fd)] >= 0)
                        d.rows[static_cast<size_t>(row_of_fd[static_cast<size_t>(fd)])][static_cast<size_t>(p)] +=
                            kw_node;
            }
        }
    }
    return d;
}

ForecastBand band(const std::string& scope, const std::string& name, const std::vector<const std::vector<double>*>& runs,
                  int points)
{
    ForecastBand b;
    b.scope = scope;
    b.name = name;
    for (int p = 0; p < points; ++p) {
        std::vector<double> v;
        for (const std::vector<double>* r : runs)
            v.push_back((*r)[static_cast<size_t>(p)]);
        std::sort(v.begin(), v.end());
        b.p10.push_back(quantile(v, 0.1));
        b.p50.push_back(quantile(v, 0.5));
        b.p90.push_back(quantile(v, 0.9));
    }
    return b;
}

double site_at(const SimResult& r, double t)
{
    double kw = 0;
    for (const auto& [at, v] : r.site_power) {
        if (at > t)
            break;
        kw = v;
    }
    return std::max(0.0, kw);
}

// Site GPU energy (kWh) in [a, b) of the run's step series.
double site_energy_kwh(const SimResult& r, double a, double b)
{
    double e = 0;
    for (size_t i = 0; i < r.site_power.size(); ++i) {
        const double t0 = std::max(a, r.site_power[i].first);
        const double t1 = std::min(b, i + 1 < r.site_power.size() ? r.site_power[i + 1].first : b);
        if (t1 > t0)
            e += std::max(0.0, r.site_power[i].second) * (t1 - t0) / 3600.0;
    }
    return e;
}

FlexOffer flex_offer(const Model& m, const Trace& trace, const Signals& tl, const BackfillConf& bf, const Run& base,
                     const FlexRequest& q, int64_t now, double step)
{
    FlexOffer x;
    x.req = q;
    x.end = q.start + static_cast<int64_t>(std::llround(q.duration_s));
    x.curtail_mode = to_string(m.admission.curtail_mode);
    const double t0 = static_cast<double>(q.start), t1 = static_cast<double>(x.end);
    x.draw_at_start_kw = site_at(base.r, t0);
    x.target_kw = (1 - q.depth_pct / 100.0) * x.draw_at_start_kw;
    // The event: the site budget (or, with none, one that never binds)
    // less what brings it to the target while the event lasts.
    Signals ev = tl;
    const double budget = tl.site.budget_kw > 0 ? tl.site.budget_kw
                          : m.site_power_budget_kw > 0 ? m.site_power_budget_kw
                                                       : 1e6;
    ev.site.budget_kw = budget;
    CurtailmentEvent e;
    e.id = "m2g-flex";
    e.start = q.start;
    e.end = x.end;
    e.scope = EventScope::Site;
    e.scope_name = "site";
    e.curtail_kw = std::max(0.001, budget - x.target_kw);
    ev.events.push_back(e);
    const Run run = run_once(m, trace, sim_options(ev, bf, now));

    std::vector<double> at{t0 + std::min(60.0, q.duration_s / 2)};
    for (double t = t0 + step; t < t1; t += step)
        at.push_back(t);
    x.met = true;
    x.shed_min_kw = std::numeric_limits<double>::infinity();
    for (double t : at) {
        const double with = site_at(run.r, t);
        x.shed_min_kw = std::min(x.shed_min_kw, site_at(base.r, t) - with);
        if (with > x.target_kw + 1e-6)
            x.met = false;
    }
    x.energy_shifted_kwh = site_energy_kwh(base.r, t0, t1) - site_energy_kwh(run.r, t0, t1);
    for (double a = t0; a < t1 - 1e-6; a += step) {
        const double b = std::min(t1, a + step), h = (b - a) / 3600.0;
        const double base_kw = site_energy_kwh(base.r, a, b) / h;
        x.baseline_kw.push_back(base_kw);
        x.shed_kw.push_back(base_kw - site_energy_kwh(run.r, a, b) / h);
    }
    x.shed_mean_kw = x.energy_shifted_kwh / (q.duration_s / 3600.0);
    for (const SimJobResult& j : run.r.job_results) {
        const auto it = base.index.find(j.id);
        if (it == base.index.end())
            continue;
        const SimJobResult& b = base.r.job_results[it->second];
        const uint32_t id = static_cast<uint32_t>(std::stoul(j.id));
        if (id >= kArrivalId)  // expected, not submitted: its delay counts, it has no id to act on
            ;
        else if (j.caps > 0)
            x.capped.push_back(id);
        if (id < kArrivalId && j.suspends > 0)
            x.suspended.push_back(id);
        if (id < kArrivalId && j.requeues > 0)
            x.requeued.push_back(id);
        if (b.end < 0 || j.end < 0)
            continue;
        const double later = j.end - b.end;
        if (later <= 1)
            continue;
        ++x.jobs_delayed;
        const double gpu_h = j.gpus * later / 3600.0;
        (j.deferrable ? x.deferrable_delay_gpu_h : x.nondeferrable_delay_gpu_h) += gpu_h;
        const auto cls = workload_class_from(j.workload_class);
        x.delay_cost += gpu_h * m.price_per_gpu_hour[static_cast<size_t>(cls ? *cls : WorkloadClass::Unset)];
    }
    x.priced = m.energy_price_per_kwh > 0 ||
               std::any_of(m.price_per_gpu_hour.begin(), m.price_per_gpu_hour.end(), [](double p) { return p > 0; });
    x.currency = m.energy_currency;
    x.energy_shifted_value = x.energy_shifted_kwh * m.energy_price_per_kwh;
    x.breakeven_per_kwh = x.energy_shifted_kwh > 1e-9 ? x.delay_cost / x.energy_shifted_kwh : -1;
    return x;
}

}  // namespace

void use_history(ForecastOptions& o, const std::vector<JobView>& past, int64_t now, size_t max_ratios)
{
    std::vector<std::tuple<int64_t, double, double>> ended;  // (end, ratio, limit)
    const int64_t back = static_cast<int64_t>(std::llround(o.arrival_period_s)) * std::max(1, o.arrival_periods);
    for (const JobView& j : past) {
        if (j.state == JobState::Done && j.start_time > 0 && j.end_time > j.start_time && j.end_time <= now &&
            j.time_limit_s > 0)
            ended.emplace_back(j.end_time,
                               std::clamp(static_cast<double>(j.end_time - j.start_time) /
                                              static_cast<double>(j.time_limit_s),
                                          1e-6, 1.0),
                               static_cast<double>(j.time_limit_s));
        if (j.gpus > 0 && j.submit_time < now && j.submit_time >= now - back) {
            ForecastOptions::PastSubmission p;
            p.submit = j.submit_time;
            p.gpus = j.gpus;
            p.nodes = j.nodes;
            p.time_limit_s = j.time_limit_s;
            p.intent = j.intent;
            o.past_submissions.push_back(p);
        }
    }
    std::sort(ended.begin(), ended.end());
    for (size_t i = ended.size() > max_ratios ? ended.size() - max_ratios : 0; i < ended.size(); ++i)
    {
        o.runtime_ratios.push_back(std::get<1>(ended[i]));
        o.runtime_limits.push_back(std::get<2>(ended[i]));
    }
}

FlexRequest parse_flex(std::string_view spec, int64_t start)
{
    const std::string s(spec);
    auto bad = [&](const std::string& why) {
        return ParseError("--flex '" + s + "': " + why + "; accepted: DEPTH%:DURATION, e.g. 25%:3h (depth above 0, " +
                          "at most 100; duration N followed by s, m, h or d)");
    };
    const auto colon = s.find(':');
    if (colon == std::string::npos)
        throw bad("no ':' between depth and duration");
    std::string depth = s.substr(0, colon), dur = s.substr(colon + 1);
    if (!depth.empty() && depth.back() == '%')
        depth.pop_back();
    FlexRequest q;
    q.start = start;
    char* e = nullptr;
    q.depth_pct = std::strtod(depth.c_str(), &e);
    if (depth.empty() || *e != '\0' || !(q.depth_pct > 0 && q.depth_pct <= 100))
        throw bad("depth '" + depth + "' is not a percent above 0, at most 100");
    const double n = std::strtod(dur.c_str(), &e);
    const std::string unit = e ? std::string(e) : "";
    const double mult = unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" || unit.empty() ? 3600 : unit == "d" ? 86400 : 0;
    if (dur.empty() || mult == 0 || !(n > 0))
        throw bad("duration '" + dur + "' is not a positive number of s, m, h or d");
    q.duration_s = n * mult;
    return q;
}

std::vector<FlexRequest> flex_curve(int64_t start)
{
    std::vector<FlexRequest> out;
    for (double hours : {1.0, 3.0, 10.0})
        for (double depth = 10; depth <= 50; depth += 10)
            out.push_back(FlexRequest{depth, hours * 3600, start});
    return out;
}

Forecast make_forecast(const Model& m, const ClusterView& c, const SignalsView& v, int64_t now,
                       const ForecastOptions& o)
{
    const auto wall0 = std::chrono::steady_clock::now();
    if (!(o.step_s > 0) || !(o.horizon_s >= o.step_s))
        throw Error("forecast: the step must be above 0 and the horizon at least one step");
    if (o.samples < 1)
        throw Error("forecast: --samples must be 1 or more");
    Forecast f;
    f.made_at = now;
    f.step_s = o.step_s;
    const Signals tl = timeline_of(m, c, v, now);
    const SimOptions base_opts = sim_options(tl, c.backfill, now);
    f.backfill = c.backfill;
    Built b = build_trace(m, c, now, o, 0, "");
    f.running = b.running;
    f.arrivals = b.arrivals;
    f.notes = b.notes;
    // The starts run, then the sample runs, seeds 1..samples: drawn
    // per-GPU power, drawn run times (each its own trace), or both. The
    // starts run goes to the end (every job's start) and so takes longest:
    // it comes first, and the samples share the other threads meanwhile.
    Run base;
    std::vector<Run> samples;
    f.runtime_history = static_cast<int>(o.runtime_ratios.size());
    f.power_source = o.power ? o.power->source : "class estimates (admission's power per GPU)";
    if (o.power || !o.runtime_ratios.empty() || !o.past_submissions.empty()) {
        f.samples = o.samples;
        samples.resize(static_cast<size_t>(o.samples));
        // The bands need the runs up to the horizon only.
        const double stop = o.samples_to_end ? -1.0 : static_cast<double>(now) + o.horizon_s;
        if (stop >= 0)
            f.bands_until = now + static_cast<int64_t>(std::llround(o.horizon_s));
        each_index(samples.size() + 1, o.threads, [&](size_t k) {
            if (k == 0) {
                base = run_once(m, b.trace, base_opts);
                return;
            }
            const size_t i = k - 1;
            const int s = static_cast<int>(k);
            SimOptions so = base_opts;
            so.power = o.power;
            so.seed = static_cast<uint64_t>(s);
            so.stop_at = stop;
            if (o.runtime_ratios.empty() && o.past_submissions.empty()) {
                samples[i] = run_once(m, b.trace, so);
            } else {
                const Built bs = build_trace(m, c, now, o, 0, "", s);
                samples[i] = run_once(m, bs.trace, so);
            }
        });
    } else {
        f.samples = 1;
        base = run_once(m, b.trace, base_opts);
    }
    const std::vector<const Run*> power_runs = [&] {
        std::vector<const Run*> out;
        if (samples.empty())
            out.push_back(&base);
        for (const Run& r : samples)
            out.push_back(&r);
        return out;
    }();

    for (const JobView* j : b.pending) {
        const std::string id = std::to_string(j->id);
        const SimJobResult& r = base.r.job_results[base.index.at(id)];
        ForecastJob fj;
        fj.id = j->id;
        fj.topology = topology_of(m, *j);
        fj.workload_class = r.workload_class;
        fj.nodes = r.nodes;
        fj.gpus = r.gpus;
        if (r.start >= 0) {
            fj.start = static_cast<int64_t>(std::ceil(r.start));
            fj.end = static_cast<int64_t>(std::ceil(r.end));
            fj.domains = r.domains;
            fj.nodes_list = nodes_of(m, r);
        }
        std::vector<double> starts;
        constexpr double kNever = std::numeric_limits<double>::infinity();
        for (const Run* run : power_runs) {
            const SimJobResult& x = run->r.job_results[run->index.at(id)];
            starts.push_back(x.start >= 0 ? x.start : kNever);
        }
        std::sort(starts.begin(), starts.end());
        const double s10 = starts[static_cast<size_t>(std::floor(0.1 * static_cast<double>(starts.size() - 1)))];
        const double s90 = starts[static_cast<size_t>(std::ceil(0.9 * static_cast<double>(starts.size() - 1)))];
        const double s50 = starts[(starts.size() - 1) / 2];
        fj.start_p50 = std::isfinite(s50) ? static_cast<int64_t>(std::ceil(s50)) : -1;
        fj.start_p10 = std::isfinite(s10) ? static_cast<int64_t>(std::ceil(s10)) : -1;
        fj.start_p90 = std::isfinite(s90) ? static_cast<int64_t>(std::ceil(s90)) : -1;
        f.jobs.push_back(std::move(fj));
    }

    if (o.alternatives_for != 0) {
        auto it = std::find_if(f.jobs.begin(), f.jobs.end(),
                               [&](const ForecastJob& j) { return j.id == o.alternatives_for; });
        if (it == f.jobs.end())
            throw NotFoundError("job " + std::to_string(o.alternatives_for) +
                                ": not a pending job with GPUs; alternatives are forecast for pending jobs only");
        std::vector<const char*> topos;
        for (const char* topo : kAlternatives)
            if (it->topology != topo)
                topos.push_back(topo);
        it->alternatives.resize(topos.size());
        each_index(topos.size(), o.threads, [&](size_t i) {
            const Built alt = build_trace(m, c, now, o, o.alternatives_for, topos[i]);
            SimOptions so = base_opts;
            so.stop_after_start = std::to_string(o.alternatives_for);  // its start and place are all it asks
            const Run run = run_once(m, alt.trace, so);
            const SimJobResult& r = run.r.job_results[run.index.at(std::to_string(o.alternatives_for))];
            ForecastAlternative& a = it->alternatives[i];
            a.topology = topos[i];
            if (r.start >= 0) {
                a.start = static_cast<int64_t>(std::ceil(r.start));
                a.domains = r.domains;
                a.nodes = nodes_of(m, r);
            }
        });
    }

    for (const FlexRequest& q : o.flex)
        if (q.start < now)
            throw Error("--flex: the event must start now or later");
    f.flex.resize(o.flex.size());
    each_index(o.flex.size(), o.threads, [&](size_t i) {
        f.flex[i] = flex_offer(m, b.trace, tl, c.backfill, base, o.flex[i], now, o.step_s);
    });

    // The bands: site, rows (fault domains of Type=row), racks.
    const int points = static_cast<int>(std::floor(o.horizon_s / o.step_s)) + 1;
    std::vector<int> row_ids;
    for (size_t i = 0; i < m.fault_domains.size(); ++i)
        if (m.fault_domains[i].type == "row")
            row_ids.push_back(static_cast<int>(i));
    std::vector<Draws> draws;
    for (const Run* run : power_runs)
        draws.push_back(draws_of(m, run->r, row_ids, static_cast<double>(now), o.step_s, points));
    auto budgets = [&](EventScope scope, int index) {
        std::vector<double> out;
        for (int p = 0; p < points; ++p)
            out.push_back(effective_budget_kw(m, &tl, scope, index,
                                              now + static_cast<int64_t>(std::llround(o.step_s * p))));
        return out;
    };
    {
        std::vector<const std::vector<double>*> rs;
        for (const Draws& d : draws)
            rs.push_back(&d.site);
        f.bands.push_back(band("site", "site", rs, points));
        f.bands.back().budget_kw = budgets(EventScope::Site, 0);
    }
    for (size_t i = 0; i < row_ids.size(); ++i) {
        std::vector<const std::vector<double>*> rs;
        for (const Draws& d : draws)
            rs.push_back(&d.rows[i]);
        f.bands.push_back(band("row", m.fault_domains[static_cast<size_t>(row_ids[i])].name, rs, points));
        f.bands.back().budget_kw = budgets(EventScope::Row, row_ids[i]);
    }
    for (size_t d = 0; d < m.domains.size(); ++d) {
        std::vector<const std::vector<double>*> rs;
        for (const Draws& x : draws)
            rs.push_back(&x.racks[d]);
        f.bands.push_back(band("rack", m.domains[d].name, rs, points));
        f.bands.back().budget_kw = budgets(EventScope::Rack, static_cast<int>(d));
    }
    if (v.failsafe)
        f.notes.push_back("the signals feed is " + std::string(to_string(v.state)) +
                          ": the forecast uses its last good snapshot's events and budgets, not the fail-safe");
    if (o.runtime_ratios.empty())
        f.notes.push_back("jobs run for their time limit (what Slurm's backfill assumes; most end sooner), so starts "
                          "are late rather than early");
    else
        f.notes.push_back("run times: the time limit x run time / time limit of " +
                          plural(o.runtime_ratios.size(), "job", "jobs") +
                          " that ended before (the median for the starts, drawn for the samples)");
    if (o.past_submissions.empty())
        f.notes.push_back("no job is expected to be submitted: the power bands show the queue draining");
    else
        f.notes.push_back(plural(static_cast<size_t>(b.arrivals), "job", "jobs") + " expected to be submitted within " +
                          elapsed(o.horizon_s) +
                          ": the submissions of the period before, replayed (the samples: of earlier periods)");
    if (!c.backfill.enabled)
        f.notes.push_back("slurmctld runs no backfill (SchedulerType=sched/builtin or bf_interval=-1): jobs start "
                          "in priority order only");
    for (const std::string& p : c.backfill.problems)
        f.notes.push_back(p);
    f.notes.push_back("GPU power of jobs only (idle GPUs and hosts are not counted)");
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return f;
}

namespace {

std::string when(int64_t t, int64_t now)
{
    if (t < 0)
        return "never";
    if (t <= now)
        return "now";
    return format_utc(t) + " (in " + about(static_cast<double>(t - now)) + ")";
}

json_object* band_json(const ForecastBand& b)
{
    json_object* o = json_object_new_object();
    add(o, "scope", jstr(b.scope));
    add(o, "name", jstr(b.name));
    for (const auto& [key, v] : {std::pair<const char*, const std::vector<double>*>{"p10_kw", &b.p10},
                                 {"p50_kw", &b.p50},
                                 {"p90_kw", &b.p90},
                                 {"budget_kw", &b.budget_kw}}) {
        json_object* a = json_object_new_array();
        for (double x : *v)
            json_object_array_add(a, x < 0 ? nullptr : jnum(x, 2));
        add(o, key, a);
    }
    return o;
}

}  // namespace

std::string format_forecast(const Model& m, const Forecast& f, bool json)
{
    (void)m;
    if (json) {
        const JsonPtr root(json_object_new_object());
        json_object* o = root.get();
        add(o, "made_at", jstr(format_utc(f.made_at)));
        add(o, "made_at_epoch", json_object_new_int64(f.made_at));
        add(o, "step_s", jnum(f.step_s, 0));
        add(o, "samples", json_object_new_int(f.samples));
        // start_p10/p50/p90 null: not started by then in that share of the
        // sample runs (null here: they ran until every job had started).
        add(o, "bands_until", f.bands_until < 0 ? nullptr : json_object_new_int64(f.bands_until));
        add(o, "power_source", jstr(f.power_source));
        add(o, "runtime_history", json_object_new_int(f.runtime_history));
        add(o, "arrivals", json_object_new_int(f.arrivals));
        add(o, "running", json_object_new_int(f.running));
        {
            json_object* bf = json_object_new_object();  // Slurm's backfill, as the runs reproduced it
            add(bf, "enabled", json_object_new_boolean(f.backfill.enabled));
            add(bf, "interval_s", jnum(f.backfill.interval_s, 0));
            add(bf, "window_s", jnum(f.backfill.window_s, 0));
            add(bf, "resolution_s", jnum(f.backfill.resolution_s, 0));
            add(bf, "max_job_test", json_object_new_int(f.backfill.max_job_test));
            add(o, "backfill", bf);
        }
        json_object* jobs = json_object_new_array();
        for (const ForecastJob& j : f.jobs) {
            json_object* x = json_object_new_object();
            add(x, "job", json_object_new_int64(j.id));
            add(x, "topology", jstr(j.topology));
            add(x, "class", jstr(j.workload_class));
            add(x, "nodes", json_object_new_int(j.nodes));
            add(x, "gpus", json_object_new_int(j.gpus));
            add(x, "start", j.start < 0 ? nullptr : json_object_new_int64(j.start));
            add(x, "start_in_s", j.start < 0 ? nullptr : json_object_new_int64(std::max<int64_t>(0, j.start - f.made_at)));
            add(x, "start_p10", j.start_p10 < 0 ? nullptr : json_object_new_int64(j.start_p10));
            add(x, "start_p90", j.start_p90 < 0 ? nullptr : json_object_new_int64(j.start_p90));
            add(x, "start_p50", j.start_p50 < 0 ? nullptr : json_object_new_int64(j.start_p50));
            add(x, "end", j.end < 0 ? nullptr : json_object_new_int64(j.end));
            add(x, "domains", json_object_new_int(j.domains));
            add(x, "nodelist", jstr(j.nodes_list));
            if (!j.alternatives.empty()) {
                json_object* alts = json_object_new_array();
                for (const ForecastAlternative& a : j.alternatives) {
                    json_object* y = json_object_new_object();
                    add(y, "topology", jstr(a.topology));
                    add(y, "start", a.start < 0 ? nullptr : json_object_new_int64(a.start));
                    add(y, "start_in_s",
                        a.start < 0 ? nullptr : json_object_new_int64(std::max<int64_t>(0, a.start - f.made_at)));
                    add(y, "domains", json_object_new_int(a.domains));
                    add(y, "nodelist", jstr(a.nodes));
                    json_object_array_add(alts, y);
                }
                add(x, "alternatives", alts);
            }
            json_object_array_add(jobs, x);
        }
        add(o, "jobs", jobs);
        json_object* bands = json_object_new_array();
        for (const ForecastBand& b : f.bands)
            json_object_array_add(bands, band_json(b));
        add(o, "power", bands);
        json_object* flex = json_object_new_array();
        for (const FlexOffer& x : f.flex) {
            json_object* y = json_object_new_object();
            add(y, "depth_pct", jnum(x.req.depth_pct, 1));
            add(y, "duration_s", jnum(x.req.duration_s, 0));
            add(y, "start", json_object_new_int64(x.req.start));
            add(y, "end", json_object_new_int64(x.end));
            add(y, "draw_at_start_kw", jnum(x.draw_at_start_kw, 2));
            add(y, "target_kw", jnum(x.target_kw, 2));
            add(y, "shed_min_kw", jnum(x.shed_min_kw, 2));
            add(y, "shed_mean_kw", jnum(x.shed_mean_kw, 2));
            add(y, "met", json_object_new_boolean(x.met));
            add(y, "energy_shifted_kwh", jnum(x.energy_shifted_kwh, 2));
            add(y, "deferrable_delay_gpu_h", jnum(x.deferrable_delay_gpu_h, 2));
            add(y, "nondeferrable_delay_gpu_h", jnum(x.nondeferrable_delay_gpu_h, 2));
            add(y, "jobs_delayed", json_object_new_int(x.jobs_delayed));
            for (const auto& [key, ids] : {std::pair<const char*, const std::vector<uint32_t>*>{"capped", &x.capped},
                                           {"suspended", &x.suspended},
                                           {"requeued", &x.requeued}}) {
                json_object* a = json_object_new_array();
                for (uint32_t id : *ids)
                    json_object_array_add(a, json_object_new_int64(id));
                add(y, key, a);
            }
            add(y, "curtail_mode", jstr(x.curtail_mode));
            if (x.priced) {
                json_object* money = json_object_new_object();
                add(money, "currency", jstr(x.currency));
                add(money, "delay_cost", jnum(x.delay_cost, 2));
                add(money, "energy_shifted_value", jnum(x.energy_shifted_value, 2));
                add(money, "breakeven_per_kwh", x.breakeven_per_kwh < 0 ? nullptr : jnum(x.breakeven_per_kwh, 4));
                add(y, "money", money);
            } else {
                add(y, "money", nullptr);
            }
            json_object_array_add(flex, y);
        }
        add(o, "flexibility", flex);
        json_object* notes = json_object_new_array();
        for (const std::string& n : f.notes)
            json_object_array_add(notes, jstr(n));
        add(o, "notes", notes);
        add(o, "wall_s", jnum(f.wall_s, 3));
        return json_text(o);
    }
    std::ostringstream out;
    out << "forecast at " << format_utc(f.made_at) << ": " << f.running << " jobs running, " << f.jobs.size()
        << " pending (in Slurm's priority order); power: " << f.power_source;
    if (f.samples > 1)
        out << ", " << f.samples << " runs";
    out << "; run times: "
        << (f.runtime_history > 0 ? "drawn from " + std::to_string(f.runtime_history) + " jobs' run time / limit"
                                  : std::string("time limits"));
    out << "\n\n";
    if (f.jobs.empty())
        out << "no pending jobs with GPUs\n";
    else {
        char line[512];
        std::snprintf(line, sizeof line, "%-8s %5s %5s %-14s %-9s %s\n", "JOBID", "NODES", "GPUS", "TOPOLOGY",
                      "DOMAINS", "START (P10-P90 over the runs), WHERE");
        out << line;
        for (const ForecastJob& j : f.jobs) {
            std::string start = when(j.start, f.made_at);
            // A band the sample runs did not reach (they stop at the
            // horizon): "after" when they stopped.
            auto hhmm = [&](int64_t t) {
                return t >= 0 ? format_utc(t).substr(11, 5)
                              : f.bands_until >= 0 ? "after " + format_utc(f.bands_until).substr(11, 5) : "never";
            };
            if (j.start >= 0 && f.samples > 1 && j.start_p10 < 0 && j.start_p90 < 0 && f.bands_until >= 0)
                start += " [" + hhmm(-1) + "]";
            else if (j.start >= 0 && f.samples > 1 && (j.start_p10 != j.start || j.start_p90 != j.start))
                start += " [" + hhmm(j.start_p10) + "-" + hhmm(j.start_p90) + "]";
            if (j.start >= 0)
                start += " on " + j.nodes_list;
            std::snprintf(line, sizeof line, "%-8u %5d %5d %-14s %-9d ", j.id, j.nodes, j.gpus, j.topology.c_str(),
                          j.domains);
            out << line << start << "\n";
            for (const ForecastAlternative& a : j.alternatives)
                out << "           with " << a.topology << ": " << when(a.start, f.made_at)
                    << (a.start >= 0 ? " on " + a.nodes + " (" + std::to_string(a.domains) + " domains)" : "") << "\n";
        }
    }
    const ForecastBand& site = f.bands.front();
    out << "\nsite GPU power, kW (P10 / P50 / P90), hourly:\n";
    const int per_hour = std::max(1, static_cast<int>(std::llround(3600.0 / f.step_s)));
    for (size_t p = 0; p < site.p50.size(); p += static_cast<size_t>(per_hour)) {
        const int64_t t = f.made_at + static_cast<int64_t>(std::llround(f.step_s * static_cast<double>(p)));
        out << "  " << format_utc(t).substr(11, 5) << "  " << kw1(site.p10[p]) << " / " << kw1(site.p50[p]) << " / "
            << kw1(site.p90[p]);
        if (site.budget_kw[p] >= 0)
            out << "  (budget " << kw1(site.budget_kw[p]) << ")";
        out << "\n";
    }
    if (!f.flex.empty())
        out << "\nflexibility (shed the site's GPU draw; CurtailMode=" << f.flex.front().curtail_mode << "):\n";
    for (const FlexOffer& x : f.flex) {
        out << "  " << num(x.req.depth_pct) << "% for " << num(x.req.duration_s / 3600.0) << " h from "
            << format_utc(x.req.start).substr(11, 5) << ": under " << kw1(x.target_kw) << " of "
            << kw1(x.draw_at_start_kw) << " kW " << (x.met ? "met" : "NOT met") << "; shed min "
            << kw1(x.shed_min_kw) << ", mean " << kw1(x.shed_mean_kw) << " kW, " << kw1(x.energy_shifted_kwh)
            << " kWh shifted; delayed: " << kw1(x.deferrable_delay_gpu_h) << " deferrable GPU-h, "
            << kw1(x.nondeferrable_delay_gpu_h) << " non-deferrable GPU-h (" << x.jobs_delayed << " jobs); "
            << x.capped.size() << " capped, " << x.suspended.size() << " suspended, " << x.requeued.size()
            << " requeued";
        if (x.priced) {
            out << "; delay costs " << fmt("%.2f", x.delay_cost) << " " << x.currency << ", energy shifted worth "
                << fmt("%.2f", x.energy_shifted_value) << " " << x.currency;
            if (x.breakeven_per_kwh >= 0)
                out << "; break-even " << num(x.breakeven_per_kwh) << " " << x.currency << "/kWh shed";
        }
        out << "\n";
    }
    if (!f.notes.empty()) {
        out << "\nnotes:\n";
        for (const std::string& n : f.notes)
            out << "  - " << n << "\n";
    }
    return out.str();
}

}  // namespace m2g
