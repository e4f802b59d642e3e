// m2g core: the admission policy an admin sets in m2g.conf (see m2g.conf(5)).
// Plain data; config.cpp fills it, admission.cpp and the plugins read it.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/base/enum_names.hpp"

namespace m2g {

// What happens when the signals feed is stale or missing (SignalsFailSafe=).
enum class FailSafe {
    Last,   // keep using the last good snapshot (its events still end on time)
    Open,   // act as if there were no signals: no events, feed budgets ignored
    Defer,  // hold deferrable work (as under a site-wide event) until fresh again
};

enum class AdmissionMode {
    Enforce,  // decisions change the job (begin time, rejection)
    Monitor,  // decisions are only written into AdminComment
    Off,      // job_submit/m2g passes jobs through untouched
};

// What --m2g-defer=no from an account without an exemption gets during an event.
enum class NoDeferAction { Reject, Convert };

// A job whose time limit would overlap a maintenance window on capacity it
// could use: steer it to other nodes when enough remain, else defer it
// (Steer); or always defer it (Defer).
enum class MaintenanceAction { Steer, Defer };

// How far m2g may act on a running job of a class during curtailment
// (Curtail=, curtail.hpp): each level includes the ones before it.
enum class CurtailLevel {
    None,     // never touched
    Cap,      // GPU power caps
    Suspend,  // caps, then suspension
    Requeue,  // caps, then the job's --signal and a requeue
};

// Whether the curtailment controller acts (CurtailMode=).
enum class CurtailMode {
    Off,      // m2g-curtaild plans nothing
    Monitor,  // it plans and records what it would do, and changes nothing
    Enforce,  // it applies the plan
};

// Defaults of one workload class (ClassName= lines). Index: WorkloadClass
// as an integer (Unset is the row for jobs without a class).
struct ClassPolicy {
    bool deferrable = false;
    double power_w_per_gpu = 0;  // 0: DefaultPowerPerGpuW
    CurtailLevel curtail = CurtailLevel::None;  // default: Suspend when deferrable
    bool curtail_set = false;    // Curtail= given on the ClassName line (the opt-in for non-deferrable jobs)
    double cap_floor_w = 0;      // 0: CapFloorW
};

struct AdmissionPolicy {
    std::string signals_file;  // "" none: admission uses m2g.conf budgets only
    std::string signals_status_file;  // "" none: where job_submit/m2g writes what it believes
    std::string bridge_intents_file;  // "" none: m2g-slinky's bridge-intents.json (jobs from slurm-bridge)
    std::string stats_dir;  // StatsDir=, "" none: where select/m2g and job_submit/m2g publish their counters
    int signals_ttl_sec = 300;
    int signals_poll_sec = 5;
    FailSafe failsafe = FailSafe::Last;
    AdmissionMode mode = AdmissionMode::Enforce;
    double default_power_w_per_gpu = 0;  // 0: the built-in class defaults (see admission.hpp)
    int power_retry_sec = 300;           // deferral step when no end time is known
    double ramp_rate_kw_per_min = 0;     // 0: no pacing by power ramp
    int pace_interval_sec = 60;
    int pace_gpus_per_interval = 0;      // 0: no GPU cap per interval
    std::vector<std::string> defer_exempt_accounts;
    std::vector<std::string> defer_exempt_groups;
    // Reserved intent (PrivilegedTags=, PrivilegedClasses=): only these
    // accounts or groups may use it; job_submit/m2g refuses anyone else.
    std::vector<std::string> privileged_accounts;
    std::vector<std::string> privileged_groups;
    std::vector<std::string> privileged_tags;     // tag keys
    std::vector<std::string> privileged_classes;  // class names
    NoDeferAction no_defer_action = NoDeferAction::Reject;
    MaintenanceAction maintenance_action = MaintenanceAction::Steer;
    int release_check_sec = 5;
    // Per WorkloadClass (Unset, Training, Finetune, Inference, Batch,
    // Benchmark, Dataproc, Agentic); filled with the built-in defaults.
    std::array<ClassPolicy, 8> classes = default_classes();
    // Curtailment of running work (m2g.conf(5), CURTAILMENT).
    CurtailMode curtail_mode = CurtailMode::Off;
    double cap_floor_w = 200;           // CapFloorW=: the lowest per-GPU cap m2g sets
    double idle_power_w_per_gpu = 90;   // IdlePowerPerGpuW=: what a suspended job's GPU still draws
    // What a GPU without a job adds to the feed's draw (-1: IdlePowerPerGpuW,
    // as a site meter sees it). Not an m2g.conf key: the simulator, whose
    // draws leave idle GPUs out, sets 0.
    double unused_gpu_w = -1;
    double curtail_margin_pct = 5;      // CurtailMarginPct=: target = budget x (1 - pct/100)
    int checkpoint_grace_sec = 120;     // CheckpointGraceSec=: from the job's --signal to its requeue
    int curtail_interval_sec = 5;       // CurtailIntervalSec=: the controller's loop
    int curtail_lead_sec = 60;          // CurtailLeadSec=: an announced event's budget holds this long before it
    // CurtailStartWaitSec=: under CurtailMode=enforce, how long a job m2g
    // may not curtail waits at most (select/m2g, wait=power-room) while
    // m2g-curtaild makes room under the site's budget for it; 0: it starts
    // at once and curtailment follows.
    int curtail_start_wait_sec = 30;
    std::string node_agent_url = "http://%a:6830";  // NodeAgentURL=: m2g-nodeagent, %n node name, %a address
    std::string node_agent_token_file;  // NodeAgentTokenFile=: its bearer token, "" none

    static std::array<ClassPolicy, 8> default_classes();
};

// The m2g.conf words of each (config.cpp reads them, case-insensitively).
inline constexpr auto kFailSafeNames = enum_names<FailSafe::Defer>({"last", "open", "defer"});
inline constexpr auto kAdmissionModeNames = enum_names<AdmissionMode::Off>({"enforce", "monitor", "off"});
inline constexpr auto kNoDeferActionNames = enum_names<NoDeferAction::Convert>({"reject", "convert"});
inline constexpr auto kMaintenanceActionNames = enum_names<MaintenanceAction::Defer>({"steer", "defer"});
inline constexpr auto kCurtailLevelNames =
    enum_names<CurtailLevel::Requeue>({"none", "cap", "suspend", "requeue"});
inline constexpr auto kCurtailModeNames = enum_names<CurtailMode::Enforce>({"off", "monitor", "enforce"});

const char* to_string(FailSafe f);
const char* to_string(AdmissionMode m);
const char* to_string(NoDeferAction a);
const char* to_string(MaintenanceAction a);
const char* to_string(CurtailLevel l);
const char* to_string(CurtailMode m);

}  // namespace m2g
