// One admission decision (job_submit/m2g's decide()) and one placement gate
// (select/m2g's gate()) on NVL72 clusters of 144, 2,502 and 25,002 nodes,
// against a snapshot with an active site event, a budget and draw for every
// rack and a maintenance window on every eighth rack. p50/p99 per call, in
// microseconds. Numbers, not asserts: contrib/m2g-bench writes them out.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <vector>

#include "bench_util.hpp"
#include "core/power/admission.hpp"
#include "core/power/signals.hpp"

namespace {

using m2g::bench::nvl72_cluster;
using m2g::bench::percentile;

constexpr int64_t kNow = 1'800'000'000;

m2g::SignalsView busy_view(const m2g::Model& m)
{
    auto s = std::make_shared<m2g::Signals>();
    s->generated_at = kNow - 10;
    s->site = {static_cast<double>(m.domains.size()) * 120.0, static_cast<double>(m.domains.size()) * 80.0};
    s->racks.resize(m.domains.size());
    for (size_t d = 0; d < m.domains.size(); ++d)
        s->racks[d] = {132.0, 60.0 + static_cast<double>(d % 9) * 8.0};
    s->rows.resize(m.fault_domains.size());
    s->thermal.resize(m.nodes.size());
    m2g::CurtailmentEvent ev;
    ev.id = "bench-dr";
    ev.start = kNow - 60;
    ev.end = kNow + 3600;
    ev.curtail_pct = 20;
    ev.scope_name = "site";
    s->events.push_back(ev);
    for (size_t d = 0; d < m.domains.size(); d += 8) {
        m2g::MaintenanceWindow w;
        w.id = "mw-" + m.domains[d].name;
        w.start = kNow + 1800;
        w.end = kNow + 5400;
        w.nodes = m.domains[d].nodes;
        s->maintenance.push_back(std::move(w));
    }
    m2g::SignalsView v;
    v.snap = s;
    v.state = m2g::FeedState::Fresh;
    v.age_s = 10;
    return v;
}

const int kNodes[] = {1, 4, 18, 36, 72};

void BM_AdmissionDecide(benchmark::State& state)
{
    const m2g::Model m = nvl72_cluster(static_cast<int>(state.range(0)));
    const m2g::SignalsView v = busy_view(m);
    std::vector<double> us;
    size_t i = 0;
    for (auto _ : state) {
        m2g::AdmissionRequest r;
        r.nodes = kNodes[i % (sizeof kNodes / sizeof kNodes[0])];
        r.gpus = 4 * r.nodes;
        r.intent.workload_class = (i++ % 2) ? m2g::WorkloadClass::Training : m2g::WorkloadClass::Inference;
        r.time_limit_s = 3 * 3600;
        r.now = kNow;
        r.account = "bench";
        const auto t0 = std::chrono::steady_clock::now();
        const m2g::Decision d = m2g::decide(m, v, r, nullptr);
        const auto t1 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(d.begin_time);
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    state.counters["nodes"] = static_cast<double>(m.nodes.size());
    state.counters["p50_us"] = percentile(us, 0.50);
    state.counters["p99_us"] = percentile(us, 0.99);
}

void BM_AdmissionGate(benchmark::State& state)
{
    const m2g::Model m = nvl72_cluster(static_cast<int>(state.range(0)));
    const m2g::SignalsView v = busy_view(m);
    const std::vector<double> started(m.domains.size(), 0.0);
    std::vector<uint8_t> usable;
    std::vector<double> heat;
    std::vector<double> us;
    size_t i = 0;
    for (auto _ : state) {
        m2g::GateRequest r;
        r.nodes = kNodes[i++ % (sizeof kNodes / sizeof kNodes[0])];
        r.gpus_per_node = 4;
        r.intent.workload_class = m2g::WorkloadClass::Training;
        r.time_limit_s = 3 * 3600;
        r.now = kNow;
        usable.assign(m.nodes.size(), 1);
        const auto t0 = std::chrono::steady_clock::now();
        const m2g::GateResult g = m2g::gate(m, v, r, started, nullptr, usable, heat);
        const auto t1 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(g.trimmed_nodes);
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    state.counters["nodes"] = static_cast<double>(m.nodes.size());
    state.counters["p50_us"] = percentile(us, 0.50);
    state.counters["p99_us"] = percentile(us, 0.99);
}

}  // namespace

BENCHMARK(BM_AdmissionDecide)->Arg(8)->Arg(139)->Arg(1389)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AdmissionGate)->Arg(8)->Arg(139)->Arg(1389)->Unit(benchmark::kMicrosecond);
