// m2g tools: the forecast's backtest (see backtest.hpp): one truth run, a
// ClusterView of it every `every_s`, make_forecast() on each, scored.
#include "tools/reports/backtest.hpp"

#include <json-c/json.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/base/text.hpp"
#include "tools/reports/report_util.hpp"
#include "tools/reports/status.hpp"

namespace m2g {

using namespace reports;

namespace {

// The forecast clock: trace time t is epoch kEpoch0 + t (2026-01-01T00:00:00Z).
constexpr int64_t kEpoch0 = 1767225600;

uint64_t fnv1a(const std::string& s)
{
    uint64_t h = 14695981039346656037ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

// Sorted copy's quantile q in [0,1] (nearest rank, upper): inf stays inf.
double quantile_of(std::vector<double> v, double q)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) ;
    return v[std::min(v.size() - 1, i > 0 ? i - 1 : 0)];
}

// One method's errors (predicted - actual, s; inf: no prediction) on the
// pairs Slurm estimated, and its absolute errors on those it did not.
struct Errors {
    std::vector<double> signed_s, beyond_abs_s;
};

BacktestStarts score(const std::string& method, const Errors& e)
{
    BacktestStarts s;
    s.method = method;
    s.pairs = static_cast<int>(e.signed_s.size());
    std::vector<double> abs_s;
    double sum = 0;
    int finite = 0, in1 = 0, in10 = 0;
    for (double x : e.signed_s) {
        const double a = std::fabs(x);
        abs_s.push_back(a);
        if (std::isfinite(x)) {
            sum += x;
            ++finite;
        }
        in1 += a <= 60;
        in10 += a <= 600;
    }
    if (s.pairs > 0) {
        s.median_abs_s = quantile_of(abs_s, 0.5);
        s.p90_abs_s = quantile_of(abs_s, 0.9);
        s.within_1m = static_cast<double>(in1) / s.pairs;
        s.within_10m = static_cast<double>(in10) / s.pairs;
    }
    s.mean_signed_s = finite > 0 ? sum / finite : 0;
    s.beyond_pairs = static_cast<int>(e.beyond_abs_s.size());
    if (s.beyond_pairs > 0) {
        s.beyond_median_abs_s = quantile_of(e.beyond_abs_s, 0.5);
        s.beyond_within_10m =
            static_cast<double>(std::count_if(e.beyond_abs_s.begin(), e.beyond_abs_s.end(),
                                              [](double a) { return a <= 600; })) /
            s.beyond_pairs;
    }
    return s;
}

// The truth's site draw (kW) at t: its step series.
double site_kw_at(const SimResult& r, double t)
{
    const auto it = std::upper_bound(r.site_power.begin(), r.site_power.end(), t,
                                     [](double x, const std::pair<double, double>& p) { return x < p.first; });
    return it == r.site_power.begin() ? 0.0 : std::max(0.0, std::prev(it)->second);
}

int64_t epoch_of(double t)
{
    return kEpoch0 + static_cast<int64_t>(std::llround(t));
}

// The truth at `t` as slurmctld would show it: running jobs (start <= t <
// end) on their nodes with their time limits, pending ones (submitted, not
// started) with theirs. Ids are truth indices + 1.
ClusterView view_at(const Model& m, const SimResult& truth, double t, bool measured, int* pending)
{
    ClusterView c;
    c.taken_at = epoch_of(t);
    c.nodes.resize(m.nodes.size());
    for (size_t n = 0; n < m.nodes.size(); ++n) {
        c.nodes[n].known = true;
        c.nodes[n].gpus_total = m.nodes[n].gpus;
    }
    *pending = 0;
    for (size_t i = 0; i < truth.job_results.size(); ++i) {
        const SimJobResult& r = truth.job_results[i];
        if (r.start < 0 || r.submit > t || r.end <= t)
            continue;
        JobView j;
        j.id = static_cast<uint32_t>(i + 1);
        j.gpus = r.gpus;
        j.submit_time = epoch_of(r.submit);
        j.time_limit_s = static_cast<int64_t>(std::llround(r.limit));
        if (const auto cls = workload_class_from(r.workload_class))
            j.intent.workload_class = *cls;
        if (r.start <= t) {
            j.state = JobState::Running;
            j.nodes = static_cast<int>(r.placed.size());
            j.node_idx = r.placed;
            j.start_time = epoch_of(r.start);
            j.end_time = j.start_time + j.time_limit_s;  // Slurm's EndTime
            if (measured)
                j.measured_w_gpu = r.w_gpu;  // what its nodes' agents report now
            for (int n : r.placed)
                c.nodes[static_cast<size_t>(n)].gpus_alloc += r.gpus_per_node;
        } else {
            j.state = JobState::Pending;
            j.slurm_reason = "Resources";
            j.nodes = r.nodes;
            ++*pending;
        }
        c.jobs.push_back(std::move(j));
    }
    return c;
}

}  // namespace

std::vector<double> over_request_ratios(const Trace& swf)
{
    std::vector<double> out;
    for (const TraceJob& j : swf.jobs)
        if (j.limit > 0 && j.duration > 0)
            out.push_back(std::min(1.0, j.duration / j.limit));
    return out;
}

BacktestResult run_backtest(const Model& m, const Trace& trace, const BacktestOptions& o)
{
    const auto wall0 = std::chrono::steady_clock::now();
    if (!(o.every_s > 0))
        throw Error("backtest: --every must be above 0");
    for (double a : o.aheads_s)
        if (!(a > 0) || a > o.forecast.horizon_s)
            throw Error("backtest: a power lead time must be above 0 and within the forecast's horizon");
    BacktestResult res;

    // The truth: the trace with time limits, run once.
    Trace t = trace;
    int modelled = 0;
    for (TraceJob& j : t.jobs) {
        if (j.limit > 0)
            continue;
        if (o.over_request.empty())
            throw Error("job " + j.id +
                        ": no time limit in the trace, and no over-request model (--over-request SWF) to give one");
        const double r = std::max(0.05, o.over_request[fnv1a(j.id) % o.over_request.size()]);
        j.limit = std::max(60.0, std::ceil(std::max(1.0, j.duration) / r / 60.0) * 60.0);
        ++modelled;
    }
    res.limits = modelled == 0 ? "the trace's requested times"
                 : modelled == static_cast<int>(t.jobs.size())
                     ? "run time / r, r drawn from " + o.over_request_source
                     : "the trace's requested times; " + plural(static_cast<size_t>(modelled), "job", "jobs") +
                           " without one: run time / r, r drawn from " +
                           o.over_request_source;
    SimOptions so = o.truth;
    so.time_limits_from_trace = true;
    so.time_limit_factor = 0;
    so.backfill_slurm = true;
    so.record_site_power = true;
    so.curtail_baseline = false;
    const SimResult truth = simulate(m, t, so);
    res.jobs = static_cast<int>(truth.job_results.size());

    // Indices by end and by start, for the history and the naive waits.
    std::vector<size_t> by_end, by_start;
    double first_submit = std::numeric_limits<double>::infinity(), last_submit = 0, ratio_sum = 0;
    int ratio_n = 0;
    for (size_t i = 0; i < truth.job_results.size(); ++i) {
        const SimJobResult& r = truth.job_results[i];
        first_submit = std::min(first_submit, r.submit);
        last_submit = std::max(last_submit, r.submit);
        if (r.start < 0)
            continue;
        by_end.push_back(i);
        by_start.push_back(i);
        if (r.limit > 0) {
            ratio_sum += std::min(1.0, (r.end - r.start) / r.limit);
            ++ratio_n;
        }
    }
    res.truth_mean_ratio = ratio_n ? ratio_sum / ratio_n : 0;
    const auto& jr = truth.job_results;
    std::sort(by_end.begin(), by_end.end(), [&](size_t a, size_t b) { return jr[a].end < jr[b].end; });
    std::sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) { return jr[a].start < jr[b].start; });

    res.from_s = first_submit + o.warmup_s;
    if (o.min_queue > 0) {
        // The first moment from there with at least min_queue jobs waiting.
        std::vector<std::pair<double, int>> steps;  // (time, +1 submit / -1 start)
        for (size_t i : by_start)
            if (jr[i].start > jr[i].submit) {
                steps.emplace_back(jr[i].submit, 1);
                steps.emplace_back(jr[i].start, -1);
            }
        std::sort(steps.begin(), steps.end());
        int q = 0;
        double at = -1;
        for (const auto& [when, d] : steps) {
            q += d;
            if (when >= res.from_s && q >= o.min_queue) {
                at = when;
                break;
            }
        }
        if (at < 0)
            throw Error("backtest: the queue never reaches " + std::to_string(o.min_queue) +
                        " waiting jobs after the warm-up; lower --min-queue or raise --load");
        res.from_s = at;
    }
    res.to_s = o.window_s > 0 ? std::min(last_submit, res.from_s + o.window_s) : last_submit;
    Errors em, e50, es, en;
    int band_in = 0, band_n = 0;
    std::vector<std::vector<double>> perr(o.aheads_s.size());
    std::vector<int> pcov(o.aheads_s.size(), 0);
    double fwall = 0;
    for (double T = res.from_s; T <= res.to_s; T += o.every_s) {
        if (o.max_forecasts > 0 && res.forecasts >= o.max_forecasts)
            break;
        int pending = 0;
        ClusterView c = view_at(m, truth, T, o.measured_power, &pending);
        // slurmctld's backfill is the truth's: the forecast reproduces that plan.
        c.backfill.interval_s = o.truth.bf_interval_s;
        c.backfill.window_s = o.truth.bf_window_s;
        c.backfill.resolution_s = o.truth.bf_resolution_s;
        c.backfill.max_job_test = o.truth.backfill_depth;
        c.backfill.enabled = o.truth.backfill_depth > 0;
        res.pending_max = std::max(res.pending_max, pending);
        const int64_t now = epoch_of(T);

        // What accounting shows (sacct over the last days): the jobs that
        // ended, the last `history` of them, and the submissions of the
        // arrival periods, through the function `m2g forecast --history` uses.
        ForecastOptions fo = o.forecast;
        fo.alternatives_for = 0;
        fo.flex.clear();
        fo.samples_to_end = true;  // m2g-p50 is scored for every pending job, not only those starting in the horizon
        {
            std::vector<JobView> past;
            const auto end = std::upper_bound(by_end.begin(), by_end.end(), T,
                                              [&](double x, size_t i) { return x < jr[i].end; });
            const auto begin = end - std::min<ptrdiff_t>(o.history, end - by_end.begin());
            auto view = [&](size_t i, JobState st) {
                const SimJobResult& r = jr[i];
                JobView v;
                v.id = static_cast<uint32_t>(i + 1);
                v.state = st;
                v.gpus = r.gpus;
                v.nodes = r.nodes;
                v.submit_time = epoch_of(r.submit);
                v.time_limit_s = static_cast<int64_t>(std::llround(r.limit));
                if (st == JobState::Done) {
                    v.start_time = epoch_of(r.start);
                    v.end_time = epoch_of(r.end);
                }
                if (const auto cls = workload_class_from(r.workload_class))
                    v.intent.workload_class = *cls;
                return v;
            };
            std::vector<char> listed(jr.size(), 0);
            for (auto it = begin; it != end; ++it) {
                past.push_back(view(*it, JobState::Done));
                listed[*it] = 1;
            }
            const double back = fo.arrival_period_s * std::max(1, fo.arrival_periods);
            for (size_t i = 0; i < jr.size(); ++i)
                if (!listed[i] && jr[i].submit < T && jr[i].submit >= T - back)
                    past.push_back(view(i, JobState::Pending));  // a submission only
            use_history(fo, past, now, static_cast<size_t>(o.history));
            if (!o.arrivals)
                fo.past_submissions.clear();
        }
        ForecastOptions fs = fo;  // Slurm's: every job to its limit, one run, nothing arrives
        fs.past_submissions.clear();
        fs.runtime_ratios.clear();
        fs.runtime_limits.clear();
        fs.power = nullptr;
        fs.samples = 1;
        fs.horizon_s = fs.step_s;
        const SignalsView none{};
        const Forecast fm = make_forecast(m, c, none, now, fo);
        const Forecast fsl = make_forecast(m, c, none, now, fs);
        fwall += fm.wall_s;
        res.forecast_wall_max_s = std::max(res.forecast_wall_max_s, fm.wall_s);
        ++res.forecasts;

        // Naive: the median wait of the jobs started in the day before.
        std::vector<double> waits;
        {
            const auto end = std::upper_bound(by_start.begin(), by_start.end(), T,
                                              [&](double x, size_t i) { return x < jr[i].start; });
            for (auto it = end; it != by_start.begin();) {
                --it;
                if (jr[*it].start < T - 86400)
                    break;
                waits.push_back(jr[*it].start - jr[*it].submit);
            }
        }
        const double naive_wait = waits.empty() ? 0 : quantile_of(waits, 0.5);

        std::map<uint32_t, const ForecastJob*> slurm_of;
        for (const ForecastJob& j : fsl.jobs)
            slurm_of[j.id] = &j;
        constexpr double kInf = std::numeric_limits<double>::infinity();
        for (const ForecastJob& j : fm.jobs) {
            const SimJobResult& r = jr[j.id - 1];
            const double actual = static_cast<double>(epoch_of(r.start));
            const double mpred = j.start >= 0 ? static_cast<double>(j.start) : kInf;
            const double m50 = j.start_p50 >= 0 ? static_cast<double>(j.start_p50) : kInf;
            const double npred = std::max(static_cast<double>(now), static_cast<double>(epoch_of(r.submit + naive_wait)));
            const auto sit = slurm_of.find(j.id);
            const bool slurm_has = sit != slurm_of.end() && sit->second->start >= 0 &&
                                   static_cast<double>(sit->second->start) <= static_cast<double>(now) + o.bf_window_s;
            if (slurm_has) {
                em.signed_s.push_back(mpred - actual);
                e50.signed_s.push_back(m50 - actual);
                es.signed_s.push_back(static_cast<double>(sit->second->start) - actual);
                en.signed_s.push_back(npred - actual);
            } else {
                em.beyond_abs_s.push_back(std::fabs(mpred - actual));
                e50.beyond_abs_s.push_back(std::fabs(m50 - actual));
                en.beyond_abs_s.push_back(std::fabs(npred - actual));
            }
            if (j.start_p10 >= 0 && j.start_p90 >= 0) {
                ++band_n;
                band_in += actual >= static_cast<double>(j.start_p10) && actual <= static_cast<double>(j.start_p90);
            }
        }
        // Power: the site band at each lead time against the truth's draw then.
        const ForecastBand& site = fm.bands.front();
        for (size_t k = 0; k < o.aheads_s.size(); ++k) {
            const size_t p = static_cast<size_t>(std::llround(o.aheads_s[k] / fm.step_s));
            const double real = site_kw_at(truth, T + o.aheads_s[k]);
            if (p >= site.p50.size() || real <= 0)
                continue;
            perr[k].push_back((site.p50[p] - real) / real * 100.0);
            pcov[k] += site.p10[p] <= real + 1e-9 && real <= site.p90[p] + 1e-9;
        }
    }
    res.starts = {score("m2g", em), score("m2g-p50", e50), score("slurm", es), score("naive", en)};
    res.start_band_coverage = band_n ? static_cast<double>(band_in) / band_n : 0;
    for (size_t k = 0; k < o.aheads_s.size(); ++k) {
        BacktestPower p;
        p.ahead_s = o.aheads_s[k];
        p.n = static_cast<int>(perr[k].size());
        std::vector<double> abs_pct;
        double sum = 0;
        for (double x : perr[k]) {
            abs_pct.push_back(std::fabs(x));
            sum += x;
        }
        if (p.n > 0) {
            p.median_abs_pct = quantile_of(abs_pct, 0.5);
            p.p90_abs_pct = quantile_of(abs_pct, 0.9);
            p.mean_signed_pct = sum / p.n;
            p.coverage = static_cast<double>(pcov[k]) / p.n;
        }
        res.power.push_back(p);
    }
    res.forecast_wall_mean_s = res.forecasts ? fwall / res.forecasts : 0;
    res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return res;
}

std::string format_backtest(const BacktestResult& r, bool json)
{
    if (json) {
        const JsonPtr root(json_object_new_object());
        json_object* o = root.get();
        add(o, "limits", jstr(r.limits));
        add(o, "jobs", json_object_new_int(r.jobs));
        add(o, "from_s", jnum(r.from_s, 0));
        add(o, "to_s", jnum(r.to_s, 0));
        add(o, "forecasts", json_object_new_int(r.forecasts));
        add(o, "pending_max", json_object_new_int(r.pending_max));
        add(o, "truth_mean_ratio", jnum(r.truth_mean_ratio, 4));
        json_object* starts = json_object_new_object();
        for (const BacktestStarts& s : r.starts) {
            json_object* x = json_object_new_object();
            add(x, "pairs", json_object_new_int(s.pairs));
            add(x, "median_abs_s", jnum(s.median_abs_s, 1));
            add(x, "p90_abs_s", jnum(s.p90_abs_s, 1));
            add(x, "mean_signed_s", jnum(s.mean_signed_s, 1));
            add(x, "within_1m", jnum(s.within_1m, 4));
            add(x, "within_10m", jnum(s.within_10m, 4));
            add(x, "beyond_pairs", json_object_new_int(s.beyond_pairs));
            add(x, "beyond_median_abs_s", jnum(s.beyond_median_abs_s, 1));
            add(x, "beyond_within_10m", jnum(s.beyond_within_10m, 4));
            add(starts, s.method.c_str(), x);
        }
        add(o, "starts", starts);
        add(o, "start_band_coverage", jnum(r.start_band_coverage, 4));
        json_object* power = json_object_new_array();
        for (const BacktestPower& p : r.power) {
            json_object* x = json_object_new_object();
            add(x, "ahead_s", jnum(p.ahead_s, 0));
            add(x, "n", json_object_new_int(p.n));
            add(x, "median_abs_pct", jnum(p.median_abs_pct, 2));
            add(x, "p90_abs_pct", jnum(p.p90_abs_pct, 2));
            add(x, "mean_signed_pct", jnum(p.mean_signed_pct, 2));
            add(x, "coverage", jnum(p.coverage, 4));
            json_object_array_add(power, x);
        }
        add(o, "power", power);
        add(o, "forecast_wall_mean_s", jnum(r.forecast_wall_mean_s, 4));
        add(o, "forecast_wall_max_s", jnum(r.forecast_wall_max_s, 4));
        add(o, "wall_s", jnum(r.wall_s, 2));
        return json_text(o);
    }
    std::ostringstream out;
    char line[256];
    out << r.forecasts << " forecasts over " << r.jobs << " jobs (time limits: " << r.limits
        << "; mean run time / limit " << r.truth_mean_ratio << "); longest queue " << r.pending_max << "\n\n";
    std::snprintf(line, sizeof line, "%-6s %8s %10s %10s %8s %8s %12s\n", "START", "PAIRS", "MEDIAN", "P90", "<=1MIN",
                  "<=10MIN", "BEYOND_BF");
    out << line;
    for (const BacktestStarts& s : r.starts) {
        std::snprintf(line, sizeof line, "%-6s %8d %9.0fs %9.0fs %7.1f%% %7.1f%% %12d\n", s.method.c_str(), s.pairs,
                      s.median_abs_s, s.p90_abs_s, 100 * s.within_1m, 100 * s.within_10m, s.beyond_pairs);
        out << line;
    }
    std::snprintf(line, sizeof line, "m2g's P10-P90 start covers %.1f%% of actual starts\n\n",
                  100 * r.start_band_coverage);
    out << line;
    for (const BacktestPower& p : r.power) {
        std::snprintf(line, sizeof line,
                      "site power %4.0f h ahead: P50 error median %.2f%%, p90 %.2f%%, mean %+.2f%%; P10-P90 covers "
                      "%.1f%% (%d forecasts)\n",
                      p.ahead_s / 3600, p.median_abs_pct, p.p90_abs_pct, p.mean_signed_pct, 100 * p.coverage, p.n);
        out << line;
    }
    std::snprintf(line, sizeof line, "forecast wall time: mean %.3f s, max %.3f s; backtest %.1f s\n",
                  r.forecast_wall_mean_s, r.forecast_wall_max_s, r.wall_s);
    out << line;
    return out.str();
}

}  // namespace m2g
