// Acting on jobs and reading node addresses through libslurm's public API,
// for m2g-curtaild: suspend, resume, signal, requeue and the AdminComment
// curtail part. Each call is one RPC to slurmctld and needs the privileges
// Slurm asks for it (suspend, resume and requeue of other users' jobs, and
// AdminComment: an operator or SlurmUser). Nothing here includes a Slurm
// header. Every call throws Error naming the job and Slurm's own error text.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace m2g {

void suspend_job(uint32_t job_id);
void resume_job(uint32_t job_id);
// Send `sig` to the job: every step and the batch shell, or only the batch
// shell (`batch_only`, as --signal=B:... asked).
void signal_job(uint32_t job_id, int sig, bool batch_only);
// Put a running batch job back in the queue (it starts again from its script).
void requeue_job(uint32_t job_id);
void set_admin_comment(uint32_t job_id, const std::string& text);

// NodeAddr of every node slurmctld knows, by node name.
std::map<std::string, std::string> node_addresses();

}  // namespace m2g
