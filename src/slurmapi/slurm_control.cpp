// libslurm calls for m2g-curtaild (see slurm_control.hpp).
#include "slurmapi/slurm_control.hpp"

#include <cerrno>
#include <string>

#include "core/base/error.hpp"

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

namespace m2g {

namespace {

// Spellings that changed after 22.05 (tested: 22.05.8 and 26.05): errors
// are in errno; jobs are named by a step id, in job_desc_msg_t too.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
int last_errno() { return errno; }
slurm_step_id_t job_ref(uint32_t job_id)
{
    slurm_step_id_t id{};  // what SLURM_STEP_ID_INITIALIZER (a C compound literal) sets
    id.job_id = job_id;
    id.step_het_comp = NO_VAL;
    id.step_id = NO_VAL;
    return id;
}
void set_job(job_desc_msg_t& d, uint32_t job_id) { d.step_id = job_ref(job_id); }
#else
int last_errno() { return slurm_get_errno(); }
uint32_t job_ref(uint32_t job_id) { return job_id; }
void set_job(job_desc_msg_t& d, uint32_t job_id) { d.job_id = job_id; }
#endif

[[noreturn]] void fail(const std::string& what, uint32_t job_id)
{
    const int e = last_errno();
    throw Error(what + " JobId=" + std::to_string(job_id) + ": " + slurm_strerror(e));
}

}  // namespace

void suspend_job(uint32_t job_id)
{
    if (slurm_suspend(job_ref(job_id)) != SLURM_SUCCESS)
        fail("cannot suspend", job_id);
}

void resume_job(uint32_t job_id)
{
    if (slurm_resume(job_ref(job_id)) != SLURM_SUCCESS)
        fail("cannot resume", job_id);
}

void signal_job(uint32_t job_id, int sig, bool batch_only)
{
    if (sig < 1 || sig > 64)
        throw Error("cannot signal JobId=" + std::to_string(job_id) + ": signal " + std::to_string(sig) +
                    " is out of range 1-64");
    if (slurm_kill_job(job_ref(job_id), static_cast<uint16_t>(sig), batch_only ? KILL_JOB_BATCH : KILL_FULL_JOB) !=
        SLURM_SUCCESS)
        fail("cannot send signal " + std::to_string(sig) + " to", job_id);
}

void requeue_job(uint32_t job_id)
{
    if (slurm_requeue(job_ref(job_id), 0) != SLURM_SUCCESS)
        fail("cannot requeue", job_id);
}

void set_admin_comment(uint32_t job_id, const std::string& text)
{
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    set_job(d, job_id);
    std::string copy = text;
    d.admin_comment = copy.data();
    if (slurm_update_job(&d) != SLURM_SUCCESS)
        fail("cannot set AdminComment of", job_id);
}

std::map<std::string, std::string> node_addresses()
{
    node_info_msg_t* msg = nullptr;
    if (slurm_load_node(0, &msg, SHOW_ALL) != SLURM_SUCCESS)
        throw Error(std::string("cannot load nodes from slurmctld: ") + slurm_strerror(last_errno()));
    std::map<std::string, std::string> out;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
        const node_info_t& n = msg->node_array[i];
        if (n.name)
            out[n.name] = n.node_addr && *n.node_addr ? n.node_addr : n.name;
    }
    slurm_free_node_info_msg(msg);
    return out;
}

}  // namespace m2g
