// One forecast (make_forecast(), what `m2g forecast` and m2g-exporter's
// forecast thread run) with its P10/P90 bands: 20 runs drawing per-GPU power
// and run times, 24 h of site, row and rack bands, on a busy NVL72 cluster
// of 144 nodes with 1,000 pending jobs and of 25,002 nodes with 10,000; and
// one job's alternatives (three more runs) on the small one. Seconds per
// forecast on one core. Numbers, not asserts: contrib/m2g-bench writes them
// out (issue 30: under 2 s and under 30 s).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <thread>
#include <random>
#include <vector>

#include "bench_util.hpp"
#include "tools/reports/forecast.hpp"

namespace {

using m2g::bench::nvl72_cluster;

constexpr int64_t kNow = 1'800'000'000;

struct Busy {
    m2g::Model m;
    m2g::ClusterView c;
};

// Every rack 90-100% full of running jobs (1 to 18 nodes, limits 1-24 h,
// each partway through), then `pending` jobs of 1 GPU to 8 racks in
// priority order, limits 1-24 h. Seed 42.
Busy busy(int racks, int pending)
{
    Busy b{nvl72_cluster(racks), {}};
    std::mt19937_64 rng(42);
    b.c.taken_at = kNow;
    b.c.nodes.resize(b.m.nodes.size());
    for (size_t n = 0; n < b.m.nodes.size(); ++n) {
        b.c.nodes[n].known = true;
        b.c.nodes[n].gpus_total = b.m.nodes[n].gpus;
    }
    uint32_t id = 1;
    const int sizes[] = {1, 1, 2, 4, 9, 18};
    for (const m2g::Domain& d : b.m.domains) {
        size_t used = 0;
        const size_t fill = d.nodes.size() - rng() % 2;
        while (used < fill) {
            const size_t n = std::min<size_t>(fill - used, static_cast<size_t>(sizes[rng() % 6]));
            m2g::JobView j;
            j.id = id++;
            j.state = m2g::JobState::Running;
            j.intent.workload_class = m2g::WorkloadClass::Training;
            j.gpus = static_cast<int>(n) * 4;
            j.nodes = static_cast<int>(n);
            for (size_t k = 0; k < n; ++k) {
                j.node_idx.push_back(d.nodes[used + k]);
                b.c.nodes[static_cast<size_t>(d.nodes[used + k])].gpus_alloc = 4;
            }
            j.time_limit_s = 3600 * (1 + static_cast<int64_t>(rng() % 24));
            j.start_time = kNow - static_cast<int64_t>(rng() % static_cast<uint64_t>(j.time_limit_s));
            j.end_time = j.start_time + j.time_limit_s;
            b.c.jobs.push_back(std::move(j));
            used += n;
        }
    }
    const int gpus[] = {1, 4, 8, 16, 36, 72, 144, 288, 576};
    for (int p = 0; p < pending; ++p) {
        m2g::JobView j;
        j.id = id++;
        j.state = m2g::JobState::Pending;
        j.intent.workload_class = m2g::WorkloadClass::Training;
        j.gpus = gpus[rng() % 9];
        j.nodes = (j.gpus + 3) / 4;
        j.submit_time = kNow - 3600 + p;
        j.priority = static_cast<uint32_t>(1'000'000 - p);
        j.time_limit_s = 3600 * (1 + static_cast<int64_t>(rng() % 24));
        j.slurm_reason = "Resources";
        b.c.jobs.push_back(std::move(j));
    }
    return b;
}

const m2g::PowerCdf& cdf()
{
    static const m2g::PowerCdf c = m2g::parse_power_cdf(
        "cluster,metric,unit,cdf_pct,value\nb,gpu_power,W,0,60\nb,gpu_power,W,25,180\nb,gpu_power,W,50,320\n"
        "b,gpu_power,W,75,520\nb,gpu_power,W,100,1000\n",
        "bench", "b");
    return c;
}

m2g::ForecastOptions options(bool alternatives, uint32_t job)
{
    m2g::ForecastOptions o;
    o.samples = 20;
    o.power = &cdf();
    o.horizon_s = 86400;
    o.step_s = 900;
    for (int k = 1; k <= 100; ++k)  // run time / limit of 100 ended jobs
        o.runtime_ratios.push_back(k / 100.0);
    if (alternatives) {
        o.samples = 1;
        o.power = nullptr;
        o.alternatives_for = job;
    }
    return o;
}

// A digest of what a forecast says (every job's start, percentiles and
// nodes, every band point): a change that only makes the forecast faster
// leaves it as it was, which the page shows beside the time.
double digest(const m2g::Forecast& f)
{
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t x) {
        for (int b = 0; b < 8; ++b) {
            h ^= (x >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    };
    for (const m2g::ForecastJob& j : f.jobs) {
        for (int64_t v : {int64_t(j.id), j.start, j.start_p10, j.start_p50, j.start_p90, int64_t(j.domains)})
            mix(static_cast<uint64_t>(v));
        for (char c : j.nodes_list)
            mix(static_cast<unsigned char>(c));
        for (const m2g::ForecastAlternative& a : j.alternatives)
            mix(static_cast<uint64_t>(a.start));
    }
    for (const m2g::ForecastBand& b : f.bands)
        for (const std::vector<double>* v : {&b.p10, &b.p50, &b.p90})
            for (double x : *v)
                mix(static_cast<uint64_t>(std::llround(x * 1000)));
    return static_cast<double>(h % 1000000);  // six digits, as the counters print them
}

void run(benchmark::State& state, bool alternatives, int threads = 1)
{
    const Busy b = busy(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
    uint32_t first_pending = 0;
    int running = 0;
    for (const m2g::JobView& j : b.c.jobs) {
        if (j.state == m2g::JobState::Running)
            ++running;
        else if (first_pending == 0)
            first_pending = j.id;
    }
    m2g::ForecastOptions o = options(alternatives, first_pending);
    o.threads = threads;
    const m2g::SignalsView none{};
    double total = 0, sum = 0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        const m2g::Forecast f = m2g::make_forecast(b.m, b.c, none, kNow, o);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        state.SetIterationTime(s);
        total += s;
        sum = digest(f);
    }
    state.counters["nodes"] = static_cast<double>(b.m.nodes.size());
    state.counters["running"] = running;
    state.counters["pending"] = static_cast<double>(state.range(1));
    state.counters["s_per_forecast"] = total / static_cast<double>(state.iterations());
    state.counters["threads"] = threads;
    state.counters["digest"] = sum;
}

void BM_Forecast(benchmark::State& state)
{
    run(state, false);
}

void BM_ForecastAlternatives(benchmark::State& state)
{
    run(state, true);
}

// The same forecast with its runs on one thread per core (ForecastOptions::
// threads, `m2g forecast`'s default): run unpinned.
void BM_ForecastThreads(benchmark::State& state)
{
    run(state, false, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace

BENCHMARK(BM_Forecast)->Args({8, 1000})->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
// 144 nodes with a quarter of the queue, to show how the cost grows with it.
// 2,304 and 25,002 nodes: contrib/m2g-bench-forecast runs them on request
// (M2G_BENCH_LARGE=1): hours at today's cost (doc/results/forecast-bench.md).
BENCHMARK(BM_Forecast)->Args({8, 250})->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
// How the cost grows with the cluster: 576 and 2,304 nodes, 1,000 pending.
BENCHMARK(BM_Forecast)->Args({32, 1000})->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_Forecast)->Args({128, 1000})->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_Forecast)->Args({1389, 10000})->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_ForecastAlternatives)->Args({8, 1000})->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_ForecastThreads)->Args({8, 1000})->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);

BENCHMARK_MAIN();
