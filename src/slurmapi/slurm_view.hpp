// m2g's view of a running Slurm through libslurm's public API (slurm.h,
// slurmdb.h of 22.05): nodes and jobs from slurmctld, finished jobs from
// slurmdbd, translated into the core's ClusterView/JobView
// (tools/reports/status.hpp). For the CLI (m2g explain/status/job) and
// m2g-exporter; the plugins run inside Slurm and never link this.
//
// Nothing here includes a Slurm header: callers stay free of Slurm's names.
// Every libslurm structure is freed before a function returns, also on error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/model/model.hpp"
#include "tools/reports/status.hpp"

namespace m2g {

// Nodes (GPUs configured and allocated, down/drained) and jobs (pending,
// running, and finished ones slurmctld still holds, MinJobAge) for every
// model node, with the m2g annotation's class= and w_gpu= in JobView::intent.
// Slurm nodes the model does not declare are ignored; model nodes Slurm does
// not report stay known=false.
//
// On failure (slurmctld unreachable, no SLURM_CONF, ...): when `error` is
// null, throws UnreachableError ("cannot reach slurmctld: <reason>; is SLURM_CONF
// (...) right?"); else sets *error to that sentence and returns an empty
// view (taken_at 0).
ClusterView load_cluster_view(const Model& m, std::string* error = nullptr);

// One job as slurmctld knows it (also a finished one it has not yet
// purged); nullopt when slurmctld no longer knows `job_id`. Throws
// UnreachableError when slurmctld cannot be reached.
std::optional<JobView> load_job(const Model& m, uint32_t job_id);

// One job from accounting (slurmdbd), for jobs slurmctld has purged;
// nullopt when accounting has no such job. Throws UnreachableError when
// slurmdbd cannot be reached or refuses the query.
std::optional<JobView> load_job_from_accounting(const Model& m, uint32_t job_id);
// Every job accounting (slurmdbd) has of this cluster submitted, started or
// ended since `since` (epoch s), as `sacct -S` lists them: for the forecast's
// run times and arrivals (use_history(), forecast.hpp). Throws
// UnreachableError when slurmdbd cannot be reached or refuses the query.
std::vector<JobView> load_accounting_since(const Model& m, int64_t since);

}  // namespace m2g
