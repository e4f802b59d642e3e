// m2g-slinky: a small Kubernetes API client (libcurl, json-c, yaml-cpp).
//
// Enough of client-go for the Slinky adapter: configuration in-cluster (the
// pod's service account) or from a kubeconfig; GET/POST/PUT/PATCH with TLS
// always verified against the cluster's CA and a bearer token (re-read from
// its file on 401, as bound service-account tokens rotate) or a client
// certificate; paginated lists; watches parsed as a stream of
// newline-delimited JSON events; and an Informer (client-go's reflector)
// that keeps a map of objects current with list + watch, relists on 410
// Gone and backs off on errors.
//
// Objects stay JSON text: the adapter parses what it needs with json-c.
// Errors say what to do: a 403 names the RBAC rule that is missing.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/error.hpp"

namespace m2g::kube {

// Where Kubernetes mounts a pod's service-account credentials.
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// PATCH content types the API server accepts.
inline constexpr const char* kMergePatch = "application/merge-patch+json";                // RFC 7386
inline constexpr const char* kStrategicMergePatch = "application/strategic-merge-patch+json";
inline constexpr const char* kJsonPatch = "application/json-patch+json";                  // RFC 6902
inline constexpr const char* kApplyPatch = "application/apply-patch+yaml";                // server-side apply

// How to reach and authenticate to one API server.
struct Config {
    std::string server;      // https://host:port (no path)
    std::string ca_file;     // PEM bundle that signs the API server's certificate
    std::string ca_data;     // or the PEM text itself (kubeconfig certificate-authority-data)
    std::string token;       // bearer token
    std::string token_file;  // re-read on 401, as bound service-account tokens rotate
    std::string client_cert_file, client_key_file;  // PEM files
    std::string client_cert_data, client_key_data;  // or PEM text (kubeconfig *-data)
    std::string namespace_;  // the pod's (in-cluster) or the context's namespace
    bool insecure = false;   // skip TLS verification: only when set explicitly, never by default
    long connect_timeout_ms = 10000;
    long request_timeout_ms = 60000;  // whole request, except watches (their own timeout)
    std::string source;               // where this came from, for messages
};

// The pod's own service account: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
// SA_DIR/token (as token and token_file), SA_DIR/ca.crt, SA_DIR/namespace.
// Throws m2g::Error naming everything that is missing.
Config in_cluster(const std::string& sa_dir = kServiceAccountDir);

// One context of a kubeconfig file (CONTEXT, or its current-context):
// clusters[].cluster.{server, certificate-authority, certificate-authority-data,
// insecure-skip-tls-verify}, users[].user.{token, tokenFile, client-certificate,
// client-certificate-data, client-key, client-key-data}, contexts[].context.namespace
// (default "default"). Relative paths are relative to the file's directory.
// Throws m2g::Error naming the file and the missing or unsupported key
// (exec and auth-provider plugins, basic auth, tls-server-name, proxy-url).
Config from_kubeconfig(const std::string& path, const std::string& context = "");

// An API request that failed; status() is the HTTP status (0: no response).
class ApiError : public Error {
  public:
    ApiError(long status, const std::string& what) : Error(what), status_(status) {}
    long status() const { return status_; }

  private:
    long status_;
};

struct Response {
    long status = 0;     // HTTP status; 0 when no response came (connection, TLS, timeout)
    std::string body;    // the response body (a Status object for API errors)
    std::string error;   // empty on 2xx; otherwise what went wrong and what to do:
                         // curl's error, "unauthorized: ...", "forbidden: ... needs ... rule",
                         // or the API's Status reason and message
    bool ok() const { return error.empty() && status >= 200 && status < 300; }
};

struct ListResult {
    std::string resource_version;    // the list's metadata.resourceVersion: where a watch starts
    std::vector<std::string> items;  // each object as JSON text, with kind and apiVersion
};

// How a watch ended.
struct WatchEnd {
    enum Reason {
        Closed,   // the server closed the stream cleanly (timeoutSeconds): watch again from resource_version
        Stopped,  // the callback returned false, or the cancel flag was set
        Gone,     // 410: resource_version is too old; list again
        Error,    // anything else: status and error say what
    };
    Reason reason = Closed;
    std::string resource_version;  // the last one seen (events and bookmarks), else the one given
    long status = 0;               // HTTP status, or the code of an ERROR event's Status
    std::string error;
    int events = 0;                // ADDED/MODIFIED/DELETED events delivered
};

const char* to_string(WatchEnd::Reason reason);

// type: ADDED, MODIFIED or DELETED (bookmarks only move the resource
// version); object_json: the object. Return false to stop the watch.
using WatchCallback = std::function<bool(const std::string& type, const std::string& object_json)>;

// One API server. Reuses one curl handle (and so its connections): use a
// Client from one thread at a time (thread-compatible, not thread-safe).
class Client {
  public:
    // Reads token_file when token is empty. Throws m2g::Error on a bad config.
    explicit Client(Config config);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    // PATH starts with "/" and may carry a query ("/api/v1/nodes?labelSelector=a%3Db").
    Response get(const std::string& path);
    Response patch(const std::string& path, const std::string& body, const std::string& content_type = kMergePatch);
    Response post(const std::string& path, const std::string& body);
    Response put(const std::string& path, const std::string& body);
    Response del(const std::string& path);

    // Every object of a collection, 500 per request, following
    // metadata.continue; an expired continue token (410) restarts once
    // without pagination. Throws ApiError.
    ListResult list(const std::string& path);

    // Watch PATH from RESOURCE_VERSION (empty: from now) with bookmarks, for
    // at most TIMEOUT_S seconds (the server closes the stream then). Events
    // are delivered as they arrive; ON_BATCH, if given, runs after each
    // received piece of the stream that delivered at least one event.
    // Exceptions thrown by the callbacks propagate, after the transfer ends.
    WatchEnd watch(const std::string& path, const std::string& resource_version, const WatchCallback& on_event,
                   int timeout_s, const std::function<void()>& on_batch = {});

    // While *FLAG is true every transfer stops (watch: Stopped; others: error "cancelled").
    void set_cancel(const std::atomic<bool>* flag);

    const Config& config() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// client-go's reflector: keeps every object of a collection, keyed
// "namespace/name" ("name" for cluster-scoped objects), current by list and
// watch. Not thread-safe: on_change runs on the thread that runs the Informer.
class Informer {
  public:
    using Store = std::map<std::string, std::string>;  // key -> object JSON
    using OnChange = std::function<void(const Store&)>;
    using Sleep = std::function<void(std::chrono::milliseconds)>;

    struct Options {
        int watch_timeout_s = 300;
        std::chrono::milliseconds backoff_initial{1000};
        std::chrono::milliseconds backoff_cap{30000};
        double jitter = 0.2;                          // a sleep is backoff * (1 - jitter * random())
        Sleep sleep;                                  // default: sleeps, waking early when run() is stopped
        std::function<double()> random;               // in [0, 1); default: a seeded Mersenne twister
        std::function<void(const std::string&)> log;  // errors and relists; default: silent
    };

    // LIST_PATH and WATCH_PATH are usually the same collection path.
    Informer(Client& client, std::string list_path, std::string watch_path, OnChange on_change);
    Informer(Client& client, std::string list_path, std::string watch_path, OnChange on_change, Options options);
    Informer(const Informer&) = delete;
    Informer& operator=(const Informer&) = delete;

    // One round: list if needed (at first, after Gone), then one watch.
    // After an error (list or watch) it sleeps the backoff before returning;
    // the backoff doubles up to the cap and resets after a success. Returns
    // how the round ended (a failed list: Error).
    WatchEnd run_once();
    // Rounds until STOP is true (checked between and during rounds).
    void run(std::atomic<bool>& stop);

    const Store& store() const { return store_; }
    const std::string& resource_version() const { return rv_; }
    const std::string& last_error() const { return last_error_; }
    int lists() const { return lists_; }  // successful lists so far

    // The store key of an object: "namespace/name", or "name".
    static std::string key_of(const std::string& object_json);

  private:
    void failed(const std::string& what);
    void succeeded();

    Client& client_;
    std::string list_path_, watch_path_;
    OnChange on_change_;
    Options opt_;
    Store store_;
    std::string rv_;
    bool need_list_ = true;
    std::chrono::milliseconds backoff_;
    std::string last_error_;
    int lists_ = 0;
    const std::atomic<bool>* stop_ = nullptr;
};

}  // namespace m2g::kube
