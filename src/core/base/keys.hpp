// m2g core: every string key m2g reads or writes, declared once with its
// meaning. m2g.conf keys are documented in m2g.conf(5); keep both in step.
#pragma once

#include <array>

namespace m2g::kw {

// ---- m2g.conf: line heads ---------------------------------------------
inline constexpr const char* kNodeName = "NodeName";        // hostlist of compute nodes
inline constexpr const char* kDomainName = "DomainName";    // one NVLink domain (NVL72 rack)
inline constexpr const char* kSwitchName = "SwitchName";    // one fabric switch (leaf, spine, core)
inline constexpr const char* kFaultDomain = "FaultDomain";  // rack, row, PDU, power feed, ...
inline constexpr const char* kPartitionName = "PartitionName";  // select/m2g defaults for one partition
inline constexpr const char* kClassName = "ClassName";          // admission defaults of one workload class

// ---- m2g.conf: global keys (alone on their line) ------------------------
inline constexpr const char* kClusterName = "ClusterName";              // informational name
inline constexpr const char* kSitePowerBudgetKW = "SitePowerBudgetKW";  // site power budget, kW
inline constexpr const char* kDefaultTopology = "DefaultTopology";      // select/m2g: intent of jobs without one
inline constexpr const char* kPreferWaitSec = "PreferWaitSec";          // select/m2g: prefer falls back after this
inline constexpr const char* kPreemptCheckpointSec = "PreemptCheckpointSec";  // select/m2g: how often preemptable jobs checkpoint
inline constexpr const char* kPreemptRestartSec = "PreemptRestartSec";        // select/m2g: work a requeued victim redoes
inline constexpr const char* kSparePerDomain = "SparePerDomain";        // select/m2g: free nodes kept per domain
inline constexpr const char* kHealthFile = "HealthFile";                // select/m2g: degraded/fault/over-limit feed
// Admission and live signals (job_submit/m2g, select/m2g), see m2g.conf(5).
inline constexpr const char* kSignalsFile = "SignalsFile";              // the signals feed (doc/signals.md)
inline constexpr const char* kSignalsTTLSec = "SignalsTTLSec";          // older than this: stale
inline constexpr const char* kSignalsPollSec = "SignalsPollSec";        // how often the feed is checked
inline constexpr const char* kSignalsFailSafe = "SignalsFailSafe";      // last | open | defer
inline constexpr const char* kSignalsStatusFile = "SignalsStatusFile";  // where job_submit/m2g writes its belief
inline constexpr const char* kBridgeIntentsFile = "BridgeIntentsFile";  // m2g-slinky's slurm-bridge pod intents
inline constexpr const char* kAdmission = "Admission";                  // enforce | monitor | off
inline constexpr const char* kDefaultDeferrable = "DefaultDeferrable";  // yes | no: jobs without a class
inline constexpr const char* kDefaultPowerPerGpuW = "DefaultPowerPerGpuW";  // W per GPU when nothing says
inline constexpr const char* kPowerRetrySec = "PowerRetrySec";          // re-check step for deferrals
inline constexpr const char* kRampRateKWPerMin = "RampRateKWPerMin";    // pacing during curtailment
inline constexpr const char* kPaceIntervalSec = "PaceIntervalSec";      // pacing interval
inline constexpr const char* kPaceGpusPerInterval = "PaceGpusPerInterval";  // pacing cap in GPUs
inline constexpr const char* kDeferExemptAccounts = "DeferExemptAccounts";  // may use --m2g-defer=no in events
inline constexpr const char* kDeferExemptGroups = "DeferExemptGroups";      // Unix groups, likewise
inline constexpr const char* kNoDeferAction = "NoDeferAction";          // reject | convert
// Reserved intent: tags and classes only these accounts or Unix groups may use.
inline constexpr const char* kPrivilegedAccounts = "PrivilegedAccounts";
inline constexpr const char* kPrivilegedGroups = "PrivilegedGroups";
inline constexpr const char* kPrivilegedTags = "PrivilegedTags";        // tag keys, e.g. priority,sla
inline constexpr const char* kPrivilegedClasses = "PrivilegedClasses";  // workload classes, e.g. benchmark
inline constexpr const char* kMaintenanceAction = "MaintenanceAction";  // steer | defer
inline constexpr const char* kReleaseCheckSec = "ReleaseCheckSec";      // job_submit/m2g re-evaluation period
// Curtailment of running work (m2g-curtaild), see m2g.conf(5), CURTAILMENT.
inline constexpr const char* kCurtailMode = "CurtailMode";                // off | monitor | enforce
inline constexpr const char* kCapFloorW = "CapFloorW";                    // also ClassName: lowest per-GPU cap
inline constexpr const char* kIdlePowerPerGpuW = "IdlePowerPerGpuW";      // a suspended job's GPU draw
inline constexpr const char* kCurtailMarginPct = "CurtailMarginPct";      // target = budget x (1 - pct/100)
inline constexpr const char* kCheckpointGraceSec = "CheckpointGraceSec";  // --signal to requeue
inline constexpr const char* kCurtailIntervalSec = "CurtailIntervalSec";  // the controller's loop
inline constexpr const char* kCurtailLeadSec = "CurtailLeadSec";          // an announced event's budget holds this early
inline constexpr const char* kCurtailStartWaitSec = "CurtailStartWaitSec";  // work m2g may not curtail waits for room
inline constexpr const char* kNodeAgentURL = "NodeAgentURL";              // m2g-nodeagent on a node: %n name, %a address
inline constexpr const char* kNodeAgentTokenFile = "NodeAgentTokenFile";  // its bearer token
// Reporting (`m2g job`, m2g-exporter), see m2g.conf(5), REPORTING.
inline constexpr const char* kEnergyPricePerKWh = "EnergyPricePerKWh";  // price of 1 kWh (0: no cost shown)
inline constexpr const char* kEnergyCurrency = "EnergyCurrency";        // ISO 4217 code of that price, default EUR
inline constexpr const char* kDefaultPricePerGpuHour = "DefaultPricePerGpuHour";  // a GPU-hour of delay, no class
inline constexpr const char* kStatsDir = "StatsDir";                    // where the plugins publish their counters

// ---- m2g.conf: attributes -----------------------------------------------
inline constexpr const char* kGpus = "Gpus";                    // NodeName: GPUs per node
inline constexpr const char* kNics = "Nics";                    // NodeName: RDMA NICs per node
inline constexpr const char* kNicGbps = "NicGbps";              // NodeName: Gb/s per NIC
inline constexpr const char* kNodes = "Nodes";                  // hostlist of member nodes
inline constexpr const char* kSize = "Size";                    // DomainName: capacity in nodes
inline constexpr const char* kNVLinkGbps = "NVLinkGbps";        // DomainName: NVLink Gb/s per GPU
inline constexpr const char* kPowerBudgetKW = "PowerBudgetKW";  // DomainName/FaultDomain budget, kW
inline constexpr const char* kLevel = "Level";                  // SwitchName: leaf, spine or core
inline constexpr const char* kLinkGbps = "LinkGbps";            // SwitchName: uplink Gb/s to parent
inline constexpr const char* kSwitches = "Switches";            // SwitchName: child switches
inline constexpr const char* kDomains = "Domains";              // child/member NVLink domains
inline constexpr const char* kType = "Type";                    // FaultDomain: kind, see below
inline constexpr const char* kDeferrable = "Deferrable";        // ClassName: yes | no
inline constexpr const char* kPowerPerGpuW = "PowerPerGpuW";    // ClassName: W per GPU
inline constexpr const char* kCurtail = "Curtail";              // ClassName: none | cap | suspend | requeue
inline constexpr const char* kPricePerGpuHour = "PricePerGpuHour";  // ClassName: a GPU-hour of delay

inline constexpr std::array<const char*, 6> kFaultDomainTypes = {"rack", "row", "pdu", "power_feed", "cooling",
                                                                 "room"};

// ---- --m2g-* options (sbatch/srun/salloc), see spank_m2g(8) ---------------
inline constexpr const char* kOptTopology = "m2g-topology";  // strict|prefer|any[:nvlink|leaf|spine]
inline constexpr const char* kOptSegment = "m2g-segment";    // N nodes per NVLink domain group
inline constexpr const char* kOptClass = "m2g-class";        // workload class
inline constexpr const char* kOptRecipe = "m2g-recipe";      // recipe name
inline constexpr const char* kOptDefer = "m2g-defer";        // ok|no|until=TIME
inline constexpr const char* kOptTag = "m2g-tag";            // KEY=VALUE, repeatable
inline constexpr const char* kOptExplain = "m2g-explain";    // flag

// ---- spank_job_env (job_submit, select; prolog/epilog see SPANK_<key>) ----
// The same names are the user's environment defaults for the options, and
// what tasks see in their environment.
inline constexpr const char* kEnvTopology = "M2G_TOPOLOGY";        // strict:nvlink
inline constexpr const char* kEnvSegment = "M2G_SEGMENT";          // 18
inline constexpr const char* kEnvClass = "M2G_CLASS";              // training
inline constexpr const char* kEnvRecipe = "M2G_RECIPE";            // llama3-70b-finetune
inline constexpr const char* kEnvDefer = "M2G_DEFER";              // ok | no | until=<epoch seconds>
inline constexpr const char* kEnvTags = "M2G_TAGS";                // tenant=acme,project=x
inline constexpr const char* kEnvExplain = "M2G_EXPLAIN";          // 1
inline constexpr const char* kEnvModel = "M2G_MODEL";              // from the recipe
inline constexpr const char* kEnvGpus = "M2G_GPUS";                // from the recipe
inline constexpr const char* kEnvPowerPerGpu = "M2G_POWER_W_PER_GPU";  // from the recipe
inline constexpr const char* kEnvRuntime = "M2G_RUNTIME_S";        // from the recipe
inline constexpr const char* kEnvGpuMultiple = "M2G_GPU_MULTIPLE";  // from the recipe: GPUs of one model replica (TP*PP)
inline constexpr const char* kEnvJobId = "M2G_JOB_ID";             // tasks only
inline constexpr const char* kEnvOtel = "OTEL_RESOURCE_ATTRIBUTES";  // extended, never replaced
// OpenTelemetry resource attribute keys m2g adds.
inline constexpr const char* kOtelJobId = "slurm.job.id";
inline constexpr const char* kOtelClass = "m2g.class";
inline constexpr const char* kOtelTenant = "m2g.tenant";
inline constexpr const char* kOtelModel = "m2g.model";
// Tag keys with a meaning of their own.
inline constexpr const char* kTagTenant = "tenant";
inline constexpr const char* kTagProject = "project";
inline constexpr const char* kTagModel = "model_name";

// ---- m2g-recipes.conf, see m2g-recipes.conf(5) ---------------------------
inline constexpr const char* kRecipeName = "RecipeName";
inline constexpr const char* kRecipeModel = "Model";
inline constexpr const char* kRecipeParams = "Params";          // 70B
inline constexpr const char* kRecipePrecision = "Precision";    // bf16
inline constexpr const char* kRecipeTP = "TP";                  // tensor parallel
inline constexpr const char* kRecipePP = "PP";                  // pipeline parallel
inline constexpr const char* kRecipeDP = "DP";                  // data parallel
inline constexpr const char* kRecipeGpus = "Gpus";
inline constexpr const char* kRecipeTopology = "Topology";      // as --m2g-topology
inline constexpr const char* kRecipeSegment = "Segment";        // as --m2g-segment
inline constexpr const char* kRecipeClass = "Class";            // as --m2g-class
inline constexpr const char* kRecipeDefer = "Defer";            // ok | no
inline constexpr const char* kRecipePower = "PowerPerGpuW";
inline constexpr const char* kRecipeRuntime = "Runtime";        // Slurm time: [D-]HH:MM:SS, MM, ...
inline constexpr const char* kRecipeDescription = "Description";  // quoted text

// ---- plugstack.conf arguments of spank_m2g.so ----------------------------
inline constexpr const char* kArgRecipes = "recipes";        // catalog path
inline constexpr const char* kArgDcgmDir = "dcgm_dir";       // dcgm-exporter --hpc-job-mapping-dir
inline constexpr const char* kArgTextfileDir = "textfile_dir";  // node_exporter textfile directory
inline constexpr const char* kDefaultRecipes = "/etc/slurm/m2g-recipes.conf";

// ---- the signals feed (JSON, doc/signals.md, doc/signals.schema.json) -------
inline constexpr const char* kSigSchema = "schema";            // "m2g.signals/v1"
inline constexpr const char* kSigSchemaV1 = "m2g.signals/v1";
inline constexpr const char* kSigGeneratedAt = "generated_at";  // RFC 3339 or epoch seconds
inline constexpr const char* kSigSource = "source";            // who wrote it
inline constexpr const char* kSigPower = "power";              // { site, rows, racks }
inline constexpr const char* kSigSite = "site";
inline constexpr const char* kSigRows = "rows";                // FaultDomain Type=row names
inline constexpr const char* kSigRacks = "racks";              // NVLink domain names (power; maintenance hostlist)
inline constexpr const char* kSigBudgetKW = "budget_kw";
inline constexpr const char* kSigDrawKW = "draw_kw";
inline constexpr const char* kSigThermal = "thermal";          // { node: { gpu_temp_c, state } }
inline constexpr const char* kSigGpuTempC = "gpu_temp_c";
inline constexpr const char* kSigState = "state";              // ok | warm | hot | critical
inline constexpr const char* kSigEvents = "events";            // demand-response events
inline constexpr const char* kSigId = "id";
inline constexpr const char* kSigStart = "start";
inline constexpr const char* kSigEnd = "end";
inline constexpr const char* kSigCurtailPct = "curtail_pct";
inline constexpr const char* kSigCurtailKW = "curtail_kw";
inline constexpr const char* kSigLimitKW = "limit_kw";        // the scope may draw at most this
inline constexpr const char* kSigOpenADR = "openadr_events";  // OpenADR 3 event objects (doc/forecast.md)
inline constexpr const char* kSigScope = "scope";              // "site", "row:NAME", "rack:NAME"
inline constexpr const char* kSigMaintenance = "maintenance";  // windows
inline constexpr const char* kSigNodes = "nodes";              // hostlist
inline constexpr const char* kSigReason = "reason";
inline constexpr const char* kSigHealth = "health";            // { degraded, down, nvlink_fault, link_down }
inline constexpr const char* kSigDegraded = "degraded";
inline constexpr const char* kSigDown = "down";
inline constexpr const char* kSigNvlinkFault = "nvlink_fault";
inline constexpr const char* kSigLinkDown = "link_down";       // switch names
inline constexpr const char* kSigVendorPrefix = "x-";         // keys starting with it are ignored
inline constexpr const char* kSigScopeSite = "site";           // event scope
inline constexpr const char* kSigScopeRow = "row:";            // event scope prefix + FaultDomain (Type=row)
inline constexpr const char* kSigScopeRack = "rack:";          // event scope prefix + DomainName
// The status file SignalFeed writes (SignalsStatusFile=), read by `m2g signals show`.
inline constexpr const char* kSigStatusSchemaV1 = "m2g.signals-status/v1";
inline constexpr const char* kSigStatusFile = "file";          // the feed's path
inline constexpr const char* kSigStatusState = "state";        // not_configured|fresh|stale|missing|corrupt
inline constexpr const char* kSigStatusDetail = "detail";      // one line for people
inline constexpr const char* kSigStatusCheckedAt = "checked_at";  // RFC 3339, when the feed was judged
inline constexpr const char* kSigStatusFailSafe = "failsafe";  // last | open | defer
inline constexpr const char* kSigStatusTtl = "ttl_sec";
inline constexpr const char* kSigStatusError = "error";        // the read/parse error, or null
inline constexpr const char* kSigStatusCorruptSince = "corrupt_since";  // RFC 3339 or null
inline constexpr const char* kSigStatusSnapshot = "snapshot";  // the last good feed object, or null

// ---- AdminComment ------------------------------------------------------------
// select/m2g and job_submit/m2g write one segment "m2g:[...]" into a job's
// AdminComment: the placement part, then "; admission=..." for admission.
inline constexpr const char* kAnnotationOpen = "m2g:[";
inline constexpr const char* kAnnotationAdmit = "admission=";
inline constexpr const char* kAnnotationCurtail = "curtail=";
// Typed fields of a "waiting" placement part, written before its reason=
// (annotation.hpp); `m2g explain` and `m2g status` read these, not the reason.
inline constexpr const char* kAnnotationWait = "wait";  // why it waits: one of kWaitCauses
inline constexpr const char* kAnnotationNeed = "need";  // nodes it waits for (nvlink-domain, switch, nodes)
inline constexpr const char* kAnnotationOver = "over";  // racks (rack-power) or rows (row-power) over budget
// prefer locality: when the job could first have started short of its intent
// (epoch s); its prefer wait (PreferWaitSec=) counts from then
inline constexpr const char* kAnnotationPreferSince = "prefer_since";
// power-room: when its wait for m2g-curtaild to make room began (epoch s);
// it starts regardless CurtailStartWaitSec later, and m2g-curtaild keeps
// room for it until then
inline constexpr const char* kAnnotationRoomSince = "room_since";
// The wait= values, in WaitCause order (placement.hpp; None is not written);
// also the <what> of m2g_pending_jobs{reason="waiting:<what>"}.
inline constexpr std::array<const char*, 13> kWaitCauses = {
    "",               // None: the job does not wait
    "nvlink-domain",  // no NVLink domain (or set of them, for a multi-domain job) has its free healthy nodes
    "switch",         // no leaf or spine switch has its free healthy nodes below it
    "nodes",          // too few free healthy nodes under any one switch
    "site-power",     // the site's power headroom (events applied) cannot take the job
    "rack-power",     // racks over budget took the nodes it needs out of the offer
    "row-power",      // rows over budget, likewise
    "pacing",         // the pacing interval's GPU or ramp allowance is spent (curtailment)
    "maintenance",    // maintenance windows took the nodes it needs out of the offer
    "failsafe",       // SignalsFailSafe=defer holds deferrable work (signals stale or missing)
    "nodes-down",     // nodes the signals mark down took the nodes it needs out of the offer
    "power-room",     // a job m2g may not curtail waits (CurtailStartWaitSec at most) while m2g-curtaild makes room for it
    "other",          // anything else (a request the engine cannot serve, an internal error)
};

// ---- plugin counters (StatsDir=, src/core/obs/stats.hpp) --------------------
// select/m2g and job_submit/m2g each publish one JSON file into StatsDir, at
// most every kStatsPublishSec, replaced atomically; m2g-exporter reads them.
inline constexpr const char* kStatsSelectFile = "select.json";
inline constexpr const char* kStatsAdmissionFile = "admission.json";
inline constexpr int kStatsPublishSec = 10;
inline constexpr const char* kStatsSchema = "schema";           // "m2g.stats/v1"
inline constexpr const char* kStatsSchemaV1 = "m2g.stats/v1";
inline constexpr const char* kStatsPlugin = "plugin";           // "select" | "admission"
inline constexpr const char* kStatsPid = "pid";                 // the writing process (slurmctld)
inline constexpr const char* kStatsStartedAt = "started_at";    // epoch s: the counters count from here
inline constexpr const char* kStatsWrittenAt = "written_at";    // epoch s
inline constexpr const char* kStatsDecisions = "decisions";     // { verdict: count }
inline constexpr const char* kStatsLatency = "latency_us";      // histogram, microseconds
inline constexpr const char* kStatsDomains = "placement_domains";  // histogram, NVLink domains per placed job
inline constexpr const char* kStatsBounds = "bounds";           // histogram: upper bounds (+Inf implied)
inline constexpr const char* kStatsCounts = "counts";           // histogram: per bucket, the last is +Inf
inline constexpr const char* kStatsSum = "sum";                 // histogram: sum of observations
inline constexpr const char* kStatsFitOne = "fit_one_domain";   // placed jobs that fit one NVLink domain
inline constexpr const char* kStatsContained = "contained";     // ... and were placed in one
// Plugins and verdicts: label values of m2g_decisions_total.
inline constexpr const char* kPluginSelect = "select";
inline constexpr const char* kPluginAdmission = "admission";
inline constexpr std::array<const char*, 4> kSelectVerdicts = {"placed", "waiting", "blocked", "stock"};
inline constexpr std::array<const char*, 5> kAdmissionVerdicts = {"admit", "defer", "pace", "reject", "released"};

// ---- Prometheus metrics (m2g-exporter), see doc/metrics.md ------------------
// Every metric the exporter serves, with its type, labels and HELP text.
// contrib/grafana and contrib/prometheus use only these names (checked by
// test/integration/exporter.sh against `m2g-exporter --list-metrics`).
struct Metric {
    const char* name;
    const char* type;    // gauge | counter | histogram
    const char* labels;  // comma-separated label names ("" none)
    const char* help;
};
inline constexpr Metric kMetricQueueJobs{"m2g_queue_jobs", "gauge", "class,state",
    "Jobs in Slurm's queue by m2g workload class and state: running, pending (not held by m2g), deferred (held by an m2g deferral or pacing)."};
inline constexpr Metric kMetricPendingJobs{"m2g_pending_jobs", "gauge", "reason",
    "Pending jobs by reason: m2g's (deferred:event, paced, waiting:nvlink-domain, ...), else Slurm's reason word."};
inline constexpr Metric kMetricDeferredJobs{"m2g_deferred_jobs", "gauge", "",
    "Pending jobs held by an m2g deferral or pacing."};
inline constexpr Metric kMetricDomainGpus{"m2g_domain_gpus", "gauge", "domain,state",
    "GPUs per NVLink domain: used, free (on healthy nodes), degraded (down, drained, degraded or NVLink-faulted)."};
inline constexpr Metric kMetricDomainDegraded{"m2g_domain_degraded", "gauge", "domain",
    "1 when the NVLink domain has an NVLink fault or degraded GPUs, else 0."};
inline constexpr Metric kMetricWholeFreeDomains{"m2g_whole_free_domains", "gauge", "",
    "NVLink domains with every GPU free and healthy."};
inline constexpr Metric kMetricFragmentation{"m2g_fragmentation_ratio", "gauge", "",
    "Share (0..1) of free healthy GPUs that sit in NVLink domains which also have used GPUs."};
inline constexpr Metric kMetricPowerBudget{"m2g_power_budget_kw", "gauge", "scope,name",
    "Power budget in kW (the feed's, else m2g.conf's) per scope (site, row, rack)."};
inline constexpr Metric kMetricPowerEffective{"m2g_power_effective_budget_kw", "gauge", "scope,name",
    "Power budget in kW after active curtailment events."};
inline constexpr Metric kMetricPowerDraw{"m2g_power_draw_kw", "gauge", "scope,name",
    "Power draw in kW as the signals feed reports it."};
inline constexpr Metric kMetricPowerHeadroom{"m2g_power_headroom_kw", "gauge", "scope,name",
    "Effective budget minus draw in kW (negative: over budget)."};
inline constexpr Metric kMetricActiveEvents{"m2g_active_events", "gauge", "",
    "Demand-response (curtailment) events active now."};
inline constexpr Metric kMetricEventInfo{"m2g_event_info", "gauge", "id,scope",
    "1 for every active demand-response event."};
inline constexpr Metric kMetricEventEnd{"m2g_event_end_timestamp_seconds", "gauge", "id,scope",
    "When an active demand-response event ends (Unix time)."};
inline constexpr Metric kMetricSignalsAge{"m2g_signals_age_seconds", "gauge", "",
    "Age of the signals snapshot in force (now - generated_at)."};
inline constexpr Metric kMetricSignalsTtl{"m2g_signals_ttl_seconds", "gauge", "",
    "SignalsTTLSec: a snapshot older than this is stale."};
inline constexpr Metric kMetricSignalsState{"m2g_signals_state", "gauge", "state",
    "1 for the signals feed's current state (not_configured, fresh, stale, missing, corrupt), 0 for the others."};
inline constexpr Metric kMetricPlacementDomains{"m2g_placement_domains", "histogram", "",
    "NVLink domains per job placed by select/m2g."};
inline constexpr Metric kMetricNvlinkFitOne{"m2g_nvlink_fit_one_domain_total", "counter", "",
    "Placed jobs small enough for one NVLink domain."};
inline constexpr Metric kMetricNvlinkContained{"m2g_nvlink_contained_total", "counter", "",
    "Placed jobs small enough for one NVLink domain that were placed in one."};
inline constexpr Metric kMetricNvlinkContainment{"m2g_nvlink_containment_ratio", "gauge", "",
    "m2g_nvlink_contained_total / m2g_nvlink_fit_one_domain_total since select/m2g started."};
inline constexpr Metric kMetricDecisionDuration{"m2g_decision_duration_seconds", "histogram", "plugin",
    "Time a plugin spent on one decision (select: select_p_job_test; admission: job_submit)."};
inline constexpr Metric kMetricDecisions{"m2g_decisions_total", "counter", "plugin,verdict",
    "Decisions by plugin and verdict."};
inline constexpr Metric kMetricStatsAge{"m2g_plugin_stats_age_seconds", "gauge", "plugin",
    "Age of the counters a plugin last published into StatsDir."};
inline constexpr Metric kMetricExporterUp{"m2g_exporter_up", "gauge", "",
    "1 when the last refresh read Slurm's state, else 0 (the cluster metrics are then left out)."};
inline constexpr Metric kMetricExporterLastRefresh{"m2g_exporter_last_refresh_timestamp_seconds", "gauge", "",
    "When the exporter last refreshed its state successfully (Unix time)."};
inline constexpr Metric kMetricExporterRefreshErrors{"m2g_exporter_refresh_errors_total", "counter", "",
    "Refreshes that failed (Slurm not reachable, m2g.conf broken)."};
inline constexpr Metric kMetricExporterRefreshDuration{"m2g_exporter_refresh_duration_seconds", "gauge", "",
    "How long the last refresh took."};
inline constexpr Metric kMetricForecastPower{"m2g_forecast_power_kw", "gauge", "scope,name,quantile,ahead",
    "Forecast GPU power of the site, a row or a rack, this far ahead (1h, 6h, 24h), at this quantile (0.1, 0.5, 0.9) of the forecast's runs (m2g forecast)."};
inline constexpr Metric kMetricForecastStarts{"m2g_forecast_pending_starts", "gauge", "within",
    "Pending jobs the forecast expects to have started within 1h, 6h, 24h (cumulative), or never (no placement their intent accepts)."};
inline constexpr Metric kMetricFlexAvailable{"m2g_flex_available_kw", "gauge", "depth_pct,duration_h",
    "Mean GPU power the site would shed from now for duration_h when asked for depth_pct of its forecast draw."};
inline constexpr Metric kMetricFlexMet{"m2g_flex_met", "gauge", "depth_pct,duration_h",
    "1 when that shed keeps the forecast draw under its target at every step, else 0."};
inline constexpr Metric kMetricFlexDelay{"m2g_flex_delay_gpu_hours", "gauge", "depth_pct,duration_h",
    "GPU-hours by which jobs would complete later for that shed."};
inline constexpr Metric kMetricFlexCost{"m2g_flex_delay_cost", "gauge", "depth_pct,duration_h,currency",
    "What that delay costs at the classes' PricePerGpuHour= (present when m2g.conf prices GPU-hours)."};
inline constexpr Metric kMetricForecastTimestamp{"m2g_forecast_timestamp_seconds", "gauge", "",
    "When the last forecast was made (Unix time); the forecast metrics are from it."};
inline constexpr Metric kMetricForecastDuration{"m2g_forecast_duration_seconds", "gauge", "",
    "How long the last forecast took, its flexibility curve included."};
inline constexpr std::array<const Metric*, 36> kMetrics = {
    &kMetricQueueJobs,        &kMetricPendingJobs,        &kMetricDeferredJobs,
    &kMetricDomainGpus,       &kMetricDomainDegraded,     &kMetricWholeFreeDomains,   &kMetricFragmentation,
    &kMetricPowerBudget,      &kMetricPowerEffective,     &kMetricPowerDraw,          &kMetricPowerHeadroom,
    &kMetricActiveEvents,     &kMetricEventInfo,          &kMetricEventEnd,           &kMetricSignalsAge,
    &kMetricSignalsTtl,       &kMetricSignalsState,       &kMetricPlacementDomains,   &kMetricNvlinkFitOne,
    &kMetricNvlinkContained,  &kMetricNvlinkContainment,  &kMetricDecisionDuration,   &kMetricDecisions,
    &kMetricStatsAge,         &kMetricExporterUp,         &kMetricExporterLastRefresh, &kMetricExporterRefreshErrors,
    &kMetricExporterRefreshDuration, &kMetricForecastPower, &kMetricForecastStarts, &kMetricFlexAvailable,
    &kMetricFlexMet,          &kMetricFlexDelay,          &kMetricFlexCost,           &kMetricForecastTimestamp,
    &kMetricForecastDuration};
// Label names.
inline constexpr const char* kLabelClass = "class";
inline constexpr const char* kLabelState = "state";
inline constexpr const char* kLabelReason = "reason";
inline constexpr const char* kLabelDomain = "domain";
inline constexpr const char* kLabelScope = "scope";
inline constexpr const char* kLabelName = "name";
inline constexpr const char* kLabelId = "id";
inline constexpr const char* kLabelPlugin = "plugin";
inline constexpr const char* kLabelVerdict = "verdict";
inline constexpr const char* kLabelLe = "le";  // histogram bucket bound
inline constexpr const char* kLabelQuantile = "quantile";
inline constexpr const char* kLabelAhead = "ahead";
inline constexpr const char* kLabelWithin = "within";
inline constexpr const char* kLabelDepthPct = "depth_pct";
inline constexpr const char* kLabelDurationH = "duration_h";
inline constexpr const char* kLabelCurrency = "currency";

// ---- files ---------------------------------------------------------------
inline constexpr const char* kConfFile = "m2g.conf";  // next to slurm.conf
inline constexpr const char* kConfEnv = "M2G_CONF";   // overrides the path (tests, CLI)
inline constexpr const char* kEnvNvmlLibrary = "M2G_NVML_LIBRARY";  // m2g discover node: NVML to dlopen

// ---- Kubernetes (m2g-slinky, doc/slinky.md) -----------------------------------
// Node labels read (doc/slinky.md gives the sources and versions).
inline constexpr const char* kK8sLabelGpuClique = "nvidia.com/gpu.clique";  // GFD >= 0.17: "<cluster UUID>.<clique id>"
inline constexpr const char* kK8sLabelTopographDomain = "accelerator.topograph.run/domain";  // topograph >= 1.0
inline constexpr const char* kK8sLabelTopographTier0 = "fabric.topograph.run/tier-0";  // the leaf switch
inline constexpr const char* kK8sLabelTopographTier1 = "fabric.topograph.run/tier-1";  // spine
inline constexpr const char* kK8sLabelTopographTier2 = "fabric.topograph.run/tier-2";  // core
// topograph v0.5 and earlier (renamed in v1.0.0): read when the keys above are absent.
inline constexpr const char* kK8sLabelOldTopographLeaf = "network.topology.nvidia.com/leaf";
inline constexpr const char* kK8sLabelOldTopographSpine = "network.topology.nvidia.com/spine";
inline constexpr const char* kK8sLabelOldTopographCore = "network.topology.nvidia.com/core";
inline constexpr const char* kK8sLabelOldTopographDomain = "network.topology.nvidia.com/accelerator";
inline constexpr const char* kK8sLabelTopographTierPrefix = "fabric.topograph.run/tier-";  // + N, 0 nearest the node
inline constexpr const char* kK8sLabelHostname = "kubernetes.io/hostname";
// m2g's own node label: the m2g.conf cluster (ClusterName, else "m2g") a node
// belongs to; the Kueue ResourceFlavor of `m2g topology export` selects by it.
inline constexpr const char* kK8sLabelM2gCluster = "m2g.slurm.net/cluster";
// slurmd pods of slurm-operator NodeSets (v1.0+); the Slurm node name is the
// pod label below (slurm-operator v1.0+), else the pod's spec.hostname.
inline constexpr const char* kK8sSlurmdSelector = "app.kubernetes.io/name=slurmd";
inline constexpr const char* kK8sLabelPodHostname = "nodeset.slinky.slurm.net/pod-hostname";
// Pods slurm-bridge schedules (spec.schedulerName), whose m2g.slurm.net/*
// annotations become the intent of the Slurm job slurm-bridge submits.
inline constexpr const char* kK8sBridgeScheduler = "slurm-bridge-scheduler";
// Node annotation written: slurm-operator (v1.1+) copies it into the Slurm
// node's topology (Slurm 25.05+ dynamic topology): "<topology>:<unit>,...".
inline constexpr const char* kK8sAnnotationTopology = "topology.slinky.slurm.net/spec";
// Pod annotations read for jobs that arrive through slurm-bridge: each maps
// to the --m2g-* option of the same name.
inline constexpr const char* kK8sPodAnnotationPrefix = "m2g.slurm.net/";
inline constexpr const char* kK8sPodTopology = "m2g.slurm.net/topology";  // --m2g-topology
inline constexpr const char* kK8sPodSegment = "m2g.slurm.net/segment";    // --m2g-segment
inline constexpr const char* kK8sPodClass = "m2g.slurm.net/class";        // --m2g-class
inline constexpr const char* kK8sPodDefer = "m2g.slurm.net/defer";        // --m2g-defer
inline constexpr const char* kK8sPodRecipe = "m2g.slurm.net/recipe";      // --m2g-recipe
inline constexpr const char* kK8sPodTags = "m2g.slurm.net/tags";          // --m2g-tag, comma-separated KEY=VALUE
// ConfigMap keys written.
inline constexpr const char* kK8sConfigMapConfKey = "m2g.conf";
inline constexpr const char* kK8sConfigMapSignalsKey = "signals.json";
inline constexpr const char* kK8sConfigMapIntentsKey = "bridge-intents.json";  // in the signals ConfigMap

// ---- bridge-intents.json (m2g-slinky -> job_submit/m2g) ----------------------
// {"version": "m2g.bridge-intents/v1", "generated_at": EPOCH,
//  "pods": {"NS/POD": {"env": {"M2G_CLASS": "training", ...}} | {"error": "..."}}}
// slurm-bridge writes a job's AdminComment as {"pods": ["NS/POD", ...]}.
inline constexpr const char* kIntentsVersion = "m2g.bridge-intents/v1";
inline constexpr const char* kIntentsGeneratedAt = "generated_at";
inline constexpr const char* kIntentsPods = "pods";
inline constexpr const char* kIntentsEnv = "env";
inline constexpr const char* kIntentsError = "error";
inline constexpr const char* kBridgeAdminCommentPods = "pods";

}  // namespace m2g::kw
