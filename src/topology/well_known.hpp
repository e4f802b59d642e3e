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

// ---- m2g.conf: global keys (alone on their line) ------------------------
inline constexpr const char* kClusterName = "ClusterName";              // informational name
inline constexpr const char* kSitePowerBudgetKW = "SitePowerBudgetKW";  // site power budget, kW
inline constexpr const char* kDefaultTopology = "DefaultTopology";      // select/m2g: intent of jobs without one
inline constexpr const char* kPreferWaitSec = "PreferWaitSec";          // select/m2g: prefer falls back after this
inline constexpr const char* kSparePerDomain = "SparePerDomain";        // select/m2g: free nodes kept per domain
inline constexpr const char* kHealthFile = "HealthFile";                // select/m2g: degraded/fault/over-limit feed

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

// ---- files ---------------------------------------------------------------
inline constexpr const char* kConfFile = "m2g.conf";  // next to slurm.conf
inline constexpr const char* kConfEnv = "M2G_CONF";   // overrides the path (tests, CLI)

}  // namespace m2g::kw
