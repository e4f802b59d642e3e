// m2g core: a trace-driven simulator on the production placement engine
// (`m2g simulate`, doc/simulator.md).
//
// Discrete events (job submit, job end, and for m2g the end of a job's
// prefer wait) drive one FCFS queue with EASY backfill. Jobs take whole
// nodes, exclusively. Where a job goes is the chosen policy's decision:
//   m2g       Engine::place, the very code select/m2g runs (never a copy);
//   tree      an approximation of cons_tres with topology/tree;
//   block     an approximation of Slurm 23.11+ topology/block;
//   firstfit  the first free nodes in rank order.
// No Slurm, no globals, no randomness but the seeded tie shuffle.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "topology/model.hpp"
#include "topology/trace.hpp"

namespace m2g {

enum class SimPolicy { M2G, Tree, Block, FirstFit };

const char* to_string(SimPolicy p);
// "m2g", "tree", "block" or "firstfit"; throws ParseError naming the choices.
SimPolicy parse_sim_policy(std::string_view s);

struct SimOptions {
    SimPolicy policy = SimPolicy::M2G;
    int scale_gpus = 1;       // multiplies every job's GPUs before rounding up to nodes
    double load = 0;          // > 0: scale inter-arrival times to this offered load; 0: as recorded
    uint64_t seed = 0;        // != 0: jobs submitted at the same second are shuffled with this seed
    int backfill_depth = 500; // queued jobs looked at per pass (Slurm's bf_max_job_test)
};

struct SimJobResult {
    std::string id;
    int gpus = 0;            // after --scale-gpus
    int nodes = 0;           // ceil(gpus / gpus_per_node)
    double submit = 0;       // after --load
    double start = -1;       // -1: rejected (can never fit)
    double end = -1;
    bool backfilled = false; // started ahead of an earlier job
    std::vector<int> placed; // model node indices, ascending
    int domains = 0;         // NVLink groups spanned (a node outside domains is its own group)
    int domain_lb = 0;       // fewest groups that could hold it on an empty cluster
    int leaves = 0;          // leaf switches spanned
    int leaf_lb = 0;         // fewest leaf switches that could hold it (0: no leaf switches)
};

struct SimStats {  // one size class, or all jobs
    std::string name;
    int jobs = 0;
    double delay_mean = 0, delay_p95 = 0, delay_p99 = 0;          // start - submit
    double completion_mean = 0, completion_p95 = 0, completion_p99 = 0;  // end - submit
};

struct SimResult {
    std::string policy;
    int gpus_per_node = 0;
    int scale_gpus = 1;
    double load = 0;            // as asked (0: as recorded)
    double offered_load = 0;    // node-seconds asked / (nodes x submit span), after --load
    double arrival_factor = 1;  // inter-arrival times were multiplied by this
    uint64_t seed = 0;
    int jobs = 0;               // simulated (started) jobs
    int rejected = 0;           // larger than the policy can ever place
    int backfilled = 0;
    int fit_one_domain = 0;     // jobs whose lower bound is one domain
    double containment = 1;     // share of those placed in one domain (1 when there are none)
    int multi_domain_jobs = 0;  // jobs whose lower bound is more than one domain
    double span_ratio = 1;      // mean domains / lower bound over those (1 when there are none)
    double leaf_span_ratio = 1; // mean leaves / lower bound over jobs under leaf switches
    double stranded_gpus = 0;   // time-averaged fraction of GPUs idle while the queue head waits
    double utilisation = 0;     // GPU-seconds asked / (GPUs x makespan)
    double node_utilisation = 0;  // node-seconds allocated / (nodes x makespan)
    double makespan_s = 0;      // first submit to last end
    SimStats all;
    std::vector<SimStats> classes;  // "node", "domain", "multi-domain"
    int cap_violations = 0;     // power caps are not simulated yet: always 0
    double wall_s = 0;
    double sim_jobs_per_s = 0;
    std::vector<SimJobResult> job_results;  // in submit order (after the tie shuffle)
};

// Run the trace on the model. Throws Error when the options or the model
// do not allow the policy (e.g. block with nodes outside NVLink domains).
SimResult simulate(const Model& m, const Trace& trace, const SimOptions& opts);

// `m2g simulate` output: labelled lines, or one JSON object.
std::string format_sim_result(const SimResult& r, bool json);

}  // namespace m2g
