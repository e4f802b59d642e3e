// m2g-slinky: m2g's policy for Slurm on Kubernetes (SchedMD Slinky).
//
// Watches the Kubernetes Nodes and the slurmd pods of slurm-operator's
// NodeSets, and keeps three things current (doc/slinky.md):
//   - ConfigMap --configmap, key m2g.conf: the cluster's m2g.conf, from GPU
//     clique and topograph tier labels (written when it changes);
//   - ConfigMap --signals-configmap, key signals.json: the m2g.signals/v1
//     feed with cordons, taints and node conditions (every --interval);
//   - Node annotation topology.slinky.slurm.net/spec: the node's place in
//     the Slurm topology, which slurm-operator copies to the Slurm node;
//   - ConfigMap --signals-configmap, key bridge-intents.json: the m2g intent
//     of every pod slurm-bridge schedules, from its m2g.slurm.net/*
//     annotations, for job_submit/m2g (BridgeIntentsFile=);
//   - with --write-topology, the same topology for other readers: Slurm's
//     topology.yaml (ConfigMap --configmap, key topology.yaml), a Kueue
//     Topology and ResourceFlavor, a KAI Topology, Volcano HyperNodes
//     (`m2g topology export`'s formats, src/tools/formats/formats.cpp).
// The mapping is the core's (src/tools/formats/slinky.cpp); the Kubernetes
// client is slinky/src/kube.cpp.
#include <CLI/CLI.hpp>
#include <json-c/json.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <map>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "kube.hpp"
#include "m2g_config.h"
#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "tools/formats/formats.hpp"
#include "core/job/recipes.hpp"
#include "tools/formats/slinky.hpp"
#include "core/base/keys.hpp"

namespace {

using Json = std::unique_ptr<json_object, decltype(&json_object_put)>;

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

void log(const std::string& msg)
{
    char ts[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::cerr << ts << " m2g-slinky: " << msg << "\n";
}

std::string url_escape(const std::string& s)
{
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
            out += static_cast<char>(c);
        else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            out += buf;
        }
    }
    return out;
}

std::string json_text(json_object* o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

[[noreturn]] void api_failed(const std::string& what, const m2g::kube::Response& r)
{
    throw m2g::Error(what + ": " + (r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error));
}

struct Args {
    std::string kubeconfig, context, ns, selector = m2g::kw::kK8sSlurmdSelector;
    std::string configmap = "m2g-config", signals_configmap = "m2g-signals", out_dir;
    std::string bridge_scheduler = m2g::kw::kK8sBridgeScheduler;  // "" no slurm-bridge pods
    std::string recipes;                                          // the site's m2g-recipes.conf
    m2g::SlinkyOptions view;
    std::set<std::string> write_topology;  // slurm-yaml, kueue, kai, volcano
    std::string topology_name;             // Topology objects, Slurm topology prefix ("" cluster name)
    int interval = 30;
    bool once = false, dry_run = false;
};

class Adapter {
  public:
    Adapter(m2g::kube::Client& c, const Args& a) : c_(c), a_(a)
    {
        if (!a.recipes.empty())
            catalog_ = std::make_unique<m2g::RecipeCatalog>(m2g::read_recipes(a.recipes));
    }

    // Create or update one key of a ConfigMap; true when it changed.
    bool upsert_configmap(const std::string& name, const std::string& key, const std::string& text)
    {
        const std::string base = "/api/v1/namespaces/" + url_escape(a_.ns) + "/configmaps";
        const m2g::kube::Response got = c_.get(base + "/" + url_escape(name));
        if (got.status == 404) {
            Json cm(json_object_new_object(), json_object_put);
            json_object_object_add(cm.get(), "apiVersion", json_object_new_string("v1"));
            json_object_object_add(cm.get(), "kind", json_object_new_string("ConfigMap"));
            json_object* meta = json_object_new_object();
            json_object_object_add(meta, "name", json_object_new_string(name.c_str()));
            json_object* labels = json_object_new_object();
            json_object_object_add(labels, "app.kubernetes.io/managed-by", json_object_new_string("m2g-slinky"));
            json_object_object_add(meta, "labels", labels);
            json_object_object_add(cm.get(), "metadata", meta);
            json_object* data = json_object_new_object();
            json_object_object_add(data, key.c_str(), json_object_new_string(text.c_str()));
            json_object_object_add(cm.get(), "data", data);
            const m2g::kube::Response r = c_.post(base, json_text(cm.get()));
            if (!r.ok())
                api_failed("create ConfigMap " + a_.ns + "/" + name, r);
            return true;
        }
        if (!got.ok())
            api_failed("read ConfigMap " + a_.ns + "/" + name, got);
        json_object* cur = json_tokener_parse(got.body.c_str());
        Json holder(cur, json_object_put);
        json_object *data = nullptr, *val = nullptr;
        if (cur && json_object_object_get_ex(cur, "data", &data) && json_object_object_get_ex(data, key.c_str(), &val) &&
            json_object_is_type(val, json_type_string) && json_object_get_string(val) == text)
            return false;
        Json patch(json_object_new_object(), json_object_put);
        json_object* d = json_object_new_object();
        json_object_object_add(d, key.c_str(), json_object_new_string(text.c_str()));
        json_object_object_add(patch.get(), "data", d);
        const m2g::kube::Response r = c_.patch(base + "/" + url_escape(name), json_text(patch.get()));
        if (!r.ok())
            api_failed("update ConfigMap " + a_.ns + "/" + name, r);
        return true;
    }

    // Set (or, with "", remove) the topology annotation of one node.
    void annotate(const std::string& node, const std::string& value)
    {
        Json patch(json_object_new_object(), json_object_put);
        json_object* meta = json_object_new_object();
        json_object* ann = json_object_new_object();
        json_object_object_add(ann, m2g::kw::kK8sAnnotationTopology,
                               value.empty() ? nullptr : json_object_new_string(value.c_str()));
        json_object_object_add(meta, "annotations", ann);
        json_object_object_add(patch.get(), "metadata", meta);
        const m2g::kube::Response r = c_.patch("/api/v1/nodes/" + url_escape(node), json_text(patch.get()));
        if (!r.ok())
            api_failed("annotate node " + node, r);
    }

    // Create or update one cluster-scoped object of a CRD (Kueue, KAI,
    // Volcano) from its JSON; labels it as ours. A change the API refuses
    // (Kueue's and KAI's Topology levels cannot change once created) is
    // logged once with the API's reason; the next change or interval retries.
    // Returns "created", "updated" or "" (unchanged or refused).
    std::string apply_object(const std::string& json)
    {
        Json obj(json_tokener_parse(json.c_str()), json_object_put);
        json_object *kind = nullptr, *api = nullptr, *meta = nullptr, *name = nullptr, *spec = nullptr;
        if (!obj || !json_object_object_get_ex(obj.get(), "kind", &kind) ||
            !json_object_object_get_ex(obj.get(), "apiVersion", &api) ||
            !json_object_object_get_ex(obj.get(), "metadata", &meta) ||
            !json_object_object_get_ex(meta, "name", &name) || !json_object_object_get_ex(obj.get(), "spec", &spec))
            throw m2g::Error("an exported object without kind, apiVersion, metadata.name or spec: " + json);
        const std::string k = json_object_get_string(kind), n = json_object_get_string(name);
        const std::string base = "/apis/" + std::string(json_object_get_string(api)) + "/" + plural(k);
        json_object* labels = json_object_new_object();
        json_object_object_add(labels, "app.kubernetes.io/managed-by", json_object_new_string("m2g-slinky"));
        json_object_object_add(meta, "labels", labels);
        const m2g::kube::Response got = c_.get(base + "/" + url_escape(n));
        if (got.status == 404) {
            const m2g::kube::Response r = c_.post(base, json_text(obj.get()));
            if (!r.ok())
                return refused("create " + k + " " + n, r);
            return "created";
        }
        if (!got.ok())
            return refused("read " + k + " " + n, got);
        Json cur(json_tokener_parse(got.body.c_str()), json_object_put);
        json_object* cur_spec = nullptr;
        if (cur && json_object_object_get_ex(cur.get(), "spec", &cur_spec) && json_object_equal(cur_spec, spec))
            return "";
        Json patch(json_object_new_object(), json_object_put);
        json_object_object_add(patch.get(), "spec", json_object_get(spec));
        const m2g::kube::Response r = c_.patch(base + "/" + url_escape(n), json_text(patch.get()));
        if (!r.ok())
            return refused("update " + k + " " + n, r);
        return "updated";
    }

    // Write the --write-topology formats of this view's model.
    void write_topology(const m2g::SlinkyView& v)
    {
        if (a_.write_topology.empty())
            return;
        const m2g::Model m = m2g::build_model(m2g::parse_m2g_conf(v.conf, "m2g-slinky m2g.conf"));
        m2g::ExportOptions eo;
        eo.name = a_.topology_name.empty() ? a_.view.cluster_name : a_.topology_name;
        eo.levels = m2g::slinky_level_labels(v);
        eo.k8s_node_names = v.slurm_to_k8s;
        for (const std::string& f : a_.write_topology) {
            std::string text;
            try {
                text = m2g::export_topology(m, m2g::parse_export_format(f), eo);
            } catch (const m2g::Error& e) {
                if (warned_.insert(f + e.what()).second)
                    log("cannot write --write-topology=" + f + ": " + e.what());
                continue;
            }
            if (!a_.out_dir.empty())
                write_file(a_.out_dir + "/topology." + f + ".yaml", text);
            if (a_.dry_run) {
                std::cout << "# --write-topology=" << f << "\n" << text;
                continue;
            }
            if (f == "slurm-yaml") {
                if (upsert_configmap(a_.configmap, "topology.yaml", text))
                    log("wrote topology.yaml to ConfigMap " + a_.ns + "/" + a_.configmap);
                continue;
            }
            std::set<std::string> names;
            for (const std::string& json : m2g::yaml_objects_as_json(text, "--write-topology=" + f)) {
                const std::string what = apply_object(json);
                Json o(json_tokener_parse(json.c_str()), json_object_put);
                json_object *meta = nullptr, *name = nullptr, *kind = nullptr;
                json_object_object_get_ex(o.get(), "kind", &kind);
                json_object_object_get_ex(o.get(), "metadata", &meta);
                json_object_object_get_ex(meta, "name", &name);
                names.insert(json_object_get_string(name));
                if (!what.empty())
                    log(what + " " + json_object_get_string(kind) + " " + json_object_get_string(name));
            }
            if (f == "volcano")
                prune_hypernodes(names);
            if (f == "kueue")
                label_cluster(v, m);
        }
    }

    // HyperNodes this adapter made that the topology no longer has.
    void prune_hypernodes(const std::set<std::string>& keep)
    {
        const std::string base = "/apis/topology.volcano.sh/v1alpha1/hypernodes";
        m2g::kube::ListResult l;
        try {
            l = c_.list(base + "?labelSelector=" + url_escape("app.kubernetes.io/managed-by=m2g-slinky"));
        } catch (const m2g::Error& e) {
            if (warned_.insert(std::string("prune") + e.what()).second)
                log(std::string("cannot list HyperNodes to remove stale ones: ") + e.what());
            return;
        }
        for (const std::string& item : l.items) {
            const std::string key = m2g::kube::Informer::key_of(item);
            if (keep.count(key))
                continue;
            const m2g::kube::Response r = c_.del(base + "/" + url_escape(key));
            if (r.ok())
                log("deleted HyperNode " + key + " (no longer in the topology)");
            else
                refused("delete HyperNode " + key, r);
        }
    }

    // The Kueue ResourceFlavor selects nodes by m2g.slurm.net/cluster: put it
    // on every node that runs a Slurm node of this cluster.
    void label_cluster(const m2g::SlinkyView& v, const m2g::Model& m)
    {
        const std::string value = m.cluster_name.empty() ? "m2g" : m.cluster_name;
        std::set<std::string> k8s;
        for (const auto& [slurm, node] : v.slurm_to_k8s)
            k8s.insert(node);
        int changed = 0;
        for (const std::string& node : k8s) {
            auto have = node_labels_.find(node);
            if (have != node_labels_.end() && have->second == value)
                continue;
            Json patch(json_object_new_object(), json_object_put);
            json_object* meta = json_object_new_object();
            json_object* labels = json_object_new_object();
            json_object_object_add(labels, m2g::kw::kK8sLabelM2gCluster, json_object_new_string(value.c_str()));
            json_object_object_add(meta, "labels", labels);
            json_object_object_add(patch.get(), "metadata", meta);
            const m2g::kube::Response r = c_.patch("/api/v1/nodes/" + url_escape(node), json_text(patch.get()));
            if (!r.ok()) {
                refused("label node " + node, r);
                continue;
            }
            ++changed;
        }
        if (changed)
            log("labelled " + std::to_string(changed) + " node" + (changed == 1 ? "" : "s") + " " +
                m2g::kw::kK8sLabelM2gCluster + "=" + value + " (the Kueue ResourceFlavor selects them)");
    }

    // One pass over what the informers (or lists) hold.
    void sync(const std::map<std::string, std::string>& node_objs, const std::map<std::string, std::string>& pod_objs,
              const std::map<std::string, std::string>* bridge_objs)
    {
        std::vector<m2g::K8sNode> nodes;
        std::vector<m2g::K8sPod> pods;
        node_labels_.clear();
        for (const auto& [key, json] : node_objs) {
            try {
                nodes.push_back(m2g::parse_k8s_node(json, "node " + key));
                auto c = nodes.back().labels.find(m2g::kw::kK8sLabelM2gCluster);
                if (c != nodes.back().labels.end())
                    node_labels_[nodes.back().name] = c->second;
            } catch (const m2g::Error& e) {
                log(std::string("skipping: ") + e.what());
            }
        }
        for (const auto& [key, json] : pod_objs) {
            try {
                pods.push_back(m2g::parse_k8s_pod(json, "pod " + key));
            } catch (const m2g::Error& e) {
                log(std::string("skipping: ") + e.what());
            }
        }
        const m2g::SlinkyView v = m2g::build_slinky_view(nodes, pods, a_.view, std::time(nullptr));
        for (const std::string& w : v.warnings)
            if (warned_.insert(w).second)
                log("warning: " + w);
        std::string intents;
        if (bridge_objs) {
            std::vector<m2g::K8sPod> bridge;
            for (const auto& [key, json] : *bridge_objs) {
                try {
                    m2g::K8sPod p = m2g::parse_k8s_pod(json, "pod " + key);
                    if (p.deleting || p.phase == "Succeeded" || p.phase == "Failed")
                        continue;  // no job will be submitted for it any more
                    const m2g::BridgeIntent bi = m2g::pod_bridge_intent(p, catalog_.get());
                    if (!bi.error.empty() && warned_.insert(key + bi.error).second)
                        log("pod " + p.ns + "/" + p.name + ": " + bi.error +
                            "; job_submit/m2g refuses the Slurm job slurm-bridge submits for it");
                    bridge.push_back(std::move(p));
                } catch (const m2g::Error& e) {
                    log(std::string("skipping: ") + e.what());
                }
            }
            // generated_at only moves when the content does: an unchanged
            // document is not rewritten (each write reaches the pods' files).
            const std::string body = m2g::bridge_intents_json(bridge, catalog_.get(), 0);
            if (body != last_intents_body_) {
                last_intents_body_ = body;
                last_intents_ = m2g::bridge_intents_json(bridge, catalog_.get(), std::time(nullptr));
            }
            intents = last_intents_;
        }
        if (!a_.out_dir.empty()) {
            write_file(a_.out_dir + "/" + m2g::kw::kK8sConfigMapConfKey, v.conf);
            write_file(a_.out_dir + "/" + m2g::kw::kK8sConfigMapSignalsKey, v.signals);
            if (bridge_objs)
                write_file(a_.out_dir + "/" + m2g::kw::kK8sConfigMapIntentsKey, intents);
        }
        if (a_.dry_run) {
            write_topology(v);
            std::cout << v.conf << "\n# signals\n" << v.signals;
            if (bridge_objs)
                std::cout << "# " << m2g::kw::kK8sConfigMapIntentsKey << "\n" << intents;
            for (const auto& [node, value] : v.annotations)
                std::cout << "# annotate " << node << " " << m2g::kw::kK8sAnnotationTopology << "=" << value << "\n";
            return;
        }
        if (v.conf != last_conf_) {
            if (upsert_configmap(a_.configmap, m2g::kw::kK8sConfigMapConfKey, v.conf))
                log("wrote m2g.conf to ConfigMap " + a_.ns + "/" + a_.configmap + " (" +
                    std::to_string(v.slurm_to_k8s.size()) + " Slurm nodes)");
            last_conf_ = v.conf;
        }
        write_topology(v);
        upsert_configmap(a_.signals_configmap, m2g::kw::kK8sConfigMapSignalsKey, v.signals);
        if (bridge_objs && upsert_configmap(a_.signals_configmap, m2g::kw::kK8sConfigMapIntentsKey, intents))
            log("wrote " + std::string(m2g::kw::kK8sConfigMapIntentsKey) + " to ConfigMap " + a_.ns + "/" +
                a_.signals_configmap + " (" + std::to_string(bridge_objs->size()) + " slurm-bridge pods)");
        int changed = 0;
        for (const m2g::K8sNode& n : nodes) {
            auto want = v.annotations.find(n.name);
            auto have = n.annotations.find(m2g::kw::kK8sAnnotationTopology);
            const std::string w = want == v.annotations.end() ? "" : want->second;
            const std::string h = have == n.annotations.end() ? "" : have->second;
            if (w == h || (w.empty() && have == n.annotations.end()))
                continue;
            annotate(n.name, w);
            ++changed;
        }
        if (changed)
            log("updated " + std::string(m2g::kw::kK8sAnnotationTopology) + " on " + std::to_string(changed) +
                " node" + (changed == 1 ? "" : "s"));
    }

  private:
    static std::string plural(const std::string& kind)
    {
        if (kind == "Topology")
            return "topologies";
        std::string p;
        for (char c : kind)
            p += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return p + "s";  // ResourceFlavor, HyperNode
    }

    // Log a refused request once per distinct answer; "" for apply_object.
    std::string refused(const std::string& what, const m2g::kube::Response& r)
    {
        const std::string msg = what + ": " + (r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error);
        if (warned_.insert(msg).second)
            log(msg);
        return "";
    }

    static void write_file(const std::string& path, const std::string& text)
    {
        const std::string tmp = path + ".tmp";
        {
            std::ofstream f(tmp);
            f << text;
            if (!f.flush())
                throw m2g::Error(tmp + ": cannot write");
        }
        if (std::rename(tmp.c_str(), path.c_str()) != 0)
            throw m2g::Error(path + ": cannot replace");
    }

    m2g::kube::Client& c_;
    const Args& a_;
    std::string last_conf_;
    std::string last_intents_body_, last_intents_;
    std::unique_ptr<m2g::RecipeCatalog> catalog_;
    std::set<std::string> warned_;
    std::map<std::string, std::string> node_labels_;  // node -> its m2g.slurm.net/cluster label
};

std::map<std::string, std::string> list_all(m2g::kube::Client& c, const std::string& path)
{
    std::map<std::string, std::string> out;
    for (const std::string& item : c.list(path).items)
        out[m2g::kube::Informer::key_of(item)] = item;
    return out;
}

}  // namespace

int main(int argc, char** argv)
{
    CLI::App app{"m2g-slinky: m2g's topology and health for Slurm on Kubernetes (SchedMD Slinky)", "m2g-slinky"};
    app.set_version_flag("--version", std::string("m2g-slinky ") + PACKAGE_VERSION);
    Args a;
    app.add_option("--kubeconfig", a.kubeconfig, "a kubeconfig file (default: the pod's service account)");
    app.add_option("--context", a.context, "the kubeconfig context (default: its current-context)");
    app.add_option("--namespace", a.ns, "namespace of the slurmd pods and the ConfigMaps (default: the pod's)");
    app.add_option("--pod-selector", a.selector, "label selector of slurm-operator's slurmd pods");
    app.add_option("--configmap", a.configmap, "ConfigMap that receives m2g.conf");
    app.add_option("--signals-configmap", a.signals_configmap, "ConfigMap that receives signals.json");
    app.add_option("--cluster-name", a.view.cluster_name, "ClusterName= of the m2g.conf written");
    app.add_option("--tree-topology", a.view.tree_topology,
                   "topology name for the tree part of the annotation ('default': topology.conf; '' none)");
    app.add_option("--block-topology", a.view.block_topology, "topology name for a block part ('' none)");
    app.add_option("--interval", a.interval, "seconds between signals heartbeats and full resyncs")
        ->check(CLI::Range(5, 3600));
    app.add_option("--bridge-scheduler", a.bridge_scheduler,
                   "schedulerName of slurm-bridge's pods, whose m2g.slurm.net/* annotations are published ('' none)");
    app.add_option("--recipes", a.recipes, "the site's m2g-recipes.conf, for m2g.slurm.net/recipe annotations");
    std::vector<std::string> write_topology;
    app.add_option("--write-topology", write_topology,
                   "also write the topology as slurm-yaml (ConfigMap --configmap, key topology.yaml), kueue "
                   "(Topology, ResourceFlavor), kai (Topology), volcano (HyperNodes); comma-separated")
        ->delimiter(',')
        ->check(CLI::IsMember({"slurm-yaml", "kueue", "kai", "volcano"}));
    app.add_option("--topology-name", a.topology_name,
                   "name of the Kueue/KAI Topology and prefix of the topology.yaml topologies (default: --cluster-name)");
    app.add_option("--out-dir", a.out_dir, "also write m2g.conf and signals.json (and the --write-topology files) into this directory");
    app.add_flag("--once", a.once, "list once, write, exit (no watch)");
    app.add_flag("--dry-run", a.dry_run, "print what would be written; change nothing");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    a.write_topology.insert(write_topology.begin(), write_topology.end());
    if (a.write_topology.count("slurm-yaml")) {
        // The nodes' topology annotation names the topology.yaml topologies.
        const std::string name = a.topology_name.empty() ? a.view.cluster_name : a.topology_name;
        a.view.tree_topology = name + "-tree";
        a.view.block_topology = name + "-block";
    }
    try {
        m2g::kube::Config cfg = a.kubeconfig.empty() ? m2g::kube::in_cluster() : m2g::kube::from_kubeconfig(a.kubeconfig, a.context);
        if (a.ns.empty())
            a.ns = cfg.namespace_.empty() ? "default" : cfg.namespace_;
        const std::string pods_path =
            "/api/v1/namespaces/" + url_escape(a.ns) + "/pods?labelSelector=" + url_escape(a.selector);
        // slurm-bridge's pods, in every namespace.
        const std::string bridge_path =
            a.bridge_scheduler.empty()
                ? ""
                : "/api/v1/pods?fieldSelector=" + url_escape("spec.schedulerName=" + a.bridge_scheduler);
        m2g::kube::Client client(cfg);
        Adapter adapter(client, a);
        if (a.once) {
            std::map<std::string, std::string> bridge;
            if (!bridge_path.empty())
                bridge = list_all(client, bridge_path);
            adapter.sync(list_all(client, "/api/v1/nodes"), list_all(client, pods_path),
                         bridge_path.empty() ? nullptr : &bridge);
            return 0;
        }
        std::signal(SIGTERM, on_signal);
        std::signal(SIGINT, on_signal);
        // One informer per object kind, each on its own thread and client;
        // the main thread syncs when any changed, and every --interval
        // regardless, once each has listed.
        std::mutex mu;
        std::map<std::string, std::string> nodes, pods, bridge;
        int listed = 0;  // informers that have delivered a list
        std::atomic<bool> dirty{false};
        auto watch = [&](const std::string& path, std::map<std::string, std::string>& into) {
            bool first = true;
            m2g::kube::Client own(cfg);
            own.set_cancel(&g_stop);
            m2g::kube::Informer::Options opt;
            opt.log = [](const std::string& m) { log(m); };
            m2g::kube::Informer inf(own, path, path,
                                    [&](const m2g::kube::Informer::Store& s) {
                                        std::lock_guard<std::mutex> lock(mu);
                                        into = s;
                                        dirty = true;
                                        if (first)
                                            ++listed;
                                        first = false;
                                    },
                                    opt);
            inf.run(g_stop);
        };
        std::thread tn(watch, std::string("/api/v1/nodes"), std::ref(nodes));
        std::thread tp(watch, pods_path, std::ref(pods));
        std::thread tb;
        if (!bridge_path.empty())
            tb = std::thread(watch, bridge_path, std::ref(bridge));
        const int informers = bridge_path.empty() ? 2 : 3;
        auto last = std::chrono::steady_clock::time_point{};
        log("watching nodes and pods (" + a.selector + ") in namespace " + a.ns +
            (bridge_path.empty() ? std::string() : ", and " + a.bridge_scheduler + " pods in all namespaces,") +
            " on " + cfg.server);
        while (!g_stop) {
            std::this_thread::sleep_for(std::chrono::seconds(1));
            const auto now = std::chrono::steady_clock::now();
            if (!dirty && now - last < std::chrono::seconds(a.interval))
                continue;
            std::map<std::string, std::string> n, p, b;
            {
                std::lock_guard<std::mutex> lock(mu);
                if (listed < informers)
                    continue;  // not every informer has listed yet
                n = nodes;
                p = pods;
                b = bridge;
                dirty = false;
            }
            last = now;
            try {
                adapter.sync(n, p, bridge_path.empty() ? nullptr : &b);
            } catch (const std::exception& e) {
                log(std::string("sync failed, retrying at the next change or interval: ") + e.what());
            }
        }
        tn.join();
        tp.join();
        if (tb.joinable())
            tb.join();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "m2g-slinky: " << e.what() << "\n";
        return 1;
    }
}
