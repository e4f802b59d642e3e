// m2g tools: the simulator's set-up (see simulator.hpp and doc/simulator.md):
// the options checked, the jobs as the run sees them, the cluster's free
// GPUs, and the state the run starts from.
#include "tools/sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"
#include "core/base/keys.hpp"
#include "core/base/text.hpp"

namespace m2g {
namespace sim {

std::string num(double v) { return general(v); }

// Times on the trace clock (10^7 s and more): to the millisecond.
std::string num_t(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.15g", std::round(v * 1000) / 1000);
    return buf;
}

Simulator::Simulator(const Model& model, const Trace& t, const SimOptions& o)
    : m(model), trace(t), opts(o), ap(model.admission), admission(SessionLog{}, nullptr)
{
    check_options();
    r.policy = to_string(opts.policy);
    r.scale_gpus = opts.scale_gpus;
    r.load = opts.load;
    r.seed = opts.seed;
    for (const Node& n : m.nodes) {
        gpn = std::max(gpn, n.gpus);
        total_gpus += n.gpus;
    }
    if (gpn <= 0)
        throw Error("the topology declares no GPUs (Gpus= on NodeName lines)");
    r.gpus_per_node = gpn;
    nnodes = static_cast<int>(m.nodes.size());
    tl = opts.timeline;
    choose_policy();
    watch_budgets();
    build_jobs();
    scale_load();
    lower_bounds();
    node_state();
    runtime_state();
}

void Simulator::check_options()
{
    if (opts.scale_gpus < 1)
        throw Error("--scale-gpus " + std::to_string(opts.scale_gpus) + ": expected a whole number, 1 or more");
    if (opts.load < 0 || !std::isfinite(opts.load))
        throw Error("--load: expected an offered load above 0 (e.g. 0.8), or 0 for the trace as recorded");
    if (opts.backfill_depth < 0)
        throw Error("backfill depth must be 0 or more");
    if (m.nodes.empty())
        throw Error("the topology has no nodes");
    JobIntent intent;
    apply_option(intent, kw::kOptClass, opts.workload_class, 0);  // throws ParseError naming the classes
    // The classes jobs may carry: [0] the default, then one per share.
    class_intent = {intent};
    double share_sum = 0;
    for (const auto& [cls, pct] : opts.class_shares) {
        JobIntent ci;
        apply_option(ci, kw::kOptClass, cls, 0);
        if (!(pct > 0 && pct <= 100))
            throw Error("--class-share " + cls + "=" + num(pct) + ": expected a percent of jobs above 0, at most 100");
        share_sum += pct;
        class_intent.push_back(ci);
    }
    if (share_sum > 100 + 1e-9)
        throw Error("--class-share: the shares add up to " + num(share_sum) + "% of jobs, more than 100");
    if (opts.preempt_pct < 0 || opts.preempt_pct > 100 || !std::isfinite(opts.preempt_pct))
        throw Error("--preempt-share " + num(opts.preempt_pct) +
                    ": expected a percent of jobs, 0 (no preemption) to 100");
    if (opts.preempt_pct > 0) {
        JobIntent probe;
        apply_option(probe, kw::kOptTopology, opts.preemptor_topology, 0);  // throws ParseError naming the forms
    }
    if (opts.actuation_delay_s < 0 || !std::isfinite(opts.actuation_delay_s))
        throw Error("--actuation-delay: expected seconds, 0 or more");
    if (opts.meter_lag_s < 0 || opts.meter_lag_s > 3600 || !std::isfinite(opts.meter_lag_s))
        throw Error("--meter-lag: expected seconds, 0 to 3600");
    if (opts.checkpoint_interval_s < 0 || !std::isfinite(opts.checkpoint_interval_s))
        throw Error("--checkpoint-interval: expected seconds, 0 (never) or more");
    if (opts.restart_overhead_s < 0 || !std::isfinite(opts.restart_overhead_s))
        throw Error("--restart-overhead: expected seconds, 0 or more");
    if (opts.response_target_s < 0 || !std::isfinite(opts.response_target_s))
        throw Error("response target: expected seconds, 0 or more");
    if (opts.event_notice_s < -1)
        throw Error("--event-notice: expected seconds, 0 or more (-1: the whole run)");
}

// m2g is select/m2g's PlacementSession (signals gate, locality, the
// engine, the prefer fallback, started-power bookkeeping, pacing) and
// job_submit/m2g's decide() and AdmissionSession, as the plugins run
// them; what select/m2g leaves to cons_tres (locality any, or a prefer
// job's best effort that cons_tres refused) goes to the tree-nvl policy:
// BlockSizes for block and block-seg: as asked, else what `m2g topology
// export --format=block` writes; {0}: Slurm's default levels.
std::vector<int> Simulator::block_sizes() const
{
    if (opts.block_sizes.empty())
        return export_block_sizes(m);
    if (opts.block_sizes.size() == 1 && opts.block_sizes[0] == 0)
        return {};
    return opts.block_sizes;
}

// cons_tres over topology/m2g's switches, the NVLink domains lowest.
// The baselines place alone.
void Simulator::choose_policy()
{
    switch (opts.policy) {
    case SimPolicy::M2G:
        select = std::make_unique<PlacementSession>(SessionLog{}, 0);
        select->set_will_run_reasons(false);  // backfill reads a will-run's nodes and times only
        placer = make_tree_placer(m, true);
        // Preemption: what stock block would evict on the same state, for
        // the paired comparison (SimResult::paired_*).
        if (opts.preempt_pct > 0)
            block_ref = make_block_placer(m, false, block_sizes());
        break;
    case SimPolicy::Tree:
        placer = make_tree_placer(m, false);
        break;
    case SimPolicy::TreeNvl:
        placer = make_tree_placer(m, true);
        break;
    case SimPolicy::Block:
    case SimPolicy::BlockSeg:
        placer = make_block_placer(m, opts.policy == SimPolicy::BlockSeg, block_sizes());
        break;
    case SimPolicy::FirstFit:
        placer = make_firstfit_placer(m);
        break;
    }
    // When a waiting job's prefer wait ends, select/m2g may decide
    // otherwise: m2g gets an event then (select_nodes).
    prefer_wait_s = m.policy.prefer_wait_sec;
    prefer_wait = static_cast<double>(prefer_wait_s);

    node_gpus.resize(m.nodes.size());
    for (size_t n = 0; n < m.nodes.size(); ++n)
        node_gpus[n] = m.nodes[n].gpus;
    // Nodes nobody may use: down or degraded in the timeline's health.
    node_ok.assign(m.nodes.size(), 1);
    if (tl) {
        for (size_t n = 0; n < m.nodes.size(); ++n)
            if ((n < tl->node_down.size() && tl->node_down[n]) ||
                (n < tl->health.node_degraded.size() && tl->health.node_degraded[n]))
                node_ok[n] = 0;
    }
    for (uint8_t ok : node_ok)
        r.unusable_nodes += !ok;
}

// Budgets the run watches, and whether m2g enforces them (admission and
// gate, as job_submit/m2g and select/m2g do).
void Simulator::watch_budgets()
{
    watched.push_back({EventScope::Site, kNone, "site"});
    for (size_t f = 0; f < m.fault_domains.size(); ++f)
        if (m.fault_domains[f].type == "row")
            watched.push_back({EventScope::Row, static_cast<int>(f), m.fault_domains[f].name});
    for (size_t d = 0; d < m.domains.size(); ++d)
        watched.push_back({EventScope::Rack, static_cast<int>(d), m.domains[d].name});
    epoch0 = tl ? tl->generated_at : 0;
    bool any_budget = false;
    for (const Watched& w : watched)
        if (effective_budget_kw(m, tl, w.scope, w.index, epoch0) >= 0)
            any_budget = true;
    if (tl && !tl->events.empty())
        any_budget = true;
    power_aware = select && (tl || any_budget) && m.admission.mode == AdmissionMode::Enforce;
    // Admission=monitor decides and records, and changes nothing.
    admission_on = select && (tl || any_budget) && m.admission.mode != AdmissionMode::Off;
}
// Jobs: scale, order, shuffle ties, classes, power per GPU.
void Simulator::build_jobs()
{
    // Submit order (stable), ties shuffled with the seed unless keep_order;
    // src[i]: the trace entry of jobs[i].
    std::vector<size_t> src(trace.jobs.size());
    for (size_t i = 0; i < src.size(); ++i)
        src[i] = i;
    std::stable_sort(src.begin(), src.end(),
                     [&](size_t a, size_t b) { return trace.jobs[a].submit < trace.jobs[b].submit; });
    if (opts.seed != 0 && !opts.keep_order) {
        std::mt19937_64 rng(opts.seed);
        for (size_t i = 0; i < src.size();) {
            size_t k = i + 1;
            while (k < src.size() && trace.jobs[src[k]].submit == trace.jobs[src[i]].submit)
                ++k;
            std::shuffle(src.begin() + static_cast<long>(i), src.begin() + static_cast<long>(k), rng);
            i = k;
        }
    }
    jobs.reserve(trace.jobs.size());
    pinned.assign(trace.jobs.size(), {});
    for (size_t i = 0; i < src.size(); ++i) {
        const TraceJob& t = trace.jobs[src[i]];
        SimJobResult j;
        j.id = t.id;
        const long long g = static_cast<long long>(t.gpus) * opts.scale_gpus;
        if (g > 1000000000LL)
            throw Error("job " + t.id + ": " + std::to_string(g) + " GPUs after --scale-gpus is too many");
        j.gpus = static_cast<int>(g);
        j.nodes = std::max(static_cast<int>((g + gpn - 1) / gpn), t.nodes);
        if (!t.running_on.empty()) {
            // Running already: on its nodes, its GPUs spread over them.
            for (int n : t.running_on)
                if (n < 0 || n >= nnodes)
                    throw Error("job " + t.id + ": runs on node index " + std::to_string(n) + ", not in the topology");
            j.nodes = static_cast<int>(t.running_on.size());
            pinned[i] = t.running_on;
        }
        j.gpus_per_node = static_cast<int>((g + j.nodes - 1) / j.nodes);
        j.submit = t.submit;
        j.end = t.duration;  // the duration, until the job runs
        if (opts.time_limits_from_trace) {
            if (t.limit <= 0)
                throw Error("job " + t.id +
                            ": no time limit in the trace (SWF field 9, requested time); "
                            "--time-limits-from-trace needs one for every job");
            j.limit = std::ceil(t.limit);
            j.end = std::min(j.end, j.limit);  // Slurm ends it at its limit (TIMEOUT)
        }
        jobs.push_back(std::move(j));
    }
    // Each job's class: its own intent where the trace gives one (one
    // class_intent entry per distinct intent), else FNV-1a 64 of its id,
    // mod 10000, against the shares.
    cls_of.assign(jobs.size(), 0);
    for (size_t i = 0; i < jobs.size(); ++i) {
        if (const std::optional<JobIntent>& own = trace.jobs[src[i]].intent) {
            auto it = std::find(class_intent.begin(), class_intent.end(), *own);
            cls_of[i] = static_cast<int>(it - class_intent.begin());
            if (it == class_intent.end())
                class_intent.push_back(*own);
        } else if (!opts.class_shares.empty()) {
            uint64_t h = 14695981039346656037ULL;
            for (unsigned char c : jobs[i].id) {
                h ^= c;
                h *= 1099511628211ULL;
            }
            const double u = static_cast<double>(h % 10000) / 100.0;
            double acc = 0;
            for (size_t k = 0; k < opts.class_shares.size(); ++k) {
                acc += opts.class_shares[k].second;
                if (u < acc) {
                    cls_of[i] = static_cast<int>(k) + 1;
                    break;
                }
            }
        }
        if (opts.preempt_pct > 0) {
            // The preempting QOS: by a hash of the id, so the choice is
            // independent of the classes, the seed and the policy.
            if (sim_preemptor(jobs[i].id, opts.preempt_pct)) {
                jobs[i].preemptor = true;
                JobIntent pi = class_intent[cls_of[i]];
                apply_option(pi, kw::kOptTopology, opts.preemptor_topology, 0);
                auto it = std::find(class_intent.begin(), class_intent.end(), pi);
                cls_of[i] = static_cast<int>(it - class_intent.begin());
                if (it == class_intent.end())
                    class_intent.push_back(pi);
            }
        }
        const WorkloadClass wc = class_intent[cls_of[i]].workload_class;
        jobs[i].workload_class = wc != WorkloadClass::Unset ? to_string(wc) : opts.workload_class;
        jobs[i].deferrable = is_deferrable(m.admission, class_intent[cls_of[i]]);
    }
    {
        // Power per GPU: drawn in submit order from its own stream, so the
        // same seed gives every policy the same draws.
        std::mt19937_64 prng(opts.seed ^ 0x6d32672d706f7772ULL);
        std::uniform_real_distribution<double> u(0.0, 1.0);
        for (size_t i = 0; i < jobs.size(); ++i) {
            jobs[i].w_gpu = opts.power ? opts.power->sample(u(prng))
                                       : power_w_per_gpu(m.admission, class_intent[cls_of[i]]);
            if (trace.jobs[src[i]].w_gpu > 0)  // measured: known, not drawn (the stream still advances)
                jobs[i].w_gpu = trace.jobs[src[i]].w_gpu;
        }
    }
    duration.resize(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i)
        duration[i] = jobs[i].end;
    first_submit = jobs.empty() ? 0 : jobs.front().submit;
    if (opts.origin >= 0)
        first_submit = jobs.empty() ? opts.origin : std::min(first_submit, opts.origin);
}

// The load window leaves out the first 1% of submissions: traces cut
// from a longer log (Philly's first 20,000 jobs) open with weeks of a
// few jobs, and counting that ramp would halve the load of the weeks
// where the work is. Only the jobs submitted in the window count:
// offered load = GPU-seconds asked / (GPUs x window), the usual
// arrival rate x mean demand / capacity.
void Simulator::scale_load()
{
    w0 = jobs.size() / 100;
    const double window_start = jobs.empty() ? 0 : jobs[w0].submit;
    const double submit_span = jobs.empty() ? 0 : jobs.back().submit - window_start;
    double gpu_seconds_asked = 0;
    for (size_t i = w0; i < jobs.size(); ++i)
        gpu_seconds_asked += static_cast<double>(jobs[i].nodes) * jobs[i].gpus_per_node * duration[i];
    const double natural_load = submit_span > 0 ? gpu_seconds_asked / (total_gpus * submit_span) : 0;
    if (opts.load > 0) {
        if (submit_span <= 0 || natural_load <= 0)
            throw Error("--load needs jobs submitted at different times with some run time");
        r.arrival_factor = natural_load / opts.load;
        for (SimJobResult& j : jobs)
            j.submit = first_submit + (j.submit - first_submit) * r.arrival_factor;
    }
    r.offered_load = r.arrival_factor > 0 && natural_load > 0 ? natural_load / r.arrival_factor : 0;
    for (SimJobResult& j : jobs)
        j.eligible = j.submit;
}

// Lower bounds on an empty cluster: NVLink groups and leaf switches.
void Simulator::lower_bounds()
{
    for (const Domain& d : m.domains)
        group_sizes.push_back(static_cast<int>(d.nodes.size()));
    for (const Node& n : m.nodes)
        if (n.domain == kNone)
            group_sizes.push_back(1);
    for (const Switch& s : m.switches)
        if (s.height == 0)
            leaf_sizes.push_back(static_cast<int>(s.all_nodes.size()));
    std::sort(group_sizes.rbegin(), group_sizes.rend());
    std::sort(leaf_sizes.rbegin(), leaf_sizes.rend());
    max_group = group_sizes.empty() ? 1 : group_sizes.front();
    node_leaf.assign(m.nodes.size(), kNone);
    for (size_t s = 0; s < m.switches.size(); ++s)
        if (m.switches[s].height == 0)
            for (int n : m.switches[s].all_nodes)
                node_leaf[n] = static_cast<int>(s);
}

// State: free GPUs per node; nodes by free GPUs (healthy ones only).
void Simulator::node_state()
{
    node_free.resize(m.nodes.size());
    free_count.assign(static_cast<size_t>(gpn) + 1, 0);
    for (size_t n = 0; n < m.nodes.size(); ++n) {
        node_free[n] = m.nodes[n].gpus;
        if (node_ok[n]) {
            ++free_count[node_free[n]];
            free_gpus += node_free[n];
        }
    }
    usable.resize(static_cast<size_t>(gpn) + 1);
    usable_version.assign(static_cast<size_t>(gpn) + 1, 0);
}

// What the run tracks from its first event: the classes' SPANK variables,
// power, the feed, the event queue, curtailment and admission state.
void Simulator::runtime_state()
{
    node_kw.assign(m.nodes.size(), 0.0);
    domain_kw.assign(m.domains.size(), 0.0);
    last_start.assign(jobs.size(), -1);
    if (select)
        select->adopt(m, power_aware ? SignalsSource([this](int64_t) { return view; }) : SignalsSource(),
                      tl ? tl->health : ClusterState{});
    push_timeline_events();
    // The load window (after --load): where non-deferrable throughput is counted.
    window_a = jobs.empty() ? 0 : jobs[w0].submit;
    window_b = jobs.empty() ? 0 : jobs.back().submit;
    last_t = first_submit;
    last_end = first_submit;

    // Curtailment state (m2g with CurtailMode=monitor or enforce): each
    // live job's CurtailJob (what the controller knows of it), its work
    // left (seconds at full speed) as of rate_t, its speed and per-GPU
    // draw now; checkpointed work; energy drawn (W s).
    curtail = select != nullptr && ap.curtail_mode != CurtailMode::Off;
    enforce = curtail && ap.curtail_mode == CurtailMode::Enforce;
    r.curtail_mode = curtail ? to_string(ap.curtail_mode) : "off";
    r.actuation_delay_s = curtail ? opts.actuation_delay_s : 0;
    r.meter_lag_s = curtail ? opts.meter_lag_s : 0;
    nj = curtail ? jobs.size() : 0;
    if (curtail && opts.preempt_pct > 0)
        throw Error("--preempt-share: the simulator does not combine preemption with curtailment "
                    "(CurtailMode=" + std::string(to_string(ap.curtail_mode)) + " in m2g.conf); "
                    "set CurtailMode=off or drop --preempt-share");
    // Preemption: each job's checkpointed work, the length of its current
    // run, the restart overhead in it, and the time its evicted runs took.
    if (opts.preempt_pct > 0) {
        pre_saved.assign(jobs.size(), 0.0);
        pre_len = duration;
        pre_overhead.assign(jobs.size(), 0.0);
        pre_ran.assign(jobs.size(), 0.0);
    }
    if (curtail) {
        planner_m = m;
        planner_m.admission.unused_gpu_w = 0;
    }
    cj.resize(nj);
    for (auto* v : {&work_left, &rate_t, &speed, &w_now, &saved, &energy_ws, &act_sec, &act_w0})
        v->assign(nj, 0.0);
    attempt_work.assign(duration.begin(), duration.begin() + static_cast<long>(nj));
    attempt_overhead.assign(nj, 0);
    in_running.assign(nj, 0);
    room_woken.assign(nj, 0);
    live_pos.assign(nj, -1);
    no_agent.assign(m.nodes.size(), 0);
    for (const std::string& expr : opts.no_agent)
        for (const std::string& name : hostlist_expand(expr)) {
            const int n = m.find_node(name);
            if (n == kNone)
                throw Error("--no-agent: no node " + name + " in the topology");
            no_agent[n] = 1;
        }

    // job_submit/m2g on the simulated feed: decide() at submission, and the
    // release thread's rules (AdmissionSession) for each job m2g holds, at
    // its begin time, and for every pending job where the timeline changes
    // (an event or a maintenance window starts or ends), as its next pass
    // would. Only with admission_on.
    if (admission_on)
        admission.adopt(std::shared_ptr<const Model>(&m, [](const Model*) {}), [this](int64_t) { return view; });
    adm_text.resize(jobs.size());
    adm_begin.assign(jobs.size(), 0);

    usable_outside.resize(usable.size());
    usable_outside_version.assign(usable_version.size(), 0);
    reserved_free.assign(static_cast<size_t>(gpn) + 1, 0);
}

int Simulator::usable_nodes(int per_node)
{
    int c = 0;
    for (int k = std::max(per_node, 1); k <= gpn; ++k)
        c += free_count[k];
    return c;
}

// usable[g]: healthy nodes with g GPUs free, rebuilt when the state changed.
const std::vector<uint8_t>& Simulator::usable_for(int per_node)
{
    std::vector<uint8_t>& u = usable[per_node];
    if (usable_version[per_node] != version) {
        u.resize(m.nodes.size());
        for (size_t n = 0; n < m.nodes.size(); ++n)
            u[n] = node_ok[n] && node_free[n] >= per_node;
        usable_version[per_node] = version;
    }
    return u;
}

// m2g: job j as select/m2g sees it (JobFacts): the class every job
// carries (typed: nothing to decode), whole nodes, its run time as its
// limit. Its prefer clock is the session's.
}  // namespace sim

bool sim_preemptor(std::string_view id, double pct)
{
    uint64_t h = 14695981039346656037ULL;
    for (unsigned char c : "qos:" + std::string(id)) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return static_cast<double>(h % 10000) / 100.0 < pct;
}

namespace sim {

JobFacts Simulator::facts_of(int j)
{
    JobFacts f;
    f.job_id = static_cast<uint32_t>(j);
    f.intent = class_intent[cls_of[j]];
    f.nodes = jobs[j].nodes;
    f.min_nodes = jobs[j].nodes;
    f.gpus_per_node = jobs[j].gpus_per_node;
    f.time_limit_s = time_limit_of(j);
    return f;
}

bool Simulator::plans_on_limits() const
{
    return opts.time_limit_factor > 0 || opts.time_limits_from_trace;
}

double Simulator::plan_end(int j) const
{
    return plans_on_limits() ? last_start[j] + static_cast<double>(time_limit_of(j)) : jobs[j].end;
}

double Simulator::plan_len(int j) const
{
    return plans_on_limits() ? static_cast<double>(time_limit_of(j)) : duration[j];
}

const std::vector<std::pair<double, int>>& Simulator::planned_ends()
{
    if (plan_ends_version == running_version)
        return plan_ends_;
    plan_ends_version = running_version;
    plan_ends_.clear();
    for (const auto& [end, j] : running)
        plan_ends_.emplace_back(plan_end(j), j);
    if (plans_on_limits())
        std::sort(plan_ends_.begin(), plan_ends_.end());
    return plan_ends_;
}

// The time limit m2g sees for job j: its run time (the oracle), the
// trace's (time_limits_from_trace), or with time_limit_factor F its run
// time times F rounded up to a whole hour.
int64_t Simulator::time_limit_of(int j) const
{
    if (opts.time_limits_from_trace)
        return static_cast<int64_t>(jobs[j].limit);
    if (opts.time_limit_factor <= 0)
        return static_cast<int64_t>(std::ceil(duration[j]));
    return static_cast<int64_t>(std::ceil(duration[j] * opts.time_limit_factor / 3600.0)) * 3600;
}

}  // namespace sim
}  // namespace m2g
