// m2g CLI: `m2g discover` — node (this node's facts, through the probes of
// src/discover/), fabric (ibnetdiscover output) and merge (the cluster's
// m2g.conf from both).
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/base/json.hpp"
#include "core/base/source.hpp"
#include "core/model/config.hpp"
#include "discover/probe.hpp"
#include "tools/formats/discover.hpp"

namespace m2g {
namespace cli {
namespace {

// The options of every subcommand (only one is parsed), and which one that is.
struct Discover {
    ProbeOptions probe;
    std::string fabric_file, slurm_names, cluster_name = "m2g", node_hostname, output;
    std::vector<std::string> node_files;
    bool as_json = false, signals_only = false;
    CLI::App *node = nullptr, *fabric = nullptr, *merge = nullptr;
};

// A file's text, or standard input for "-".
std::string read_input(const std::string& path)
{
    if (path != "-")
        return read_text_file(path);
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
}
std::string input_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

void run_merge(const Discover& d)
{
    std::vector<NodeFacts> nodes;
    for (const std::string& f : d.node_files)
        nodes.push_back(parse_node_facts(read_input(f), input_name(f)));
    Fabric fabric;
    if (!d.fabric_file.empty())
        fabric = parse_ibnetdiscover(read_input(d.fabric_file), input_name(d.fabric_file));
    MergeOptions mo;
    mo.slurm_names = d.slurm_names;
    mo.cluster_name = d.cluster_name;
    const MergeResult r = merge_discovery(nodes, d.fabric_file.empty() ? nullptr : &fabric, mo);
    for (const std::string& w : r.warnings)
        std::cerr << "m2g: warning: " << w << "\n";
    if (!d.as_json) {
        emit(r.conf, d.output);
        return;
    }
    // --json: the m2g.conf text (also written to -o FILE when given) with
    // its counts and the warnings, as one object on standard output.
    if (!d.output.empty() && d.output != "-")
        emit(r.conf, d.output);
    const Model m = build_model(parse_m2g_conf(r.conf, "m2g.conf"));
    JsonPtr o = json_new_object();
    json_add_value(o.get(), "output", d.output.empty() || d.output == "-"
                                          ? JsonPtr()
                                          : JsonPtr(json_object_new_string(d.output.c_str())));
    json_add_string(o.get(), "cluster", m.cluster_name);
    json_add_int(o.get(), "nodes", static_cast<int64_t>(m.nodes.size()));
    json_add_int(o.get(), "gpus", m.total_gpus());
    json_add_int(o.get(), "nvlink_domains", static_cast<int64_t>(m.domains.size()));
    json_add_int(o.get(), "switches", static_cast<int64_t>(m.switches.size()));
    json_add_strings(o.get(), "warnings", r.warnings);
    json_add_string(o.get(), "conf", r.conf);
    std::cout << json_line(o.get());
}

std::optional<int> run(const Discover& d)
{
    if (*d.node) {
        NodeFacts f = probe_node(d.probe);
        if (!d.node_hostname.empty())
            f.hostname = d.node_hostname;
        std::cout << (d.signals_only ? node_signals_json(f)
                      : d.as_json    ? node_facts_json(f)
                                     : format_node_facts(f));
    } else if (*d.fabric) {
        std::cout << format_fabric(parse_ibnetdiscover(read_input(d.fabric_file), input_name(d.fabric_file)),
                                   d.as_json);
    } else if (*d.merge) {
        run_merge(d);
    } else {
        return std::nullopt;
    }
    return 0;
}

}  // namespace

Command add_discover(CLI::App& app)
{
    auto d = std::make_shared<Discover>();
    auto* disc = app.add_subcommand(
        "discover", "Discover node and fabric topology (hwloc, libibverbs, NVML, ibnetdiscover) and write m2g.conf");
    disc->require_subcommand(1);
    d->node = disc->add_subcommand(
        "node", "This node: CPUs, NUMA, GPUs, RDMA NICs, NVLink fabric (clique) and health; exit 0 without GPUs");
    d->node->add_flag("--json", d->as_json, "one JSON object (schema m2g.node/v1), the input of discover merge");
    d->node->add_flag("--signals", d->signals_only, "print only the m2g.signals/v1 health document for the feed");
    d->node->add_option("--hostname", d->node_hostname,
                        "the host name the facts carry (default: this host's short name)");
    d->node->add_option("--hwloc-xml", d->probe.hwloc_xml,
                        "read the topology from an hwloc XML export, not this machine");
    d->node->add_option("--nvml-library", d->probe.nvml_library,
                        "the NVML library to load (default $M2G_NVML_LIBRARY, else libnvidia-ml.so.1)");
    d->fabric = disc->add_subcommand("fabric", "Parse ibnetdiscover output into leaf/spine switches with link rates");
    d->fabric->add_option("FILE", d->fabric_file, "ibnetdiscover output, or - for standard input")->required();
    add_json_flag(d->fabric, d->as_json);
    d->merge = disc->add_subcommand("merge", "Write the cluster's m2g.conf from node facts and the fabric");
    d->merge->add_option("NODE_JSON", d->node_files, "files written by `m2g discover node --json`, one per node")
        ->required();
    d->merge->add_option("--fabric", d->fabric_file, "ibnetdiscover output (leaf and spine switches), - for stdin");
    d->merge->add_option("--slurm-names", d->slurm_names,
                         "s/REGEX/REPLACEMENT/ turning host names into Slurm NodeNames (\\1 and & allowed)");
    d->merge->add_option("--cluster-name", d->cluster_name, "ClusterName= to write (default m2g)");
    d->merge->add_option("-o,--output", d->output, "write to this file instead of standard output");
    d->merge->add_flag("--json", d->as_json,
                       "one JSON object: the m2g.conf text (conf), its counts and the warnings (m2g.conf also goes "
                       "to -o FILE when given)");
    return [d] { return run(*d); };
}

}  // namespace cli
}  // namespace m2g
