// m2g tools: job traces for the simulator (`m2g simulate`, doc/simulator.md).
//
// Two formats:
//   - the Philly CSV of ../shared/data (header row; the columns job_id,
//     submit_s, duration_s and num_gpus are used, others are ignored);
//   - the Standard Workload Format (SWF, Feitelson's Parallel Workloads
//     Archive): 18 whitespace-separated fields per job, ';' comments; a
//     processor counts as one GPU, the requested time (field 9) is the
//     job's time limit.
// Every error names file:line and says what is accepted.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job/intent.hpp"

namespace m2g {

struct TraceJob {
    std::string id;
    double submit = 0;    // seconds, any origin
    double duration = 0;  // seconds of run time, >= 0
    int gpus = 0;         // > 0
    double limit = 0;     // time limit asked for (SWF field 9, requested time), seconds; 0: none given
    // A forecast's starting state (`m2g forecast`; never from a trace file):
    // the job's own --m2g-* intent (nullopt: the run's class assignment),
    // and for a job already running at `submit`, the model nodes it holds
    // (empty: it is submitted then, and placed as any other).
    std::optional<JobIntent> intent{};
    int nodes = 0;  // nodes asked for (0: as few as hold its GPUs)
    std::vector<int> running_on{};
    double w_gpu = 0;  // > 0: its draw per GPU as measured (a running job), not drawn or estimated
};

struct Trace {
    std::string format;  // "philly" or "swf"
    std::vector<TraceJob> jobs;  // in file order
    int skipped = 0;     // SWF jobs with unknown run time or no processors
};

Trace parse_philly_csv(std::string_view text, const std::string& file);
Trace parse_swf(std::string_view text, const std::string& file);

// Read a trace file: SWF when the name ends in ".swf" or the first
// non-blank line starts with ';', else the Philly CSV.
Trace read_trace(const std::string& path);

}  // namespace m2g
