// m2g CLI: `m2g topology` — validate, show, export, import, import-slurm and
// locate: the cluster's m2g.conf, and the formats it converts from and to.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/base/hostlist.hpp"
#include "core/base/json.hpp"
#include "core/base/source.hpp"
#include "core/model/config.hpp"
#include "core/model/export.hpp"
#include "core/model/span.hpp"
#include "tools/formats/formats.hpp"

namespace m2g {
namespace cli {
namespace {

// The options of every subcommand (only one is parsed; FILE, -o and the
// import options are shared), and which one that is.
struct Topology {
    std::string file, output, format = "tree", export_name, import_format, import_topology, hostlist;
    int gpus_per_node = 0;
    bool leaf_as_domain = false, as_json = false;
    CLI::App *validate = nullptr, *show = nullptr, *exp = nullptr, *gimp = nullptr, *imp = nullptr,
             *locate = nullptr;
};

void add_export(CLI::App* topo, Topology& t)
{
    t.exp = topo->add_subcommand("export", "Write the topology for Slurm, Kueue, KAI, Volcano or node labels");
    t.exp->add_option("--format", t.format,
                      "tree: topology/tree topology.conf (22.05+); block: topology/block (23.11+); slurm-yaml: "
                      "topology.yaml (25.05+); kueue, kai: Topology objects; volcano: HyperNodes; labels: Node labels")
        ->check(CLI::IsMember({"tree", "block", "slurm-yaml", "kueue", "kai", "volcano", "labels"}));
    t.exp->add_option("--name", t.export_name,
                      "Topology object name (kueue, kai) and topology name prefix (slurm-yaml); default: the "
                      "ClusterName, else m2g");
    t.exp->add_option("-o,--output", t.output, "write to this file instead of standard output");
    t.exp->add_option("FILE", t.file, std::string("m2g.conf to export (default: ") + kConfDefaultHelp + ")");
}

void add_imports(CLI::App* topo, Topology& t)
{
    t.gimp = topo->add_subcommand("import", "Convert a Slurm topology file or Kubernetes Node labels into m2g.conf");
    t.gimp->add_option("--format", t.import_format,
                       "slurm: topology/tree topology.conf; slurm-yaml: topology.yaml; labels: Node objects "
                       "(kubectl get nodes -o json, or export --format=labels)")
        ->required()
        ->check(CLI::IsMember({"slurm", "slurm-yaml", "labels"}));
    t.gimp->add_option("--topology", t.import_topology,
                       "slurm-yaml: which topology (default: the cluster_default one, else the first tree or block)");
    t.gimp->add_option("--gpus-per-node", t.gpus_per_node,
                       "GPUs to declare on every imported node (labels: when a Node has no nvidia.com/gpu capacity)")
        ->check(CLI::Range(0, 1024));
    t.gimp->add_flag("--leaf-as-domain", t.leaf_as_domain,
                     "slurm, slurm-yaml trees: switches with nodes become NVLink domains (as export writes them)");
    t.gimp->add_option("-o,--output", t.output, "write to this file instead of standard output");
    t.gimp->add_option("FILE", t.file, "the file to import")->required();

    t.imp = topo->add_subcommand("import-slurm", "Convert a Slurm topology/tree topology.conf into m2g.conf");
    t.imp->add_option("--gpus-per-node", t.gpus_per_node, "GPUs to declare on every imported node")
        ->check(CLI::Range(0, 1024));
    t.imp->add_flag("--leaf-as-domain", t.leaf_as_domain,
                    "switches with Nodes= become NVLink domains (as `m2g topology export` writes them)");
    t.imp->add_option("-o,--output", t.output, "write to this file instead of standard output");
    t.imp->add_option("FILE", t.file, "topology.conf to import")->required();
}

// `m2g topology import` of slurm-yaml or labels; --format=slurm is import-slurm's.
void import_other(const Topology& t, std::vector<std::string>& warnings)
{
    const std::string text = read_text_file(t.file);
    ConfigSpec spec;
    if (t.import_format == "labels") {
        LabelImportOptions lo;
        lo.gpus_per_node = t.gpus_per_node;
        spec = import_node_labels(text, t.file, lo, &warnings);
    } else {
        SlurmYamlImportOptions yo;
        yo.base.gpus_per_node = t.gpus_per_node;
        yo.base.leaf_as_domain = t.leaf_as_domain;
        yo.topology = t.import_topology;
        spec = import_slurm_yaml(text, t.file, yo);
    }
    Model m = build_model(spec, &warnings);
    print_warnings(warnings, t.file);
    emit(write_m2g_conf(m), t.output);
}

void import_slurm(const Topology& t, std::vector<std::string>& warnings)
{
    SlurmImportOptions opts;
    opts.gpus_per_node = t.gpus_per_node;
    opts.leaf_as_domain = t.leaf_as_domain;
    ConfigSpec spec = parse_slurm_topology_conf(read_text_file(t.file), t.file, opts);
    Model m = build_model(spec, &warnings);
    print_warnings(warnings, t.file);
    emit(write_m2g_conf(m), t.output);
}

// --json of validate: the counts its line gives, and the warnings.
std::string validate_json(const std::string& file, const Model& m, const std::vector<std::string>& warnings)
{
    JsonPtr o = json_new_object();
    json_add_string(o.get(), "file", file);
    json_add_bool(o.get(), "ok", true);
    json_add_int(o.get(), "nodes", static_cast<int64_t>(m.nodes.size()));
    json_add_int(o.get(), "gpus", m.total_gpus());
    json_add_int(o.get(), "nvlink_domains", static_cast<int64_t>(m.domains.size()));
    json_add_int(o.get(), "switches", static_cast<int64_t>(m.switches.size()));
    json_add_int(o.get(), "fault_domains", static_cast<int64_t>(m.fault_domains.size()));
    json_add_strings(o.get(), "warnings", warnings);
    return json_line(o.get());
}

JsonPtr name_or_null(const std::string* name)
{
    return name ? JsonPtr(json_object_new_string(name->c_str())) : JsonPtr();
}

// A set of nodes as the JSON shows it: its hostlist and how many.
void add_nodes(json_object* e, const Model& m, const std::vector<int>& nodes)
{
    json_add_string(e, "nodes", node_hostlist(m, nodes));
    json_add_int(e, "node_count", static_cast<int64_t>(nodes.size()));
}

// A switch's name, or null for none (kNone).
JsonPtr switch_or_null(const Model& m, int sw)
{
    return name_or_null(sw == kNone ? nullptr : &m.switches[sw].name);
}

// --json of show: every NVLink domain, switch and fault domain with what
// the tree prints of it, in declaration order.
std::string show_json(const Model& m)
{
    JsonPtr o = json_new_object();
    json_add_value(o.get(), "cluster", name_or_null(m.cluster_name.empty() ? nullptr : &m.cluster_name));
    json_add_int(o.get(), "nodes", static_cast<int64_t>(m.nodes.size()));
    json_add_int(o.get(), "gpus", m.total_gpus());
    json_add_double(o.get(), "site_power_budget_kw", m.site_power_budget_kw);
    JsonPtr doms = json_new_array();
    for (const Domain& d : m.domains) {
        JsonPtr e = json_new_object();
        json_add_string(e.get(), "name", d.name);
        json_add_value(e.get(), "switch", switch_or_null(m, d.parent));
        add_nodes(e.get(), m, d.nodes);
        json_add_int(e.get(), "size", d.size);
        json_add_int(e.get(), "gpus", d.gpus);
        json_add_double(e.get(), "nvlink_gbps", d.nvlink_gbps);
        json_add_double(e.get(), "power_budget_kw", d.power_budget_kw);
        json_append(doms.get(), std::move(e));
    }
    json_add_value(o.get(), "domains", std::move(doms));
    JsonPtr sws = json_new_array();
    for (const Switch& sw : m.switches) {
        JsonPtr e = json_new_object();
        json_add_string(e.get(), "name", sw.name);
        json_add_string(e.get(), "level", to_string(sw.level));
        json_add_value(e.get(), "parent", switch_or_null(m, sw.parent));
        std::vector<std::string> children, domains;
        for (int c : sw.switches)
            children.push_back(m.switches[c].name);
        for (int d : sw.domains)
            domains.push_back(m.domains[d].name);
        json_add_strings(e.get(), "switches", children);
        json_add_strings(e.get(), "domains", domains);
        add_nodes(e.get(), m, sw.all_nodes);
        json_add_int(e.get(), "gpus", sw.gpus);
        json_add_double(e.get(), "link_gbps", sw.link_gbps);
        json_append(sws.get(), std::move(e));
    }
    json_add_value(o.get(), "switches", std::move(sws));
    JsonPtr fds = json_new_array();
    for (const FaultDomain& f : m.fault_domains) {
        JsonPtr e = json_new_object();
        json_add_string(e.get(), "name", f.name);
        json_add_string(e.get(), "type", f.type);
        add_nodes(e.get(), m, f.nodes);
        json_add_double(e.get(), "power_budget_kw", f.power_budget_kw);
        json_append(fds.get(), std::move(e));
    }
    json_add_value(o.get(), "fault_domains", std::move(fds));
    return json_line(o.get());
}

// --json of locate: the span's domains (with the nodes used of each), leaf
// switches, lowest common switch, and the sentence the text prints.
std::string locate_json(const Model& m, const Span& sp, size_t node_count)
{
    JsonPtr o = json_new_object();
    json_add_int(o.get(), "nodes", static_cast<int64_t>(node_count));
    JsonPtr doms = json_new_array();
    for (const Span::DomainUse& u : sp.domains) {
        const Domain& d = m.domains[u.domain];
        JsonPtr e = json_new_object();
        json_add_string(e.get(), "name", d.name);
        json_add_int(e.get(), "used", u.used);
        json_add_int(e.get(), "size", d.size);
        json_add_bool(e.get(), "whole", u.used == static_cast<int>(d.nodes.size()));
        json_append(doms.get(), std::move(e));
    }
    json_add_value(o.get(), "domains", std::move(doms));
    json_add_int(o.get(), "whole_domains", sp.whole_domains(m));
    std::vector<std::string> leaves;
    for (int l : sp.leaf_switches)
        leaves.push_back(m.switches[l].name);
    json_add_strings(o.get(), "leaf_switches", leaves);
    json_add_value(o.get(), "top_switch", switch_or_null(m, sp.top_switch));
    json_add_string(o.get(), "outside_domains", node_hostlist(m, sp.outside_domains));
    json_add_strings(o.get(), "unknown", sp.unknown);
    json_add_string(o.get(), "summary", describe(m, sp, node_count));
    return json_line(o.get());
}

std::optional<int> run(const Topology& t)
{
    std::vector<std::string> warnings;
    if (*t.gimp && t.import_format != "slurm") {
        import_other(t, warnings);
        return 0;
    }
    if (*t.imp || *t.gimp) {
        import_slurm(t, warnings);
        return 0;
    }
    if (!*t.validate && !*t.show && !*t.exp && !*t.locate)
        return std::nullopt;
    const std::string file = resolve_conf_path(t.file);
    Model m = load_model(file, &warnings);
    print_warnings(warnings, file);
    if (*t.validate && t.as_json) {
        std::cout << validate_json(file, m, warnings);
    } else if (*t.validate) {
        std::cout << file << ": ok: " << m.nodes.size() << " nodes, " << m.total_gpus() << " GPUs, "
                  << m.domains.size() << " NVLink domains, " << m.switches.size() << " switches, "
                  << m.fault_domains.size() << " fault domains\n";
    } else if (*t.show) {
        std::cout << (t.as_json ? show_json(m) : render_tree(m));
    } else if (*t.exp) {
        ExportOptions eo;
        eo.name = t.export_name;
        emit(export_topology(m, parse_export_format(t.format), eo), t.output);
    } else {
        const std::vector<std::string> nodes = hostlist_expand(t.hostlist);
        const Span sp = span_of(m, nodes);
        std::cout << (t.as_json ? locate_json(m, sp, nodes.size()) : describe(m, sp, nodes.size()) + "\n");
    }
    return 0;
}

}  // namespace

Command add_topology(CLI::App& app)
{
    auto t = std::make_shared<Topology>();
    auto* topo = app.add_subcommand("topology", "Validate, show, export and import cluster topology (m2g.conf)");
    topo->require_subcommand(1);

    t->validate = topo->add_subcommand("validate", "Check an m2g.conf; print file:line errors");
    t->validate->add_option("FILE", t->file, std::string("m2g.conf to check (default: ") + kConfDefaultHelp + ")");

    t->show = topo->add_subcommand("show", "Print the topology as a tree with node and GPU counts per level");
    t->show->add_option("FILE", t->file, std::string("m2g.conf to show (default: ") + kConfDefaultHelp + ")");

    add_export(topo, *t);
    add_imports(topo, *t);

    t->locate = topo->add_subcommand("locate", "Say which NVLink domains and switches a set of nodes uses");
    t->locate->add_option("FILE", t->file, "m2g.conf")->required();
    t->locate->add_option("HOSTLIST", t->hostlist, "nodes, as a Slurm hostlist (e.g. a job's NodeList)")->required();
    for (auto* sub : {t->validate, t->show, t->locate})
        add_json_flag(sub, t->as_json);
    return [t] { return run(*t); };
}

}  // namespace cli
}  // namespace m2g
