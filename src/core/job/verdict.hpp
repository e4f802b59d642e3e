// m2g core: what m2g decided about a job, as types every part shares:
// admission's verdict, why a job waits for placement and what
// curtailment did to a running job. They travel in
// the job's AdminComment (annotation.hpp) and are read back from there as
// these types, never from prose.
#pragma once

#include <optional>
#include <string_view>

namespace m2g {

// Admission's decision at submission and at every release pass
// (admission.hpp).
enum class Verdict { Admit, Defer, Pace, Reject };
const char* to_string(Verdict v);  // "admit", "defer", "pace", "reject"
// The verdict `word` names, or nullopt.
std::optional<Verdict> verdict_from(std::string_view word);

// Why select/m2g makes a job wait: the engine's causes (NvlinkDomain,
// Switch, Nodes, Other) and the signals gate's (gate(), admission.hpp).
// Typed where the wait is decided, carried in AdminComment as wait=
// (annotation.hpp), so `m2g explain` and `m2g status` never read the
// reason sentence to tell them apart.
enum class WaitCause {
    None,          // the job does not wait
    NvlinkDomain,  // no NVLink domain (or set of them) has its free healthy nodes
    Switch,        // no leaf or spine switch has them below it
    Nodes,         // too few free healthy nodes under any one switch
    SitePower,     // the site's power headroom cannot take the job
    RackPower,     // racks over budget took the nodes it needs
    RowPower,      // rows over budget took the nodes it needs
    Pacing,        // the pacing interval's allowance is spent
    Maintenance,   // maintenance windows took the nodes it needs
    Failsafe,      // SignalsFailSafe=defer holds deferrable work
    NodesDown,     // nodes the signals mark down took the nodes it needs
    PowerRoom,     // work m2g may not curtail waits, at most CurtailStartWaitSec, for curtailment to make room
    Other,         // anything else
};
const char* to_string(WaitCause c);  // kw::kWaitCauses: "nvlink-domain", ...; "" for None
// The cause `key` names (a kw::kWaitCauses value other than ""), or nullopt.
std::optional<WaitCause> wait_cause_from(std::string_view key);

// What m2g-curtaild does to a running job (core/power/curtail.hpp plans
// it, the curtail part of the AdminComment records the last one).
enum class CurtailStep { Cap, Suspend, Signal, Requeue, Resume, Uncap };
const char* to_string(CurtailStep s);  // "cap", "suspend", "signal", "requeue", "resume", "uncap"
// The step `word` names, or nullopt.
std::optional<CurtailStep> curtail_step_from(std::string_view word);

}  // namespace m2g
