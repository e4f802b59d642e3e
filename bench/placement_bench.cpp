// One placement decision of select/m2g's engine on NVL72 clusters of 144,
// 2,502 and 25,002 nodes (the last is about 100k GPUs), with racks
// fragmented at random (seeded). Reports p50 and p99 per decision, and the
// ratio to a naive first-fit scan over the same nodes in the same run (the
// floor any selection pays for touching every node). Numbers, not asserts:
// contrib/m2g-bench writes them to doc/results/.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "core/model/config.hpp"
#include "core/place/engine.hpp"

namespace {

using m2g::bench::nvl72_cluster;
using m2g::bench::percentile;

// Every rack has a random number of busy nodes (none to all), seeded.
std::vector<uint8_t> fragmented(const m2g::Model& m, unsigned seed)
{
    std::mt19937 rng(seed);
    std::vector<uint8_t> usable(m.nodes.size(), 1);
    for (const auto& d : m.domains) {
        const int busy = std::uniform_int_distribution<int>(0, 18)(rng);
        for (int k = 0; k < busy; ++k)
            usable[d.nodes[k]] = 0;
    }
    return usable;
}

const int kRequests[] = {1, 4, 16, 18, 36, 72, 144};

void BM_Place(benchmark::State& state)
{
    const m2g::Model m = nvl72_cluster(static_cast<int>(state.range(0)));
    const std::vector<uint8_t> usable = fragmented(m, 42);
    m2g::Engine engine(m);
    m2g::ClusterState health;
    std::vector<double> us;
    size_t i = 0, placed = 0;
    for (auto _ : state) {
        m2g::PlacementRequest req;
        req.nodes = kRequests[i++ % (sizeof kRequests / sizeof kRequests[0])];
        req.fallback = true;
        const auto t0 = std::chrono::steady_clock::now();
        const m2g::Placement p = engine.place(req, usable, health);
        const auto t1 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(p.nodes.data());
        placed += p.ok;
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    state.counters["nodes"] = static_cast<double>(m.nodes.size());
    state.counters["p50_us"] = percentile(us, 0.50);
    state.counters["p99_us"] = percentile(us, 0.99);
    state.counters["placed_share"] = us.empty() ? 0 : static_cast<double>(placed) / us.size();
}

// The floor: first fit, one pass over the nodes, no topology.
void BM_FirstFit(benchmark::State& state)
{
    const m2g::Model m = nvl72_cluster(static_cast<int>(state.range(0)));
    const std::vector<uint8_t> usable = fragmented(m, 42);
    std::vector<int> chosen;
    chosen.reserve(200);
    std::vector<double> us;
    size_t i = 0;
    for (auto _ : state) {
        const int want = kRequests[i++ % (sizeof kRequests / sizeof kRequests[0])];
        const auto t0 = std::chrono::steady_clock::now();
        chosen.clear();
        for (size_t n = 0; n < usable.size() && static_cast<int>(chosen.size()) < want; ++n)
            if (usable[n])
                chosen.push_back(static_cast<int>(n));
        const auto t1 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(chosen.data());
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    state.counters["nodes"] = static_cast<double>(m.nodes.size());
    state.counters["p50_us"] = percentile(us, 0.50);
    state.counters["p99_us"] = percentile(us, 0.99);
}

}  // namespace

// 8 racks = 144 nodes, 139 racks = 2,502 nodes, 1,389 racks = 25,002 nodes.
BENCHMARK(BM_Place)->Arg(8)->Arg(139)->Arg(1389)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FirstFit)->Arg(8)->Arg(139)->Arg(1389)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
