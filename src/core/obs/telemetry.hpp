// m2g core: job tagging for telemetry on the nodes — OpenTelemetry resource
// attributes, dcgm-exporter's HPC job mapping files, and a node_exporter
// textfile. spank_m2g calls these in root context (prolog/epilog), so every
// path is built from admin configuration and checked values only, and files
// are opened with O_NOFOLLOW.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/job/intent.hpp"

namespace m2g {

// OTEL_RESOURCE_ATTRIBUTES with `attrs` appended ("k=v,k=v", values
// percent-encoded as the OpenTelemetry spec asks); keys already present in
// `existing` keep the user's value.
std::string otel_extend(const std::string& existing, const std::vector<std::pair<std::string, std::string>>& attrs);

// The attributes m2g adds for a job.
std::vector<std::pair<std::string, std::string>> otel_attributes(uint32_t job_id, const JobIntent& intent);

// "0,1,3" or "0-3" (SLURM_JOB_GPUS) to GPU indices; throws ParseError.
std::vector<int> parse_gpu_indices(const std::string& text);

// A directory setting with %n replaced by the node name; the node name must
// be a plain host name (letters, digits, '-', '_', '.'); throws Error.
std::string node_dir(const std::string& pattern, const std::string& node);

// dcgm-exporter HPC job mapping: in `dir`, one file per GPU index holding
// the ids of the jobs using that GPU, one per line. Add and remove are
// idempotent and safe against concurrent jobs (flock); a file left empty
// is removed. Throws Error with the path on failure.
void dcgm_map_add(const std::string& dir, const std::vector<int>& gpus, uint32_t job_id);
void dcgm_map_remove(const std::string& dir, const std::vector<int>& gpus, uint32_t job_id);

// node_exporter textfile collector: <dir>/m2g_job_<id>.prom with one
// m2g_job_info gauge, written atomically; remove deletes it.
std::string job_info_metric(uint32_t job_id, const JobIntent& intent, const std::string& node);
void textfile_write(const std::string& dir, uint32_t job_id, const std::string& content);
void textfile_remove(const std::string& dir, uint32_t job_id);

}  // namespace m2g
