// m2g core: described cluster state (JSON).
#include "core/model/cluster_state.hpp"

#include <json-c/json.h>

#include <memory>

#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"

namespace m2g {

namespace {

struct JsonDeleter {
    void operator()(json_object* o) const { json_object_put(o); }
};

std::vector<std::string> names_at(json_object* root, const char* key, const std::string& file)
{
    json_object* v = nullptr;
    if (!json_object_object_get_ex(root, key, &v) || json_object_is_type(v, json_type_null))
        return {};
    if (!json_object_is_type(v, json_type_string))
        throw ParseError(file + ": \"" + key + "\" must be a string holding a hostlist, e.g. \"r01n[01-04]\"");
    try {
        return hostlist_expand(json_object_get_string(v));
    } catch (const ParseError& e) {
        throw ParseError(file + ": \"" + key + "\": " + e.what());
    }
}

}  // namespace

DescribedState parse_state_json(const std::string& text, const std::string& file, const Model& m)
{
    json_tokener_error jerr = json_tokener_success;
    std::unique_ptr<json_object, JsonDeleter> root(json_tokener_parse_verbose(text.c_str(), &jerr));
    if (!root)
        throw ParseError(file + ": not valid JSON: " + json_tokener_error_desc(jerr));
    if (!json_object_is_type(root.get(), json_type_object))
        throw ParseError(file + ": expected a JSON object with keys busy, drained, degraded, nvlink_fault, over_limit");
    static const char* kKeys[] = {"busy", "drained", "degraded", "nvlink_fault", "over_limit"};
    json_object_object_foreach(root.get(), key, val)
    {
        (void)val;
        bool known = false;
        for (const char* k : kKeys)
            known = known || std::string(key) == k;
        if (!known)
            throw ParseError(file + ": unknown key \"" + key +
                             "\"; accepted: busy, drained, degraded, nvlink_fault, over_limit");
    }
    DescribedState s;
    s.usable.assign(m.nodes.size(), 1);
    auto node = [&](const std::string& name, const char* field) {
        const int i = m.find_node(name);
        if (i == kNone)
            throw ParseError(file + ": \"" + field + "\" names node " + name + ", which m2g.conf does not declare");
        return i;
    };
    auto domain = [&](const std::string& name, const char* field) {
        const int i = m.find_domain(name);
        if (i == kNone)
            throw ParseError(file + ": \"" + field + "\" names domain " + name + ", which m2g.conf does not define");
        return i;
    };
    for (const char* field : {"busy", "drained"})
        for (const auto& n : names_at(root.get(), field, file))
            s.usable[node(n, field)] = 0;
    for (const auto& n : names_at(root.get(), "degraded", file)) {
        s.health.node_degraded.resize(m.nodes.size());
        s.health.node_degraded[node(n, "degraded")] = 1;
    }
    for (const auto& d : names_at(root.get(), "nvlink_fault", file)) {
        s.health.domain_nvlink_fault.resize(m.domains.size());
        s.health.domain_nvlink_fault[domain(d, "nvlink_fault")] = 1;
    }
    for (const auto& d : names_at(root.get(), "over_limit", file)) {
        s.health.domain_over_limit.resize(m.domains.size());
        s.health.domain_over_limit[domain(d, "over_limit")] = 1;
    }
    return s;
}

DescribedState read_state_json(const std::string& path, const Model& m)
{
    return parse_state_json(read_text_file(path), path, m);
}

}  // namespace m2g
