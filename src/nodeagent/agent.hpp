// m2g-nodeagent: GPU power caps on exactly the GPUs of a Slurm job, on one
// node (issue 19, the grid shock absorber). See m2g-nodeagent(8).
//
// This header is the part without HTTP and without NVML: request parsing,
// job -> GPU resolution from the dcgm-exporter job mapping directory
// (core/obs/telemetry.hpp), clamping, the cap table and its state file, the
// reconcile decision, and NodeAgent, which answers an HTTP-shaped Request
// over a PowerBackend. server.hpp puts it on a socket (libmicrohttpd),
// nvml_power.hpp is the PowerBackend over NVML, client.hpp is the
// controller's side (libcurl).
//
// Power crosses the API in watts (JSON numbers) and NVML in milliwatts; the
// cap table keeps milliwatts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.hpp"

namespace m2g {
namespace nodeagent {

// ---- names of the API (the agent and its client use these) -----------------------

inline constexpr const char* kProg = "m2g-nodeagent";
inline constexpr const char* kDefaultListen = "127.0.0.1:6830";
inline constexpr const char* kDefaultNvml = "libnvidia-ml.so.1";
inline constexpr int kDefaultReconcileSec = 5;
inline constexpr const char* kStateFile = "caps.json";  // in --state-dir

inline constexpr const char* kPathPower = "/v1/power";          // GET
inline constexpr const char* kPathJobs = "/v1/jobs/";           // + <id> + kPathCapSuffix
inline constexpr const char* kPathCapSuffix = "/cap";           // PUT, DELETE

inline constexpr const char* kSchemaPower = "m2g.nodeagent-power/v1";  // GET /v1/power
inline constexpr const char* kSchemaCap = "m2g.nodeagent-cap/v1";      // PUT/DELETE answers
inline constexpr const char* kSchemaState = "m2g.nodeagent-state/v1";  // --state-dir/caps.json

inline constexpr const char* kKeySchema = "schema";
inline constexpr const char* kKeyNode = "node";
inline constexpr const char* kKeyError = "error";
inline constexpr const char* kKeyDrawW = "draw_w";
inline constexpr const char* kKeyGpus = "gpus";
inline constexpr const char* kKeyIndex = "index";
inline constexpr const char* kKeyLimitW = "limit_w";  // also the PUT body's only key
inline constexpr const char* kKeyDefaultLimitW = "default_limit_w";
inline constexpr const char* kKeyMinLimitW = "min_limit_w";
inline constexpr const char* kKeyMaxLimitW = "max_limit_w";
inline constexpr const char* kKeyJobs = "jobs";
inline constexpr const char* kKeyCaps = "caps";
inline constexpr const char* kKeyJob = "job";
inline constexpr const char* kKeyRequestedW = "requested_w";
inline constexpr const char* kKeyClamped = "clamped";
inline constexpr const char* kKeyNote = "note";
inline constexpr const char* kKeyRestored = "restored";
inline constexpr const char* kKeyJobMapError = "job_map_error";
inline constexpr const char* kKeyRequestedMw = "requested_mw";  // state file

inline constexpr size_t kMaxBodyBytes = 4096;

// ---- pure helpers -----------------------------------------------------------------

// A Slurm job id as it appears in a URL: decimal, 1 to 4294967294
// (NO_VAL and 0 are not jobs). Throws ParseError saying what is accepted.
uint32_t parse_job_id(const std::string& text);

// The PUT body, {"limit_w": <watts>}: a JSON object with exactly that key,
// a number above 0 and at most 100000. Returns the watts. Throws ParseError
// naming what was wrong and the accepted form.
double parse_cap_body(const std::string& body);

// Watts to milliwatts, rounded to the nearest mW.
unsigned watts_to_mw(double watts);
// Milliwatts as "300 W" / "312.5 W".
std::string mw_text(unsigned mw);

// The job ids of one dcgm-exporter mapping file's text, one per line
// (blank lines and lines that are not a job id are left out; duplicates once).
std::vector<uint32_t> parse_job_ids(const std::string& text);

// GPU index -> the jobs its mapping file lists (GPUs whose file is absent
// or empty are not in the map).
using JobMap = std::map<int, std::vector<uint32_t>>;

// Reads a dcgm-exporter HPC job mapping directory (files named by GPU
// index; other names are ignored), each file under a shared flock as
// dcgm_map_add/remove write them under an exclusive one. A directory that
// does not exist is empty (no job has run here yet); one that cannot be
// read throws Error naming it.
JobMap read_job_map(const std::string& dir);

// The GPUs a job uses on this node, ascending; empty when none.
std::vector<int> job_gpus(const JobMap& map, uint32_t job_id);

// "0,1,3".
std::string gpu_list_text(const std::vector<int>& gpus);

struct Clamp {
    unsigned mw = 0;
    bool clamped = false;
};
// `requested_mw` held to [min_mw, max_mw].
Clamp clamp_limit(unsigned requested_mw, unsigned min_mw, unsigned max_mw);

// One job's cap: what was asked, and per GPU the limit it asks for there
// (the request clamped to that GPU's constraints).
struct Cap {
    uint32_t job_id = 0;
    unsigned requested_mw = 0;
    std::map<int, unsigned> gpus;
    std::vector<int> gpu_indices() const;
    unsigned lowest_mw() const;  // the lowest of gpus (0 when none)
};
using CapTable = std::map<uint32_t, Cap>;

// The limit a GPU should have while `caps` are in force: the lowest cap of
// the jobs on it (GPUs shared by jobs keep the strictest); nullopt when no
// cap covers it (the default limit).
std::optional<unsigned> gpu_target(const CapTable& caps, int gpu);

// Capped jobs that no mapping file lists any more: their caps must end.
std::vector<uint32_t> ended_jobs(const CapTable& caps, const JobMap& map);

// The state file (kSchemaState): written after every change, read at start.
std::string caps_to_json(const CapTable& caps, const std::string& node);
// Throws ParseError naming `what` (the file) on anything but that form.
CapTable caps_from_json(const std::string& text, const std::string& what);

// --token-file: the first line without surrounding white space. Throws
// Error when the file cannot be read, is empty, holds white space or
// control characters inside the token, or is accessible by group or others.
std::string read_token_file(const std::string& path);

// ---- what the agent drives ----------------------------------------------------------

// NVML (or a test's stand-in) failed; the message names the GPU, the call
// and NVML's error text: "GPU 1: nvmlDeviceSetPowerManagementLimit:
// Insufficient Permissions (4)".
class BackendError : public Error {
  public:
    using Error::Error;
};

struct GpuLimits {
    unsigned limit_mw = 0;
    unsigned default_mw = 0;
    unsigned min_mw = 0;
    unsigned max_mw = 0;
};

// The node's GPUs by NVML index. Every call may throw BackendError.
class PowerBackend {
  public:
    virtual ~PowerBackend() = default;
    virtual int gpu_count() = 0;
    virtual unsigned draw_mw(int gpu) = 0;
    virtual GpuLimits limits(int gpu) = 0;
    virtual void set_limit_mw(int gpu, unsigned mw) = 0;
};

// ---- the agent without its socket ---------------------------------------------------

struct Request {
    std::string method;         // "GET", "PUT", "DELETE", ...
    std::string path;           // "/v1/jobs/123/cap"
    std::string authorization;  // the Authorization header, "" when absent
    std::string body;
    bool body_too_large = false;  // more than kMaxBodyBytes arrived
};

struct Response {
    int status = 200;
    std::string body;  // JSON
    std::vector<std::pair<std::string, std::string>> headers;
};

using LogSink = std::function<void(const std::string&)>;

struct AgentOptions {
    std::string node;         // this node's Slurm name
    std::string job_map_dir;  // %n already expanded
    std::string state_file;   // "" = caps kept in memory only
    std::string token;        // "" = no Authorization required
    LogSink log;              // one line per action; may be empty
};

// Thread-safe: every public call takes the agent's lock, so HTTP requests
// and reconcile ticks never interleave their NVML calls.
class NodeAgent {
  public:
    // Loads the state file when there is one; throws Error when it cannot
    // be read or parsed (the agent then refuses to start: it would forget
    // caps it set).
    NodeAgent(PowerBackend& backend, AgentOptions options);

    // Answers one request; never throws.
    Response handle(const Request& r);

    // Once at start, after construction: caps of jobs still running are put
    // back on their GPUs where the limit differs (a driver reload), caps of
    // jobs that ended while the agent was away end now. Never throws.
    void adopt();

    // One reconcile tick: caps of jobs the mapping directory no longer
    // lists end (their GPUs get the default limit, or the strictest cap of
    // another job on a shared GPU), each logged once. Never throws.
    void reconcile();

    CapTable caps() const;

  private:
    struct HttpError {
        int status;
        std::string message;
    };
    Response route(const Request& r);
    Response get_power();
    Response put_cap(uint32_t job, const std::string& body);
    Response delete_cap(uint32_t job);
    // Sets every GPU of `gpus` to its limit under `next` (or its default);
    // all or nothing: on failure the GPUs already changed get their
    // previous limit back, and HttpError 502 says what happened. Returns the
    // limit each GPU now has.
    std::map<int, unsigned> apply(const CapTable& next, const std::set<int>& gpus, const std::string& what);
    // Ends `job`'s cap (reconcile, DELETE); throws HttpError/BackendError.
    std::map<int, unsigned> end_cap(uint32_t job, const std::string& what);
    void adopt_running();
    void save();
    void log(const std::string& msg) const;
    void log_once(const std::string& key, const std::string& msg);

    PowerBackend& backend_;
    AgentOptions opt_;
    mutable std::mutex mu_;
    CapTable caps_;
    std::map<std::string, std::string> logged_;  // condition -> last message
};

// An error answer: {"error": message}.
Response error_response(int status, const std::string& message);

}  // namespace nodeagent
}  // namespace m2g
