// m2g CLI: `m2g place` — where would a job go? One select_p_job_test through
// select/m2g's PlacementSession on a described cluster.
#include <CLI/CLI.hpp>
#include <json-c/json.h>

#include <algorithm>
#include <ctime>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "core/base/hostlist.hpp"
#include "core/base/source.hpp"
#include "core/job/intent.hpp"
#include "core/model/cluster_state.hpp"
#include "core/model/config.hpp"
#include "core/place/engine.hpp"
#include "core/place/session.hpp"
#include "core/power/signals.hpp"

namespace m2g {
namespace cli {
namespace {

// Slurm offers the usable nodes (--state), all their GPUs free; the job
// takes whole nodes, has no time limit and the request's intent
// (prefer:nvlink unless topology= says otherwise); the signals are the
// feed's view now (--signals, with m2g.conf's TTL and fail-safe).
struct PlaceArgs {
    std::string conf, state, signals, request;
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

// --signals for the session; `detail` gets the view's account of the feed.
SignalsSource read_place_signals(const std::string& path, const Model& m, int64_t now, std::string* detail)
{
    // A broken feed is this command's error, not a fail-safe: check it
    // first, then read it as select/m2g's feed would now.
    parse_signals(read_text_file(path), path, m, now);
    const AdmissionPolicy& ap = m.admission;
    SignalFeed feed(path, ap.signals_ttl_sec, ap.failsafe, m, nullptr);
    feed.refresh(now);
    const SignalsView view = feed.view(now);
    *detail = view.detail;
    return [view](int64_t) { return view; };
}

// The answer when select/m2g leaves the job to cons_tres: on the offer less
// what the gate ruled out (`allowed`).
std::string stock_answer(const Model& m, const std::vector<uint8_t>& allowed, const Outcome& o, bool json)
{
    std::vector<std::string> names;
    for (size_t mi = 0; mi < allowed.size(); ++mi)
        if (allowed[mi])
            names.push_back(m.nodes[mi].name);
    const std::string hl = names.empty() ? "" : hostlist_compress(names);
    if (json)
        return "{\"ok\":true,\"stock\":true,\"policy\":" + json_string(o.policy) + ",\"allowed\":" + json_string(hl) +
               ",\"allowed_count\":" + std::to_string(names.size()) + "}\n";
    return "stock:    cons_tres places the job (policy=" + o.policy + ") on " +
           (names.empty() ? std::string("-") : hl) + " (" + std::to_string(names.size()) + " allowed)\n";
}

// Returns the exit status (kExitWouldWait when the job would wait).
int run_place(const PlaceArgs& a)
{
    std::vector<std::string> warnings;
    const std::string conf = resolve_conf_path(a.conf);
    Model m = load_model(conf, &warnings);
    print_warnings(warnings, conf);
    DescribedState st;
    if (!a.state.empty())
        st = read_state_json(a.state, m);
    else
        st.usable.assign(m.nodes.size(), 1);
    int node_gpus = 0;
    for (const auto& n : m.nodes)
        node_gpus = std::max(node_gpus, n.gpus);
    const PlacementRequest req = parse_request(a.request, node_gpus);
    if (request_names(a.request, "spare"))
        m.policy.spare_per_domain = req.spare_per_domain;  // stands in for SparePerDomain=
    const int64_t now = time(nullptr);

    SignalsSource signals;
    std::string feed_detail;
    if (!a.signals.empty())
        signals = read_place_signals(a.signals, m, now, &feed_detail);
    PlacementSession session(SessionLog{[](LogLevel, const std::string& msg) { std::cerr << "m2g: " << msg << "\n"; },
                                        nullptr, nullptr},
                             now);
    session.adopt(m, signals, st.health);

    JobIntent intent;
    intent.locality = req.locality;
    intent.level = req.level;
    intent.segment = req.segment;
    JobFacts job;
    job.intent = intent;
    job.nodes = req.nodes;
    job.min_nodes = req.nodes;
    job.gpus_per_node = node_gpus;
    // fallback=yes: the prefer wait is over.
    job.wait_over = req.fallback;
    const int offered = static_cast<int>(std::count(st.usable.begin(), st.usable.end(), uint8_t(1)));
    const Outcome o = session.decide(job, st.usable, offered, [&](int mi) { return m.nodes[mi].gpus; },
                                     SelectMode::RunNow, now);

    // The Outcome as select/m2g applies it, cons_tres's part being this
    // report: the offer it would decide on, or the engine's placement.
    std::string out;
    std::vector<uint8_t> allowed = st.usable;
    OfferActions act;
    act.rule_out = [&](const std::vector<int>& nodes) {
        for (int mi : nodes)
            allowed[mi] = 0;
    };
    act.test_offer = [&] {
        out = stock_answer(m, allowed, o, a.json);
        return true;
    };
    act.test_only = [&](const std::vector<int>&) {
        out = format_placement(m, o.placement, a.json);
        return true;
    };
    if (!session.apply(o, act).accepted) {
        Placement shown = o.placement;
        if (o.verdict != SelectVerdict::Waiting) {
            shown = Placement{};  // the signals block it before any placement
            shown.reason = o.reason;
        }
        out = format_placement(m, shown, a.json);
    }
    // What the signals gate avoided or noted, and the feed it read.
    const std::string& notes = o.signals;
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
    return o.offer == Outcome::Offer::Refuse ? kExitWouldWait : 0;
}

}  // namespace

Command add_place(CLI::App& app)
{
    auto a = std::make_shared<PlaceArgs>();
    auto* place = app.add_subcommand("place", "Where would a job go? Runs select/m2g's policy on a described cluster");
    add_conf_option(place, a->conf, "--topology");
    place->add_option("--state", a->state, "JSON: busy, drained, degraded nodes; NVLink-fault and over-limit domains");
    place->add_option("--signals", a->signals,
                      "a signals feed (m2g.signals/v1) as select/m2g would read it now: maintenance, down nodes, "
                      "power budgets and events, thermal");
    place->add_option("--request", a->request, "e.g. gpus=72,topology=strict:nvlink or nodes=36,segment=18")
        ->required();
    add_json_flag(place, a->json);
    return [a, place]() -> std::optional<int> {
        if (!*place)
            return std::nullopt;
        return run_place(*a);
    };
}

}  // namespace cli
}  // namespace m2g
