// m2g tools: what `m2g status`, `m2g explain` and `m2g job` say alike —
// numbers, times, names and JSON as all three write them, the job's power
// per GPU, and how an event reads. Internal to src/tools/reports/ (in
// namespace m2g::reports, so that generic names such as num() stay out of
// m2g::); the reports themselves live in
//   status.cpp             the cluster now (`m2g status`, m2g-exporter)
//   explain.cpp            why a job is where it is (`m2g explain`)
//   energy.cpp             a job's GPU-hours, energy and cost (`m2g job`)
// (signals_report.cpp, `m2g signals show`, writes the feed's numbers as the
// feed does and needs none of this.)
#pragma once

#include <json-c/json.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/json.hpp"  // JsonPtr
#include "core/base/text.hpp"
#include "core/job/intent.hpp"
#include "core/model/export.hpp"  // node_hostlist
#include "core/model/model.hpp"
#include "core/power/signals.hpp"
#include "core/job/annotation.hpp"
#include "tools/reports/status.hpp"

namespace m2g {
namespace reports {

// ---- text ---------------------------------------------------------------------

// printf of one number; "-0", "-0.0", "-0.00" lose their sign.
std::string fmt(const char* f, double d);

// 12.34 → "12.3"
std::string kw1(double d);

// 25 → "25", 12.5 → "12.5"
std::string num(double d);

bool starts_with(std::string_view s, std::string_view p);

using m2g::join;  // core/base/text.hpp

// Class names as AdminComment and the exporter write them: "none" for Unset.
std::string class_label(WorkloadClass c);

// "1-02:03:04" / "2:00:00" (Slurm's elapsed time)
std::string elapsed(double seconds);

// A wait for people: "about 12 min" (under 2 h), "about 2.5 h".
std::string about(double seconds);

// "-25%", "-50 kW"
std::string event_cut(const CurtailmentEvent& e);

// "site", "row row1", "rack nvl03"
std::string event_scope(const CurtailmentEvent& e);

// ---- JSON ---------------------------------------------------------------------

// A number with at most `decimals` places, trailing zeros trimmed to one.
json_object* jnum(double d, int decimals = 1);

json_object* jstr(const std::string& s);

// One line: the object as compact JSON, and "\n".
std::string json_text(json_object* o);

void add(json_object* o, const char* k, json_object* v);

// ---- the job's power ------------------------------------------------------------

// The job's power per GPU and where that figure comes from (job_energy,
// explanations): admission's w_gpu (the adapter puts it into the intent),
// else the policy's. Defined in energy.cpp.
std::pair<double, std::string> job_power(const Model& m, const JobView& job, const AdmissionAnnotation& a);

}  // namespace reports
}  // namespace m2g
