// m2g: the command over the core. Works without a running Slurm, except
// explain/status/job, which read one through libslurm (src/slurmapi/).
//
//   m2g topology validate FILE
//   m2g topology show FILE
//   m2g topology export --format=tree|block|slurm-yaml|kueue|kai|volcano|labels [--name NAME] [-o FILE] FILE
//   m2g topology import --format=slurm|slurm-yaml|labels [--topology NAME] [--gpus-per-node N]
//                       [--leaf-as-domain] [-o FILE] FILE
//   m2g topology import-slurm [--gpus-per-node N] [--leaf-as-domain] FILE   (= import --format=slurm)
//   m2g topology locate FILE HOSTLIST
//   m2g recipe list|show NAME|validate [--catalog FILE]
//   m2g place --topology FILE [--state STATE.json] [--signals FEED] --request REQ [--json]
//   m2g simulate --topology FILE --trace FILE [--policy m2g|tree|tree-nvl|block|block-seg|firstfit]
//                [--backfill-reservation nodes|gpus] [--scale-gpus K] [--load L] [--seed S] [--signals-timeline FEED]
//                [--power-cdf CSV [--power-cluster C]] [--class CLASS] [--class-share CLASS=PCT]...
//                [--event-notice S] [--actuation-delay S] [--cap-speed R:S,...] [--checkpoint-interval S]
//                [--restart-overhead S] [--curtail-every-tick] [--no-baseline] [--job-log FILE]
//                [--power-log FILE] [--json]
//   m2g discover node [--json | --signals] [--hostname NAME] [--hwloc-xml FILE] [--nvml-library PATH]
//   m2g discover fabric FILE|- [--json]
//   m2g discover merge NODE.json... [--fabric FILE] [--slurm-names s/RE/REPL/] [--cluster-name NAME] [-o FILE]
//   m2g signals validate [--conf M2G.CONF] [--at TIME] FILE
//   m2g signals show [--conf M2G.CONF] [--status FILE | --file FEED] [--at TIME] [--json]
//   m2g explain JOBID [--json] [--conf M2G.CONF]          (a running Slurm: SLURM_CONF)
//   m2g status [--json] [--conf M2G.CONF] [--plot FILE.png]
//   m2g job JOBID [--json] [--conf M2G.CONF]
//
// Exit status: 0 success, 1 the input is wrong (message on stderr), 2 usage,
// 3 `m2g place`: the job would wait (the reason is printed).
#include <CLI/CLI.hpp>
#include <json-c/json.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <algorithm>
#include <limits>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "m2g_config.h"
#include "discover/probe.hpp"
#include "core/model/config.hpp"
#include "tools/formats/discover.hpp"
#include "core/base/error.hpp"
#include "core/model/export.hpp"
#include "tools/formats/formats.hpp"
#include "core/base/hostlist.hpp"
#include "core/model/cluster_state.hpp"
#include "core/place/engine.hpp"
#include "core/job/recipes.hpp"
#include "core/place/session.hpp"
#include "core/power/signals.hpp"
#include "tools/sim/sim.hpp"
#include "tools/sim/trace.hpp"
#include "core/base/keys.hpp"
#include "core/model/span.hpp"
#include "tools/reports/status.hpp"
#include "tools/reports/explain.hpp"
#include "tools/reports/energy.hpp"
#include "tools/reports/signals_report.hpp"
#include "slurmapi/slurm_view.hpp"
#include "cli/plot.hpp"

namespace {

constexpr int kExitInput = 1;
constexpr int kExitWouldWait = 3;

// Write to stdout, or to FILE when -o FILE was given.
void emit(const std::string& text, const std::string& output)
{
    if (output.empty() || output == "-") {
        std::cout << text;
        return;
    }
    std::ofstream out(output, std::ios::trunc);
    if (!out || !(out << text) || !out.flush())
        throw m2g::Error(output + ": cannot write");
}

// Where `m2g signals` reads m2g.conf without --conf: $M2G_CONF, else the
// m2g.conf of a Debian slurm-wlm install (next to slurm.conf).
constexpr const char* kDefaultConf = "/etc/slurm/m2g.conf";

std::string plural(size_t n, const std::string& one, const std::string& many)
{
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// A core JSON object with "from" (and "path", when given: null when empty)
// added: where the command read what it reports.
std::string with_from(const std::string& body, const std::string& from, const char* writer,
                      const std::string* path = nullptr)
{
    std::unique_ptr<json_object, void (*)(json_object*)> o(json_tokener_parse(body.c_str()),
                                                           [](json_object* j) { json_object_put(j); });
    if (!o || !json_object_is_type(o.get(), json_type_object))
        throw m2g::Error(std::string("internal error: ") + writer + " wrote bad JSON");
    json_object_object_add(o.get(), "from", json_object_new_string(from.c_str()));
    if (path)
        json_object_object_add(o.get(), "path", path->empty() ? nullptr : json_object_new_string(path->c_str()));
    return std::string(json_object_to_json_string_ext(o.get(), JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) +
           "\n";
}

void print_warnings(const std::vector<std::string>& warnings, const std::string& file)
{
    for (const auto& w : warnings)
        std::cerr << "m2g: warning: " << file << ": " << w << "\n";
}

// Where the signals came from, for `m2g signals show`, `m2g explain` and
// `m2g status`: what job_submit/m2g believes (its status file) when that is
// there, else the feed itself, read once now by this command.
struct SignalsSource {
    m2g::SignalsView view;
    std::string from;  // "status", "file" or "none"
    std::string path;  // the file read ("" for none)
    std::string note;  // one line for people
};

// `status_file` / `feed_file`: --status / --file of `m2g signals show` ("" when
// not given: the SignalsStatusFile= / SignalsFile= of `conf`).
SignalsSource read_signals_source(const m2g::Model& m, const std::string& conf, const std::string& status_file,
                                  const std::string& feed_file, int64_t now)
{
    const m2g::AdmissionPolicy& ap = m.admission;
    const std::string status = !status_file.empty() ? status_file : ap.signals_status_file;
    const bool use_status =
        !status_file.empty() || (feed_file.empty() && !status.empty() && ::access(status.c_str(), R_OK) == 0);
    SignalsSource src;
    if (use_status) {
        src.view = m2g::read_feed_status(status, m, ap.signals_ttl_sec, now);
        src.from = "status";
        src.path = status;
        struct stat st {};
        src.note = "status file " + status + ": what job_submit/m2g believes";
        if (::stat(status.c_str(), &st) == 0)
            src.note += " (written " + m2g::format_utc(st.st_mtime) + ")";
        return src;
    }
    src.path = feed_file.empty() ? ap.signals_file : feed_file;
    m2g::SignalFeed feed(src.path, ap.signals_ttl_sec, ap.failsafe, m, nullptr);
    feed.refresh(now);
    src.view = feed.view(now);
    if (src.path.empty()) {
        src.from = "none";
        src.note = "no feed: no SignalsFile= in " + conf + " and no --file";
    } else {
        src.from = "file";
        src.note = src.path + " as read now by this command, not the plugin's belief (" +
                   (!feed_file.empty() ? std::string("--file given")
                    : status.empty()   ? "no SignalsStatusFile= in " + conf
                                       : "status file " + status + " not readable") +
                   ")";
    }
    return src;
}

// A file's text, or standard input for "-".
std::string read_input(const std::string& path)
{
    if (path != "-")
        return m2g::read_text_file(path);
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
}
std::string input_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

// `m2g place`: one select_p_job_test through select/m2g's PlacementSession
// on a described cluster: Slurm offers the usable nodes (--state), all
// their GPUs free; the job takes whole nodes, has no time limit and the
// request's intent (prefer:nvlink unless topology= says otherwise); the
// signals are the feed's view now (--signals, with m2g.conf's TTL and
// fail-safe). Returns the exit status (kExitWouldWait when it would wait).
struct PlaceArgs {
    std::string topology, state, signals, request;
    bool json = false;
};

// Whether a --request text names `key` (key=value among its items).
bool request_names(const std::string& text, const std::string& key)
{
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
        if (item.compare(0, key.size() + 1, key + "=") == 0)
            return true;
    return false;
}

std::string json_string(const std::string& s)
{
    json_object* o = json_object_new_string(s.c_str());
    std::string out = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    json_object_put(o);
    return out;
}

int run_place(const PlaceArgs& a)
{
    std::vector<std::string> warnings;
    m2g::Model m = m2g::load_model(a.topology, &warnings);
    print_warnings(warnings, a.topology);
    m2g::DescribedState st;
    if (!a.state.empty())
        st = m2g::read_state_json(a.state, m);
    else
        st.usable.assign(m.nodes.size(), 1);
    int node_gpus = 0;
    for (const auto& n : m.nodes)
        node_gpus = std::max(node_gpus, n.gpus);
    const m2g::PlacementRequest req = m2g::parse_request(a.request, node_gpus);
    if (request_names(a.request, "spare"))
        m.policy.spare_per_domain = req.spare_per_domain;  // stands in for SparePerDomain=
    const int64_t now = time(nullptr);

    m2g::SignalsSource signals;
    std::string feed_detail;
    if (!a.signals.empty()) {
        // A broken feed is this command's error, not a fail-safe: check it
        // first, then read it as select/m2g's feed would now.
        m2g::parse_signals(m2g::read_text_file(a.signals), a.signals, m, now);
        const m2g::AdmissionPolicy& ap = m.admission;
        m2g::SignalFeed feed(a.signals, ap.signals_ttl_sec, ap.failsafe, m, nullptr);
        feed.refresh(now);
        const m2g::SignalsView view = feed.view(now);
        feed_detail = view.detail;
        signals = [view](int64_t) { return view; };
    }
    m2g::PlacementSession session(m2g::SessionLog{[](m2g::LogLevel, const std::string& msg) {
                                                      std::cerr << "m2g: " << msg << "\n";
                                                  }, nullptr, nullptr},
                                  now);
    session.adopt(m, signals, st.health);

    m2g::JobIntent intent;
    intent.locality = req.locality;
    intent.level = req.level;
    intent.segment = req.segment;
    m2g::JobFacts job;
    for (const auto& [k, v] : m2g::encode_intent(intent))
        job.spank_env.push_back(k + "=" + v);
    job.nodes = req.nodes;
    job.min_nodes = req.nodes;
    job.gpus_per_node = node_gpus;
    // fallback=yes: the prefer wait is over.
    job.wait_over = req.fallback;
    const int offered = static_cast<int>(std::count(st.usable.begin(), st.usable.end(), uint8_t(1)));
    const m2g::Outcome o = session.decide(job, st.usable, offered, [&](int mi) { return m.nodes[mi].gpus; },
                                          m2g::SelectMode::RunNow, now);

    std::string out;
    m2g::Placement shown = o.placement;
    if (o.offer == m2g::Outcome::Offer::Stock) {
        // select/m2g leaves the job to cons_tres on the offer less what the
        // gate ruled out.
        std::vector<uint8_t> allowed = st.usable;
        for (int mi : o.ruled_out)
            allowed[mi] = 0;
        std::vector<std::string> names;
        for (size_t mi = 0; mi < allowed.size(); ++mi)
            if (allowed[mi])
                names.push_back(m.nodes[mi].name);
        const std::string hl = names.empty() ? "" : m2g::hostlist_compress(names);
        if (a.json)
            out = "{\"ok\":true,\"stock\":true,\"policy\":" + json_string(o.policy) + ",\"allowed\":" +
                  json_string(hl) + ",\"allowed_count\":" + std::to_string(names.size()) + "}\n";
        else
            out = "stock:    cons_tres places the job (policy=" + o.policy + ") on " +
                  (names.empty() ? std::string("-") : hl) + " (" + std::to_string(names.size()) + " allowed)\n";
    } else {
        if (o.offer == m2g::Outcome::Offer::Refuse && o.verdict != m2g::SelectVerdict::Waiting) {
            shown = m2g::Placement{};  // the signals block it before any placement
            shown.reason = o.reason;
        }
        out = m2g::format_placement(m, shown, a.json);
    }
    // What the signals gate avoided or noted (Outcome::signals_note is
    // " signals=<notes>"), and the feed it read.
    const std::string_view note_key = " signals=";
    const std::string notes =
        o.signals_note.rfind(note_key, 0) == 0 ? o.signals_note.substr(note_key.size()) : std::string();
    if (a.json) {
        std::string extra;
        if (!notes.empty())
            extra += ",\"signals\":" + json_string(notes);
        if (!a.signals.empty())
            extra += ",\"feed\":" + json_string(feed_detail);
        out.insert(out.rfind('}'), extra);
    } else {
        if (!notes.empty())
            out += "signals:  " + notes + "\n";
        if (!a.signals.empty())
            out += "feed:     " + feed_detail + "\n";
    }
    std::cout << out;
    return o.offer == m2g::Outcome::Offer::Refuse ? kExitWouldWait : 0;
}

// `m2g simulate`: replay a trace on the model with one placement policy.
struct SimulateArgs {
    std::string topology, trace, policy = "m2g", timeline, power_cdf, power_cluster = "kalos", job_log, cap_speed,
        power_log, reservation = "nodes";
    std::vector<std::string> class_shares;  // CLASS=PCT
    m2g::SimOptions opts;
    bool json = false, no_baseline = false;
};

void run_simulate(const SimulateArgs& a)
{
    std::vector<std::string> warnings;
    const m2g::Model m = m2g::load_model(a.topology, &warnings);
    print_warnings(warnings, a.topology);
    const m2g::Trace t = m2g::read_trace(a.trace);
    if (t.skipped)
        std::cerr << "m2g: " << a.trace << ": skipped " << plural(t.skipped, "job", "jobs")
                  << " with unknown run time or no processors\n";
    m2g::SimOptions o = a.opts;
    o.policy = m2g::parse_sim_policy(a.policy);
    o.reserve_nodes = a.reservation == "nodes";
    for (const std::string& cs : a.class_shares) {
        const size_t eq = cs.find('=');
        char* end = nullptr;
        const double pct = eq == std::string::npos ? 0 : std::strtod(cs.c_str() + eq + 1, &end);
        if (eq == std::string::npos || eq == 0 || eq + 1 == cs.size() || *end)
            throw m2g::ParseError("--class-share '" + cs + "': expected CLASS=PERCENT, e.g. inference=20");
        o.class_shares.emplace_back(cs.substr(0, eq), pct);
    }
    if (!a.cap_speed.empty())
        o.cap_speed = m2g::parse_cap_speed(a.cap_speed);
    o.curtail_baseline = !a.no_baseline;
    o.record_site_power = !a.power_log.empty();
    // A timeline may lie anywhere in time: judge "generated in the future"
    // against a far clock.
    m2g::Signals timeline;
    if (!a.timeline.empty()) {
        timeline = m2g::parse_signals(m2g::read_text_file(a.timeline), a.timeline, m, int64_t(1) << 40);
        o.timeline = &timeline;
    }
    m2g::PowerCdf cdf;
    if (!a.power_cdf.empty()) {
        cdf = m2g::read_power_cdf(a.power_cdf, a.power_cluster);
        o.power = &cdf;
    }
    const m2g::SimResult r = m2g::simulate(m, t, o);
    if (!a.job_log.empty()) {
        std::ofstream f(a.job_log);
        f << m2g::format_sim_jobs(m, r);
        if (!f.flush())
            throw m2g::Error(a.job_log + ": cannot write the job log");
    }
    if (!a.power_log.empty()) {
        std::ofstream f(a.power_log);
        f << m2g::format_sim_power(r);
        if (!f.flush())
            throw m2g::Error(a.power_log + ": cannot write the power log");
    }
    std::cout << m2g::format_sim_result(r, a.json);
}

}  // namespace

int main(int argc, char** argv)
{
    CLI::App app{"m2g: NVLink-, fabric- and power-aware scheduling for Slurm GPU clusters", "m2g"};
    app.set_version_flag("--version", std::string("m2g ") + PACKAGE_VERSION);
    app.require_subcommand(1);

    auto* topo = app.add_subcommand("topology", "Validate, show, export and import cluster topology (m2g.conf)");
    topo->require_subcommand(1);

    std::string file, output, format = "tree";
    int gpus_per_node = 0;
    bool leaf_as_domain = false;

    auto* validate = topo->add_subcommand("validate", "Check an m2g.conf; print file:line errors");
    validate->add_option("FILE", file, "m2g.conf to check")->required();

    auto* show = topo->add_subcommand("show", "Print the topology as a tree with node and GPU counts per level");
    show->add_option("FILE", file, "m2g.conf to show")->required();

    std::string export_name, import_format, import_topology;
    auto* exp = topo->add_subcommand("export", "Write the topology for Slurm, Kueue, KAI, Volcano or node labels");
    exp->add_option("--format", format,
                    "tree: topology/tree topology.conf (22.05+); block: topology/block (23.11+); slurm-yaml: "
                    "topology.yaml (25.05+); kueue, kai: Topology objects; volcano: HyperNodes; labels: Node labels")
        ->check(CLI::IsMember({"tree", "block", "slurm-yaml", "kueue", "kai", "volcano", "labels"}));
    exp->add_option("--name", export_name,
                    "Topology object name (kueue, kai) and topology name prefix (slurm-yaml); default: the "
                    "ClusterName, else m2g");
    exp->add_option("-o,--output", output, "write to this file instead of standard output");
    exp->add_option("FILE", file, "m2g.conf to export")->required();

    auto* gimp = topo->add_subcommand("import", "Convert a Slurm topology file or Kubernetes Node labels into m2g.conf");
    gimp->add_option("--format", import_format,
                     "slurm: topology/tree topology.conf; slurm-yaml: topology.yaml; labels: Node objects "
                     "(kubectl get nodes -o json, or export --format=labels)")
        ->required()
        ->check(CLI::IsMember({"slurm", "slurm-yaml", "labels"}));
    gimp->add_option("--topology", import_topology,
                     "slurm-yaml: which topology (default: the cluster_default one, else the first tree or block)");
    gimp->add_option("--gpus-per-node", gpus_per_node,
                     "GPUs to declare on every imported node (labels: when a Node has no nvidia.com/gpu capacity)")
        ->check(CLI::Range(0, 1024));
    gimp->add_flag("--leaf-as-domain", leaf_as_domain,
                   "slurm, slurm-yaml trees: switches with nodes become NVLink domains (as export writes them)");
    gimp->add_option("-o,--output", output, "write to this file instead of standard output");
    gimp->add_option("FILE", file, "the file to import")->required();

    auto* imp = topo->add_subcommand("import-slurm", "Convert a Slurm topology/tree topology.conf into m2g.conf");
    imp->add_option("--gpus-per-node", gpus_per_node, "GPUs to declare on every imported node")
        ->check(CLI::Range(0, 1024));
    imp->add_flag("--leaf-as-domain", leaf_as_domain,
                  "switches with Nodes= become NVLink domains (as `m2g topology export` writes them)");
    imp->add_option("-o,--output", output, "write to this file instead of standard output");
    imp->add_option("FILE", file, "topology.conf to import")->required();

    std::string hostlist;
    auto* locate = topo->add_subcommand("locate", "Say which NVLink domains and switches a set of nodes uses");
    locate->add_option("FILE", file, "m2g.conf")->required();
    locate->add_option("HOSTLIST", hostlist, "nodes, as a Slurm hostlist (e.g. a job's NodeList)")->required();

    auto* recipe = app.add_subcommand("recipe", "List, show and validate the workload recipe catalog");
    recipe->require_subcommand(1);
    std::string catalog = std::getenv("M2G_RECIPES") ? std::getenv("M2G_RECIPES") : m2g::kw::kDefaultRecipes;
    std::string recipe_name;
    auto* rlist = recipe->add_subcommand("list", "One line per recipe: GPUs, class, topology, model");
    auto* rshow = recipe->add_subcommand("show", "Everything a recipe sets, and the options it expands to");
    rshow->add_option("NAME", recipe_name, "recipe name")->required();
    auto* rvalidate = recipe->add_subcommand("validate", "Check a catalog; print file:line errors");
    for (auto* sub : {rlist, rshow})
        sub->add_option("--catalog", catalog, "catalog file (default $M2G_RECIPES or /etc/slurm/m2g-recipes.conf)");
    rvalidate->add_option("FILE", catalog, "catalog to check (default $M2G_RECIPES or /etc/slurm/m2g-recipes.conf)");

    bool as_json = false;
    PlaceArgs pl;
    auto* place = app.add_subcommand("place", "Where would a job go? Runs select/m2g's policy on a described cluster");
    place->add_option("--topology", pl.topology, "m2g.conf")->required();
    place->add_option("--state", pl.state, "JSON: busy, drained, degraded nodes; NVLink-fault and over-limit domains");
    place->add_option("--signals", pl.signals,
                      "a signals feed (m2g.signals/v1) as select/m2g would read it now: maintenance, down nodes, "
                      "power budgets and events, thermal");
    place->add_option("--request", pl.request, "e.g. gpus=72,topology=strict:nvlink or nodes=36,segment=18")
        ->required();
    place->add_flag("--json", pl.json, "one JSON object");

    SimulateArgs sim;
    auto* simulate = app.add_subcommand(
        "simulate", "Replay a job trace (Philly CSV or SWF) with FCFS + EASY backfill under a placement policy");
    simulate->add_option("--topology", sim.topology, "m2g.conf")->required();
    simulate->add_option("--trace", sim.trace, "Philly CSV (../shared/data) or SWF (*.swf)")->required();
    simulate->add_option("--policy", sim.policy,
                         "m2g (the production engine), tree (fabric switches only), tree-nvl (NVLink domains as the "
                         "lowest switches), block, block-seg (block with --segment) or firstfit")
        ->check(CLI::IsMember({"m2g", "tree", "tree-nvl", "block", "block-seg", "firstfit"}));
    simulate->add_option("--backfill-reservation", sim.reservation,
                         "the queue head's backfill reservation: nodes (where its policy would place it, default) "
                         "or gpus (a count of GPUs, the classic EASY simplification)")
        ->check(CLI::IsMember({"nodes", "gpus"}));
    simulate->add_option("--scale-gpus", sim.opts.scale_gpus, "multiply every job's GPUs by K")
        ->check(CLI::Range(1, 4096));
    simulate->add_option("--load", sim.opts.load, "scale arrivals to this offered load (0: as recorded)")
        ->check(CLI::Range(0.0, 1000.0));
    simulate->add_option("--seed", sim.opts.seed,
                         "shuffle jobs submitted in the same second (0: trace order); seeds the power draws");
    simulate->add_option("--signals-timeline", sim.timeline,
                         "a signals feed (m2g.signals/v1) whose generated_at is the trace's first submit: budgets, "
                         "DR events, maintenance and health over the run");
    simulate->add_option("--power-cdf", sim.power_cdf,
                         "per-GPU power drawn per job from this CDF (../shared/data/acme2023_power_thermal_cdf.csv)");
    simulate->add_option("--power-cluster", sim.power_cluster, "the CDF's cluster column to use (kalos or seren)");
    simulate->add_option("--class", sim.opts.workload_class, "every job's workload class (as --m2g-class)");
    simulate->add_option("--class-share", sim.class_shares,
                         "CLASS=PCT: that percent of jobs (chosen by a hash of the job id) gets CLASS instead; "
                         "repeatable");
    simulate->add_option("--event-notice", sim.opts.event_notice_s,
                         "DR events enter m2g's feed this many seconds before they start (default: from the start "
                         "of the run)")
        ->check(CLI::Range(int64_t(0), int64_t(1) << 40));
    simulate->add_option("--actuation-delay", sim.opts.actuation_delay_s,
                         "curtailment: seconds from a plan to its effect on the jobs (default 3)")
        ->check(CLI::Range(0.0, 3600.0));
    simulate->add_option("--cap-speed", sim.cap_speed,
                         "curtailment: speed of a capped job, RATIO:SPEED points of draw under the cap over uncapped "
                         "draw (default: the Perseus A100 measurements, doc/simulator.md)");
    simulate->add_option("--checkpoint-interval", sim.opts.checkpoint_interval_s,
                         "curtailment: a job checkpoints after every this many seconds of work; a requeue loses the "
                         "rest (default 1800, 0: never)")
        ->check(CLI::Range(0.0, 1e9));
    simulate->add_option("--restart-overhead", sim.opts.restart_overhead_s,
                         "curtailment: seconds of work a requeued job redoes when it starts again (default 300)")
        ->check(CLI::Range(0.0, 1e9));
    simulate->add_flag("--curtail-every-tick", sim.opts.curtail_every_tick,
                       "curtailment: call the planner at every round, also on inputs unchanged since a plan that "
                       "found nothing to do (same results, slower: for checking)");
    simulate->add_flag("--no-baseline", sim.no_baseline,
                       "curtailment: skip the second run with CurtailMode=off (no loss, slowdown or energy shifted)");
    simulate->add_option("--job-log", sim.job_log, "write one CSV line per job (start, end, nodes) to this file");
    simulate->add_option("--power-log", sim.power_log,
                         "write the site's GPU draw (kW) at every change, as CSV t,site_kw, to this file");
    simulate->add_flag("--json", sim.json, "one JSON object");

    auto* disc = app.add_subcommand(
        "discover", "Discover node and fabric topology (hwloc, libibverbs, NVML, ibnetdiscover) and write m2g.conf");
    disc->require_subcommand(1);
    m2g::ProbeOptions probe_opts;
    std::string fabric_file, slurm_names, cluster_name = "m2g", node_hostname;
    std::vector<std::string> node_files;
    bool signals_only = false;
    auto* dnode = disc->add_subcommand(
        "node", "This node: CPUs, NUMA, GPUs, RDMA NICs, NVLink fabric (clique) and health; exit 0 without GPUs");
    dnode->add_flag("--json", as_json, "one JSON object (schema m2g.node/v1), the input of discover merge");
    dnode->add_flag("--signals", signals_only, "print only the m2g.signals/v1 health document for the feed");
    dnode->add_option("--hostname", node_hostname, "the host name the facts carry (default: this host's short name)");
    dnode->add_option("--hwloc-xml", probe_opts.hwloc_xml, "read the topology from an hwloc XML export, not this machine");
    dnode->add_option("--nvml-library", probe_opts.nvml_library,
                      "the NVML library to load (default $M2G_NVML_LIBRARY, else libnvidia-ml.so.1)");
    auto* dfabric = disc->add_subcommand("fabric", "Parse ibnetdiscover output into leaf/spine switches with link rates");
    dfabric->add_option("FILE", fabric_file, "ibnetdiscover output, or - for standard input")->required();
    dfabric->add_flag("--json", as_json, "one JSON object");
    auto* dmerge = disc->add_subcommand("merge", "Write the cluster's m2g.conf from node facts and the fabric");
    dmerge->add_option("NODE_JSON", node_files, "files written by `m2g discover node --json`, one per node")
        ->required();
    dmerge->add_option("--fabric", fabric_file, "ibnetdiscover output (leaf and spine switches), - for stdin");
    dmerge->add_option("--slurm-names", slurm_names,
                       "s/REGEX/REPLACEMENT/ turning host names into Slurm NodeNames (\\1 and & allowed)");
    dmerge->add_option("--cluster-name", cluster_name, "ClusterName= to write (default m2g)");
    dmerge->add_option("-o,--output", output, "write to this file instead of standard output");

    auto* sig = app.add_subcommand("signals", "Validate and show the live signals feed (doc/signals.md)");
    sig->require_subcommand(1);
    std::string conf, feed_file, status_file, at;
    auto* svalidate = sig->add_subcommand("validate", "Check a signals feed against m2g.conf; print where it is wrong");
    svalidate->add_option("FILE", feed_file, "the feed (JSON, schema m2g.signals/v1)")->required();
    auto* sshow = sig->add_subcommand(
        "show", "What job_submit/m2g believes (its status file), else the feed as read now: budgets, events, health");
    auto* status_opt = sshow->add_option(
        "--status", status_file, "status file written by job_submit/m2g (default: SignalsStatusFile= in m2g.conf)");
    sshow->add_option("--file", feed_file, "read this feed now instead (default: SignalsFile= in m2g.conf)")
        ->excludes(status_opt);
    sshow->add_flag("--json", as_json, "one JSON object");
    for (auto* sub : {svalidate, sshow}) {
        sub->add_option("--conf", conf, "m2g.conf (default $M2G_CONF or /etc/slurm/m2g.conf)");
        sub->add_option("--at", at, "judge the feed as if it were TIME (RFC 3339 or epoch seconds), not now");
    }

    // Slurm's live state through libslurm (SLURM_CONF), judged by the core.
    uint32_t job_id = 0;
    std::string plot_file;
    auto* explain = app.add_subcommand(
        "explain", "Why a job waits, was deferred, or went where it went (from slurmctld, m2g's annotation, the signals)");
    explain->add_option("JOBID", job_id, "the job")->required()->check(CLI::Range(1u, 0xfffffff0u));
    auto* status = app.add_subcommand(
        "status", "The cluster now: GPUs used/free per NVLink domain, power, active events, queues by class");
    status->add_option("--plot", plot_file, "also draw the status as a PNG image into this file");
    auto* jobcmd = app.add_subcommand("job", "A job's GPU-hours, energy and cost (slurmctld, else accounting)");
    jobcmd->add_option("JOBID", job_id, "the job")->required()->check(CLI::Range(1u, 0xfffffff0u));
    for (auto* sub : {explain, status, jobcmd}) {
        sub->add_flag("--json", as_json, "one JSON object");
        sub->add_option("--conf", conf, "m2g.conf (default $M2G_CONF or /etc/slurm/m2g.conf)");
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // Help and version exit 0; every usage error exits 2.
        return app.exit(e) == 0 ? 0 : 2;
    }

    try {
        std::vector<std::string> warnings;
        if (*validate) {
            m2g::Model m = m2g::load_model(file, &warnings);
            print_warnings(warnings, file);
            std::cout << file << ": ok: " << m.nodes.size() << " nodes, " << m.total_gpus() << " GPUs, "
                      << m.domains.size() << " NVLink domains, " << m.switches.size() << " switches, "
                      << m.fault_domains.size() << " fault domains\n";
        } else if (*show) {
            m2g::Model m = m2g::load_model(file, &warnings);
            print_warnings(warnings, file);
            std::cout << m2g::render_tree(m);
        } else if (*exp) {
            m2g::Model m = m2g::load_model(file, &warnings);
            print_warnings(warnings, file);
            m2g::ExportOptions eo;
            eo.name = export_name;
            emit(m2g::export_topology(m, m2g::parse_export_format(format), eo), output);
        } else if (*gimp && import_format != "slurm") {
            const std::string text = m2g::read_text_file(file);
            m2g::ConfigSpec spec;
            if (import_format == "labels") {
                m2g::LabelImportOptions lo;
                lo.gpus_per_node = gpus_per_node;
                spec = m2g::import_node_labels(text, file, lo, &warnings);
            } else {
                m2g::SlurmYamlImportOptions yo;
                yo.base.gpus_per_node = gpus_per_node;
                yo.base.leaf_as_domain = leaf_as_domain;
                yo.topology = import_topology;
                spec = m2g::import_slurm_yaml(text, file, yo);
            }
            m2g::Model m = m2g::build_model(spec, &warnings);
            print_warnings(warnings, file);
            emit(m2g::write_m2g_conf(m), output);
        } else if (*imp || *gimp) {
            m2g::SlurmImportOptions opts;
            opts.gpus_per_node = gpus_per_node;
            opts.leaf_as_domain = leaf_as_domain;
            m2g::ConfigSpec spec = m2g::parse_slurm_topology_conf(m2g::read_text_file(file), file, opts);
            m2g::Model m = m2g::build_model(spec, &warnings);
            print_warnings(warnings, file);
            emit(m2g::write_m2g_conf(m), output);
        } else if (*locate) {
            m2g::Model m = m2g::load_model(file, &warnings);
            print_warnings(warnings, file);
            const std::vector<std::string> nodes = m2g::hostlist_expand(hostlist);
            std::cout << m2g::describe(m, m2g::span_of(m, nodes), nodes.size()) << "\n";
        } else if (*place) {
            return run_place(pl);
        } else if (*simulate) {
            run_simulate(sim);
        } else if (*dnode) {
            m2g::NodeFacts f = m2g::probe_node(probe_opts);
            if (!node_hostname.empty())
                f.hostname = node_hostname;
            std::cout << (signals_only ? m2g::node_signals_json(f)
                          : as_json    ? m2g::node_facts_json(f)
                                       : m2g::format_node_facts(f));
        } else if (*dfabric) {
            std::cout << m2g::format_fabric(m2g::parse_ibnetdiscover(read_input(fabric_file), input_name(fabric_file)),
                                            as_json);
        } else if (*dmerge) {
            std::vector<m2g::NodeFacts> nodes;
            for (const std::string& f : node_files)
                nodes.push_back(m2g::parse_node_facts(read_input(f), input_name(f)));
            m2g::Fabric fabric;
            if (!fabric_file.empty())
                fabric = m2g::parse_ibnetdiscover(read_input(fabric_file), input_name(fabric_file));
            m2g::MergeOptions mo;
            mo.slurm_names = slurm_names;
            mo.cluster_name = cluster_name;
            const m2g::MergeResult r = m2g::merge_discovery(nodes, fabric_file.empty() ? nullptr : &fabric, mo);
            for (const std::string& w : r.warnings)
                std::cerr << "m2g: warning: " << w << "\n";
            emit(r.conf, output);
        } else if (*svalidate || *sshow) {
            if (conf.empty())
                conf = m2g::conf_path(kDefaultConf);
            const int64_t now = at.empty() ? static_cast<int64_t>(std::time(nullptr)) : m2g::parse_signal_time(at, "--at");
            m2g::Model m = m2g::load_model(conf, &warnings);
            print_warnings(warnings, conf);
            const m2g::AdmissionPolicy& ap = m.admission;
            if (*svalidate) {
                const m2g::Signals s = m2g::parse_signals(m2g::read_text_file(feed_file), feed_file, m, now);
                std::cout << feed_file << ": ok: " << m2g::summarize_feed(s, now) << "\n";
                if (now - s.generated_at > ap.signals_ttl_sec)
                    std::cerr << "m2g: warning: " << feed_file << ": generated " << now - s.generated_at
                              << " s ago, more than SignalsTTLSec=" << ap.signals_ttl_sec
                              << ": the plugins would treat it as stale (SignalsFailSafe=" << m2g::to_string(ap.failsafe)
                              << ")\n";
            } else {
                const SignalsSource src = read_signals_source(m, conf, status_file, feed_file, now);
                const std::string body = m2g::format_signals(m, src.view, now, as_json);
                if (!as_json) {
                    std::cout << "from:      " << src.note << "\n" << body;
                } else {
                    std::cout << with_from(body, src.from, "format_signals", &src.path);
                }
            }
        } else if (*explain || *status || *jobcmd) {
            if (conf.empty())
                conf = m2g::conf_path(kDefaultConf);
            const int64_t now = static_cast<int64_t>(std::time(nullptr));
            m2g::Model m = m2g::load_model(conf, &warnings);
            print_warnings(warnings, conf);
            if (*jobcmd) {
                std::string from = "slurmctld";
                std::optional<m2g::JobView> job = m2g::load_job(m, job_id);
                if (!job) {
                    job = m2g::load_job_from_accounting(m, job_id);
                    from = "accounting";
                }
                if (!job)
                    throw m2g::Error("job " + std::to_string(job_id) +
                                     ": no such job in slurmctld or in accounting (slurmdbd)");
                const m2g::JobEnergy e = m2g::job_energy(m, *job, m2g::energy_price(m), now);
                const std::string body = m2g::format_job_energy(e, *job, as_json);
                if (!as_json)
                    std::cout << "from:   "
                              << (from == "slurmctld" ? "slurmctld"
                                                      : "accounting (slurmdbd): slurmctld no longer holds the job")
                              << "\n"
                              << body;
                else
                    std::cout << with_from(body, from, "format_job_energy");
            } else {
                const SignalsSource src = read_signals_source(m, conf, "", "", now);
                const m2g::ClusterView c = m2g::load_cluster_view(m);
                if (*status) {
                    const m2g::Status st = m2g::compute_status(m, c, src.view, now);
                    std::cout << m2g::format_status(m, st, as_json);
                    if (!plot_file.empty()) {
                        m2g::plot_status_png(m, st, &c, plot_file);
                        if (!as_json)
                            std::cout << "plot: " << plot_file << "\n";
                    }
                } else {
                    std::optional<m2g::JobView> job;
                    for (const auto& j : c.jobs)
                        if (j.id == job_id)
                            job = j;
                    if (!job)
                        job = m2g::load_job(m, job_id);
                    if (!job)
                        job = m2g::load_job_from_accounting(m, job_id);
                    if (!job)
                        throw m2g::Error("job " + std::to_string(job_id) +
                                         ": no such job in slurmctld or in accounting (slurmdbd)");
                    std::cout << m2g::format_explanation(m2g::explain_job(m, c, src.view, *job, now), as_json);
                }
            }
        } else if (*rlist) {
            std::cout << m2g::format_recipe_table(m2g::read_recipes(catalog));
        } else if (*rshow) {
            const m2g::RecipeCatalog c = m2g::read_recipes(catalog);
            const m2g::Recipe* r = c.find(recipe_name);
            if (!r) {
                m2g::JobIntent probe;
                probe.recipe = recipe_name;
                m2g::expand_recipe(probe, c);  // throws the "no such recipe; known: ..." message
            }
            std::cout << m2g::format_recipe(*r);
        } else if (*rvalidate) {
            const m2g::RecipeCatalog c = m2g::read_recipes(catalog);
            std::cout << catalog << ": ok: " << c.recipes.size() << " recipes\n";
        }
    } catch (const std::exception& e) {
        std::cerr << "m2g: " << e.what() << "\n";
        return kExitInput;
    }
    return 0;
}
