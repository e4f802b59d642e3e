// m2g core: GPU counts from Slurm's TRES request strings, as slurmctld
// keeps them for a job (tres_per_node, tres_per_job, tres_per_task):
// comma-separated "gres:gpu:4", "gres:gpu:a100:2", "gres/gpu=8" items.
#pragma once

#include <cstdint>
#include <string_view>

namespace m2g {

// The GPUs one TRES string asks for (summed over gpu items, types
// included); 0 when none or unparseable.
int64_t gpus_in_tres(std::string_view tres);

// The job's GPUs in total: per job, else per node x nodes, else per task x
// tasks (tasks <= 0: nodes). 0 when it asks for none.
int64_t job_gpus(std::string_view per_job, std::string_view per_node, std::string_view per_task, int64_t nodes,
                 int64_t tasks);

}  // namespace m2g
