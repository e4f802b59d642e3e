// m2g tools: node facts as JSON and the cluster merge (see discover.hpp).
// The ibnetdiscover parser is in ibnet.cpp; hardware probing in
// src/discover/probe.cpp.
#include "tools/formats/discover.hpp"

#include <json-c/json.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"
#include "core/base/json.hpp"
#include "core/power/signals.hpp"
#include "core/base/keys.hpp"
#include "core/base/text.hpp"

namespace m2g {

namespace {

constexpr const char* kNodeSchema = "m2g.node/v1";

using Json = std::unique_ptr<json_object, decltype(&json_object_put)>;

json_object* str_or_null(const std::string& s) { return s.empty() ? nullptr : json_object_new_string(s.c_str()); }
json_object* int_or_null(long long v, long long unknown) { return v == unknown ? nullptr : json_object_new_int64(v); }
json_object* num_or_null(double v) { return v < 0 ? nullptr : json_object_new_double(v); }

json_object* source_json(const SourceStatus& s)
{
    json_object* o = json_object_new_object();
    json_object_object_add(o, "ok", json_object_new_boolean(s.ok));
    json_object_object_add(o, "detail", json_object_new_string(s.detail.c_str()));
    return o;
}

std::string gpu_label(const GpuFacts& g)
{
    return "GPU " + std::to_string(g.index) + (g.pci_bus_id.empty() ? "" : " (" + g.pci_bus_id + ")");
}

// ---- reading m2g.node/v1 ----------------------------------------------------------

class Reader {
  public:
    explicit Reader(std::string file) : file_(std::move(file)) {}

    [[noreturn]] void fail(const std::string& path, const std::string& what) const
    {
        throw ParseError(file_ + ": " + (path.empty() ? std::string("top level") : path) + ": " + what);
    }
    json_object* get(json_object* o, const char* key) const
    {
        json_object* v = nullptr;
        return json_object_object_get_ex(o, key, &v) ? v : nullptr;
    }
    json_object* object(json_object* o, const char* key, const std::string& path, bool required) const
    {
        json_object* v = get(o, key);
        if (!v || json_object_get_type(v) == json_type_null) {
            if (required)
                fail(join(path, key), "missing; expected an object");
            return nullptr;
        }
        if (!json_object_is_type(v, json_type_object))
            fail(join(path, key), "expected an object");
        return v;
    }
    json_object* array(json_object* o, const char* key, const std::string& path) const
    {
        json_object* v = get(o, key);
        if (!v || json_object_get_type(v) == json_type_null)
            return nullptr;
        if (!json_object_is_type(v, json_type_array))
            fail(join(path, key), "expected an array");
        return v;
    }
    std::string str(json_object* o, const char* key, const std::string& path) const
    {
        json_object* v = get(o, key);
        if (!v || json_object_get_type(v) == json_type_null)
            return "";
        if (!json_object_is_type(v, json_type_string))
            fail(join(path, key), "expected a string or null");
        return json_object_get_string(v);
    }
    long long integer(json_object* o, const char* key, const std::string& path, long long unknown, long long lo,
                      long long hi) const
    {
        json_object* v = get(o, key);
        if (!v || json_object_get_type(v) == json_type_null)
            return unknown;
        if (!json_object_is_type(v, json_type_int))
            fail(join(path, key), "expected a whole number or null");
        const long long x = json_object_get_int64(v);
        if (x < lo || x > hi)
            fail(join(path, key),
                 std::to_string(x) + " is out of range; expected " + std::to_string(lo) + " to " + std::to_string(hi));
        return x;
    }
    double number(json_object* o, const char* key, const std::string& path) const
    {
        json_object* v = get(o, key);
        if (!v || json_object_get_type(v) == json_type_null)
            return -1;
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
            fail(join(path, key), "expected a number or null");
        const double x = json_object_get_double(v);
        if (!std::isfinite(x) || x < 0)
            fail(join(path, key), "expected a number, 0 or more");
        return x;
    }
    bool boolean(json_object* o, const char* key, const std::string& path) const
    {
        json_object* v = get(o, key);
        if (!v || !json_object_is_type(v, json_type_boolean))
            fail(join(path, key), "expected true or false");
        return json_object_get_boolean(v);
    }
    // `each(element, its path)` for every element of the array o[key] (none
    // when it is absent or null), each of which must be an object.
    template <class Each>
    void objects(json_object* o, const char* key, const std::string& path, Each each) const
    {
        json_object* list = array(o, key, path);
        for (size_t i = 0; list && i < json_object_array_length(list); ++i) {
            const std::string ip = join(path, key) + "[" + std::to_string(i) + "]";
            json_object* e = json_object_array_get_idx(list, i);
            if (!json_object_is_type(e, json_type_object))
                fail(ip, "expected an object");
            each(e, ip);
        }
    }
    SourceStatus source(json_object* o, const char* key) const
    {
        SourceStatus s;
        json_object* v = object(o, key, "", true);
        s.ok = boolean(v, "ok", key);
        s.detail = str(v, "detail", key);
        return s;
    }
    static std::string join(const std::string& path, const std::string& key)
    {
        return path.empty() ? key : path + "." + key;
    }

  private:
    std::string file_;
};

// ---- merge helpers --------------------------------------------------------------

// "s/REGEX/REPLACEMENT/" (any delimiter after the 's').
struct NameRule {
    bool set = false;
    std::regex re;
    std::string replacement;
};

NameRule parse_name_rule(const std::string& pattern)
{
    NameRule r;
    if (pattern.empty())
        return r;
    const std::string expect = "; expected s/REGEX/REPLACEMENT/ (e.g. 's/^gpu-(\\d+)$/node\\1/')";
    if (pattern.size() < 4 || pattern[0] != 's')
        throw Error("--slurm-names '" + pattern + "'" + expect);
    const char d = pattern[1];
    const size_t mid = pattern.find(d, 2);
    const size_t end = mid == std::string::npos ? std::string::npos : pattern.find(d, mid + 1);
    if (mid == std::string::npos || end == std::string::npos || end + 1 != pattern.size())
        throw Error("--slurm-names '" + pattern + "'" + expect);
    try {
        r.re = std::regex(pattern.substr(2, mid - 2), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
        throw Error("--slurm-names '" + pattern + "': the regular expression does not compile (" + e.what() + ")");
    }
    // sed's \1 and & to std::regex_replace's $1 and $&.
    const std::string rep = pattern.substr(mid + 1, end - mid - 1);
    for (size_t i = 0; i < rep.size(); ++i) {
        if (rep[i] == '\\' && i + 1 < rep.size() && rep[i + 1] >= '0' && rep[i + 1] <= '9') {
            r.replacement += '$';
            r.replacement += rep[++i];
        } else if (rep[i] == '\\' && i + 1 < rep.size()) {
            r.replacement += rep[++i] == '$' ? "$$" : std::string(1, rep[i]);
        } else if (rep[i] == '&') {
            r.replacement += "$&";
        } else if (rep[i] == '$') {
            r.replacement += "$$";
        } else {
            r.replacement += rep[i];
        }
    }
    r.set = true;
    return r;
}

// "0x0002C903..." and "0x2c903..." are the same GUID.
std::string lower_guid(const std::string& g)
{
    std::string h = g;
    if (h.size() > 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X'))
        h = h.substr(2);
    for (char& c : h)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    h.erase(0, std::min(h.find_first_not_of('0'), h.size() ? h.size() - 1 : 0));
    return h;
}

bool valid_name(const std::string& s)
{
    if (s.empty())
        return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
            return false;
    return true;
}

// A switch name m2g.conf accepts: NVIDIA/Mellanox descriptions read
// "MF0;leaf01:MQM8790/U1" (the system name between ';' and ':'); anything
// else keeps letters, digits, '-', '_' and '.', the rest becoming '-'.
std::string switch_name(const std::string& desc)
{
    std::string s = desc;
    const size_t semi = s.find(';');
    if (semi != std::string::npos) {
        const size_t colon = s.find(':', semi + 1);
        s = s.substr(semi + 1, colon == std::string::npos ? std::string::npos : colon - semi - 1);
    }
    std::string out;
    for (char c : s)
        out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '-';
    while (!out.empty() && out.back() == '-')
        out.pop_back();
    while (!out.empty() && out.front() == '-')
        out.erase(out.begin());
    return out;
}

// Natural order: "n2" before "n10".


}  // namespace

std::vector<std::string> node_problems(const NodeFacts& f)
{
    // Ports: a link that is up but not active (init, armed) is a problem; a
    // port that is down may simply be uncabled (the second port of a
    // dual-port HCA, an unused Ethernet port), so "down" counts only when no
    // port of the node is active: the node has lost its network.
    std::vector<std::string> out;
    bool any_active = false;
    for (const HcaFacts& h : f.hcas)
        for (const PortFacts& p : h.ports)
            any_active = any_active || p.state == "active";
    for (const HcaFacts& h : f.hcas)
        for (const PortFacts& p : h.ports)
            if (p.state != "active" && (p.state != "down" || !any_active))
                out.push_back(h.name + " port " + std::to_string(p.port) + " " +
                              (p.state.empty() ? std::string("state unknown") : p.state));
    for (const GpuFacts& g : f.gpus) {
        // NVLinks: some up and some not, or fewer than all on a GPU of an
        // NVLink fabric (NVL72). A PCIe card without a bridge reports every
        // link down: that is its design, not a fault.
        const bool nvl_fabric = g.fabric_known && g.fabric_state == "completed";
        if (g.nvlinks > 0 && g.nvlinks_active >= 0 && g.nvlinks_active < g.nvlinks &&
            (g.nvlinks_active > 0 || nvl_fabric))
            out.push_back(gpu_label(g) + ": " + std::to_string(g.nvlinks - g.nvlinks_active) + " of " +
                          std::to_string(g.nvlinks) + " NVLinks inactive");
        if (g.fabric_known && g.fabric_state != "completed" && g.fabric_state != "not_supported")
            out.push_back(gpu_label(g) + ": NVLink fabric registration " +
                          (g.fabric_state.empty() ? std::string("state unknown") : g.fabric_state));
        else if (g.fabric_known && g.fabric_state == "completed" && !g.fabric_status.empty() &&
                 g.fabric_status != "success")
            out.push_back(gpu_label(g) + ": NVLink fabric registration failed: " + g.fabric_status);
        else if (!g.fabric_known && !g.fabric_status.empty() && g.fabric_state != "not_supported")
            out.push_back(gpu_label(g) + ": NVML fabric query failed: " + g.fabric_status);
    }
    return out;
}

namespace {

// What an agent can put into the signals feed (m2g.signals/v1).
json_object* signals_object(const NodeFacts& f, const std::vector<std::string>& problems)
{
    json_object* sig = json_object_new_object();
    json_object_object_add(sig, "schema", json_object_new_string(kw::kSigSchemaV1));
    json_object_object_add(sig, "generated_at", json_object_new_string(format_utc(f.generated_at).c_str()));
    json_object_object_add(sig, "source", json_object_new_string(("m2g discover node on " + f.hostname).c_str()));
    if (!problems.empty()) {
        json_object* health = json_object_new_object();
        json_object_object_add(health, "degraded", json_object_new_string(f.hostname.c_str()));
        json_object_object_add(sig, "health", health);
    }
    return sig;
}

constexpr int kJsonFlags = JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE;

}  // namespace

std::string node_signals_json(const NodeFacts& f)
{
    Json sig(signals_object(f, node_problems(f)), json_object_put);
    return std::string(json_object_to_json_string_ext(sig.get(), kJsonFlags)) + "\n";
}

std::string node_facts_json(const NodeFacts& f)
{
    Json root(json_object_new_object(), json_object_put);
    json_object* o = root.get();
    json_object_object_add(o, "schema", json_object_new_string(kNodeSchema));
    json_object_object_add(o, "hostname", json_object_new_string(f.hostname.c_str()));
    json_object_object_add(o, "generated_at", json_object_new_string(format_utc(f.generated_at).c_str()));
    json_object_object_add(o, "hwloc", source_json(f.hwloc));
    json_object* cpu = json_object_new_object();
    json_object_object_add(cpu, "packages", json_object_new_int(f.packages));
    json_object_object_add(cpu, "cores", json_object_new_int(f.cores));
    json_object_object_add(cpu, "pus", json_object_new_int(f.pus));
    json_object_object_add(cpu, "numa_nodes", json_object_new_int(f.numa_nodes));
    json_object_object_add(cpu, "memory_bytes", json_object_new_int64(static_cast<int64_t>(f.memory_bytes)));
    json_object_object_add(o, "cpu", cpu);
    json_object* gpus = json_object_new_array();
    for (const GpuFacts& g : f.gpus) {
        json_object* j = json_object_new_object();
        json_object_object_add(j, "index", int_or_null(g.index, -1));
        json_object_object_add(j, "pci_bus_id", str_or_null(g.pci_bus_id));
        json_object_object_add(j, "name", str_or_null(g.name));
        json_object_object_add(j, "uuid", str_or_null(g.uuid));
        json_object_object_add(j, "numa_node", int_or_null(g.numa_node, -1));
        json_object_object_add(j, "closest_nic", str_or_null(g.closest_nic));
        if (g.fabric_known || !g.fabric_state.empty() || !g.fabric_status.empty()) {
            json_object* fab = json_object_new_object();
            json_object_object_add(fab, "known", json_object_new_boolean(g.fabric_known));
            json_object_object_add(fab, "cluster_uuid", str_or_null(g.cluster_uuid));
            json_object_object_add(fab, "clique_id", json_object_new_int64(g.clique_id));
            json_object_object_add(fab, "state", str_or_null(g.fabric_state));
            json_object_object_add(fab, "status", str_or_null(g.fabric_status));
            json_object_object_add(j, "fabric", fab);
        } else {
            json_object_object_add(j, "fabric", nullptr);
        }
        json_object_object_add(j, "nvlinks", int_or_null(g.nvlinks, -1));
        json_object_object_add(j, "nvlinks_active", int_or_null(g.nvlinks_active, -1));
        json_object_object_add(j, "nvlink_gbps", num_or_null(g.nvlink_gbps));
        json_object_array_add(gpus, j);
    }
    json_object_object_add(o, "gpus", gpus);
    json_object_object_add(o, "ibverbs", source_json(f.ibverbs));
    json_object* hcas = json_object_new_array();
    for (const HcaFacts& h : f.hcas) {
        json_object* j = json_object_new_object();
        json_object_object_add(j, "name", json_object_new_string(h.name.c_str()));
        json_object_object_add(j, "node_guid", str_or_null(h.node_guid));
        json_object_object_add(j, "pci_bus_id", str_or_null(h.pci_bus_id));
        json_object_object_add(j, "numa_node", int_or_null(h.numa_node, -1));
        json_object* ports = json_object_new_array();
        for (const PortFacts& p : h.ports) {
            json_object* q = json_object_new_object();
            json_object_object_add(q, "port", json_object_new_int(p.port));
            json_object_object_add(q, "state", str_or_null(p.state));
            json_object_object_add(q, "link_layer", str_or_null(p.link_layer));
            json_object_object_add(q, "rate_gbps", json_object_new_double(p.rate_gbps));
            json_object_object_add(q, "gid", str_or_null(p.gid));
            json_object_object_add(q, "lid", json_object_new_int(p.lid));
            json_object_array_add(ports, q);
        }
        json_object_object_add(j, "ports", ports);
        json_object_array_add(hcas, j);
    }
    json_object_object_add(o, "hcas", hcas);
    json_object_object_add(o, "nvml", source_json(f.nvml));
    json_object_object_add(o, "driver_version", str_or_null(f.driver_version));
    const std::vector<std::string> problems = node_problems(f);
    json_object* pj = json_object_new_array();
    for (const std::string& p : problems)
        json_object_array_add(pj, json_object_new_string(p.c_str()));
    json_object_object_add(o, "problems", pj);
    json_object_object_add(o, "signals", signals_object(f, problems));
    return std::string(json_object_to_json_string_ext(o, kJsonFlags)) + "\n";
}

std::string format_node_facts(const NodeFacts& f)
{
    std::string o;
    auto line = [&](const std::string& k, const std::string& v) { o += k + std::string(k.size() < 10 ? 10 - k.size() : 1, ' ') + v + "\n"; };
    auto status = [](const SourceStatus& s) { return s.ok ? std::string("ok") : s.detail.empty() ? "unavailable" : s.detail; };
    line("host:", f.hostname + " at " + format_utc(f.generated_at));
    line("cpu:", std::to_string(f.packages) + " packages, " + std::to_string(f.cores) + " cores, " +
                     std::to_string(f.pus) + " PUs, " + std::to_string(f.numa_nodes) + " NUMA nodes, " +
                     general(static_cast<double>(f.memory_bytes) / (1ULL << 30)) + " GiB (hwloc: " + status(f.hwloc) + ")");
    line("gpus:", std::to_string(f.gpus.size()) + " (NVML: " + status(f.nvml) +
                      (f.driver_version.empty() ? std::string() : ", driver " + f.driver_version) + ")");
    for (const GpuFacts& g : f.gpus) {
        std::string v = gpu_label(g) + (g.name.empty() ? "" : " " + g.name) + ": NUMA " +
                        (g.numa_node < 0 ? std::string("?") : std::to_string(g.numa_node)) + ", closest NIC " +
                        (g.closest_nic.empty() ? std::string("none") : g.closest_nic);
        if (g.fabric_known)
            v += ", fabric " + (g.cluster_uuid.empty() ? std::string("?") : g.cluster_uuid) + " clique " +
                 std::to_string(g.clique_id) + " (" + g.fabric_state + ")";
        else
            v += ", fabric unknown";
        if (g.nvlinks >= 0)
            v += ", NVLinks " + std::to_string(g.nvlinks_active) + "/" + std::to_string(g.nvlinks) + " active";
        if (g.nvlink_gbps > 0)
            v += ", " + general(g.nvlink_gbps) + " Gb/s";
        line("", v);
    }
    line("hcas:", std::to_string(f.hcas.size()) + " (ibverbs: " + status(f.ibverbs) + ")");
    for (const HcaFacts& h : f.hcas) {
        std::string v = h.name + (h.node_guid.empty() ? "" : " " + h.node_guid) +
                        (h.numa_node < 0 ? std::string() : ", NUMA " + std::to_string(h.numa_node));
        for (const PortFacts& p : h.ports)
            v += "; port " + std::to_string(p.port) + " " + p.state + " " + p.link_layer +
                 (p.rate_gbps > 0 ? " " + general(p.rate_gbps) + " Gb/s" : std::string());
        line("", v);
    }
    const std::vector<std::string> problems = node_problems(f);
    line("problems:", problems.empty() ? std::string("none") : std::to_string(problems.size()));
    for (const std::string& p : problems)
        line("", p);
    return o;
}

NodeFacts parse_node_facts(const std::string& text, const std::string& file)
{
    const JsonPtr root = json_parse(text, file, "the output of `m2g discover node --json`");
    json_object* raw = root.get();
    Reader r(file);
    if (!json_object_is_type(raw, json_type_object))
        r.fail("", "expected an object (schema \"" + std::string(kNodeSchema) + "\")");
    if (r.str(raw, "schema", "") != kNodeSchema)
        r.fail("schema", "\"" + r.str(raw, "schema", "") + "\" is not supported; accepted: \"" + kNodeSchema + "\"");
    NodeFacts f;
    f.hostname = r.str(raw, "hostname", "");
    if (!valid_name(f.hostname))
        r.fail("hostname", "'" + f.hostname + "': expected a host name (letters, digits, '-', '_', '.')");
    const std::string gen = r.str(raw, "generated_at", "");
    if (!gen.empty())
        f.generated_at = parse_signal_time(gen, file + ": generated_at");
    f.hwloc = r.source(raw, "hwloc");
    f.ibverbs = r.source(raw, "ibverbs");
    f.nvml = r.source(raw, "nvml");
    f.driver_version = r.str(raw, "driver_version", "");
    if (json_object* cpu = r.object(raw, "cpu", "", false)) {
        f.packages = static_cast<int>(r.integer(cpu, "packages", "cpu", 0, 0, 1 << 20));
        f.cores = static_cast<int>(r.integer(cpu, "cores", "cpu", 0, 0, 1 << 24));
        f.pus = static_cast<int>(r.integer(cpu, "pus", "cpu", 0, 0, 1 << 24));
        f.numa_nodes = static_cast<int>(r.integer(cpu, "numa_nodes", "cpu", 0, 0, 1 << 20));
        f.memory_bytes = static_cast<uint64_t>(r.integer(cpu, "memory_bytes", "cpu", 0, 0, INT64_MAX));
    }
    r.objects(raw, "gpus", "", [&](json_object* j, const std::string& path) {
        GpuFacts g;
        g.index = static_cast<int>(r.integer(j, "index", path, -1, 0, 1 << 16));  // null: NVML did not list it
        g.pci_bus_id = r.str(j, "pci_bus_id", path);
        g.name = r.str(j, "name", path);
        g.uuid = r.str(j, "uuid", path);
        g.numa_node = static_cast<int>(r.integer(j, "numa_node", path, -1, 0, 1 << 20));
        g.closest_nic = r.str(j, "closest_nic", path);
        if (json_object* fab = r.object(j, "fabric", path, false)) {
            const std::string fp = path + ".fabric";
            g.fabric_known = r.get(fab, "known") ? r.boolean(fab, "known", fp) : true;
            g.cluster_uuid = r.str(fab, "cluster_uuid", fp);
            g.clique_id = static_cast<uint32_t>(r.integer(fab, "clique_id", fp, 0, 0, UINT32_MAX));
            g.fabric_state = r.str(fab, "state", fp);
            g.fabric_status = r.str(fab, "status", fp);
        }
        g.nvlinks = static_cast<int>(r.integer(j, "nvlinks", path, -1, 0, 1024));
        g.nvlinks_active = static_cast<int>(r.integer(j, "nvlinks_active", path, -1, 0, 1024));
        if (g.nvlinks >= 0 && g.nvlinks_active > g.nvlinks)
            r.fail(path + ".nvlinks_active", std::to_string(g.nvlinks_active) + " is more than nvlinks (" +
                                                 std::to_string(g.nvlinks) + ")");
        g.nvlink_gbps = r.number(j, "nvlink_gbps", path);
        f.gpus.push_back(std::move(g));
    });
    r.objects(raw, "hcas", "", [&](json_object* j, const std::string& path) {
        HcaFacts h;
        h.name = r.str(j, "name", path);
        if (h.name.empty())
            r.fail(path + ".name", "missing; expected the device name (e.g. mlx5_0)");
        h.node_guid = r.str(j, "node_guid", path);
        h.pci_bus_id = r.str(j, "pci_bus_id", path);
        h.numa_node = static_cast<int>(r.integer(j, "numa_node", path, -1, 0, 1 << 20));
        r.objects(j, "ports", path, [&](json_object* q, const std::string& pp) {
            PortFacts p;
            p.port = static_cast<int>(r.integer(q, "port", pp, 0, 1, 255));
            if (p.port == 0)
                r.fail(pp + ".port", "missing; expected the port number, 1 or more");
            p.state = r.str(q, "state", pp);
            p.link_layer = r.str(q, "link_layer", pp);
            p.rate_gbps = std::max(0.0, r.number(q, "rate_gbps", pp));
            p.gid = r.str(q, "gid", pp);
            p.lid = static_cast<uint16_t>(r.integer(q, "lid", pp, 0, 0, 65535));
            h.ports.push_back(std::move(p));
        });
        f.hcas.push_back(std::move(h));
    });
    return f;
}

MergeResult write_cluster_conf(std::vector<LayoutHost> hosts, const LayoutOptions& o)
{
    MergeResult res;
    if (!valid_name(o.cluster_name))
        throw Error("cluster name '" + o.cluster_name + "': expected letters, digits, '-', '_' or '.'");
    std::set<std::string> seen;
    for (const LayoutHost& h : hosts) {
        if (!valid_name(h.name))
            throw Error("node name '" + h.name + "': expected letters, digits, '-', '_' or '.'");
        if (!seen.insert(h.name).second)
            throw Error("node " + h.name + " is given twice");
        for (const std::string& sw : h.path)
            if (!valid_name(sw))
                throw Error("node " + h.name + ": switch name '" + sw + "': expected letters, digits, '-', '_' or '.'");
    }
    std::sort(hosts.begin(), hosts.end(),
              [](const LayoutHost& a, const LayoutHost& b) { return natural_less(a.name, b.name); });

    // Domains in order of their first host, named nvl01, nvl02...
    std::vector<std::string> keys;
    std::map<std::string, int> domain_of_key;
    for (const LayoutHost& h : hosts)
        if (!h.domain_key.empty() && !domain_of_key.count(h.domain_key)) {
            domain_of_key[h.domain_key] = static_cast<int>(keys.size());
            keys.push_back(h.domain_key);
        }
    const size_t width = std::max<size_t>(2, std::to_string(keys.size()).size());
    std::vector<std::string> domain_name(keys.size()), domain_note(keys.size());
    std::vector<std::vector<int>> domain_hosts(keys.size());
    std::vector<double> domain_gbps(keys.size(), -1);
    for (size_t d = 0; d < keys.size(); ++d) {
        const std::string n = std::to_string(d + 1);
        domain_name[d] = "nvl" + std::string(width - std::min(n.size(), width), '0') + n;
    }
    std::vector<int> host_domain(hosts.size(), -1);
    for (size_t i = 0; i < hosts.size(); ++i) {
        if (hosts[i].domain_key.empty())
            continue;
        const int d = domain_of_key[hosts[i].domain_key];
        host_domain[i] = d;
        domain_hosts[d].push_back(static_cast<int>(i));
        domain_gbps[d] = std::max(domain_gbps[d], hosts[i].nvlink_gbps);
        if (domain_note[d].empty())
            domain_note[d] = hosts[i].domain_note;
    }
    std::set<std::string> names(seen);
    for (const std::string& d : domain_name)
        if (!names.insert(d).second)
            throw Error("node " + d + " has the name the merge gives an NVLink domain; rename it (--slurm-names)");

    // Each domain under the leaf most of its hosts use.
    std::vector<int> domain_host(keys.size(), -1);  // the host whose path the domain takes
    for (size_t d = 0; d < keys.size(); ++d) {
        std::map<std::string, int> count;
        for (int h : domain_hosts[d])
            if (!hosts[h].path.empty())
                ++count[hosts[h].path[0]];
        std::string best;
        int n = 0;
        for (const auto& [leaf, c] : count)
            if (c > n) {
                best = leaf;
                n = c;
            }
        for (int h : domain_hosts[d])
            if (!hosts[h].path.empty() && hosts[h].path[0] == best) {
                domain_host[d] = h;
                break;
            }
        if (count.size() > 1)
            res.warnings.push_back("NVLink domain " + domain_name[d] + " has hosts under " +
                                   std::to_string(count.size()) + " leaf switches; m2g.conf puts it under " + best +
                                   " (" + std::to_string(n) + " of its " + std::to_string(domain_hosts[d].size()) +
                                   " hosts)");
    }

    // A leaf holding domains cannot also hold single hosts (one kind of
    // children per switch): those hosts go under a sibling leaf with the
    // same parent, "<leaf>-nodes".
    {
        std::set<std::string> domain_leaves;
        for (size_t d = 0; d < keys.size(); ++d)
            if (domain_host[d] >= 0)
                domain_leaves.insert(hosts[domain_host[d]].path[0]);
        std::map<std::string, std::vector<std::string>> moved;
        for (size_t i = 0; i < hosts.size(); ++i)
            if (host_domain[i] < 0 && !hosts[i].path.empty() && domain_leaves.count(hosts[i].path[0])) {
                moved[hosts[i].path[0]].push_back(hosts[i].name);
                hosts[i].path[0] += "-nodes";
            }
        for (const auto& [leaf, list] : moved)
            res.warnings.push_back("leaf " + leaf + " holds NVLink domains and hosts outside any (" +
                                   hostlist_compress(list) + "); m2g.conf takes one kind per switch, so those "
                                   "hosts are under " + leaf + "-nodes, a leaf beside it");
    }

    // Switches by level; each switch's parent is the next name on the paths
    // through it (the first one seen when paths disagree).
    std::vector<std::vector<std::string>> level_names;  // in order of first appearance
    std::map<std::string, int> level_of;
    std::map<std::string, std::string> parent;
    auto add_path = [&](const std::vector<std::string>& path) {
        for (size_t k = 0; k < path.size(); ++k) {
            auto [it, fresh] = level_of.emplace(path[k], static_cast<int>(k));
            if (!fresh && it->second != static_cast<int>(k))
                throw Error("switch " + path[k] + " is at level " + std::to_string(it->second + 1) + " on one path "
                            "and level " + std::to_string(k + 1) + " on another; a switch has one level");
            if (fresh) {
                if (level_names.size() <= k)
                    level_names.resize(k + 1);
                level_names[k].push_back(path[k]);
                if (names.count(path[k]))
                    throw Error("switch " + path[k] + " has the name of a node or NVLink domain; names must differ");
            }
            if (k + 1 < path.size()) {
                auto [pit, pfresh] = parent.emplace(path[k], path[k + 1]);
                if (!pfresh && pit->second != path[k + 1])
                    res.warnings.push_back("switch " + path[k] + " is under both " + pit->second + " and " +
                                           path[k + 1] + "; m2g.conf, like Slurm's topology/tree, keeps " +
                                           pit->second);
            }
        }
    };
    for (size_t i = 0; i < hosts.size(); ++i)
        if (host_domain[i] < 0)
            add_path(hosts[i].path);
    for (size_t d = 0; d < keys.size(); ++d)
        if (domain_host[d] >= 0)
            add_path(hosts[domain_host[d]].path);
    for (auto& lvl : level_names)
        std::sort(lvl.begin(), lvl.end(), natural_less);

    // Write it.
    std::string c = o.header;
    c += "ClusterName=" + o.cluster_name + "\n\n";
    for (const LayoutHost& h : hosts) {
        c += "NodeName=" + h.name + " Gpus=" + std::to_string(h.gpus);
        if (h.nics > 0)
            c += " Nics=" + std::to_string(h.nics);
        if (h.nic_gbps > 0)
            c += " NicGbps=" + general(h.nic_gbps);
        c += "\n";
    }
    if (!keys.empty())
        c += "\n";
    for (size_t d = 0; d < keys.size(); ++d) {
        std::vector<std::string> members;
        for (int h : domain_hosts[d])
            members.push_back(hosts[h].name);
        c += "DomainName=" + domain_name[d] + " Nodes=" + hostlist_compress(members) + " Size=" +
             std::to_string(members.size());
        if (domain_gbps[d] > 0)
            c += " NVLinkGbps=" + general(domain_gbps[d]);
        if (!domain_note[d].empty())
            c += "  # " + domain_note[d];
        c += "\n";
    }
    std::set<std::string> written;
    for (size_t l = 0; l < level_names.size(); ++l) {
        if (l == 0 && !level_names[0].empty())
            c += "\n";
        for (const std::string& sw : level_names[l]) {
            std::string line =
                "SwitchName=" + sw + " Level=" + to_string(static_cast<SwitchLevel>(std::min<size_t>(l, 2)));
            if (l == 0) {
                std::vector<std::string> doms, loose;
                for (size_t d = 0; d < keys.size(); ++d)
                    if (domain_host[d] >= 0 && hosts[domain_host[d]].path[0] == sw)
                        doms.push_back(domain_name[d]);
                for (size_t i = 0; i < hosts.size(); ++i)
                    if (host_domain[i] < 0 && !hosts[i].path.empty() && hosts[i].path[0] == sw)
                        loose.push_back(hosts[i].name);
                if (doms.empty() && loose.empty())
                    continue;
                line += !doms.empty() ? " Domains=" + hostlist_compress(doms) : " Nodes=" + hostlist_compress(loose);
            } else {
                std::vector<std::string> kids;
                for (const std::string& below : level_names[l - 1]) {
                    auto it = parent.find(below);
                    if (it != parent.end() && it->second == sw && written.count(below))
                        kids.push_back(below);
                }
                if (kids.empty())
                    continue;  // nothing of ours below it
                line += " Switches=" + hostlist_compress(kids);
            }
            auto up = o.uplink_gbps.find(sw);
            if (up != o.uplink_gbps.end() && up->second > 0)
                line += " LinkGbps=" + general(up->second);
            c += line + "\n";
            written.insert(sw);
        }
    }
    // What we wrote must load.
    try {
        build_model(parse_m2g_conf(c, "the merged m2g.conf"));
    } catch (const Error& e) {
        throw Error(std::string("the merged m2g.conf does not load (a bug in m2g): ") + e.what());
    }
    res.conf = std::move(c);
    return res;
}

namespace {

// ---- merge_discovery's steps ----------------------------------------------------

// A host to merge, under its Slurm name.
struct Host {
    const NodeFacts* f;
    std::string name;     // Slurm NodeName
    std::string domain_key;  // cluster UUID + clique, "" none
    int nics = 0;
    double nic_gbps = 0;
};

// A group of switches in the tree m2g.conf describes.
struct Sw {
    std::string name;
    int level = 0;
    std::vector<int> children;  // leaves: host indices; above: switch group indices
    double up_gbps = 0;
};

// The NVLink domain a host's GPUs are in (cluster UUID + clique), "" none.
std::string nvlink_domain_key(const NodeFacts& f, std::vector<std::string>& warnings)
{
    std::map<std::string, int> keys;
    for (const GpuFacts& g : f.gpus)
        if (g.fabric_known && g.fabric_state == "completed" && !g.cluster_uuid.empty())
            ++keys[g.cluster_uuid + "/" + std::to_string(g.clique_id)];
    if (keys.size() > 1) {
        std::string list;
        for (const auto& [k, n] : keys)
            list += (list.empty() ? "" : ", ") + k + " (" + std::to_string(n) + " GPUs)";
        throw Error("host " + f.hostname + ": its GPUs are in " + std::to_string(keys.size()) +
                    " NVLink cliques (" + list + "); one host belongs to one NVLink domain");
    }
    for (const GpuFacts& g : f.gpus)
        if (keys.empty() && g.fabric_known && (g.fabric_state == "in_progress" || g.fabric_state == "not_started")) {
            warnings.push_back("host " + f.hostname + ": NVLink fabric registration " + g.fabric_state +
                               " on " + gpu_label(g) + "; it is left out of any NVLink domain: run "
                               "discover node again once the fabric manager has finished");
            break;
        }
    return keys.empty() ? std::string() : keys.begin()->first;
}

// NICs: the compute fabric's ports, up or not (a port down now is a
// health fact, not a smaller node): InfiniBand ports, or Ethernet
// (RoCE) ports when the node has no InfiniBand.
void count_nics(const NodeFacts& f, Host& h)
{
    bool has_ib = false;
    for (const HcaFacts& hca : f.hcas)
        for (const PortFacts& p : hca.ports)
            has_ib = has_ib || p.link_layer == "infiniband";
    std::map<double, int> rates;
    for (const HcaFacts& hca : f.hcas)
        for (const PortFacts& p : hca.ports)
            if (p.link_layer == (has_ib ? "infiniband" : "ethernet")) {
                ++h.nics;
                if (p.state == "active" && p.rate_gbps > 0)
                    ++rates[p.rate_gbps];
            }
    int best = 0;
    for (const auto& [rate, n] : rates)
        if (n > best || (n == best && rate > h.nic_gbps)) {
            best = n;
            h.nic_gbps = rate;
        }
}

// Hosts, Slurm names, in natural order.
std::vector<Host> read_hosts(const std::vector<NodeFacts>& nodes, const NameRule& rule,
                             std::vector<std::string>& warnings)
{
    std::vector<Host> hosts;
    std::set<std::string> seen_host, seen_name;
    for (const NodeFacts& f : nodes) {
        if (!seen_host.insert(f.hostname).second)
            throw Error("host " + f.hostname + " is given twice; give each node's facts once");
        Host h{&f, f.hostname, "", 0, 0};
        if (rule.set)
            h.name = std::regex_replace(f.hostname, rule.re, rule.replacement, std::regex_constants::format_first_only);
        if (!valid_name(h.name))
            throw Error("host " + f.hostname + ": --slurm-names makes it '" + h.name +
                        "', not a valid node name (letters, digits, '-', '_', '.')");
        if (!seen_name.insert(h.name).second)
            throw Error("host " + f.hostname + ": Slurm name " + h.name + " is already used by another host; "
                        "check --slurm-names");
        h.domain_key = nvlink_domain_key(f, warnings);
        count_nics(f, h);
        hosts.push_back(std::move(h));
    }
    std::sort(hosts.begin(), hosts.end(), [](const Host& a, const Host& b) { return natural_less(a.name, b.name); });
    return hosts;
}

// The switch tree over the hosts: each host's leaf, and the switch groups
// level by level.
struct SwitchTree {
    std::vector<int> host_leaf;           // index into leaves, -1 none
    std::vector<std::vector<Sw>> levels;  // levels[0]: leaves, [1]: spines, [2]: cores
};

// Reads the switch tree from the fabric.
class TreeReader {
  public:
    TreeReader(const Fabric& fabric, const std::vector<Host>& hosts, std::vector<std::string>& warnings)
        : fabric_(fabric), hosts_(hosts), warnings_(warnings)
    {
        tree_.host_leaf.assign(hosts.size(), -1);
        for (size_t i = 0; i < fabric.nodes.size(); ++i)
            node_by_guid_[fabric.nodes[i].guid] = static_cast<int>(i);
    }

    SwitchTree read()
    {
        find_host_cas();
        level_switches();
        join_levels_above(hang_hosts_on_leaves());
        return std::move(tree_);
    }

  private:
    // The fabric node a link leads to, -1 when it is not in the fabric.
    int peer(const IbPortLink& l) const
    {
        auto p = node_by_guid_.find(l.peer_guid);
        return p == node_by_guid_.end() ? -1 : p->second;
    }

    // Hosts to their CAs: by HCA node GUID (what ibverbs and the fabric
    // both see), else by the CA's description (its first word, cut at
    // the first '.'), which sites set to the host name.
    void find_host_cas()
    {
        std::map<std::string, int> host_by_guid, host_by_name;
        for (size_t i = 0; i < hosts_.size(); ++i) {
            for (const HcaFacts& hca : hosts_[i].f->hcas)
                if (!hca.node_guid.empty())
                    host_by_guid[lower_guid(hca.node_guid)] = static_cast<int>(i);
            host_by_name[hosts_[i].f->hostname] = static_cast<int>(i);
        }
        cas_.resize(hosts_.size());
        for (size_t n = 0; n < fabric_.nodes.size(); ++n) {
            const IbNode& ca = fabric_.nodes[n];
            if (ca.is_switch)
                continue;
            auto g = host_by_guid.find(lower_guid(ca.guid));
            if (g != host_by_guid.end()) {
                cas_[g->second].push_back(static_cast<int>(n));
                continue;
            }
            const std::string shortname = ca.name.substr(0, ca.name.find('.'));
            auto h = host_by_name.find(shortname);
            if (!shortname.empty() && h != host_by_name.end())
                cas_[h->second].push_back(static_cast<int>(n));
        }
    }

    bool has_host_cas(int sw) const
    {
        for (const IbPortLink& l : fabric_.nodes[sw].links) {
            const int p = peer(l);
            if (p >= 0 && !fabric_.nodes[p].is_switch && !fabric_.nodes[p].name.empty())
                return true;
        }
        return false;
    }

    // Levels from our hosts up: 1 for switches cabled to their CAs, k+1
    // for switches cabled to level k. Above level 2 a switch with hosts
    // of its own is a leaf whose hosts we were not given, not a core.
    void level_switches()
    {
        level_.assign(fabric_.nodes.size(), 0);
        std::vector<int> frontier;
        for (size_t i = 0; i < hosts_.size(); ++i)
            for (int ca : cas_[i])
                for (const IbPortLink& l : fabric_.nodes[ca].links) {
                    const int p = peer(l);
                    if (p >= 0 && fabric_.nodes[p].is_switch && !level_[p]) {
                        level_[p] = 1;
                        frontier.push_back(p);
                    }
                }
        for (int k = 1; !frontier.empty(); ++k) {
            std::vector<int> next;
            for (int sw : frontier)
                for (const IbPortLink& l : fabric_.nodes[sw].links) {
                    const int p = peer(l);
                    if (p < 0 || !fabric_.nodes[p].is_switch || level_[p])
                        continue;
                    if (k + 1 > 2 && has_host_cas(p))
                        continue;
                    level_[p] = k + 1;
                    next.push_back(p);
                }
            frontier = std::move(next);
        }
    }

    int level_of(int n) const { return n >= 0 && n < static_cast<int>(level_.size()) ? level_[n] : 0; }

    // Leaves: each host under the leaf switch with most of its links.
    // Returns fabric switch index -> leaf index.
    std::map<int, int> hang_hosts_on_leaves()
    {
        std::map<int, int> leaf_index;
        std::vector<std::vector<Sw>>& levels = tree_.levels;
        levels.emplace_back();
        for (size_t i = 0; i < hosts_.size(); ++i) {
            if (cas_[i].empty()) {
                warnings_.push_back("host " + hosts_[i].f->hostname + " has no HCA in the fabric (matched by HCA "
                                    "node GUID, else by a CA description starting with the host name); it is "
                                    "under no switch in m2g.conf");
                continue;
            }
            std::map<int, int> count;  // fabric leaf switch -> links
            for (int ca : cas_[i])
                for (const IbPortLink& l : fabric_.nodes[ca].links) {
                    const int p = peer(l);
                    if (p >= 0 && fabric_.nodes[p].is_switch && level_of(p) == 1)
                        ++count[p];
                }
            if (count.empty()) {
                warnings_.push_back("host " + hosts_[i].f->hostname + " is cabled to no leaf switch");
                continue;
            }
            int best = -1, n = 0;
            for (const auto& [sw, c] : count)
                if (c > n) {
                    best = sw;
                    n = c;
                }
            if (count.size() > 1)
                warnings_.push_back("host " + hosts_[i].f->hostname + " is cabled to " +
                                    std::to_string(count.size()) + " leaf switches (rail-optimised?); m2g.conf "
                                    "puts it under " + switch_name(fabric_.nodes[best].name) +
                                    ", the one with most of its links");
            auto [lit, added] = leaf_index.emplace(best, static_cast<int>(levels[0].size()));
            if (added)
                levels[0].push_back(Sw{switch_name(fabric_.nodes[best].name), 1, {}, 0});
            tree_.host_leaf[i] = lit->second;
            levels[0][lit->second].children.push_back(static_cast<int>(i));
        }
        return leaf_index;
    }

    // Levels above: switches of level k+1 linked to groups of level k;
    // those sharing a child are joined into one group (a fat tree's
    // spines all reach every leaf: Slurm's tree model has one parent).
    // `below`: the leaves' fabric switch -> group index.
    void join_levels_above(std::map<int, int> below)
    {
        for (int lvl = 2;; ++lvl) {
            const std::map<int, std::set<int>> up_children = uplinks(below, lvl);
            if (up_children.empty())
                break;
            below = join_upper(lvl, up_children);
            if (tree_.levels.back().size() <= 1)
                break;
        }
    }

    // The switches of level `lvl` above the top level's groups (`below`:
    // fabric switch -> group index), each with the groups it reaches; sets
    // each of those groups' uplink Gb/s.
    std::map<int, std::set<int>> uplinks(const std::map<int, int>& below, int lvl)
    {
        std::map<int, std::set<int>> up_children;  // upper fabric switch -> lower groups
        std::map<int, double> group_up;            // lower group -> uplink Gb/s
        for (const auto& [sw, grp] : below)
            for (const IbPortLink& l : fabric_.nodes[sw].links) {
                const int p = peer(l);
                if (p < 0 || level_of(p) != lvl)
                    continue;
                up_children[p].insert(grp);
                group_up[grp] += l.rate_gbps;
            }
        for (auto& [grp, gbps] : group_up)
            tree_.levels.back()[grp].up_gbps = gbps;
        return up_children;
    }

    // The groups of level `lvl`, added to the tree; returns its fabric
    // switch -> group index.
    std::map<int, int> join_upper(int lvl, const std::map<int, std::set<int>>& up_children)
    {
        // Union-find over the upper switches through shared children.
        std::map<int, int> parent;  // upper switch -> representative
        std::function<int(int)> find = [&](int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); };
        for (const auto& [sw, kids] : up_children)
            parent[sw] = sw;
        std::map<int, int> owner;  // lower group -> first upper switch seen
        for (const auto& [sw, kids] : up_children)
            for (int k : kids) {
                auto [it, fresh] = owner.emplace(k, sw);
                if (!fresh)
                    parent[find(sw)] = find(it->second);
            }
        std::map<int, int> group_of_root;
        std::map<int, int> next;
        std::vector<Sw> upper;
        std::map<int, std::vector<std::string>> joined;
        for (const auto& [sw, kids] : up_children) {
            const int root = find(sw);
            auto [it, fresh] = group_of_root.emplace(root, static_cast<int>(upper.size()));
            if (fresh)
                upper.push_back(Sw{switch_name(fabric_.nodes[sw].name), lvl, {}, 0});
            next[sw] = it->second;
            joined[it->second].push_back(switch_name(fabric_.nodes[sw].name));
            for (int k : kids)
                if (std::find(upper[it->second].children.begin(), upper[it->second].children.end(), k) ==
                    upper[it->second].children.end())
                    upper[it->second].children.push_back(k);
        }
        for (auto& [g, names] : joined)
            if (names.size() > 1) {
                std::sort(names.begin(), names.end(), natural_less);
                upper[g].name = names.front();
                std::string list;
                for (const std::string& n : names)
                    list += (list.empty() ? "" : ", ") + n;
                warnings_.push_back("switches " + list + " share the switches below them (a fat tree); "
                                    "m2g.conf, like Slurm's topology/tree, joins them as " + names.front());
            }
        tree_.levels.push_back(std::move(upper));
        return next;
    }

    const Fabric& fabric_;
    const std::vector<Host>& hosts_;
    std::vector<std::string>& warnings_;
    std::map<std::string, int> node_by_guid_;
    std::vector<std::vector<int>> cas_;  // per host: its CAs' fabric node indices
    std::vector<int> level_;             // per fabric node: 1 leaf, 2 above... 0 none
    SwitchTree tree_;
};

// Per level: group -> parent group (-1 none).
std::vector<std::vector<int>> parent_groups(const std::vector<std::vector<Sw>>& levels)
{
    std::vector<std::vector<int>> up_group(levels.size());
    for (size_t l = 0; l + 1 < levels.size(); ++l) {
        up_group[l].assign(levels[l].size(), -1);
        for (size_t g = 0; g < levels[l + 1].size(); ++g)
            for (int k : levels[l + 1][g].children)
                if (up_group[l][k] < 0)
                    up_group[l][k] = static_cast<int>(g);
    }
    return up_group;
}

// Switch names that collide with a host get a suffix.
void name_switches_apart(std::vector<std::vector<Sw>>& levels, const std::vector<Host>& hosts)
{
    std::set<std::string> used;
    for (const Host& h : hosts)
        used.insert(h.name);
    for (auto& lvl : levels)
        for (Sw& sw : lvl) {
            if (sw.name.empty())
                sw.name = "switch";
            std::string n = sw.name;
            for (int k = 2; used.count(n); ++k)
                n = sw.name + "-" + std::to_string(k);
            sw.name = n;
            used.insert(n);
        }
}

LayoutOptions layout_options(const MergeOptions& o, size_t node_count, bool with_fabric,
                             const std::vector<std::vector<Sw>>& levels)
{
    LayoutOptions lo;
    lo.cluster_name = o.cluster_name;
    lo.header = "# m2g.conf written by `m2g discover merge` from " + std::to_string(node_count) + " node" +
                (node_count == 1 ? "" : "s") + (with_fabric ? " and the ibnetdiscover fabric" : "") + ".\n";
    for (const auto& lvl : levels)
        for (const Sw& sw : lvl)
            lo.uplink_gbps[sw.name] = sw.up_gbps;
    return lo;
}

std::vector<LayoutHost> layout_hosts(const std::vector<Host>& hosts, const SwitchTree& tree,
                                     const std::vector<std::vector<int>>& up_group)
{
    const std::vector<std::vector<Sw>>& levels = tree.levels;
    std::vector<LayoutHost> layout;
    for (size_t i = 0; i < hosts.size(); ++i) {
        LayoutHost lh;
        lh.name = hosts[i].name;
        lh.gpus = static_cast<int>(hosts[i].f->gpus.size());
        lh.nics = hosts[i].nics;
        lh.nic_gbps = hosts[i].nic_gbps;
        lh.domain_key = hosts[i].domain_key;
        if (!lh.domain_key.empty())
            lh.domain_note = "cluster UUID/clique " + lh.domain_key;
        for (const GpuFacts& g : hosts[i].f->gpus)
            lh.nvlink_gbps = std::max(lh.nvlink_gbps, g.nvlink_gbps);
        for (int g = tree.host_leaf[i], l = 0; g >= 0 && l < static_cast<int>(levels.size()); ++l) {
            lh.path.push_back(levels[l][g].name);
            g = l < static_cast<int>(up_group.size()) && g < static_cast<int>(up_group[l].size()) ? up_group[l][g] : -1;
        }
        layout.push_back(std::move(lh));
    }
    return layout;
}

}  // namespace

MergeResult merge_discovery(const std::vector<NodeFacts>& nodes, const Fabric* fabric, const MergeOptions& o)
{
    MergeResult res;
    if (nodes.empty())
        throw Error("no node facts to merge; give the JSON files `m2g discover node --json` wrote on each node");
    if (!valid_name(o.cluster_name))
        throw Error("--cluster-name '" + o.cluster_name + "': expected letters, digits, '-', '_' or '.'");
    const NameRule rule = parse_name_rule(o.slurm_names);

    const std::vector<Host> hosts = read_hosts(nodes, rule, res.warnings);
    // The fabric: each host's leaf, then the switch tree above the leaves.
    SwitchTree tree{std::vector<int>(hosts.size(), -1), {}};
    if (fabric)
        tree = TreeReader(*fabric, hosts, res.warnings).read();
    // Each host's path up the switch tree: its leaf, then each group above.
    const std::vector<std::vector<int>> up_group = parent_groups(tree.levels);
    name_switches_apart(tree.levels, hosts);
    const LayoutOptions lo = layout_options(o, nodes.size(), fabric != nullptr, tree.levels);
    MergeResult out = write_cluster_conf(layout_hosts(hosts, tree, up_group), lo);
    res.warnings.insert(res.warnings.end(), out.warnings.begin(), out.warnings.end());
    res.conf = std::move(out.conf);
    return res;
}

}  // namespace m2g
