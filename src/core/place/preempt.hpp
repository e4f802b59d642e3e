// m2g core: preemption that respects NVLink domains.
//
// When a job can start only by preempting others, Slurm passes select the
// jobs it may preempt (its preempt plugin's candidates: preempt/qos,
// preempt/partition_prio). Stock cons_tres removes them greedily in the
// plugin's order and keeps those whose nodes the job then uses
// (cons_tres job_test.c, _run_now()): it never asks which domain is
// cheapest to clear. plan_preemption() does: among the NVLink domains (and
// nodes outside any domain) it finds the nodes the job needs whose
// clearing loses the least work, counted in GPU-hours (each victim's GPUs
// times the time it has run, the work a requeue or cancel throws away),
// then the fewest jobs, and names the victims. A job that fits one domain
// gets one domain; a larger one the fewest groups, largest first, then the
// cheapest; segments stay whole inside their group. Jobs already leaving
// (completing, evicted by an earlier pass) free their GPUs at no cost and
// are never named again, so a preemptor waiting for its victims to go keeps
// choosing the domain they leave.
//
// The session validates the plan through the engine (intent, segments,
// health, spare nodes) and hands it to the adapter, which offers cons_tres
// only the planned nodes and only the planned victims.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model/model.hpp"

namespace m2g {

struct PreemptCandidate {
    uint32_t job_id = 0;
    // Work lost when it is evicted now: its GPUs x the hours it has run.
    // With `gpus` and `ran_s` known, the session replaces it with
    // preempt_loss_gpu_hours() under m2g.conf's PreemptCheckpointSec= and
    // PreemptRestartSec=.
    double gpu_hours = 0;
    int gpus = 0;        // GPUs it holds (0: unknown)
    double ran_s = -1;   // seconds its current run has lasted (< 0: unknown)
    bool restarted = false;  // a requeued job's later run (Slurm's restart_cnt > 0)
    // Already leaving (completing after an eviction): frees its GPUs at no
    // cost and is never a victim to name.
    bool leaving = false;
    // (model node, GPUs it holds there; < 0: unknown, it holds the node).
    std::vector<std::pair<int, int>> held;
};

struct PreemptRequest {
    int nodes = 1;          // nodes the job needs
    int segment = 0;        // nodes per segment, 0 none
    int gpus_per_node = 0;  // GPUs it needs on each node; 0: the whole node
    bool one_group = true;  // the job must fit one NVLink domain when it can (strict or prefer nvlink)
};

struct PreemptPlan {
    bool ok = false;
    std::vector<int> nodes;         // model nodes, rank order
    std::vector<uint32_t> victims;  // ascending job id
    double gpu_hours = 0;           // the work they lose
    std::vector<int> groups;        // domains used (domain index, or -1-node outside domains)
    int groups_possible = 0;        // single-group jobs: the groups a plan could clear
    double next_gpu_hours = -1;     // single-group jobs: the next-cheapest group's cost; < 0 none
    int next_group = 0;
    std::string reason;             // one line for people
};

// The work (GPU-hours) a job of `gpus` GPUs that has run `ran_s` seconds
// loses when evicted now: its work since its last checkpoint (one every
// `checkpoint_s` of work; 0: none, all it did), plus the `restart_s` it
// redoes when it starts again. A `restarted` job spent its first
// `restart_s` of this run redoing what it had lost, so its checkpoints come
// that much later.
double preempt_loss_gpu_hours(int gpus, double ran_s, int checkpoint_s, int restart_s, bool restarted = false);

// `allowed`: per model node, whether the job may use it (Slurm offers it
// and the signals allow it); `free_now`: GPUs free on each model node now.
// Never throws for well-formed input (indices in range).
PreemptPlan plan_preemption(const Model& m, const PreemptRequest& req, const std::vector<uint8_t>& allowed,
                            const std::vector<int>& free_now, const std::vector<PreemptCandidate>& candidates);

// A group's name as plans and reasons write it: the domain's, or the
// node's for a node outside domains.
std::string preempt_group_name(const Model& m, int group);

}  // namespace m2g
