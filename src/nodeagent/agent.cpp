// m2g-nodeagent without HTTP and NVML: see agent.hpp.
#include "nodeagent/agent.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

namespace m2g {
namespace nodeagent {

namespace {

using Json = std::unique_ptr<json_object, decltype(&json_object_put)>;

Json new_object() { return Json(json_object_new_object(), json_object_put); }

// A number of watts: integral ones as JSON integers ("300"), others as
// decimals ("312.5").
json_object* watts_json(unsigned mw)
{
    if (mw % 1000 == 0)
        return json_object_new_int64(mw / 1000);
    return json_object_new_double(static_cast<double>(mw) / 1000.0);
}

std::string to_text(json_object* o)
{
    return std::string(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) +
           "\n";
}

// Parses the whole text as one JSON value; nullptr with `err` set otherwise.
json_object* parse_whole(const std::string& text, std::string& err)
{
    json_tokener* tok = json_tokener_new();
    if (!tok) {
        err = "out of memory";
        return nullptr;
    }
    json_object* o = json_tokener_parse_ex(tok, text.c_str(), static_cast<int>(text.size()));
    json_tokener_error e = json_tokener_get_error(tok);
    if (!o && e == json_tokener_continue) {
        // A number at the very end needs to see the end of the text.
        o = json_tokener_parse_ex(tok, "", 1);
        e = json_tokener_get_error(tok);
    }
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!o || e != json_tokener_success) {
        if (o)
            json_object_put(o);
        err = e == json_tokener_continue ? "the text ends inside a JSON value" : json_tokener_error_desc(e);
        return nullptr;
    }
    for (size_t i = end; i < text.size(); ++i)
        if (!std::isspace(static_cast<unsigned char>(text[i])) && text[i] != '\0') {
            json_object_put(o);
            err = "text after the JSON value at byte " + std::to_string(i);
            return nullptr;
        }
    return o;
}

std::string excerpt(const std::string& s)
{
    std::string out;
    for (char c : s.substr(0, 40))
        out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
    return s.size() > 40 ? out + "..." : out;
}

std::string read_fd(int fd)
{
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0)
        out.append(buf, static_cast<size_t>(n));
    return out;
}

bool all_digits(const std::string& s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

const char* const kCapUsage = "expected a JSON object such as {\"limit_w\": 300} (watts per GPU, above 0)";

}  // namespace

// ---- pure helpers -----------------------------------------------------------------

uint32_t parse_job_id(const std::string& text)
{
    const std::string usage = "job id '" + excerpt(text) +
                              "' is not valid; expected a Slurm job id, a decimal number from 1 to 4294967293";
    if (!all_digits(text) || text.size() > 10)
        throw ParseError(usage);
    const unsigned long long v = std::stoull(text);
    if (v == 0 || v >= 0xfffffffeULL)
        throw ParseError(usage);
    return static_cast<uint32_t>(v);
}

double parse_cap_body(const std::string& body)
{
    if (body.find_first_not_of(" \t\r\n") == std::string::npos)
        throw ParseError(std::string("the request has no body; ") + kCapUsage);
    std::string err;
    Json o(parse_whole(body, err), json_object_put);
    if (!o)
        throw ParseError("the body is not JSON (" + err + "); " + kCapUsage);
    if (!json_object_is_type(o.get(), json_type_object))
        throw ParseError(std::string("the body is JSON but not an object; ") + kCapUsage);
    json_object* v = nullptr;
    if (!json_object_object_get_ex(o.get(), kKeyLimitW, &v))
        throw ParseError(std::string("the body has no \"limit_w\"; ") + kCapUsage);
    json_object_object_foreach(o.get(), key, val)
    {
        (void)val;
        if (std::strcmp(key, kKeyLimitW) != 0)
            throw ParseError("unknown key \"" + excerpt(key) + "\" in the body; " + kCapUsage);
    }
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        throw ParseError(std::string("\"limit_w\" must be a number of watts, not ") +
                         json_type_to_name(json_object_get_type(v)) + "; " + kCapUsage);
    const double w = json_object_get_double(v);
    if (!std::isfinite(w) || w <= 0 || w > 100000)
        throw ParseError("\"limit_w\": " + excerpt(json_object_to_json_string(v)) +
                         " is not a GPU power limit; expected watts above 0 and at most 100000 (values outside a "
                         "GPU's range are clamped to it)");
    return w;
}

unsigned watts_to_mw(double watts)
{
    if (!(watts > 0))
        return 0;
    const double mw = std::round(watts * 1000.0);
    return mw >= 4294967295.0 ? 4294967295u : static_cast<unsigned>(mw);
}

std::string mw_text(unsigned mw)
{
    if (mw % 1000 == 0)
        return std::to_string(mw / 1000) + " W";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(mw) / 1000.0);
    std::string s = buf;
    while (!s.empty() && s.back() == '0')
        s.pop_back();
    return s + " W";
}

std::vector<uint32_t> parse_job_ids(const std::string& text)
{
    std::vector<uint32_t> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const auto b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos)
            continue;
        const auto e = line.find_last_not_of(" \t\r");
        try {
            const uint32_t id = parse_job_id(line.substr(b, e - b + 1));
            if (std::find(out.begin(), out.end(), id) == out.end())
                out.push_back(id);
        } catch (const ParseError&) {
            // not a job id (dcgm-exporter reads these files as text): no job
        }
    }
    return out;
}

JobMap read_job_map(const std::string& dir)
{
    JobMap map;
    DIR* d = ::opendir(dir.c_str());
    if (!d) {
        if (errno == ENOENT)
            return map;
        throw Error("cannot read the job mapping directory " + dir + ": " + std::strerror(errno) +
                    " (--job-map-dir, the directory spank_m2g's dcgm_dir= writes)");
    }
    std::unique_ptr<DIR, int (*)(DIR*)> guard(d, ::closedir);
    while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (!all_digits(name) || name.size() > 4)
            continue;
        const int gpu = std::stoi(name);
        const std::string path = dir + "/" + name;
        int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) {
            if (errno == ENOENT)
                continue;  // removed since readdir
            throw Error("cannot read job mapping file " + path + ": " + std::strerror(errno));
        }
        struct stat st {};
        std::string text;
        if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            ::flock(fd, LOCK_SH);
            text = read_fd(fd);
        }
        ::close(fd);
        std::vector<uint32_t> jobs = parse_job_ids(text);
        if (!jobs.empty())
            map[gpu] = std::move(jobs);
    }
    return map;
}

std::vector<int> job_gpus(const JobMap& map, uint32_t job_id)
{
    std::vector<int> out;
    for (const auto& [gpu, jobs] : map)
        if (std::find(jobs.begin(), jobs.end(), job_id) != jobs.end())
            out.push_back(gpu);
    return out;  // ascending: the map is ordered
}

std::string gpu_list_text(const std::vector<int>& gpus)
{
    std::string out;
    for (int g : gpus)
        out += (out.empty() ? "" : ",") + std::to_string(g);
    return out;
}

namespace {

// "GPU 0" or "GPUs 0,1".
std::string gpus_text(const std::vector<int>& gpus)
{
    return (gpus.size() == 1 ? "GPU " : "GPUs ") + gpu_list_text(gpus);
}

}  // namespace

Clamp clamp_limit(unsigned requested_mw, unsigned min_mw, unsigned max_mw)
{
    if (max_mw < min_mw)
        max_mw = min_mw;
    if (requested_mw < min_mw)
        return {min_mw, true};
    if (requested_mw > max_mw)
        return {max_mw, true};
    return {requested_mw, false};
}

std::vector<int> Cap::gpu_indices() const
{
    std::vector<int> out;
    for (const auto& kv : gpus)
        out.push_back(kv.first);
    return out;
}

unsigned Cap::lowest_mw() const
{
    unsigned lo = 0;
    for (const auto& kv : gpus)
        if (lo == 0 || kv.second < lo)
            lo = kv.second;
    return lo;
}

std::optional<unsigned> gpu_target(const CapTable& caps, int gpu)
{
    std::optional<unsigned> t;
    for (const auto& [job, cap] : caps) {
        auto it = cap.gpus.find(gpu);
        if (it != cap.gpus.end() && (!t || it->second < *t))
            t = it->second;
    }
    return t;
}

std::vector<uint32_t> ended_jobs(const CapTable& caps, const JobMap& map)
{
    std::set<uint32_t> running;
    for (const auto& kv : map)
        running.insert(kv.second.begin(), kv.second.end());
    std::vector<uint32_t> out;
    for (const auto& kv : caps)
        if (!running.count(kv.first))
            out.push_back(kv.first);
    return out;
}

std::string caps_to_json(const CapTable& caps, const std::string& node)
{
    Json o = new_object();
    json_object_object_add(o.get(), kKeySchema, json_object_new_string(kSchemaState));
    json_object_object_add(o.get(), kKeyNode, json_object_new_string(node.c_str()));
    json_object* all = json_object_new_object();
    for (const auto& [job, cap] : caps) {
        json_object* c = json_object_new_object();
        json_object_object_add(c, kKeyRequestedMw, json_object_new_int64(cap.requested_mw));
        json_object* g = json_object_new_object();
        for (const auto& [gpu, mw] : cap.gpus)
            json_object_object_add(g, std::to_string(gpu).c_str(), json_object_new_int64(mw));
        json_object_object_add(c, kKeyGpus, g);
        json_object_object_add(all, std::to_string(job).c_str(), c);
    }
    json_object_object_add(o.get(), kKeyCaps, all);
    return to_text(o.get());
}

CapTable caps_from_json(const std::string& text, const std::string& what)
{
    const std::string form = std::string("; expected {\"schema\":\"") + kSchemaState +
                             "\",\"caps\":{\"<job id>\":{\"requested_mw\":N,\"gpus\":{\"<index>\":mW}}}} as " + kProg +
                             " writes it (remove the file to forget every cap it holds)";
    std::string err;
    Json o(parse_whole(text, err), json_object_put);
    if (!o)
        throw ParseError(what + ": not JSON (" + err + ")" + form);
    json_object* schema = nullptr;
    json_object* caps = nullptr;
    if (!json_object_is_type(o.get(), json_type_object) ||
        !json_object_object_get_ex(o.get(), kKeySchema, &schema) ||
        !json_object_is_type(schema, json_type_string) ||
        std::strcmp(json_object_get_string(schema), kSchemaState) != 0)
        throw ParseError(what + ": not a " + kSchemaState + " document" + form);
    if (!json_object_object_get_ex(o.get(), kKeyCaps, &caps) || !json_object_is_type(caps, json_type_object))
        throw ParseError(what + ": \"caps\" is missing or not an object" + form);
    CapTable out;
    json_object_object_foreach(caps, key, val)
    {
        Cap c;
        try {
            c.job_id = parse_job_id(key);
        } catch (const ParseError& e) {
            throw ParseError(what + ": " + e.what() + form);
        }
        json_object* req = nullptr;
        json_object* gpus = nullptr;
        if (!json_object_is_type(val, json_type_object) || !json_object_object_get_ex(val, kKeyRequestedMw, &req) ||
            !json_object_is_type(req, json_type_int) || json_object_get_int64(req) <= 0 ||
            json_object_get_int64(req) > 0xffffffffLL || !json_object_object_get_ex(val, kKeyGpus, &gpus) ||
            !json_object_is_type(gpus, json_type_object))
            throw ParseError(what + ": the cap of job " + key + " is not {\"requested_mw\":N,\"gpus\":{...}}" + form);
        c.requested_mw = static_cast<unsigned>(json_object_get_int64(req));
        json_object_object_foreach(gpus, gk, gv)
        {
            if (!all_digits(gk) || std::strlen(gk) > 4 || !json_object_is_type(gv, json_type_int) ||
                json_object_get_int64(gv) <= 0 || json_object_get_int64(gv) > 0xffffffffLL)
                throw ParseError(what + ": job " + key + ": GPU \"" + excerpt(gk) +
                                 "\" is not an index with a limit in mW" + form);
            c.gpus[std::stoi(gk)] = static_cast<unsigned>(json_object_get_int64(gv));
        }
        out[c.job_id] = c;
    }
    return out;
}

std::string read_token_file(const std::string& path)
{
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw Error("--token-file " + path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error("--token-file " + path + ": not a regular file");
    }
    if (st.st_mode & 077) {
        ::close(fd);
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        throw Error("--token-file " + path + " is accessible by group or others (mode " + mode +
                    "); refusing to use a token others can read: chmod 600 " + path);
    }
    std::string text = read_fd(fd);
    ::close(fd);
    text = text.substr(0, text.find('\n'));
    const auto b = text.find_first_not_of(" \t\r");
    const auto e = text.find_last_not_of(" \t\r");
    text = b == std::string::npos ? "" : text.substr(b, e - b + 1);
    if (text.empty())
        throw Error("--token-file " + path + " is empty; expected the bearer token on its first line");
    if (!std::all_of(text.begin(), text.end(), [](char c) { return c > ' ' && c < 127; }))
        throw Error("--token-file " + path +
                    ": the token holds white space or control characters; expected printable ASCII without spaces");
    return text;
}

// ---- answers ----------------------------------------------------------------------

Response error_response(int status, const std::string& message)
{
    Json o = new_object();
    json_object_object_add(o.get(), kKeyError, json_object_new_string(message.c_str()));
    Response r;
    r.status = status;
    r.body = to_text(o.get());
    return r;
}

namespace {

Response json_response(json_object* o)
{
    Response r;
    r.body = to_text(o);
    return r;
}

// Constant time in the length of `want`.
bool same_secret(const std::string& got, const std::string& want)
{
    unsigned char diff = got.size() == want.size() ? 0 : 1;
    for (size_t i = 0; i < want.size(); ++i)
        diff |= static_cast<unsigned char>(want[i] ^ (i < got.size() ? got[i] : 0));
    return diff == 0;
}

const char* const kRoutes = "the agent serves GET /v1/power, PUT /v1/jobs/<id>/cap and DELETE /v1/jobs/<id>/cap";

}  // namespace

// ---- NodeAgent ----------------------------------------------------------------------

NodeAgent::NodeAgent(PowerBackend& backend, AgentOptions options) : backend_(backend), opt_(std::move(options))
{
    if (opt_.state_file.empty())
        return;
    int fd = ::open(opt_.state_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT)
            return;
        throw Error("cannot read the state file " + opt_.state_file + ": " + std::strerror(errno));
    }
    const std::string text = read_fd(fd);
    ::close(fd);
    caps_ = caps_from_json(text, opt_.state_file);
}

CapTable NodeAgent::caps() const
{
    std::lock_guard<std::mutex> lk(mu_);
    return caps_;
}

void NodeAgent::log(const std::string& msg) const
{
    if (opt_.log)
        opt_.log(msg);
}

void NodeAgent::log_once(const std::string& key, const std::string& msg)
{
    auto it = logged_.find(key);
    if (it != logged_.end() && it->second == msg)
        return;
    logged_[key] = msg;
    if (!msg.empty())
        log(msg);
}

void NodeAgent::save()
{
    if (opt_.state_file.empty())
        return;
    const std::string tmp = opt_.state_file + ".tmp";
    const std::string text = caps_to_json(caps_, opt_.node);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    if (ok) {
        ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
        ok = (::close(fd) == 0) && ok;
    }
    if (ok)
        ok = ::rename(tmp.c_str(), opt_.state_file.c_str()) == 0;
    if (!ok) {
        const std::string e = std::strerror(errno);
        ::unlink(tmp.c_str());
        log_once("state", "error: cannot write the state file " + opt_.state_file + ": " + e +
                              " (the caps are in force; a restarted agent would not know them)");
    } else {
        log_once("state", "");
    }
}

std::map<int, unsigned> NodeAgent::apply(const CapTable& next, const std::set<int>& gpus, const std::string& what)
{
    // Read every GPU first: nothing changes unless all can be read.
    std::map<int, unsigned> before, target;
    for (int g : gpus) {
        const GpuLimits l = backend_.limits(g);
        before[g] = l.limit_mw;
        const std::optional<unsigned> t = gpu_target(next, g);
        target[g] = t ? *t : l.default_mw;
    }
    std::vector<int> changed;
    for (int g : gpus) {
        if (before[g] == target[g])
            continue;
        try {
            backend_.set_limit_mw(g, target[g]);
            changed.push_back(g);
        } catch (const BackendError& e) {
            std::string undo;
            std::vector<int> stuck;
            for (auto it = changed.rbegin(); it != changed.rend(); ++it) {
                try {
                    backend_.set_limit_mw(*it, before[*it]);
                } catch (const BackendError& e2) {
                    stuck.push_back(*it);
                    log(std::string("error: ") + what + ": cannot put GPU " + std::to_string(*it) + " back to " +
                        mw_text(before[*it]) + ": " + e2.what());
                }
            }
            std::sort(changed.begin(), changed.end());
            std::string msg = "NVML could not set the power limit of GPU " + std::to_string(g) + " to " +
                              mw_text(target[g]) + " (" + e.what() + "); ";
            if (changed.empty())
                msg += "no GPU was changed";
            else if (stuck.empty())
                msg += gpus_text(changed) + " put back to the previous limit, nothing changed";
            else
                msg += "and " + gpus_text(stuck) + " could not be put back (see the agent's log)";
            throw HttpError{502, msg};
        }
    }
    std::map<int, unsigned> now;
    for (int g : gpus)
        now[g] = target[g];
    return now;
}

std::map<int, unsigned> NodeAgent::end_cap(uint32_t job, const std::string& what)
{
    CapTable next = caps_;
    const Cap cap = next[job];
    next.erase(job);
    const int count = backend_.gpu_count();
    std::set<int> gpus;
    for (int g : cap.gpu_indices())
        if (g < count)
            gpus.insert(g);
    std::map<int, unsigned> now = apply(next, gpus, what);
    caps_ = std::move(next);
    save();
    return now;
}

Response NodeAgent::handle(const Request& r)
{
    std::lock_guard<std::mutex> lk(mu_);
    try {
        return route(r);
    } catch (const HttpError& e) {
        if (e.status >= 500)
            log("error: " + r.method + " " + excerpt(r.path) + ": " + e.message);
        return error_response(e.status, e.message);
    } catch (const BackendError& e) {
        log("error: " + r.method + " " + excerpt(r.path) + ": " + e.what());
        return error_response(502, std::string("NVML failed: ") + e.what());
    } catch (const std::exception& e) {
        log("error: " + r.method + " " + excerpt(r.path) + ": " + e.what());
        return error_response(500, e.what());
    } catch (...) {
        return error_response(500, "internal error");
    }
}

Response NodeAgent::route(const Request& r)
{
    if (!opt_.token.empty()) {
        const std::string prefix = "Bearer ";
        const bool bearer = r.authorization.compare(0, prefix.size(), prefix) == 0;
        if (!bearer || !same_secret(r.authorization.substr(prefix.size()), opt_.token)) {
            const char* why = r.authorization.empty() ? "no Authorization header"
                              : bearer                ? "wrong bearer token"
                                                      : "the Authorization header is not 'Bearer <token>'";
            Response a = error_response(401, std::string(why) + "; this agent requires 'Authorization: Bearer "
                                                                "<token>' with the token of its --token-file");
            a.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"m2g-nodeagent\"");
            return a;
        }
    }
    if (r.body_too_large)
        return error_response(413, "the request body is larger than " + std::to_string(kMaxBodyBytes) +
                                       " bytes; expected {\"limit_w\": <watts>}");
    auto not_allowed = [&](const char* allow) {
        Response a = error_response(405, "method " + excerpt(r.method) + " is not allowed on " + excerpt(r.path) +
                                             "; use " + allow);
        a.headers.emplace_back("Allow", allow);
        return a;
    };
    if (r.path == kPathPower) {
        if (r.method != "GET")
            return not_allowed("GET");
        return get_power();
    }
    const std::string jobs = kPathJobs, suffix = kPathCapSuffix;
    if (r.path.size() > jobs.size() + suffix.size() && r.path.compare(0, jobs.size(), jobs) == 0 &&
        r.path.compare(r.path.size() - suffix.size(), suffix.size(), suffix) == 0) {
        const std::string id_text = r.path.substr(jobs.size(), r.path.size() - jobs.size() - suffix.size());
        if (r.method != "PUT" && r.method != "DELETE")
            return not_allowed("PUT, DELETE");
        uint32_t id = 0;
        try {
            id = parse_job_id(id_text);
        } catch (const ParseError& e) {
            return error_response(400, e.what());
        }
        if (r.method == "PUT")
            return put_cap(id, r.body);
        return delete_cap(id);
    }
    return error_response(404, "no such resource '" + excerpt(r.path) + "'; " + kRoutes);
}

Response NodeAgent::get_power()
{
    Json o = new_object();
    json_object_object_add(o.get(), kKeySchema, json_object_new_string(kSchemaPower));
    json_object_object_add(o.get(), kKeyNode, json_object_new_string(opt_.node.c_str()));
    JobMap map;
    try {
        map = read_job_map(opt_.job_map_dir);
    } catch (const std::exception& e) {
        json_object_object_add(o.get(), kKeyJobMapError, json_object_new_string(e.what()));
    }
    const int count = backend_.gpu_count();
    unsigned long long total = 0;
    json_object* gpus = json_object_new_array();
    json_object_object_add(o.get(), kKeyGpus, gpus);
    for (int g = 0; g < count; ++g) {
        json_object* j = json_object_new_object();
        json_object_array_add(gpus, j);
        json_object_object_add(j, kKeyIndex, json_object_new_int(g));
        try {
            const unsigned draw = backend_.draw_mw(g);
            const GpuLimits l = backend_.limits(g);
            total += draw;
            json_object_object_add(j, kKeyDrawW, watts_json(draw));
            json_object_object_add(j, kKeyLimitW, watts_json(l.limit_mw));
            json_object_object_add(j, kKeyDefaultLimitW, watts_json(l.default_mw));
            json_object_object_add(j, kKeyMinLimitW, watts_json(l.min_mw));
            json_object_object_add(j, kKeyMaxLimitW, watts_json(l.max_mw));
        } catch (const BackendError& e) {
            json_object_object_add(j, kKeyError, json_object_new_string(e.what()));
        }
        json_object* jobs = json_object_new_array();
        auto it = map.find(g);
        if (it != map.end())
            for (uint32_t job : it->second)
                json_object_array_add(jobs, json_object_new_int64(job));
        json_object_object_add(j, kKeyJobs, jobs);
    }
    json_object_object_add(o.get(), kKeyDrawW,
                           total % 1000 == 0 ? json_object_new_int64(static_cast<int64_t>(total / 1000))
                                             : json_object_new_double(static_cast<double>(total) / 1000.0));
    json_object* caps = json_object_new_object();
    for (const auto& [job, cap] : caps_) {
        json_object* c = json_object_new_object();
        json_object_object_add(c, kKeyLimitW, watts_json(cap.lowest_mw()));
        json_object_object_add(c, kKeyRequestedW, watts_json(cap.requested_mw));
        json_object* list = json_object_new_array();
        for (int g : cap.gpu_indices())
            json_object_array_add(list, json_object_new_int(g));
        json_object_object_add(c, kKeyGpus, list);
        json_object_object_add(caps, std::to_string(job).c_str(), c);
    }
    json_object_object_add(o.get(), kKeyCaps, caps);
    // Move the keys into the documented order: schema, node, draw_w, gpus, caps.
    Json ordered = new_object();
    for (const char* k : {kKeySchema, kKeyNode, kKeyDrawW, kKeyJobMapError, kKeyGpus, kKeyCaps}) {
        json_object* v = nullptr;
        if (json_object_object_get_ex(o.get(), k, &v))
            json_object_object_add(ordered.get(), k, json_object_get(v));
    }
    return json_response(ordered.get());
}

Response NodeAgent::put_cap(uint32_t job, const std::string& body)
{
    double watts = 0;
    try {
        watts = parse_cap_body(body);
    } catch (const ParseError& e) {
        return error_response(400, e.what());
    }
    const unsigned requested = watts_to_mw(watts);
    JobMap map;
    try {
        map = read_job_map(opt_.job_map_dir);
    } catch (const std::exception& e) {
        throw HttpError{500, e.what()};
    }
    const std::vector<int> gpus = job_gpus(map, job);
    if (gpus.empty())
        return error_response(404, "job " + std::to_string(job) + " has no GPU on node " + opt_.node + " (no file in " +
                                       opt_.job_map_dir +
                                       " lists it); a cap applies to the GPUs a running job uses on this node");
    const int count = backend_.gpu_count();
    for (int g : gpus)
        if (g >= count)
            throw HttpError{500, "job mapping file " + opt_.job_map_dir + "/" + std::to_string(g) + " names GPU " +
                                     std::to_string(g) + " but NVML reports " + std::to_string(count) +
                                     " GPUs on this node (indices 0 to " + std::to_string(count - 1) + ")"};

    Cap cap;
    cap.job_id = job;
    cap.requested_mw = requested;
    std::map<int, GpuLimits> lim;
    std::map<int, bool> clamped;
    for (int g : gpus) {
        lim[g] = backend_.limits(g);
        const Clamp c = clamp_limit(requested, lim[g].min_mw, lim[g].max_mw);
        cap.gpus[g] = c.mw;
        clamped[g] = c.clamped;
    }
    CapTable next = caps_;
    std::set<int> touched(gpus.begin(), gpus.end());
    auto old = caps_.find(job);
    if (old != caps_.end())
        for (int g : old->second.gpu_indices())
            if (g < count)
                touched.insert(g);  // GPUs the job had and has no more
    next[job] = cap;
    const std::string what = "cap job " + std::to_string(job);
    const std::map<int, unsigned> now = apply(next, touched, what);
    caps_ = std::move(next);
    save();

    std::string applied;
    std::vector<int> low, high;
    for (int g : gpus) {
        applied += (applied.empty() ? "" : ", ") + std::string("GPU ") + std::to_string(g) + " " + mw_text(now.at(g));
        if (clamped[g])
            (requested < lim[g].min_mw ? low : high).push_back(g);
    }
    log("cap job " + std::to_string(job) + " " + gpus_text(gpus) + ": " + mw_text(cap.lowest_mw()) +
        " (requested " + mw_text(requested) + "; " + applied + ")");

    Json o = new_object();
    json_object_object_add(o.get(), kKeySchema, json_object_new_string(kSchemaCap));
    json_object_object_add(o.get(), kKeyNode, json_object_new_string(opt_.node.c_str()));
    json_object_object_add(o.get(), kKeyJob, json_object_new_int64(job));
    json_object_object_add(o.get(), kKeyRequestedW, watts_json(requested));
    json_object_object_add(o.get(), kKeyLimitW, watts_json(cap.lowest_mw()));
    json_object* list = json_object_new_array();
    for (int g : gpus) {
        json_object* j = json_object_new_object();
        json_object_object_add(j, kKeyIndex, json_object_new_int(g));
        json_object_object_add(j, kKeyLimitW, watts_json(now.at(g)));
        json_object_object_add(j, kKeyClamped, json_object_new_boolean(clamped[g]));
        json_object_object_add(j, kKeyMinLimitW, watts_json(lim[g].min_mw));
        json_object_object_add(j, kKeyMaxLimitW, watts_json(lim[g].max_mw));
        json_object_array_add(list, j);
    }
    json_object_object_add(o.get(), kKeyGpus, list);
    std::string note;
    if (!low.empty())
        note = mw_text(requested) + " is below the lowest limit " + gpus_text(low) +
               (low.size() == 1 ? " accepts" : " accept") + ": raised to the minimum";
    if (!high.empty())
        note += (note.empty() ? "" : "; ") + mw_text(requested) + " is above the highest limit " + gpus_text(high) +
                (high.size() == 1 ? " accepts" : " accept") + ": lowered to the maximum";
    bool shared = false;
    for (int g : gpus)
        shared = shared || now.at(g) < cap.gpus[g];
    if (shared)
        note += std::string(note.empty() ? "" : "; ") +
                "a GPU shared with another capped job keeps the lower of the caps";
    if (!note.empty())
        json_object_object_add(o.get(), kKeyNote, json_object_new_string(note.c_str()));
    return json_response(o.get());
}

Response NodeAgent::delete_cap(uint32_t job)
{
    Json o = new_object();
    json_object_object_add(o.get(), kKeySchema, json_object_new_string(kSchemaCap));
    json_object_object_add(o.get(), kKeyNode, json_object_new_string(opt_.node.c_str()));
    json_object_object_add(o.get(), kKeyJob, json_object_new_int64(job));
    json_object* list = json_object_new_array();
    const bool capped = caps_.count(job) != 0;
    if (capped) {
        const std::string what = "clear job " + std::to_string(job);
        const std::map<int, unsigned> now = end_cap(job, what);
        std::vector<int> gpus;
        for (const auto& [g, mw] : now) {
            gpus.push_back(g);
            json_object* j = json_object_new_object();
            json_object_object_add(j, kKeyIndex, json_object_new_int(g));
            json_object_object_add(j, kKeyLimitW, watts_json(mw));
            json_object_array_add(list, j);
        }
        std::string applied;
        for (const auto& [g, mw] : now)
            applied += (applied.empty() ? "" : ", ") + std::string("GPU ") + std::to_string(g) + " " + mw_text(mw);
        log(what + " " + gpus_text(gpus) + ": cap removed (" + (applied.empty() ? "no GPU" : applied) + ")");
    }
    json_object_object_add(o.get(), kKeyRestored, json_object_new_boolean(capped));
    json_object_object_add(o.get(), kKeyGpus, list);
    return json_response(o.get());
}

void NodeAgent::adopt()
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        adopt_running();
    }
    // Caps of jobs that ended while the agent was away.
    reconcile();
}

void NodeAgent::adopt_running()
{
    try {
        const int count = backend_.gpu_count();
        for (auto& [job, cap] : caps_) {
            std::vector<int> gone;
            for (const auto& kv : cap.gpus)
                if (kv.first >= count)
                    gone.push_back(kv.first);
            for (int g : gone) {
                cap.gpus.erase(g);
                log("adopt: job " + std::to_string(job) + ": GPU " + std::to_string(g) +
                    " is not on this node any more (NVML reports " + std::to_string(count) + " GPUs); forgotten");
            }
        }
        JobMap map = read_job_map(opt_.job_map_dir);
        const std::vector<uint32_t> ended = ended_jobs(caps_, map);
        std::set<uint32_t> ended_set(ended.begin(), ended.end());
        std::set<int> gpus;
        for (const auto& [job, cap] : caps_)
            if (!ended_set.count(job))
                for (int g : cap.gpu_indices())
                    gpus.insert(g);
        for (int g : gpus) {
            const unsigned want = *gpu_target(caps_, g);
            const GpuLimits l = backend_.limits(g);
            if (l.limit_mw == want)
                continue;
            backend_.set_limit_mw(g, want);
            log("adopt: GPU " + std::to_string(g) + " had " + mw_text(l.limit_mw) + ", its cap " + mw_text(want) +
                " is put back");
        }
        if (!caps_.empty())
            log("adopt: " + std::to_string(caps_.size() - ended.size()) + " cap(s) of running jobs kept from " +
                opt_.state_file);
        save();
    } catch (const std::exception& e) {
        log(std::string("error: adopting the caps of ") + opt_.state_file + ": " + e.what());
    }
}

void NodeAgent::reconcile()
{
    std::lock_guard<std::mutex> lk(mu_);
    JobMap map;
    try {
        map = read_job_map(opt_.job_map_dir);
        log_once("map", "");
    } catch (const std::exception& e) {
        log_once("map", std::string("reconcile: ") + e.what() + "; no cap is ended until it can be read");
        return;
    }
    for (uint32_t job : ended_jobs(caps_, map)) {
        const std::string key = "end " + std::to_string(job);
        const std::vector<int> gpus = caps_[job].gpu_indices();
        const std::string what = "reconcile: job " + std::to_string(job);
        try {
            const std::map<int, unsigned> now = end_cap(job, what);
            std::string applied;
            for (const auto& [g, mw] : now)
                applied += (applied.empty() ? "" : ", ") + std::string("GPU ") + std::to_string(g) + " " + mw_text(mw);
            log(what + " is no longer in " + opt_.job_map_dir + ": cap on " + gpus_text(gpus) + " ended (" +
                (applied.empty() ? "no GPU" : applied) + ")");
            logged_.erase(key);
        } catch (const HttpError& e) {
            log_once(key, "error: " + what + " ended but its cap could not be lifted: " + e.message +
                              "; retrying every tick");
        } catch (const std::exception& e) {
            log_once(key, "error: " + what + " ended but its cap could not be lifted: " + e.what() +
                              "; retrying every tick");
        }
    }
}

}  // namespace nodeagent
}  // namespace m2g
