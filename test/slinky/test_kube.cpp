// The Kubernetes client of m2g-slinky (slinky/src/kube.cpp) against
// test/slinky/fake_kube_apiserver.py: a local HTTPS server that answers in
// the API server's wire format, plays a scenario file and logs every request
// as a JSON line, which these tests read back to check what was sent.
//
// Once per binary a throwaway CA, a server certificate for 127.0.0.1, a
// client certificate and an unrelated second CA are made with openssl. Each
// test starts its own server ($M2G_PYTHON or python3, fork/exec, PORT=<n> on its stdout)
// and kills it by PID when the test ends, passed or not; the server also
// dies with this process (PR_SET_PDEATHSIG).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <json-c/json.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kube.hpp"
#include "m2g_config.h"

using m2g::kube::ApiError;
using m2g::kube::Client;
using m2g::kube::Config;
using m2g::kube::Informer;
using m2g::kube::ListResult;
using m2g::kube::Response;
using m2g::kube::WatchEnd;
using testing::HasSubstr;
using testing::StartsWith;

namespace {

// ---------------------------------------------------------------------------
// Files, JSON.

struct JsonDeleter {
    void operator()(json_object* o) const { json_object_put(o); }
};
using JsonPtr = std::unique_ptr<json_object, JsonDeleter>;

JsonPtr parse(const std::string& text) { return JsonPtr(json_tokener_parse(text.c_str())); }

// The value at a path of keys (and array indices as numbers in text), as text:
// strings as they are, anything else as JSON; "" when absent.
std::string at(json_object* o, std::initializer_list<std::string> path)
{
    for (const auto& k : path) {
        if (!o)
            return "";
        if (json_object_is_type(o, json_type_array)) {
            const size_t i = std::stoul(k);
            o = i < json_object_array_length(o) ? json_object_array_get_idx(o, i) : nullptr;
        } else if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k.c_str(), &o)) {
            return "";
        }
    }
    if (!o)
        return "";
    if (json_object_is_type(o, json_type_string))
        return json_object_get_string(o);
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

std::string at(const std::string& json, std::initializer_list<std::string> path)
{
    JsonPtr o = parse(json);
    return at(o.get(), path);
}

bool has(json_object* o, std::initializer_list<std::string> path)
{
    for (const auto& k : path)
        if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k.c_str(), &o))
            return false;
    return true;
}

void write_file(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out)
        throw std::runtime_error("cannot write " + path);
}

std::string slurp(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string base64(const std::string& in)
{
    static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                           static_cast<unsigned char>(in[i + 2]);
        out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
    }
    if (i + 1 == in.size()) {
        const unsigned v = static_cast<unsigned char>(in[i]) << 16;
        out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
    } else if (i + 2 == in.size()) {
        const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
        out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
    }
    return out;
}

std::string make_temp_dir(const std::string& under)
{
    std::string tmpl = under + "/XXXXXX";
    if (!mkdtemp(tmpl.data()))
        throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
    return tmpl;
}

// ---------------------------------------------------------------------------
// The throwaway PKI, made once per binary.

struct Pki {
    std::string dir;
    std::string ca_crt, ca_key, server_crt, server_key, client_crt, client_key, other_ca_crt;
};

Pki g_pki;

class PkiEnvironment : public testing::Environment {
  public:
    void SetUp() override
    {
        const char* tmp = std::getenv("TMPDIR");
        Pki p;
        p.dir = make_temp_dir(tmp && *tmp ? tmp : "/tmp");
        const std::string d = p.dir;
        p.ca_crt = d + "/ca.crt";
        p.ca_key = d + "/ca.key";
        p.server_crt = d + "/server.crt";
        p.server_key = d + "/server.key";
        p.client_crt = d + "/client.crt";
        p.client_key = d + "/client.key";
        p.other_ca_crt = d + "/other-ca.crt";
        write_file(d + "/server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
        write_file(d + "/client.ext", "extendedKeyUsage=clientAuth\n");
        const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
        const std::string log = " >>'" + d + "/openssl.log' 2>&1";
        const std::vector<std::string> cmds = {
            "openssl req -x509" + ec + " -keyout " + p.ca_key + " -out " + p.ca_crt +
                " -days 2 -subj /CN=m2g-test-cluster-ca" + log,
            "openssl req" + ec + " -keyout " + p.server_key + " -out " + d + "/server.csr -subj /CN=kube-apiserver" + log,
            "openssl x509 -req -in " + d + "/server.csr -CA " + p.ca_crt + " -CAkey " + p.ca_key +
                " -CAcreateserial -out " + p.server_crt + " -days 2 -extfile " + d + "/server.ext" + log,
            "openssl req" + ec + " -keyout " + p.client_key + " -out " + d + "/client.csr -subj /CN=m2g-slinky-test" + log,
            "openssl x509 -req -in " + d + "/client.csr -CA " + p.ca_crt + " -CAkey " + p.ca_key +
                " -CAcreateserial -out " + p.client_crt + " -days 2 -extfile " + d + "/client.ext" + log,
            "openssl req -x509" + ec + " -keyout " + d + "/other-ca.key -out " + p.other_ca_crt +
                " -days 2 -subj /CN=some-other-ca" + log,
        };
        for (const auto& c : cmds)
            if (std::system(c.c_str()) != 0)
                throw std::runtime_error("openssl failed: " + c + "\n" + slurp(d + "/openssl.log"));
        g_pki = p;
    }

    void TearDown() override
    {
        if (!g_pki.dir.empty() && !std::getenv("M2G_KEEP_TEST_TMP"))
            std::system(("rm -rf '" + g_pki.dir + "'").c_str());
    }
};

const testing::Environment* const g_env = testing::AddGlobalTestEnvironment(new PkiEnvironment);

// ---------------------------------------------------------------------------
// One fake API server, killed when it goes out of scope.

class FakeApiServer {
  public:
    explicit FakeApiServer(const std::string& scenario, bool client_ca = false)
    {
        dir_ = make_temp_dir(g_pki.dir);
        write_file(dir_ + "/scenario.json", scenario);
        log_ = dir_ + "/requests.jsonl";
        int fds[2];
        if (pipe(fds) != 0)
            throw std::runtime_error("pipe failed");
        const std::string script = M2G_FAKE_KUBE_APISERVER;
        const char* python = std::getenv("M2G_PYTHON");
        std::vector<std::string> args = {python && *python ? python : "python3", script, "--cert", g_pki.server_crt, "--key", g_pki.server_key,
                                         "--scenario", dir_ + "/scenario.json", "--log", log_};
        if (client_ca) {
            args.push_back("--client-ca");
            args.push_back(g_pki.ca_crt);
        }
        const pid_t parent = getpid();
        pid_ = fork();
        if (pid_ < 0)
            throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(1);
            dup2(fds[1], 1);
            close(fds[0]);
            close(fds[1]);
            std::vector<char*> argv;
            for (auto& a : args)
                argv.push_back(a.data());
            argv.push_back(nullptr);
            execvp(argv[0], argv.data());
            _exit(127);
        }
        close(fds[1]);
        std::string out;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (out.find('\n') == std::string::npos) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            pollfd pfd{fds[0], POLLIN, 0};
            if (left.count() <= 0 || poll(&pfd, 1, static_cast<int>(left.count())) <= 0)
                break;
            char buf[256];
            const ssize_t n = read(fds[0], buf, sizeof buf);
            if (n <= 0)
                break;
            out.append(buf, static_cast<size_t>(n));
        }
        close(fds[0]);
        const auto p = out.find("PORT=");
        if (p == std::string::npos) {
            stop();
            throw std::runtime_error("the fake API server did not start (stdout: \"" + out + "\")");
        }
        port_ = std::atoi(out.c_str() + p + 5);
    }

    ~FakeApiServer() { stop(); }

    FakeApiServer(const FakeApiServer&) = delete;
    FakeApiServer& operator=(const FakeApiServer&) = delete;

    std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
    int port() const { return port_; }
    const std::string& dir() const { return dir_; }

    // A config that trusts the test CA, with bearer TOKEN.
    Config config(const std::string& token = "tok") const
    {
        Config c;
        c.server = url();
        c.ca_file = g_pki.ca_crt;
        c.token = token;
        c.namespace_ = "slinky";
        c.request_timeout_ms = 20000;
        return c;
    }

    // Every request logged so far.
    std::vector<JsonPtr> requests() const
    {
        std::vector<JsonPtr> out;
        std::ifstream in(log_);
        for (std::string line; std::getline(in, line);)
            if (!line.empty())
                out.push_back(parse(line));
        return out;
    }

  private:
    void stop()
    {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            int st = 0;
            waitpid(pid_, &st, 0);
            pid_ = -1;
        }
    }

    std::string dir_, log_;
    pid_t pid_ = -1;
    int port_ = 0;
};

// Names of the objects in a list of JSON texts.
std::vector<std::string> names(const std::vector<std::string>& objects)
{
    std::vector<std::string> out;
    for (const auto& o : objects)
        out.push_back(at(o, {"metadata", "name"}));
    return out;
}

// Requests with this method whose query has (or lacks) "watch".
int count(const std::vector<JsonPtr>& log, const std::string& method, const std::string& path, bool watch)
{
    int n = 0;
    for (const auto& r : log)
        if (at(r.get(), {"method"}) == method && at(r.get(), {"path"}) == path &&
            has(r.get(), {"query", "watch"}) == watch)
            ++n;
    return n;
}

// Sets (or unsets) environment variables for one scope.
class EnvGuard {
  public:
    void set(const char* name, const char* value)
    {
        const char* old = std::getenv(name);
        saved_.push_back({name, old ? old : "", old != nullptr});
        if (value)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
    ~EnvGuard()
    {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->had)
                setenv(it->name.c_str(), it->value.c_str(), 1);
            else
                unsetenv(it->name.c_str());
        }
    }

  private:
    struct Saved {
        std::string name, value;
        bool had;
    };
    std::vector<Saved> saved_;
};

// Informer options for tests: no real sleeping, sleeps recorded.
Informer::Options test_options(std::vector<long long>* slept)
{
    Informer::Options o;
    o.watch_timeout_s = 5;
    o.random = [] { return 0.0; };
    o.sleep = [slept](std::chrono::milliseconds d) { slept->push_back(d.count()); };
    return o;
}

const char* kTwoNodes = R"({"token": "tok", "objects": {"nodes": [
    {"metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.clique": "a1b2.0"}}},
    {"metadata": {"name": "gpu-2", "labels": {"nvidia.com/gpu.clique": "a1b2.0"}}}]}})";

// ---------------------------------------------------------------------------
// Configuration.

TEST(KubeConfig, InClusterFromServiceAccountDir)
{
    FakeApiServer api(R"({"token": "sa-token-1"})");
    const std::string sa = make_temp_dir(api.dir());
    write_file(sa + "/token", "sa-token-1\n");
    write_file(sa + "/ca.crt", slurp(g_pki.ca_crt));
    write_file(sa + "/namespace", "slinky\n");
    EnvGuard env;
    env.set("KUBERNETES_SERVICE_HOST", "127.0.0.1");
    env.set("KUBERNETES_SERVICE_PORT", std::to_string(api.port()).c_str());

    const Config c = m2g::kube::in_cluster(sa);
    EXPECT_EQ(c.server, api.url());
    EXPECT_EQ(c.token, "sa-token-1");
    EXPECT_EQ(c.token_file, sa + "/token");
    EXPECT_EQ(c.ca_file, sa + "/ca.crt");
    EXPECT_EQ(c.namespace_, "slinky");
    EXPECT_FALSE(c.insecure);

    Client client(c);
    const Response r = client.get("/api/v1/nodes");
    EXPECT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(at(r.body, {"kind"}), "NodeList");
    const auto log = api.requests();
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(at(log[0].get(), {"headers", "Authorization"}), "Bearer sa-token-1");
}

TEST(KubeConfig, InClusterNamesEverythingMissing)
{
    const std::string sa = make_temp_dir(g_pki.dir);
    EnvGuard env;
    env.set("KUBERNETES_SERVICE_HOST", nullptr);
    env.set("KUBERNETES_SERVICE_PORT", nullptr);
    try {
        m2g::kube::in_cluster(sa);
        FAIL() << "in_cluster accepted an empty service-account directory";
    } catch (const m2g::Error& e) {
        const std::string m = e.what();
        EXPECT_THAT(m, HasSubstr("KUBERNETES_SERVICE_HOST is not set"));
        EXPECT_THAT(m, HasSubstr("KUBERNETES_SERVICE_PORT is not set"));
        EXPECT_THAT(m, HasSubstr(sa + "/token cannot be read"));
        EXPECT_THAT(m, HasSubstr(sa + "/ca.crt cannot be read"));
        EXPECT_THAT(m, HasSubstr(sa + "/namespace cannot be read"));
    }
    // Only the token missing: only the token named.
    write_file(sa + "/ca.crt", slurp(g_pki.ca_crt));
    write_file(sa + "/namespace", "slinky");
    env.set("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    env.set("KUBERNETES_SERVICE_PORT", "443");
    try {
        m2g::kube::in_cluster(sa);
        FAIL() << "in_cluster accepted a missing token";
    } catch (const m2g::Error& e) {
        EXPECT_THAT(e.what(), HasSubstr(sa + "/token cannot be read"));
        EXPECT_THAT(e.what(), testing::Not(HasSubstr("KUBERNETES_SERVICE_HOST")));
        EXPECT_THAT(e.what(), testing::Not(HasSubstr("ca.crt")));
    }
    // IPv6 service addresses get brackets.
    write_file(sa + "/token", "t");
    env.set("KUBERNETES_SERVICE_HOST", "fd00::1");
    EXPECT_EQ(m2g::kube::in_cluster(sa).server, "https://[fd00::1]:443");
}

std::string kubeconfig_text(const std::string& server, const std::string& ca_line, const std::string& user_lines)
{
    return "apiVersion: v1\n"
           "kind: Config\n"
           "current-context: m2g\n"
           "preferences: {}\n"
           "clusters:\n"
           "- name: other\n"
           "  cluster:\n"
           "    server: https://10.0.0.1:6443\n"
           "    insecure-skip-tls-verify: true\n"
           "- name: gb200\n"
           "  cluster:\n"
           "    server: " + server + "\n" +
           "    " + ca_line + "\n" +
           "users:\n"
           "- name: someone-else\n"
           "  user:\n"
           "    token: not-this-one\n"
           "- name: m2g-slinky\n"
           "  user:\n" + user_lines +
           "contexts:\n"
           "- name: other\n"
           "  context:\n"
           "    cluster: other\n"
           "    user: someone-else\n"
           "- name: m2g\n"
           "  context:\n"
           "    cluster: gb200\n"
           "    user: m2g-slinky\n"
           "    namespace: slinky\n";
}

TEST(KubeConfig, KubeconfigWithCaDataAndToken)
{
    FakeApiServer api(R"({"token": "kc-token"})");
    const std::string path = api.dir() + "/kubeconfig";
    write_file(path, kubeconfig_text(api.url(), "certificate-authority-data: " + base64(slurp(g_pki.ca_crt)),
                                     "    token: kc-token\n"));
    const Config c = m2g::kube::from_kubeconfig(path);
    EXPECT_EQ(c.server, api.url());
    EXPECT_EQ(c.ca_data, slurp(g_pki.ca_crt));
    EXPECT_TRUE(c.ca_file.empty());
    EXPECT_EQ(c.token, "kc-token");
    EXPECT_EQ(c.namespace_, "slinky");
    EXPECT_FALSE(c.insecure);

    Client client(c);
    const Response r = client.get("/api/v1/nodes");
    EXPECT_TRUE(r.ok()) << r.error;
    const auto log = api.requests();
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(at(log[0].get(), {"headers", "Authorization"}), "Bearer kc-token");

    // Another context by name; its namespace defaults to "default".
    const Config o = m2g::kube::from_kubeconfig(path, "other");
    EXPECT_EQ(o.server, "https://10.0.0.1:6443");
    EXPECT_EQ(o.token, "not-this-one");
    EXPECT_EQ(o.namespace_, "default");
    EXPECT_TRUE(o.insecure);  // said explicitly in that file
}

TEST(KubeConfig, KubeconfigRelativeFilesTokenFileAndClientCertificate)
{
    FakeApiServer api(R"({"tokens": ["file-token"], "client_cert_cn": "m2g-slinky-test"})", /*client_ca=*/true);
    write_file(api.dir() + "/cluster-ca.crt", slurp(g_pki.ca_crt));
    write_file(api.dir() + "/token", "file-token\n");
    const std::string path = api.dir() + "/kubeconfig";
    write_file(path, kubeconfig_text(api.url(), "certificate-authority: cluster-ca.crt", "    tokenFile: token\n"));
    Config c = m2g::kube::from_kubeconfig(path);
    EXPECT_EQ(c.ca_file, api.dir() + "/cluster-ca.crt");
    EXPECT_EQ(c.token_file, api.dir() + "/token");
    EXPECT_EQ(c.token, "file-token");
    {
        Client client(c);
        EXPECT_TRUE(client.get("/api/v1/nodes").ok());
    }

    // A client certificate as kubeconfig data, and no token.
    write_file(path, kubeconfig_text(api.url(), "certificate-authority: cluster-ca.crt",
                                     "    client-certificate-data: " + base64(slurp(g_pki.client_crt)) + "\n" +
                                         "    client-key-data: " + base64(slurp(g_pki.client_key)) + "\n"));
    c = m2g::kube::from_kubeconfig(path);
    EXPECT_TRUE(c.token.empty());
    EXPECT_EQ(c.client_cert_data, slurp(g_pki.client_crt));
    {
        Client client(c);
        const Response r = client.get("/api/v1/nodes");
        EXPECT_TRUE(r.ok()) << r.error;
    }
    const auto log = api.requests();
    ASSERT_EQ(log.size(), 2u);
    EXPECT_EQ(at(log[0].get(), {"headers", "Authorization"}), "Bearer file-token");
    EXPECT_EQ(at(log[1].get(), {"client_cn"}), "m2g-slinky-test");
    EXPECT_FALSE(has(log[1].get(), {"headers", "Authorization"}));
}

TEST(KubeConfig, KubeconfigErrorsNameTheFileAndTheKey)
{
    const std::string dir = make_temp_dir(g_pki.dir);
    const std::string path = dir + "/config";
    auto error_of = [&](const std::string& text, const std::string& context = "") -> std::string {
        write_file(path, text);
        try {
            m2g::kube::from_kubeconfig(path, context);
        } catch (const m2g::Error& e) {
            return e.what();
        }
        return "(no error)";
    };
    const std::string ok_user = "    token: t\n";
    const std::string good = kubeconfig_text("https://127.0.0.1:6443", "certificate-authority: ca.crt", ok_user);

    EXPECT_THAT(error_of(good, "nope"), StartsWith("kubeconfig " + path + ": "));
    EXPECT_THAT(error_of(good, "nope"), HasSubstr("context \"nope\" is not in contexts[]"));
    std::string no_server = good;
    no_server.replace(no_server.find("    server: https://127.0.0.1:6443\n"), 35, "");
    EXPECT_THAT(error_of(no_server), HasSubstr("clusters[name=gb200].cluster.server is missing"));
    std::string no_current = good;
    no_current.replace(no_current.find("current-context: m2g\n"), 21, "");
    EXPECT_THAT(error_of(no_current), HasSubstr("current-context is missing"));
    EXPECT_THAT(error_of(kubeconfig_text("https://h:1", "certificate-authority-data: not*base64", ok_user)),
                HasSubstr("clusters[name=gb200].cluster.certificate-authority-data is not valid base64"));
    EXPECT_THAT(error_of(kubeconfig_text("https://h:1", "certificate-authority: ca.crt",
                                         "    exec:\n      command: aws\n")),
                HasSubstr("users[name=m2g-slinky].user: exec and auth-provider credential plugins are not supported"));
    EXPECT_THAT(error_of(kubeconfig_text("https://h:1", "certificate-authority: ca.crt",
                                         "    client-certificate: c.crt\n")),
                HasSubstr("users[name=m2g-slinky].user.client-key(-data) is missing"));
    EXPECT_THAT(error_of(kubeconfig_text("https://h:1", "certificate-authority: ca.crt",
                                         "    tokenFile: /nonexistent/token\n")),
                HasSubstr("tokenFile /nonexistent/token cannot be read"));
    EXPECT_THAT(error_of("clusters: [\n"), HasSubstr("kubeconfig " + path + ": line "));
    try {
        m2g::kube::from_kubeconfig(dir + "/missing");
        ADD_FAILURE() << "a missing kubeconfig was accepted";
    } catch (const m2g::Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("kubeconfig " + dir + "/missing: cannot be read"));
    }
}

TEST(KubeConfig, ClientRefusesPlainHttp)
{
    Config c;
    c.server = "http://127.0.0.1:8001";
    EXPECT_THROW(Client{c}, m2g::Error);
    try {
        Client client(c);
    } catch (const m2g::Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("https only"));
    }
}

// ---------------------------------------------------------------------------
// TLS: always verified, never a fallback to insecure.

TEST(KubeTls, WrongCaFailsAndNothingIsServed)
{
    FakeApiServer api(kTwoNodes);
    Config c = api.config();
    c.ca_file = g_pki.other_ca_crt;
    {
        Client client(c);
        const Response r = client.get("/api/v1/nodes");
        EXPECT_FALSE(r.ok());
        EXPECT_EQ(r.status, 0);
        EXPECT_THAT(r.error, StartsWith("TLS: the API server " + api.url() + " was not verified against the CA in " +
                                        g_pki.other_ca_crt));
        try {
            client.list("/api/v1/nodes");
            ADD_FAILURE() << "list succeeded with the wrong CA";
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status(), 0);
            EXPECT_THAT(e.what(), StartsWith("TLS: "));
        }
        const WatchEnd w = client.watch("/api/v1/nodes", "1", [](const std::string&, const std::string&) { return true; }, 5);
        EXPECT_EQ(w.reason, WatchEnd::Error);
        EXPECT_THAT(w.error, StartsWith("TLS: "));
    }
    // The wrong CA as kubeconfig data, and no CA at all (the system store
    // does not know the test CA): both fail too.
    c.ca_file.clear();
    c.ca_data = slurp(g_pki.other_ca_crt);
    EXPECT_THAT(Client(c).get("/api/v1/nodes").error, HasSubstr("the CA from certificate-authority-data"));
    c.ca_data.clear();
    EXPECT_THAT(Client(c).get("/api/v1/nodes").error, HasSubstr("the system's CA store"));
    EXPECT_TRUE(api.requests().empty()) << "the server answered a request the client should not have sent";

    // The right CA works on the same server.
    c.ca_file = g_pki.ca_crt;
    EXPECT_TRUE(Client(c).get("/api/v1/nodes").ok());
}

// ---------------------------------------------------------------------------
// Lists.

TEST(KubeList, FollowsContinueWithLimit500)
{
    FakeApiServer api(R"({"token": "tok", "generate": [{"resource": "nodes", "count": 1203, "prefix": "gpu-"}]})");
    Client client(api.config());
    const ListResult l = client.list("/api/v1/nodes");
    ASSERT_EQ(l.items.size(), 1203u);
    EXPECT_EQ(l.resource_version, "2203");  // 1000 + one per object
    EXPECT_EQ(at(l.items.front(), {"metadata", "name"}), "gpu-0000");
    EXPECT_EQ(at(l.items.back(), {"metadata", "name"}), "gpu-1202");
    // Typed lists leave kind/apiVersion off their items; the client puts them back.
    EXPECT_EQ(at(l.items[7], {"kind"}), "Node");
    EXPECT_EQ(at(l.items[7], {"apiVersion"}), "v1");
    EXPECT_EQ(at(l.items[7], {"status", "allocatable", "nvidia.com/gpu"}), "4");

    const auto log = api.requests();
    ASSERT_EQ(log.size(), 3u);
    for (size_t i = 0; i < log.size(); ++i) {
        EXPECT_EQ(at(log[i].get(), {"method"}), "GET");
        EXPECT_EQ(at(log[i].get(), {"path"}), "/api/v1/nodes");
        EXPECT_EQ(at(log[i].get(), {"query", "limit"}), "500");
        EXPECT_EQ(has(log[i].get(), {"query", "continue"}), i > 0);
    }
}

TEST(KubeList, ExpiredContinueTokenRestartsWithoutPagination)
{
    FakeApiServer api(R"({"token": "tok", "max_page": 2,
        "generate": [{"resource": "nodes", "count": 5, "prefix": "n"}],
        "force": [{"method": "GET", "path": "/api/v1/nodes", "query_has": ["continue"], "status": 410,
                   "reason": "Expired", "times": 1,
                   "message": "The provided continue parameter is too old to display a consistent list result."}]})");
    Client client(api.config());
    const ListResult l = client.list("/api/v1/nodes");
    EXPECT_EQ(names(l.items), (std::vector<std::string>{"n0000", "n0001", "n0002", "n0003", "n0004"}));
    const auto log = api.requests();
    ASSERT_EQ(log.size(), 3u);
    EXPECT_EQ(at(log[1].get(), {"status"}), "410");
    EXPECT_FALSE(has(log[2].get(), {"query", "limit"}));
    EXPECT_FALSE(has(log[2].get(), {"query", "continue"}));
}

TEST(KubeList, NamespacedPodsByLabelSelector)
{
    FakeApiServer api(R"({"token": "tok", "objects": {"pods": [
        {"metadata": {"name": "slurm-compute-gb200-0", "namespace": "slinky",
                      "labels": {"app.kubernetes.io/name": "slurmd", "app.kubernetes.io/instance": "gb200"}},
         "spec": {"nodeName": "gpu-1", "hostname": "gb200-0"}},
        {"metadata": {"name": "slurm-controller-0", "namespace": "slinky",
                      "labels": {"app.kubernetes.io/name": "slurmctld"}}, "spec": {"nodeName": "cpu-1"}},
        {"metadata": {"name": "slurmd-elsewhere", "namespace": "other",
                      "labels": {"app.kubernetes.io/name": "slurmd"}}, "spec": {"nodeName": "gpu-9"}}]}})");
    Client client(api.config());
    const ListResult l = client.list("/api/v1/namespaces/slinky/pods?labelSelector=app.kubernetes.io%2Fname%3Dslurmd");
    ASSERT_EQ(names(l.items), std::vector<std::string>{"slurm-compute-gb200-0"});
    EXPECT_EQ(at(l.items[0], {"kind"}), "Pod");
    EXPECT_EQ(at(l.items[0], {"metadata", "namespace"}), "slinky");
    EXPECT_EQ(at(l.items[0], {"spec", "nodeName"}), "gpu-1");
    EXPECT_EQ(at(l.items[0], {"spec", "hostname"}), "gb200-0");
    EXPECT_EQ(at(l.items[0], {"status", "phase"}), "Running");
    const auto log = api.requests();
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(at(log[0].get(), {"raw_query"}), "labelSelector=app.kubernetes.io%2Fname%3Dslurmd&limit=500");
    EXPECT_EQ(at(log[0].get(), {"query", "labelSelector"}), "app.kubernetes.io/name=slurmd");
}

// ---------------------------------------------------------------------------
// Watches.

struct Seen {
    std::vector<std::string> events;  // "TYPE name rv"
    int batches = 0;
    WatchEnd end;
};

Seen watch_all(Client& client, const std::string& path, const std::string& rv, int stop_after = -1)
{
    Seen s;
    s.end = client.watch(
        path, rv,
        [&](const std::string& type, const std::string& obj) {
            s.events.push_back(type + " " + at(obj, {"metadata", "name"}) + " " +
                               at(obj, {"metadata", "resourceVersion"}));
            return stop_after < 0 || static_cast<int>(s.events.size()) < stop_after;
        },
        5, [&] { ++s.batches; });
    return s;
}

TEST(KubeWatch, EventsSplitAcrossChunksAndSeveralInOneChunk)
{
    FakeApiServer api(R"({"token": "tok", "watches": {"/api/v1/nodes": [{"batches": [
        {"chunk_bytes": 97, "split_delay": 0.01, "events": [
            {"type": "ADDED", "object": {"metadata": {"name": "gpu-1", "resourceVersion": "101"}}},
            {"type": "MODIFIED", "object": {"metadata": {"name": "gpu-1", "resourceVersion": "102",
                "labels": {"nvidia.com/gpu.clique": "a1b2.7"}}}}]},
        {"delay": 0.1, "split_at": [5, 240], "events": [
            {"type": "ADDED", "object": {"metadata": {"name": "gpu-2", "resourceVersion": "103"}}}]},
        {"delay": 0.1, "events": [
            {"type": "DELETED", "object": {"metadata": {"name": "gpu-1", "resourceVersion": "104"}}},
            {"type": "ADDED", "object": {"metadata": {"name": "gpu-3", "resourceVersion": "105"}}},
            {"type": "MODIFIED", "object": {"metadata": {"name": "gpu-2", "resourceVersion": "106"}}}]}]}]}})");
    Client client(api.config());
    const Seen s = watch_all(client, "/api/v1/nodes", "100");
    EXPECT_EQ(s.events, (std::vector<std::string>{"ADDED gpu-1 101", "MODIFIED gpu-1 102", "ADDED gpu-2 103",
                                                   "DELETED gpu-1 104", "ADDED gpu-3 105", "MODIFIED gpu-2 106"}));
    EXPECT_EQ(s.end.reason, WatchEnd::Closed) << s.end.error;
    EXPECT_EQ(s.end.resource_version, "106");
    EXPECT_EQ(s.end.events, 6);
    // on_batch runs after each received piece that completed an event: the
    // first batch, cut into 97-byte chunks, completes its two events in two
    // different pieces; the others one piece each.
    EXPECT_GE(s.batches, 4);
    const auto log = api.requests();
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(at(log[0].get(), {"raw_query"}), "watch=1&resourceVersion=100&allowWatchBookmarks=true&timeoutSeconds=5");
}

TEST(KubeWatch, BookmarkMovesTheResourceVersionOnly)
{
    FakeApiServer api(R"({"token": "tok", "watches": {"/api/v1/nodes": [{"batches": [
        {"events": [{"type": "ADDED", "object": {"metadata": {"name": "gpu-1", "resourceVersion": "201"}}},
                    {"type": "BOOKMARK", "resourceVersion": "5000"}]}]}]}})");
    Client client(api.config());
    const Seen s = watch_all(client, "/api/v1/nodes", "200");
    EXPECT_EQ(s.events, std::vector<std::string>{"ADDED gpu-1 201"});
    EXPECT_EQ(s.end.reason, WatchEnd::Closed);
    EXPECT_EQ(s.end.resource_version, "5000");
}

TEST(KubeWatch, ErrorEvent410IsGone)
{
    FakeApiServer api(R"({"token": "tok", "watches": {"/api/v1/nodes": [{"batches": [
        {"events": [{"type": "ADDED", "object": {"metadata": {"name": "gpu-1", "resourceVersion": "301"}}},
                    {"type": "ERROR", "code": 410, "reason": "Expired"}]}]}]}})");
    Client client(api.config());
    const Seen s = watch_all(client, "/api/v1/nodes", "300");
    EXPECT_EQ(s.end.reason, WatchEnd::Gone);
    EXPECT_EQ(s.end.status, 410);
    EXPECT_EQ(s.end.events, 1);
    EXPECT_EQ(s.end.resource_version, "301");
    EXPECT_THAT(s.end.error, HasSubstr("410 Expired: too old resource version: 300"));
}

TEST(KubeWatch, Http410IsGoneAndOtherStatusesAreErrors)
{
    FakeApiServer api(R"({"token": "tok", "watches": {"/api/v1/nodes": [
        {"status": 410, "reason": "Expired"},
        {"status": 500, "message": "etcdserver: request timed out"},
        {"batches": [{"events": [{"type": "ERROR", "code": 500, "reason": "InternalError", "message": "boom"}]}]}]}})");
    Client client(api.config());
    Seen s = watch_all(client, "/api/v1/nodes", "1");
    EXPECT_EQ(s.end.reason, WatchEnd::Gone);
    EXPECT_EQ(s.end.status, 410);
    s = watch_all(client, "/api/v1/nodes", "1");
    EXPECT_EQ(s.end.reason, WatchEnd::Error);
    EXPECT_EQ(s.end.status, 500);
    EXPECT_THAT(s.end.error, HasSubstr("HTTP 500 InternalError: etcdserver: request timed out"));
    s = watch_all(client, "/api/v1/nodes", "1");
    EXPECT_EQ(s.end.reason, WatchEnd::Error);
    EXPECT_EQ(s.end.status, 500);
    EXPECT_THAT(s.end.error, HasSubstr("InternalError: boom"));
}

TEST(KubeWatch, CallbackReturningFalseStops)
{
    FakeApiServer api(R"({"token": "tok", "watches": {"/api/v1/nodes": [{"batches": [
        {"events": [{"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "11"}}},
                    {"type": "ADDED", "object": {"metadata": {"name": "b", "resourceVersion": "12"}}},
                    {"type": "ADDED", "object": {"metadata": {"name": "c", "resourceVersion": "13"}}}]}],
        "hold": 30}]}})");
    Client client(api.config());
    const auto t0 = std::chrono::steady_clock::now();
    const Seen s = watch_all(client, "/api/v1/nodes", "10", /*stop_after=*/2);
    EXPECT_EQ(s.end.reason, WatchEnd::Stopped);
    EXPECT_EQ(s.events, (std::vector<std::string>{"ADDED a 11", "ADDED b 12"}));
    EXPECT_EQ(s.end.resource_version, "12");
    // It did not wait for the server to end the stream (held open 30 s).
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(25));
    // The handle is usable again afterwards.
    EXPECT_TRUE(client.get("/api/v1/nodes").ok());
}

TEST(KubeWatch, MalformedLineAndDroppedStreamAreErrors)
{
    FakeApiServer api(R"({"token": "tok", "watches": {"/api/v1/nodes": [
        {"batches": [{"raw": "<html>502 Bad Gateway</html>\n"}]},
        {"batches": [{"events": [{"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "21"}}}]}],
         "abort": true}]}})");
    Client client(api.config());
    Seen s = watch_all(client, "/api/v1/nodes", "20");
    EXPECT_EQ(s.end.reason, WatchEnd::Error);
    EXPECT_THAT(s.end.error, HasSubstr("not a watch event: <html>502 Bad Gateway</html>"));
    s = watch_all(client, "/api/v1/nodes", "20");
    EXPECT_EQ(s.end.reason, WatchEnd::Error);
    EXPECT_EQ(s.events, std::vector<std::string>{"ADDED a 21"});
    EXPECT_EQ(s.end.resource_version, "21");
}

// ---------------------------------------------------------------------------
// Informer.

TEST(KubeInformer, ListThenWatchKeepsTheStoreCurrent)
{
    FakeApiServer api(R"({"token": "tok", "resource_version": 500, "objects": {"nodes": [
        {"metadata": {"name": "gpu-1"}}, {"metadata": {"name": "gpu-2"}}]},
        "watches": {"/api/v1/nodes": [{"batches": [
            {"events": [{"type": "MODIFIED", "object": {"metadata": {"name": "gpu-1",
                            "labels": {"nvidia.com/gpu.clique": "a1b2.3"}}, "spec": {"unschedulable": true}}}]},
            {"delay": 0.05, "events": [
                {"type": "DELETED", "object": {"metadata": {"name": "gpu-2"}}},
                {"type": "ADDED", "object": {"metadata": {"name": "gpu-3"}}}]}]}]}})");
    Client client(api.config());
    std::vector<std::vector<std::string>> changes;
    std::vector<long long> slept;
    Informer inf(client, "/api/v1/nodes", "/api/v1/nodes",
                 [&](const Informer::Store& s) {
                     std::vector<std::string> keys;
                     for (const auto& kv : s)
                         keys.push_back(kv.first);
                     changes.push_back(keys);
                 },
                 test_options(&slept));
    const WatchEnd end = inf.run_once();
    EXPECT_EQ(end.reason, WatchEnd::Closed) << end.error;
    ASSERT_GE(changes.size(), 2u);
    EXPECT_EQ(changes.front(), (std::vector<std::string>{"gpu-1", "gpu-2"}));  // after the list
    EXPECT_EQ(changes.back(), (std::vector<std::string>{"gpu-1", "gpu-3"}));
    EXPECT_EQ(at(inf.store().at("gpu-1"), {"metadata", "labels", "nvidia.com/gpu.clique"}), "a1b2.3");
    EXPECT_EQ(at(inf.store().at("gpu-1"), {"spec", "unschedulable"}), "true");
    EXPECT_EQ(at(inf.store().at("gpu-3"), {"kind"}), "Node");
    EXPECT_EQ(inf.resource_version(), "505");  // 2 listed, then 3 events
    EXPECT_TRUE(slept.empty());
    const auto log = api.requests();
    ASSERT_EQ(log.size(), 2u);
    EXPECT_EQ(at(log[1].get(), {"query", "resourceVersion"}), "502");  // the list's
    EXPECT_EQ(at(log[1].get(), {"query", "allowWatchBookmarks"}), "true");
}

TEST(KubeInformer, NamespacedObjectsAreKeyedByNamespaceAndName)
{
    FakeApiServer api(R"({"token": "tok", "objects": {"pods": [
        {"metadata": {"name": "slurm-compute-gb200-0", "namespace": "slinky"}, "spec": {"nodeName": "gpu-1"}},
        {"metadata": {"name": "slurm-compute-gb200-0", "namespace": "other"}, "spec": {"nodeName": "gpu-2"}}]}})");
    Client client(api.config());
    std::vector<long long> slept;
    Informer inf(client, "/api/v1/pods", "/api/v1/pods", nullptr, test_options(&slept));
    inf.run_once();
    ASSERT_EQ(inf.store().size(), 2u);
    EXPECT_EQ(at(inf.store().at("slinky/slurm-compute-gb200-0"), {"spec", "nodeName"}), "gpu-1");
    EXPECT_EQ(at(inf.store().at("other/slurm-compute-gb200-0"), {"spec", "nodeName"}), "gpu-2");
}

TEST(KubeInformer, RelistsAfterGone)
{
    FakeApiServer api(R"({"token": "tok", "objects": {"nodes": [{"metadata": {"name": "gpu-1"}}]},
        "watches": {"/api/v1/nodes": [
            {"batches": [{"events": [{"type": "ADDED", "object": {"metadata": {"name": "gpu-2"}}},
                                     {"type": "ERROR", "code": 410}]}]},
            {"status": 410},
            {"batches": [{"events": [{"type": "ADDED", "object": {"metadata": {"name": "gpu-3"}}}]}]}]}})");
    Client client(api.config());
    std::vector<long long> slept;
    int changes = 0;
    Informer inf(client, "/api/v1/nodes", "/api/v1/nodes", [&](const Informer::Store&) { ++changes; },
                 test_options(&slept));
    EXPECT_EQ(inf.run_once().reason, WatchEnd::Gone);  // ERROR event with a 410 Status
    EXPECT_EQ(inf.lists(), 1);
    EXPECT_EQ(inf.run_once().reason, WatchEnd::Gone);  // HTTP 410
    EXPECT_EQ(inf.lists(), 2);
    EXPECT_EQ(inf.store().size(), 2u);  // gpu-2 came from the watch and is on the server now
    EXPECT_EQ(inf.run_once().reason, WatchEnd::Closed);
    EXPECT_EQ(inf.lists(), 3);
    EXPECT_EQ(inf.store().size(), 3u);
    EXPECT_TRUE(slept.empty()) << "a relist after 410 is not an error";

    const auto log = api.requests();
    EXPECT_EQ(count(log, "GET", "/api/v1/nodes", /*watch=*/false), 3);
    EXPECT_EQ(count(log, "GET", "/api/v1/nodes", /*watch=*/true), 3);
    // Every watch starts from the resourceVersion of the list before it.
    std::string list_rv;
    for (const auto& r : log) {
        if (!has(r.get(), {"query", "watch"}))
            continue;
        EXPECT_FALSE(at(r.get(), {"query", "resourceVersion"}).empty());
    }
    (void)list_rv;
}

TEST(KubeInformer, BacksOffOnErrorsDoublingToTheCapAndResetsAfterSuccess)
{
    FakeApiServer api(R"({"token": "tok", "objects": {"nodes": [{"metadata": {"name": "gpu-1"}}]},
        "force": [{"method": "GET", "path": "/api/v1/nodes", "query_absent": ["watch"], "status": 500, "times": 7}],
        "watches": {"/api/v1/nodes": [
            {"status": 500},
            {"status": 503, "reason": "ServiceUnavailable"},
            {"batches": [{"events": [{"type": "ADDED", "object": {"metadata": {"name": "gpu-2"}}}]}]},
            {"status": 500}]}})");
    Client client(api.config());
    std::vector<long long> slept;
    std::vector<std::string> logged;
    Informer::Options o = test_options(&slept);
    o.log = [&](const std::string& m) { logged.push_back(m); };
    Informer inf(client, "/api/v1/nodes", "/api/v1/nodes", nullptr, o);
    for (int i = 0; i < 7; ++i)
        EXPECT_EQ(inf.run_once().reason, WatchEnd::Error);
    EXPECT_EQ(slept, (std::vector<long long>{1000, 2000, 4000, 8000, 16000, 30000, 30000}));
    EXPECT_THAT(inf.last_error(), HasSubstr("HTTP 500 InternalError"));
    EXPECT_THAT(logged.back(), HasSubstr("retrying in 30000 ms"));
    EXPECT_EQ(inf.lists(), 0);

    slept.clear();
    EXPECT_EQ(inf.run_once().reason, WatchEnd::Error);   // list works (reset), watch 500
    EXPECT_EQ(inf.lists(), 1);
    EXPECT_EQ(inf.run_once().reason, WatchEnd::Error);   // watch 503
    EXPECT_EQ(inf.run_once().reason, WatchEnd::Closed);  // an event: success, reset
    EXPECT_EQ(inf.run_once().reason, WatchEnd::Error);   // watch 500
    EXPECT_EQ(slept, (std::vector<long long>{1000, 2000, 1000}));
    EXPECT_EQ(inf.lists(), 1);  // errors re-watch; only 410 relists
}

TEST(KubeInformer, JitterShortensSleepsWithinBounds)
{
    FakeApiServer api(R"({"token": "tok",
        "force": [{"method": "GET", "path": "/api/v1/nodes", "status": 500, "times": 6}]})");
    Client client(api.config());
    std::vector<long long> slept;
    Informer::Options o = test_options(&slept);
    o.random = {};  // the real one
    o.jitter = 0.2;
    Informer inf(client, "/api/v1/nodes", "/api/v1/nodes", nullptr, o);
    for (int i = 0; i < 6; ++i)
        inf.run_once();
    const std::vector<long long> nominal = {1000, 2000, 4000, 8000, 16000, 30000};
    ASSERT_EQ(slept.size(), nominal.size());
    for (size_t i = 0; i < nominal.size(); ++i) {
        EXPECT_LE(slept[i], nominal[i]);
        EXPECT_GE(slept[i], nominal[i] * 8 / 10);
    }
}

TEST(KubeInformer, RunReturnsWhenStopped)
{
    FakeApiServer api(R"({"token": "tok", "objects": {"nodes": [{"metadata": {"name": "gpu-1"}}]},
        "watches": {"/api/v1/nodes": [
            {"batches": [{"delay": 0.1, "events": [{"type": "ADDED", "object": {"metadata": {"name": "gpu-2"}}}]}]},
            {"batches": [{"delay": 0.1, "events": [{"type": "ADDED", "object": {"metadata": {"name": "gpu-3"}}}]}],
             "hold": 30}]}})");
    Client client(api.config());
    std::atomic<bool> stop{false};
    Informer::Options o;
    o.watch_timeout_s = 60;
    Informer inf(client, "/api/v1/nodes", "/api/v1/nodes",
                 [&](const Informer::Store& s) {
                     if (s.count("gpu-3"))
                         stop = true;
                 },
                 o);
    auto done = std::async(std::launch::async, [&] { inf.run(stop); });
    // The second watch is held open for 30 s: stop must not wait for it.
    const bool finished = done.wait_for(std::chrono::seconds(15)) == std::future_status::ready;
    if (!finished)
        stop = true;
    done.wait();
    EXPECT_TRUE(finished) << "Informer::run did not return after stop was set";
    EXPECT_EQ(inf.store().size(), 3u);
}

// ---------------------------------------------------------------------------
// Authentication and authorization.

TEST(KubeAuth, RejectedTokenSaysSo)
{
    FakeApiServer api(R"({"token": "the-real-one"})");
    Client client(api.config("stale"));
    const Response r = client.get("/api/v1/nodes");
    EXPECT_EQ(r.status, 401);
    EXPECT_THAT(r.error, StartsWith("unauthorized: the service account token was rejected"));
    try {
        client.list("/api/v1/nodes");
        ADD_FAILURE() << "list succeeded with a rejected token";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 401);
        EXPECT_THAT(e.what(), StartsWith("unauthorized: the service account token was rejected"));
    }
    const WatchEnd w = client.watch("/api/v1/nodes", "1", [](const std::string&, const std::string&) { return true; }, 5);
    EXPECT_EQ(w.reason, WatchEnd::Error);
    EXPECT_EQ(w.status, 401);
    EXPECT_THAT(w.error, StartsWith("unauthorized: the service account token was rejected"));
    EXPECT_EQ(api.requests().size(), 3u);  // no token file: nothing to retry with
}

TEST(KubeAuth, RotatedTokenFileIsReadAgainOnce)
{
    // token-1 is no longer accepted; the watch's 401 stands for token-2
    // expiring while the client still holds it.
    FakeApiServer api(R"({"tokens": ["token-2", "token-3"],
        "force": [{"method": "GET", "path": "/api/v1/nodes", "query": {"watch": "1"}, "status": 401, "times": 1}]})");
    const std::string file = api.dir() + "/token";
    write_file(file, "token-1\n");
    Config c = api.config("");
    c.token_file = file;
    Client client(c);  // reads token-1
    write_file(file, "token-2\n");  // the kubelet rotated it
    Response r = client.get("/api/v1/nodes");
    EXPECT_TRUE(r.ok()) << r.error;

    write_file(file, "token-3\n");
    const WatchEnd w = client.watch("/api/v1/nodes", "1", [](const std::string&, const std::string&) { return true; }, 5);
    EXPECT_EQ(w.reason, WatchEnd::Closed) << w.error;

    // Rejected and unchanged on disk: one request, then the message.
    write_file(file, "token-3\n");
    Config bad = api.config("token-0");
    bad.token_file = api.dir() + "/token-0";
    write_file(bad.token_file, "token-0");
    Client stale(bad);
    r = stale.get("/api/v1/nodes");
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(r.error, "unauthorized: the service account token was rejected (GET /api/v1/nodes; " + bad.token_file +
                           " re-read)");

    const auto log = api.requests();
    std::vector<std::string> auth;
    for (const auto& e : log)
        auth.push_back(at(e.get(), {"headers", "Authorization"}) + " " + at(e.get(), {"status"}));
    EXPECT_EQ(auth, (std::vector<std::string>{"Bearer token-1 401", "Bearer token-2 200", "Bearer token-2 401",
                                              "Bearer token-3 200", "Bearer token-0 401"}));
}

TEST(KubeAuth, ForbiddenNamesTheVerbResourceAndRbacRule)
{
    FakeApiServer api(R"({"token": "tok", "objects": {"nodes": [{"metadata": {"name": "gpu-1"}}]},
        "force": [
            {"method": "PATCH", "path": "/api/v1/nodes/gpu-1", "status": 403},
            {"method": "PATCH", "path": "/api/v1/nodes/gpu-1/status", "status": 403},
            {"method": "GET", "path": "/api/v1/namespaces/slinky/configmaps", "status": 403},
            {"method": "POST", "path": "/api/v1/namespaces/slinky/configmaps", "status": 403},
            {"method": "GET", "path": "/api/v1/nodes", "query": {"watch": "1"}, "status": 403}]})");
    Client client(api.config());
    Response r = client.patch("/api/v1/nodes/gpu-1", R"({"metadata":{"annotations":{"a":"b"}}})");
    EXPECT_EQ(r.status, 403);
    EXPECT_THAT(r.error, StartsWith(R"(forbidden: patch nodes needs ClusterRole rule {apiGroups: [""], resources: ["nodes"], verbs: ["patch"]})"));
    EXPECT_THAT(r.error, HasSubstr(R"(User "system:serviceaccount:slinky:m2g-slinky" cannot patch resource "nodes")"));

    r = client.patch("/api/v1/nodes/gpu-1/status", R"({"status":{}})", m2g::kube::kStrategicMergePatch);
    EXPECT_THAT(r.error, StartsWith(R"(forbidden: patch nodes/status needs ClusterRole rule {apiGroups: [""], resources: ["nodes/status"], verbs: ["patch"]})"));

    try {
        client.list("/api/v1/namespaces/slinky/configmaps");
        ADD_FAILURE() << "list succeeded";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 403);
        EXPECT_THAT(e.what(), StartsWith(R"(forbidden: list configmaps in namespace slinky needs Role rule {apiGroups: [""], resources: ["configmaps"], verbs: ["list"]})"));
    }
    r = client.post("/api/v1/namespaces/slinky/configmaps", R"({"metadata":{"name":"m2g-conf"}})");
    EXPECT_THAT(r.error, StartsWith(R"(forbidden: create configmaps in namespace slinky needs Role rule {apiGroups: [""], resources: ["configmaps"], verbs: ["create"]})"));

    const WatchEnd w = client.watch("/api/v1/nodes", "1", [](const std::string&, const std::string&) { return true; }, 5);
    EXPECT_EQ(w.reason, WatchEnd::Error);
    EXPECT_EQ(w.status, 403);
    EXPECT_THAT(w.error, StartsWith(R"(forbidden: watch nodes needs ClusterRole rule {apiGroups: [""], resources: ["nodes"], verbs: ["watch"]})"));
}

// ---------------------------------------------------------------------------
// What goes over the wire.

TEST(KubeRequests, PatchBodiesAndContentTypesAsSent)
{
    FakeApiServer api(R"({"token": "tok", "objects": {"nodes": [{"metadata": {"name": "gpu-1",
        "labels": {"kubernetes.io/hostname": "gpu-1"}}}]}})");
    Client client(api.config());
    const std::string merge =
        R"({"metadata":{"annotations":{"topology.slinky.slurm.net/spec":"topo-block:b07"}}})";
    Response r = client.patch("/api/v1/nodes/gpu-1", merge, m2g::kube::kMergePatch);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(at(r.body, {"metadata", "annotations", "topology.slinky.slurm.net/spec"}), "topo-block:b07");

    const std::string strategic =
        R"({"status":{"conditions":[{"type":"M2GThermal","status":"True","reason":"InletOverLimit","message":"inlet 41 C"}]}})";
    r = client.patch("/api/v1/nodes/gpu-1/status", strategic, m2g::kube::kStrategicMergePatch);
    ASSERT_TRUE(r.ok()) << r.error;
    // Merged by type: the kubelet's conditions stay.
    EXPECT_THAT(at(r.body, {"status", "conditions"}), HasSubstr(R"("type":"Ready")"));
    EXPECT_THAT(at(r.body, {"status", "conditions"}), HasSubstr(R"("type":"M2GThermal")"));

    const std::string jsonpatch =
        R"([{"op":"add","path":"/spec/taints","value":[{"key":"m2g.io/thermal","value":"hot","effect":"NoSchedule"}]},)"
        R"({"op":"add","path":"/metadata/labels/m2g.io~1domain","value":"b07"}])";
    r = client.patch("/api/v1/nodes/gpu-1", jsonpatch, m2g::kube::kJsonPatch);
    ASSERT_TRUE(r.ok()) << r.error;

    const std::string cordon = R"({"spec":{"unschedulable":true}})";
    r = client.patch("/api/v1/nodes/gpu-1", cordon);  // merge patch by default
    ASSERT_TRUE(r.ok()) << r.error;

    EXPECT_THROW(client.patch("/api/v1/nodes/gpu-1", "{}", "application/json"), m2g::Error);

    r = client.get("/api/v1/nodes/gpu-1");
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(at(r.body, {"metadata", "labels", "m2g.io/domain"}), "b07");
    EXPECT_EQ(at(r.body, {"spec", "taints", "0", "effect"}), "NoSchedule");
    EXPECT_EQ(at(r.body, {"spec", "unschedulable"}), "true");
    EXPECT_EQ(at(r.body, {"metadata", "annotations", "topology.slinky.slurm.net/spec"}), "topo-block:b07");

    const auto log = api.requests();
    ASSERT_EQ(log.size(), 5u);  // the bad content type never left the client
    const std::vector<std::pair<std::string, std::string>> sent = {
        {"application/merge-patch+json", merge},
        {"application/strategic-merge-patch+json", strategic},
        {"application/json-patch+json", jsonpatch},
        {"application/merge-patch+json", cordon}};
    for (size_t i = 0; i < sent.size(); ++i) {
        EXPECT_EQ(at(log[i].get(), {"method"}), "PATCH");
        EXPECT_EQ(at(log[i].get(), {"headers", "Content-Type"}), sent[i].first);
        EXPECT_EQ(at(log[i].get(), {"body"}), sent[i].second);
    }
    EXPECT_EQ(at(log[1].get(), {"path"}), "/api/v1/nodes/gpu-1/status");
}

TEST(KubeRequests, ConfigMapCreateGetReplacePatchDelete)
{
    FakeApiServer api(R"({"token": "tok"})");
    Client client(api.config());
    const std::string path = "/api/v1/namespaces/slinky/configmaps";
    const std::string cm =
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m2g-conf","namespace":"slinky"},)"
        R"("data":{"m2g.conf":"ClusterName=gb200\n"}})";
    Response r = client.post(path, cm);
    ASSERT_EQ(r.status, 201) << r.error;
    const std::string rv = at(r.body, {"metadata", "resourceVersion"});
    EXPECT_FALSE(rv.empty());

    r = client.post(path, cm);
    EXPECT_EQ(r.status, 409);
    EXPECT_THAT(r.error, HasSubstr("HTTP 409 AlreadyExists: configmaps \"m2g-conf\" already exists"));

    r = client.get(path + "/m2g-conf");
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(at(r.body, {"data", "m2g.conf"}), "ClusterName=gb200\n");

    const std::string stale =
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m2g-conf","resourceVersion":"1"},"data":{}})";
    r = client.put(path + "/m2g-conf", stale);
    EXPECT_EQ(r.status, 409);
    EXPECT_THAT(r.error, HasSubstr("Conflict"));
    const std::string current = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m2g-conf","resourceVersion":")" +
                                rv + R"("},"data":{"m2g.conf":"ClusterName=gb200-b\n"}})";
    r = client.put(path + "/m2g-conf", current);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(at(r.body, {"data", "m2g.conf"}), "ClusterName=gb200-b\n");

    r = client.patch(path + "/m2g-conf", R"({"metadata":{"annotations":{"m2g.io/reconfigure":"1"}}})");
    ASSERT_TRUE(r.ok()) << r.error;
    r = client.del(path + "/m2g-conf");
    ASSERT_TRUE(r.ok()) << r.error;
    r = client.get(path + "/m2g-conf");
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(r.error, "GET /api/v1/namespaces/slinky/configmaps/m2g-conf: HTTP 404 NotFound: configmaps \"m2g-conf\" not found");

    const auto log = api.requests();
    ASSERT_EQ(log.size(), 8u);
    EXPECT_EQ(at(log[0].get(), {"headers", "Content-Type"}), "application/json");
    EXPECT_EQ(at(log[0].get(), {"body"}), cm);
    EXPECT_EQ(at(log[3].get(), {"method"}), "PUT");
    EXPECT_EQ(at(log[3].get(), {"headers", "Content-Type"}), "application/json");
    EXPECT_EQ(at(log[6].get(), {"method"}), "DELETE");
}

TEST(KubeRequests, EveryRequestCarriesAuthorizationAcceptAndUserAgent)
{
    FakeApiServer api(R"({"token": "tok", "max_page": 1,
        "objects": {"nodes": [{"metadata": {"name": "gpu-1"}}, {"metadata": {"name": "gpu-2"}}]},
        "watches": {"/api/v1/nodes": [{"batches": [{"events": [{"type": "BOOKMARK"}]}]}]}})");
    Client client(api.config());
    EXPECT_EQ(client.list("/api/v1/nodes").items.size(), 2u);
    client.watch("/api/v1/nodes", "1", [](const std::string&, const std::string&) { return true; }, 5);
    client.get("/api/v1/nodes/gpu-1");
    client.patch("/api/v1/nodes/gpu-1", R"({"metadata":{"labels":{"a":"b"}}})");
    client.post("/api/v1/namespaces/slinky/configmaps", R"({"metadata":{"name":"x"}})");
    client.put("/api/v1/namespaces/slinky/configmaps/x", R"({"metadata":{"name":"x"},"data":{"k":"v"}})");
    client.del("/api/v1/namespaces/slinky/configmaps/x");
    const auto log = api.requests();
    ASSERT_EQ(log.size(), 8u);
    for (const auto& e : log) {
        SCOPED_TRACE(at(e.get(), {"method"}) + " " + at(e.get(), {"path"}));
        EXPECT_EQ(at(e.get(), {"headers", "Authorization"}), "Bearer tok");
        EXPECT_EQ(at(e.get(), {"headers", "Accept"}), "application/json");
        EXPECT_EQ(at(e.get(), {"headers", "User-Agent"}), std::string("m2g-slinky/") + PACKAGE_VERSION);
        EXPECT_THAT(at(e.get(), {"status"}), StartsWith("20"));
    }
}

}  // namespace
