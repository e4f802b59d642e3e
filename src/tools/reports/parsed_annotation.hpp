// m2g tools: the m2g:[...] segment of a job's AdminComment — what
// select/m2g, job_submit/m2g and m2g-curtaild wrote — flattened into the
// words `m2g status`, `m2g explain`, `m2g job` and m2g-exporter print.
// core/job/annotation.hpp is the one parser of those texts; this is only
// the reports' view of its result.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/job/intent.hpp"   // WorkloadClass
#include "core/job/verdict.hpp"  // WaitCause

namespace m2g {

enum class PlacementKind { None, Placed, Waiting };
const char* to_string(PlacementKind k);  // "", "placed", "waiting"

// What select/m2g, job_submit/m2g and m2g-curtaild wrote into a job's AdminComment, as
// `m2g explain`, `m2g status` and m2g-exporter show it: read_annotation()
// (annotation.hpp, the one parser of those texts) flattened into the words
// they print. Unknown or garbled text leaves fields empty; parsing never
// throws.
struct ParsedAnnotation {
    bool found = false;  // the comment holds an m2g:[...] segment
    // Placement part (select/m2g).
    PlacementKind placement = PlacementKind::None;
    std::string policy;                // "prefer:nvlink", "strict:nvlink", "any"
    std::vector<std::string> domains;  // placed: NVLink domains ("-" gives none)
    std::vector<std::string> leaves;   // placed: leaf switches
    std::string score;                 // placed: as format_score() writes it, "17"
    std::string placement_reason;      // why there / what it waits for (for people: nothing classifies it)
    std::string signals;               // gate notes at placement ("signals=..."; with policy=any the free text)
    // Waiting: why (never None), the nodes it waits for (0 unknown) and the
    // racks or rows over budget (PlacementAnnotation's wait, need, over).
    WaitCause wait = WaitCause::None;
    int need = 0;
    std::vector<std::string> over;
    int64_t prefer_since = 0;          // waiting, prefer: when its prefer wait began (epoch s); 0 not begun
    // Admission part (job_submit/m2g).
    std::string verdict;               // "admit", "defer", "pace", "reject"; "" none or unknown
    bool monitor = false;              // "monitor would ...": Admission=monitor, nothing enforced
    int64_t released_at = 0;           // "released at <time>: ..."; 0 not released
    std::string cls;                   // class= as written: "training", "none", a newer m2g's name, ""
    WorkloadClass workload_class = WorkloadClass::Unset;  // cls; Unset for "none" and unknown names
    double w_gpu = 0;                  // w_gpu=: W per GPU admission assumed, 0 unknown
    int64_t until = 0;                 // until= (epoch s), 0 none or unparseable
    std::string cause;                 // event id, "maintenance:<id>", "power:site", "failsafe"
    std::string admission_reason;      // reason=
    std::string avoid;                 // avoid=: "18 nodes (maintenance mw-1)"
    int64_t user_begin = 0;            // user_begin=: the owner's own --begin
    // Curtail part (m2g-curtaild): its last action on the running job
    // (CurtailAnnotation), as format() writes it ("cap w_gpu=300
    // cause=dr-1 scope=site at=..."; "" none or no step m2g knows), and
    // its words.
    std::string curtail;
    std::string curtail_step;          // "cap", "suspend", "signal", "requeue", "resume", "uncap"; "" none
    bool curtail_monitor = false;      // "monitor would ...": CurtailMode=monitor, nothing applied
    int curtail_w_gpu = 0;             // w_gpu=: the per-GPU cap set (cap, uncap, resume); 0 none
    std::string curtail_cause;         // the event id, "power:<scope>", "restore"
    std::string curtail_scope;         // "site", a row or a rack
    int64_t curtail_at = 0;            // when (epoch s); 0 unknown
};

ParsedAnnotation parse_annotation(std::string_view admin_comment) noexcept;

// Whether admission holds the pending job back at `now` (defer or pace
// in force, not monitor-only, until= still ahead).
bool admission_holds(const ParsedAnnotation& a, int64_t now);

}  // namespace m2g
