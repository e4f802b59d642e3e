// m2g tools: the simulator's queue (see simulator.hpp and doc/simulator.md):
// the event loop, FCFS with EASY backfill, and each start through the
// policy's placer or select/m2g's placement session.
#include "tools/sim/simulator.hpp"

#include <algorithm>
#include <cmath>

#include "core/base/error.hpp"

namespace m2g {
namespace sim {

namespace {

// Set bits of a node-bitmap word, without a libgcc call on CPUs the build
// may not assume a popcount instruction for.
inline int popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return static_cast<int>((x * 0x0101010101010101ull) >> 56);
}

}  // namespace

void Simulator::push_timeline_events()
{
    for (size_t i = 0; i < jobs.size(); ++i)
        if (pinned[i].empty())
            events.push({jobs[i].submit, kSubmit, static_cast<int>(i)});
    if (tl)
        for (const CurtailmentEvent& e : tl->events) {
            SimEventResult er;
            er.id = e.id;
            er.scope = e.scope_name;
            er.start = sim_time(e.start);
            er.end = sim_time(e.end);
            er.announced = first_submit;
            if (opts.event_notice_s >= 0) {
                // Its announcement changes the feed: an edge of its own.
                er.announced = std::max(first_submit, sim_time(e.start - opts.event_notice_s));
                if (er.announced < er.start)
                    events.push({er.announced, kSignal, -1});
            }
            r.events.push_back(er);
            // m2g-curtaild holds the event's budget CurtailLeadSec early.
            if (ap.curtail_mode != CurtailMode::Off && ap.curtail_lead_sec > 0 &&
                er.start - ap.curtail_lead_sec > first_submit)
                events.push({er.start - ap.curtail_lead_sec, kSignal, -1});
            events.push({er.start, kSignal, -1});
            events.push({er.end, kSignal, -1});
        }
    if (tl)
        for (const MaintenanceWindow& w : tl->maintenance) {
            events.push({sim_time(w.start), kSignal, -1});
            events.push({sim_time(w.end), kSignal, -1});
        }
}

// A forecast's running jobs: started at their submit on their own nodes,
// as select/m2g's job_begin saw them, before anything else happens.
void Simulator::start_pinned()
{
    for (size_t i = 0; i < jobs.size(); ++i) {
        if (pinned[i].empty())
            continue;
        const int j = static_cast<int>(i);
        for (int n : pinned[i])
            if (node_free[n] < jobs[i].gpus_per_node)
                throw Error("job " + jobs[i].id + ": runs on " + m.nodes[n].name + " with " +
                            std::to_string(jobs[i].gpus_per_node) + " GPUs, but only " + std::to_string(node_free[n]) +
                            " of its GPUs are not taken by the jobs before it");
        jobs[i].eligible = jobs[i].submit;
        picked = pinned[i];
        start_job(j, jobs[i].submit);
    }
    r.peak_site_kw = std::max(r.peak_site_kw, site_kw);
    if (opts.record_site_power && site_kw > 0)
        r.site_power.emplace_back(first_submit, site_kw);
}

// Every event in time order; at each time, what Slurm, job_submit/m2g and
// the curtailment controller do, then the state measured.
void Simulator::run_events()
{
    int stop_job = -1;  // SimOptions::stop_after_start
    if (!opts.stop_after_start.empty() && !curtail)
        for (size_t i = 0; i < jobs.size() && stop_job < 0; ++i)
            if (jobs[i].id == opts.stop_after_start)
                stop_job = static_cast<int>(i);
    while (!events.empty()) {
        if (stop_job >= 0 && jobs[stop_job].start >= 0)
            break;
        const double now = events.top().t;
        if (opts.stop_at >= 0 && now > opts.stop_at)
            break;  // SimOptions::stop_at: nothing after it is asked for
        const double dt = now - last_t;
        if (dt > 0 && curtail && !segments.empty() && segments.back().t1 == last_t &&
            segments.back().busy_gpus == busy_gpus && segments.back().busy_nodes == busy_nodes &&
            segments.back().stranded == stranded_now)
            segments.back().t1 = now;  // the controller's rounds change none of these
        else if (dt > 0)
            segments.push_back({last_t, now, busy_gpus, busy_nodes, stranded_now});
        power_integral += site_kw * dt;
        if (any_over)
            over_integral += dt;
        if (dt > 0)
            for (const SimEventResult& er : r.events)
                if (er.start <= last_t && last_t < er.end) {
                    r.energy_in_events_kwh += site_kw * dt / 3600.0;
                    r.nondeferrable_work_in_events_gpu_s += nd_rate * dt;
                    break;
                }
        if (dt > 0) {
            const double a = std::max(last_t, window_a), b = std::min(now, window_b);
            if (b > a)
                r.nondeferrable_work_window_gpu_s += nd_rate * (b - a);
        }
        integrate_events(last_t, now);
        last_t = now;
        clock_ = now;
        if (opts.meter_lag_s > 0) {
            // Changes older than the lagged reading are in the feed now: it
            // changed without an event of its own.
            const double seen = std::floor(now - opts.meter_lag_s);
            bool aged = false;
            while (!draw_changes.empty() && draw_changes.front().t < seen) {
                draw_changes.pop_front();
                aged = true;
            }
            if (aged)
                ++inputs;
        }
        std::vector<int> arrivals, releases;
        bool edge = false;      // the timeline changes now
        bool tick_due = false;  // the curtailment controller's loop comes round
        bool pass = false;      // something Slurm and job_submit/m2g react to (not the controller's loop)
        bool bf_due = false;    // bf_interval has passed since a backfill pass that left work
        while (!events.empty() && events.top().t == now) {
            const Event e = events.top();
            events.pop();
            if (e.kind == kSignal) {
                edge = true;  // the passes below see the new time
                pass = true;
                ++inputs;
                continue;
            }
            if (e.kind == kTick) {
                tick_pending = false;
                tick_due = true;
                continue;
            }
            if (e.kind == kBackfill) {
                bf_wake_pending = false;
                bf_due = true;
                continue;
            }
            if (e.kind == kActuate) {
                while (!pending.empty() && pending.front().t <= now) {
                    const Pending p = pending.front();
                    pending.pop_front();
                    actuate(p.a, p.order, now);
                }
                continue;
            }
            SimJobResult& job = jobs[e.job];
            if (e.kind == kEnd && curtail && (live_pos[e.job] < 0 || e.t != job.end))
                continue;  // stale: its end moved (cap, suspension) or it was requeued
            if (e.kind == kEnd && !curtail && (e.t != job.end || !running.count({job.end, e.job})))
                continue;  // stale: the job was evicted by a preemptor (and may run again)
            pass = true;
            if (e.kind == kEnd && curtail) {
                advance(e.job, now);
                drop_live(e.job);
                ++inputs;
                running.erase(running.find({job.end, e.job}));
                ++running_version;
                in_running[e.job] = 0;
                for (int n : job.placed)
                    adjust_node(n, job.gpus_per_node);
                ++version;
                book_w(job, -w_now[e.job]);
                w_now[e.job] = 0;
                if (!job.deferrable)
                    nd_rate -= job.gpus * speed[e.job];
                last_end = std::max(last_end, now);
            } else if (e.kind == kEnd) {
                release(e.job);
                last_end = std::max(last_end, now);
            } else if (e.kind == kSubmit) {
                if (!fits_empty(e.job, now)) {
                    ++r.rejected;
                    continue;
                }
                arrivals.push_back(e.job);
            } else if (e.kind == kRelease) {
                releases.push_back(e.job);
            }
            // kWake: nothing to change; the pass below retries with the wait over.
        }
        // The controller's loop and its actions alone start no scheduling
        // pass (the run stays the one CurtailMode=off makes until an
        // action changes something), but a requeue does.
        if (pass || !requeued.empty()) {
            if (admission_on) {
                view = view_at(now);  // with the ends applied
                admission.begin_pass(epoch(now));
                if (edge)
                    release_pass(now);
            }
            for (int j : releases)  // held jobs whose begin time came (not one a pass moved)
                if (adm_begin[j] && epoch(now) >= adm_begin[j])
                    release_held(j, now);
            for (int j : arrivals)
                if (submit(j, now))
                    queue_job(j, now);
            for (int j : requeued)  // back to job_submit/m2g, as a requeued job is
                if (submit(j, now))
                    queue_job(j, now);
            requeued.clear();
            schedule(now);
        } else if (bf_due && bf_more_work) {
            backfill_pass(now);
        }
        bool planned = false;
        if (curtail && (tick_due || edge))
            planned = plan_round(now);
        check_caps(now);
        r.peak_site_kw = std::max(r.peak_site_kw, site_kw);
        stranded_now = queue.empty() ? 0 : free_gpus;
        if (opts.record_site_power && (r.site_power.empty() || std::abs(r.site_power.back().second - site_kw) > 1e-9)) {
            if (!r.site_power.empty() && r.site_power.back().first == now)
                r.site_power.back().second = site_kw;
            else
                r.site_power.emplace_back(now, site_kw);
        }
        // The controller's loop runs while jobs hold GPUs; it stops when
        // nothing else can happen and it has nothing more to do.
        if (curtail && !tick_pending && !live.empty() && (!events.empty() || planned)) {
            events.push({now + static_cast<double>(ap.curtail_interval_sec), kTick, -1});
            tick_pending = true;
        }
    }
}

// Running job j (without curtailment) leaves: its GPUs and power back.
void Simulator::release(int j)
{
    const SimJobResult& job = jobs[j];
    running.erase(running.find({job.end, j}));
    ++running_version;
    for (int n : job.placed)
        adjust_node(n, job.gpus_per_node);
    ++version;
    book_power(job, -1);
    if (!job.deferrable)
        nd_rate -= job.gpus;
}

// One select_p_job_test on `offer` at `now`, cons_tres's part played by
// the tree policy: true with the job's nodes in `picked`.
// `clock_started`: that call started the job's prefer clock.
bool Simulator::select_nodes(const JobFacts& f, const std::vector<uint8_t>& offer, const FreeGpus& free_now, SelectMode mode, double now)
{
    const int total = static_cast<int>(std::count(offer.begin(), offer.end(), uint8_t(1)));
    const Outcome o = select->decide(f, offer, total, free_now, mode, epoch(now));
    clock_started = o.clock_started;
    stock_offer = offer;
    OfferActions act;
    act.rule_out = [&](const std::vector<int>& nodes) {
        for (int n : nodes)
            stock_offer[n] = 0;
    };
    act.test_offer = [&] { return placer->place(f.nodes, stock_offer, picked); };
    act.test_only = [&](const std::vector<int>& nodes) {
        picked = nodes;  // cons_tres takes them: all are offered with the job's GPUs free
        return true;
    };
    return select->apply(o, act).accepted;
}

// Can a job ever start? (On an empty healthy cluster; for m2g,
// select/m2g's test-only question with the prefer wait over.)
bool Simulator::fits_empty(int index, double now)
{
    const SimJobResult& j = jobs[index];
    const std::tuple<int, int, int> key{j.nodes, j.gpus_per_node, cls_of[index]};
    auto it = ever_fits.find(key);
    if (it != ever_fits.end())
        return it->second;
    scratch.assign(m.nodes.size(), 0);
    int ok = 0;
    for (size_t n = 0; n < m.nodes.size(); ++n)
        ok += scratch[n] = node_ok[n] && m.nodes[n].gpus >= j.gpus_per_node;
    bool fits = j.nodes <= ok;
    if (fits && select) {
        JobFacts f = facts_of(index);
        f.wait_over = true;
        fits = select_nodes(f, scratch, [&](int n) { return m.nodes[n].gpus; }, SelectMode::TestOnly, now);
    } else if (fits) {
        fits = placer->place(j.nodes, scratch, picked);
    }
    ever_fits.emplace(key, fits);
    return fits;
}

void Simulator::adjust_node(int n, int delta_gpus)
{
    if (node_ok[n])
        --free_count[node_free[n]];
    const bool was_busy = node_free[n] < m.nodes[n].gpus;
    node_free[n] += delta_gpus;
    if (node_ok[n]) {
        ++free_count[node_free[n]];
        free_gpus += delta_gpus;
    }
    busy_nodes += (node_free[n] < m.nodes[n].gpus) - was_busy;
    busy_gpus -= delta_gpus;
}

void Simulator::start_job(int j, double now)
{
    SimJobResult& job = jobs[j];
    job.placed = picked;
    std::sort(job.placed.begin(), job.placed.end());
    for (int n : job.placed)
        adjust_node(n, -job.gpus_per_node);
    ++version;
    if (job.start < 0)
        job.start = now;  // a requeued job keeps its first start
    last_start[j] = now;
    if (curtail) {
        room_woken[j] = 0;
        CurtailJob& c = cj[j];
        c = CurtailJob{};
        c.id = static_cast<uint32_t>(j);
        c.intent = class_intent[cls_of[j]];
        c.nodes = job.placed;
        c.gpus_per_node = job.gpus_per_node;
        c.w_gpu = job.w_gpu;  // the simulated draw is known exactly
        // Every simulated job asks for a checkpoint signal (--signal=
        // USR1@...), so a Curtail=requeue class is requeued, not suspended.
        c.checkpoint_signal = 10;
        c.start_time = epoch(now);
        work_left[j] = attempt_work[j];
        rate_t[j] = now;
        speed[j] = 1;
        w_now[j] = job.w_gpu;
        live_pos[j] = static_cast<int>(live.size());
        live.push_back(j);
        ++inputs;
        job.end = now + attempt_work[j];
        in_running[j] = 1;
    } else {
        job.end = now + (pre_len.empty() ? duration[j] : pre_len[j]);
    }
    running.emplace(job.end, j);
    ++running_version;
    events.push({job.end, kEnd, j});
    book_power(job, 1);
    if (!job.deferrable)
        nd_rate += job.gpus;
    if (select) {
        select->job_started(facts_of(j), job.placed, epoch(now));  // select_p_job_begin
        if (admission_on)
            recent.push_back(j);
    }
}

bool Simulator::try_place(int j, double now)
{
    const SimJobResult& job = jobs[j];
    if (job.nodes > usable_nodes(job.gpus_per_node))
        return false;
    const std::vector<uint8_t>& offer = usable_for(job.gpus_per_node);
    if (!select) {
        const std::tuple<int, int, int, int> key{job.nodes, job.gpus_per_node, 0, cls_of[j]};
        if (failed.count(key))
            return false;
        if (placer->place(job.nodes, offer, picked))
            return true;
        failed.insert(key);
        return false;
    }
    const JobFacts f = facts_of(j);
    // Without signals, select/m2g answers equal requests alike within a
    // pass but for the prefer clock, which the key holds.
    const int64_t since = select->prefer_since(f.job_id);
    const std::tuple<int, int, int, int> key{job.nodes, job.gpus_per_node,
                                             since == 0 ? 0 : epoch(now) - since >= prefer_wait_s ? 2 : 1,
                                             cls_of[j]};
    if (!power_aware && failed.count(key))
        return false;
    if (select_nodes(f, offer, [&](int n) { return node_free[n]; }, SelectMode::RunNow, now))
        return true;
    if (curtail) {
        // Held while m2g-curtaild makes room: the controller plans for it
        // from now, and it starts by the end of its wait at the latest.
        const auto w = select->room_waits().find(f.job_id);
        if (w != select->room_waits().end() && w->second.open && room_woken[j] != w->second.since) {
            room_woken[j] = w->second.since;
            ++inputs;
            events.push({std::max(now, sim_time(w->second.since + ap.curtail_start_wait_sec)), kWake, j});
            return false;
        }
    }
    if (clock_started) {
        // A lesser placement was free: its prefer wait starts now and
        // ends with an event. Another job of this shape without a clock
        // would start its own: no failure to remember.
        if (prefer_wait > 0)
            events.push({now + prefer_wait, kWake, j});
        return false;
    }
    failed.insert(key);
    return false;
}

// Slurm's priority order: the preempting QOS first (its priority factor
// outweighs age), then by submission.
void Simulator::enqueue(int j)
{
    auto before = [&](int a, int b) {
        return jobs[a].preemptor != jobs[b].preemptor ? jobs[a].preemptor : a < b;
    };
    auto it = queue.end();
    while (it != queue.begin() && before(j, *std::prev(it)))
        --it;
    queue.insert(it, j);
}

// Eligible from `now`: into the queue. (Its prefer wait starts when it
// could first have started: select_nodes.)
void Simulator::queue_job(int j, double now)
{
    adm_begin[j] = 0;
    jobs[j].eligible = now;
    enqueue(j);
}

// m2g's reservation as select/m2g answers Slurm's backfill: decide() in
// will-run mode on every usable node, with FreeAt the time each node has
// the job's GPUs free of the jobs running on it (their end times and GPUs
// in a NodeReleases, as the plugin's node_free_at() reads them), so the
// session plans the head on
// the placement its intent accepts whose nodes free first; cons_tres's
// will-run test then starts it when the last of them is free: `shadow`.
// 1: reserved; 0: the session placed it nowhere; -1: the session left it
// to cons_tres (locality any, or a prefer job's best effort): the caller
// walks the end times with the tree placer, as cons_tres would. `held`:
// a node bitmap kept out of the offer (Slurm's backfill: the nodes other
// reservations hold during the job's run).
int Simulator::will_run_free_at(int head, double now, double& shadow, const uint64_t* held)
{
    const SimJobResult& h = jobs[head];
    const int g = std::max(h.gpus_per_node, 1);
    // The running jobs' ends and GPUs per node, in milliseconds of
    // simulated time (their ends need not be whole seconds).
    if (node_end_version != running_version) {
        node_end_version = running_version;
        node_rel.reset(m.nodes.size());
        for (const auto& [end, j] : planned_ends())
            for (int n : jobs[j].placed)
                node_rel.add(n, std::llround(end * 1000), jobs[j].gpus_per_node);
    }
    // Memoised per node x GPU count for this state: a pass asks the same
    // ones for every job it plans.
    const size_t width = static_cast<size_t>(gpn) + 1;
    if (free_ms_memo_version != version || free_ms_memo_running != running_version || free_ep_now != now) {
        if (free_ms_memo_version != version || free_ms_memo_running != running_version) {
            free_ms_memo.assign(m.nodes.size() * width, kUnknownMs);
            free_ms_memo_version = version;
            free_ms_memo_running = running_version;
        }
        free_ep_memo.assign(m.nodes.size() * width, kUnknownMs);
        free_ep_now = now;
    }
    auto free_ms = [&](int n, int gpus) {
        if (gpus < 0 || gpus > gpn)
            return node_rel.free_at(n, gpus, node_free[n]);
        int64_t& ms = free_ms_memo[static_cast<size_t>(n) * width + static_cast<size_t>(gpus)];
        if (ms == kUnknownMs)
            ms = node_rel.free_at(n, gpus, node_free[n]);
        return ms;
    };
    const size_t nn = m.nodes.size();
    fut_offer.resize(nn);
    int total = 0;
    for (size_t n = 0; n < nn; ++n) {
        const uint8_t in = node_ok[n] & static_cast<uint8_t>(node_gpus[n] >= g) &
                           static_cast<uint8_t>(!held || !(held[n / 64] >> (n % 64) & 1));
        fut_offer[n] = in;
        total += in;
    }
    const FreeAt free_at = [&](int n, int gpus) {
        auto answer = [&] {
            const double t = static_cast<double>(free_ms(n, gpus)) / 1000;
            return t <= now ? int64_t(0) : epoch(t);
        };
        if (gpus < 0 || gpus > gpn)
            return answer();
        int64_t& ep = free_ep_memo[static_cast<size_t>(n) * width + static_cast<size_t>(gpus)];
        if (ep == kUnknownMs)
            ep = answer();
        return ep;
    };
    const Outcome o = select->decide(facts_of(head), fut_offer, total, [&](int n) { return node_free[n]; },
                                     SelectMode::WillRun, epoch(now), free_at);
    if (o.offer == Outcome::Offer::Refuse)
        return 0;
    if (o.offer != Outcome::Offer::Narrowed)
        return -1;
    reserved = o.nodes;
    shadow = now;
    for (int n : reserved)
        shadow = std::max(shadow, static_cast<double>(free_ms(n, h.gpus_per_node)) / 1000);
    return 1;
}

// EASY backfill's reservation for the queue head, on nodes: for m2g,
// select/m2g's will-run answer (will_run_free_at); for the baselines (and
// what m2g leaves to cons_tres), walking the running jobs by end time,
// the first end time at which the head's policy places it on the nodes
// free then is the shadow time, and those nodes are `reserved`. End times are tried
// from the first with enough usable nodes, the step doubling until one
// places it, then halving back to the first that does (exact when more
// free nodes never make a placement fail: every baseline). False when
// it places nowhere even once every running job has ended.
bool Simulator::reserve_head(int head, double now, double& shadow)
{
    if (select) {
        const int answer = will_run_free_at(head, now, shadow);
        if (answer >= 0)
            return answer == 1;
    }
    const SimJobResult& h = jobs[head];
    const int g = std::max(h.gpus_per_node, 1);
    const std::vector<std::pair<double, int>>& by_end = planned_ends();
    ending.assign(by_end.begin(), by_end.end());
    group_end.clear();
    for (size_t i = 0; i < ending.size(); ++i)
        if (i + 1 == ending.size() || ending[i + 1].first != ending[i].first)
            group_end.push_back(i + 1);
    const int last = static_cast<int>(group_end.size()) - 1;
    // The jobs of end times (from, to] end: their GPUs come free on f;
    // `ready` counts the healthy nodes with the head's GPUs free.
    auto apply = [&](std::vector<int>& f, int& ready, int from, int to) {
        for (size_t i = from < 0 ? 0 : group_end[from]; i < group_end[to]; ++i) {
            const SimJobResult& e = jobs[ending[i].second];
            for (int n : e.placed) {
                const bool was = f[n] >= g;
                f[n] += e.gpus_per_node;
                ready += node_ok[n] && !was && f[n] >= g;
            }
        }
    };
    auto places = [&](const std::vector<int>& f, int ready) {
        if (ready < h.nodes)
            return false;
        fut_offer.resize(f.size());
        for (size_t n = 0; n < f.size(); ++n)
            fut_offer[n] = node_ok[n] && f[n] >= g;
        const bool ok = placer->place(h.nodes, fut_offer, picked);
        if (ok)
            reserved = picked;
        return ok;
    };
    // fut_free: the GPUs free after end time `lo`, where the head does
    // not fit (-1: now, where it just failed to start).
    fut_free = node_free;
    int lo = -1, ready = 0;
    for (size_t n = 0; n < fut_free.size(); ++n)
        ready += node_ok[n] && fut_free[n] >= g;
    while (ready < h.nodes && lo < last) {
        apply(fut_free, ready, lo, lo + 1);
        ++lo;
    }
    if (ready < h.nodes)
        return false;
    int hi = -1;
    if (lo >= 0 && places(fut_free, ready)) {
        hi = lo;
    } else {
        for (int step = 1; lo < last; step *= 2) {
            const int to = std::min(last, lo + step);
            fut_try = fut_free;
            int u = ready;
            apply(fut_try, u, lo, to);
            if (places(fut_try, u)) {
                hi = to;
                break;
            }
            fut_free.swap(fut_try);
            ready = u;
            lo = to;
        }
        if (hi < 0)
            return false;
        // `reserved` holds the placement at hi (places() sets it only
        // when it places).
        while (hi - lo > 1) {
            const int mid = lo + (hi - lo) / 2;
            fut_try = fut_free;
            int u = ready;
            apply(fut_try, u, lo, mid);
            if (places(fut_try, u)) {
                hi = mid;
            } else {
                fut_free.swap(fut_try);
                ready = u;
                lo = mid;
            }
        }
    }
    shadow = ending[group_end[hi] - 1].first;
    return true;
}

// try_place for a backfill candidate that would still run at the
// shadow time: on the usable nodes outside the reservation, which a
// reserved node leaves whole (Slurm's backfill takes the nodes it plans
// for the head out of such a job's test). The reserved nodes are hidden
// for the call (out of node_ok and the free counts) and try_place gets
// a usable[] cache and failure set of their own, so its rules apply
// unchanged.
void Simulator::hide_reserved(bool hide)
{
    hide_nodes(reserved, hide);
}

// `nodes` (healthy, each once) out of node_ok and the free counts, with
// try_place's caches swapped for those of the hidden state; and back.
void Simulator::hide_nodes(const std::vector<int>& nodes, bool hide)
{
    for (int n : nodes) {
        if (hide) {
            --free_count[node_free[n]];
            free_gpus -= node_free[n];
        } else {
            ++free_count[node_free[n]];
            free_gpus += node_free[n];
        }
        node_ok[n] = !hide;
    }
    std::swap(usable, usable_outside);
    std::swap(usable_version, usable_outside_version);
    std::swap(failed, failed_outside);
}

// The last reservation holds for the same head (m2g: with the same
// prefer clock) while its nodes will still be free at its shadow time:
// jobs end when planned, and a backfilled job ends by then or keeps off
// them, so no earlier end time can place the head and the walk would
// find the same time (only, perhaps, other nodes). Not with power
// policy or curtailment, whose answers and end times move.
bool Simulator::reserved_free_at(int head, double t)
{
    const int g = std::max(jobs[head].gpus_per_node, 1);
    fut_free = node_free;
    for (const auto& [end, j] : planned_ends()) {
        if (end > t)
            break;
        for (int n : jobs[j].placed)
            fut_free[n] += jobs[j].gpus_per_node;
    }
    for (int n : reserved)
        if (!node_ok[n] || fut_free[n] < g)
            return false;
    return true;
}

bool Simulator::try_place_outside(int j, double now)
{
    // Too few usable nodes outside the reservation: no need to look.
    if (reserved_free_version != version) {
        std::fill(reserved_free.begin(), reserved_free.end(), 0);
        for (int n : reserved)
            ++reserved_free[node_free[n]];
        reserved_free_version = version;
    }
    const int g = std::max(jobs[j].gpus_per_node, 1);
    int outside = usable_nodes(g);
    for (int k = g; k <= gpn; ++k)
        outside -= reserved_free[k];
    if (jobs[j].nodes > outside)
        return false;
    hide_reserved(true);
    const bool ok = try_place(j, now);
    hide_reserved(false);
    return ok;
}

// `blocked_bits`: the nodes a reservation of this pass holds at some time
// in [t0, t1) (Slurm's backfill: a job may use a node only if it is free
// in every node_space slot its run overlaps). blocked_list() turns them
// into `blocked`, the healthy ones, each once, when a test needs them.
void Simulator::blocked_during(double t0, double t1)
{
    std::fill(blocked_bits.begin(), blocked_bits.end(), 0);
    for (const BfReservation& b : bf_plan)
        if (b.t0 < t1 && t0 < b.t1)
            for (size_t w = 0; w < b.bits.size(); ++w)
                blocked_bits[w] |= b.bits[w];
}

void Simulator::blocked_list()
{
    blocked.clear();
    for (size_t w = 0; w < blocked_bits.size(); ++w)
        for (uint64_t x = blocked_bits[w]; x; x &= x - 1) {
            const int n = static_cast<int>(w * 64 + static_cast<unsigned>(__builtin_ctzll(x)));
            if (node_ok[n])
                blocked.push_back(n);
        }
}

// Slurm's backfill pass (SimOptions::backfill_slurm), after the FCFS
// starts: backfill.c _attempt_backfill walks the pending jobs in priority
// order and gives each the earliest start at which its placement (the
// select plugin's will-run test: running jobs end at their planned ends)
// uses no node that an earlier job's reservation holds during its run.
// Starting now, it starts; later, within bf_window, _add_reservation
// holds its nodes from then to its end (rounded up to bf_resolution) for
// the jobs after it. The head, which FCFS has just failed to start, only
// gets its reservation. Whole nodes are reserved, as node_space holds
// node bitmaps.
//
// What the pass decides is which jobs start now; its reservations only
// shape that, and the next pass plans afresh. So a candidate's reservation
// is planned only when a later candidate might start now
// (could_start_now): until then it waits, in order, in bf_deferred. A
// candidate that cannot start now against the reservations planned so
// far cannot against more either, so the starts are those of planning
// every reservation in turn, for far fewer will-run tests (most
// candidates of a deep queue cannot start now). The will-run tests not
// made would have told select/m2g the jobs are still there: still_waiting
// does, so their prefer clocks are those of testing them all.
void Simulator::backfill_slurm(double now)
{
    bf_plan.clear();
    bf_deferred.clear();
    blocked_bits.assign((m.nodes.size() + 63) / 64, 0);
    bf_capable.assign(static_cast<size_t>(gpn) + 1, std::vector<uint64_t>(blocked_bits.size(), 0));
    for (size_t n = 0; n < m.nodes.size(); ++n)
        if (node_ok[n])
            for (int g = 0; g <= std::min(m.nodes[n].gpus, gpn); ++g)
                bf_capable[static_cast<size_t>(g)][n / 64] |= uint64_t(1) << (n % 64);
    bf_free_version = 0;
    const int head = queue.front();
    int looked = 0;
    for (auto it = queue.begin(); it != queue.end() && free_gpus > 0 && looked < opts.backfill_depth; ++looked) {
        const int j = *it;
        if (jobs[j].nodes > static_cast<int>(m.nodes.size())) {
            ++it;
            continue;
        }
        if (j == head || !could_start_now(j, now)) {
            bf_deferred.push_back(j);
            ++it;
            continue;
        }
        // Plan the waiting reservations in order while j might still start.
        size_t planned = 0;
        bool may_start = true;
        while (may_start && planned < bf_deferred.size()) {
            backfill_one(bf_deferred[planned++], head, now);  // plans its reservation: it cannot start
            may_start = could_start_now(j, now);
        }
        bf_deferred.erase(bf_deferred.begin(), bf_deferred.begin() + static_cast<std::ptrdiff_t>(planned));
        if (!may_start) {
            bf_deferred.push_back(j);
            ++it;
            continue;
        }
        if (backfill_one(j, head, now)) {
            jobs[j].backfilled = true;
            start_job(j, now);
            it = queue.erase(it);
        } else {
            ++it;
        }
    }
    // What the will-run tests not made would have left behind: select/m2g
    // saw these jobs (their prefer clocks stay).
    if (select)
        for (int d : bf_deferred)
            select->still_waiting(static_cast<uint32_t>(d), epoch(now));
    // try_place's caches saw hidden nodes: forget them.
    std::fill(usable_version.begin(), usable_version.end(), 0);
    std::fill(usable_outside_version.begin(), usable_outside_version.end(), 0);
    failed.clear();
    failed_outside.clear();
    reserved_free_version = 0;
    kept = Kept{-1, 0, false, -1};
}

// Slurm's backfill agent (backfill.c backfill_agent): a pass runs when
// bf_interval has passed since the last one ended and the jobs, nodes or
// partitions changed since it began (_more_work: every scheduling event
// here, and the starts of that pass, made at its own second). Too soon:
// a kBackfill event brings the pass at the end of the interval.
void Simulator::backfill_pass(double now)
{
    if (queue.empty() || free_gpus == 0)
        return;  // the next change calls schedule() again
    if (opts.bf_interval_s > 0 && bf_last >= 0 && now < bf_last + opts.bf_interval_s) {
        if (!bf_wake_pending) {
            events.push({bf_last + opts.bf_interval_s, kBackfill, -1});
            bf_wake_pending = true;
        }
        return;
    }
    const size_t before = queue.size();
    backfill_slurm(now);
    bf_last = now;
    bf_more_work = queue.size() != before;
    if (bf_more_work && opts.bf_interval_s > 0 && !bf_wake_pending) {
        events.push({now + opts.bf_interval_s, kBackfill, -1});
        bf_wake_pending = true;
    }
}

// Whether candidate j passes backfill_one's test for starting now against
// the reservations planned so far: as many usable nodes with its GPUs free
// outside those held during its run as it has nodes.
bool Simulator::could_start_now(int j, double now)
{
    const int g = std::max(jobs[j].gpus_per_node, 1);
    if (g > gpn)
        return false;  // no node has its GPUs free
    const size_t words = blocked_bits.size();
    if (bf_free_version != version) {
        bf_free.assign(static_cast<size_t>(gpn) + 1, std::vector<uint64_t>(words, 0));
        for (size_t n = 0; n < m.nodes.size(); ++n)
            if (node_ok[n])
                for (int k = 0; k <= std::min(node_free[n], gpn); ++k)
                    bf_free[static_cast<size_t>(k)][n / 64] |= uint64_t(1) << (n % 64);
        bf_free_version = version;
    }
    blocked_during(now, now + plan_len(j));
    const std::vector<uint64_t>& free = bf_free[static_cast<size_t>(g)];
    int open = 0;
    for (size_t w = 0; w < words; ++w)
        open += popcount64(free[w] & ~blocked_bits[w]);
    return jobs[j].nodes <= open;
}

// One candidate of the pass: true when it starts now (never the head);
// else its reservation, when it has one within bf_window, joins bf_plan.
bool Simulator::backfill_one(int j, int head, double now)
{
    const size_t words = blocked_bits.size();
    const double len = plan_len(j);
    double t = now, s_held = now;
    bool started = false;
    // Each round moves t later: to the start the walk found, or past
    // a reservation that blocked every placement.
    const int g = std::max(jobs[j].gpus_per_node, 0);  // 0: every healthy node counts
    // The end of the first reservation in the way after t: the next
    // window to try; false when there is none within bf_window.
    auto move_past = [&](double& at) {
        double next = -1;
        for (const BfReservation& b : bf_plan)
            if (b.t1 > at && (next < 0 || b.t1 < next))
                next = b.t1;
        if (next < 0 || next - now > opts.bf_window_s)
            return false;
        at = next;
        return true;
    };
    for (int round = 0; round < 64 && !started; ++round) {
        blocked_during(t, t + len);
        // Fewer healthy nodes that could ever hold its GPUs outside the
        // held ones than the job has nodes: nothing below can place it in
        // this window (a start now, select/m2g's will-run offer and the
        // walk over end times all draw from those nodes), so nothing is
        // asked and the window moves on, as their answers would move it.
        // The one lasting effect of a will-run test, telling select/m2g
        // the job still waits, is kept. (Most tests of a deep queue end
        // here: the forecast's Slurm passes asked select/m2g 7.5 million
        // questions per forecast, 6.9 million of them on too few nodes.)
        int open = 0;
        if (g <= gpn)
            for (size_t w = 0; w < words; ++w)
                open += popcount64(bf_capable[static_cast<size_t>(g)][w] & ~blocked_bits[w]);
        if (open < jobs[j].nodes) {
            if (select)
                select->still_waiting(static_cast<uint32_t>(j), epoch(now));
            if (!move_past(t))
                break;
            continue;
        }
        blocked_list();
        // The held nodes leave the state (hidden) for the tests below; past
        // now, select/m2g's will-run alone asks, and they leave its offer.
        bool hidden = false;
        auto hide = [&] {
            hidden = true;
            hide_nodes(blocked, true);  // nothing below changes `blocked`
            std::fill(usable_version.begin(), usable_version.end(), 0);  // the caches of this hidden set
            failed.clear();
            reserved_free_version = 0;
        };
        int answer = -1;
        if (select && t > now)
            answer = will_run_free_at(j, now, s_held, blocked_bits.data());
        if (answer < 0)
            hide();
        if (t == now && j != head && jobs[j].nodes <= usable_nodes(jobs[j].gpus_per_node))
            started = try_place(j, now);
        double s = answer == 1 ? s_held : now;
        bool found = answer == 1;
        if (!started && t > now && !select && jobs[j].nodes <= usable_nodes(jobs[j].gpus_per_node) &&
            placer->place(jobs[j].nodes, usable_for(jobs[j].gpus_per_node), picked)) {
            reserved = picked;  // free now, and no reservation holds them from t
            found = true;
        }
        if (!started && !found && answer < 0)
            found = reserve_head(j, now, s);
        if (hidden)
            hide_nodes(blocked, false);
        if (started)
            break;
        if (found) {
            const double start = std::max(s, t);
            if (start - now > opts.bf_window_s)
                break;  // beyond bf_window: not planned
            picked_bits.assign(words, 0);
            for (int n : reserved)
                picked_bits[static_cast<size_t>(n) / 64] |= uint64_t(1) << (n % 64);
            bool conflict = false;
            for (const BfReservation& b : bf_plan) {
                if (!(b.t0 < start + len && start < b.t1))
                    continue;
                for (size_t w = 0; w < words && !conflict; ++w)
                    conflict = (b.bits[w] & picked_bits[w]) != 0;
                if (conflict)
                    break;
            }
            if (!conflict) {
                double end = start + len;
                if (opts.bf_resolution_s > 0)
                    end = now + std::ceil((end - now) / opts.bf_resolution_s) * opts.bf_resolution_s;
                bf_plan.push_back({picked_bits, start, end});
                break;
            }
            if (start > t) {
                t = start;
                continue;
            }
        }
        if (!move_past(t))
            break;
    }
    return started;
}

void Simulator::schedule(double now)
{
    failed.clear();
    // FCFS: start the head while it can start; a preemptor that cannot
    // start on free GPUs preempts if its policy finds victims (Slurm's
    // main scheduler asks select with the preempt plugin's candidates).
    while (!queue.empty()) {
        const int j = queue.front();
        if (!try_place(j, now) && !(jobs[j].preemptor && preempt_for(j, now)))
            break;
        start_job(j, now);
        queue.pop_front();
    }
    if (queue.empty() || free_gpus == 0)
        return;
    if (opts.backfill_slurm) {
        bf_more_work = true;
        backfill_pass(now);
        return;
    }
    // EASY backfill: the head's reservation, on nodes (reserve_head),
    // else in GPUs; made when a later job first has enough usable
    // nodes to start (nothing has changed by then).
    const int head = queue.front();
    double shadow = now;
    bool reserved_yet = false, by_nodes = false;
    int extra = 0;  // by GPUs: those the head will not need at the shadow time
    auto reserve = [&] {
        reserved_yet = true;
        if (opts.reserve_nodes) {
            int64_t since = 0;  // m2g: the head's prefer clock, and whether its wait is over
            bool over = false;
            if (select) {
                since = select->prefer_since(static_cast<uint32_t>(head));
                over = since > 0 && epoch(now) - since >= prefer_wait_s;
            }
            const Kept k{head, since, over, 0};
            if (!power_aware && !curtail && kept.same(k) && kept.shadow > now &&
                reserved_free_at(head, kept.shadow)) {
                by_nodes = true;
                shadow = kept.shadow;
            } else {
                by_nodes = reserve_head(head, now, shadow);
                kept = k;
                kept.shadow = by_nodes ? shadow : -1;
            }
        }
        if (by_nodes) {
            std::fill(usable_outside_version.begin(), usable_outside_version.end(), 0);
            failed_outside.clear();
            reserved_free_version = 0;
            return;
        }
        reserved.clear();
        const int head_gpus = jobs[head].nodes * jobs[head].gpus_per_node;
        int avail = free_gpus;
        shadow = now;
        for (const auto& [end, j] : planned_ends()) {
            if (avail >= head_gpus)
                break;
            avail += jobs[j].nodes * jobs[j].gpus_per_node;
            shadow = end;
        }
        extra = avail - head_gpus;
    };
    int looked = 0;
    for (auto it = std::next(queue.begin()); it != queue.end() && free_gpus > 0 && looked < opts.backfill_depth;
         ++looked) {
        const int j = *it;
        if (jobs[j].nodes > usable_nodes(jobs[j].gpus_per_node)) {
            ++it;  // try_place would say no
            continue;
        }
        if (!reserved_yet)
            reserve();
        const int g = jobs[j].nodes * jobs[j].gpus_per_node;
        const bool ends_before = now + plan_len(j) <= shadow;
        const bool ok = ends_before ? try_place(j, now)
                        : by_nodes  ? try_place_outside(j, now)
                                    : g <= extra && try_place(j, now);
        if (ok) {
            if (!ends_before && !by_nodes)
                extra -= g;
            jobs[j].backfilled = true;
            start_job(j, now);
            it = queue.erase(it);
        } else {
            ++it;
        }
    }
}

// ---- preemption (SimOptions::preempt_pct) ------------------------------------

// What Slurm's preempt plugin hands select for a preemptor: every running
// job of the other QOS (preempt/qos, PreemptMode=REQUEUE), with the work an
// eviction now throws away as select/m2g counts it (GPUs x time run).
std::vector<PreemptCandidate> Simulator::preempt_candidates(double now) const
{
    std::vector<PreemptCandidate> out;
    for (const auto& [end, v] : running) {
        const SimJobResult& job = jobs[v];
        if (job.preemptor)
            continue;
        PreemptCandidate c;
        c.job_id = static_cast<uint32_t>(v);
        c.gpu_hours = job.gpus * (now - last_start[v]) / 3600.0;
        c.gpus = job.gpus;
        c.ran_s = now - last_start[v];
        c.restarted = job.preemptions > 0;
        for (int n : job.placed)
            c.held.emplace_back(n, job.gpus_per_node);
        out.push_back(std::move(c));
    }
    return out;
}

// cons_tres's answer with preemptee candidates (job_test.c _run_now(),
// PreemptMode REQUEUE or CANCEL): the candidates in the preempt plugin's
// order (preempt/qos: preempt.c _sort_by_prio() on preempt_qos.c
// preempt_p_get_prio(), QOS priority then node count ascending; one QOS
// here, and the list is job_list's, so submission order among equals) are
// removed one by one, the job tested after each (its policy's placer, as
// _job_test() runs the topology's node evaluation), until it fits. Twice
// more (preempt_reorder_cnt 1, preempt_strict_order off) the list is
// re-sorted, the job that made it fit first, then the jobs before it by how
// many of the chosen nodes they hold (_get_usable_nodes(),
// _sort_usable_nodes_dec()), and the search runs again; the victims are
// the jobs up to the one that made it fit whose nodes the job uses
// (job_overlap_and_running()). `pl`: the policy's placer; `allowed`: the
// offer (null: every node). The job's nodes in `picked`.
bool Simulator::stock_preempt(Placer& pl, int j, const std::vector<PreemptCandidate>& cands,
                              std::vector<uint32_t>& victims, const std::vector<uint8_t>* allowed)
{
    const SimJobResult& job = jobs[j];
    std::vector<size_t> order(cands.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const int na = jobs[cands[a].job_id].nodes, nb = jobs[cands[b].job_id].nodes;
        return na != nb ? na < nb : cands[a].job_id < cands[b].job_id;
    });
    const size_t nn = m.nodes.size();
    std::vector<int> extra(nn);
    std::vector<uint8_t> offer(nn), chosen(nn);
    auto can_use = [&](size_t n) {
        return node_ok[n] && (!allowed || (*allowed)[n]) && node_free[n] + extra[n] >= job.gpus_per_node;
    };
    size_t passes = 0, k = 0;
    for (;;) {
        std::fill(extra.begin(), extra.end(), 0);
        for (size_t n = 0; n < nn; ++n)
            offer[n] = can_use(n);
        bool fit = false;
        for (k = 0; k < order.size(); ++k) {
            for (const auto& [n, g] : cands[order[k]].held) {
                extra[n] += g;
                offer[n] = can_use(static_cast<size_t>(n));
            }
            if ((fit = pl.place(job.nodes, offer, picked)))
                break;
        }
        if (!fit)
            return false;
        if (passes++ > 1 || order.size() <= passes)
            break;
        std::fill(chosen.begin(), chosen.end(), 0);
        for (int n : picked)
            chosen[n] = 1;
        std::vector<int> overlap(cands.size(), 0);
        overlap[order[k]] = 99999;
        for (size_t i = 0; i < k; ++i)
            for (const auto& held : cands[order[i]].held)
                overlap[order[i]] += chosen[held.first];
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return overlap[a] > overlap[b]; });
    }
    std::fill(chosen.begin(), chosen.end(), 0);
    for (int n : picked)
        chosen[n] = 1;
    victims.clear();
    for (size_t i = 0; i <= k; ++i)
        for (const auto& held : cands[order[i]].held)
            if (chosen[held.first]) {
                victims.push_back(cands[order[i]].job_id);
                break;
            }
    std::sort(victims.begin(), victims.end());
    return true;
}

// Preemptor j cannot start on free GPUs: its policy's victims, evicted,
// and its nodes in `picked`. m2g: select/m2g's session with the candidates
// (a Narrowed plan names the victims and the nodes; what it leaves to
// cons_tres, cons_tres's _run_now() above on the tree placer).
bool Simulator::preempt_for(int j, double now)
{
    if (opts.preempt_pct <= 0)
        return false;
    const std::vector<PreemptCandidate> cands = preempt_candidates(now);
    if (cands.empty())
        return false;
    SimJobResult& job = jobs[j];
    std::vector<uint32_t> victims;
    bool ok = false;
    if (!select) {
        ok = stock_preempt(*placer, j, cands, victims, nullptr);
    } else {
        // Stock block on the same state first (it writes `picked`).
        std::vector<uint32_t> ref_victims;
        const bool ref_ok = block_ref && stock_preempt(*block_ref, j, cands, ref_victims, nullptr);
        std::vector<uint8_t> ref_nodes(m.nodes.size(), 0);
        if (ref_ok)
            for (int n : picked)
                ref_nodes[n] = 1;
        std::vector<uint8_t> offer(m.nodes.size());
        int total = 0;
        for (size_t n = 0; n < m.nodes.size(); ++n)
            total += offer[n] = node_ok[n] && m.nodes[n].gpus >= job.gpus_per_node;
        const JobFacts f = facts_of(j);
        const Outcome o = select->decide(f, offer, total, [&](int n) { return node_free[n]; }, SelectMode::RunNow,
                                         epoch(now), nullptr, &cands);
        stock_offer = offer;
        OfferActions act;
        act.rule_out = [&](const std::vector<int>& nodes) {
            for (int n : nodes)
                stock_offer[n] = 0;
        };
        act.test_offer = [&] { return stock_preempt(*placer, j, cands, victims, &stock_offer); };
        act.test_only = [&](const std::vector<int>& nodes) {
            picked = nodes;
            victims = o.preempt;
            return true;
        };
        ok = select->apply(o, act).accepted;
        if (ok && o.preempting)
            select->preemption_started(f.job_id, o, epoch(now));
        if (ok && block_ref) {
            if (!ref_ok) {
                ++r.paired_block_none;
            } else {
                ++r.paired_preemptions;
                r.paired_m2g_victims += static_cast<int>(victims.size());
                r.paired_block_victims += static_cast<int>(ref_victims.size());
                for (uint32_t v : victims) {
                    r.paired_m2g_evicted_gpu_s += jobs[v].gpus * (now - last_start[v]);
                    r.paired_m2g_lost_gpu_s += evict_loss(static_cast<int>(v), now);
                }
                for (uint32_t v : ref_victims) {
                    r.paired_block_evicted_gpu_s += jobs[v].gpus * (now - last_start[v]);
                    r.paired_block_lost_gpu_s += evict_loss(static_cast<int>(v), now);
                    r.paired_block_wasted += std::none_of(jobs[v].placed.begin(), jobs[v].placed.end(),
                                                          [&](int n) { return ref_nodes[n] != 0; });
                }
            }
        }
    }
    if (!ok)
        return false;
    // The victims must leave the job's GPUs free on every node it got.
    std::vector<int> freed(m.nodes.size(), 0);
    for (uint32_t v : victims)
        for (int n : jobs[v].placed)
            freed[n] += jobs[v].gpus_per_node;
    for (int n : picked)
        if (node_free[n] + freed[n] < job.gpus_per_node)
            throw Error("internal: preempting for job " + job.id + " leaves node " + m.nodes[n].name +
                        " short of GPUs");
    std::vector<uint8_t> chosen(m.nodes.size(), 0);
    for (int n : picked)
        chosen[n] = 1;
    for (uint32_t v : victims) {
        const SimJobResult& vj = jobs[v];
        job.evicted_gpu_s += vj.gpus * (now - last_start[v]);
        job.wasted += std::none_of(vj.placed.begin(), vj.placed.end(), [&](int n) { return chosen[n] != 0; });
        ++job.victims;
        evict(static_cast<int>(v), now);
    }
    if (!victims.empty() && job.start < 0)
        job.preempted_start = true;
    failed.clear();  // the victims' other nodes are free now
    return true;
}

// A victim is requeued (PreemptMode=REQUEUE): its work since its last
// checkpoint is lost, its GPUs are free now, and it waits in the queue
// again in its place by submission, to restart with restart_overhead_s.
// What an eviction now costs: the work done since the last checkpoint
// (its restart overhead, redone, is not work) and the restart overhead the
// next run redoes, in GPU-seconds.
double Simulator::evict_loss(int v, double now, double* keep_out) const
{
    const double ran = now - last_start[v];
    const double done = pre_saved[v] + std::max(0.0, ran - pre_overhead[v]);
    double keep = pre_saved[v];
    if (opts.checkpoint_interval_s > 0)
        keep = std::max(keep, std::floor(done / opts.checkpoint_interval_s) * opts.checkpoint_interval_s);
    keep = std::min(keep, duration[v]);
    if (keep_out)
        *keep_out = keep;
    return (std::max(0.0, done - keep) + opts.restart_overhead_s) * jobs[v].gpus;
}

void Simulator::evict(int v, double now)
{
    SimJobResult& job = jobs[v];
    const double ran = now - last_start[v];
    double keep = 0;
    job.lost_gpu_s += evict_loss(v, now, &keep);
    pre_ran[v] += ran;
    pre_saved[v] = keep;
    pre_overhead[v] = opts.restart_overhead_s;
    pre_len[v] = opts.restart_overhead_s + (duration[v] - keep);
    release(v);
    job.end = -1;
    ++job.preemptions;
    enqueue(v);
}

}  // namespace sim
}  // namespace m2g
