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
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "topology/admission.hpp"
#include "topology/annotation.hpp"
#include "topology/cluster_state.hpp"
#include "topology/config.hpp"
#include "topology/intent.hpp"
#include "topology/placement.hpp"
#include "topology/signals.hpp"
#include "topology/span.hpp"
#include "topology/stats.hpp"
#include "topology/well_known.hpp"

// Slurm's headers are C; select.h's ops table trips C++'s -Wparentheses.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wparentheses"
extern "C" {
#include "config.h"  // Slurm's, from --with-slurm-source

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/gres.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/select.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"
}
#pragma GCC diagnostic pop

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

#if SLURM_VERSION_NUMBER != SLURM_VERSION_NUM(22, 5, 8)
#warning "select/m2g is tested only with Slurm 22.05.8; the select plugin API changes between releases"
#endif

namespace {

constexpr const char* kLog = "m2g: select: ";
constexpr const char* kStock = M2G_STOCK_PLUGINDIR "/select_cons_tres.so";

// ---- the stock cons_tres -----------------------------------------------------
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
    static const bool client = dlsym(RTLD_DEFAULT, "running_in_slurmctld") == nullptr;
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
struct State {
    std::unique_ptr<m2g::Model> model;
    std::unique_ptr<m2g::Engine> engine;
    std::string conf_text;            // the m2g.conf the model was built from
    std::vector<int> slurm_to_model;  // Slurm node index -> model node index (or -1)
    std::vector<int> model_to_slurm;  // model node index -> Slurm node index (or -1)
    int node_count = -1;              // node_record_count the map was built for
    std::vector<uint8_t> usable;      // scratch, per model node
    m2g::ClusterState health;         // from HealthFile=
    time_t health_mtime = 0;
    time_t health_checked = 0;
    // The signals feed (SignalsFile=): its own poll thread parses it; the
    // placement path only takes the published snapshot.
    std::unique_ptr<m2g::SignalFeed> feed;
    // HealthFile state merged with the snapshot's health, rebuilt when
    // either changes.
    m2g::ClusterState merged;
    std::shared_ptr<const m2g::Signals> merged_for;  // held, so its address cannot be reused
    time_t merged_health_mtime = -1;
    // Power of jobs started since the snapshot in force was written, per
    // domain, so starts between two feed updates are counted.
    struct Start {
        int64_t time;
        int domain;
        double kw;
    };
    std::deque<Start> started;
    std::vector<double> started_kw;  // scratch, per domain
    std::vector<double> heat;        // scratch, per domain
    m2g::Pacer pacer;                // GPU starts during curtailment
};
State g;

// Decision counters for m2g-exporter (StatsDir=/select.json), kept across
// reconfigures; the write is logged once per failure streak.
m2g::Counters g_stats(m2g::kw::kPluginSelect, time(nullptr));
void start_stats_writer(const std::string& dir);

void log_line(m2g::LogLevel level, const std::string& msg)
{
    if (level == m2g::LogLevel::Info)
        info("m2g: select: %s", msg.c_str());
    else
        error("m2g: select: %s", msg.c_str());
}

std::string conf_path()
{
    char* p = get_extra_conf_path(const_cast<char*>(m2g::kw::kConfFile));
    const std::string path = m2g::conf_path(p);
    xfree(p);
    return path;
}

// (Re)load m2g.conf; keep the previous model when the new one is broken.
void load_model()
{
    try {
        const std::string path = conf_path();
        std::string text = m2g::read_text_file(path);
        if (g.model && text == g.conf_text) {
            debug("%sm2g.conf unchanged; model and signals feed stay", kLog);
            return;
        }
        auto m = std::make_unique<m2g::Model>(m2g::build_model(m2g::parse_m2g_conf(text, path)));
        g.conf_text = std::move(text);
        if (g.feed)
            g.feed->stop();  // it refers to the old model
        g.feed.reset();
        g.engine = std::make_unique<m2g::Engine>(*m);
        g.model = std::move(m);
        g.node_count = -1;
        g.health_mtime = 0;
        g.merged_for = nullptr;
        g.merged_health_mtime = -1;
        g.started.clear();
        g.pacer.clear();
        const m2g::AdmissionPolicy& ap = g.model->admission;
        start_stats_writer(ap.stats_dir);
        if (!ap.signals_file.empty()) {
            g.feed = std::make_unique<m2g::SignalFeed>(ap.signals_file, ap.signals_ttl_sec, ap.failsafe, *g.model,
                                                       log_line);
            g.feed->refresh(time(nullptr));  // never publish a feed that has not read its file
            g.feed->start(ap.signals_poll_sec);
        }
        verbose("%sm2g.conf loaded: %zu nodes, %zu NVLink domains", kLog, g.model->nodes.size(),
                g.model->domains.size());
    } catch (const std::exception& e) {
        error("%s%s%s", kLog, e.what(), g.model ? "; keeping the previous m2g.conf in force" : "; jobs are placed by cons_tres alone");
    }
}

void map_nodes()
{
    if (g.node_count == node_record_count)
        return;
    g.slurm_to_model.assign(node_record_count, -1);
    g.model_to_slurm.assign(g.model->nodes.size(), -1);
    node_record_t* node;
    for (int i = 0; (node = next_node(&i)); ++i) {
        const int mi = g.model->find_node(node->name);
        g.slurm_to_model[node->index] = mi;
        if (mi >= 0)
            g.model_to_slurm[mi] = node->index;
    }
    g.usable.assign(g.model->nodes.size(), 0);
    g.node_count = node_record_count;
}

// The health feed (HealthFile=): re-read when it changes, checked at most
// every 5 s; a broken file keeps the last good state.
void refresh_health()
{
    const std::string& path = g.model->policy.health_file;
    const time_t now = time(nullptr);
    if (path.empty() || now - g.health_checked < 5)
        return;
    g.health_checked = now;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || st.st_mtime == g.health_mtime)
        return;
    try {
        g.health = m2g::read_state_json(path, *g.model).health;
        g.health_mtime = st.st_mtime;
        verbose("%shealth feed %s read", kLog, path.c_str());
    } catch (const std::exception& e) {
        g.health_mtime = st.st_mtime;  // warn once per version of the file
        error("%shealth feed: %s; keeping the last good state", kLog, e.what());
    }
}

// HealthFile state OR the snapshot's health, cached per (snapshot, file).
const m2g::ClusterState& merged_health(const std::shared_ptr<const m2g::Signals>& snap)
{
    if (snap == g.merged_for && g.health_mtime == g.merged_health_mtime)
        return g.merged;
    g.merged = g.health;
    auto merge = [](std::vector<uint8_t>& into, const std::vector<uint8_t>& from) {
        if (from.empty())
            return;
        into.resize(from.size());
        for (size_t i = 0; i < from.size(); ++i)
            into[i] = into[i] || from[i];
    };
    if (snap) {
        merge(g.merged.node_degraded, snap->health.node_degraded);
        merge(g.merged.domain_nvlink_fault, snap->health.domain_nvlink_fault);
        merge(g.merged.domain_over_limit, snap->health.domain_over_limit);
    }
    g.merged_for = snap;
    g.merged_health_mtime = g.health_mtime;
    return g.merged;
}

// kW per domain of jobs started after the snapshot was written.
const std::vector<double>& started_kw(const m2g::Signals* snap)
{
    const int64_t since = snap ? snap->generated_at : 0;
    while (!g.started.empty() && (g.started.front().time < since || g.started.size() > 100000))
        g.started.pop_front();
    g.started_kw.assign(g.model->domains.size(), 0.0);
    for (const auto& st : g.started)
        if (st.domain >= 0 && st.time >= since)
            g.started_kw[st.domain] += st.kw;
    return g.started_kw;
}

// GPUs per node the job asks for (0: none or unknown).
int gpus_per_node(job_record_t* job, uint32_t nodes)
{
    if (!job->gres_list_req)
        return 0;
    uint64_t per_node = 0;
    ListIterator it = list_iterator_create(job->gres_list_req);
    gres_state_t* gs;
    while ((gs = static_cast<gres_state_t*>(list_next(it)))) {
        if (!gs->gres_name || strcmp(gs->gres_name, "gpu"))
            continue;
        auto* js = static_cast<gres_job_state_t*>(gs->gres_data);
        if (js->gres_per_node)
            per_node = std::max<uint64_t>(per_node, js->gres_per_node);
        else if (js->gres_per_job && nodes)
            per_node = std::max<uint64_t>(per_node, (js->gres_per_job + nodes - 1) / nodes);
        else if (js->gres_per_task && nodes && job->details && job->details->num_tasks)
            per_node = std::max<uint64_t>(
                per_node, (js->gres_per_task * job->details->num_tasks + nodes - 1) / nodes);
    }
    list_iterator_destroy(it);
    return static_cast<int>(per_node);
}

// GPUs not yet allocated on a node.
int free_gpus(node_record_t* node)
{
    if (!node->gres_list)
        return 0;
    uint64_t avail = 0;
    ListIterator it = list_iterator_create(node->gres_list);
    gres_state_t* gs;
    while ((gs = static_cast<gres_state_t*>(list_next(it)))) {
        if (!gs->gres_name || strcmp(gs->gres_name, "gpu"))
            continue;
        auto* ns = static_cast<gres_node_state_t*>(gs->gres_data);
        if (ns->gres_cnt_avail > ns->gres_cnt_alloc)
            avail += ns->gres_cnt_avail - ns->gres_cnt_alloc;
    }
    list_iterator_destroy(it);
    return static_cast<int>(avail);
}

m2g::JobIntent job_intent(job_record_t* job)
{
    std::vector<std::string> env;
    if (job->spank_job_env)
        for (uint32_t i = 0; i < job->spank_job_env_size; ++i)
            if (job->spank_job_env[i])
                env.emplace_back(job->spank_job_env[i]);
    try {
        return m2g::decode_intent(env);
    } catch (const std::exception& e) {
        error("%sJobId=%u: %s; using the defaults", kLog, job->job_id, e.what());
        return {};
    }
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

std::string names(const m2g::Model& m, const std::vector<int>& idx, bool switches)
{
    std::string out;
    for (int i : idx)
        out += (out.empty() ? "" : ",") + (switches ? m.switches[i].name : m.domains[i].name);
    return out;
}

// The annotation after cons_tres chose nodes from the narrowed set.
std::string placed_segment(const m2g::Model& m, bitstr_t* chosen, const std::string& policy, const m2g::Placement& p)
{
    std::vector<std::string> nodes;
    for (int i = 0; i < node_record_count; ++i)
        if (bit_test(chosen, i) && node_record_table_ptr[i])
            nodes.push_back(node_record_table_ptr[i]->name);
    const m2g::Span s = m2g::span_of(m, nodes);
    std::vector<int> doms, leaves = s.leaf_switches;
    for (const auto& u : s.domains)
        doms.push_back(u.domain);
    char score[32];
    snprintf(score, sizeof score, "%g", p.score);
    return "domains=" + (doms.empty() ? std::string("-") : names(m, doms, false)) +
           " leaves=" + (leaves.empty() ? std::string("-") : names(m, leaves, true)) + " policy=" + policy +
           " score=" + score + " reason=" + p.reason;
}

// A job began: book its power per domain until the feed reports the new
// draw, and its GPUs in the pacer while a curtailment event is active.
void record_job_start(job_record_t* job)
{
    if (!g.model || !job || !job->node_bitmap || !running_in_slurmctld())
        return;
    try {
        map_nodes();
        const int64_t now = time(nullptr);
        const m2g::JobIntent intent = job_intent(job);
        const int nodes = bit_set_count(job->node_bitmap);
        const int gpn = gpus_per_node(job, static_cast<uint32_t>(nodes));
        const double node_kw = gpn * m2g::power_w_per_gpu(g.model->admission, intent) / 1000.0;
        const int last = bit_fls(job->node_bitmap);
        int started = 0;
        std::vector<int> placed;
        for (int i = bit_ffs(job->node_bitmap); i >= 0 && i <= last && i < node_record_count; ++i) {
            if (!bit_test(job->node_bitmap, i) || g.slurm_to_model[i] < 0)
                continue;
            ++started;
            placed.push_back(g.slurm_to_model[i]);
            g.started.push_back({now, g.model->nodes[g.slurm_to_model[i]].domain, node_kw});
        }
        // Placement quality counts real starts only (a successful test may
        // still not start: preemption, a later failure).
        if (!placed.empty())
            g_stats.placement(m2g::domains_spanned(*g.model, placed),
                              m2g::fits_one_domain(*g.model, static_cast<int>(placed.size())));
        const m2g::SignalsView view = g.feed ? g.feed->view(now) : m2g::SignalsView{};
        if (!m2g::active_events(view.snap.get(), now).empty())
            g.pacer.book(g.model->admission, now, gpn * started, node_kw * started);
    } catch (const std::exception& e) {
        error("%sJobId=%u: %s; its start is not counted", kLog, job->job_id, e.what());
    }
}

// The counters go to StatsDir= from a thread of their own: file I/O never
// runs under slurmctld's scheduling locks.
class StatsWriter {
  public:
    void start(const std::string& dir)
    {
        stop();
        if (dir.empty())
            return;
        path_ = m2g::stats_path(dir, m2g::kw::kPluginSelect);
        stop_ = false;
        thread_ = std::thread([this] {
            std::unique_lock<std::mutex> lk(mu_);
            for (;;) {
                cv_.wait_for(lk, std::chrono::seconds(m2g::kw::kStatsPublishSec), [this] { return stop_; });
                const bool last = stop_;
                lk.unlock();
                write();
                lk.lock();
                if (last)
                    return;
            }
        });
    }
    // Stops the thread after one last write (the final counts).
    void stop()
    {
        if (!thread_.joinable())
            return;
        {
            std::lock_guard<std::mutex> lk(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

  private:
    void write()
    {
        try {
            m2g::write_stats_file(path_, g_stats.snapshot(time(nullptr)));
            if (failed_)
                info("%scounters written to %s again", kLog, path_.c_str());
            failed_ = false;
        } catch (const std::exception& e) {
            if (!failed_)
                error("%s%s; m2g-exporter will not see select/m2g's counters until this is fixed", kLog, e.what());
            failed_ = true;
        }
    }
    std::thread thread_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool failed_ = false;  // writer thread only
    std::string path_;
};
StatsWriter* g_stats_writer = new StatsWriter;  // never destroyed: no joinable thread at exit

void start_stats_writer(const std::string& dir)
{
    g_stats_writer->start(dir);
}

// Count one select_p_job_test: its verdict and time; a job placed now
// (run-now mode) also by the NVLink domains it spans.
void record_decision(m2g::SelectVerdict verdict, std::chrono::steady_clock::time_point t0) noexcept
{
    try {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
        g_stats.decision(verdict, ns.count());
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
    if (!client_only() && running_in_slurmctld())
        g_stats_writer->stop();  // writes the last counts before slurmctld stops
    if (g.feed)
        g.feed->stop();
    g.feed.reset();
    g.engine.reset();
    g.model.reset();
    return rc;
}

// select_p_job_test's work; `verdict` says how it was decided (for the counters).
static int job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                    uint32_t req_nodes, uint16_t mode, List preemptee_candidates, List* preemptee_job_list,
                    bitstr_t* exc_core_bitmap, m2g::SelectVerdict& verdict)
{
    verdict = m2g::SelectVerdict::Stock;
    auto stock = [&](bitstr_t* bm) {
        return g_ops.job_test(job_ptr, bm, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                              preemptee_job_list, exc_core_bitmap);
    };
    if (!g.model || !job_ptr || !job_ptr->details || !bitmap)
        return stock(bitmap);
    try {
        // Jobs that name their nodes or want contiguous ones keep Slurm's way.
        if (job_ptr->details->req_node_bitmap || job_ptr->details->contiguous)
            return stock(bitmap);
        m2g::JobIntent intent = job_intent(job_ptr);
        const m2g::PlacementPolicy& pol =
            g.model->policy_for(job_ptr->part_ptr && job_ptr->part_ptr->name ? job_ptr->part_ptr->name : "");
        std::string policy = m2g::locality_string(intent);
        if (policy.empty()) {
            policy = pol.default_topology;
            m2g::apply_option(intent, m2g::kw::kOptTopology, policy, 0);
        }

        map_nodes();
        refresh_health();
        const int64_t now = time(nullptr);
        const m2g::SignalsView view = g.feed ? g.feed->view(now) : m2g::SignalsView{};
        const uint32_t nodes = req_nodes > min_nodes ? std::min(req_nodes, max_nodes ? max_nodes : req_nodes)
                                                     : min_nodes;
        const int gpn = gpus_per_node(job_ptr, nodes);
        const bool planning = SELECT_IS_MODE_WILL_RUN(mode) || SELECT_IS_MODE_TEST_ONLY(mode);
        const bool run_now = SELECT_IS_MODE_RUN_NOW(mode);

        // Live signals first (maintenance, nodes down, rack/row/site power,
        // pacing): they bound every placement, also cons_tres's own.
        m2g::GateRequest gr;
        gr.intent = intent;
        gr.gpus_per_node = gpn;
        gr.nodes = static_cast<int>(nodes);
        gr.time_limit_s = job_ptr->time_limit == NO_VAL || job_ptr->time_limit == INFINITE
                              ? 0
                              : int64_t(job_ptr->time_limit) * 60;
        gr.now = now;
        // Offered nodes in model terms; gate() clears the ones it rules out.
        std::fill(g.usable.begin(), g.usable.end(), 0);
        {
            const int last = bit_fls(bitmap);
            for (int i = bit_ffs(bitmap); i >= 0 && i <= last && i < node_record_count; ++i)
                if (bit_test(bitmap, i) && g.slurm_to_model[i] >= 0)
                    g.usable[g.slurm_to_model[i]] = 1;
        }
        std::vector<uint8_t> offered = g.usable;
        // Test-only asks whether the job could ever run (at submission, and
        // a "no" rejects it): passing signals (power, maintenance) must not
        // answer that.
        m2g::GateResult gate;
        if (SELECT_IS_MODE_TEST_ONLY(mode))
            g.heat.assign(g.model->domains.size(), 0.0);
        else
            gate = m2g::gate(*g.model, view, gr, started_kw(view.snap.get()), &g.pacer, g.usable, g.heat);
        if (gate.blocked) {
            verdict = m2g::SelectVerdict::Blocked;
            if (run_now)
                annotate(job_ptr, "waiting policy=" + policy + " reason=" + gate.reason);
            return SLURM_ERROR;
        }
        // Narrow Slurm's bitmap by what gate() ruled out, so no path below
        // (cons_tres alone included) uses those nodes.
        std::vector<uint8_t> allowed = g.usable;
        if (gate.trimmed_nodes > 0)
            for (size_t mi = 0; mi < offered.size(); ++mi)
                if (offered[mi] && !allowed[mi] && g.model_to_slurm[mi] >= 0)
                    bit_clear(bitmap, g.model_to_slurm[mi]);
        const uint32_t left = static_cast<uint32_t>(bit_set_count(bitmap));
        if (left < min_nodes) {
            verdict = m2g::SelectVerdict::Blocked;
            if (run_now)
                annotate(job_ptr, "waiting policy=" + policy + " reason=" + gate.reason);
            return SLURM_ERROR;
        }
        // Starts are booked in select_p_job_begin (a successful test here
        // may still not start: preemption, a later failure).
        auto stock_started = stock;
        if (intent.locality == m2g::Locality::Any) {
            const int rc = stock_started(bitmap);
            if (rc == SLURM_SUCCESS && run_now && !gate.reason.empty())
                annotate(job_ptr, "policy=any " + gate.reason);
            return rc;
        }

        // fill_usable(now): the allowed nodes that have the job's GPUs free
        // now; with now == false, every allowed node (planning asks about
        // the future: when could the job run, and where).
        auto fill_usable = [&](bool free_now) {
            for (size_t mi = 0; mi < allowed.size(); ++mi) {
                const int si = g.model_to_slurm[mi];
                g.usable[mi] = allowed[mi] && si >= 0 &&
                               (!free_now || gpn == 0 || free_gpus(node_record_table_ptr[si]) >= gpn);
            }
        };
        m2g::PlacementRequest req;
        req.nodes = static_cast<int>(nodes);
        req.segment = intent.segment;
        req.locality = intent.locality;
        req.level = intent.level;
        req.spare_per_domain = pol.spare_per_domain;
        const time_t since = job_ptr->details->begin_time ? job_ptr->details->begin_time : job_ptr->details->submit_time;
        req.fallback = intent.locality == m2g::Locality::Prefer &&
                       time(nullptr) - since >= pol.prefer_wait_sec;
        m2g::ClusterState state = merged_health(view.snap);
        state.domain_heat = g.heat;  // prefer cooler racks among equal fits
        // Placements on nodes free now come first, also when planning, so
        // backfill starts what can start now; planning then looks further.
        fill_usable(true);
        m2g::Placement p = g.engine->place(req, g.usable, state);
        if (!p.ok && planning) {
            fill_usable(false);
            p = g.engine->place(req, g.usable, state);
        }
        const std::string gate_note = gate.reason.empty() ? "" : " signals=" + gate.reason;

        if (!p.ok) {
            if (run_now)
                annotate(job_ptr, "waiting policy=" + policy + " reason=" + p.reason + gate_note);
            // Best effort is allowed: cons_tres decides on everything allowed.
            if (req.locality == m2g::Locality::Prefer && req.fallback)
                return stock_started(bitmap);
            verdict = m2g::SelectVerdict::Waiting;
            return SLURM_ERROR;
        }
        bitstr_t* narrowed = bit_alloc(bit_size(bitmap));
        for (int mi : p.nodes)
            if (g.model_to_slurm[mi] >= 0)
                bit_set(narrowed, g.model_to_slurm[mi]);
        const int rc = stock(narrowed);
        if (rc == SLURM_SUCCESS) {
            bit_copybits(bitmap, narrowed);
            if (run_now)
                annotate(job_ptr, placed_segment(*g.model, bitmap, policy, p) + gate_note);
        }
        FREE_NULL_BITMAP(narrowed);
        if (rc == SLURM_SUCCESS || intent.locality == m2g::Locality::Strict || !req.fallback) {
            verdict = rc == SLURM_SUCCESS ? m2g::SelectVerdict::Placed : m2g::SelectVerdict::Waiting;
            return rc;
        }
        return stock_started(bitmap);  // prefer, wait over: cons_tres on everything allowed
    } catch (const std::exception& e) {
        error("%sJobId=%u: %s; cons_tres decides alone", kLog, job_ptr->job_id, e.what());
    } catch (...) {
        error("%sJobId=%u: unexpected error; cons_tres decides alone", kLog, job_ptr->job_id);
    }
    verdict = m2g::SelectVerdict::Stock;
    return stock(bitmap);
}

extern "C" int select_p_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                                 uint32_t req_nodes, uint16_t mode, List preemptee_candidates,
                                 List* preemptee_job_list, bitstr_t* exc_core_bitmap)
{
    const auto t0 = std::chrono::steady_clock::now();
    m2g::SelectVerdict verdict = m2g::SelectVerdict::Stock;
    const int rc = job_test(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                            preemptee_job_list, exc_core_bitmap, verdict);
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
int select_p_state_save(char* dir) { return g_ops.state_save(dir); }
int select_p_state_restore(char* dir) { return g_ops.state_restore(dir); }
int select_p_job_init(List jobs) { return g_ops.job_init(jobs); }
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
int select_p_job_signal(job_record_t* j, int s) { return g_ops.job_signal(j, s); }
int select_p_job_fini(job_record_t* j) { return g_ops.job_fini(j); }
int select_p_job_suspend(job_record_t* j, bool i) { return g_ops.job_suspend(j, i); }
int select_p_job_resume(job_record_t* j, bool i) { return g_ops.job_resume(j, i); }
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
int select_p_select_nodeinfo_set_all(void) { return g_ops.nodeinfo_set_all(); }
int select_p_select_nodeinfo_set(job_record_t* j) { return g_ops.nodeinfo_set(j); }
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
}
