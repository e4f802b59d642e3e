// job_submit/m2g: power-, thermal-, demand-response- and maintenance-aware
// admission (see job_submit_m2g(8) and m2g.conf(5)).
//
// At submission, every job goes through the core's decide(): admitted,
// deferred (its begin time moved to when the reason ends, never past the
// user's --m2g-defer=until deadline), paced (GPU starts spread over
// intervals during curtailment) or rejected with a message that says what
// to change. The decision is written into AdminComment ("m2g:[...;
// admission=...]") and, with --m2g-explain, printed by sbatch/salloc/srun.
//
// Signals come from the SignalsFile feed, which a poll thread of the core's
// SignalFeed re-reads when it changes; the submission path only reads the
// published snapshot (no file I/O, no network).
//
// Release: a thread in this plugin wakes every ReleaseCheckSec (5 s by
// default), takes slurmctld's job write lock and hands every pending job to
// the core's AdmissionSession::reevaluate() (core/power/admission_session.hpp,
// which holds the release rules): deferred jobs whose reason has ended
// become eligible at once (and the scheduler is asked to run), jobs whose
// event was extended move with it, and eligible deferrable jobs are
// deferred when an event starts. This file maps job_record_t to the facts
// the core asks for and applies what it answers: only AdminComment, the
// begin time and the state reason of those jobs are touched.
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

    // BridgeIntentsFile= (m2g-slinky's bridge-intents.json), reread when
    // the file changes; a broken file keeps the last good document.
    std::mutex bridge_mu;
    std::string bridge_path;
    std::string bridge_stamp;  // dev:ino:size:mtime of what was last read
    std::shared_ptr<const m2g::BridgeIntents> bridge;

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

// Times one submission and counts its verdict on every way out of
// job_submit(), exceptions included (those jobs are admitted).
struct TimedDecision {
    m2g::AdmissionVerdict verdict = m2g::AdmissionVerdict::Admit;
    const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~TimedDecision()
    {
        g_stats.decision(verdict, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - t0)
                                      .count());
    }
};

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

// cap_by_slurm_deadline() and counted_as() are the core's
// (core/power/admission_session.hpp), shared with the release rules.

// NoDeferAction=convert: the job's own intent says --m2g-defer=ok from now
// on, so select/m2g and the release thread treat it as deferrable too.
void convert_to_deferrable(job_desc_msg_t* job_desc)
{
    const std::string key = std::string(m2g::kw::kEnvDefer) + "=";
    for (uint32_t i = 0; job_desc->spank_job_env && i < job_desc->spank_job_env_size; ++i) {
        const char* e = job_desc->spank_job_env[i];
        if (!e)
            continue;
        const std::string entry(e);
        const auto at = entry.find(key);
        // M2G_DEFER=..., or with the SPANK_ prefixes decode_intent accepts.
        if (at == std::string::npos || (at != 0 && entry.compare(0, at, "SPANK_") != 0 &&
                                         entry.compare(0, at, "SLURM_SPANK_") != 0))
            continue;
        xfree(job_desc->spank_job_env[i]);
        job_desc->spank_job_env[i] = xstrdup((entry.substr(0, at + key.size()) + "ok").c_str());
    }
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

}  // namespace

// ---- plugin entry points -------------------------------------------------------

extern "C" int init(void)
{
    try {
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
    } catch (const std::exception& e) {
        error("%sinit: %s", kLog, e.what());
    } catch (...) {
        error("%sinit: unexpected error", kLog);
    }
    return SLURM_ERROR;
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

// The bridge-intents document in force (null: none readable yet).
std::shared_ptr<const m2g::BridgeIntents> bridge_intents(Shared& s, const std::string& path)
{
    struct stat st;
    std::string stamp;
    const int err = stat(path.c_str(), &st) == 0 ? 0 : errno;
    if (err == 0)
        stamp = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
                std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    std::lock_guard<std::mutex> lk(s.bridge_mu);
    if (path != s.bridge_path) {
        s.bridge_path = path;
        s.bridge_stamp.clear();
        s.bridge.reset();
    }
    if (stamp == s.bridge_stamp)
        return s.bridge;
    s.bridge_stamp = stamp;  // log a broken file once per change, not per job
    if (stamp.empty()) {
        error("%s%s=%s: cannot read it (%s); %s", kLog, m2g::kw::kBridgeIntentsFile, path.c_str(), strerror(err),
              s.bridge ? "keeping the last one read" : "slurm-bridge jobs get m2g.conf's defaults");
        return s.bridge;
    }
    try {
        s.bridge = std::make_shared<const m2g::BridgeIntents>(
            m2g::parse_bridge_intents(m2g::read_text_file(path), path));
        debug("%s%s: %zu slurm-bridge pods", kLog, path.c_str(), s.bridge->pods.size());
    } catch (const std::exception& e) {
        error("%s%s; %s", kLog, e.what(),
              s.bridge ? "keeping the last good one" : "slurm-bridge jobs get m2g.conf's defaults");
    }
    return s.bridge;
}

bool has_m2g_env(const job_desc_msg_t* job_desc)
{
    for (uint32_t i = 0; job_desc->spank_job_env && i < job_desc->spank_job_env_size; ++i)
        if (job_desc->spank_job_env[i] && strncmp(job_desc->spank_job_env[i], "M2G_", 4) == 0)
            return true;
    return false;
}

// A job slurm-bridge submits for Kubernetes pods names them in its
// AdminComment ({"pods": [...]}; only an administrator can set AdminComment
// at submit, Slurm checks that before job_submit plugins run). Give it the
// intent m2g-slinky resolved from the pods' m2g.slurm.net/* annotations,
// as the M2G_* variables spank_m2g gives an sbatch job, so admission and
// select/m2g treat both alike. Returns false (and sets *err_msg) when the
// pods' annotations are refused and `enforce` is set.
bool apply_bridge_intent(Shared& s, const m2g::AdmissionPolicy& ap, job_desc_msg_t* job_desc, bool enforce,
                         char** err_msg)
{
    if (ap.bridge_intents_file.empty() || !job_desc->admin_comment)
        return true;
    const std::vector<std::string> pods = m2g::bridge_pods(job_desc->admin_comment);
    if (pods.empty())
        return true;
    const std::string first = pods.front() + (pods.size() > 1 ? " (+" + std::to_string(pods.size() - 1) + ")" : "");
    if (has_m2g_env(job_desc)) {
        info("%sslurm-bridge job for pod %s carries its own M2G_* variables; %s not consulted", kLog, first.c_str(),
             ap.bridge_intents_file.c_str());
        return true;
    }
    const auto doc = bridge_intents(s, ap.bridge_intents_file);
    if (!doc) {
        info("%sslurm-bridge job for pod %s: no readable %s; m2g.conf's defaults apply", kLog, first.c_str(),
             ap.bridge_intents_file.c_str());
        return true;
    }
    const m2g::BridgeResolution r = m2g::resolve_bridge_intent(*doc, pods);
    if (!r.intent.error.empty()) {
        error("%sslurm-bridge job: %s%s", kLog, r.intent.error.c_str(),
              enforce ? "; refused" : "; Admission=monitor: admitted with m2g.conf's defaults");
        if (enforce && err_msg && !*err_msg)
            *err_msg = xstrdup_printf("m2g: %s", r.intent.error.c_str());
        return !enforce;
    }
    if (!r.unknown.empty()) {
        std::string list;
        for (const std::string& p : r.unknown)
            list += (list.empty() ? "" : ", ") + p;
        info("%sslurm-bridge pod%s %s not in %s (generated at %lld): %s", kLog, r.unknown.size() == 1 ? "" : "s",
             list.c_str(), ap.bridge_intents_file.c_str(), static_cast<long long>(doc->generated_at),
             r.intent.env.empty() ? "m2g.conf's defaults apply" : "the other pods' intent applies");
    }
    if (r.intent.env.empty())
        return true;
    const uint32_t n = job_desc->spank_job_env ? job_desc->spank_job_env_size : 0;
    job_desc->spank_job_env = static_cast<char**>(
        xrealloc(job_desc->spank_job_env, sizeof(char*) * (n + r.intent.env.size() + 1)));
    uint32_t i = n;
    std::string said;
    for (const auto& [k, v] : r.intent.env) {
        job_desc->spank_job_env[i++] = xstrdup((k + "=" + v).c_str());
        said += (said.empty() ? "" : " ") + k + "=" + v;
    }
    job_desc->spank_job_env[i] = nullptr;
    job_desc->spank_job_env_size = i;
    // sbatch also hands the SPANK variables to the batch script as
    // SLURM_SPANK_M2G_* (spank_m2g reads them back on the nodes); do the
    // same for a batch job that has an environment.
    if (job_desc->script && job_desc->environment) {
        const uint32_t m = job_desc->env_size;
        job_desc->environment = static_cast<char**>(
            xrealloc(job_desc->environment, sizeof(char*) * (m + r.intent.env.size() + 1)));
        uint32_t j = m;
        for (const auto& [k, v] : r.intent.env)
            job_desc->environment[j++] = xstrdup(("SLURM_SPANK_" + k + "=" + v).c_str());
        job_desc->environment[j] = nullptr;
        job_desc->env_size = j;
    }
    info("%sslurm-bridge job for pod %s: %s", kLog, first.c_str(), said.c_str());
    return true;
}

extern "C" int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg)
{
    (void)submit_uid;
    if (!g_shared || !job_desc)
        return SLURM_SUCCESS;
    Shared& s = *g_shared;
    try {
        const int64_t now = time(nullptr);
        const m2g::AdmissionContext c = s.session.current(now);
        if (!c.model)
            return SLURM_SUCCESS;
        // Before Admission=off returns: the intent carries placement too.
        if (!apply_bridge_intent(s, c.model->admission, job_desc,
                                 c.model->admission.mode == m2g::AdmissionMode::Enforce, err_msg))
            return SLURM_ERROR;
        if (c.model->admission.mode == m2g::AdmissionMode::Off)
            return SLURM_SUCCESS;
        TimedDecision timed;
        const m2g::AdmissionPolicy& ap = c.model->admission;

        m2g::AdmissionRequest r;
        try {
            r.intent = m2g::decode_intent(env_vector(job_desc->spank_job_env, job_desc->spank_job_env_size));
        } catch (const std::exception& e) {
            // Only a client without spank_m2g (or a forged environment) gets here.
            timed.verdict = m2g::AdmissionVerdict::Reject;
            if (err_msg)
                *err_msg = xstrdup_printf("m2g: %s", e.what());
            return SLURM_ERROR;
        }
        part_record_t* part = first_partition(job_desc->partition);
        r.nodes = job_desc->min_nodes == NO_VAL ? 1 : std::max<int>(1, job_desc->min_nodes);
        const int64_t tasks = job_desc->num_tasks == NO_VAL ? 0 : job_desc->num_tasks;
        r.gpus = static_cast<int>(m2g::job_gpus(job_desc->tres_per_job ? job_desc->tres_per_job : "",
                                                job_desc->tres_per_node ? job_desc->tres_per_node : "",
                                                job_desc->tres_per_task ? job_desc->tres_per_task : "", r.nodes,
                                                tasks));
        if (r.gpus == 0)
            r.gpus = r.intent.gpus;
        r.time_limit_s = limit_seconds(job_desc->time_limit, part);
        r.now = now;
        r.user_begin = job_desc->begin_time > now ? job_desc->begin_time : 0;
        r.account = account_of(job_desc->account, job_desc->user_id);
        const bool reserved = !m2g::reserved_uses(ap, r.intent).empty();
        if (reserved)
            r.user = user_name(job_desc->user_id);  // named in a refusal and in the audit line
        if ((r.intent.defer == m2g::DeferConsent::No && !ap.defer_exempt_groups.empty()) ||
            (reserved && !ap.privileged_groups.empty())) {
            r.user = user_name(job_desc->user_id);  // NSS: only when an exemption may hang on it
            r.groups = group_names(r.user, job_desc->group_id);
        }
        r.candidate_nodes = candidate_nodes(*c.model, part);
        m2g::cap_by_slurm_deadline(r, ap, job_desc->deadline);

        // No pacer here: submissions include --test-only probes and jobs that
        // later fail validation; select/m2g paces real starts.
        const m2g::Decision d = m2g::decide(*c.model, c.view, r, nullptr);
        const bool enforce = ap.mode == m2g::AdmissionMode::Enforce;
        for (const std::string& a : d.audit)
            info("%suid %u (%s) account %s: %s%s", kAudit, job_desc->user_id,
                 (r.user.empty() ? user_name(job_desc->user_id) : r.user).c_str(),
                 r.account.empty() ? "(default)" : r.account.c_str(), a.c_str(),
                 enforce ? "" : " [Admission=monitor]");
        if (d.verdict == m2g::Verdict::Reject && d.reason.find(" reserved, ") != std::string::npos)
            info("%suid %u (%s) account %s: refused: %s", kAudit, job_desc->user_id, r.user.c_str(),
                 r.account.empty() ? "(default)" : r.account.c_str(), d.reason.c_str());
        timed.verdict = m2g::counted_as(d.verdict);  // Admission=monitor: what m2g would do
        if (enforce && d.converted)
            convert_to_deferrable(job_desc);
        if (d.verdict == m2g::Verdict::Reject && enforce) {
            info("%sjob from uid %u rejected: %s", kLog, job_desc->user_id, d.reason.c_str());
            if (err_msg)
                *err_msg = xstrdup(d.message.c_str());
            return ESLURM_ACCESS_DENIED;
        }
        if (enforce && (d.verdict == m2g::Verdict::Defer || d.verdict == m2g::Verdict::Pace) &&
            d.begin_time > static_cast<int64_t>(job_desc->begin_time))
            job_desc->begin_time = d.begin_time;
        m2g::AdmissionAnnotation note = m2g::admission_annotation(d, r.intent, ap, r.user_begin, !enforce);
        // The job's --signal: m2g-curtaild, outside slurmctld, cannot see it
        // and sends it as the checkpoint request before a requeue.
        if (job_desc->warn_signal && job_desc->warn_signal != NO_VAL16 && job_desc->warn_signal <= 64)
            note.checkpoint_signal = std::string((job_desc->warn_flags & KILL_JOB_BATCH) ? "B:" : "") +
                                     std::to_string(job_desc->warn_signal);
        const std::string updated =
            m2g::write_annotation(job_desc->admin_comment ? job_desc->admin_comment : "", note);
        xfree(job_desc->admin_comment);
        job_desc->admin_comment = xstrdup(updated.c_str());
        if (r.intent.explain && err_msg && !*err_msg)
            *err_msg = xstrdup(d.message.c_str());
        debug("%s%s", kLog, d.reason.c_str());
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
    // Owners may not pull a job m2g deferred forward with
    // `scontrol update StartTime=`; operators and admins may, and that is
    // an override the audit log records.
    if (!job_desc || !job_ptr || !job_ptr->details || job_desc->begin_time == 0 ||
        job_desc->begin_time == NO_VAL)
        return SLURM_SUCCESS;
    try {
        const std::string part =
            m2g::get_annotation(job_ptr->admin_comment ? job_ptr->admin_comment : "", m2g::AnnotationPart::Admission);
        const bool waiting = m2g::parse_admission(part).waits();
        const bool earlier = waiting && IS_JOB_PENDING(job_ptr) &&
                             static_cast<time_t>(job_desc->begin_time) < job_ptr->details->begin_time;
        if (earlier && validate_operator(submit_uid)) {
            info("%sJobId=%u: operator uid %u (%s) moved its begin time from %ld to %ld, before m2g's (%s)", kAudit,
                 job_ptr->job_id, submit_uid, user_name(submit_uid).c_str(),
                 static_cast<long>(job_ptr->details->begin_time), static_cast<long>(job_desc->begin_time),
                 part.c_str());
            return SLURM_SUCCESS;
        }
        if (earlier) {
            info("%sJobId=%u: uid %u may not move its begin time before m2g's (%s)", kLog, job_ptr->job_id,
                 submit_uid, part.c_str());
#if M2G_SLURM_NEW_API
            // 23.11+ hands this message to the user's scontrol.
            if (err_msg && !*err_msg)
                *err_msg = xstrdup(("m2g: this job waits for " + part +
                                    "; only an operator or admin may move its start time earlier")
                                       .c_str());
#endif
            return ESLURM_ACCESS_DENIED;
        }
    } catch (...) {
    }
    return SLURM_SUCCESS;
}
