// job_submit/m2g: power-, thermal-, demand-response- and maintenance-aware
// admission (see job_submit_m2g(8) and m2g.conf(5)).
//
// Every rule lives in the core's AdmissionSession
// (core/power/admission_session.hpp), which the simulator runs too. This
// file maps Slurm's job description to the facts it asks for and applies
// what it answers:
//   job_submit()  a Submission in, a SubmitAnswer out: refuse with its
//                 message, or set the begin time, the SPANK environment
//                 (slurm-bridge intents, NoDeferAction=convert) and the
//                 AdminComment record ("m2g:[...; admission=...]");
//   job_modify()  a Modification in: whether an owner may move a begin
//                 time m2g holds;
//   the release thread, every ReleaseCheckSec (5 s by default): under
//                 slurmctld's job write lock, each pending job to
//                 AdmissionSession::reevaluate(), applying its begin time,
//                 AdminComment and state reason.
//
// Signals come from the SignalsFile feed, which a poll thread of the core's
// SignalFeed re-reads when it changes; the submission path only reads the
// published snapshot (no file I/O, no network).
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/power/admission.hpp"
#include "core/power/admission_session.hpp"
#include "core/job/annotation.hpp"
#include "core/model/config.hpp"
#include "core/job/intent.hpp"
#include "core/power/signals.hpp"
#include "core/job/bridge.hpp"
#include "core/obs/stats.hpp"
#include "core/job/tres.hpp"
#include "core/base/keys.hpp"

// Slurm 23.11+'s extra_constraints.h (included by slurmctld.h) names a
// struct member `operator`, a C++ keyword; renaming the member inside this
// file changes no layout.
#define operator m2g_slurm_operator
extern "C" {
#include "config.h"  // Slurm's, from --with-slurm-source

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
}
#undef operator
#include "plugins/common/guard.hpp"
#include "plugins/common/slurm_compat.hpp"

extern "C" const char plugin_name[] = "m2g admission: power, thermal, demand-response and maintenance (job_submit/m2g)";
extern "C" const char plugin_type[] = "job_submit/m2g";
extern "C" const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#if SLURM_VERSION_NUMBER != SLURM_VERSION_NUM(22, 5, 8) && \
    (SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(26, 5, 0) || SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 6, 0))
#warning "job_submit/m2g is tested with Slurm 22.05.8 and 26.05; job records change between releases"
#endif

namespace {

constexpr const char* kLog = "m2g: admission: ";
// Overrides m2g grants (reserved intent for a privileged account, deferral
// exemptions, an operator moving m2g's begin time): one line each, with this
// prefix, so that sites can route them (e.g. to an audit log).
constexpr const char* kAudit = "m2g: audit: ";

// Everything the submission path and the release thread share. It lives on
// the heap and the thread holds a reference, so a fini() that cannot wait
// for the thread (it may be blocked on slurmctld's locks, which fini's
// caller can hold at reconfigure) never pulls state from under it.
struct Shared {
    Shared();
    std::string conf;
    // m2g.conf's model, the signals feed, and the release rules.
    m2g::AdmissionSession session;

    std::mutex wake_mu;
    std::condition_variable wake;
    bool stop = false;
    bool exited = false;  // the release thread has returned (under wake_mu)
};

std::shared_ptr<Shared> g_shared;
std::vector<std::weak_ptr<Shared>> g_threads;  // every release thread started, for exit

// Decision counters for m2g-exporter (StatsDir=/admission.json): job_submit()
// counts and times submissions, the release thread counts releases and
// re-deferrals and publishes. Process-wide, so counts survive reconfigure.
m2g::Counters g_stats(m2g::kw::kPluginAdmission, time(nullptr));
std::atomic<bool> g_stats_failed{false};  // release thread only: the last write failed (logged once)

void log_line(m2g::LogLevel level, const std::string& msg)
{
    switch (level) {
    case m2g::LogLevel::Info:
        info("%s%s", kLog, msg.c_str());
        break;
    case m2g::LogLevel::Warning:
        error("%s%s", kLog, msg.c_str());  // Slurm has no warning level in slurmctld.log
        break;
    case m2g::LogLevel::Error:
        error("%s%s", kLog, msg.c_str());
        break;
    }
}

Shared::Shared()
    : session(m2g::SessionLog{log_line, nullptr, [](const std::string& msg) { debug("%s%s", kLog, msg.c_str()); }},
              &g_stats)
{
    session.set_audit_log([](const std::string& msg) { info("%s%s", kAudit, msg.c_str()); });
}

std::string conf_path()
{
    char* p = get_extra_conf_path(const_cast<char*>(m2g::kw::kConfFile));
    const std::string path = m2g::conf_path(p);
    xfree(p);
    return path;
}

std::vector<std::string> env_vector(char** env, uint32_t n)
{
    std::vector<std::string> out;
    if (env)
        for (uint32_t i = 0; i < n; ++i)
            if (env[i])
                out.emplace_back(env[i]);
    return out;
}

std::string user_name(uid_t uid)
{
    struct passwd pw, *res = nullptr;
    std::vector<char> buf(16384);
    if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res)
        return res->pw_name;
    return std::to_string(uid);
}

// The user's groups by name (only looked up when exemptions name groups).
std::vector<std::string> group_names(const std::string& user, gid_t gid)
{
    std::vector<std::string> out;
    int n = 64;
    std::vector<gid_t> gids(n);
    if (getgrouplist(user.c_str(), gid, gids.data(), &n) < 0) {
        gids.resize(n);
        if (getgrouplist(user.c_str(), gid, gids.data(), &n) < 0)
            n = 0;
    }
    gids.resize(n);
    if (gids.empty())
        gids.push_back(gid);
    std::vector<char> buf(16384);
    for (gid_t g : gids) {
        struct group gr, *res = nullptr;
        if (getgrgid_r(g, &gr, buf.data(), buf.size(), &res) == 0 && res)
            out.emplace_back(res->gr_name);
    }
    return out;
}

// --account, else the user's default account from the association manager.
std::string account_of(const char* requested, uint32_t uid)
{
    if (requested && *requested)
        return requested;
    slurmdb_user_rec_t user;
    memset(&user, 0, sizeof user);
    user.uid = uid;
    // default_acct points into the association manager's records: copy it
    // while holding its user lock.
    assoc_mgr_lock_t locks;
    memset(&locks, 0, sizeof locks);
    locks.user = READ_LOCK;
    std::string acct;
    assoc_mgr_lock(&locks);
    if (assoc_mgr_fill_in_user(acct_db_conn, &user, accounting_enforce, nullptr, true) == SLURM_SUCCESS &&
        user.default_acct)
        acct = user.default_acct;
    assoc_mgr_unlock(&locks);
    return acct;
}

// Model nodes of the partition(s) a job may use; empty: all.
std::vector<int> candidate_nodes(const m2g::Model& m, part_record_t* part)
{
    std::vector<int> out;
    if (!part || !part->node_bitmap)
        return out;
    for (int i = 0; i < node_record_count; ++i) {
        if (!bit_test(part->node_bitmap, i) || !node_record_table_ptr[i])
            continue;
        const int mi = m.find_node(node_record_table_ptr[i]->name);
        if (mi >= 0)
            out.push_back(mi);
    }
    return out;
}

part_record_t* first_partition(const char* names)
{
    if (!names || !*names)
        return default_part_loc;
    std::string first(names);
    first = first.substr(0, first.find(','));
    return find_part_record(const_cast<char*>(first.c_str()));
}

int64_t limit_seconds(uint32_t minutes, part_record_t* part)
{
    if (minutes == NO_VAL && part)
        minutes = part->default_time != NO_VAL ? part->default_time : part->max_time;
    if (minutes == NO_VAL || minutes == INFINITE)
        return 0;
    return int64_t(minutes) * 60;
}

// The job's --signal as "[B:]N" ("" none): m2g-curtaild, outside
// slurmctld, cannot see it and sends it as the checkpoint request before a
// requeue.
std::string checkpoint_signal(const job_desc_msg_t* job_desc)
{
    if (!job_desc->warn_signal || job_desc->warn_signal == NO_VAL16 || job_desc->warn_signal > 64)
        return "";
    return std::string((job_desc->warn_flags & KILL_JOB_BATCH) ? "B:" : "") + std::to_string(job_desc->warn_signal);
}

// char** arrays Slurm keeps (xmalloc'd): replaced whole, or extended.
void set_env(char*** env, uint32_t* size, const std::vector<std::string>& entries)
{
    for (uint32_t i = 0; *env && i < *size; ++i)
        xfree((*env)[i]);
    xfree(*env);
    *env = static_cast<char**>(xcalloc(entries.size() + 1, sizeof(char*)));
    for (size_t i = 0; i < entries.size(); ++i)
        (*env)[i] = xstrdup(entries[i].c_str());
    *size = static_cast<uint32_t>(entries.size());
}

// Set each KEY=VALUE of `entries` in `env`: replace the KEY= entry there
// (sbatch already put the user's SLURM_SPANK_M2G_* in), else append.
void add_env(char*** env, uint32_t* size, const std::vector<std::string>& entries)
{
    const uint32_t n = *env ? *size : 0;
    *env = static_cast<char**>(xrealloc(*env, sizeof(char*) * (n + entries.size() + 1)));
    uint32_t i = n;
    for (const std::string& e : entries) {
        const size_t eq = e.find('='), key = eq == std::string::npos ? e.size() : eq + 1;
        uint32_t k = 0;
        while (k < i && std::strncmp((*env)[k], e.c_str(), key) != 0)
            ++k;
        if (k < i)
            xfree((*env)[k]);
        else
            ++i;
        (*env)[k] = xstrdup(e.c_str());
    }
    (*env)[i] = nullptr;
    *size = i;
}

// ---- the release thread ----------------------------------------------------------

// One release pass's context: the session whose rules decide, the pass's
// model, and the candidate nodes per partition (computed once per pass, not
// once per job).
struct Pass {
    m2g::AdmissionSession& session;
    const m2g::Model& model;
    int64_t now;
    std::map<part_record_t*, std::vector<int>> candidates;
};

// Hand one job to the core's release rules and apply what they say; true
// when the job changed.
bool reevaluate(Pass& pass, job_record_t* job)
{
    m2g::PendingJobFacts f;
    f.job_id = job->job_id;
    f.pending = IS_JOB_PENDING(job) && job->details;
    f.held = job->priority == 0;
    if (!f.pending)
        return false;
    // The rules leave held jobs alone: their AdminComment is not even parsed.
    const std::string comment = !f.held && job->admin_comment ? job->admin_comment : "";
    const std::string part = m2g::get_annotation(comment, m2g::AnnotationPart::Admission);
    f.admission = part;
    f.begin_time = job->details->begin_time;
    f.request = [&pass, job] {
        m2g::PendingRequest r;
        r.spank_env = env_vector(job->spank_job_env, job->spank_job_env_size);
        r.nodes = std::max<int>(1, job->details->min_nodes);
        r.gpus = static_cast<int>(m2g::job_gpus(job->tres_per_job ? job->tres_per_job : "",
                                                job->tres_per_node ? job->tres_per_node : "",
                                                job->tres_per_task ? job->tres_per_task : "", r.nodes,
                                                job->details->num_tasks));
        r.time_limit_s = limit_seconds(job->time_limit, job->part_ptr);
        r.account = job->account ? job->account : "";
        r.deadline = job->deadline;
        auto cached = pass.candidates.find(job->part_ptr);
        if (cached == pass.candidates.end())
            cached = pass.candidates.emplace(job->part_ptr, candidate_nodes(pass.model, job->part_ptr)).first;
        r.candidate_nodes = cached->second;
        r.identity = [job](std::string& user, std::vector<std::string>& groups) {
            user = user_name(job->user_id);
            groups = group_names(user, job->group_id);
        };
        return r;
    };
    const m2g::ReleaseAction action = pass.session.reevaluate(f, pass.now);
    if (!action.changed())
        return false;

    job->details->begin_time = action.begin_time;
    const std::string& text = action.admission;
    const std::string updated = m2g::set_annotation(comment, m2g::AnnotationPart::Admission, text);
    xfree(job->admin_comment);
    job->admin_comment = xstrdup(updated.c_str());
    job->state_reason = action.waiting() ? WAIT_TIME : WAIT_NO_REASON;
    xfree(job->state_desc);
    return true;
}

void release_pass(Shared& s)
{
    const int64_t now = time(nullptr);
    const std::shared_ptr<const m2g::Model> model = s.session.begin_pass(now);
    if (!model)
        return;
    // conf, job (write: begin time, AdminComment), node, partition, federation
    // (and, since 23.11, the select plugin's node data: not touched).
    slurmctld_lock_t lock = {NO_LOCK, WRITE_LOCK, READ_LOCK, READ_LOCK, NO_LOCK
#if M2G_SLURM_NEW_API
                             , NO_LOCK
#endif
    };
    lock_slurmctld(lock);
    {
        std::lock_guard<std::mutex> lk(s.wake_mu);
        if (s.stop) {
            unlock_slurmctld(lock);
            return;
        }
    }
    int changed = 0;
    Pass pass{s.session, *model, now, {}};
    if (job_list) {
        m2g_list_itr_t it = list_iterator_create(job_list);
        job_record_t* job;
        while ((job = static_cast<job_record_t*>(list_next(it)))) {
            try {
                changed += reevaluate(pass, job);
            } catch (const std::exception& e) {
                error("%sJobId=%u: %s; left as it is", kLog, job->job_id, e.what());
            }
        }
        list_iterator_destroy(it);
    }
    if (changed)
        last_job_update = now;
    unlock_slurmctld(lock);
    if (changed)
        queue_job_scheduler();
}

// Write the counters to StatsDir (if set) at most every kStatsPublishSec.
void publish_stats(Shared& s)
{
    std::string dir;
    if (const auto model = s.session.model())
        dir = model->admission.stats_dir;
    const int64_t now = time(nullptr);
    if (dir.empty() || !g_stats.publish_due(now, m2g::kw::kStatsPublishSec))
        return;
    try {
        m2g::write_stats_file(m2g::stats_path(dir, m2g::kw::kPluginAdmission), g_stats.snapshot(now));
        if (g_stats_failed)
            info("%scounters written to StatsDir=%s again", kLog, dir.c_str());
        g_stats_failed = false;
    } catch (const std::exception& e) {
        if (!g_stats_failed)
            error("%s%s; m2g-exporter will not see job_submit/m2g's counters until this is fixed", kLog, e.what());
        g_stats_failed = true;
    }
}

void release_thread(std::shared_ptr<Shared> s)
{
    for (;;) {
        int period = 5;
        if (const auto model = s->session.model())
            period = std::max(1, model->admission.release_check_sec);
        {
            std::unique_lock<std::mutex> lk(s->wake_mu);
            s->wake.wait_for(lk, std::chrono::seconds(period), [&] { return s->stop; });
            if (s->stop)
                break;
        }
        try {
            s->session.load(s->conf, time(nullptr));
            release_pass(*s);
            publish_stats(*s);
        } catch (const std::exception& e) {
            error("%srelease pass: %s", kLog, e.what());
        } catch (...) {
            error("%srelease pass: unexpected error", kLog);
        }
    }
    s->session.stop();
    std::lock_guard<std::mutex> lk(s->wake_mu);
    s->exited = true;
    s->wake.notify_all();
}

// At process exit, before static objects (ours and the core's) go away:
// stop the release threads and wait for them a little. A thread blocked on
// slurmctld's locks at exit cannot be waited for; exit goes on after 2 s.
void stop_threads_at_exit()
{
    for (const auto& w : g_threads) {
        const std::shared_ptr<Shared> s = w.lock();
        if (!s)
            continue;
        std::unique_lock<std::mutex> lk(s->wake_mu);
        s->stop = true;
        s->wake.notify_all();
        s->wake.wait_for(lk, std::chrono::seconds(2), [&] { return s->exited; });
    }
}

// Keep this object mapped for as long as slurmctld lives: a thread that
// outlives fini() (see Shared) must still have its code.
void pin_self()
{
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&pin_self), &info) && info.dli_fname)
        if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_NODELETE | RTLD_NOLOAD))
            error("%scannot pin %s: %s", kLog, info.dli_fname, dlerror());
}

// The size a recipe gave the job (m2g::size_from_recipe): nodes, GPUs
// per node in the TRES form the release's clients write, time limit in
// whole minutes.
void apply_size(job_desc_msg_t* job_desc, const m2g::RecipeSize& size)
{
    if (size.nodes > 0) {
        job_desc->min_nodes = static_cast<uint32_t>(size.nodes);
        job_desc->max_nodes = static_cast<uint32_t>(size.nodes);
    }
    if (size.gpus_per_node > 0) {
#if M2G_SLURM_NEW_API
        const std::string gpu = "gres/gpu:" + std::to_string(size.gpus_per_node);
#else
        const std::string gpu = "gres:gpu:" + std::to_string(size.gpus_per_node);
#endif
        // No GPU item there (asked_known saw none): add one, keep the rest.
        const std::string rest = job_desc->tres_per_node ? job_desc->tres_per_node : "";
        xfree(job_desc->tres_per_node);
        job_desc->tres_per_node = xstrdup((rest.empty() ? gpu : rest + "," + gpu).c_str());
    }
    if (size.time_limit_s > 0)
        job_desc->time_limit = static_cast<uint32_t>((size.time_limit_s + 59) / 60);
}

}  // namespace

// ---- plugin entry points -------------------------------------------------------

extern "C" int init(void)
{
    return m2g_guarded(error, kLog, "init", SLURM_ERROR, [&]() -> int {
        auto s = std::make_shared<Shared>();
        s->conf = conf_path();
        s->session.load(s->conf, time(nullptr));
        // The new slurmctld of a 23.11+ reconfigure (job_submit plugins load
        // only into slurmctld), with m2g.conf broken: fail, so the running
        // slurmctld keeps the last good m2g.conf.
        if (!s->session.model() && m2g_reconfigure_child()) {
            error("%s%s", kLog, M2G_RECONF_REFUSED);
            return SLURM_ERROR;
        }
        pin_self();
        static bool at_exit = false;
        if (!at_exit)
            at_exit = std::atexit(stop_threads_at_exit) == 0;
        std::thread(release_thread, s).detach();
        g_threads.push_back(s);
        g_shared = s;
        info("%sjob_submit/m2g active", kLog);
        return SLURM_SUCCESS;
    });
}

extern "C" int fini(void)
{
    // Not joined: the thread may wait for slurmctld's locks, which our
    // caller may hold. It sees `stop` once it has them, and exits.
    if (g_shared) {
        {
            std::lock_guard<std::mutex> lk(g_shared->wake_mu);
            g_shared->stop = true;
        }
        g_shared->wake.notify_all();
        g_shared.reset();
    }
    return SLURM_SUCCESS;
}

extern "C" int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg)
{
    (void)submit_uid;
    if (!g_shared || !job_desc)
        return SLURM_SUCCESS;
    Shared& s = *g_shared;
    try {
        const int64_t now = time(nullptr);
        part_record_t* part = first_partition(job_desc->partition);
        m2g::Submission sub;
        sub.spank_env = env_vector(job_desc->spank_job_env, job_desc->spank_job_env_size);
        sub.admin_comment = job_desc->admin_comment ? job_desc->admin_comment : "";
        sub.batch = job_desc->script && job_desc->environment;
        sub.nodes = job_desc->min_nodes == NO_VAL ? 1 : std::max<int>(1, job_desc->min_nodes);
        const int64_t tasks = job_desc->num_tasks == NO_VAL ? 0 : job_desc->num_tasks;
        sub.gpus = static_cast<int>(m2g::job_gpus(job_desc->tres_per_job ? job_desc->tres_per_job : "",
                                                  job_desc->tres_per_node ? job_desc->tres_per_node : "",
                                                  job_desc->tres_per_task ? job_desc->tres_per_task : "", sub.nodes,
                                                  tasks));
        sub.time_limit_s = limit_seconds(job_desc->time_limit, part);
        sub.begin_time = job_desc->begin_time;
        sub.deadline = job_desc->deadline;
        sub.uid = job_desc->user_id;
        sub.checkpoint_signal = checkpoint_signal(job_desc);
        sub.account = [job_desc] { return account_of(job_desc->account, job_desc->user_id); };
        sub.candidate_nodes = [part](const m2g::Model& m) { return candidate_nodes(m, part); };
        sub.user_name = [job_desc] { return user_name(job_desc->user_id); };
        sub.groups = [job_desc](const std::string& user) { return group_names(user, job_desc->group_id); };
        // The size the job gave itself, for a recipe to fill what it did not.
        sub.asked_known = true;
        sub.asked.nodes = job_desc->min_nodes == NO_VAL ? 0 : static_cast<int>(job_desc->min_nodes);
        sub.asked.gpus_per_node =
            static_cast<int>(m2g::gpus_in_tres(job_desc->tres_per_node ? job_desc->tres_per_node : ""));
        {
            const int64_t per_job = m2g::gpus_in_tres(job_desc->tres_per_job ? job_desc->tres_per_job : "");
            const int64_t per_task = m2g::gpus_in_tres(job_desc->tres_per_task ? job_desc->tres_per_task : "");
            sub.asked.gpus_total = static_cast<int>(per_job ? per_job : per_task * std::max<int64_t>(tasks, 1));
        }
        sub.asked.time_limit_s = job_desc->time_limit == NO_VAL || job_desc->time_limit == INFINITE
                                     ? 0
                                     : static_cast<int64_t>(job_desc->time_limit) * 60;
        sub.asked.max_time_limit_s = part && part->max_time != NO_VAL && part->max_time != INFINITE
                                         ? static_cast<int64_t>(part->max_time) * 60
                                         : 0;

        const auto t0 = std::chrono::steady_clock::now();
        const m2g::SubmitAnswer a = s.session.submit(sub, now);
        if (a.counted)
            g_stats.decision(*a.counted, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - t0)
                                             .count());
        if (a.spank_env)
            set_env(&job_desc->spank_job_env, &job_desc->spank_job_env_size, *a.spank_env);
        if (!a.batch_env_add.empty())
            add_env(&job_desc->environment, &job_desc->env_size, a.batch_env_add);
        if (a.refused()) {
            if (err_msg && !*err_msg && !a.message.empty())
                *err_msg = xstrdup(a.message.c_str());
            return a.refusal == m2g::SubmitAnswer::Refusal::Denied ? ESLURM_ACCESS_DENIED : SLURM_ERROR;
        }
        apply_size(job_desc, a.size);
        if (a.begin_time > 0)
            job_desc->begin_time = a.begin_time;
        if (a.admin_comment) {
            xfree(job_desc->admin_comment);
            job_desc->admin_comment = xstrdup(a.admin_comment->c_str());
        }
        if (!a.message.empty() && err_msg && !*err_msg)
            *err_msg = xstrdup(a.message.c_str());
    } catch (const std::exception& e) {
        // Never lose a job to an m2g fault: admit it and say so.
        error("%sjob from uid %u: %s; admitted without m2g policy", kLog, job_desc->user_id, e.what());
    } catch (...) {
        error("%sjob from uid %u: unexpected error; admitted without m2g policy", kLog, job_desc->user_id);
    }
    return SLURM_SUCCESS;
}

#if M2G_SLURM_NEW_API
extern "C" int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid, char** err_msg)
#else
extern "C" int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid)
#endif
{
    if (!g_shared || !job_desc || !job_ptr || !job_ptr->details || job_desc->begin_time == 0 ||
        job_desc->begin_time == NO_VAL)
        return SLURM_SUCCESS;
    try {
        m2g::Modification mod;
        mod.job_id = job_ptr->job_id;
        mod.uid = submit_uid;
        mod.pending = IS_JOB_PENDING(job_ptr);
        mod.admin_comment = job_ptr->admin_comment ? job_ptr->admin_comment : "";
        mod.begin_time = job_ptr->details->begin_time;
        mod.requested_begin = job_desc->begin_time;
        mod.user_name = [submit_uid] { return user_name(submit_uid); };
        // Asked only when it matters: validate_operator() looks the uid up.
        const std::string part =
            m2g::get_annotation(mod.admin_comment, m2g::AnnotationPart::Admission);
        mod.operator_ = !part.empty() && validate_operator(submit_uid);
        const m2g::ModifyAnswer a = g_shared->session.modify(mod);
        if (!a.denied)
            return SLURM_SUCCESS;
#if M2G_SLURM_NEW_API
        // 23.11+ hands this message to the user's scontrol.
        if (err_msg && !*err_msg)
            *err_msg = xstrdup(a.message.c_str());
#endif
        return ESLURM_ACCESS_DENIED;
    } catch (...) {
    }
    return SLURM_SUCCESS;
}
