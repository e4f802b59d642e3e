// m2g-slinky: the Kubernetes API client (see kube.hpp).
#include "kube.hpp"

#include <curl/curl.h>
#include <json-c/json.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include "m2g_config.h"

namespace m2g::kube {

namespace {

// ---------------------------------------------------------------------------
// Small helpers.

struct JsonDeleter {
    void operator()(json_object* o) const { json_object_put(o); }
};
using JsonPtr = std::unique_ptr<json_object, JsonDeleter>;

struct SlistDeleter {
    void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using SlistPtr = std::unique_ptr<curl_slist, SlistDeleter>;

JsonPtr parse_json(const std::string& text)
{
    json_tokener_error err = json_tokener_success;
    return JsonPtr(json_tokener_parse_verbose(text.c_str(), &err));
}

std::string json_text(json_object* o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

json_object* member(json_object* o, const char* key)
{
    json_object* v = nullptr;
    if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v))
        return v;
    return nullptr;
}

std::string string_member(json_object* o, const char* key)
{
    json_object* v = member(o, key);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

std::string truncated(const std::string& s, size_t n = 200)
{
    std::string t = s.size() > n ? s.substr(0, n) + "..." : s;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r'))
        t.pop_back();
    return t;
}

std::string trim(const std::string& s)
{
    const char* ws = " \t\r\n";
    const auto b = s.find_first_not_of(ws);
    if (b == std::string::npos)
        return "";
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// The whole file, or false with errno's reason in WHY.
bool read_file(const std::string& path, std::string& out, std::string& why)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        why = std::strerror(errno);
        return false;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) {
        why = "read error";
        return false;
    }
    out = ss.str();
    return true;
}

bool base64_decode(const std::string& in, std::string& out)
{
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z')
            return c - 'A';
        if (c >= 'a' && c <= 'z')
            return c - 'a' + 26;
        if (c >= '0' && c <= '9')
            return c - '0' + 52;
        if (c == '+')
            return 62;
        if (c == '/')
            return 63;
        return -1;
    };
    out.clear();
    unsigned buf = 0;
    int bits = 0;
    bool padding = false;
    for (const char c : in) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            padding = true;
            continue;
        }
        const int v = value(c);
        if (v < 0 || padding)
            return false;
        buf = (buf << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((buf >> bits) & 0xffu));
        }
    }
    return !out.empty();
}

std::string query_separator(const std::string& path) { return path.find('?') == std::string::npos ? "?" : "&"; }

std::string url_escape(const std::string& s)
{
    std::string out;
    static const char* hex = "0123456789ABCDEF";
    for (const unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

// What a request does, in RBAC terms.
struct Target {
    std::string group, resource, ns, name, verb;
    bool known = false;
};

Target target_of(const std::string& method, const std::string& path_and_query)
{
    Target t;
    const auto q = path_and_query.find('?');
    const std::string path = path_and_query.substr(0, q);
    const std::string query = q == std::string::npos ? "" : "&" + path_and_query.substr(q + 1) + "&";
    std::vector<std::string> seg;
    std::istringstream ss(path);
    for (std::string s; std::getline(ss, s, '/');)
        if (!s.empty())
            seg.push_back(s);
    size_t i = 0;
    if (seg.size() >= 2 && seg[0] == "api") {
        i = 2;
    } else if (seg.size() >= 3 && seg[0] == "apis") {
        t.group = seg[1];
        i = 3;
    }
    std::vector<std::string> rest(seg.begin() + static_cast<long>(std::min(i, seg.size())), seg.end());
    if (i == 0 || rest.empty()) {
        t.resource = path;
    } else {
        t.known = true;
        if (rest.size() >= 3 && rest[0] == "namespaces") {
            t.ns = rest[1];
            rest.erase(rest.begin(), rest.begin() + 2);
        }
        t.resource = rest[0];
        if (rest.size() > 1)
            t.name = rest[1];
        if (rest.size() > 2)
            t.resource += "/" + rest[2];
    }
    const bool watching = query.find("&watch=1&") != std::string::npos || query.find("&watch=true&") != std::string::npos;
    if (method == "GET")
        t.verb = t.name.empty() ? (watching ? "watch" : "list") : "get";
    else if (method == "POST")
        t.verb = "create";
    else if (method == "PUT")
        t.verb = "update";
    else if (method == "PATCH")
        t.verb = "patch";
    else if (method == "DELETE")
        t.verb = t.name.empty() ? "deletecollection" : "delete";
    else
        t.verb = method;
    return t;
}

size_t append_to_string(char* data, size_t size, size_t n, void* userdata)
{
    static_cast<std::string*>(userdata)->append(data, size * n);
    return size * n;
}

int cancel_progress(void* clientp, curl_off_t, curl_off_t, curl_off_t, curl_off_t)
{
    const auto* flag = static_cast<const std::atomic<bool>*>(clientp);
    return flag && flag->load() ? 1 : 0;
}

std::once_flag curl_once;

}  // namespace

const char* to_string(WatchEnd::Reason reason)
{
    switch (reason) {
    case WatchEnd::Closed:
        return "closed";
    case WatchEnd::Stopped:
        return "stopped";
    case WatchEnd::Gone:
        return "gone";
    case WatchEnd::Error:
        return "error";
    }
    return "?";
}

// ---------------------------------------------------------------------------
// Configuration.

Config in_cluster(const std::string& sa_dir)
{
    Config c;
    std::vector<std::string> missing;
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host)
        missing.push_back("KUBERNETES_SERVICE_HOST is not set");
    if (!port || !*port)
        missing.push_back("KUBERNETES_SERVICE_PORT is not set");
    std::string why;
    const std::string token_file = sa_dir + "/token";
    if (!read_file(token_file, c.token, why))
        missing.push_back(token_file + " cannot be read (" + why + ")");
    else if ((c.token = trim(c.token)).empty())
        missing.push_back(token_file + " is empty");
    const std::string ca_file = sa_dir + "/ca.crt";
    std::string ca;
    if (!read_file(ca_file, ca, why))
        missing.push_back(ca_file + " cannot be read (" + why + ")");
    else if (ca.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
        missing.push_back(ca_file + " holds no PEM certificate");
    const std::string ns_file = sa_dir + "/namespace";
    if (!read_file(ns_file, c.namespace_, why))
        missing.push_back(ns_file + " cannot be read (" + why + ")");
    else if ((c.namespace_ = trim(c.namespace_)).empty())
        missing.push_back(ns_file + " is empty");
    if (!missing.empty()) {
        std::string msg = "in-cluster Kubernetes config: ";
        for (size_t i = 0; i < missing.size(); ++i)
            msg += (i ? "; " : "") + missing[i];
        throw Error(msg + " (is this a pod with a service account token mounted? Elsewhere, give a kubeconfig)");
    }
    const std::string h = host;
    c.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
    c.token_file = token_file;
    c.ca_file = ca_file;
    c.source = "in-cluster service account " + sa_dir;
    return c;
}

namespace {

// One kubeconfig file being read: every error names it.
struct Kubeconfig {
    std::string path;
    std::string dir;

    [[noreturn]] void fail(const std::string& what) const { throw Error("kubeconfig " + path + ": " + what); }

    // The entry of LIST (clusters, users, contexts) named NAME, as its ITEM_KEY map.
    YAML::Node named(const YAML::Node& root, const char* list, const char* item_key, const std::string& name) const
    {
        const YAML::Node l = root[list];
        if (!l || !l.IsSequence())
            fail(std::string("no ") + list + " list (looking for " + item_key + " \"" + name + "\")");
        for (const auto& e : l) {
            const YAML::Node n = e["name"];
            if (n && n.IsScalar() && n.as<std::string>() == name) {
                const YAML::Node v = e[item_key];
                if (!v || !v.IsMap())
                    fail(std::string(list) + "[name=" + name + "]." + item_key + " is missing");
                return v;
            }
        }
        fail(std::string(item_key) + " \"" + name + "\" is not in " + list + "[]");
    }

    std::string str(const YAML::Node& map, const std::string& where, const char* key) const
    {
        const YAML::Node v = map[key];
        if (!v || v.IsNull())
            return "";
        if (!v.IsScalar())
            fail(where + "." + key + " must be a string");
        return v.as<std::string>();
    }

    std::string file_path(const std::string& p) const
    {
        if (p.empty() || p[0] == '/')
            return p;
        return dir + "/" + p;
    }

    std::string data(const YAML::Node& map, const std::string& where, const char* key) const
    {
        const std::string b64 = str(map, where, key);
        if (b64.empty())
            return "";
        std::string out;
        if (!base64_decode(b64, out))
            fail(where + "." + key + " is not valid base64");
        return out;
    }
};

}  // namespace

Config from_kubeconfig(const std::string& path, const std::string& context)
{
    Kubeconfig kc;
    kc.path = path;
    const auto slash = path.rfind('/');
    kc.dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::BadFile&) {
        kc.fail(std::string("cannot be read (") + std::strerror(errno) + ")");
    } catch (const YAML::Exception& e) {
        kc.fail("line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
    if (!root.IsMap())
        kc.fail("not a kubeconfig (a YAML map with clusters, users, contexts)");
    Config c;
    try {
        std::string ctx_name = context;
        if (ctx_name.empty()) {
            ctx_name = kc.str(root, "", "current-context");
            if (ctx_name.empty())
                kc.fail("current-context is missing and no context was given");
        }
        const YAML::Node ctx = kc.named(root, "contexts", "context", ctx_name);
        const std::string ctx_where = "contexts[name=" + ctx_name + "].context";
        const std::string cluster_name = kc.str(ctx, ctx_where, "cluster");
        const std::string user_name = kc.str(ctx, ctx_where, "user");
        if (cluster_name.empty())
            kc.fail(ctx_where + ".cluster is missing");
        c.namespace_ = kc.str(ctx, ctx_where, "namespace");
        if (c.namespace_.empty())
            c.namespace_ = "default";

        const YAML::Node cl = kc.named(root, "clusters", "cluster", cluster_name);
        const std::string cl_where = "clusters[name=" + cluster_name + "].cluster";
        c.server = kc.str(cl, cl_where, "server");
        if (c.server.empty())
            kc.fail(cl_where + ".server is missing");
        c.ca_file = kc.file_path(kc.str(cl, cl_where, "certificate-authority"));
        c.ca_data = kc.data(cl, cl_where, "certificate-authority-data");
        if (const YAML::Node v = cl["insecure-skip-tls-verify"]; v && !v.IsNull()) {
            bool b = false;
            if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b))
                kc.fail(cl_where + ".insecure-skip-tls-verify must be true or false");
            c.insecure = b;
        }
        if (c.insecure && (!c.ca_file.empty() || !c.ca_data.empty()))
            kc.fail(cl_where + ": insecure-skip-tls-verify with a certificate authority is not allowed (kubectl refuses it too)");
        for (const char* k : {"tls-server-name", "proxy-url"})
            if (!kc.str(cl, cl_where, k).empty())
                kc.fail(cl_where + "." + k + " is not supported by m2g-slinky");

        if (!user_name.empty()) {
            const YAML::Node u = kc.named(root, "users", "user", user_name);
            const std::string u_where = "users[name=" + user_name + "].user";
            if (u["exec"] || u["auth-provider"])
                kc.fail(u_where + ": exec and auth-provider credential plugins are not supported; give the user a token, "
                                  "tokenFile or client certificate (e.g. kubectl create token SERVICE-ACCOUNT)");
            if (u["username"] || u["password"])
                kc.fail(u_where + ": basic authentication (username/password) is not supported; give a token or client certificate");
            c.token = kc.str(u, u_where, "token");
            c.token_file = kc.file_path(kc.str(u, u_where, "tokenFile"));
            c.client_cert_file = kc.file_path(kc.str(u, u_where, "client-certificate"));
            c.client_cert_data = kc.data(u, u_where, "client-certificate-data");
            c.client_key_file = kc.file_path(kc.str(u, u_where, "client-key"));
            c.client_key_data = kc.data(u, u_where, "client-key-data");
            const bool has_cert = !c.client_cert_file.empty() || !c.client_cert_data.empty();
            const bool has_key = !c.client_key_file.empty() || !c.client_key_data.empty();
            if (has_cert != has_key)
                kc.fail(u_where + (has_cert ? ".client-key(-data) is missing (client-certificate is given)"
                                            : ".client-certificate(-data) is missing (client-key is given)"));
            if (c.token.empty() && !c.token_file.empty()) {
                std::string why;
                if (!read_file(c.token_file, c.token, why))
                    kc.fail(u_where + ".tokenFile " + c.token_file + " cannot be read (" + why + ")");
                c.token = trim(c.token);
            }
        }
        c.source = "kubeconfig " + path + " context " + ctx_name;
    } catch (const YAML::Exception& e) {
        kc.fail("line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
    return c;
}

// ---------------------------------------------------------------------------
// Client.

struct Client::Impl {
    Config cfg;
    CURL* h = nullptr;
    const std::atomic<bool>* cancel = nullptr;
    std::string user_agent = std::string("m2g-slinky/") + PACKAGE_VERSION;

    struct Raw {
        CURLcode code = CURLE_OK;
        long status = 0;
        std::string curl_error;
    };

    Raw perform(const std::string& method, const std::string& path, const std::string* body,
                const std::string& content_type, curl_write_callback write, void* write_data, long timeout_ms);
    Response request(const std::string& method, const std::string& path, const std::string* body,
                     const std::string& content_type);
    bool reload_token();
    std::string explain(const std::string& method, const std::string& path, long status, const std::string& body) const;
    std::string transport_error(const std::string& method, const std::string& path, const Raw& r, long timeout_ms) const;
    std::string ca_description() const;
};

Client::Client(Config config) : impl_(std::make_unique<Impl>())
{
    Config& c = impl_->cfg;
    c = std::move(config);
    const std::string from = c.source.empty() ? "" : " (" + c.source + ")";
    if (c.server.rfind("https://", 0) != 0 || c.server.size() <= 8)
        throw Error("Kubernetes API server \"" + c.server + "\"" + from +
                    ": m2g-slinky talks to the API server over https only (https://host:port)");
    while (c.server.back() == '/')
        c.server.pop_back();
    if (c.token.empty() && !c.token_file.empty()) {
        std::string why;
        if (!read_file(c.token_file, c.token, why))
            throw Error("Kubernetes token file " + c.token_file + from + " cannot be read (" + why + ")");
        c.token = trim(c.token);
    }
    if (c.client_cert_file.empty() != c.client_key_file.empty() || c.client_cert_data.empty() != c.client_key_data.empty())
        throw Error("Kubernetes client certificate" + from + ": give both the certificate and its key");
    std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    impl_->h = curl_easy_init();
    if (!impl_->h)
        throw Error("cannot initialise libcurl");
}

Client::~Client()
{
    if (impl_ && impl_->h)
        curl_easy_cleanup(impl_->h);
}

const Config& Client::config() const { return impl_->cfg; }

void Client::set_cancel(const std::atomic<bool>* flag) { impl_->cancel = flag; }

std::string Client::Impl::ca_description() const
{
    if (cfg.insecure)
        return "nothing (insecure)";
    if (!cfg.ca_data.empty())
        return "the CA from certificate-authority-data";
    if (!cfg.ca_file.empty())
        return "the CA in " + cfg.ca_file;
    return "the system's CA store (no CA configured)";
}

Client::Impl::Raw Client::Impl::perform(const std::string& method, const std::string& path, const std::string* body,
                                        const std::string& content_type, curl_write_callback write, void* write_data,
                                        long timeout_ms)
{
    if (path.empty() || path[0] != '/')
        throw Error("Kubernetes API path \"" + path + "\" must start with /");
    curl_easy_reset(h);
    char errbuf[CURL_ERROR_SIZE];
    errbuf[0] = '\0';
    const std::string url = cfg.server + path;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, cfg.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent.c_str());
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);

    // TLS: verified unless the config explicitly says insecure. A configured
    // CA is the only trust anchor (no fallback to the system store).
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, cfg.insecure ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, cfg.insecure ? 0L : 2L);
    curl_blob ca_blob{};
    if (!cfg.ca_data.empty()) {
        ca_blob.data = const_cast<char*>(cfg.ca_data.data());
        ca_blob.len = cfg.ca_data.size();
        ca_blob.flags = CURL_BLOB_NOCOPY;
        curl_easy_setopt(h, CURLOPT_CAINFO, static_cast<char*>(nullptr));
        curl_easy_setopt(h, CURLOPT_CAPATH, static_cast<char*>(nullptr));
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca_blob);
    } else if (!cfg.ca_file.empty()) {
        curl_easy_setopt(h, CURLOPT_CAPATH, static_cast<char*>(nullptr));
        curl_easy_setopt(h, CURLOPT_CAINFO, cfg.ca_file.c_str());
    }
    curl_blob cert_blob{}, key_blob{};
    if (!cfg.client_cert_data.empty()) {
        cert_blob = {const_cast<char*>(cfg.client_cert_data.data()), cfg.client_cert_data.size(), CURL_BLOB_NOCOPY};
        key_blob = {const_cast<char*>(cfg.client_key_data.data()), cfg.client_key_data.size(), CURL_BLOB_NOCOPY};
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert_blob);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key_blob);
    } else if (!cfg.client_cert_file.empty()) {
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLCERT, cfg.client_cert_file.c_str());
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEY, cfg.client_key_file.c_str());
    }

    curl_slist* raw_headers = nullptr;
    auto add = [&](const std::string& line) { raw_headers = curl_slist_append(raw_headers, line.c_str()); };
    add("Accept: application/json");
    add("Expect:");
    if (!cfg.token.empty())
        add("Authorization: Bearer " + cfg.token);
    if (body)
        add("Content-Type: " + (content_type.empty() ? std::string("application/json") : content_type));
    SlistPtr headers(raw_headers);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());

    if (method == "GET") {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        if (method != "POST")
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
        if (body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->c_str());
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
        } else if (method == "POST") {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        }
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, write_data);
    if (cancel) {
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, cancel_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, static_cast<void*>(const_cast<std::atomic<bool>*>(cancel)));
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }

    Raw r;
    r.code = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    r.curl_error = errbuf[0] ? errbuf : curl_easy_strerror(r.code);
    // Nothing may keep pointing at this frame's buffers and blobs.
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, static_cast<curl_slist*>(nullptr));
    return r;
}

bool Client::Impl::reload_token()
{
    if (cfg.token_file.empty())
        return false;
    std::string t, why;
    if (!read_file(cfg.token_file, t, why))
        return false;
    t = trim(t);
    if (t.empty() || t == cfg.token)
        return false;
    cfg.token = t;
    return true;
}

std::string Client::Impl::transport_error(const std::string& method, const std::string& path, const Raw& r,
                                          long timeout_ms) const
{
    const std::string where = method + " " + cfg.server + path;
    switch (r.code) {
    case CURLE_PEER_FAILED_VERIFICATION:
        return "TLS: the API server " + cfg.server + " was not verified against " + ca_description() + " (" +
               r.curl_error + "); check the cluster's certificate-authority (or ca.crt)";
    case CURLE_SSL_CACERT_BADFILE:
        return "TLS: cannot load " + ca_description() + " (" + r.curl_error + ")";
    case CURLE_SSL_CERTPROBLEM:
        return "TLS: cannot use the client certificate (" + r.curl_error + ")";
    case CURLE_SSL_CONNECT_ERROR:
        return "TLS: handshake with " + cfg.server + " failed (" + r.curl_error + ")";
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
        return "cannot connect to the API server " + cfg.server + " (" + r.curl_error + ")";
    case CURLE_OPERATION_TIMEDOUT:
        return where + ": timed out after " + std::to_string(timeout_ms) + " ms (" + r.curl_error + ")";
    case CURLE_ABORTED_BY_CALLBACK:
        return where + ": cancelled";
    default:
        return where + ": " + r.curl_error;
    }
}

std::string Client::Impl::explain(const std::string& method, const std::string& path, long status,
                                  const std::string& body) const
{
    std::string reason, message;
    if (JsonPtr st = parse_json(body); st && string_member(st.get(), "kind") == "Status") {
        reason = string_member(st.get(), "reason");
        message = string_member(st.get(), "message");
    }
    const Target t = target_of(method, path);
    if (status == 401) {
        if (!cfg.token.empty())
            return "unauthorized: the service account token was rejected" +
                   (cfg.token_file.empty() ? std::string(" (") + method + " " + path + ")"
                                           : " (" + method + " " + path + "; " + cfg.token_file + " re-read)");
        if (!cfg.client_cert_file.empty() || !cfg.client_cert_data.empty())
            return "unauthorized: the client certificate was rejected (" + method + " " + path + ")";
        return "unauthorized: no credentials were given (a token, tokenFile or client certificate) (" + method + " " +
               path + ")";
    }
    if (status == 403) {
        std::string s = "forbidden: " + t.verb + " " + t.resource;
        if (t.known) {
            if (!t.ns.empty())
                s += " in namespace " + t.ns + " needs Role rule";
            else
                s += " needs ClusterRole rule";
            s += " {apiGroups: [\"" + t.group + "\"], resources: [\"" + t.resource + "\"], verbs: [\"" + t.verb +
                 "\"]}";
        }
        if (!message.empty())
            s += " (API server: " + message + ")";
        return s;
    }
    std::string s = method + " " + path + ": HTTP " + std::to_string(status);
    if (!reason.empty())
        s += " " + reason;
    if (!message.empty())
        s += ": " + message;
    else if (reason.empty() && !body.empty())
        s += ": " + truncated(body);
    return s;
}

Response Client::Impl::request(const std::string& method, const std::string& path, const std::string* body,
                               const std::string& content_type)
{
    Response resp;
    Raw r = perform(method, path, body, content_type, append_to_string, &resp.body, cfg.request_timeout_ms);
    if (r.code == CURLE_OK && r.status == 401 && reload_token()) {
        resp.body.clear();
        r = perform(method, path, body, content_type, append_to_string, &resp.body, cfg.request_timeout_ms);
    }
    resp.status = r.status;
    if (r.code != CURLE_OK)
        resp.error = transport_error(method, path, r, cfg.request_timeout_ms);
    else if (r.status < 200 || r.status >= 300)
        resp.error = explain(method, path, r.status, resp.body);
    return resp;
}

Response Client::get(const std::string& path) { return impl_->request("GET", path, nullptr, ""); }

Response Client::patch(const std::string& path, const std::string& body, const std::string& content_type)
{
    if (content_type != kMergePatch && content_type != kStrategicMergePatch && content_type != kJsonPatch &&
        content_type != kApplyPatch)
        throw Error("PATCH " + path + ": content type \"" + content_type + "\" is not one the API server accepts (" +
                    kMergePatch + ", " + kStrategicMergePatch + ", " + kJsonPatch + ", " + kApplyPatch + ")");
    return impl_->request("PATCH", path, &body, content_type);
}

Response Client::post(const std::string& path, const std::string& body)
{
    return impl_->request("POST", path, &body, "application/json");
}

Response Client::put(const std::string& path, const std::string& body)
{
    return impl_->request("PUT", path, &body, "application/json");
}

Response Client::del(const std::string& path) { return impl_->request("DELETE", path, nullptr, ""); }

ListResult Client::list(const std::string& path)
{
    ListResult out;
    std::string cont;
    bool paginate = true;
    bool restarted = false;
    for (;;) {
        std::string p = path;
        if (paginate) {
            p += query_separator(path) + "limit=500";
            if (!cont.empty())
                p += "&continue=" + url_escape(cont);
        }
        const Response r = get(p);
        if (r.status == 410 && !cont.empty() && !restarted) {
            // The continue token expired (etcd compacted): one full list.
            restarted = true;
            paginate = false;
            cont.clear();
            out = ListResult{};
            continue;
        }
        if (!r.ok())
            throw ApiError(r.status, r.error);
        const JsonPtr root = parse_json(r.body);
        json_object* items = member(root.get(), "items");
        if (!root || !json_object_is_type(root.get(), json_type_object) ||
            (items && !json_object_is_type(items, json_type_array) && !json_object_is_type(items, json_type_null)))
            throw ApiError(r.status, "GET " + p + ": the API server's reply is not a list: " + truncated(r.body));
        json_object* md = member(root.get(), "metadata");
        std::string kind = string_member(root.get(), "kind");
        if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0)
            kind.resize(kind.size() - 4);
        const std::string api_version = string_member(root.get(), "apiVersion");
        const size_t n = items && json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
        for (size_t i = 0; i < n; ++i) {
            json_object* it = json_object_array_get_idx(items, i);
            if (!json_object_is_type(it, json_type_object))
                throw ApiError(r.status, "GET " + p + ": item " + std::to_string(i) + " is not an object");
            // Typed lists leave kind and apiVersion off their items; watch
            // events carry them: put them back so both look the same.
            if (!member(it, "kind") && !kind.empty())
                json_object_object_add(it, "kind", json_object_new_string(kind.c_str()));
            if (!member(it, "apiVersion") && !api_version.empty())
                json_object_object_add(it, "apiVersion", json_object_new_string(api_version.c_str()));
            out.items.push_back(json_text(it));
        }
        out.resource_version = string_member(md, "resourceVersion");
        cont = paginate ? string_member(md, "continue") : "";
        if (cont.empty())
            break;
    }
    return out;
}

// ---------------------------------------------------------------------------
// Watch.

namespace {

struct WatchStream {
    CURL* h = nullptr;
    std::string path;
    const WatchCallback* on_event = nullptr;
    const std::function<void()>* on_batch = nullptr;
    std::string buf;        // a partial line
    std::string error_body; // the body of a non-200 answer
    WatchEnd end;
    bool finished = false;  // a line ended the watch (Stopped, Gone, Error)
    int batch = 0;          // events delivered from the current piece
    std::exception_ptr exc;

    void finish(WatchEnd::Reason r, long status, const std::string& error)
    {
        end.reason = r;
        end.status = status;
        end.error = error;
        finished = true;
    }

    // One line of the stream; false ends the watch.
    bool line(const std::string& text)
    {
        const JsonPtr ev = parse_json(text);
        json_object* obj = member(ev.get(), "object");
        const std::string type = string_member(ev.get(), "type");
        if (!ev || !obj || !json_object_is_type(obj, json_type_object) || type.empty()) {
            finish(WatchEnd::Error, 200, "watch " + path + ": the API server sent a line that is not a watch event: " +
                                              truncated(text));
            return false;
        }
        const std::string rv = string_member(member(obj, "metadata"), "resourceVersion");
        if (type == "BOOKMARK") {
            if (!rv.empty())
                end.resource_version = rv;
            return true;
        }
        if (type == "ERROR") {
            json_object* code_obj = member(obj, "code");
            const long code = code_obj ? static_cast<long>(json_object_get_int64(code_obj)) : 0;
            const std::string msg = "watch " + path + ": ERROR event " + std::to_string(code) + " " +
                                    string_member(obj, "reason") + ": " + string_member(obj, "message");
            finish(code == 410 ? WatchEnd::Gone : WatchEnd::Error, code, msg);
            return false;
        }
        if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") {
            finish(WatchEnd::Error, 200, "watch " + path + ": unknown event type \"" + type + "\"");
            return false;
        }
        if (!rv.empty())
            end.resource_version = rv;
        ++end.events;
        ++batch;
        if (!(*on_event)(type, json_text(obj))) {
            finish(WatchEnd::Stopped, 200, "");
            return false;
        }
        return true;
    }

    static size_t write(char* data, size_t size, size_t n, void* userdata)
    {
        auto* s = static_cast<WatchStream*>(userdata);
        const size_t len = size * n;
        long status = 0;
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200) {
            if (s->error_body.size() < 65536)
                s->error_body.append(data, std::min<size_t>(len, 65536));
            return len;
        }
        try {
            s->buf.append(data, len);
            size_t start = 0;
            s->batch = 0;
            bool go = true;
            for (size_t nl; go && (nl = s->buf.find('\n', start)) != std::string::npos; start = nl + 1) {
                const std::string l = s->buf.substr(start, nl - start);
                if (l.find_first_not_of(" \t\r") != std::string::npos)
                    go = s->line(l);
            }
            s->buf.erase(0, start);
            if (s->batch > 0 && s->on_batch && *s->on_batch)
                (*s->on_batch)();
            if (!go)
                return 0;
            if (s->buf.size() > (256u << 20)) {
                s->finish(WatchEnd::Error, 200, "watch " + s->path + ": an event longer than 256 MiB");
                return 0;
            }
        } catch (...) {
            s->exc = std::current_exception();
            return 0;
        }
        return len;
    }
};

}  // namespace

WatchEnd Client::watch(const std::string& path, const std::string& resource_version, const WatchCallback& on_event,
                       int timeout_s, const std::function<void()>& on_batch)
{
    std::string p = path + query_separator(path) + "watch=1";
    if (!resource_version.empty())
        p += "&resourceVersion=" + url_escape(resource_version);
    p += "&allowWatchBookmarks=true";
    if (timeout_s > 0)
        p += "&timeoutSeconds=" + std::to_string(timeout_s);
    // The server ends the stream after timeoutSeconds; allow it some slack.
    const long timeout_ms = timeout_s > 0 ? (timeout_s + 30) * 1000L : 0L;

    for (int attempt = 0;; ++attempt) {
        WatchStream s;
        s.h = impl_->h;
        s.path = path;
        s.on_event = &on_event;
        s.on_batch = &on_batch;
        s.end.resource_version = resource_version;
        const Impl::Raw r = impl_->perform("GET", p, nullptr, "", &WatchStream::write, &s, timeout_ms);
        if (s.exc)
            std::rethrow_exception(s.exc);
        if (s.finished)
            return s.end;
        if (r.code == CURLE_ABORTED_BY_CALLBACK) {
            s.end.reason = WatchEnd::Stopped;
            return s.end;
        }
        if (r.status != 0 && r.status != 200) {
            if (r.status == 401 && attempt == 0 && impl_->reload_token())
                continue;
            s.end.reason = r.status == 410 ? WatchEnd::Gone : WatchEnd::Error;
            s.end.status = r.status;
            s.end.error = impl_->explain("GET", p, r.status, s.error_body);
            return s.end;
        }
        if (r.code != CURLE_OK) {
            s.end.reason = WatchEnd::Error;
            s.end.status = r.status;
            s.end.error = impl_->transport_error("GET", p, r, timeout_ms);
            return s.end;
        }
        // A clean end; a last line without its newline still counts.
        if (s.buf.find_first_not_of(" \t\r\n") != std::string::npos) {
            s.batch = 0;
            s.line(s.buf);
            if (s.batch > 0 && on_batch)
                on_batch();
            if (s.finished)
                return s.end;
        }
        s.end.reason = WatchEnd::Closed;
        s.end.status = 200;
        return s.end;
    }
}

// ---------------------------------------------------------------------------
// Informer.

Informer::Informer(Client& client, std::string list_path, std::string watch_path, OnChange on_change)
    : Informer(client, std::move(list_path), std::move(watch_path), std::move(on_change), Options{})
{
}

Informer::Informer(Client& client, std::string list_path, std::string watch_path, OnChange on_change, Options options)
    : client_(client), list_path_(std::move(list_path)), watch_path_(std::move(watch_path)),
      on_change_(std::move(on_change)), opt_(std::move(options)), backoff_(opt_.backoff_initial)
{
    if (!opt_.random) {
        auto gen = std::make_shared<std::mt19937_64>(std::random_device{}());
        opt_.random = [gen] { return std::uniform_real_distribution<double>(0.0, 1.0)(*gen); };
    }
    if (!opt_.sleep) {
        opt_.sleep = [this](std::chrono::milliseconds d) {
            const auto until = std::chrono::steady_clock::now() + d;
            for (auto now = std::chrono::steady_clock::now(); now < until; now = std::chrono::steady_clock::now()) {
                if (stop_ && stop_->load())
                    return;
                std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
                    until - now, std::chrono::milliseconds(100)));
            }
        };
    }
    if (!on_change_)
        on_change_ = [](const Store&) {};
}

std::string Informer::key_of(const std::string& object_json)
{
    const JsonPtr o = parse_json(object_json);
    json_object* md = member(o.get(), "metadata");
    const std::string name = string_member(md, "name");
    if (name.empty())
        throw Error("Kubernetes object without metadata.name: " + truncated(object_json));
    const std::string ns = string_member(md, "namespace");
    return ns.empty() ? name : ns + "/" + name;
}

void Informer::failed(const std::string& what)
{
    last_error_ = what;
    const double f = std::clamp(1.0 - opt_.jitter * opt_.random(), 0.0, 1.0);
    const auto d = std::chrono::milliseconds(static_cast<long long>(static_cast<double>(backoff_.count()) * f));
    if (opt_.log)
        opt_.log(what + "; retrying in " + std::to_string(d.count()) + " ms");
    backoff_ = std::min(backoff_ * 2, opt_.backoff_cap);
    opt_.sleep(d);
}

void Informer::succeeded() { backoff_ = opt_.backoff_initial; }

WatchEnd Informer::run_once()
{
    if (need_list_) {
        ListResult lr;
        try {
            lr = client_.list(list_path_);
        } catch (const std::exception& e) {
            WatchEnd end;
            end.reason = WatchEnd::Error;
            end.resource_version = rv_;
            end.error = e.what();
            if (const auto* api = dynamic_cast<const ApiError*>(&e))
                end.status = api->status();
            failed(end.error);
            return end;
        }
        Store fresh;
        for (auto& item : lr.items)
            fresh[key_of(item)] = std::move(item);
        store_.swap(fresh);
        rv_ = lr.resource_version;
        need_list_ = false;
        ++lists_;
        succeeded();
        on_change_(store_);
    }

    bool dirty = false;
    const auto on_event = [&](const std::string& type, const std::string& object_json) {
        const std::string key = key_of(object_json);
        if (type == "DELETED")
            store_.erase(key);
        else
            store_[key] = object_json;
        dirty = true;
        return !(stop_ && stop_->load());
    };
    const std::function<void()> on_batch = [&] {
        if (dirty) {
            dirty = false;
            on_change_(store_);
        }
    };
    const auto t0 = std::chrono::steady_clock::now();
    WatchEnd end = client_.watch(watch_path_, rv_, on_event, opt_.watch_timeout_s, on_batch);
    on_batch();
    if (!end.resource_version.empty())
        rv_ = end.resource_version;
    switch (end.reason) {
    case WatchEnd::Closed:
        // A watch the server ends at once with nothing in it, again and
        // again, would spin: count it as an error (client-go does too).
        if (end.events > 0 || std::chrono::steady_clock::now() - t0 >= std::chrono::seconds(1))
            succeeded();
        else
            failed("watch " + watch_path_ + ": the API server closed the watch at once, with no events");
        break;
    case WatchEnd::Stopped:
        break;
    case WatchEnd::Gone:
        need_list_ = true;
        if (opt_.log)
            opt_.log("watch " + watch_path_ + ": resourceVersion " + rv_ + " is gone (410); listing again");
        break;
    case WatchEnd::Error:
        failed(end.error);
        break;
    }
    return end;
}

void Informer::run(std::atomic<bool>& stop)
{
    struct Guard {
        Informer& in;
        ~Guard()
        {
            in.stop_ = nullptr;
            in.client_.set_cancel(nullptr);
        }
    } guard{*this};
    stop_ = &stop;
    client_.set_cancel(&stop);
    while (!stop.load())
        run_once();
}

}  // namespace m2g::kube
