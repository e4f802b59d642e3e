// The controller's side of m2g-nodeagent (libcurl): set, clear and read GPU
// power caps on one node. `url` is the agent's base URL,
// "http://10.0.0.7:6830" (a trailing '/' is fine); `token` "" sends no
// Authorization header. Every call throws m2g::Error naming the node URL,
// the request and the agent's own error text (or libcurl's, when the agent
// could not be reached) on anything but a 2xx answer of the documented form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace m2g {
namespace nodeagent {

struct GpuLimit {
    int index = -1;
    double limit_w = 0;      // the limit the GPU has now
    bool clamped = false;    // set_cap: the request was outside the GPU's range
    double min_limit_w = 0;  // set_cap only
    double max_limit_w = 0;  // set_cap only
};

// PUT /v1/jobs/<id>/cap
struct CapResult {
    std::string node;
    uint32_t job_id = 0;
    double requested_w = 0;
    double limit_w = 0;  // the lowest limit applied on the job's GPUs
    std::vector<GpuLimit> gpus;
    std::string note;    // why a limit differs from the request; "" when none does
};

// DELETE /v1/jobs/<id>/cap
struct ClearResult {
    std::string node;
    uint32_t job_id = 0;
    bool restored = false;  // false: the job had no cap (nothing to do)
    std::vector<GpuLimit> gpus;
};

// GET /v1/power
struct GpuPower {
    int index = -1;
    double draw_w = 0;
    double limit_w = 0;
    double default_limit_w = 0;
    double min_limit_w = 0;
    double max_limit_w = 0;
    std::vector<uint32_t> jobs;
    std::string error;  // NVML could not read this GPU (the numbers are 0)
};
struct JobCap {
    uint32_t job_id = 0;
    double limit_w = 0;
    double requested_w = 0;
    std::vector<int> gpus;
};
struct NodePower {
    std::string node;
    double draw_w = 0;
    std::vector<GpuPower> gpus;
    std::vector<JobCap> caps;  // ascending job id
};

CapResult set_cap(const std::string& url, const std::string& token, uint32_t job_id, double watts, long timeout_ms);
ClearResult clear_cap(const std::string& url, const std::string& token, uint32_t job_id, long timeout_ms);
NodePower get_power(const std::string& url, const std::string& token, long timeout_ms);

// The answers' JSON into the structs (exposed for tests); throw Error
// naming `where` when the text is not of that form.
CapResult parse_cap_result(const std::string& json, const std::string& where);
ClearResult parse_clear_result(const std::string& json, const std::string& where);
NodePower parse_node_power(const std::string& json, const std::string& where);

}  // namespace nodeagent
}  // namespace m2g
