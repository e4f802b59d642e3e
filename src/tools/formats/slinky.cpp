// m2g tools: the Slinky view (see slinky.hpp and doc/slinky.md).
#include "tools/formats/slinky.hpp"

#include <json-c/json.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <memory>
#include <set>

#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/base/hostlist.hpp"
#include "core/job/intent.hpp"
#include "core/job/recipes.hpp"
#include "core/power/signals.hpp"
#include "core/base/keys.hpp"

namespace m2g {

namespace {

using Json = JsonPtr;

Json parse_json(const std::string& text, const std::string& what) { return json_parse_object(text, what); }
json_object* member(json_object* o, const char* key) { return json_member(o, key); }
std::string string_at(json_object* o, const char* key, const std::string& what, const std::string& path)
{
    return json_string_at(o, key, what, path);
}
std::map<std::string, std::string> string_map(json_object* o, const char* key, const std::string& what,
                                              const std::string& path)
{
    return json_string_map(o, key, what, path);
}

// Kubernetes quantities for a count of devices: "8", or "8k"-style never
// appears for GPUs; anything else is an error.
int quantity(const std::string& q, const std::string& what)
{
    if (q.empty() || q.size() > 9 || !std::all_of(q.begin(), q.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw ParseError(what + ": GPU quantity '" + q + "': expected a whole number");
    return std::stoi(q);
}

bool valid_name(const std::string& s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

// A label value as an m2g.conf switch name: characters outside
// [A-Za-z0-9._-] become '-'.
std::string as_name(const std::string& v)
{
    std::string out;
    for (char c : v)
        out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '-';
    return out;
}

bool contains_ci(const std::string& hay, const std::string& needle)
{
    std::string h = hay, n = needle;
    for (char& c : h)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : n)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return h.find(n) != std::string::npos;
}

// metadata.creationTimestamp: RFC 3339 in UTC, as the API server writes it
// ("2026-11-30T02:55:44Z"). 0 when absent; ParseError when malformed.
int64_t rfc3339(const std::string& text, const std::string& what)
{
    if (text.empty())
        return 0;
    struct tm tm {};
    const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        throw ParseError(what + ": '" + text + "' is not an RFC 3339 time (YYYY-MM-DDTHH:MM:SSZ)");
    if (*end == '.')
        while (std::isdigit(static_cast<unsigned char>(*++end))) {
        }
    if (std::string(end) != "Z")
        throw ParseError(what + ": '" + text + "' is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)");
    return static_cast<int64_t>(timegm(&tm));
}

// A v1 object's metadata: its name (ParseError naming `kind` when there is
// none), its namespace when `ns` asks for it, labels and annotations.
template <class Object>
json_object* read_metadata(json_object* o, const std::string& what, const char* kind, Object& out,
                           std::string* ns = nullptr)
{
    json_object* meta = member(o, "metadata");
    out.name = string_at(meta, "name", what, "metadata.");
    if (out.name.empty())
        throw ParseError(what + ": metadata.name: missing; expected a v1 " + kind);
    if (ns)
        *ns = string_at(meta, "namespace", what, "metadata.");
    out.labels = string_map(meta, "labels", what, "metadata.");
    out.annotations = string_map(meta, "annotations", what, "metadata.");
    return meta;
}

// `each(element, "<path><key>[i].")` for every element of the array
// o[key] (none when it is absent); ParseError when it is not an array.
template <class Each>
void each_element(json_object* o, const char* key, const std::string& what, const std::string& path, Each each)
{
    json_object* list = member(o, key);
    if (!list)
        return;
    if (!json_object_is_type(list, json_type_array))
        throw ParseError(what + ": " + path + key + ": expected an array");
    for (size_t i = 0; i < json_object_array_length(list); ++i)
        each(json_object_array_get_idx(list, i), path + key + "[" + std::to_string(i) + "].");
}

}  // namespace

K8sNode parse_k8s_node(const std::string& json, const std::string& what)
{
    Json root = parse_json(json, what);
    json_object* o = root.get();
    K8sNode n;
    read_metadata(o, what, "Node", n);
    json_object* spec = member(o, "spec");
    if (json_object* u = member(spec, "unschedulable"))
        n.unschedulable = json_object_get_boolean(u);
    each_element(spec, "taints", what, "spec.", [&](json_object* t, const std::string& p) {
        n.taints.push_back({string_at(t, "key", what, p), string_at(t, "value", what, p),
                            string_at(t, "effect", what, p)});
    });
    json_object* status = member(o, "status");
    each_element(status, "conditions", what, "status.", [&](json_object* c, const std::string& p) {
        n.conditions.push_back({string_at(c, "type", what, p), string_at(c, "status", what, p),
                                string_at(c, "reason", what, p), string_at(c, "message", what, p)});
    });
    for (const char* field : {"allocatable", "capacity"}) {
        const auto res = string_map(status, field, what, "status.");
        auto it = res.find("nvidia.com/gpu");
        if (it != res.end()) {
            n.gpus = quantity(it->second, what + ": status." + field);
            break;
        }
    }
    return n;
}

K8sPod parse_k8s_pod(const std::string& json, const std::string& what)
{
    Json root = parse_json(json, what);
    json_object* o = root.get();
    K8sPod p;
    json_object* meta = read_metadata(o, what, "Pod", p, &p.ns);
    json_object* spec = member(o, "spec");
    p.node_name = string_at(spec, "nodeName", what, "spec.");
    p.hostname = string_at(spec, "hostname", what, "spec.");
    p.scheduler = string_at(spec, "schedulerName", what, "spec.");
    p.phase = string_at(member(o, "status"), "phase", what, "status.");
    p.created = rfc3339(string_at(meta, "creationTimestamp", what, "metadata."), what + ": metadata.creationTimestamp");
    p.deleting = member(meta, "deletionTimestamp") != nullptr;
    return p;
}

std::vector<std::string> slinky_level_labels(const SlinkyView& v)
{
    std::vector<std::string> out;
    for (auto level = v.label_use.rbegin(); level != v.label_use.rend(); ++level) {
        const auto best = std::max_element(level->second.begin(), level->second.end(),
                                           [](const auto& a, const auto& b) { return a.second < b.second; });
        if (best != level->second.end())
            out.push_back(best->first);
    }
    return out;
}

std::string slinky_topology_value(const Model& m, int node, const std::string& tree, const std::string& block)
{
    // Tree: the node's lowest switch as topology/tree sees m2g.conf (its
    // NVLink domain, else its leaf) with its ancestors, root first
    // ("default:spine01:leaf01:nvl01", as `m2g topology export` writes the
    // tree); block: its NVLink domain.
    const Node& n = m.nodes[node];
    std::vector<std::string> chain;
    std::string block_name;
    int sw = kNone;
    if (n.domain != kNone) {
        chain.push_back(block_name = m.domains[n.domain].name);
        sw = m.domains[n.domain].parent;
    } else {
        sw = n.leaf;
    }
    for (; sw != kNone; sw = m.switches[sw].parent)
        chain.push_back(m.switches[sw].name);
    std::string value;
    if (!tree.empty() && !chain.empty()) {
        value = tree;
        for (auto it = chain.rbegin(); it != chain.rend(); ++it)
            value += ":" + *it;
    }
    if (!block.empty() && !block_name.empty())
        value += (value.empty() ? "" : ",") + block + ":" + block_name;
    return value;
}

SlinkyView build_slinky_view(const std::vector<K8sNode>& nodes, const std::vector<K8sPod>& slurmd_pods,
                             const SlinkyOptions& o, int64_t now)
{
    SlinkyView v;
    const std::vector<std::string> domain_labels =
        o.domain_labels.empty()
            ? std::vector<std::string>{kw::kK8sLabelGpuClique, kw::kK8sLabelTopographDomain,
                                       kw::kK8sLabelOldTopographDomain}
            : o.domain_labels;
    // The tier label sets, first match (its leaf label present) wins:
    // topograph >= 1.0, then the keys topograph used before.
    const std::vector<std::vector<std::string>> tier_sets =
        o.tier_labels.empty()
            ? std::vector<std::vector<std::string>>{{kw::kK8sLabelTopographTier0, kw::kK8sLabelTopographTier1,
                                                     kw::kK8sLabelTopographTier2},
                                                    {kw::kK8sLabelOldTopographLeaf, kw::kK8sLabelOldTopographSpine,
                                                     kw::kK8sLabelOldTopographCore}}
            : std::vector<std::vector<std::string>>{o.tier_labels};
    std::map<std::string, const K8sNode*> by_name;
    for (const K8sNode& n : nodes)
        by_name[n.name] = &n;

    // Slurm nodes: one per slurmd pod on a listed node.
    std::vector<LayoutHost> layout;
    std::map<std::string, const K8sNode*> node_of_slurm;
    std::set<std::string> k8s_with_pod;
    for (const K8sPod& p : slurmd_pods) {
        auto named = p.labels.find(kw::kK8sLabelPodHostname);
        const std::string slurm = named != p.labels.end() && !named->second.empty() ? named->second
                                  : p.hostname.empty()                             ? p.name
                                                                                   : p.hostname;
        const std::string who = "slurmd pod " + (p.ns.empty() ? "" : p.ns + "/") + p.name;
        if (p.deleting)
            continue;  // going away: its Slurm node leaves with it
        if (p.node_name.empty()) {
            v.warnings.push_back(who + " is not scheduled on a node yet; Slurm node " + slurm + " is left out");
            continue;
        }
        auto it = by_name.find(p.node_name);
        if (it == by_name.end()) {
            v.warnings.push_back(who + " runs on node " + p.node_name + ", which is not listed; Slurm node " + slurm +
                                 " is left out");
            continue;
        }
        if (!valid_name(slurm)) {
            v.warnings.push_back(who + ": Slurm node name '" + slurm + "' is not valid in m2g.conf; left out");
            continue;
        }
        if (node_of_slurm.count(slurm)) {
            v.warnings.push_back(who + ": Slurm node " + slurm + " is already on node " +
                                 node_of_slurm[slurm]->name + "; this pod is left out");
            continue;
        }
        if (!k8s_with_pod.insert(p.node_name).second)
            v.warnings.push_back("node " + p.node_name + " runs more than one slurmd pod; each is its own Slurm node");
        const K8sNode& n = *it->second;
        node_of_slurm[slurm] = &n;
        v.slurm_to_k8s[slurm] = n.name;
        LayoutHost h;
        h.name = slurm;
        h.gpus = std::max(0, n.gpus);
        for (const std::string& key : domain_labels) {
            auto l = n.labels.find(key);
            if (l != n.labels.end() && !l->second.empty()) {
                h.domain_key = key + "=" + l->second;
                h.domain_note = key + "=" + l->second;
                ++v.label_use[0][key];
                break;
            }
        }
        const std::vector<std::string>* tier_labels = &tier_sets.front();
        for (const auto& set : tier_sets)
            if (n.labels.count(set.front())) {
                tier_labels = &set;
                break;
            }
        for (const std::string& key : *tier_labels) {
            auto l = n.labels.find(key);
            if (l == n.labels.end() || l->second.empty())
                break;
            h.path.push_back(as_name(l->second));
            ++v.label_use[static_cast<int>(h.path.size())][key];
        }
        layout.push_back(std::move(h));
    }
    if (layout.empty())
        throw Error("no slurmd pod runs on a listed node: nothing to describe (check the pod label selector)");
    LayoutOptions lo;
    lo.cluster_name = o.cluster_name;
    lo.header = "# m2g.conf written by m2g-slinky from Kubernetes node labels (" + std::to_string(layout.size()) +
                " Slurm nodes). Do not edit: the adapter rewrites it.\n";
    MergeResult r = write_cluster_conf(std::move(layout), lo);
    v.conf = std::move(r.conf);
    v.warnings.insert(v.warnings.end(), r.warnings.begin(), r.warnings.end());

    // The topology annotation per Kubernetes node, from the written model.
    // Tree: the node's lowest switch as topology/tree sees m2g.conf (its
    // NVLink domain, else its leaf) with its ancestors, root first
    // ("default:spine01:leaf01:nvl01", as `m2g topology export` writes the
    // tree); block: its NVLink domain.
    const Model m = build_model(parse_m2g_conf(v.conf, "m2g-slinky m2g.conf"));
    for (size_t i = 0; i < m.nodes.size(); ++i) {
        const std::string value =
            slinky_topology_value(m, static_cast<int>(i), o.tree_topology, o.block_topology);
        if (!value.empty())
            v.annotations[v.slurm_to_k8s[m.nodes[i].name]] = value;
    }

    // Health and thermal into the signals feed, by Slurm node.
    std::vector<std::string> down, degraded;
    Json sig(json_object_new_object());
    json_object_object_add(sig.get(), kw::kSigSchema, json_object_new_string(kw::kSigSchemaV1));
    json_object_object_add(sig.get(), kw::kSigGeneratedAt, json_object_new_string(format_utc(now).c_str()));
    json_object_object_add(sig.get(), kw::kSigSource, json_object_new_string("m2g-slinky (Kubernetes nodes)"));
    json_object* thermal = json_object_new_object();
    for (const auto& [slurm, n] : node_of_slurm) {
        bool is_down = n->unschedulable, is_degraded = false, hot = false;
        bool ready_seen = false;
        for (const K8sCondition& c : n->conditions) {
            if (c.type == "Ready") {
                ready_seen = true;
                is_down = is_down || c.status != "True";
            } else if (c.type == "NetworkUnavailable") {
                is_down = is_down || c.status == "True";
            } else if (c.status == "True" && contains_ci(c.type, "thermal")) {
                hot = true;
            } else if (c.status == "True") {
                is_degraded = true;  // MemoryPressure, DiskPressure, PIDPressure, node-problem-detector problems
            }
        }
        if (!ready_seen)
            is_down = true;
        for (const K8sTaint& t : n->taints)
            if ((t.effect == "NoSchedule" || t.effect == "NoExecute") &&
                std::find(o.ignore_taint_keys.begin(), o.ignore_taint_keys.end(), t.key) == o.ignore_taint_keys.end())
                is_down = true;
        if (is_down)
            down.push_back(slurm);
        else if (is_degraded)
            degraded.push_back(slurm);
        if (hot) {
            json_object* t = json_object_new_object();
            json_object_object_add(t, "state", json_object_new_string("hot"));
            json_object_object_add(thermal, slurm.c_str(), t);
        }
    }
    if (json_object_object_length(thermal) > 0)
        json_object_object_add(sig.get(), kw::kSigThermal, thermal);
    else
        json_object_put(thermal);
    if (!down.empty() || !degraded.empty()) {
        json_object* health = json_object_new_object();
        if (!degraded.empty())
            json_object_object_add(health, "degraded", json_object_new_string(hostlist_compress(degraded).c_str()));
        if (!down.empty())
            json_object_object_add(health, "down", json_object_new_string(hostlist_compress(down).c_str()));
        json_object_object_add(sig.get(), kw::kSigHealth, health);
    }
    v.signals = std::string(json_object_to_json_string_ext(
                    sig.get(), JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)) +
                "\n";
    // The document must be one the plugins accept.
    parse_signals(v.signals, "m2g-slinky signals", m, now);
    return v;
}

std::vector<std::string> pod_m2g_options(const std::map<std::string, std::string>& annotations)
{
    static const std::vector<std::pair<const char*, const char*>> keys = {
        {kw::kK8sPodTopology, kw::kOptTopology}, {kw::kK8sPodSegment, kw::kOptSegment},
        {kw::kK8sPodClass, kw::kOptClass},       {kw::kK8sPodDefer, kw::kOptDefer},
        {kw::kK8sPodRecipe, kw::kOptRecipe},     {kw::kK8sPodTags, kw::kOptTag},
    };
    const std::string prefix = kw::kK8sPodAnnotationPrefix;
    for (const auto& entry : annotations) {
        const std::string& k = entry.first;  // a lambda may not capture a structured binding in C++17
        if (k.compare(0, prefix.size(), prefix) == 0 &&
            std::none_of(keys.begin(), keys.end(), [&](const auto& p) { return k == p.first; })) {
            std::string accepted;
            for (const auto& p : keys)
                accepted += (accepted.empty() ? "" : ", ") + std::string(p.first);
            throw ParseError("pod annotation " + k + ": unknown; accepted: " + accepted);
        }
    }
    std::vector<std::string> out;
    JobIntent check;
    for (const auto& [key, opt] : keys) {
        auto it = annotations.find(key);
        if (it == annotations.end())
            continue;
        std::vector<std::string> values;
        if (std::string(opt) == kw::kOptTag) {
            size_t a = 0;
            for (;;) {
                const size_t b = it->second.find(',', a);
                std::string t = it->second.substr(a, b == std::string::npos ? std::string::npos : b - a);
                t.erase(0, t.find_first_not_of(' '));
                t.erase(t.find_last_not_of(' ') + 1);
                if (!t.empty())
                    values.push_back(t);
                if (b == std::string::npos)
                    break;
                a = b + 1;
            }
        } else {
            values.push_back(it->second);
        }
        for (const std::string& val : values) {
            try {
                apply_option(check, opt, val, 0);
            } catch (const ParseError& e) {
                throw ParseError("pod annotation " + std::string(key) + "=" + val + ": " + e.what());
            }
            out.push_back("--" + std::string(opt) + "=" + val);
        }
    }
    return out;
}

BridgeIntent pod_bridge_intent(const K8sPod& pod, const RecipeCatalog* catalog)
{
    BridgeIntent out;
    try {
        JobIntent intent;
        for (const std::string& arg : pod_m2g_options(pod.annotations)) {
            const size_t eq = arg.find('=');
            // now+N counts from the pod's creation: the same answer at every
            // pass and after the adapter restarts.
            apply_option(intent, std::string_view(arg).substr(2, eq - 2), std::string_view(arg).substr(eq + 1),
                         pod.created);
        }
        if (!intent.recipe.empty()) {
            if (!catalog)
                throw ParseError(std::string("pod annotation ") + kw::kK8sPodRecipe + "=" + intent.recipe +
                                 ": m2g-slinky has no recipe catalog (start it with --recipes FILE)");
            expand_recipe(intent, *catalog);
        }
        out.env = encode_intent(intent);
    } catch (const Error& e) {
        out.error = e.what();
    }
    return out;
}

std::string bridge_intents_json(const std::vector<K8sPod>& pods, const RecipeCatalog* catalog, int64_t now)
{
    Json root(json_object_new_object());
    json_object_object_add(root.get(), "version", json_object_new_string(kw::kIntentsVersion));
    json_object_object_add(root.get(), kw::kIntentsGeneratedAt, json_object_new_int64(now));
    json_object* all = json_object_new_object();
    json_object_object_add(root.get(), kw::kIntentsPods, all);
    std::map<std::string, const K8sPod*> sorted;
    for (const K8sPod& p : pods)
        sorted[p.ns + "/" + p.name] = &p;
    for (const auto& [key, p] : sorted) {
        const BridgeIntent bi = pod_bridge_intent(*p, catalog);
        json_object* entry = json_object_new_object();
        if (!bi.error.empty()) {
            json_object_object_add(entry, kw::kIntentsError, json_object_new_string(bi.error.c_str()));
        } else {
            json_object* env = json_object_new_object();
            for (const auto& [k, v] : bi.env)
                json_object_object_add(env, k.c_str(), json_object_new_string(v.c_str()));
            json_object_object_add(entry, kw::kIntentsEnv, env);
        }
        json_object_object_add(all, key.c_str(), entry);
    }
    return std::string(json_object_to_json_string_ext(
               root.get(), JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)) +
           "\n";
}

}  // namespace m2g
