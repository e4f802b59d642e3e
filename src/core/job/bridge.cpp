// m2g core: bridge-intents.json (see bridge.hpp and doc/slinky.md).
#include "core/job/bridge.hpp"

#include <json-c/json.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/base/keys.hpp"
#include "core/base/source.hpp"
#include "core/job/intent.hpp"

namespace m2g {

BridgeIntents parse_bridge_intents(const std::string& text, const std::string& what)
{
    JsonPtr root = json_parse_object(text, what);
    BridgeIntents doc;
    const std::string version = json_string_at(root.get(), "version", what, "");
    if (version != kw::kIntentsVersion)
        throw ParseError(what + ": version: '" + version + "'; expected " + kw::kIntentsVersion);
    json_object* at = json_member(root.get(), kw::kIntentsGeneratedAt);
    if (!at || !json_object_is_type(at, json_type_int))
        throw ParseError(what + ": generated_at: expected epoch seconds");
    doc.generated_at = json_object_get_int64(at);
    json_object* all = json_member(root.get(), kw::kIntentsPods);
    if (!all || !json_object_is_type(all, json_type_object))
        throw ParseError(what + ": pods: expected an object keyed namespace/pod");
    json_object_object_foreach(all, key, entry)
    {
        const std::string path = std::string("pods.") + key;
        if (!entry || !json_object_is_type(entry, json_type_object))
            throw ParseError(what + ": " + path + ": expected an object with env or error");
        BridgeIntent bi;
        bi.error = json_string_at(entry, kw::kIntentsError, what, path + ".");
        if (json_object* env = json_member(entry, kw::kIntentsEnv)) {
            if (!json_object_is_type(env, json_type_object))
                throw ParseError(what + ": " + path + ".env: expected an object of M2G_* variables");
            json_object_object_foreach(env, k, v)
            {
                if (std::string(k).rfind("M2G_", 0) != 0 || !v || !json_object_is_type(v, json_type_string))
                    throw ParseError(what + ": " + path + ".env." + k + ": expected an M2G_* variable with a string value");
                bi.env.emplace_back(k, json_object_get_string(v));
            }
            std::sort(bi.env.begin(), bi.env.end());
            // The values must be what spank_m2g itself would send.
            std::vector<std::string> lines;
            for (const auto& kv : bi.env)
                lines.push_back(kv.first + "=" + kv.second);
            try {
                decode_intent(lines);
            } catch (const Error& e) {
                throw ParseError(what + ": " + path + ".env: " + e.what());
            }
        } else if (bi.error.empty()) {
            throw ParseError(what + ": " + path + ": expected env or error");
        }
        doc.pods[key] = std::move(bi);
    }
    return doc;
}

std::vector<std::string> bridge_pods(const std::string& admin_comment)
{
    std::vector<std::string> out;
    if (admin_comment.empty() || admin_comment.front() != '{')
        return out;
    json_tokener* tok = json_tokener_new();
    json_object* o = json_tokener_parse_ex(tok, admin_comment.c_str(), static_cast<int>(admin_comment.size()) + 1);
    const bool ok = o && json_tokener_get_error(tok) == json_tokener_success;
    json_tokener_free(tok);
    JsonPtr holder(o);
    json_object* pods = nullptr;
    if (!ok || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, kw::kBridgeAdminCommentPods, &pods) ||
        !json_object_is_type(pods, json_type_array))
        return out;
    for (size_t i = 0; i < json_object_array_length(pods); ++i) {
        json_object* p = json_object_array_get_idx(pods, i);
        if (p && json_object_is_type(p, json_type_string))
            out.emplace_back(json_object_get_string(p));
    }
    return out;
}

BridgeResolution resolve_bridge_intent(const BridgeIntents& doc, const std::vector<std::string>& pods)
{
    BridgeResolution r;
    const std::string* first = nullptr;
    const BridgeIntent* agreed = nullptr;
    for (const std::string& pod : pods) {
        auto it = doc.pods.find(pod);
        if (it == doc.pods.end()) {
            r.unknown.push_back(pod);
            continue;
        }
        if (!it->second.error.empty()) {
            r.intent = BridgeIntent{{}, "pod " + pod + ": " + it->second.error};
            return r;
        }
        if (!agreed) {
            agreed = &it->second;
            first = &pod;
        } else if (it->second.env != agreed->env) {
            r.intent = BridgeIntent{{}, "pods " + *first + " and " + pod +
                                            " of one job ask for different m2g.slurm.net/* annotations; give every "
                                            "pod of the job the same ones"};
            return r;
        }
    }
    if (agreed)
        r.intent.env = agreed->env;
    return r;
}

std::shared_ptr<const BridgeIntents> BridgeIntentsFile::get(const std::string& path,
                                                         const std::function<void(const std::string&)>& log)
{
    struct stat st;
    std::string stamp;
    const int err = stat(path.c_str(), &st) == 0 ? 0 : errno;
    if (err == 0)
        stamp = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
                std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    std::lock_guard<std::mutex> lk(mu_);
    if (path != path_) {
        path_ = path;
        stamp_.clear();
        doc_.reset();
    }
    if (stamp == stamp_)
        return doc_;
    stamp_ = stamp;  // log a broken file once per change, not per job
    if (stamp.empty()) {
        if (log)
            log(std::string(kw::kBridgeIntentsFile) + "=" + path + ": cannot read it (" + std::strerror(err) + "); " +
                (doc_ ? "keeping the last one read" : "slurm-bridge jobs get m2g.conf's defaults"));
        return doc_;
    }
    try {
        doc_ = std::make_shared<const BridgeIntents>(parse_bridge_intents(read_text_file(path), path));
    } catch (const std::exception& e) {
        if (log)
            log(std::string(e.what()) + "; " +
                (doc_ ? "keeping the last good one" : "slurm-bridge jobs get m2g.conf's defaults"));
    }
    return doc_;
}

}  // namespace m2g
