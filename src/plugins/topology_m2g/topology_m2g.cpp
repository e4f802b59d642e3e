// topology/m2g: Slurm's switch records from m2g.conf.
//
// Each NVLink domain becomes a level-0 switch holding its nodes; the fabric
// (leaf, spine, core) sits above. Stock select/cons_tres packs jobs against
// these records, so it already keeps jobs inside as few NVLink domains as
// it can, and `scontrol show topology` shows the real tree. Nodes are
// ranked in domain order.
//
// A broken, empty or half-written m2g.conf at slurmctld or slurmd start is
// fatal, with the file:line message in the daemon's log (Slurm's own
// topology/tree stops them the same way on a broken topology.conf): neither
// runs on an empty switch table it failed to build. At `scontrol
// reconfigure` (in place on 22.05) the last good model stays in force and
// the error is logged.
//
// All logic lives in the engine (src/core); this file translates.

// C++ and core headers first: Slurm's log.h defines macros named info(),
// debug() and verbose() that must not reach them.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/model/config.hpp"
#include "core/model/export.hpp"
#include "core/base/keys.hpp"

extern "C" {
#include "config.h"  // Slurm's, from --with-slurm-source

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/run_in_daemon.h"
#include "src/common/slurm_topology.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
}

#include "plugins/common/guard.hpp"

// Plugin identity: one definition each, with C linkage (the braced
// extern "C" form would give these const objects internal linkage).
extern "C" const char plugin_name[] = "topology m2g plugin (NVLink domains from m2g.conf)";
extern "C" const char plugin_type[] = "topology/m2g";
extern "C" const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#if SLURM_VERSION_NUMBER != SLURM_VERSION_NUM(22, 5, 8)
// Other releases changed the topology plugin API (23.11 moved to
// topology_p_* and per-plugin contexts). Untested: see doc/topology.md.
#warning "topology/m2g is tested only with Slurm 22.05.8"
#endif

namespace {

constexpr const char* kLog = "m2g: topology: ";

// The last model that loaded cleanly; kept across reconfigure failures.
std::unique_ptr<m2g::Model> g_model;

std::string conf_path()
{
    char* p = get_extra_conf_path(const_cast<char*>(m2g::kw::kConfFile));
    const std::string path = m2g::conf_path(p);
    xfree(p);
    return path;
}

// Read m2g.conf. On failure keep the previous model and return the error.
std::string reload()
{
    const std::string path = conf_path();
    try {
        std::vector<std::string> warnings;
        auto m = std::make_unique<m2g::Model>(m2g::load_model(path, &warnings));
        for (const auto& w : warnings)
            error("%s%s: %s", kLog, path.c_str(), w.c_str());
        g_model = std::move(m);
        return {};
    } catch (const std::exception& e) {
        return e.what();
    }
}

void free_switch_table()
{
    for (int i = 0; i < switch_record_cnt; ++i) {
        switch_record_t* s = &switch_record_table[i];
        xfree(s->name);
        xfree(s->nodes);
        xfree(s->switches);
        xfree(s->switches_dist);
        xfree(s->switch_desc_index);
        xfree(s->switch_index);
        FREE_NULL_BITMAP(s->node_bitmap);
    }
    xfree(switch_record_table);
    switch_record_cnt = 0;
    switch_levels = 0;
}

// Hops between two switches through their lowest common ancestor, or
// INFINITE when they share no root.
uint32_t tree_distance(const std::vector<m2g::SlurmSwitch>& sw, int a, int b)
{
    std::vector<int> up_a;
    for (int x = a; x != m2g::kNone; x = sw[x].parent)
        up_a.push_back(x);
    uint32_t hops_b = 0;
    for (int y = b; y != m2g::kNone; y = sw[y].parent, ++hops_b)
        for (size_t i = 0; i < up_a.size(); ++i)
            if (up_a[i] == y)
                return static_cast<uint32_t>(i) + hops_b;
    return INFINITE;
}

void build_switch_table(const m2g::Model& model)
{
    const std::vector<m2g::SlurmSwitch> sw = m2g::slurm_switches(model);
    free_switch_table();
    switch_record_cnt = static_cast<int>(sw.size());
    switch_record_table = static_cast<switch_record_t*>(xcalloc(sw.size(), sizeof(switch_record_t)));

    // Nodes m2g.conf names but slurm.conf does not define.
    hostlist_t unknown = hostlist_create(nullptr);
    bitstr_t* covered = bit_alloc(node_record_count);

    for (size_t i = 0; i < sw.size(); ++i) {
        const m2g::SlurmSwitch& s = sw[i];
        switch_record_t* r = &switch_record_table[i];
        r->name = xstrdup(s.name.c_str());
        r->level = s.level;
        r->link_speed = s.link_speed;
        r->node_bitmap = bit_alloc(node_record_count);
        r->parent = static_cast<uint16_t>(s.parent == m2g::kNone ? i : s.parent);
        if (s.level == 0) {
            for (int ni : s.nodes) {
                const char* name = model.nodes[ni].name.c_str();
                node_record_t* node = find_node_record(const_cast<char*>(name));
                if (node)
                    bit_set(r->node_bitmap, node->index);
                else
                    hostlist_push_host(unknown, name);
            }
            bit_or(covered, r->node_bitmap);
        } else {
            std::string children;
            r->num_switches = static_cast<uint16_t>(s.children.size());
            r->switch_index = static_cast<uint16_t*>(xcalloc(s.children.size(), sizeof(uint16_t)));
            for (size_t k = 0; k < s.children.size(); ++k) {
                const int c = s.children[k];
                r->switch_index[k] = static_cast<uint16_t>(c);
                bit_or(r->node_bitmap, switch_record_table[c].node_bitmap);  // children come first
                children += (k ? "," : "") + sw[c].name;
            }
            hostlist_t hl = hostlist_create(children.c_str());
            r->switches = hostlist_ranged_string_xmalloc(hl);
            hostlist_destroy(hl);
        }
        r->nodes = bitmap2node_name(r->node_bitmap);
        if (bit_ffs(r->node_bitmap) < 0)
            error("%sswitch %s has no node that slurm.conf defines", kLog, r->name);
        switch_levels = std::max(switch_levels, s.level);
    }

    for (size_t i = 0; i < sw.size(); ++i) {
        switch_record_t* r = &switch_record_table[i];
        r->switches_dist = static_cast<uint32_t*>(xcalloc(sw.size(), sizeof(uint32_t)));
        r->switch_desc_index = static_cast<uint16_t*>(xcalloc(sw.size(), sizeof(uint16_t)));
        for (size_t j = 0; j < sw.size(); ++j) {
            r->switches_dist[j] = tree_distance(sw, static_cast<int>(i), static_cast<int>(j));
            // j descends from i when i is on j's path to the root.
            if (j != i)
                for (int x = sw[j].parent; x != m2g::kNone; x = sw[x].parent)
                    if (x == static_cast<int>(i)) {
                        r->switch_desc_index[r->num_desc_switches++] = static_cast<uint16_t>(j);
                        break;
                    }
        }
    }

    if (hostlist_count(unknown) > 0) {
        char* names = hostlist_ranged_string_xmalloc(unknown);
        error("%s%d node(s) in m2g.conf are not in slurm.conf: %s", kLog, hostlist_count(unknown), names);
        xfree(names);
    }
    hostlist_destroy(unknown);
    bit_not(covered);
    if (bit_set_count(covered) > 0) {
        char* names = bitmap2node_name(covered);
        error("%s%d node(s) in slurm.conf are in no NVLink domain or switch of m2g.conf: %s", kLog,
                static_cast<int>(bit_set_count(covered)), names);
        xfree(names);
    }
    FREE_NULL_BITMAP(covered);
    verbose("%sbuilt %d switch records (%zu NVLink domains, %zu fabric switches, %d levels above them)", kLog,
              switch_record_cnt, model.domains.size(), model.switches.size(), switch_levels);
}

}  // namespace

extern "C" int init(void)
{
    verbose("%s loaded", plugin_name);
    return SLURM_SUCCESS;
}

extern "C" int fini(void)
{
    try {
        free_switch_table();
        g_model.reset();
    } catch (...) {
    }
    return SLURM_SUCCESS;
}

// Build or rebuild Slurm's switch records after startup or reconfigure.
extern "C" int topo_build_config(void)
{
    return m2g_guarded(error, kLog, "building switch records", SLURM_ERROR, [&]() -> int {
        if (node_record_count == 0)
            return SLURM_SUCCESS;
        const std::string err = reload();
        if (!err.empty()) {
            if (!g_model) {
                if (running_in_slurmctld())
                    fatal("%s%s", kLog, err.c_str());
                if (running_in_slurmd())
                    fatal("%s%s; slurmd does not start without the topology", kLog, err.c_str());
                error("%s%s; no topology is in force", kLog, err.c_str());
                return SLURM_ERROR;
            }
            error("%s%s; keeping the previous m2g.conf in force", kLog, err.c_str());
        }
        build_switch_table(*g_model);
        return SLURM_SUCCESS;
    });
}

// Rank nodes in tree order (domains in fabric order), so Slurm's node table,
// and with it every node list it prints, follows the NVLink domains. Nodes
// m2g.conf does not name follow, in name order.
extern "C" bool topo_generate_node_ranking(void)
{
    try {
        const std::string err = reload();
        if (!err.empty() && !g_model) {
            // topo_build_config, called next, reports it (fatally in slurmctld).
            debug("%s%s; nodes keep name order", kLog, err.c_str());
            return false;
        }
        const uint32_t after = static_cast<uint32_t>(g_model->nodes.size());
        node_record_t* node;
        for (int i = 0; (node = next_node(&i)); ++i) {
            const int mi = g_model->find_node(node->name);
            node->node_rank = mi == m2g::kNone ? after + static_cast<uint32_t>(i)
                                               : static_cast<uint32_t>(g_model->nodes[mi].rank);
        }
        return true;
    } catch (const std::exception& e) {
        error("%s%s", kLog, e.what());
    } catch (...) {
    }
    return false;
}

// Node address and pattern as topology/tree gives them, e.g.
// "spine01.leaf01.nvl01.r01n01" and "switch.switch.switch.node".
extern "C" int topo_get_node_addr(char* node_name, char** paddr, char** ppattern)
{
    if (switch_record_cnt == 0) {
        *paddr = xstrdup(node_name);
        *ppattern = xstrdup("node");
        return SLURM_SUCCESS;
    }
    node_record_t* node = find_node_record(node_name);
    if (!node)
        return SLURM_ERROR;
    *paddr = xstrdup("");
    *ppattern = xstrdup("");
    for (int level = switch_levels; level >= 0; --level) {
        hostlist_t hl = nullptr;
        for (int i = 0; i < switch_record_cnt; ++i) {
            const switch_record_t* s = &switch_record_table[i];
            if (s->level != level || !bit_test(s->node_bitmap, node->index))
                continue;
            if (!hl)
                hl = hostlist_create(s->name);
            else
                hostlist_push_host(hl, s->name);
        }
        if (hl) {
            char* buf = hostlist_ranged_string_xmalloc(hl);
            xstrcat(*paddr, buf);
            xfree(buf);
            hostlist_destroy(hl);
        }
        xstrcat(*paddr, ".");
        xstrcat(*ppattern, "switch.");
    }
    xstrcat(*paddr, node_name);
    xstrcat(*ppattern, "node");
    return SLURM_SUCCESS;
}
