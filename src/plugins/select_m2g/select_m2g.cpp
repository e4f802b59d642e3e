// select/m2g: NVLink-, fabric-, health- and power-aware node selection,
// wrapping Slurm's own select/cons_tres.
//
// Identity (see select_m2g(8) for the trade-off): this file builds
// select_cons_tres.so with cons_tres's plugin id 109, installed in m2g's own
// plugin directory, which slurm.conf lists first in PluginDir. Slurm loads
// the first select_cons_tres.so it finds, so SelectType stays
// select/cons_tres and every check Slurm makes on that name (slurmd's CPU
// accounting, heterogeneous GRES, dynamic nodes) and stock clients, which
// unpack node data by plugin id, keep working. This wrapper loads the stock
// cons_tres by absolute path and forwards every call to it; cons_tres keeps
// all resource accounting. In select_p_job_test, in every mode (run now,
// test only, will run), it narrows the nodes offered to cons_tres to the
// placement m2g's engine chose, and records why in AdminComment.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "core/job/annotation.hpp"
#include "core/model/config.hpp"  // conf_path
#include "core/place/session.hpp"
#include "core/base/keys.hpp"

// Slurm's headers are C; select.h's ops table trips C++'s -Wparentheses.
// 23.11+'s extra_constraints.h (through slurmctld.h) names a struct member
// `operator`, a C++ keyword: renamed inside this file, which changes no layout.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wparentheses"
#define operator m2g_slurm_operator
extern "C" {
#include "config.h"  // Slurm's, from --with-slurm-source

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
#include "src/interfaces/gres.h"
#include "src/interfaces/select.h"
#else
#include "src/common/gres.h"
#include "src/common/select.h"
#endif
#include "src/slurmctld/slurmctld.h"
}
#undef operator
#pragma GCC diagnostic pop
#include "plugins/common/slurm_compat.hpp"

// slurmctld's node table lives in libslurmfull. Programs linked with the
// public libslurm.so also load the select plugin (to unpack node data) and
// only use the forwarding functions: weak references let this wrapper load
// there too, instead of failing with "undefined symbol" and a stderr line.
#pragma weak node_record_count
#pragma weak node_record_table_ptr

#ifndef M2G_STOCK_PLUGINDIR
#error "M2G_STOCK_PLUGINDIR (the installed Slurm's plugin directory) must be defined by the build"
#endif

extern "C" const char plugin_name[] = "m2g node selection (select/m2g) over Consumable Resources (cons_tres)";
extern "C" const char plugin_type[] = "select/cons_tres";
extern "C" const uint32_t plugin_id = SELECT_PLUGIN_CONS_TRES;
extern "C" const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#if SLURM_VERSION_NUMBER != SLURM_VERSION_NUM(22, 5, 8) && \
    (SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(26, 5, 0) || SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 6, 0))
#warning "select/m2g is tested with Slurm 22.05.8 and 26.05; the select plugin API changes between releases"
#endif

// select_p_job_test's arguments after `mode`, which changed after 22.05: the
// wrapper passes them through untouched.
#if M2G_SLURM_NEW_API
#define M2G_JOB_TEST_TAIL_PARAMS \
    list_t *preemptee_candidates, list_t **preemptee_job_list, resv_exc_t *resv_exc_ptr, will_run_data_t *will_run_ptr
#define M2G_JOB_TEST_TAIL_ARGS preemptee_candidates, preemptee_job_list, resv_exc_ptr, will_run_ptr
#define M2G_JOB_TEST_TAIL_REST resv_exc_ptr, will_run_ptr
#else
#define M2G_JOB_TEST_TAIL_PARAMS List preemptee_candidates, List *preemptee_job_list, bitstr_t *exc_core_bitmap
#define M2G_JOB_TEST_TAIL_ARGS preemptee_candidates, preemptee_job_list, exc_core_bitmap
#define M2G_JOB_TEST_TAIL_REST exc_core_bitmap
#endif

namespace {

constexpr const char* kLog = "m2g: select: ";
// How often a run-now test asks the session again after cons_tres refused
// the nodes it chose for a job of several nodes (job_test()).
constexpr int kRefusedRetries = 8;
constexpr const char* kStock = M2G_STOCK_PLUGINDIR "/select_cons_tres.so";

// ---- the stock cons_tres -----------------------------------------------------
#if M2G_SLURM_NEW_API
// 23.11+ keeps its ops table private to src/interfaces/select.c: the same
// calls, in the same order as its node_select_syms[].
struct slurm_select_ops_t {
    uint32_t* plugin_id;
    int (*node_init)(void);
    int (*job_test)(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                    uint32_t req_nodes, uint16_t mode, M2G_JOB_TEST_TAIL_PARAMS);
    int (*job_begin)(job_record_t*);
    int (*job_ready)(job_record_t*);
    int (*job_expand)(job_record_t*, job_record_t*);
    int (*job_resized)(job_record_t*, node_record_t*);
    void (*job_mem_reduce)(job_record_t*);
    int (*job_fini)(job_record_t*);
    int (*job_suspend)(job_record_t*, bool);
    int (*job_resume)(job_record_t*, bool);
    int (*nodeinfo_set_all)(void);
    int (*nodeinfo_set)(job_record_t*);
    int (*reconfigure)(void);
};
const char* const kSyms[] = {
    "plugin_id", "select_p_node_init", "select_p_job_test", "select_p_job_begin", "select_p_job_ready",
    "select_p_job_expand", "select_p_job_resized", "select_p_job_mem_reduce", "select_p_job_fini",
    "select_p_job_suspend", "select_p_job_resume", "select_p_select_nodeinfo_set_all",
    "select_p_select_nodeinfo_set", "select_p_reconfigure",
};
#else
// Symbol names in the order of slurm_select_ops_t (src/common/select.c).
const char* const kSyms[] = {
    "plugin_id", "select_p_state_save", "select_p_state_restore", "select_p_job_init", "select_p_node_init",
    "select_p_job_test", "select_p_job_begin", "select_p_job_ready", "select_p_job_expand", "select_p_job_resized",
    "select_p_job_signal", "select_p_job_fini", "select_p_job_suspend", "select_p_job_resume",
    "select_p_step_pick_nodes", "select_p_step_start", "select_p_step_finish", "select_p_select_nodeinfo_pack",
    "select_p_select_nodeinfo_unpack", "select_p_select_nodeinfo_alloc", "select_p_select_nodeinfo_free",
    "select_p_select_nodeinfo_set_all", "select_p_select_nodeinfo_set", "select_p_select_nodeinfo_get",
    "select_p_select_jobinfo_alloc", "select_p_select_jobinfo_free", "select_p_select_jobinfo_set",
    "select_p_select_jobinfo_get", "select_p_select_jobinfo_copy", "select_p_select_jobinfo_pack",
    "select_p_select_jobinfo_unpack", "select_p_select_jobinfo_sprint", "select_p_select_jobinfo_xstrdup",
    "select_p_get_info_from_plugin", "select_p_update_node_config", "select_p_reconfigure", "select_p_resv_test",
};
#endif
static_assert(sizeof(kSyms) / sizeof(kSyms[0]) * sizeof(void*) == sizeof(slurm_select_ops_t),
              "slurm_select_ops_t and the symbol list disagree");

void* g_handle = nullptr;
slurm_select_ops_t g_ops;

// Programs linked with the public libslurm.so (m2g, m2g-exporter, pyslurm)
// load the select plugin too, to unpack node data, but lack Slurm's
// internal functions (logging, running_in_slurmctld): there the wrapper only
// forwards, and calls nothing that is not there.
bool client_only()
{
    static const bool client = dlsym(RTLD_DEFAULT, M2G_DAEMON_PROBE_SYMBOL) == nullptr;
    return client;
}

bool load_stock()
{
    if (g_handle)
        return true;
    g_handle = dlopen(kStock, RTLD_LAZY | RTLD_LOCAL);
    if (!g_handle) {
        if (!client_only())
            error("%scannot load %s: %s", kLog, kStock, dlerror());
        return false;
    }
    void** slots = reinterpret_cast<void**>(&g_ops);
    for (size_t i = 0; i < sizeof(kSyms) / sizeof(kSyms[0]); ++i) {
        slots[i] = dlsym(g_handle, kSyms[i]);
        if (!slots[i]) {
            if (!client_only())
                error("%s%s lacks %s: not the select/cons_tres this was built for", kLog, kStock, kSyms[i]);
            dlclose(g_handle);
            g_handle = nullptr;
            return false;
        }
    }
    return true;
}

// ---- m2g state (slurmctld only) ---------------------------------------------
// The policy lives in the core's PlacementSession; this adapter keeps only
// the map between Slurm's node table and the model's nodes.
struct State {
    std::vector<int> slurm_to_model;  // Slurm node index -> model node index (or -1)
    std::vector<int> model_to_slurm;  // model node index -> Slurm node index (or -1)
    int node_count = -1;              // node_record_count the map was built for
    std::vector<uint8_t> offered;     // scratch, per model node
    std::vector<uint64_t> weights;    // scratch, per model node: sched_weight()
    // Per model node: the jobs running on it now, their ends and GPUs, for
    // will-run answers; rebuilt at most once a second.
    m2g::NodeReleases free_at;
    size_t free_at_nodes = 0;
    int64_t free_at_built = -1;
};
State g;

void log_line(m2g::LogLevel level, const std::string& msg)
{
    if (level == m2g::LogLevel::Info)
        info("m2g: select: %s", msg.c_str());
    else
        error("m2g: select: %s", msg.c_str());
}

// Model, engine, signals and health feeds, started-power bookkeeping, pacer
// and the decision counters (StatsDir=/select.json), kept across
// reconfigures; never destroyed: no joinable thread at exit.
m2g::PlacementSession* g_session = new m2g::PlacementSession(
    m2g::SessionLog{log_line, [](const std::string& msg) { verbose("%s%s", kLog, msg.c_str()); },
                    [](const std::string& msg) { debug("%s%s", kLog, msg.c_str()); }},
    time(nullptr));

std::string conf_path()
{
    char* p = get_extra_conf_path(const_cast<char*>(m2g::kw::kConfFile));
    const std::string path = m2g::conf_path(p);
    xfree(p);
    return path;
}

// (Re)load m2g.conf; the session keeps the previous model when the new one is broken.
void load_model()
{
    try {
        static bool loaded_before = false;
        if (g_session->load(conf_path(), time(nullptr))) {
            g.node_count = -1;
            // At info, as job_submit/m2g does: an admin (and the tests)
            // can see in the log when a changed m2g.conf took effect.
            info("%sm2g.conf %s: %zu nodes", kLog, loaded_before ? "reloaded" : "loaded", g_session->model_nodes());
            loaded_before = true;
        }
    } catch (const std::exception& e) {
        error("%s%s", kLog, e.what());
    }
}

void map_nodes()
{
    if (g.node_count == node_record_count)
        return;
    g.slurm_to_model.assign(node_record_count, -1);
    g.model_to_slurm.assign(g_session->model_nodes(), -1);
    node_record_t* node;
    for (int i = 0; (node = next_node(&i)); ++i) {
        const int mi = g_session->find_node(node->name);
        g.slurm_to_model[node->index] = mi;
        if (mi >= 0)
            g.model_to_slurm[mi] = node->index;
    }
    g.offered.assign(g_session->model_nodes(), 0);
    g.free_at_built = -1;  // indexed by the old map
    g.node_count = node_record_count;
}

// Calls f(gres_data) for each "gpu" entry of a job's or node's gres list.
template <class F>
void for_each_gpu_gres(m2g_list_t list, F&& f)
{
    if (!list)
        return;
    m2g_list_itr_t it = list_iterator_create(list);
    gres_state_t* gs;
    while ((gs = static_cast<gres_state_t*>(list_next(it))))
        if (gs->gres_name && !strcmp(gs->gres_name, "gpu"))
            f(gs->gres_data);
    list_iterator_destroy(it);
}

// The GPUs the job asks for: per node (--gpus-per-node, --gres), else in
// all (--gpus, --gpus-per-task times its tasks), which the session spreads
// over nodes (m2g::shape_job()). 0: none or unknown.
void gpus_asked(job_record_t* job, int& per_node, int& total)
{
    uint64_t pn = 0, all = 0;
    for_each_gpu_gres(job->gres_list_req, [&](void* data) {
        auto* js = static_cast<gres_job_state_t*>(data);
        if (js->gres_per_node)
            pn = std::max<uint64_t>(pn, js->gres_per_node);
        else if (js->gres_per_job)
            all = std::max<uint64_t>(all, js->gres_per_job);
        else if (js->gres_per_task && job->details && job->details->num_tasks)
            all = std::max<uint64_t>(all, js->gres_per_task * job->details->num_tasks);
    });
    per_node = static_cast<int>(pn);
    total = pn ? 0 : static_cast<int>(all);
}

// GPUs not yet allocated on a node.
int free_gpus(node_record_t* node)
{
    uint64_t avail = 0;
    for_each_gpu_gres(node->gres_list, [&](void* data) {
        auto* ns = static_cast<gres_node_state_t*>(data);
        if (ns->gres_cnt_avail > ns->gres_cnt_alloc)
            avail += ns->gres_cnt_avail - ns->gres_cnt_alloc;
    });
    return static_cast<int>(avail);
}

// What the session needs to know of a job placed on `nodes` nodes.
m2g::JobFacts job_facts(job_record_t* job, uint32_t nodes, uint32_t min_nodes, uint32_t max_nodes)
{
    m2g::JobFacts f;
    f.job_id = job->job_id;
    if (job->part_ptr && job->part_ptr->name)
        f.partition = job->part_ptr->name;
    if (job->spank_job_env)
        for (uint32_t i = 0; i < job->spank_job_env_size; ++i)
            if (job->spank_job_env[i])
                f.spank_env.emplace_back(job->spank_job_env[i]);
    f.nodes = static_cast<int>(nodes);
    f.min_nodes = static_cast<int>(min_nodes);
    f.max_nodes = static_cast<int>(std::min<uint32_t>(max_nodes, INT32_MAX));  // NO_VAL, INFINITE: open
    gpus_asked(job, f.gpus_per_node, f.gpus_total);
    f.time_limit_s =
        job->time_limit == NO_VAL || job->time_limit == INFINITE ? 0 : int64_t(job->time_limit) * 60;
    if (job->details)
        f.names_nodes = job->details->req_node_bitmap || job->details->contiguous;
    // A prefer wait an earlier slurmctld started (its waiting annotation).
    if (job->admin_comment && std::strstr(job->admin_comment, m2g::kw::kAnnotationPreferSince)) {
        const m2g::Annotation a = m2g::read_annotation(job->admin_comment);
        if (a.placement)
            f.prefer_since = a.placement->prefer_since;
    }
    return f;
}

m2g::SelectMode select_mode(uint16_t mode)
{
    if (SELECT_IS_MODE_TEST_ONLY(mode))
        return m2g::SelectMode::TestOnly;
    if (SELECT_IS_MODE_WILL_RUN(mode))
        return m2g::SelectMode::WillRun;
    return m2g::SelectMode::RunNow;  // cons_tres accepts no other mode
}

// f(model node, GPUs) for each node of `j`'s allocation the model knows:
// the GPUs Slurm allocated it there (gres_list_alloc's per-node counts);
// -1 when unknown (several GPU types, no per-node counts, --exclusive: the
// node is the job's whatever GPUs it holds); 0 for a job without GPUs.
template <typename F>
void for_each_job_node_gpus(job_record_t* j, F&& f)
{
    const uint64_t* per_node = nullptr;
    uint32_t per_node_cnt = 0;
    bool gpus_known = true;
    for_each_gpu_gres(j->gres_list_alloc, [&](void* data) {
        auto* js = static_cast<gres_job_state_t*>(data);
        if (per_node || !js->gres_cnt_node_alloc)
            gpus_known = false;  // several GPU types, or no per-node counts
        per_node = js->gres_cnt_node_alloc;
        per_node_cnt = js->node_cnt;
    });
    if (j->details && (j->details->whole_node & WHOLE_NODE_REQUIRED))
        gpus_known = false, per_node = nullptr;
    const int last = bit_fls(j->node_bitmap);
    uint32_t k = 0;  // the node's index within the job
    for (int i = bit_ffs(j->node_bitmap); i >= 0 && i <= last && i < node_record_count; ++i) {
        if (!bit_test(j->node_bitmap, i))
            continue;
        int gpus = 0;  // a job without GPUs gives none back
        if (per_node)
            gpus = gpus_known && k < per_node_cnt ? static_cast<int>(per_node[k]) : -1;
        else if (!gpus_known)
            gpus = -1;
        if (g.slurm_to_model[i] >= 0)
            f(g.slurm_to_model[i], gpus);
        ++k;
    }
}

// The jobs running (or suspended) on each model node now, as their ends
// give GPUs back: end time (a suspended job's, or one without a time
// limit, never) and the GPUs Slurm allocated it there (gres_list_alloc's
// per-node counts; unknown: the node is free of it only when it ends).
// Built from job_list once a second at most: backfill asks will-run for
// many jobs in one pass. slurmctld holds the job read lock around
// select_p_job_test.
const m2g::NodeReleases& node_free_at(int64_t now)
{
    if (g.free_at_built == now && g.free_at_nodes == g_session->model_nodes())
        return g.free_at;
    g.free_at.reset(g_session->model_nodes());
    g.free_at_nodes = g_session->model_nodes();
    g.free_at_built = now;
    // job_list is slurmctld's: on 22.05 the clients (srun, sbatch, scancel)
    // load this plugin too, and a reference to the symbol would fail their
    // dlopen. Look it up in the running process instead.
    auto* jobs = reinterpret_cast<m2g_list_t*>(dlsym(RTLD_DEFAULT, "job_list"));
    if (!jobs || !*jobs)
        return g.free_at;
    m2g_list_itr_t it = list_iterator_create(*jobs);
    job_record_t* j;
    while ((j = static_cast<job_record_t*>(list_next(it)))) {
        if (!j->node_bitmap || !(IS_JOB_RUNNING(j) || IS_JOB_SUSPENDED(j)))
            continue;
        const int64_t end = IS_JOB_SUSPENDED(j) || j->time_limit == INFINITE || j->end_time <= 0
                                ? m2g::NodeReleases::kNever
                                : static_cast<int64_t>(j->end_time);
        for_each_job_node_gpus(j, [&](int mi, int gpus) { g.free_at.add(mi, end, gpus); });
    }
    list_iterator_destroy(it);
    return g.free_at;
}

// The jobs `cands` (Slurm's preemptee candidates for one job) as the
// session weighs them: each one's GPUs per node and the work an eviction
// loses (its GPUs x the hours since it started), plus the jobs completing
// now, whose GPUs are on their way back (an eviction in progress: the
// preemptor keeps choosing the nodes they leave). False, and nothing to
// plan, when a candidate would be suspended (PreemptMode=SUSPEND, GANG):
// Slurm keeps a suspended job's GPUs allocated, so m2g leaves that
// preemption to cons_tres, as stock.
bool preemptable(m2g_list_t cands, int64_t now, std::vector<m2g::PreemptCandidate>& out)
{
    out.clear();
    if (!cands || list_count(cands) == 0)
        return false;
    using mode_fn = uint16_t (*)(job_record_t*);
    static const auto preempt_mode = reinterpret_cast<mode_fn>(dlsym(RTLD_DEFAULT, "slurm_job_preempt_mode"));
    if (!preempt_mode)
        return false;
    const m2g::Model* m = g_session->model();
    auto add = [&](job_record_t* j, bool leaving) {
        m2g::PreemptCandidate c;
        c.job_id = j->job_id;
        c.leaving = leaving;
        int gpus = 0;
        for_each_job_node_gpus(j, [&](int mi, int n) {
            c.held.emplace_back(mi, n);
            gpus += n >= 0 ? n : (m ? m->nodes[mi].gpus : 0);
        });
        const int64_t ran = j->start_time > 0 && now > j->start_time ? now - j->start_time : 0;
        c.gpu_hours = gpus * (ran / 3600.0);
        c.gpus = gpus;
        c.ran_s = static_cast<double>(ran);
        c.restarted = j->restart_cnt > 0;
        if (!c.held.empty())
            out.push_back(std::move(c));
    };
    bool ok = true;
    m2g_list_itr_t it = list_iterator_create(cands);
    job_record_t* j;
    while ((j = static_cast<job_record_t*>(list_next(it)))) {
        const uint16_t mode = preempt_mode(j);
        if (mode != PREEMPT_MODE_REQUEUE && mode != PREEMPT_MODE_CANCEL) {
            ok = false;
            break;
        }
        if (j->node_bitmap)
            add(j, false);
    }
    list_iterator_destroy(it);
    if (!ok) {
        out.clear();
        return false;
    }
    auto* jobs = reinterpret_cast<m2g_list_t*>(dlsym(RTLD_DEFAULT, "job_list"));
    if (jobs && *jobs) {
        it = list_iterator_create(*jobs);
        while ((j = static_cast<job_record_t*>(list_next(it))))
            if (IS_JOB_COMPLETING(j) && j->node_bitmap && j->gres_list_alloc)
                add(j, true);
        list_iterator_destroy(it);
    }
    return !out.empty();
}

// `cands` without the jobs not in `keep` (ascending ids): a new list of
// the same job records, or nullptr when none is kept.
m2g_list_t keep_candidates(m2g_list_t cands, const std::vector<uint32_t>& keep)
{
    if (!cands || keep.empty())
        return nullptr;
    m2g_list_t kept = list_create(nullptr);
    m2g_list_itr_t it = list_iterator_create(cands);
    job_record_t* j;
    while ((j = static_cast<job_record_t*>(list_next(it))))
        if (std::binary_search(keep.begin(), keep.end(), j->job_id))
            list_append(kept, j);
    list_iterator_destroy(it);
    if (list_count(kept) == 0)
        FREE_NULL_LIST(kept);
    return kept;
}

// Put `text` into the placement part of AdminComment's "m2g:[...]"
// segment, keeping job_submit/m2g's admission part and any other text.
void annotate(job_record_t* job, const std::string& text)
{
    const std::string comment =
        m2g::set_annotation(job->admin_comment ? job->admin_comment : "", m2g::AnnotationPart::Placement, text);
    xfree(job->admin_comment);
    job->admin_comment = xstrdup(comment.c_str());
}

// The names of the nodes set in `bitmap`.
std::vector<std::string> node_names(bitstr_t* bitmap)
{
    std::vector<std::string> nodes;
    for (int i = 0; i < node_record_count; ++i)
        if (bit_test(bitmap, i) && node_record_table_ptr[i])
            nodes.push_back(node_record_table_ptr[i]->name);
    return nodes;
}

// A job began: the session books its power and pacing, and counts it.
void record_job_start(job_record_t* job)
{
    if (!g_session->active() || !job || !job->node_bitmap || !running_in_slurmctld())
        return;
    try {
        map_nodes();
        const int64_t now = time(nullptr);
        const uint32_t nodes = static_cast<uint32_t>(bit_set_count(job->node_bitmap));
        const m2g::JobFacts facts = job_facts(job, nodes, nodes, nodes);
        const int last = bit_fls(job->node_bitmap);
        std::vector<int> placed;
        for (int i = bit_ffs(job->node_bitmap); i >= 0 && i <= last && i < node_record_count; ++i)
            if (bit_test(job->node_bitmap, i) && g.slurm_to_model[i] >= 0)
                placed.push_back(g.slurm_to_model[i]);
        g_session->job_started(facts, placed, now);
    } catch (const std::exception& e) {
        error("%sJobId=%u: %s; its start is not counted", kLog, job->job_id, e.what());
    }
}

// Count one select_p_job_test: its verdict and time.
void record_decision(m2g::SelectVerdict verdict, std::chrono::steady_clock::time_point t0) noexcept
{
    try {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
        g_session->counters().decision(verdict, ns.count());
    } catch (...) {
        // Counting never fails a placement.
    }
}

}  // namespace

// ---- plugin entry points -------------------------------------------------------

extern "C" int init(void)
{
    try {
        if (!load_stock())
            return SLURM_ERROR;
        auto stock_init = reinterpret_cast<int (*)(void)>(dlsym(g_handle, "init"));
        if (stock_init && stock_init() != SLURM_SUCCESS)
            return SLURM_ERROR;
        if (client_only())
            return SLURM_SUCCESS;
        if (running_in_slurmctld()) {
            load_model();
            if (!g_session->active() && m2g_reconfigure_child()) {
                error("%s%s", kLog, M2G_RECONF_REFUSED);
                return SLURM_ERROR;
            }
            info("%sselect/m2g active, wrapping %s", kLog, kStock);
        }
        return SLURM_SUCCESS;
    } catch (...) {
        if (!client_only())
            error("%sunexpected error at init", kLog);
        return SLURM_ERROR;
    }
}

extern "C" int fini(void)
{
    if (!g_handle)
        return SLURM_SUCCESS;
    auto stock_fini = reinterpret_cast<int (*)(void)>(dlsym(g_handle, "fini"));
    const int rc = stock_fini ? stock_fini() : SLURM_SUCCESS;
    g_session->shutdown();  // writes the last counts before slurmctld stops
    return rc;
}

// A node's scheduling weight as the cons_tres that m2g wraps will weigh it
// in this job_test. Run-now: slurmctld has set sched_weight for the job
// (node_scheduler.c, _set_sched_weight() and _sync_node_weight(): Weight=,
// boot needed, outside a FLEX reservation). Will-run on 26.05: cons_tres
// sets it itself, but only after select/m2g has chosen (job_test.c,
// _set_sched_weight(), called by _will_run_test() and the function before
// it), so m2g computes the same here; read as it was, it held what the last
// job_test left (zero on nodes none had tested yet), and every reservation,
// which slurmctld places with a will-run test, went to a node no job had
// used (Slurm's regression suite, test_123_1, found it).
static uint64_t sched_weight(const node_record_t* n, bool will_run, bool future)
{
#if M2G_SLURM_NEW_API
    if (will_run) {
        uint64_t w = static_cast<uint64_t>(n->weight) << 16;
        if (!future && IS_NODE_COMPLETING(n))
            w |= 0x100;
        if (IS_NODE_REBOOT_REQUESTED(n) || IS_NODE_REBOOT_ISSUED(n))
            w |= 0x200;
        if (IS_NODE_POWERED_DOWN(n) || IS_NODE_POWERING_DOWN(n) || IS_NODE_POWERING_UP(n))
            w |= 0x2000000000000;
        return w;
    }
#else
    (void)will_run;
    (void)future;
#endif
    return n->sched_weight;
}

// select_p_job_test's work: Slurm's structs to the session's facts, and its
// Outcome back onto the bitmap and cons_tres; `verdict` says how it was
// decided (for the counters).
static int job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                    uint32_t req_nodes, uint16_t mode, M2G_JOB_TEST_TAIL_PARAMS, m2g::SelectVerdict& verdict)
{
    verdict = m2g::SelectVerdict::Stock;
    auto stock = [&](bitstr_t* bm) {
        return g_ops.job_test(job_ptr, bm, min_nodes, max_nodes, req_nodes, mode, M2G_JOB_TEST_TAIL_ARGS);
    };
    // A placement by preemption: cons_tres sees only the victims m2g chose
    // (it removes them in order until the job fits, and lists those whose
    // nodes the job uses: select_p_job_test's preemptee_job_list).
    m2g_list_t only_victims = nullptr;
    auto stock_preempting = [&](bitstr_t* bm) {
        return g_ops.job_test(job_ptr, bm, min_nodes, max_nodes, req_nodes, mode, only_victims,
                              preemptee_job_list, M2G_JOB_TEST_TAIL_REST);
    };
    struct ListGuard {
        m2g_list_t& l;
        ~ListGuard() { FREE_NULL_LIST(l); }
    } guard{only_victims};
    if (!g_session->active() || !job_ptr || !job_ptr->details || !bitmap)
        return stock(bitmap);
    try {
        const uint32_t nodes = static_cast<uint32_t>(m2g::job_node_count(min_nodes, max_nodes, req_nodes));
        m2g::JobFacts facts = job_facts(job_ptr, nodes, min_nodes, max_nodes);
        map_nodes();
        // Offered nodes in model terms.
        std::fill(g.offered.begin(), g.offered.end(), 0);
        {
            const int last = bit_fls(bitmap);
            for (int i = bit_ffs(bitmap); i >= 0 && i <= last && i < node_record_count; ++i)
                if (bit_test(bitmap, i) && g.slurm_to_model[i] >= 0)
                    g.offered[g.slurm_to_model[i]] = 1;
        }
        // Tasks or CPUs that no one node holds (sbatch -n 144 without -N,
        // where Slurm's minimum is 1 node): at least as many nodes as the
        // largest nodes take to hold them, as cons_tres spreads them.
        // m2g placed one node and cons_tres refused it: "Requested node
        // configuration is not available" at submission (Slurm's test_113_2).
        uint32_t most_cpus = 0;  // on one node of the model
        for (size_t mi = 0; mi < g.model_to_slurm.size(); ++mi) {
            const int si = g.model_to_slurm[mi];
            if (si >= 0 && node_record_table_ptr[si])
                most_cpus = std::max<uint32_t>(most_cpus, node_record_table_ptr[si]->cpus);
        }
        if (job_ptr->details->min_cpus > 0 && most_cpus > 0) {
            const int need = static_cast<int>((job_ptr->details->min_cpus + most_cpus - 1) / most_cpus);
            if (need > facts.nodes && (facts.max_nodes <= 0 || need <= facts.max_nodes)) {
                facts.nodes = need;
                facts.min_nodes = std::max(facts.min_nodes, need);
            }
        }
        auto free_on = [](int mi) {
            const int si = g.model_to_slurm[mi];
            return si >= 0 ? free_gpus(node_record_table_ptr[si]) : 0;
        };
        const int64_t now = time(nullptr);
        const m2g::SelectMode sm = select_mode(mode);
        m2g::FreeAt free_at;
        if (sm == m2g::SelectMode::WillRun) {
            const m2g::NodeReleases& at = node_free_at(now);
            free_at = [&at, &free_on](int mi, int gpus) { return at.free_at(mi, gpus, free_on(mi)); };
        }
        // Slurm's scheduling weights (scontrol update may change them).
#if M2G_SLURM_NEW_API
        const bool future = will_run_ptr && will_run_ptr->start > now;
#else
        const bool future = false;
#endif
        g.weights.resize(g.offered.size());
        for (size_t mi = 0; mi < g.offered.size(); ++mi) {
            const int si = g.model_to_slurm[mi];
            g.weights[mi] = si >= 0 && node_record_table_ptr[si]
                                ? sched_weight(node_record_table_ptr[si], sm == m2g::SelectMode::WillRun, future)
                                : 0;
        }
        g_session->set_node_weights(g.weights);
        // The Outcome onto Slurm's bitmap: the session holds the order.
        int rc = SLURM_ERROR;
        m2g::OfferActions act;
        act.rule_out = [&](const std::vector<int>& mis) {
            for (int mi : mis)
                if (g.model_to_slurm[mi] >= 0)
                    bit_clear(bitmap, g.model_to_slurm[mi]);
        };
        bool preempting = false;
        act.test_offer = [&] { return (rc = stock(bitmap)) == SLURM_SUCCESS; };
        act.test_only = [&](const std::vector<int>& mis) {
            bitstr_t* narrowed = bit_alloc(bit_size(bitmap));
            for (int mi : mis)
                if (g.model_to_slurm[mi] >= 0)
                    bit_set(narrowed, g.model_to_slurm[mi]);
            rc = preempting ? stock_preempting(narrowed) : stock(narrowed);
            if (rc == SLURM_SUCCESS)
                bit_copybits(bitmap, narrowed);
            FREE_NULL_BITMAP(narrowed);
            return rc == SLURM_SUCCESS;
        };
        act.annotate = [&](const std::string& text) { annotate(job_ptr, text); };
        act.chosen = [&] { return node_names(bitmap); };
        // cons_tres may refuse the nodes m2g chose now for what m2g does not
        // weigh (CPUs, memory, licences: a shared node whose memory another
        // job holds). Those nodes are then ruled out and the session asked
        // again, a few times, before the job waits: Slurm's own regression
        // suite found jobs waiting for a busy node beside idle ones.
        std::vector<m2g::PreemptCandidate> victims;
        const bool can_preempt = preemptable(preemptee_candidates, now, victims);
        for (int attempt = 1;; ++attempt) {
            const m2g::Outcome o = g_session->decide(facts, g.offered, bit_set_count(bitmap), free_on, sm, now,
                                                     free_at, can_preempt ? &victims : nullptr);
            preempting = o.preempting;
            FREE_NULL_LIST(only_victims);
            if (preempting)
                only_victims = keep_candidates(preemptee_candidates, o.preempt);
            m2g::Applied a = g_session->apply(o, act);
            if (!a.accepted && sm == m2g::SelectMode::TestOnly && o.offer == m2g::Outcome::Offer::Narrowed) {
                // Could it ever run? cons_tres refused m2g's nodes for what m2g
                // does not weigh (CPUs, memory): its answer on the whole offer
                // stands, so m2g never rejects at submission a job stock accepts.
                a.accepted = act.test_offer();
                a.verdict = m2g::SelectVerdict::Stock;
            }
            verdict = a.verdict;
            if (a.accepted && o.preempting && sm == m2g::SelectMode::RunNow)
                g_session->preemption_started(facts.job_id, o, now);
            if (a.accepted || sm != m2g::SelectMode::RunNow || o.offer != m2g::Outcome::Offer::Narrowed ||
                attempt >= kRefusedRetries)
                return rc;
            for (int mi : o.nodes) {
                g.offered[mi] = 0;
                if (g.model_to_slurm[mi] >= 0)
                    bit_clear(bitmap, g.model_to_slurm[mi]);
            }
            if (o.nodes.size() == 1) {
                // One node is one domain wherever it is: cons_tres picks one it
                // can use among the rest (a heterogeneous job's components of
                // --mem=0 refuse every node an earlier component holds).
                verdict = m2g::SelectVerdict::Stock;
                act.test_offer();
                return rc;
            }
            debug("%sJobId=%u: cons_tres refused the %zu node(s) chosen; asking again without them (%d of %d)", kLog,
                  job_ptr->job_id, o.nodes.size(), attempt + 1, kRefusedRetries);
        }
    } catch (const std::exception& e) {
        error("%sJobId=%u: %s; cons_tres decides alone", kLog, job_ptr->job_id, e.what());
    } catch (...) {
        error("%sJobId=%u: unexpected error; cons_tres decides alone", kLog, job_ptr->job_id);
    }
    verdict = m2g::SelectVerdict::Stock;
    return stock(bitmap);
}

extern "C" int select_p_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                                 uint32_t req_nodes, uint16_t mode, M2G_JOB_TEST_TAIL_PARAMS)
{
    const auto t0 = std::chrono::steady_clock::now();
    m2g::SelectVerdict verdict = m2g::SelectVerdict::Stock;
    const int rc = job_test(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode, M2G_JOB_TEST_TAIL_ARGS,
                            verdict);
    record_decision(verdict, t0);
    return rc;
}

extern "C" int select_p_reconfigure(void)
{
    if (!client_only() && running_in_slurmctld())
        load_model();
    return g_ops.reconfigure();
}

// ---- everything else goes to cons_tres unchanged ------------------------------
extern "C" {
int select_p_node_init(void)
{
    g.node_count = -1;  // the node table may have changed
    return g_ops.node_init();
}
int select_p_job_begin(job_record_t* j)
{
    const int rc = g_ops.job_begin(j);
    if (rc == SLURM_SUCCESS)
        record_job_start(j);
    return rc;
}
int select_p_job_ready(job_record_t* j) { return g_ops.job_ready(j); }
int select_p_job_expand(job_record_t* a, job_record_t* b) { return g_ops.job_expand(a, b); }
int select_p_job_resized(job_record_t* j, node_record_t* n) { return g_ops.job_resized(j, n); }
int select_p_job_fini(job_record_t* j) { return g_ops.job_fini(j); }
int select_p_job_suspend(job_record_t* j, bool i) { return g_ops.job_suspend(j, i); }
int select_p_job_resume(job_record_t* j, bool i) { return g_ops.job_resume(j, i); }
int select_p_select_nodeinfo_set_all(void) { return g_ops.nodeinfo_set_all(); }
int select_p_select_nodeinfo_set(job_record_t* j) { return g_ops.nodeinfo_set(j); }
#if M2G_SLURM_NEW_API
void select_p_job_mem_reduce(job_record_t* j) { g_ops.job_mem_reduce(j); }
#else
// 22.05 only: node and job info packing for clients, steps, reservations.
int select_p_state_save(char* dir) { return g_ops.state_save(dir); }
int select_p_state_restore(char* dir) { return g_ops.state_restore(dir); }
int select_p_job_init(List jobs) { return g_ops.job_init(jobs); }
int select_p_job_signal(job_record_t* j, int s) { return g_ops.job_signal(j, s); }
bitstr_t* select_p_step_pick_nodes(job_record_t* j, select_jobinfo_t* s, uint32_t c, bitstr_t** a)
{
    return g_ops.step_pick_nodes(j, s, c, a);
}
int select_p_step_start(step_record_t* s) { return g_ops.step_start(s); }
int select_p_step_finish(step_record_t* s, bool k) { return g_ops.step_finish(s, k); }
int select_p_select_nodeinfo_pack(select_nodeinfo_t* n, buf_t* b, uint16_t v) { return g_ops.nodeinfo_pack(n, b, v); }
int select_p_select_nodeinfo_unpack(select_nodeinfo_t** n, buf_t* b, uint16_t v)
{
    return g_ops.nodeinfo_unpack(n, b, v);
}
select_nodeinfo_t* select_p_select_nodeinfo_alloc(void) { return g_ops.nodeinfo_alloc(); }
int select_p_select_nodeinfo_free(select_nodeinfo_t* n) { return g_ops.nodeinfo_free(n); }
int select_p_select_nodeinfo_get(select_nodeinfo_t* n, enum select_nodedata_type t, enum node_states s, void* d)
{
    return g_ops.nodeinfo_get(n, t, s, d);
}
select_jobinfo_t* select_p_select_jobinfo_alloc(void) { return g_ops.jobinfo_alloc(); }
int select_p_select_jobinfo_free(select_jobinfo_t* j) { return g_ops.jobinfo_free(j); }
int select_p_select_jobinfo_set(select_jobinfo_t* j, enum select_jobdata_type t, void* d)
{
    return g_ops.jobinfo_set(j, t, d);
}
int select_p_select_jobinfo_get(select_jobinfo_t* j, enum select_jobdata_type t, void* d)
{
    return g_ops.jobinfo_get(j, t, d);
}
select_jobinfo_t* select_p_select_jobinfo_copy(select_jobinfo_t* j) { return g_ops.jobinfo_copy(j); }
int select_p_select_jobinfo_pack(select_jobinfo_t* j, buf_t* b, uint16_t v) { return g_ops.jobinfo_pack(j, b, v); }
int select_p_select_jobinfo_unpack(select_jobinfo_t** j, buf_t* b, uint16_t v)
{
    return g_ops.jobinfo_unpack(j, b, v);
}
char* select_p_select_jobinfo_sprint(select_jobinfo_t* j, char* b, size_t s, int m)
{
    return g_ops.jobinfo_sprint(j, b, s, m);
}
char* select_p_select_jobinfo_xstrdup(select_jobinfo_t* j, int m) { return g_ops.jobinfo_xstrdup(j, m); }
int select_p_get_info_from_plugin(enum select_plugindata_info i, job_record_t* j, void* d)
{
    return g_ops.get_info_from_plugin(i, j, d);
}
int select_p_update_node_config(int i) { return g_ops.update_node_config(i); }
bitstr_t* select_p_resv_test(resv_desc_msg_t* r, uint32_t c, bitstr_t* a, bitstr_t** core)
{
    return g_ops.resv_test(r, c, a, core);
}
#endif
}
