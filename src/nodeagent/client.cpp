// The controller's m2g-nodeagent client (libcurl, json-c): see client.hpp.
#include "nodeagent/client.hpp"

#include <curl/curl.h>
#include <json-c/json.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "nodeagent/agent.hpp"
#include "core/base/error.hpp"

namespace m2g {
namespace nodeagent {

namespace {

using Json = std::unique_ptr<json_object, decltype(&json_object_put)>;

constexpr size_t kMaxAnswerBytes = 4 << 20;

std::once_flag curl_once;

struct Answer {
    long status = 0;
    std::string body;
    bool truncated = false;
};

size_t on_data(char* data, size_t size, size_t n, void* user)
{
    auto* a = static_cast<Answer*>(user);
    const size_t len = size * n;
    if (a->body.size() + len > kMaxAnswerBytes) {
        a->truncated = true;
        return 0;  // stops the transfer
    }
    a->body.append(data, len);
    return len;
}

std::string base_of(const std::string& url)
{
    std::string b = url;
    while (!b.empty() && b.back() == '/')
        b.pop_back();
    return b;
}

std::string error_text(const std::string& body)
{
    Json o(json_tokener_parse(body.c_str()), json_object_put);
    json_object* e = nullptr;
    if (o && json_object_is_type(o.get(), json_type_object) && json_object_object_get_ex(o.get(), kKeyError, &e) &&
        json_object_is_type(e, json_type_string))
        return json_object_get_string(e);
    std::string s = body.substr(0, 200);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r'))
        s.pop_back();
    return s.empty() ? "(no error text)" : s;
}

// One request; the answer's body on 2xx, else throws. `where` names it.
std::string call(const std::string& url, const std::string& token, const char* method, const std::string& path,
                 const std::string* body, long timeout_ms, const std::string& where)
{
    std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), curl_easy_cleanup);
    if (!h)
        throw Error(where + ": cannot start libcurl");
    const std::string full = base_of(url) + path;
    char errbuf[CURL_ERROR_SIZE];
    errbuf[0] = '\0';
    Answer a;
    curl_easy_setopt(h.get(), CURLOPT_URL, full.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h.get(), CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h.get(), CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h.get(), CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 0L);
    curl_easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 0L);
    curl_easy_setopt(h.get(), CURLOPT_USERAGENT, "m2g-nodeagent-client");
    curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, static_cast<void*>(&a));
    curl_slist* raw = nullptr;
    raw = curl_slist_append(raw, "Accept: application/json");
    if (body)
        raw = curl_slist_append(raw, "Content-Type: application/json");
    if (!token.empty())
        raw = curl_slist_append(raw, ("Authorization: Bearer " + token).c_str());
    std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(raw, curl_slist_free_all);
    curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers.get());
    if (std::strcmp(method, "GET") == 0) {
        curl_easy_setopt(h.get(), CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(h.get(), CURLOPT_CUSTOMREQUEST, method);
        if (body) {
            curl_easy_setopt(h.get(), CURLOPT_POSTFIELDS, body->c_str());
            curl_easy_setopt(h.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
        }
    }
    const CURLcode rc = curl_easy_perform(h.get());
    curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &a.status);
    if (a.truncated)
        throw Error(where + ": the answer is larger than " + std::to_string(kMaxAnswerBytes) + " bytes");
    if (rc != CURLE_OK) {
        const std::string why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
        if (rc == CURLE_OPERATION_TIMEDOUT)
            throw Error(where + ": no answer within " + std::to_string(timeout_ms) + " ms (" + why + ")");
        throw Error(where + ": cannot reach the agent (" + why + ")");
    }
    if (a.status < 200 || a.status > 299)
        throw Error(where + ": HTTP " + std::to_string(a.status) + ": " + error_text(a.body));
    return a.body;
}

// ---- reading the answers --------------------------------------------------------------

json_object* member(json_object* o, const char* key)
{
    json_object* v = nullptr;
    return o && json_object_object_get_ex(o, key, &v) ? v : nullptr;
}

struct Reader {
    std::string where;

    [[noreturn]] void bad(const std::string& what) const
    {
        throw Error(where + ": unexpected answer: " + what);
    }
    Json parse(const std::string& text, const char* schema) const
    {
        Json o(json_tokener_parse(text.c_str()), json_object_put);
        if (!o || !json_object_is_type(o.get(), json_type_object))
            bad("not a JSON object");
        json_object* s = member(o.get(), kKeySchema);
        if (!s || !json_object_is_type(s, json_type_string) || std::strcmp(json_object_get_string(s), schema) != 0)
            bad(std::string("not a ") + schema + " document");
        return o;
    }
    double number(json_object* o, const char* key, bool required = true) const
    {
        json_object* v = member(o, key);
        if (!v) {
            if (required)
                bad(std::string("no \"") + key + "\"");
            return 0;
        }
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
            bad(std::string("\"") + key + "\" is not a number");
        return json_object_get_double(v);
    }
    int64_t integer(json_object* o, const char* key) const
    {
        json_object* v = member(o, key);
        if (!v || !json_object_is_type(v, json_type_int))
            bad(std::string("\"") + key + "\" is missing or not an integer");
        return json_object_get_int64(v);
    }
    std::string text(json_object* o, const char* key, bool required = true) const
    {
        json_object* v = member(o, key);
        if (!v) {
            if (required)
                bad(std::string("no \"") + key + "\"");
            return "";
        }
        if (!json_object_is_type(v, json_type_string))
            bad(std::string("\"") + key + "\" is not a string");
        return json_object_get_string(v);
    }
    json_object* array(json_object* o, const char* key) const
    {
        json_object* v = member(o, key);
        if (!v || !json_object_is_type(v, json_type_array))
            bad(std::string("\"") + key + "\" is missing or not an array");
        return v;
    }
    // `fn(element)` for every element of the array o[key].
    template <class Fn>
    void each(json_object* o, const char* key, Fn fn) const
    {
        json_object* list = array(o, key);
        for (size_t i = 0; i < json_object_array_length(list); ++i)
            fn(json_object_array_get_idx(list, i));
    }
    std::vector<GpuLimit> gpus(json_object* o) const
    {
        std::vector<GpuLimit> out;
        each(o, kKeyGpus, [&](json_object* g) {
            GpuLimit l;
            l.index = static_cast<int>(integer(g, kKeyIndex));
            l.limit_w = number(g, kKeyLimitW);
            json_object* c = member(g, kKeyClamped);
            l.clamped = c && json_object_get_boolean(c);
            l.min_limit_w = number(g, kKeyMinLimitW, false);
            l.max_limit_w = number(g, kKeyMaxLimitW, false);
            out.push_back(l);
        });
        return out;
    }
};

std::string cap_path(uint32_t job_id) { return std::string(kPathJobs) + std::to_string(job_id) + kPathCapSuffix; }

std::string where_of(const std::string& url, const char* method, const std::string& path)
{
    return std::string(kProg) + " " + base_of(url) + ": " + method + " " + path;
}

// PUT and DELETE on a job's cap answer the same document: the node and
// the job it names, then what `rest(reader, document, result)` reads.
template <class Result, class Rest>
Result parse_cap_answer(const std::string& json, const std::string& where, Rest rest)
{
    const Reader rd{where};
    Json o = rd.parse(json, kSchemaCap);
    Result r;
    r.node = rd.text(o.get(), kKeyNode);
    r.job_id = static_cast<uint32_t>(rd.integer(o.get(), kKeyJob));
    rest(rd, o.get(), r);
    return r;
}

}  // namespace

CapResult parse_cap_result(const std::string& json, const std::string& where)
{
    return parse_cap_answer<CapResult>(json, where, [](const Reader& rd, json_object* o, CapResult& r) {
        r.requested_w = rd.number(o, kKeyRequestedW);
        r.limit_w = rd.number(o, kKeyLimitW);
        r.gpus = rd.gpus(o);
        r.note = rd.text(o, kKeyNote, false);
    });
}

ClearResult parse_clear_result(const std::string& json, const std::string& where)
{
    return parse_cap_answer<ClearResult>(json, where, [](const Reader& rd, json_object* o, ClearResult& r) {
        json_object* restored = member(o, kKeyRestored);
        if (!restored || !json_object_is_type(restored, json_type_boolean))
            rd.bad("\"restored\" is missing or not true/false");
        r.restored = json_object_get_boolean(restored);
        r.gpus = rd.gpus(o);
    });
}

NodePower parse_node_power(const std::string& json, const std::string& where)
{
    const Reader rd{where};
    Json o = rd.parse(json, kSchemaPower);
    NodePower p;
    p.node = rd.text(o.get(), kKeyNode);
    p.draw_w = rd.number(o.get(), kKeyDrawW);
    rd.each(o.get(), kKeyGpus, [&](json_object* g) {
        GpuPower gp;
        gp.index = static_cast<int>(rd.integer(g, kKeyIndex));
        gp.error = rd.text(g, kKeyError, false);
        const bool need = gp.error.empty();
        gp.draw_w = rd.number(g, kKeyDrawW, need);
        gp.limit_w = rd.number(g, kKeyLimitW, need);
        gp.default_limit_w = rd.number(g, kKeyDefaultLimitW, need);
        gp.min_limit_w = rd.number(g, kKeyMinLimitW, need);
        gp.max_limit_w = rd.number(g, kKeyMaxLimitW, need);
        rd.each(g, kKeyJobs,
                [&](json_object* j) { gp.jobs.push_back(static_cast<uint32_t>(json_object_get_int64(j))); });
        p.gpus.push_back(gp);
    });
    json_object* caps = member(o.get(), kKeyCaps);
    if (!caps || !json_object_is_type(caps, json_type_object))
        rd.bad("\"caps\" is missing or not an object");
    json_object_object_foreach(caps, key, val)
    {
        JobCap c;
        try {
            c.job_id = parse_job_id(key);
        } catch (const ParseError& e) {
            rd.bad(std::string("caps: ") + e.what());
        }
        c.limit_w = rd.number(val, kKeyLimitW);
        c.requested_w = rd.number(val, kKeyRequestedW, false);
        rd.each(val, kKeyGpus, [&](json_object* g) { c.gpus.push_back(json_object_get_int(g)); });
        p.caps.push_back(c);
    }
    std::sort(p.caps.begin(), p.caps.end(), [](const JobCap& a, const JobCap& b) { return a.job_id < b.job_id; });
    return p;
}

CapResult set_cap(const std::string& url, const std::string& token, uint32_t job_id, double watts, long timeout_ms)
{
    const std::string path = cap_path(job_id);
    const std::string where = where_of(url, "PUT", path);
    if (!std::isfinite(watts) || watts <= 0)
        throw Error(where + ": the limit must be a number of watts above 0");
    char num[64];
    std::snprintf(num, sizeof num, "%.17g", watts);
    const std::string body = std::string("{\"") + kKeyLimitW + "\": " + num + "}";
    return parse_cap_result(call(url, token, "PUT", path, &body, timeout_ms, where), where);
}

ClearResult clear_cap(const std::string& url, const std::string& token, uint32_t job_id, long timeout_ms)
{
    const std::string path = cap_path(job_id);
    const std::string where = where_of(url, "DELETE", path);
    return parse_clear_result(call(url, token, "DELETE", path, nullptr, timeout_ms, where), where);
}

NodePower get_power(const std::string& url, const std::string& token, long timeout_ms)
{
    const std::string where = where_of(url, "GET", kPathPower);
    return parse_node_power(call(url, token, "GET", kPathPower, nullptr, timeout_ms, where), where);
}

}  // namespace nodeagent
}  // namespace m2g
