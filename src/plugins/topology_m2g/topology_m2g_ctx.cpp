// topology/m2g for Slurm 23.11 and later (tested with 26.05): the NVLink
// domains and fabric of m2g.conf as Slurm's switch tree.
//
// Since 23.11 a topology plugin keeps its records in a per-topology context
// (topology_ctx_t) and chooses nodes for cons_tres through
// topology_p_eval_nodes. Slurm's own topology/tree accepts its switches
// ready-made in tctx->config (topology_tree_config_t, what topology.yaml's
// parser gives it), so this plugin builds that config from m2g.conf and
// hands every call to the stock topology_tree.so, loaded by absolute path
// from Slurm's plugin directory: switch records, tree-aware node choice,
// message forwarding and `scontrol show topology` are Slurm's own code, fed
// by the one m2g.conf; node ranking (fabric order) comes from the model.
// Each NVLink domain is a level-0 switch holding its nodes; leaf, spine and
// core switches sit above. m2g's own
// placement policy (strict/prefer locality, segments, health, power) runs in
// select/m2g, which sees the select mode (run now, test only, will run) that
// topology_p_eval_nodes is not told (see doc/topology.md).
//
// A broken, empty or half-written m2g.conf is refused with its file:line
// reason, and no daemon runs on a topology it failed to build:
// - slurmctld and slurmd stop at start (Slurm's own topology/tree stops them
//   the same way on a broken topology.conf). Since 23.11 a reconfigure
//   starts a new slurmctld and a new slurmd: that process stops, Slurm says
//   "reconfigure failed" and the running one keeps the last good m2g.conf.
//   slurmd ignores what topology_g_build_config returns and goes on to ask
//   for its node address (slurmd.c, _set_topo_info), so a refusal there
//   must stop the process, never return with no context.
// - Other processes (slurmstepd, clients) log and run without switches:
//   every call below answers as Slurm's tree does with no switches, never
//   with a null context.
//
// All logic lives in the engine (src/core); this file translates.
#include <dlfcn.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/model/config.hpp"
#include "core/model/export.hpp"
#include "core/base/keys.hpp"

// extra_constraints.h (through slurmctld.h) names a struct member
// `operator`, a C++ keyword; renaming it inside this file changes no layout.
#define operator m2g_slurm_operator
extern "C" {
#include "config.h"  // Slurm's, from --with-slurm-source

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/topology.h"
#include "src/plugins/topology/tree/switch_record.h"  // tree_context_t
}
#undef operator
#include "plugins/common/guard.hpp"
#include "plugins/common/slurm_compat.hpp"

#ifndef M2G_STOCK_PLUGINDIR
#error "M2G_STOCK_PLUGINDIR (the installed Slurm's plugin directory) must be defined by the build"
#endif

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(23, 11, 0)
#error "topology_m2g_ctx.cpp is for Slurm 23.11 and later; 22.05 builds topology_m2g.cpp"
#endif

// m2g's id among topology plugins. Clients unpack `scontrol show topology`
// by plugin id, so the data the stock tree code packs carries this one.
constexpr uint32_t kPluginIdM2g = 190;

extern "C" const char plugin_name[] = "topology m2g plugin (NVLink domains from m2g.conf, Slurm's tree)";
extern "C" const char plugin_type[] = "topology/m2g";
extern "C" const uint32_t plugin_version = SLURM_VERSION_NUMBER;
extern "C" const uint32_t plugin_id = kPluginIdM2g;
extern "C" const bool supports_exclusive_topo = true;

namespace {

constexpr const char* kLog = "m2g: topology: ";
constexpr const char* kTree = M2G_STOCK_PLUGINDIR "/topology_tree.so";

// The stock tree plugin's entry points, looked up once.
struct TreeOps {
    int (*add_rm_node)(node_record_t*, char*, topology_ctx_t*);
    bool (*allow_one_node)(void*);
    int (*build_config)(topology_ctx_t*);
    int (*destroy_config)(topology_ctx_t*);
    int (*eval_node)(topology_eval_t*, int);
    int (*eval_nodes)(topology_eval_t*);
    int (*whole_topo)(bitstr_t*, void*);
    bitstr_t* (*get_bitmap)(char*, void*);
    int (*get_node_addr)(char*, char**, char**, void*);
    int (*split_hostlist)(hostlist_t*, hostlist_t***, int*, uint16_t, void*);
    int (*get)(topology_data_t, void*, void*);
    int (*topoinfo_free)(void*);
    int (*topoinfo_pack)(void*, buf_t*, uint16_t);
    int (*topoinfo_print)(void*, char*, char*, char**);
    int (*topoinfo_unpack)(void**, buf_t*, uint16_t);
    void (*jobinfo_free)(void*);
    void (*jobinfo_pack)(void*, buf_t*, uint16_t);
    int (*jobinfo_unpack)(void**, buf_t*, uint16_t);
    int (*jobinfo_get)(topology_jobinfo_type_t, void*, void*);
    uint32_t (*get_fragmentation)(bitstr_t*, void*);
    void (*get_topology_str)(node_record_t*, char**, topology_ctx_t*);
    int (*get_rank)(bitstr_t*, uint32_t**, uint32_t*, void*);
};
// In the order of TreeOps.
const char* const kTreeSyms[] = {
    "topology_p_add_rm_node", "topology_p_allow_one_node", "topology_p_build_config",
    "topology_p_destroy_config", "topology_p_eval_node", "topology_p_eval_nodes", "topology_p_whole_topo",
    "topology_p_get_bitmap", "topology_p_get_node_addr",
    "topology_p_split_hostlist", "topology_p_get", "topology_p_topoinfo_free", "topology_p_topoinfo_pack",
    "topology_p_topoinfo_print", "topology_p_topoinfo_unpack", "topology_p_jobinfo_free",
    "topology_p_jobinfo_pack", "topology_p_jobinfo_unpack", "topology_p_jobinfo_get",
    "topology_p_get_fragmentation", "topology_p_get_topology_str", "topology_p_get_rank",
};
static_assert(sizeof(kTreeSyms) / sizeof(kTreeSyms[0]) * sizeof(void*) == sizeof(TreeOps),
              "TreeOps and its symbol list disagree");

void* g_tree = nullptr;
TreeOps g_ops;

bool load_tree()
{
    if (g_tree)
        return true;
    g_tree = dlopen(kTree, RTLD_LAZY | RTLD_LOCAL);
    if (!g_tree) {
        error("%scannot load Slurm's %s: %s", kLog, kTree, dlerror());
        return false;
    }
    void** slots = reinterpret_cast<void**>(&g_ops);
    for (size_t i = 0; i < sizeof(kTreeSyms) / sizeof(kTreeSyms[0]); ++i) {
        slots[i] = dlsym(g_tree, kTreeSyms[i]);
        if (!slots[i]) {
            error("%s%s lacks %s: not the topology/tree of Slurm %s this was built for", kLog, kTree, kTreeSyms[i],
                  SLURM_VERSION_STRING);
            dlclose(g_tree);
            g_tree = nullptr;
            return false;
        }
    }
    return true;
}

// Our per-topology state: the tree plugin's own context, whose config is
// the switch list built from m2g.conf.
struct Ctx {
    topology_ctx_t tree{};                 // what the tree code sees
    topology_tree_config_t config{};       // owned; freed with free_topology_tree_config
    std::unique_ptr<m2g::Model> model;     // the model the config came from
};

std::string conf_path()
{
    char* p = get_extra_conf_path(const_cast<char*>(m2g::kw::kConfFile));
    const std::string path = m2g::conf_path(p);
    xfree(p);
    return path;
}

// topology_tree_config_t from the model: one entry per switch, nodes for
// NVLink domains (only those slurm.conf defines: the tree code stops
// slurmctld on an unknown name), child switches above.
void fill_config(const m2g::Model& model, topology_tree_config_t* cfg)
{
    const std::vector<m2g::SlurmSwitch> sw = m2g::slurm_switches(model);
    cfg->config_cnt = static_cast<int>(sw.size());
    cfg->switch_configs = static_cast<slurm_conf_switches_t*>(xcalloc(sw.size(), sizeof(slurm_conf_switches_t)));
    hostlist_t* unknown = hostlist_create(nullptr);
    for (size_t i = 0; i < sw.size(); ++i) {
        slurm_conf_switches_t* c = &cfg->switch_configs[i];
        c->switch_name = xstrdup(sw[i].name.c_str());
        c->link_speed = sw[i].link_speed;
        if (sw[i].level == 0) {
            hostlist_t* hl = hostlist_create(nullptr);
            for (int ni : sw[i].nodes) {
                const char* name = model.nodes[ni].name.c_str();
                if (find_node_record(const_cast<char*>(name)))
                    hostlist_push_host(hl, name);
                else
                    hostlist_push_host(unknown, name);
            }
            if (hostlist_count(hl) > 0)
                c->nodes = hostlist_ranged_string_xmalloc(hl);
            else
                error("%sswitch %s has no node that slurm.conf defines", kLog, c->switch_name);
            hostlist_destroy(hl);
        } else {
            hostlist_t* hl = hostlist_create(nullptr);
            for (int ch : sw[i].children)
                hostlist_push_host(hl, sw[ch].name.c_str());
            c->switches = hostlist_ranged_string_xmalloc(hl);
            hostlist_destroy(hl);
        }
    }
    if (hostlist_count(unknown) > 0) {
        char* names = hostlist_ranged_string_xmalloc(unknown);
        error("%s%d node(s) in m2g.conf are not in slurm.conf: %s", kLog, hostlist_count(unknown), names);
        xfree(names);
    }
    hostlist_destroy(unknown);
}

// Read m2g.conf into a new context. Throws with the file:line message.
std::unique_ptr<Ctx> make_ctx(const topology_ctx_t* outer)
{
    const std::string path = conf_path();
    std::vector<std::string> warnings;
    auto ctx = std::make_unique<Ctx>();
    ctx->model = std::make_unique<m2g::Model>(m2g::load_model(path, &warnings));
    for (const auto& w : warnings)
        error("%s%s: %s", kLog, path.c_str(), w.c_str());
    fill_config(*ctx->model, &ctx->config);
    ctx->tree = *outer;  // name, idx, cluster_default as Slurm set them
    ctx->tree.config = &ctx->config;
    ctx->tree.plugin_ctx = nullptr;
    ctx->tree.plugin = nullptr;
    ctx->tree.topo_conf = nullptr;
    ctx->tree.name = outer->name;
    return ctx;
}

void destroy_ctx(Ctx* ctx)
{
    if (!ctx)
        return;
    if (ctx->tree.plugin_ctx)
        g_ops.destroy_config(&ctx->tree);
    // The tree code may have added switches to the config (xrealloc'd);
    // free what it holds now, not what we allocated. The entries are one
    // array: free each entry's strings, then the array (free_switch_conf
    // would free each entry as if it were its own allocation).
    for (int i = 0; i < ctx->config.config_cnt; ++i) {
        slurm_conf_switches_t* c = &ctx->config.switch_configs[i];
        xfree(c->nodes);
        xfree(c->switch_name);
        xfree(c->switches);
    }
    xfree(ctx->config.switch_configs);
    delete ctx;
}

Ctx* ctx_of(void* plugin_ctx) { return static_cast<Ctx*>(plugin_ctx); }

// What the tree code is handed where no topology is built (a client, a
// slurmstepd, or a process whose m2g.conf was refused): its own context
// with no switches, which every tree call reads as "flat".
tree_context_t g_no_switches{};

void* tree_ctx(void* plugin_ctx)
{
    void* tree = plugin_ctx ? ctx_of(plugin_ctx)->tree.plugin_ctx : nullptr;
    return tree ? tree : &g_no_switches;
}

// A refused m2g.conf with no earlier one in force: the daemons that build a
// topology stop (see the top of this file), others log and go flat.
int refuse(const std::string& why)
{
    if (running_in_slurmctld() && m2g_reconfigure_child())
        fatal("%s%s; %s", kLog, why.c_str(), M2G_RECONF_REFUSED);
    if (running_in_slurmctld())
        fatal("%s%s", kLog, why.c_str());
    if (running_in_slurmd() && m2g_reconfigure_child(M2gDaemon::Slurmd))
        fatal("%s%s; %s", kLog, why.c_str(), M2G_SLURMD_RECONF_REFUSED);
    if (running_in_slurmd())
        fatal("%s%s; slurmd does not start without the topology", kLog, why.c_str());
    error("%s%s; no topology is in force", kLog, why.c_str());
    return SLURM_ERROR;
}

}  // namespace

extern "C" {

int init(void)
{
    if (!load_tree())
        return SLURM_ERROR;
    verbose("%s loaded (switch tree by %s)", plugin_name, kTree);
    return SLURM_SUCCESS;
}

void fini(void) {}

int topology_p_build_config(topology_ctx_t* tctx)
{
    return m2g_guarded(error, kLog, "building the switch tree", SLURM_ERROR, [&]() -> int {
        if (!node_record_count)
            return SLURM_SUCCESS;
        std::unique_ptr<Ctx> ctx;
        try {
            ctx = make_ctx(tctx);
        } catch (const std::exception& e) {
            if (tctx->plugin_ctx) {
                error("%s%s; keeping the previous m2g.conf in force", kLog, e.what());
                return SLURM_SUCCESS;
            }
            return refuse(e.what());
        }
        const int rc = g_ops.build_config(&ctx->tree);
        if (rc != SLURM_SUCCESS || !ctx->tree.plugin_ctx) {
            destroy_ctx(ctx.release());
            const std::string why = "Slurm's tree code refused the switches built from " + conf_path();
            if (tctx->plugin_ctx) {
                error("%s%s; keeping the previous m2g.conf in force", kLog, why.c_str());
                return SLURM_SUCCESS;
            }
            return refuse(why);
        }
        destroy_ctx(ctx_of(tctx->plugin_ctx));
        verbose("%s%d switches from m2g.conf (%zu NVLink domains, %zu fabric switches)", kLog,
                ctx->config.config_cnt, ctx->model->domains.size(), ctx->model->switches.size());
        tctx->plugin_ctx = ctx.release();
        return SLURM_SUCCESS;
    });
}

int topology_p_destroy_config(topology_ctx_t* tctx)
{
    destroy_ctx(ctx_of(tctx->plugin_ctx));
    tctx->plugin_ctx = nullptr;
    return SLURM_SUCCESS;
}

int topology_p_add_rm_node(node_record_t* node_ptr, char* unit, topology_ctx_t* tctx)
{
    if (!tctx->plugin_ctx) {
        error("%scannot add or remove node %s: no topology is in force", kLog, node_ptr ? node_ptr->name : "?");
        return SLURM_ERROR;
    }
    return g_ops.add_rm_node(node_ptr, unit, &ctx_of(tctx->plugin_ctx)->tree);
}

bool topology_p_allow_one_node(void* ctx) { return g_ops.allow_one_node(tree_ctx(ctx)); }

// The tree code reads its records through topo_eval->tctx->plugin_ctx.
int topology_p_eval_nodes(topology_eval_t* topo_eval)
{
    topology_ctx_t* outer = topo_eval->tctx;
    if (!outer || !outer->plugin_ctx)
        return SLURM_ERROR;
    topo_eval->tctx = &ctx_of(outer->plugin_ctx)->tree;
    const int rc = g_ops.eval_nodes(topo_eval);
    topo_eval->tctx = outer;
    return rc;
}

int topology_p_eval_node(topology_eval_t* topo_eval, int node_idx)
{
    topology_ctx_t* outer = topo_eval->tctx;
    if (!outer || !outer->plugin_ctx)
        return SLURM_ERROR;
    topo_eval->tctx = &ctx_of(outer->plugin_ctx)->tree;
    const int rc = g_ops.eval_node(topo_eval, node_idx);
    topo_eval->tctx = outer;
    return rc;
}

int topology_p_whole_topo(bitstr_t* node_mask, void* ctx) { return g_ops.whole_topo(node_mask, tree_ctx(ctx)); }

bitstr_t* topology_p_get_bitmap(char* name, void* ctx) { return g_ops.get_bitmap(name, tree_ctx(ctx)); }

// Rank nodes in tree order (domains in fabric order), so Slurm's node table,
// and every node list it prints, follows the NVLink domains; nodes m2g.conf
// does not name follow, in name order. Slurm calls this before
// topology_p_build_config, and the stock tree ranks only under
// TopologyParam=SwitchAsNodeRank, so the ranks come from the model here,
// as on 22.05. Ranks start at 1 (0 is "unranked").
bool topology_p_generate_node_ranking(topology_ctx_t* tctx)
{
    try {
        const std::string path = conf_path();
        const m2g::Model model = m2g::load_model(path, nullptr);
        const uint32_t after = static_cast<uint32_t>(model.nodes.size()) + 1;
        node_record_t* node;
        for (int i = 0; (node = next_node(&i)); ++i) {
            const int mi = model.find_node(node->name);
            node->node_rank = mi == m2g::kNone ? after + static_cast<uint32_t>(i)
                                               : static_cast<uint32_t>(model.nodes[mi].rank) + 1;
        }
        return true;
    } catch (const std::exception& e) {
        // topology_p_build_config, called next, reports it (and stops slurmctld).
        debug("%s%s; nodes keep name order", kLog, e.what());
    } catch (...) {
    }
    return false;
}

int topology_p_get_node_addr(char* node_name, char** paddr, char** ppattern, void* ctx)
{
    return g_ops.get_node_addr(node_name, paddr, ppattern, tree_ctx(ctx));
}

// With no switches built here, the tree code would try to build them itself
// (RouteTree) and then route through the empty ones: split by tree width,
// as it does without RouteTree.
int topology_p_split_hostlist(hostlist_t* hl, hostlist_t*** sp_hl, int* count, uint16_t tree_width, void* ctx)
{
    if (tree_ctx(ctx) == &g_no_switches)
        return hostlist_split_treewidth(hl, sp_hl, count, tree_width);
    return g_ops.split_hostlist(hl, sp_hl, count, tree_width, tree_ctx(ctx));
}

int topology_p_get(topology_data_t type, void* data, void* ctx)
{
    const int rc = g_ops.get(type, data, tree_ctx(ctx));
    if (rc == SLURM_SUCCESS && type == TOPO_DATA_TOPOLOGY_PTR && data && *static_cast<dynamic_plugin_data_t**>(data))
        (*static_cast<dynamic_plugin_data_t**>(data))->plugin_id = kPluginIdM2g;
    return rc;
}

int topology_p_topoinfo_free(void* topoinfo) { return g_ops.topoinfo_free(topoinfo); }
int topology_p_topoinfo_pack(void* topoinfo, buf_t* buffer, uint16_t protocol_version)
{
    return g_ops.topoinfo_pack(topoinfo, buffer, protocol_version);
}
int topology_p_topoinfo_print(void* topoinfo, char* nodes_list, char* unit, char** out)
{
    return g_ops.topoinfo_print(topoinfo, nodes_list, unit, out);
}
int topology_p_topoinfo_unpack(void** topoinfo, buf_t* buffer, uint16_t protocol_version)
{
    return g_ops.topoinfo_unpack(topoinfo, buffer, protocol_version);
}
void topology_p_jobinfo_free(void* jobinfo) { g_ops.jobinfo_free(jobinfo); }
void topology_p_jobinfo_pack(void* jobinfo, buf_t* buffer, uint16_t protocol_version)
{
    g_ops.jobinfo_pack(jobinfo, buffer, protocol_version);
}
int topology_p_jobinfo_unpack(void** jobinfo, buf_t* buffer, uint16_t protocol_version)
{
    return g_ops.jobinfo_unpack(jobinfo, buffer, protocol_version);
}
int topology_p_jobinfo_get(topology_jobinfo_type_t type, void* jobinfo, void* data)
{
    return g_ops.jobinfo_get(type, jobinfo, data);
}
uint32_t topology_p_get_fragmentation(bitstr_t* node_mask, void* ctx)
{
    return g_ops.get_fragmentation(node_mask, tree_ctx(ctx));
}
void topology_p_get_topology_str(node_record_t* node_ptr, char** topology_str_ptr, topology_ctx_t* tctx)
{
    if (tctx->plugin_ctx)
        g_ops.get_topology_str(node_ptr, topology_str_ptr, &ctx_of(tctx->plugin_ctx)->tree);
}
int topology_p_get_rank(bitstr_t* node_bitmap, uint32_t** node_rank, uint32_t* size, void* ctx)
{
    return g_ops.get_rank(node_bitmap, node_rank, size, tree_ctx(ctx));
}

}  // extern "C"
