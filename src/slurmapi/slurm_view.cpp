// m2g's view of a running Slurm through libslurm's public API (see
// slurm_view.hpp). Only <slurm/slurm.h>, <slurm/slurm_errno.h> and
// <slurm/slurmdb.h>: this runs outside slurmctld, as any Slurm client.
#include "slurmapi/slurm_view.hpp"

#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/job/annotation.hpp"
#include "core/base/error.hpp"
#include "core/job/tres.hpp"

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurmdb.h>

// Exported by libslurm but not declared in its public headers:
// - the job reason as squeue's %r prints it (22.05: slurm_job_reason_string,
//   an alias of job_reason_string(); 23.11+: slurm_job_state_reason_string);
//   the string is static, not freed;
// - slurm_xfree(): xfree(), which frees what libslurm xmalloc()ed and sets
//   the pointer to NULL (see JobMsgFree).
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
const char* slurm_job_state_reason_string(enum job_state_reason inx);
#else
char* slurm_job_reason_string(enum job_state_reason inx);
#endif
void slurm_xfree(void** item);
}

// Spellings of the public API that changed after 22.05 (tested: 22.05.8
// and 26.05): list and hostlist types are structs, not pointer typedefs;
// errors are in errno; jobs are named by a step id; the configuration is
// freed by slurm_free_conf().
namespace {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
using SlurmList = list_t*;
using SlurmListIter = list_itr_t*;
using SlurmHostlist = hostlist_t*;
int last_slurm_errno() { return errno; }
const char* job_reason_text(job_state_reason r) { return slurm_job_state_reason_string(r); }
int load_one_job(job_info_msg_t** raw, uint32_t job_id, uint16_t flags)
{
    slurm_step_id_t id{};  // what SLURM_STEP_ID_INITIALIZER (a C compound literal) sets
    id.job_id = job_id;
    id.step_het_comp = NO_VAL;
    id.step_id = NO_VAL;
    return slurm_load_job(raw, id, flags);
}
void free_conf(slurm_conf_t* c) { slurm_free_conf(c); }
#else
using SlurmList = List;
using SlurmListIter = ListIterator;
using SlurmHostlist = hostlist_t;
int last_slurm_errno() { return slurm_get_errno(); }
const char* job_reason_text(job_state_reason r) { return slurm_job_reason_string(r); }
int load_one_job(job_info_msg_t** raw, uint32_t job_id, uint16_t flags) { return slurm_load_job(raw, job_id, flags); }
void free_conf(slurm_conf_t* c) { slurm_free_ctl_conf(c); }
#endif
}  // namespace

namespace m2g {

namespace {

// libslurm's fatal() exits the process when slurm.conf cannot be read, so
// check what slurm_init() would read first and say what is wrong.
void init_slurm()
{
    static std::once_flag once;
    static std::string failure;
    std::call_once(once, [] {
        const char* env = std::getenv("SLURM_CONF");
        struct stat st {};
        if (env && *env) {
            if (::stat(env, &st) != 0)
                failure = std::string("SLURM_CONF=") + env + ": " + std::strerror(errno) +
                          ": cannot read Slurm's configuration";
        } else if (::stat("/etc/slurm/slurm.conf", &st) != 0 && ::stat("/run/slurm/conf/slurm.conf", &st) != 0) {
            failure = "no Slurm configuration: /etc/slurm/slurm.conf does not exist and SLURM_CONF is not set "
                      "(set SLURM_CONF to the cluster's slurm.conf)";
        }
        if (failure.empty())
            slurm_init(nullptr);
    });
    if (!failure.empty())
        throw UnreachableError(failure);
}

std::string slurm_error_text()
{
    const int e = last_slurm_errno();
    const char* s = slurm_strerror(e);
    return s && *s ? s : "error " + std::to_string(e);
}

[[noreturn]] void throw_ctld(const char* what)
{
    const char* conf = std::getenv("SLURM_CONF");
    throw UnreachableError(std::string("cannot reach slurmctld (") + what + "): " + slurm_error_text() +
                "; is it running, and is SLURM_CONF (" + (conf && *conf ? conf : "/etc/slurm/slurm.conf") +
                ") the cluster's slurm.conf?");
}

std::string str(const char* s) { return s ? s : ""; }

// GPUs in a node's Gres= or GresUsed= string: "gpu:4", "gpu:4(S:0-1)",
// "gpu:a100:4(IDX:0-3),nic:2", "gpu:0(IDX:N/A)". Commas inside "(...)"
// belong to the index list.
int gres_gpus(std::string_view s)
{
    int total = 0;
    size_t i = 0;
    while (i < s.size()) {
        int depth = 0;
        size_t j = i;
        for (; j < s.size(); ++j) {
            if (s[j] == '(')
                ++depth;
            else if (s[j] == ')')
                --depth;
            else if (s[j] == ',' && depth == 0)
                break;
        }
        std::string_view item = s.substr(i, j - i);
        i = j + 1;
        // Strip a trailing "(S:0-1)" / "(IDX:0-3)" only: an untyped GPU's
        // type prints as "(null)" ("gpu:(null):4(IDX:0-3)").
        if (!item.empty() && item.back() == ')')
            if (const auto paren = item.rfind('('); paren != std::string_view::npos)
                item = item.substr(0, paren);
        if (item == "gpu") {
            total += 1;  // a bare "gpu" is one, as in Slurm
            continue;
        }
        if (item.substr(0, 4) != "gpu:")
            continue;
        const auto colon = item.rfind(':');
        const std::string_view n = item.substr(colon + 1);
        if (colon == 3 && (n.empty() || n.find_first_not_of("0123456789") != std::string_view::npos)) {
            total += 1;  // "gpu:a100": a type without a count is one
            continue;
        }
        if (!n.empty() && n.find_first_not_of("0123456789") == std::string_view::npos)
            total += std::atoi(std::string(n).c_str());
    }
    return total;
}

// GPUs in a formatted TRES string ("cpu=8,mem=32000M,node=2,billing=8,gres/gpu=8"):
// the untyped "gres/gpu=" item (typed "gres/gpu:a100=" items repeat it).
// -1 when there is none.
int64_t tres_gpus(const char* tres)
{
    if (!tres)
        return -1;
    std::string_view s(tres);
    while (!s.empty()) {
        const auto comma = s.find(',');
        const std::string_view item = s.substr(0, comma);
        s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
        if (item.substr(0, 9) == "gres/gpu=")
            return std::atoll(std::string(item.substr(9)).c_str());
    }
    return -1;
}

// Model node indices of a Slurm hostlist; names the model does not know are left out.
std::vector<int> model_nodes(const Model& m, const char* nodes)
{
    std::vector<int> out;
    if (!nodes || !*nodes)
        return out;
    SlurmHostlist hl = slurm_hostlist_create(nodes);
    if (!hl)
        return out;
    while (char* h = slurm_hostlist_shift(hl)) {
        const int idx = m.find_node(h);
        if (idx != kNone)
            out.push_back(idx);
        std::free(h);  // hostlist_shift returns malloc()ed names
    }
    slurm_hostlist_destroy(hl);
    return out;
}

JobState job_state(uint32_t state)
{
    if (state & JOB_COMPLETING)
        return JobState::Completing;
    switch (state & JOB_STATE_BASE) {
    case JOB_PENDING:
        return JobState::Pending;
    case JOB_RUNNING:
    case JOB_SUSPENDED:
        return JobState::Running;
    default:
        return JobState::Done;
    }
}

std::string user_name(const char* name, uint32_t uid)
{
    if (name && *name)
        return name;
    if (const passwd* pw = ::getpwuid(uid))
        return pw->pw_name;
    return std::to_string(uid);
}

// class= and w_gpu= of the admission part (written by job_submit/m2g).
void apply_annotation(JobView& v)
{
    const std::optional<AdmissionAnnotation> a = read_annotation(v.admin_comment).admission;
    v.intent.workload_class = a ? a->workload_class.value_or(WorkloadClass::Unset) : WorkloadClass::Unset;
    v.intent.power_w_per_gpu = a ? a->w_gpu : 0;
    if (a && a->no_defer)
        v.intent.defer = DeferConsent::No;
    if (a)
        if (const auto sig = parse_checkpoint_signal(a->checkpoint_signal)) {
            v.warn_signal = sig->first;
            v.warn_batch_only = sig->second;
        }
}

int64_t limit_seconds(uint32_t minutes)
{
    return minutes == INFINITE || minutes == NO_VAL || minutes == 0 ? 0 : int64_t{minutes} * 60;
}

JobView job_view(const Model& m, const slurm_job_info_t& j)
{
    JobView v;
    v.id = j.job_id;
    v.name = str(j.name);
    v.state = job_state(j.job_state);
    if (v.state == JobState::Pending && j.state_reason != WAIT_NO_REASON)
        v.slurm_reason = str(job_reason_text(static_cast<job_state_reason>(j.state_reason)));
    v.admin_comment = str(j.admin_comment);
    v.partition = str(j.partition);
    v.account = str(j.account);
    v.user = user_name(j.user_name, j.user_id);
    v.node_idx = model_nodes(m, v.state == JobState::Pending ? nullptr : j.nodes);
    v.nodes = v.state == JobState::Pending || v.node_idx.empty() ? static_cast<int>(j.num_nodes)
                                                                 : static_cast<int>(v.node_idx.size());
    int64_t g = tres_gpus(v.state == JobState::Pending ? j.tres_req_str : j.tres_alloc_str);
    if (g < 0)
        g = tres_gpus(j.tres_req_str);
    if (g < 0)
        g = job_gpus(str(j.tres_per_job), str(j.tres_per_node), str(j.tres_per_task), j.num_nodes,
                     j.num_tasks == NO_VAL ? 0 : j.num_tasks);
    v.gpus = static_cast<int>(g);
    v.submit_time = j.submit_time;
    v.begin_time = j.eligible_time;  // details->begin_time (slurmctld's pack_job)
    if (v.state != JobState::Pending) {
        v.start_time = j.start_time;
        v.end_time = j.end_time;
    }
    v.time_limit_s = limit_seconds(j.time_limit);
    v.priority = j.priority;
    v.suspended = (j.job_state & JOB_STATE_BASE) == JOB_SUSPENDED;
    apply_annotation(v);
    return v;
}

NodeView node_view(const Model& m, int idx, const node_info_t& n)
{
    NodeView v;
    v.known = true;
    const uint32_t st = n.node_state;
    const uint32_t base = st & NODE_STATE_BASE;
    // Powered down (power saving) and powering up are capacity Slurm wakes
    // for jobs: not down.
    v.down = base == NODE_STATE_DOWN || base == NODE_STATE_UNKNOWN || base == NODE_STATE_FUTURE ||
             (st & (NODE_STATE_FAIL | NODE_STATE_NO_RESPOND | NODE_STATE_POWERING_DOWN | NODE_STATE_INVALID_REG)) != 0;
    v.drained = (st & NODE_STATE_DRAIN) != 0;
    v.gpus_total = gres_gpus(str(n.gres));
    if (v.gpus_total == 0)
        v.gpus_total = m.nodes[static_cast<size_t>(idx)].gpus;
    // GresUsed= (slurm_load_node with SHOW_DETAIL): "gpu:4(IDX:0-3)".
    v.gpus_alloc = std::min(gres_gpus(str(n.gres_used)), v.gpus_total);
    return v;
}

struct NodeMsgFree {
    void operator()(node_info_msg_t* p) const
    {
        // 22.05's slurm_free_node_info_members() forgets these three, which
        // a long-running m2g-exporter would lose on every refresh.
        for (uint32_t i = 0; p && i < p->record_count; ++i) {
            slurm_xfree(reinterpret_cast<void**>(&p->node_array[i].bcast_address));
            slurm_xfree(reinterpret_cast<void**>(&p->node_array[i].comment));
            slurm_xfree(reinterpret_cast<void**>(&p->node_array[i].extra));
        }
        slurm_free_node_info_msg(p);
    }
};
// 22.05's slurm_free_job_info_msg() leaves five strings of each job
// behind (slurm_free_job_info_members() forgets them): admin_comment, where
// every m2g job keeps its annotation, would leak on each load, which a
// long-running m2g-exporter cannot afford. slurm_xfree() sets them to NULL,
// so a libslurm that frees them itself is not hurt.
struct JobMsgFree {
    void operator()(job_info_msg_t* p) const
    {
        for (uint32_t i = 0; p && p->job_array && i < p->record_count; ++i) {
            slurm_job_info_t& j = p->job_array[i];
            for (char** s : {&j.admin_comment, &j.system_comment, &j.prefer, &j.cronspec, &j.cluster_features})
                slurm_xfree(reinterpret_cast<void**>(s));
        }
        slurm_free_job_info_msg(p);
    }
};

ClusterView load_or_throw(const Model& m)
{
    init_slurm();
    ClusterView c;
    c.taken_at = static_cast<int64_t>(std::time(nullptr));
    c.nodes.assign(m.nodes.size(), NodeView{});
    for (size_t i = 0; i < m.nodes.size(); ++i)
        c.nodes[i].gpus_total = m.nodes[i].gpus;

    node_info_msg_t* nraw = nullptr;
    if (slurm_load_node(0, &nraw, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS)
        throw_ctld("loading nodes");
    std::unique_ptr<node_info_msg_t, NodeMsgFree> nodes(nraw);
    for (uint32_t i = 0; i < nodes->record_count; ++i) {
        const node_info_t& n = nodes->node_array[i];
        if (!n.name)
            continue;
        const int idx = m.find_node(n.name);
        if (idx != kNone)
            c.nodes[static_cast<size_t>(idx)] = node_view(m, idx, n);
    }

    job_info_msg_t* jraw = nullptr;
    if (slurm_load_jobs(0, &jraw, SHOW_ALL) != SLURM_SUCCESS)
        throw_ctld("loading jobs");
    std::unique_ptr<job_info_msg_t, JobMsgFree> jobs(jraw);
    c.jobs.reserve(jobs->record_count);
    for (uint32_t i = 0; i < jobs->record_count; ++i)
        c.jobs.push_back(job_view(m, jobs->job_array[i]));

    // Backfill as slurmctld runs it, for the forecast's plan.
    slurm_conf_t* conf = nullptr;
    if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS)
        throw_ctld("loading its configuration");
    c.backfill = backfill_conf(str(conf->schedtype), str(conf->sched_params));
    free_conf(conf);
    return c;
}

}  // namespace

ClusterView load_cluster_view(const Model& m, std::string* error)
{
    if (!error)
        return load_or_throw(m);
    try {
        return load_or_throw(m);
    } catch (const std::exception& e) {
        *error = e.what();
        return ClusterView{};
    }
}

std::optional<JobView> load_job(const Model& m, uint32_t job_id)
{
    init_slurm();
    job_info_msg_t* raw = nullptr;
    if (load_one_job(&raw, job_id, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) {
        if (last_slurm_errno() == ESLURM_INVALID_JOB_ID)
            return std::nullopt;
        throw_ctld(("loading job " + std::to_string(job_id)).c_str());
    }
    std::unique_ptr<job_info_msg_t, JobMsgFree> msg(raw);
    for (uint32_t i = 0; i < msg->record_count; ++i)
        if (msg->job_array[i].job_id == job_id)
            return job_view(m, msg->job_array[i]);
    return std::nullopt;
}

namespace {

struct ListFree {
    void operator()(void* l) const { slurm_list_destroy(static_cast<SlurmList>(l)); }
};
using ListPtr = std::unique_ptr<std::remove_pointer_t<SlurmList>, ListFree>;

struct DbConn {
    void* conn = nullptr;
    ~DbConn()
    {
        if (conn)
            slurmdb_connection_close(&conn);
    }
};

// GPUs in accounting's TRES string, which names TRES by database id
// ("1=16,2=32000,4=2,1001=8"): the item of `gpu_id` (gres/gpu). -1 when none.
int64_t db_tres_gpus(const char* tres, uint32_t gpu_id)
{
    if (!tres || gpu_id == 0)
        return -1;
    const std::string key = std::to_string(gpu_id) + "=";
    std::string_view s(tres);
    while (!s.empty()) {
        const auto comma = s.find(',');
        const std::string_view item = s.substr(0, comma);
        s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
        if (item.substr(0, key.size()) == key)
            return std::atoll(std::string(item.substr(key.size())).c_str());
    }
    return -1;
}

// The database id of TRES gres/gpu (0: accounting does not track it, see
// AccountingStorageTRES).
uint32_t db_gpu_tres_id(void* conn)
{
    slurmdb_tres_cond_t cond{};
    ListPtr recs(slurmdb_tres_get(conn, &cond));
    if (!recs)
        return 0;
    uint32_t id = 0;
    SlurmListIter it = slurm_list_iterator_create(recs.get());
    while (auto* t = static_cast<slurmdb_tres_rec_t*>(slurm_list_next(it)))
        if (t->type && t->name && std::string_view(t->type) == "gres" && std::string_view(t->name) == "gpu")
            id = t->id;
    slurm_list_iterator_destroy(it);
    return id;
}

JobView db_job_view(const Model& m, const slurmdb_job_rec_t& j, uint32_t gpu_id)
{
    JobView v;
    v.id = j.jobid;
    v.name = str(j.jobname);
    v.state = job_state(j.state);
    v.admin_comment = str(j.admin_comment);
    v.partition = str(j.partition);
    v.account = str(j.account);
    v.user = user_name(j.user, j.uid);
    v.node_idx = model_nodes(m, v.state == JobState::Pending ? nullptr : j.nodes);
    v.nodes = v.node_idx.empty() ? static_cast<int>(j.alloc_nodes) : static_cast<int>(v.node_idx.size());
    int64_t g = db_tres_gpus(j.tres_alloc_str, gpu_id);
    if (g < 0)
        g = db_tres_gpus(j.tres_req_str, gpu_id);
    v.gpus = static_cast<int>(std::max<int64_t>(0, g));
    v.submit_time = j.submit;
    v.begin_time = j.eligible;
    v.start_time = j.start;
    v.end_time = j.end;
    v.time_limit_s = limit_seconds(j.timelimit);
    apply_annotation(v);
    return v;
}

// The cluster this slurm.conf describes (sacct's default), "" when unnamed.
std::string local_cluster_name()
{
    slurm_conf_t* conf = nullptr;
    if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS)
        throw_ctld("loading its configuration");
    const std::string cluster = str(conf->cluster_name);
    free_conf(conf);
    return cluster;
}

// A connection to slurmdbd; `unreachable` says what cannot be done without
// one (UnreachableError, with libslurm's reason after it).
void open_accounting(DbConn& db, const std::string& unreachable, const std::string& hint = "")
{
    uint16_t flags = 0;
    db.conn = slurmdb_connection_get(&flags);
    if (!db.conn)
        throw UnreachableError(unreachable + ": " + slurm_error_text() + hint);
}

}  // namespace

std::optional<JobView> load_job_from_accounting(const Model& m, uint32_t job_id)
{
    init_slurm();
    const std::string cluster = local_cluster_name();
    DbConn db;
    open_accounting(db,
                    "job " + std::to_string(job_id) +
                        " is no longer in slurmctld, and accounting (slurmdbd) cannot be reached",
                    "; `sacct -j " + std::to_string(job_id) +
                        " -o JobID,Elapsed,AllocTRES,AdminComment` shows the record once slurmdbd is back");

    // The condition's lists own nothing: their items live on this stack
    // frame, and the condition itself is not libslurm's to free.
    slurm_selected_step_t step{};
    step.array_task_id = NO_VAL;
    step.het_job_offset = NO_VAL;
    step.step_id.job_id = job_id;
    step.step_id.step_id = NO_VAL;
    step.step_id.step_het_comp = NO_VAL;
    ListPtr steps(slurm_list_create(nullptr));
    slurm_list_append(steps.get(), &step);
    ListPtr clusters(slurm_list_create(nullptr));
    if (!cluster.empty())
        slurm_list_append(clusters.get(), const_cast<char*>(cluster.c_str()));
    slurmdb_job_cond_t cond{};
    cond.step_list = steps.get();
    cond.cluster_list = cluster.empty() ? nullptr : clusters.get();
    cond.flags = JOBCOND_FLAG_NO_STEP | JOBCOND_FLAG_NO_TRUNC;
    cond.db_flags = SLURMDB_JOB_FLAG_NOTSET;  // 0 would select jobs whose scheduling flags are 0

    ListPtr recs(slurmdb_jobs_get(db.conn, &cond));
    if (!recs)
        throw UnreachableError("accounting (slurmdbd) refused the query for job " + std::to_string(job_id) + ": " +
                    slurm_error_text());
    const uint32_t gpu_id = db_gpu_tres_id(db.conn);
    std::optional<JobView> out;
    SlurmListIter it = slurm_list_iterator_create(recs.get());
    while (auto* rec = static_cast<slurmdb_job_rec_t*>(slurm_list_next(it))) {
        // The last record of a requeued job is its latest run.
        if (rec->jobid == job_id)
            out = db_job_view(m, *rec, gpu_id);
    }
    slurm_list_iterator_destroy(it);
    return out;
}

std::vector<JobView> load_accounting_since(const Model& m, int64_t since)
{
    init_slurm();
    const std::string cluster = local_cluster_name();
    DbConn db;
    open_accounting(db, "accounting (slurmdbd) cannot be reached for the job history");
    ListPtr clusters(slurm_list_create(nullptr));
    if (!cluster.empty())
        slurm_list_append(clusters.get(), const_cast<char*>(cluster.c_str()));
    slurmdb_job_cond_t cond{};
    cond.cluster_list = cluster.empty() ? nullptr : clusters.get();
    cond.usage_start = static_cast<time_t>(since);
    cond.usage_end = time(nullptr);
    cond.flags = JOBCOND_FLAG_NO_STEP | JOBCOND_FLAG_NO_TRUNC;
    cond.db_flags = SLURMDB_JOB_FLAG_NOTSET;
    ListPtr recs(slurmdb_jobs_get(db.conn, &cond));
    if (!recs)
        throw UnreachableError(std::string("accounting (slurmdbd) refused the job history query: ") +
                               slurm_error_text());
    const uint32_t gpu_id = db_gpu_tres_id(db.conn);
    std::vector<JobView> out;
    SlurmListIter it = slurm_list_iterator_create(recs.get());
    while (auto* rec = static_cast<slurmdb_job_rec_t*>(slurm_list_next(it)))
        out.push_back(db_job_view(m, *rec, gpu_id));
    slurm_list_iterator_destroy(it);
    return out;
}

}  // namespace m2g
