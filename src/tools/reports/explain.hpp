// m2g tools: why a job is where it is — `m2g explain`: whether it waits, was
// deferred or paced, or where it went, in one sentence with the evidence
// (the cluster now, the signals, m2g's annotation) and what would help.
// Slurm-free, like status.hpp, whose ClusterView and Status it reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.hpp"
#include "core/power/signals.hpp"
#include "tools/reports/forecast.hpp"
#include "tools/reports/status.hpp"

namespace m2g {

struct Explanation {
    uint32_t job = 0;
    std::string verdict;                  // "placed", "running", "waiting", "deferred", "paced", "done", "unknown"
    std::string summary;                  // one plain-language sentence
    std::vector<std::string> evidence;    // facts: free healthy GPUs per candidate domain, the event and its end, the budget
    std::vector<std::string> suggestions; // concrete: "ask for --m2g-topology=prefer", "16 nodes fit nvl03 now", ...
};

// Why `job` waits, was deferred, or went where it went. `c` gives the free
// capacity per domain for suggestions; the m2g annotation gives m2g's own
// decision text.
// `fc` (may be null): the forecast with this job's alternatives
// (make_forecast with alternatives_for): for a pending job, when it should
// start and which intent would start it sooner.
Explanation explain_job(const Model& m, const ClusterView& c, const SignalsView& v, const JobView& job, int64_t now,
                        const Forecast* fc = nullptr);
std::string format_explanation(const Explanation& e, bool json);

}  // namespace m2g
