// m2g core: m2g.conf and topology.conf readers, and model validation.
#include "core/model/config.hpp"

#include "core/base/conf_lines.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"
#include "core/job/intent.hpp"
#include "core/base/keys.hpp"

namespace m2g {

using namespace conf;

std::string conf_path(const char* slurm_default)
{
    if (const char* env = std::getenv(kw::kConfEnv); env && *env)
        return env;
    return slurm_default && *slurm_default ? slurm_default : kw::kConfFile;
}

std::string resolve_conf_path(const std::string& given)
{
    if (!given.empty())
        return given;
    std::string dir = kSlurmConfDir;
    if (const char* sc = std::getenv("SLURM_CONF"); sc && *sc) {
        const std::string slurm_conf(sc);
        const auto slash = slurm_conf.rfind('/');
        dir = slash == std::string::npos ? "." : slash == 0 ? "/" : slurm_conf.substr(0, slash);
    }
    return conf_path((dir == "/" ? dir : dir + "/").append(kw::kConfFile).c_str());
}

namespace {

const LineKind kNodeLine{kw::kNodeName, {kw::kGpus, kw::kNics, kw::kNicGbps}};
const LineKind kDomainLine{kw::kDomainName, {kw::kNodes, kw::kSize, kw::kNVLinkGbps, kw::kPowerBudgetKW}};
const LineKind kSwitchLine{kw::kSwitchName,
                           {kw::kLevel, kw::kLinkGbps, kw::kSwitches, kw::kDomains, kw::kNodes}};
const LineKind kFaultLine{kw::kFaultDomain, {kw::kType, kw::kNodes, kw::kDomains, kw::kPowerBudgetKW}};
const std::vector<const char*> kGlobalKeys{
    kw::kClusterName,        kw::kSitePowerBudgetKW,   kw::kDefaultTopology,    kw::kPreferWaitSec,
    kw::kSparePerDomain,     kw::kHealthFile,          kw::kSignalsFile,        kw::kSignalsTTLSec,
    kw::kSignalsPollSec,     kw::kSignalsFailSafe,     kw::kSignalsStatusFile,  kw::kAdmission,
    kw::kDefaultDeferrable,  kw::kDefaultPowerPerGpuW, kw::kPowerRetrySec,      kw::kRampRateKWPerMin,
    kw::kPaceIntervalSec,    kw::kPaceGpusPerInterval, kw::kDeferExemptAccounts, kw::kDeferExemptGroups,
    kw::kNoDeferAction,      kw::kMaintenanceAction,   kw::kReleaseCheckSec,    kw::kEnergyPricePerKWh,
    kw::kEnergyCurrency,     kw::kStatsDir,            kw::kBridgeIntentsFile,  kw::kPrivilegedAccounts,
    kw::kPrivilegedGroups,   kw::kPrivilegedTags,      kw::kPrivilegedClasses,  kw::kCurtailMode,
    kw::kCapFloorW,          kw::kIdlePowerPerGpuW,    kw::kCurtailMarginPct,   kw::kCheckpointGraceSec,
    kw::kCurtailIntervalSec, kw::kCurtailLeadSec,      kw::kCurtailStartWaitSec, kw::kNodeAgentURL,      kw::kNodeAgentTokenFile,
    kw::kDefaultPricePerGpuHour, kw::kPreemptCheckpointSec, kw::kPreemptRestartSec};
const LineKind kPartitionLine{kw::kPartitionName, {kw::kDefaultTopology, kw::kPreferWaitSec, kw::kSparePerDomain}};
const LineKind kClassLine{kw::kClassName, {kw::kDeferrable, kw::kPowerPerGpuW, kw::kCurtail, kw::kCapFloorW, kw::kPricePerGpuHour}};
const std::vector<const char*> kLineHeads{kw::kNodeName, kw::kDomainName, kw::kSwitchName, kw::kFaultDomain,
                                          kw::kPartitionName, kw::kClassName};

// The workload classes a ClassName= line may name (every class but Unset;
// jobs without a class take DefaultDeferrable= and DefaultPowerPerGpuW=).
constexpr WorkloadClass kNamedClasses[] = {WorkloadClass::Training,  WorkloadClass::Finetune, WorkloadClass::Inference,
                                           WorkloadClass::Batch,     WorkloadClass::Benchmark, WorkloadClass::Dataproc,
                                           WorkloadClass::Agentic};

// "a, b or c"
std::string one_of(const std::vector<const char*>& names)
{
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
        out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
    return out;
}

// A keyword value (case-insensitive): its index in `names`.
int parse_choice(const SourceLoc& loc, const char* key, const std::string& value,
                 const std::vector<const char*>& names)
{
    for (size_t i = 0; i < names.size(); ++i)
        if (lower(value) == names[i])
            return static_cast<int>(i);
    throw ParseError(loc.str() + ": " + key + "=" + value + " is not valid; expected " + one_of(names));
}

// A keyword value (case-insensitive) of one of `names`' enumerators.
template <typename E, size_t N>
E parse_choice(const SourceLoc& loc, const char* key, const std::string& value, const EnumNames<E, N>& names)
{
    return static_cast<E>(parse_choice(loc, key, value, {names.names.begin(), names.names.end()}));
}

bool parse_yes_no(const SourceLoc& loc, const char* key, const std::string& value)
{
    return parse_choice(loc, key, value, {"yes", "no"}) == 0;
}

// Watts per GPU: 0 (inherit) to 5000.
double parse_watts(const SourceLoc& loc, const char* key, const std::string& value, const char* zero_means)
{
    char* end = nullptr;
    errno = 0;
    const double w = std::strtod(value.c_str(), &end);
    if (errno || end == value.c_str() || *end || !std::isfinite(w) || w < 0 || w > 5000)
        throw ParseError(loc.str() + ": " + key + "=" + value +
                         " is not valid; expected watts per GPU from 0 to 5000 (0: " + zero_means + ")");
    return w;
}

// EnergyPricePerKWh=, PricePerGpuHour=: a price in the currency's main
// unit, 0 or more; `of` says of what ("one kWh").
double parse_price(const SourceLoc& loc, const char* key, const std::string& value, const char* of = "one kWh")
{
    char* end = nullptr;
    errno = 0;
    const double p = std::strtod(value.c_str(), &end);
    if (errno || end == value.c_str() || *end || !std::isfinite(p) || p < 0 || p > 1e6)
        throw ParseError(loc.str() + ": " + key + "=" + value +
                         " is not valid; expected the price of " + of +
                         " as a number from 0 to 1000000, e.g. 0.25 (0: no cost shown)");
    return p;
}

// EnergyCurrency=: three letters (ISO 4217), kept in upper case.
std::string parse_currency(const SourceLoc& loc, const char* key, const std::string& value)
{
    const bool ok = value.size() == 3 && std::all_of(value.begin(), value.end(), [](char c) {
                        return std::isalpha(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) < 128;
                    });
    if (!ok)
        throw ParseError(loc.str() + ": " + key + "=" + value +
                         " is not valid; expected a three-letter ISO 4217 currency code such as EUR, USD or CHF");
    std::string out = value;
    for (char& c : out)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

std::string absolute_path(const SourceLoc& loc, const char* key, const std::string& value)
{
    if (value[0] != '/')
        throw ParseError(loc.str() + ": " + key + "=" + value + " needs an absolute path");
    return value;
}

// A comma-separated list of account or group names.
std::vector<std::string> parse_name_list(const SourceLoc& loc, const char* key, const std::string& value,
                                         const char* what)
{
    std::vector<std::string> out;
    size_t pos = 0;
    while (true) {
        const size_t comma = value.find(',', pos);
        const std::string item = value.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (item.empty())
            throw ParseError(loc.str() + ": " + key + "=" + value +
                             " is not valid; expected a comma-separated list of " + what +
                             " names without empty entries, e.g. ops,oncall");
        if (std::find(out.begin(), out.end(), item) == out.end())
            out.push_back(item);
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
    return out;
}

// NodeAgentURL=: http:// or https://, with %n (node name) or %a (its
// address) so that each node gets its own agent.
std::string parse_agent_url(const SourceLoc& loc, const char* key, const std::string& value)
{
    const bool scheme = value.rfind("http://", 0) == 0 || value.rfind("https://", 0) == 0;
    if (!scheme || (value.find("%n") == std::string::npos && value.find("%a") == std::string::npos) ||
        value.find_first_of(" \t") != std::string::npos)
        throw ParseError(loc.str() + ": " + key + "=" + value +
                         " is not valid; expected an http:// or https:// URL naming the node with %n (its name) or "
                         "%a (its NodeAddr), e.g. http://%a:6830");
    return value;
}

// One admission key (see m2g.conf(5), ADMISSION AND SIGNALS); `key` is
// the canonical spelling of a global key that is none of the others.
void set_admission_key(AdmissionPolicy& a, const SourceLoc& loc, const std::string& key, const std::string& value)
{
    const char* k = key.c_str();
    if (key == kw::kSignalsFile)
        a.signals_file = absolute_path(loc, k, value);
    else if (key == kw::kSignalsStatusFile)
        a.signals_status_file = absolute_path(loc, k, value);
    else if (key == kw::kStatsDir)
        a.stats_dir = absolute_path(loc, k, value);
    else if (key == kw::kBridgeIntentsFile)
        a.bridge_intents_file = absolute_path(loc, k, value);
    else if (key == kw::kSignalsTTLSec)
        a.signals_ttl_sec = parse_integer(loc, k, value, 1, 7 * 86400);
    else if (key == kw::kSignalsPollSec)
        a.signals_poll_sec = parse_integer(loc, k, value, 1, 3600);
    else if (key == kw::kSignalsFailSafe)
        a.failsafe = parse_choice(loc, k, value, kFailSafeNames);
    else if (key == kw::kAdmission)
        a.mode = parse_choice(loc, k, value, kAdmissionModeNames);
    else if (key == kw::kDefaultDeferrable) {
        ClassPolicy& unset = a.classes[static_cast<int>(WorkloadClass::Unset)];
        unset.deferrable = parse_yes_no(loc, k, value);
        unset.curtail = unset.deferrable ? CurtailLevel::Suspend : CurtailLevel::None;
    }
    else if (key == kw::kDefaultPowerPerGpuW)
        a.default_power_w_per_gpu = parse_watts(loc, k, value, "the built-in class defaults");
    else if (key == kw::kPowerRetrySec)
        a.power_retry_sec = parse_integer(loc, k, value, 1, 86400);
    else if (key == kw::kRampRateKWPerMin)
        a.ramp_rate_kw_per_min = parse_number(loc, k, value);
    else if (key == kw::kPaceIntervalSec)
        a.pace_interval_sec = parse_integer(loc, k, value, 1, 3600);
    else if (key == kw::kPaceGpusPerInterval)
        a.pace_gpus_per_interval = parse_integer(loc, k, value, 0, 1000000);
    else if (key == kw::kDeferExemptAccounts)
        a.defer_exempt_accounts = parse_name_list(loc, k, value, "account");
    else if (key == kw::kDeferExemptGroups)
        a.defer_exempt_groups = parse_name_list(loc, k, value, "Unix group");
    else if (key == kw::kPrivilegedAccounts)
        a.privileged_accounts = parse_name_list(loc, k, value, "account");
    else if (key == kw::kPrivilegedGroups)
        a.privileged_groups = parse_name_list(loc, k, value, "Unix group");
    else if (key == kw::kPrivilegedTags) {
        a.privileged_tags = parse_name_list(loc, k, value, "tag key");
        for (const std::string& t : a.privileged_tags)
            check_tag(t, "x", std::string(loc.str() + ": " + k + "=" + value));
    } else if (key == kw::kPrivilegedClasses) {
        a.privileged_classes = parse_name_list(loc, k, value, "workload class");
        for (const std::string& c : a.privileged_classes)
            if (!workload_class_from(c))
                throw ParseError(loc.str() + ": " + k + "=" + value + ": unknown class '" + c +
                                 "'; expected training, finetune, inference, batch, benchmark, dataproc or agentic");
    } else if (key == kw::kNoDeferAction)
        a.no_defer_action = parse_choice(loc, k, value, kNoDeferActionNames);
    else if (key == kw::kMaintenanceAction)
        a.maintenance_action = parse_choice(loc, k, value, kMaintenanceActionNames);
    else if (key == kw::kCurtailMode)
        a.curtail_mode = parse_choice(loc, k, value, kCurtailModeNames);
    else if (key == kw::kCapFloorW)
        a.cap_floor_w = parse_watts(loc, k, value, "no floor but the GPU's own minimum limit");
    else if (key == kw::kIdlePowerPerGpuW)
        a.idle_power_w_per_gpu = parse_watts(loc, k, value, "suspended GPUs draw nothing");
    else if (key == kw::kCurtailMarginPct)
        a.curtail_margin_pct = parse_integer(loc, k, value, 0, 50);
    else if (key == kw::kCheckpointGraceSec)
        a.checkpoint_grace_sec = parse_integer(loc, k, value, 0, 86400);
    else if (key == kw::kCurtailIntervalSec)
        a.curtail_interval_sec = parse_integer(loc, k, value, 1, 3600);
    else if (key == kw::kCurtailLeadSec)
        a.curtail_lead_sec = parse_integer(loc, k, value, 0, 3600);
    else if (key == kw::kCurtailStartWaitSec)
        a.curtail_start_wait_sec = parse_integer(loc, k, value, 0, 600);
    else if (key == kw::kNodeAgentURL)
        a.node_agent_url = parse_agent_url(loc, k, value);
    else if (key == kw::kNodeAgentTokenFile)
        a.node_agent_token_file = absolute_path(loc, k, value);
    else  // kw::kReleaseCheckSec
        a.release_check_sec = parse_integer(loc, k, value, 1, 3600);
}

// DefaultTopology= takes what --m2g-topology takes.
std::string check_topology(const SourceLoc& loc, const std::string& value)
{
    JobIntent probe;
    try {
        apply_option(probe, kw::kOptTopology, value, 0);
    } catch (const ParseError& e) {
        std::string msg = e.what();
        throw ParseError(loc.str() + ": DefaultTopology=" + value + ": " + msg.substr(msg.find(": ") + 2));
    }
    return value;
}

std::string single_name(const Line& line, const char* head)
{
    const std::string& v = line.pairs[0].value;
    if (v.empty())
        throw ParseError(line.loc.str() + ": " + head + "= needs a name");
    if (v.find_first_of("[],") != std::string::npos)
        throw ParseError(line.loc.str() + ": " + head + "=" + v +
                         ": one name per line (hostlist expressions are accepted only in NodeName, Nodes, "
                         "Domains and Switches)");
    return v;
}

// What a DomainName=, SwitchName=, PartitionName= or FaultDomain= line
// declares, as far as they all go: an item where the line stands, named by
// its head's value.
template <typename Spec>
Spec named_item(const Line& line, const LineKind& kind)
{
    Spec item;
    item.loc = line.loc;
    item.name = single_name(line, kind.head);
    return item;
}

}  // namespace

ConfigSpec parse_m2g_conf(std::string_view text, const std::string& file)
{
    ConfigSpec spec;
    std::set<std::string> globals_seen;
    std::map<std::string, SourceLoc> global_loc;  // admission keys, for checks across keys
    std::array<SourceLoc, 8> class_loc;            // ClassName= lines by WorkloadClass
    for (const Line& line : tokenize(text, file)) {
        const std::string head = lower(line.pairs[0].key);
        if (head == lower(kw::kNodeName)) {
            Fields f(line, kNodeLine);
            NodeSpec n;
            n.loc = line.loc;
            try {
                n.names = hostlist_expand(line.pairs[0].value);
            } catch (const ParseError& e) {
                throw ParseError(line.loc.str() + ": NodeName=: " + e.what());
            }
            n.gpus = f.integer(kw::kGpus, 0, 0, 1024);
            n.nics = f.integer(kw::kNics, 0, 0, 1024);
            n.nic_gbps = f.number(kw::kNicGbps);
            spec.nodes.push_back(std::move(n));
        } else if (head == lower(kw::kDomainName)) {
            Fields f(line, kDomainLine);
            DomainSpec d = named_item<DomainSpec>(line, kDomainLine);
            if (!f.has(kw::kNodes))
                throw ParseError(line.loc.str() + ": DomainName=" + d.name + " needs Nodes=<hostlist>");
            d.nodes = f.hostlist(kw::kNodes);
            d.size = f.integer(kw::kSize, 0, 1, 1000000);
            d.nvlink_gbps = f.number(kw::kNVLinkGbps);
            d.power_budget_kw = f.number(kw::kPowerBudgetKW);
            spec.domains.push_back(std::move(d));
        } else if (head == lower(kw::kSwitchName)) {
            Fields f(line, kSwitchLine);
            SwitchSpec s = named_item<SwitchSpec>(line, kSwitchLine);
            s.level = lower(f.str(kw::kLevel));
            if (!s.level.empty() && !enum_from(kSwitchLevelNames, s.level))
                throw ParseError(line.loc.str() + ": Level=" + f.str(kw::kLevel) +
                                 " is not valid; expected leaf, spine or core");
            s.link_gbps = f.number(kw::kLinkGbps);
            int kinds = f.has(kw::kSwitches) + f.has(kw::kDomains) + f.has(kw::kNodes);
            if (kinds != 1)
                throw ParseError(line.loc.str() + ": SwitchName=" + s.name +
                                 " needs exactly one of Switches=, Domains= or Nodes= (its children)");
            s.switches = f.hostlist(kw::kSwitches);
            s.domains = f.hostlist(kw::kDomains);
            s.nodes = f.hostlist(kw::kNodes);
            spec.switches.push_back(std::move(s));
        } else if (head == lower(kw::kPartitionName)) {
            Fields f(line, kPartitionLine);
            PartitionSpec p = named_item<PartitionSpec>(line, kPartitionLine);
            for (const PartitionSpec& prev : spec.partitions)
                if (prev.name == p.name)
                    throw ParseError(line.loc.str() + ": PartitionName=" + p.name + " is already defined at " +
                                     prev.loc.str());
            if (f.has(kw::kDefaultTopology))
                p.default_topology = check_topology(line.loc, f.str(kw::kDefaultTopology));
            p.prefer_wait_sec = f.integer(kw::kPreferWaitSec, -1, 0, 7 * 86400);
            p.spare_per_domain = f.integer(kw::kSparePerDomain, -1, 0, 1024);
            spec.partitions.push_back(std::move(p));
        } else if (head == lower(kw::kClassName)) {
            Fields f(line, kClassLine);
            const std::string name = single_name(line, kw::kClassName);
            int ci = -1;
            std::vector<const char*> names;
            for (WorkloadClass c : kNamedClasses) {
                names.push_back(to_string(c));
                if (lower(name) == to_string(c))
                    ci = static_cast<int>(c);
            }
            if (ci < 0)
                throw ParseError(line.loc.str() + ": ClassName=" + name + " is not a workload class; expected " +
                                 one_of(names) + " (jobs without a class: DefaultDeferrable=, DefaultPowerPerGpuW=)");
            if (!class_loc[ci].file.empty())
                throw ParseError(line.loc.str() + ": ClassName=" + name + " is already defined at " +
                                 class_loc[ci].str());
            class_loc[ci] = line.loc;
            ClassPolicy& cp = spec.admission.classes[ci];
            if (f.has(kw::kDeferrable))
                cp.deferrable = parse_yes_no(line.loc, kw::kDeferrable, f.str(kw::kDeferrable));
            if (f.has(kw::kPowerPerGpuW))
                cp.power_w_per_gpu = parse_watts(line.loc, kw::kPowerPerGpuW, f.str(kw::kPowerPerGpuW),
                                                 "DefaultPowerPerGpuW, else the built-in class default");
            if (f.has(kw::kCurtail)) {
                cp.curtail = parse_choice(line.loc, kw::kCurtail, f.str(kw::kCurtail), kCurtailLevelNames);
                cp.curtail_set = true;
            } else if (f.has(kw::kDeferrable)) {
                // The default follows the class's Deferrable= as m2g.conf sets it.
                cp.curtail = cp.deferrable ? CurtailLevel::Suspend : CurtailLevel::None;
            }
            if (f.has(kw::kCapFloorW))
                cp.cap_floor_w = parse_watts(line.loc, kw::kCapFloorW, f.str(kw::kCapFloorW), "the global CapFloorW");
            if (f.has(kw::kPricePerGpuHour))
                spec.price_per_gpu_hour[static_cast<size_t>(ci)] =
                    parse_price(line.loc, kw::kPricePerGpuHour, f.str(kw::kPricePerGpuHour), "one GPU-hour");
        } else if (head == lower(kw::kFaultDomain)) {
            Fields f(line, kFaultLine);
            FaultDomainSpec fd = named_item<FaultDomainSpec>(line, kFaultLine);
            fd.type = lower(f.str(kw::kType));
            if (fd.type.empty())
                throw ParseError(line.loc.str() + ": FaultDomain=" + fd.name + " needs Type=<" +
                                 join(kw::kFaultDomainTypes) + ">");
            if (std::none_of(kw::kFaultDomainTypes.begin(), kw::kFaultDomainTypes.end(),
                             [&](const char* t) { return fd.type == t; }))
                throw ParseError(line.loc.str() + ": Type=" + f.str(kw::kType) + " is not valid; expected one of " +
                                 join(kw::kFaultDomainTypes));
            if (!f.has(kw::kNodes) && !f.has(kw::kDomains))
                throw ParseError(line.loc.str() + ": FaultDomain=" + fd.name + " needs Nodes= and/or Domains=");
            fd.nodes = f.hostlist(kw::kNodes);
            fd.domains = f.hostlist(kw::kDomains);
            fd.power_budget_kw = f.number(kw::kPowerBudgetKW);
            spec.fault_domains.push_back(std::move(fd));
        } else {
            // Global keys stand alone on their line.
            const char* canon = nullptr;
            for (const char* k : kGlobalKeys)
                if (lower(k) == head)
                    canon = k;
            if (!canon)
                throw ParseError(line.loc.str() + ": unknown key '" + line.pairs[0].key +
                                 "'; a line starts with one of " + join(kLineHeads) + ", or is one of " +
                                 join(kGlobalKeys));
            if (line.pairs.size() != 1)
                throw ParseError(line.loc.str() + ": " + canon + " stands alone on its line");
            if (line.pairs[0].value.empty())
                throw ParseError(line.loc.str() + ": " + canon + "= needs a value");
            if (!globals_seen.insert(canon).second)
                throw ParseError(line.loc.str() + ": " + canon + " is set twice");
            const std::string& value = line.pairs[0].value;
            const std::string key = canon;
            if (key == kw::kClusterName) {
                spec.cluster_name = value;
            } else if (key == kw::kSitePowerBudgetKW) {
                spec.site_power_budget_kw = parse_number(line.loc, canon, value);
            } else if (key == kw::kDefaultTopology) {
                spec.policy.default_topology = check_topology(line.loc, value);
            } else if (key == kw::kPreferWaitSec) {
                spec.policy.prefer_wait_sec = parse_integer(line.loc, canon, value, 0, 7 * 86400);
            } else if (key == kw::kPreemptCheckpointSec) {
                spec.policy.preempt_checkpoint_sec = parse_integer(line.loc, canon, value, 0, 30 * 86400);
            } else if (key == kw::kPreemptRestartSec) {
                spec.policy.preempt_restart_sec = parse_integer(line.loc, canon, value, 0, 86400);
            } else if (key == kw::kSparePerDomain) {
                spec.policy.spare_per_domain = parse_integer(line.loc, canon, value, 0, 1024);
            } else if (key == kw::kHealthFile) {
                spec.policy.health_file = absolute_path(line.loc, canon, value);
            } else if (key == kw::kEnergyPricePerKWh) {
                spec.energy_price_per_kwh = parse_price(line.loc, canon, value);
            } else if (key == kw::kDefaultPricePerGpuHour) {
                spec.default_price_per_gpu_hour = parse_price(line.loc, canon, value, "one GPU-hour");
            } else if (key == kw::kEnergyCurrency) {
                spec.energy_currency = parse_currency(line.loc, canon, value);
            } else {
                set_admission_key(spec.admission, line.loc, key, value);
                global_loc[key] = line.loc;
            }
        }
    }
    // Keys that only make sense together.
    const AdmissionPolicy& a = spec.admission;
    if (a.signals_poll_sec >= a.signals_ttl_sec) {
        auto it = global_loc.find(kw::kSignalsTTLSec);
        if (it == global_loc.end())
            it = global_loc.find(kw::kSignalsPollSec);
        throw ParseError(it->second.str() + ": SignalsPollSec=" + std::to_string(a.signals_poll_sec) +
                         " must be less than SignalsTTLSec=" + std::to_string(a.signals_ttl_sec) +
                         " (defaults 5 and 300), or the feed goes stale between two reads");
    }
    return spec;
}

ConfigSpec read_m2g_conf(const std::string& path)
{
    return parse_m2g_conf(read_text_file(path), path);
}


ConfigSpec parse_slurm_topology_conf(std::string_view text, const std::string& file,
                                     const SlurmImportOptions& opts)
{
    static const LineKind kTopoLine{"SwitchName", {"Switches", "Nodes", "LinkSpeed"}};
    std::vector<SlurmSwitchDecl> decls;
    for (const Line& line : tokenize(text, file)) {
        if (lower(line.pairs[0].key) != "switchname")
            throw ParseError(line.loc.str() + ": unknown key '" + line.pairs[0].key +
                             "'; a topology/tree topology.conf line starts with SwitchName=");
        Fields f(line, kTopoLine);
        SlurmSwitchDecl d;
        d.loc = line.loc;
        d.name = single_name(line, "SwitchName");
        if (f.has("Switches") == f.has("Nodes"))
            throw ParseError(line.loc.str() + ": SwitchName=" + d.name + " needs exactly one of Switches= or Nodes=");
        d.link_gbps = f.has("LinkSpeed") ? f.integer("LinkSpeed", 0, 0, 2000000000) : 0;
        d.nodes = f.hostlist("Nodes");
        d.switches = f.hostlist("Switches");
        decls.push_back(std::move(d));
    }
    return spec_from_slurm_switches(decls, file, opts);
}

ConfigSpec spec_from_slurm_switches(const std::vector<SlurmSwitchDecl>& decls, const std::string& file,
                                    const SlurmImportOptions& opts)
{
    ConfigSpec spec;
    std::vector<std::string> node_order;
    std::set<std::string> node_seen;
    for (const SlurmSwitchDecl& decl : decls) {
        for (const auto& n : decl.nodes)
            if (node_seen.insert(n).second)
                node_order.push_back(n);
        if (!decl.nodes.empty() && (opts.leaf_as_domain || decl.is_block)) {
            DomainSpec d;
            d.loc = decl.loc;
            d.name = decl.name;
            d.nodes = decl.nodes;
            spec.domains.push_back(std::move(d));
            continue;
        }
        SwitchSpec s;
        s.loc = decl.loc;
        s.name = decl.name;
        s.link_gbps = decl.link_gbps;
        s.switches = decl.switches;
        s.nodes = decl.nodes;
        spec.switches.push_back(std::move(s));
    }
    if (!spec.domains.empty()) {
        // Children that name a domain are domains, not switches.
        std::set<std::string> domain_names;
        for (const auto& d : spec.domains)
            domain_names.insert(d.name);
        for (auto& s : spec.switches) {
            std::vector<std::string> sw;
            for (auto& c : s.switches)
                (domain_names.count(c) ? s.domains : sw).push_back(c);
            if (!sw.empty() && !s.domains.empty())
                throw ParseError(s.loc.str() + ": switch " + s.name +
                                 " mixes NVLink domains and switches as children; m2g.conf needs one kind per "
                                 "switch (import without --leaf-as-domain)");
            s.switches = std::move(sw);
        }
    }
    if (!node_order.empty()) {
        // Topology files list switches in any order; declare nodes by name.
        std::sort(node_order.begin(), node_order.end(), natural_less);
        NodeSpec n;
        n.loc = {file, 0};
        n.names = std::move(node_order);
        n.gpus = opts.gpus_per_node;
        spec.nodes.push_back(std::move(n));
    }
    return spec;
}

namespace {

// Index names declared by `items`, rejecting duplicates.
template <typename Item>
std::map<std::string, int, std::less<>> index_names(const std::vector<Item>& items, const char* what)
{
    std::map<std::string, int, std::less<>> idx;
    for (size_t i = 0; i < items.size(); ++i) {
        auto [it, inserted] = idx.emplace(items[i].name, static_cast<int>(i));
        if (!inserted)
            throw ValidationError(items[i].loc.str() + ": " + what + "=" + items[i].name + " is already defined at " +
                                  items[it->second].loc.str());
    }
    return idx;
}

void add_warning(std::vector<std::string>* warnings, std::string w)
{
    if (warnings)
        warnings->push_back(std::move(w));
}

// The settings of the whole cluster, and each partition's placement policy.
// DefaultTopology= as text and typed, so placement never parses it again.
void set_default_topology(PlacementPolicy& pp, const std::string& text)
{
    JobIntent probe;
    apply_option(probe, kw::kOptTopology, text, 0);  // checked when the line was read
    pp.default_topology = text;
    pp.default_locality = probe.locality;
    pp.default_level = probe.level;
}

void copy_settings(Model& m, const ConfigSpec& spec)
{
    m.cluster_name = spec.cluster_name;
    m.site_power_budget_kw = spec.site_power_budget_kw;
    m.energy_price_per_kwh = spec.energy_price_per_kwh;
    m.energy_currency = spec.energy_currency;
    for (size_t c = 0; c < m.price_per_gpu_hour.size(); ++c)
        m.price_per_gpu_hour[c] =
            spec.price_per_gpu_hour[c] >= 0 ? spec.price_per_gpu_hour[c] : spec.default_price_per_gpu_hour;
    m.policy = spec.policy;
    set_default_topology(m.policy, m.policy.default_topology);
    m.admission = spec.admission;
    for (const PartitionSpec& p : spec.partitions) {
        PlacementPolicy pp = m.policy;  // inherit what the line does not set
        if (!p.default_topology.empty())
            set_default_topology(pp, p.default_topology);
        if (p.prefer_wait_sec >= 0)
            pp.prefer_wait_sec = p.prefer_wait_sec;
        if (p.spare_per_domain >= 0)
            pp.spare_per_domain = p.spare_per_domain;
        m.partition_policy[p.name] = pp;
    }
}

void add_nodes(Model& m, const ConfigSpec& spec)
{
    std::vector<SourceLoc> node_loc;
    for (const NodeSpec& ns : spec.nodes) {
        for (const std::string& name : ns.names) {
            auto [it, inserted] = m.node_index.emplace(name, static_cast<int>(m.nodes.size()));
            if (!inserted)
                throw ValidationError(ns.loc.str() + ": node " + name + " is already declared at " +
                                      node_loc[it->second].str() + "; declare each node once");
            Node n;
            n.name = name;
            n.gpus = ns.gpus;
            n.nics = ns.nics;
            n.nic_gbps = ns.nic_gbps;
            m.nodes.push_back(std::move(n));
            node_loc.push_back(ns.loc);
        }
    }
    if (m.nodes.empty())
        throw ValidationError("no nodes declared: add NodeName=<hostlist> lines");
}

// The node `owner` (a line at `loc`) lists as `name`.
int node_ref(const Model& m, const SourceLoc& loc, const std::string& owner, const std::string& name)
{
    int i = m.find_node(name);
    if (i == kNone)
        throw ValidationError(loc.str() + ": " + owner + " lists node " + name +
                              ", which no NodeName line declares");
    return i;
}

void add_domains(Model& m, const ConfigSpec& spec)
{
    m.domain_index = index_names(spec.domains, kw::kDomainName);
    for (const DomainSpec& ds : spec.domains) {
        const int di = static_cast<int>(m.domains.size());
        Domain d;
        d.name = ds.name;
        d.nvlink_gbps = ds.nvlink_gbps;
        d.power_budget_kw = ds.power_budget_kw;
        const std::string owner = std::string(kw::kDomainName) + "=" + ds.name;
        for (const std::string& name : ds.nodes) {
            int ni = node_ref(m, ds.loc, owner, name);
            Node& n = m.nodes[ni];
            if (n.domain == di)
                throw ValidationError(ds.loc.str() + ": " + owner + " lists node " + name + " twice");
            if (n.domain != kNone)
                throw ValidationError(ds.loc.str() + ": node " + name + " is in " + owner + " and already in " +
                                      kw::kDomainName + "=" + m.domains[n.domain].name + " (" +
                                      spec.domains[n.domain].loc.str() + "); a node belongs to one NVLink domain");
            n.domain = di;
            d.nodes.push_back(ni);
            d.gpus += n.gpus;
        }
        d.size = ds.size ? ds.size : static_cast<int>(d.nodes.size());
        if (static_cast<int>(d.nodes.size()) > d.size)
            throw ValidationError(ds.loc.str() + ": " + owner + " has " + std::to_string(d.nodes.size()) +
                                  " nodes but Size=" + std::to_string(d.size) +
                                  "; raise Size or move nodes to another domain");
        m.domains.push_back(std::move(d));
    }
}

// What SwitchName= line `si` holds: switches (their parent), domains and
// nodes (their leaf).
void attach_to_switch(Model& m, const ConfigSpec& spec, size_t si)
{
    const SwitchSpec& ss = spec.switches[si];
    Switch& s = m.switches[si];
    s.name = ss.name;
    s.link_gbps = ss.link_gbps;
    const std::string owner = std::string(kw::kSwitchName) + "=" + ss.name;
    for (const std::string& c : ss.switches) {
        int ci = m.find_switch(c);
        if (ci == kNone)
            throw ValidationError(ss.loc.str() + ": " + owner + " lists switch " + c +
                                  ", which no SwitchName line defines");
        if (ci == static_cast<int>(si))
            throw ValidationError(ss.loc.str() + ": " + owner + " lists itself as a child");
        Switch& child = m.switches[ci];
        if (child.parent != kNone)
            throw ValidationError(ss.loc.str() + ": switch " + c + " is a child of " + owner + " and of SwitchName=" +
                                  m.switches[child.parent].name + " (" + spec.switches[child.parent].loc.str() +
                                  "); the fabric must be a tree");
        child.parent = static_cast<int>(si);
        s.switches.push_back(ci);
    }
    for (const std::string& c : ss.domains) {
        int ci = m.find_domain(c);
        if (ci == kNone)
            throw ValidationError(ss.loc.str() + ": " + owner + " lists domain " + c +
                                  ", which no DomainName line defines");
        Domain& d = m.domains[ci];
        if (d.parent != kNone)
            throw ValidationError(ss.loc.str() + ": domain " + c + " is attached to " + owner +
                                  " and to SwitchName=" + m.switches[d.parent].name + " (" +
                                  spec.switches[d.parent].loc.str() + "); a domain has one leaf switch");
        d.parent = static_cast<int>(si);
        s.domains.push_back(ci);
    }
    for (const std::string& c : ss.nodes) {
        int ni = node_ref(m, ss.loc, owner, c);
        Node& n = m.nodes[ni];
        if (n.domain != kNone)
            throw ValidationError(ss.loc.str() + ": node " + c + " is in DomainName=" + m.domains[n.domain].name +
                                  "; attach the domain with Domains=, not its nodes with Nodes=");
        if (n.leaf != kNone)
            throw ValidationError(ss.loc.str() + ": node " + c + " is attached to " + owner +
                                  " and to SwitchName=" + m.switches[n.leaf].name + " (" +
                                  spec.switches[n.leaf].loc.str() + "); a node has one leaf switch");
        n.leaf = static_cast<int>(si);
        s.nodes.push_back(ni);
    }
}

// Switches: names, children, parents.
void add_switches(Model& m, const ConfigSpec& spec)
{
    m.switch_index = index_names(spec.switches, kw::kSwitchName);
    for (const SwitchSpec& ss : spec.switches) {
        int di = m.find_domain(ss.name);
        if (di != kNone)
            throw ValidationError(ss.loc.str() + ": SwitchName=" + ss.name + " has the name of DomainName=" +
                                  ss.name + " (" + spec.domains[di].loc.str() +
                                  "); Slurm's topology needs one namespace for both");
    }
    m.switches.resize(spec.switches.size());
    for (size_t si = 0; si < spec.switches.size(); ++si)
        attach_to_switch(m, spec, si);
}

// Cycles: every switch must reach a root by following parents.
void reject_cycles(const Model& m, const ConfigSpec& spec)
{
    for (size_t si = 0; si < m.switches.size(); ++si) {
        std::vector<int> path{static_cast<int>(si)};
        std::set<int> seen{static_cast<int>(si)};
        for (int p = m.switches[si].parent; p != kNone; p = m.switches[p].parent) {
            path.push_back(p);
            if (!seen.insert(p).second) {
                std::string chain;
                auto start = std::find(path.begin(), path.end(), p);
                for (auto it = start; it != path.end(); ++it)
                    chain += (chain.empty() ? "" : " -> ") + m.switches[*it].name;
                // Parents point up, so the chain reads child -> parent.
                throw ValidationError(spec.switches[p].loc.str() + ": switch cycle: " + chain +
                                      "; the fabric must be a tree");
            }
        }
    }
}

// Heights and levels, bottom up (memoised recursion, depth bounded by
// the switch count since cycles are excluded).
void set_levels(Model& m, const ConfigSpec& spec)
{
    std::vector<int> height(m.switches.size(), -1);
    std::function<int(int)> h = [&](int si) {
        if (height[si] >= 0)
            return height[si];
        int v = 0;
        for (int c : m.switches[si].switches)
            v = std::max(v, h(c) + 1);
        return height[si] = v;
    };
    for (size_t si = 0; si < m.switches.size(); ++si) {
        Switch& s = m.switches[si];
        s.height = h(static_cast<int>(si));
        const std::string& lvl = spec.switches[si].level;
        const std::optional<SwitchLevel> given = enum_from(kSwitchLevelNames, lvl);
        bool has_switch_children = !s.switches.empty();
        if (given == SwitchLevel::Leaf && has_switch_children)
            throw ValidationError(spec.switches[si].loc.str() + ": SwitchName=" + s.name +
                                  " is Level=leaf but lists Switches=; a leaf holds Domains= or Nodes=");
        if (given && *given != SwitchLevel::Leaf && !has_switch_children)
            throw ValidationError(spec.switches[si].loc.str() + ": SwitchName=" + s.name + " is Level=" + lvl +
                                  " but holds no switches; use Level=leaf for a switch with Domains= or Nodes=");
        if (given)
            s.level = *given;
        else
            s.level = s.height == 0 ? SwitchLevel::Leaf : s.height == 1 ? SwitchLevel::Spine : SwitchLevel::Core;
    }
}

// Ranks: depth-first from the roots in declaration order, then
// domains no switch holds, then nodes nothing holds. Returns how many
// nodes the switches reach.
int rank_nodes(Model& m)
{
    int rank = 0;
    std::vector<bool> ranked(m.nodes.size(), false);
    auto rank_node = [&](int ni) {
        if (!ranked[ni]) {
            ranked[ni] = true;
            m.nodes[ni].rank = rank++;
        }
    };
    auto rank_domain = [&](int di) {
        for (int ni : m.domains[di].nodes)
            rank_node(ni);
    };
    std::function<void(int)> rank_switch = [&](int si) {
        const Switch& s = m.switches[si];
        for (int c : s.switches)
            rank_switch(c);
        for (int d : s.domains)
            rank_domain(d);
        for (int n : s.nodes)
            rank_node(n);
    };
    for (int r : m.roots())
        rank_switch(r);
    int unreached_by_switch = rank;
    for (int d : m.unattached_domains())
        rank_domain(d);
    for (size_t ni = 0; ni < m.nodes.size(); ++ni)
        rank_node(static_cast<int>(ni));
    return unreached_by_switch;
}

// Nodes no switch reaches, and roots jobs cannot span.
void warn_of_gaps(const Model& m, int unreached_by_switch, std::vector<std::string>* warnings)
{
    int unreached = static_cast<int>(m.nodes.size()) - unreached_by_switch;
    if (!m.switches.empty() && unreached > 0) {
        std::vector<std::string> names;
        for (const Node& n : m.nodes)
            if (n.rank >= unreached_by_switch)
                names.push_back(n.name);
        add_warning(warnings, std::to_string(unreached) + " node(s) are not reached by any switch: " +
                                  hostlist_compress(names));
    }
    if (m.roots().size() > 1) {
        std::vector<std::string> names;
        for (int r : m.roots())
            names.push_back(m.switches[r].name);
        add_warning(warnings, "the fabric has " + std::to_string(names.size()) + " roots (" +
                                  hostlist_compress(names) + "); jobs cannot span them");
    }
}

// Per-switch node lists and GPU counts, in rank order.
void collect_switch_nodes(Model& m)
{
    std::function<void(int)> collect = [&](int si) {
        Switch& s = m.switches[si];
        if (!s.all_nodes.empty() || (s.switches.empty() && s.domains.empty() && s.nodes.empty()))
            return;
        for (int c : s.switches) {
            collect(c);
            s.all_nodes.insert(s.all_nodes.end(), m.switches[c].all_nodes.begin(), m.switches[c].all_nodes.end());
        }
        for (int d : s.domains)
            s.all_nodes.insert(s.all_nodes.end(), m.domains[d].nodes.begin(), m.domains[d].nodes.end());
        s.all_nodes.insert(s.all_nodes.end(), s.nodes.begin(), s.nodes.end());
        std::sort(s.all_nodes.begin(), s.all_nodes.end(),
                  [&](int a, int b) { return m.nodes[a].rank < m.nodes[b].rank; });
        for (int ni : s.all_nodes)
            s.gpus += m.nodes[ni].gpus;
    };
    for (size_t si = 0; si < m.switches.size(); ++si)
        collect(static_cast<int>(si));
}

void add_fault_domains(Model& m, const ConfigSpec& spec)
{
    index_names(spec.fault_domains, kw::kFaultDomain);
    for (const FaultDomainSpec& fs : spec.fault_domains) {
        FaultDomain f;
        f.name = fs.name;
        f.type = fs.type;
        f.power_budget_kw = fs.power_budget_kw;
        const std::string owner = std::string(kw::kFaultDomain) + "=" + fs.name;
        std::set<int> members;
        for (const std::string& d : fs.domains) {
            int di = m.find_domain(d);
            if (di == kNone)
                throw ValidationError(fs.loc.str() + ": " + owner + " lists domain " + d +
                                      ", which no DomainName line defines");
            members.insert(m.domains[di].nodes.begin(), m.domains[di].nodes.end());
        }
        for (const std::string& n : fs.nodes)
            members.insert(node_ref(m, fs.loc, owner, n));
        const int fi = static_cast<int>(m.fault_domains.size());
        for (int ni : members) {
            f.nodes.push_back(ni);
            m.nodes[ni].fault_domains.push_back(fi);
        }
        m.fault_domains.push_back(std::move(f));
    }
}

}  // namespace

Model build_model(const ConfigSpec& spec, std::vector<std::string>* warnings)
{
    Model m;
    copy_settings(m, spec);
    add_nodes(m, spec);
    add_domains(m, spec);
    add_switches(m, spec);
    reject_cycles(m, spec);
    set_levels(m, spec);
    warn_of_gaps(m, rank_nodes(m), warnings);
    collect_switch_nodes(m);
    add_fault_domains(m, spec);
    return m;
}

Model load_model(const std::string& path, std::vector<std::string>* warnings)
{
    return build_model(read_m2g_conf(path), warnings);
}

}  // namespace m2g
