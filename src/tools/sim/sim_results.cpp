// m2g tools: the simulator's results (see simulator.hpp and sim.hpp): the
// metrics of a finished run, the comparison with the same run under
// CurtailMode=off, and `m2g simulate`'s output formats.
#include "tools/sim/simulator.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/base/hostlist.hpp"

namespace m2g {
namespace sim {

namespace {

// Fewest buckets of these sizes that hold `need` (sizes descending).
int fewest(const std::vector<int>& sizes_desc, int need)
{
    int used = 0;
    for (int s : sizes_desc) {
        if (need <= 0 || s <= 0)
            break;
        need -= s;
        ++used;
    }
    return need > 0 ? 0 : used;
}

double percentile(std::vector<double>& v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

SimStats stats_of(const std::string& name, const std::vector<const SimJobResult*>& jobs)
{
    SimStats s;
    s.name = name;
    s.jobs = static_cast<int>(jobs.size());
    if (jobs.empty())
        return s;
    std::vector<double> d, c;
    for (const SimJobResult* j : jobs) {
        d.push_back(j->start - j->submit);
        c.push_back(j->end - j->submit);
    }
    s.delay_mean = std::accumulate(d.begin(), d.end(), 0.0) / static_cast<double>(d.size());
    s.completion_mean = std::accumulate(c.begin(), c.end(), 0.0) / static_cast<double>(c.size());
    s.delay_p95 = percentile(d, 0.95);
    s.delay_p99 = percentile(d, 0.99);
    s.completion_p95 = percentile(c, 0.95);
    s.completion_p99 = percentile(c, 0.99);
    return s;
}

}  // namespace

SimResult Simulator::run()
{
    start_pinned();
    run_events();
    collect_results();
    if (curtail && opts.curtail_baseline)
        compare_with_baseline();
    return r;
}

void Simulator::collect_results()
{
    std::vector<const SimJobResult*> done, by_class[3];
    double leaf_ratio_sum = 0, span_sum = 0, gpu_seconds = 0;
    int leaf_jobs = 0, contained = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        SimJobResult& j = jobs[i];
        r.deferred += j.deferred;
        if (j.start < 0) {
            j.end = -1;
            continue;
        }
        if (curtail && (live_pos[i] >= 0 || j.end < 0)) {
            // Still suspended, or requeued and never started again, when
            // nothing more could happen.
            if (live_pos[i] >= 0)
                advance(static_cast<int>(i), last_t);
            r.energy_kwh += energy_ws[i] / 3.6e6;
            j.end = -1;
            ++r.unfinished;
            continue;
        }
        done.push_back(&j);
        r.backfilled += j.backfilled;
        gpu_seconds += static_cast<double>(j.gpus) * duration[i];
        // A job a preemptor evicted ran its lost work and restarts again.
        const double ran = pre_len.empty() ? duration[i] : pre_ran[i] + pre_len[i];
        r.energy_kwh += curtail ? energy_ws[i] / 3.6e6 : j.w_gpu * j.gpus * ran / 3.6e6;
        std::vector<int> groups, leaves;
        for (int n : j.placed) {
            groups.push_back(m.nodes[n].domain != kNone ? m.nodes[n].domain : -1 - n);
            if (node_leaf[n] != kNone)
                leaves.push_back(node_leaf[n]);
        }
        for (auto* v : {&groups, &leaves}) {
            std::sort(v->begin(), v->end());
            v->erase(std::unique(v->begin(), v->end()), v->end());
        }
        j.domains = static_cast<int>(groups.size());
        j.leaves = static_cast<int>(leaves.size());
        j.domain_lb = fewest(group_sizes, j.nodes);
        j.leaf_lb = fewest(leaf_sizes, j.nodes);
        if (j.domain_lb == 1) {
            ++r.fit_one_domain;
            contained += j.domains == 1;
        } else if (j.domain_lb > 1) {
            ++r.multi_domain_jobs;
            span_sum += static_cast<double>(j.domains) / j.domain_lb;
        }
        if (j.leaf_lb > 0 && j.leaves > 0) {
            ++leaf_jobs;
            leaf_ratio_sum += static_cast<double>(j.leaves) / j.leaf_lb;
        }
        by_class[j.nodes <= 1 ? 0 : j.nodes <= max_group ? 1 : 2].push_back(&j);
    }
    r.jobs = static_cast<int>(done.size());
    if (opts.preempt_pct > 0) {
        r.preempt_pct = opts.preempt_pct;
        std::vector<double> pd;
        int held = 0;
        for (const SimJobResult* j : done) {
            r.preempt_lost_gpu_s += j->lost_gpu_s;
            if (!j->preemptor)
                continue;
            ++r.preemptors;
            pd.push_back(j->start - j->submit);
            r.preempting_starts += j->preempted_start;
            r.victims += j->victims;
            r.wasted_evictions += j->wasted;
            r.evicted_gpu_s += j->evicted_gpu_s;
            if (j->domain_lb == 1) {
                ++r.preemptor_one_domain;
                held += j->domains == 1;
            }
        }
        r.preemptor_containment = r.preemptor_one_domain ? static_cast<double>(held) / r.preemptor_one_domain : 1.0;
        if (!pd.empty()) {
            double sum = 0;
            for (double d : pd)
                sum += d;
            r.preemptor_delay_mean = sum / static_cast<double>(pd.size());
            r.preemptor_delay_p95 = percentile(pd, 0.95);
        }
    }
    r.containment = r.fit_one_domain ? static_cast<double>(contained) / r.fit_one_domain : 1.0;
    r.span_ratio = r.multi_domain_jobs ? span_sum / r.multi_domain_jobs : 1.0;
    r.leaf_span_ratio = leaf_jobs ? leaf_ratio_sum / leaf_jobs : 1.0;
    r.makespan_s = done.empty() ? 0 : last_end - first_submit;
    // Utilisation and stranding are averaged over the busy window: from
    // the submission at the 1% point (the load window's start) to the last
    // start or submission, whichever is later. Before it the trace ramps
    // up; after it nothing waits and the cluster only drains. A window of
    // no length (every job at one instant) falls back to the makespan.
    double win_a = jobs.empty() ? 0 : jobs[w0].submit, win_b = jobs.empty() ? 0 : jobs.back().submit;
    for (const SimJobResult* j : done)
        win_b = std::max(win_b, j->start);
    if (win_b <= win_a) {
        win_a = first_submit;
        win_b = last_end;
    }
    r.window_s = win_b - win_a;
    if (r.window_s > 0) {
        double stranded = 0, gpus_busy = 0, nodes_busy = 0;
        for (const Segment& sg : segments) {
            const double w = std::min(sg.t1, win_b) - std::max(sg.t0, win_a);
            if (w <= 0)
                continue;
            stranded += sg.stranded * w;
            gpus_busy += sg.busy_gpus * w;
            nodes_busy += sg.busy_nodes * w;
        }
        r.stranded_gpus = stranded / (static_cast<double>(total_gpus) * r.window_s);
        r.utilisation = gpus_busy / (static_cast<double>(total_gpus) * r.window_s);
        r.node_utilisation = nodes_busy / (static_cast<double>(nnodes) * r.window_s);
    }
    if (r.makespan_s > 0) {
        r.utilisation_makespan = gpu_seconds / (static_cast<double>(total_gpus) * r.makespan_s);
        r.mean_site_kw = power_integral / r.makespan_s;
    }
    r.cap_violation_s = over_integral;
    r.all = stats_of("all", done);
    const char* names[3] = {"node", "domain", "multi-domain"};
    for (int c = 0; c < 3; ++c)
        r.classes.push_back(stats_of(names[c], by_class[c]));
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    r.sim_jobs_per_s = r.wall_s > 0 ? static_cast<double>(jobs.size()) / r.wall_s : 0;
    if (curtail) {
        for (size_t i = 0; i < jobs.size(); ++i)
            if (!jobs[i].deferrable && jobs[i].end >= 0)
                r.nondeferrable_curtailed_s += jobs[i].capped_s + jobs[i].suspended_s;
    }
}

void Simulator::compare_with_baseline()
{
    // The same run with CurtailMode=off: what curtailment changed.
    Model off = m;
    off.admission.curtail_mode = CurtailMode::Off;
    SimOptions o = opts;
    o.curtail_baseline = false;
    const SimResult b = simulate(off, trace, o);
    r.baseline = true;
    r.baseline_energy_kwh = b.energy_kwh;
    r.baseline_energy_in_events_kwh = b.energy_in_events_kwh;
    r.baseline_nondeferrable_work_in_events_gpu_s = b.nondeferrable_work_in_events_gpu_s;
    r.baseline_nondeferrable_work_window_gpu_s = b.nondeferrable_work_window_gpu_s;
    r.nondeferrable_loss = b.nondeferrable_work_window_gpu_s > 0
                               ? 1 - r.nondeferrable_work_window_gpu_s / b.nondeferrable_work_window_gpu_s
                               : 0;
    r.nondeferrable_event_loss =
        b.nondeferrable_work_in_events_gpu_s > 0
            ? 1 - r.nondeferrable_work_in_events_gpu_s / b.nondeferrable_work_in_events_gpu_s
            : 0;
    r.energy_shifted_kwh = b.energy_in_events_kwh - r.energy_in_events_kwh;
    std::vector<double> stretch, delay;
    for (size_t i = 0; i < jobs.size() && i < b.job_results.size(); ++i) {
        const SimJobResult& j = jobs[i];
        const SimJobResult& j0 = b.job_results[i];
        if (j.start < 0 || j.end < 0 || j0.start < 0 || j0.end < 0)
            continue;
        const double c = j.end - j.submit, c0 = j0.end - j0.submit;
        if (!j.deferrable) {
            ++r.nondeferrable_jobs;
            r.nondeferrable_work_gpu_s += static_cast<double>(j.gpus) * duration[i];
            r.nondeferrable_delay_gpu_s += static_cast<double>(j.gpus) * (c - c0);
        } else {
            stretch.push_back(c0 > 0 ? c / c0 : 1.0);
            delay.push_back(c - c0);
        }
    }
    r.deferrable_jobs = static_cast<int>(stretch.size());
    if (!stretch.empty()) {
        r.deferrable_stretch_mean =
            std::accumulate(stretch.begin(), stretch.end(), 0.0) / static_cast<double>(stretch.size());
        r.deferrable_delay_mean_s =
            std::accumulate(delay.begin(), delay.end(), 0.0) / static_cast<double>(delay.size());
        r.deferrable_stretch_p95 = percentile(stretch, 0.95);
        r.deferrable_delay_p95_s = percentile(delay, 0.95);
    }
}

}  // namespace sim

std::string format_sim_result(const SimResult& r, bool json)
{
    std::string o;
    if (json) {
        auto kv = [&](const char* k, const std::string& v) {
            o += (o.size() > 1 ? "," : "") + std::string("\"") + k + "\":" + v;
        };
        o = "{";
        kv("policy", "\"" + r.policy + "\"");
        kv("jobs", std::to_string(r.jobs));
        kv("rejected", std::to_string(r.rejected));
        kv("backfilled", std::to_string(r.backfilled));
        kv("gpus_per_node", std::to_string(r.gpus_per_node));
        kv("scale_gpus", std::to_string(r.scale_gpus));
        kv("load", sim::num(r.load));
        kv("offered_load", sim::num(r.offered_load));
        kv("arrival_factor", sim::num(r.arrival_factor));
        kv("seed", std::to_string(r.seed));
        kv("containment", sim::num(r.containment));
        kv("fit_one_domain", std::to_string(r.fit_one_domain));
        kv("span_ratio", sim::num(r.span_ratio));
        kv("multi_domain_jobs", std::to_string(r.multi_domain_jobs));
        kv("leaf_span_ratio", sim::num(r.leaf_span_ratio));
        kv("stranded_gpus", sim::num(r.stranded_gpus));
        kv("utilisation", sim::num(r.utilisation));
        kv("node_utilisation", sim::num(r.node_utilisation));
        kv("utilisation_makespan", sim::num(r.utilisation_makespan));
        kv("window_s", sim::num(r.window_s));
        kv("makespan_s", sim::num(r.makespan_s));
        kv("queue_delay_mean_s", sim::num(r.all.delay_mean));
        kv("queue_delay_p95_s", sim::num(r.all.delay_p95));
        kv("queue_delay_p99_s", sim::num(r.all.delay_p99));
        kv("completion_mean_s", sim::num(r.all.completion_mean));
        kv("completion_p95_s", sim::num(r.all.completion_p95));
        kv("completion_p99_s", sim::num(r.all.completion_p99));
        std::string cls = "[";
        for (const SimStats& s : r.classes) {
            cls += (cls.size() > 1 ? "," : "") + std::string("{\"class\":\"") + s.name + "\",\"jobs\":" +
                   std::to_string(s.jobs) + ",\"queue_delay_mean_s\":" + sim::num(s.delay_mean) +
                   ",\"queue_delay_p95_s\":" + sim::num(s.delay_p95) + ",\"queue_delay_p99_s\":" + sim::num(s.delay_p99) +
                   ",\"completion_mean_s\":" + sim::num(s.completion_mean) + ",\"completion_p95_s\":" +
                   sim::num(s.completion_p95) + ",\"completion_p99_s\":" + sim::num(s.completion_p99) + "}";
        }
        kv("size_classes", cls + "]");
        kv("unusable_nodes", std::to_string(r.unusable_nodes));
        kv("deferred", std::to_string(r.deferred));
        kv("admission_rejected", std::to_string(r.admission_rejected));
        kv("energy_kwh", sim::num(r.energy_kwh));
        kv("peak_site_kw", sim::num(r.peak_site_kw));
        kv("mean_site_kw", sim::num(r.mean_site_kw));
        kv("cap_violations", std::to_string(r.cap_violations));
        kv("cap_violation_s", sim::num(r.cap_violation_s));
        kv("cap_peak_over_kw", sim::num(r.cap_peak_over_kw));
        kv("unfinished", std::to_string(r.unfinished));
        kv("energy_in_events_kwh", sim::num(r.energy_in_events_kwh));
        kv("nondeferrable_work_window_gpu_s", sim::num(r.nondeferrable_work_window_gpu_s));
        kv("nondeferrable_work_in_events_gpu_s", sim::num(r.nondeferrable_work_in_events_gpu_s));
        std::string ev = "[";
        for (const SimEventResult& e : r.events)
            ev += (ev.size() > 1 ? "," : "") + std::string("{\"id\":\"") + e.id + "\",\"scope\":\"" + e.scope +
                  "\",\"start_s\":" + sim::num_t(e.start) + ",\"end_s\":" + sim::num_t(e.end) + ",\"announced_s\":" +
                  sim::num_t(e.announced) + ",\"budget_kw\":" + sim::num(e.budget_kw) + ",\"draw_at_start_kw\":" +
                  sim::num(e.draw_at_start_kw) + ",\"peak_draw_kw\":" + sim::num(e.peak_draw_kw) + ",\"peak_over_kw\":" +
                  sim::num(e.peak_over_kw) + ",\"response_s\":" + sim::num(e.response_s) + ",\"over_s\":" + sim::num(e.over_s) +
                  ",\"over_late_s\":" + sim::num(e.over_late_s) + ",\"energy_kwh\":" + sim::num(e.energy_kwh) + "}";
        kv("events", ev + "]");
        std::string c = "{\"mode\":\"" + r.curtail_mode + "\",\"actuation_delay_s\":" + sim::num(r.actuation_delay_s) +
                        ",\"meter_lag_s\":" + sim::num(r.meter_lag_s) + ",\"plans\":" + std::to_string(r.curtail_plans) + ",\"plans_skipped\":" +
                        std::to_string(r.curtail_plans_skipped) + ",\"caps\":" + std::to_string(r.curtail_caps) +
                        ",\"uncaps\":" + std::to_string(r.curtail_uncaps) + ",\"suspends\":" +
                        std::to_string(r.curtail_suspends) + ",\"resumes\":" + std::to_string(r.curtail_resumes) +
                        ",\"signals\":" + std::to_string(r.curtail_signals) + ",\"requeues\":" +
                        std::to_string(r.curtail_requeues) + ",\"cap_failures\":" + std::to_string(r.curtail_cap_failures) +
                        ",\"requeue_lost_gpu_s\":" + sim::num(r.requeue_lost_gpu_s) +
                        ",\"nondeferrable_curtailed_s\":" + sim::num(r.nondeferrable_curtailed_s) +
                        ",\"baseline\":" + (r.baseline ? "true" : "false");
        if (r.baseline)
            c += ",\"nondeferrable_jobs\":" + std::to_string(r.nondeferrable_jobs) + ",\"nondeferrable_work_gpu_s\":" +
                 sim::num(r.nondeferrable_work_gpu_s) + ",\"nondeferrable_delay_gpu_s\":" + sim::num(r.nondeferrable_delay_gpu_s) +
                 ",\"baseline_nondeferrable_work_window_gpu_s\":" + sim::num(r.baseline_nondeferrable_work_window_gpu_s) +
                 ",\"baseline_nondeferrable_work_in_events_gpu_s\":" +
                 sim::num(r.baseline_nondeferrable_work_in_events_gpu_s) + ",\"nondeferrable_loss\":" +
                 sim::num(r.nondeferrable_loss) + ",\"nondeferrable_event_loss\":" + sim::num(r.nondeferrable_event_loss) +
                 ",\"deferrable_jobs\":" +
                 std::to_string(r.deferrable_jobs) + ",\"deferrable_stretch_mean\":" +
                 sim::num(r.deferrable_stretch_mean) + ",\"deferrable_stretch_p95\":" + sim::num(r.deferrable_stretch_p95) +
                 ",\"deferrable_delay_mean_s\":" + sim::num(r.deferrable_delay_mean_s) + ",\"deferrable_delay_p95_s\":" +
                 sim::num(r.deferrable_delay_p95_s) + ",\"baseline_energy_kwh\":" + sim::num(r.baseline_energy_kwh) +
                 ",\"baseline_energy_in_events_kwh\":" + sim::num(r.baseline_energy_in_events_kwh) +
                 ",\"energy_shifted_kwh\":" + sim::num(r.energy_shifted_kwh);
        kv("curtailment", c + "}");
        if (r.preempt_pct > 0)
            kv("preemption",
               "{\"share_pct\":" + sim::num(r.preempt_pct) + ",\"preemptors\":" + std::to_string(r.preemptors) +
                   ",\"preemptor_one_domain\":" + std::to_string(r.preemptor_one_domain) +
                   ",\"preemptor_containment\":" + sim::num(r.preemptor_containment) +
                   ",\"preemptor_delay_mean_s\":" + sim::num(r.preemptor_delay_mean) +
                   ",\"preemptor_delay_p95_s\":" + sim::num(r.preemptor_delay_p95) +
                   ",\"preempting_starts\":" + std::to_string(r.preempting_starts) +
                   ",\"victims\":" + std::to_string(r.victims) +
                   ",\"wasted_evictions\":" + std::to_string(r.wasted_evictions) +
                   ",\"evicted_gpu_s\":" + sim::num(r.evicted_gpu_s) + ",\"lost_gpu_s\":" +
                   sim::num(r.preempt_lost_gpu_s) + ",\"paired\":{\"preemptions\":" +
                   std::to_string(r.paired_preemptions) + ",\"block_none\":" + std::to_string(r.paired_block_none) +
                   ",\"m2g_victims\":" + std::to_string(r.paired_m2g_victims) + ",\"block_victims\":" +
                   std::to_string(r.paired_block_victims) + ",\"m2g_evicted_gpu_s\":" +
                   sim::num(r.paired_m2g_evicted_gpu_s) + ",\"block_evicted_gpu_s\":" +
                   sim::num(r.paired_block_evicted_gpu_s) + ",\"m2g_lost_gpu_s\":" +
                   sim::num(r.paired_m2g_lost_gpu_s) + ",\"block_lost_gpu_s\":" +
                   sim::num(r.paired_block_lost_gpu_s) + ",\"block_wasted\":" +
                   std::to_string(r.paired_block_wasted) + "}}");
        kv("wall_s", sim::num(r.wall_s));
        kv("sim_jobs_per_s", sim::num(r.sim_jobs_per_s));
        return o + "}\n";
    }
    auto line = [&](const char* k, const std::string& v) { o += std::string(k) + ": " + v + "\n"; };
    line("policy", r.policy);
    line("jobs", std::to_string(r.jobs) + " started, " + std::to_string(r.rejected) + " rejected (never fit), " +
                     std::to_string(r.backfilled) + " backfilled");
    line("jobs as", std::to_string(r.gpus_per_node) + " GPUs per node, GPUs x" + std::to_string(r.scale_gpus) +
                        ", offered load " + sim::num(r.offered_load) + " (arrivals x" + sim::num(r.arrival_factor) + ")");
    line("containment", sim::num(r.containment) + " (share of the " + std::to_string(r.fit_one_domain) +
                            " jobs that fit one NVLink domain placed in one)");
    line("span ratio", sim::num(r.span_ratio) + " domains over the lower bound (" + std::to_string(r.multi_domain_jobs) +
                           " multi-domain jobs); leaves " + sim::num(r.leaf_span_ratio));
    line("stranded GPUs", sim::num(r.stranded_gpus) + " (time-averaged share idle while the queue head waits)");
    line("utilisation", sim::num(r.utilisation) + " of GPU time over the " + sim::num(r.window_s) +
                            " s busy window (nodes: " + sim::num(r.node_utilisation) + "); " +
                            sim::num(r.utilisation_makespan) + " over the makespan of " + sim::num(r.makespan_s) + " s");
    for (const SimStats& s : r.classes) {
        if (!s.jobs)
            continue;
        line(("queue delay " + s.name).c_str(),
             std::to_string(s.jobs) + " jobs: mean " + sim::num(s.delay_mean) + " s, p95 " + sim::num(s.delay_p95) +
                 " s, p99 " + sim::num(s.delay_p99) + " s; completion mean " + sim::num(s.completion_mean) + " s, p95 " +
                 sim::num(s.completion_p95) + " s, p99 " + sim::num(s.completion_p99) + " s");
    }
    if (r.preempt_pct > 0) {
        line("preemptors", std::to_string(r.preemptors) + " jobs (" + sim::num(r.preempt_pct) +
                               "% share): delay mean " + sim::num(r.preemptor_delay_mean) + " s, p95 " +
                               sim::num(r.preemptor_delay_p95) + " s; containment " +
                               sim::num(r.preemptor_containment) + " of the " +
                               std::to_string(r.preemptor_one_domain) + " that fit one domain");
        line("preemption", std::to_string(r.preempting_starts) + " starts by preempting, " +
                               std::to_string(r.victims) + " jobs evicted (" + std::to_string(r.wasted_evictions) +
                               " wasted), " + sim::num(r.evicted_gpu_s / 3600) + " GPU-h run by the victims, " +
                               sim::num(r.preempt_lost_gpu_s / 3600) + " GPU-h of work lost since their checkpoints");
        if (r.paired_preemptions || r.paired_block_none)
            line("vs stock block", "on the same state at " + std::to_string(r.paired_preemptions) +
                                       " of m2g's preemptions: m2g evicted " + std::to_string(r.paired_m2g_victims) +
                                       " jobs, " + sim::num(r.paired_m2g_evicted_gpu_s / 3600) + " GPU-h run, " +
                                       sim::num(r.paired_m2g_lost_gpu_s / 3600) + " GPU-h lost; block would evict " +
                                       std::to_string(r.paired_block_victims) + " jobs (" +
                                       std::to_string(r.paired_block_wasted) + " wasted), " +
                                       sim::num(r.paired_block_evicted_gpu_s / 3600) + " GPU-h run, " +
                                       sim::num(r.paired_block_lost_gpu_s / 3600) + " GPU-h lost; block found none at " +
                                       std::to_string(r.paired_block_none));
    }
    if (r.unusable_nodes)
        line("unusable nodes", std::to_string(r.unusable_nodes) + " (down or degraded in the timeline)");
    if (r.deferred || r.admission_rejected)
        line("admission", std::to_string(r.deferred) + " jobs deferred or paced, " +
                              std::to_string(r.admission_rejected) + " rejected");
    line("power", "peak " + sim::num(r.peak_site_kw) + " kW, mean " + sim::num(r.mean_site_kw) + " kW, " +
                      sim::num(r.energy_kwh) + " kWh (GPU power of running jobs)");
    line("cap violations", std::to_string(r.cap_violations) + " (" + sim::num(r.cap_violation_s) +
                               " s over a budget, largest excess " + sim::num(r.cap_peak_over_kw) + " kW)");
    for (const SimEventResult& e : r.events)
        line(("event " + e.id).c_str(),
             e.scope + " " + sim::num(e.start) + ".." + sim::num(e.end) + " s, budget " + sim::num(e.budget_kw) + " kW, draw at start " +
                 sim::num(e.draw_at_start_kw) + " kW, peak " + sim::num(e.peak_draw_kw) + " kW, " +
                 (e.response_s < 0 ? std::string("still over at its end")
                                   : "under budget after " + sim::num(e.response_s) + " s") +
                 ", " + sim::num(e.over_s) + " s over");
    if (r.curtail_mode != "off") {
        for (const SimEventResult& e : r.events)
            line(("event " + e.id + " response").c_str(),
                 "announced at " + sim::num(e.announced) + " s, " + sim::num(e.over_late_s) +
                     " s over after the response target, largest excess " + sim::num(std::max(0.0, e.peak_over_kw)) +
                     " kW, " + sim::num(e.energy_kwh) + " kWh drawn during it");
        line("curtailment", r.curtail_mode + ", actuation delay " + sim::num(r.actuation_delay_s) + " s" +
                                (r.meter_lag_s > 0 ? ", meter lag " + sim::num(r.meter_lag_s) + " s" : "") + ": " +
                                std::to_string(r.curtail_plans) + " plans (" +
                                std::to_string(r.curtail_plans_skipped) + " rounds on unchanged inputs skipped), " +
                                std::to_string(r.curtail_caps) +
                                " caps, " + std::to_string(r.curtail_uncaps) + " uncaps, " +
                                std::to_string(r.curtail_suspends) + " suspends, " +
                                std::to_string(r.curtail_resumes) + " resumes, " + std::to_string(r.curtail_signals) +
                                " checkpoint signals, " + std::to_string(r.curtail_requeues) + " requeues (" +
                                sim::num(r.requeue_lost_gpu_s) + " GPU-s lost)" +
                                (r.curtail_cap_failures ? ", " + std::to_string(r.curtail_cap_failures) +
                                                              " caps failed (no node agent)"
                                                        : "") +
                                (r.unfinished ? ", " + std::to_string(r.unfinished) + " jobs unfinished" : ""));
        if (r.baseline) {
            line("vs CurtailMode=off",
                 "non-deferrable throughput loss " + sim::num(100 * r.nondeferrable_loss) + "% (" +
                     sim::num(r.nondeferrable_work_window_gpu_s) + " of " +
                     sim::num(r.baseline_nondeferrable_work_window_gpu_s) + " GPU-s of work in the load window), " +
                     sim::num(100 * r.nondeferrable_event_loss) + "% during events (" +
                     sim::num(r.nondeferrable_work_in_events_gpu_s) + " of " +
                     sim::num(r.baseline_nondeferrable_work_in_events_gpu_s) + " GPU-s; " +
                     std::to_string(r.nondeferrable_jobs) + " jobs, " + sim::num(r.nondeferrable_delay_gpu_s) +
                     " GPU-s later to completion, " + sim::num(r.nondeferrable_curtailed_s) +
                     " s curtailed); deferrable completion x" +
                     sim::num(r.deferrable_stretch_mean) + " mean, x" + sim::num(r.deferrable_stretch_p95) + " p95 (+" +
                     sim::num(r.deferrable_delay_mean_s) + " s mean, +" + sim::num(r.deferrable_delay_p95_s) + " s p95, " +
                     std::to_string(r.deferrable_jobs) + " jobs); " + sim::num(r.energy_shifted_kwh) +
                     " kWh moved out of events (" + sim::num(r.energy_in_events_kwh) + " of " +
                     sim::num(r.baseline_energy_in_events_kwh) + " kWh drawn in them; " + sim::num(r.energy_kwh) + " of " +
                     sim::num(r.baseline_energy_kwh) + " kWh in all)");
        }
    }
    line("speed", sim::num(r.sim_jobs_per_s) + " jobs/s (" + sim::num(r.wall_s) + " s)");
    return o;
}

std::string format_sim_power(const SimResult& r)
{
    std::string o = "t,site_kw\n";
    char buf[80];
    for (const auto& [t, kw] : r.site_power) {
        std::snprintf(buf, sizeof buf, "%.15g,%.6f\n", t, std::max(0.0, kw));
        o += buf;
    }
    return o;
}

std::string format_sim_jobs(const Model& m, const SimResult& r)
{
    auto num = [](double v) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.15g", v);
        return std::string(buf);
    };
    std::string o = "id,gpus,nodes,submit,eligible,start,end,domains,domain_lb,leaves,w_gpu,admission,nodelist\n";
    std::vector<std::string> names;
    for (const SimJobResult& j : r.job_results) {
        names.clear();
        for (int n : j.placed)
            names.push_back(m.nodes[n].name);
        std::string adm = j.admission;
        for (char& c : adm)
            if (c == ',' || c == '"' || c == '\n')
                c = ' ';
        o += j.id + "," + std::to_string(j.gpus) + "," + std::to_string(j.nodes) + "," + num(j.submit) + "," +
             num(j.eligible) + "," + num(j.start) + "," + num(j.end) + "," + std::to_string(j.domains) + "," +
             std::to_string(j.domain_lb) + "," + std::to_string(j.leaves) + "," + num(j.w_gpu) + "," + adm + ",\"" +
             (names.empty() ? "" : hostlist_compress(names)) + "\"\n";
    }
    return o;
}

}  // namespace m2g
