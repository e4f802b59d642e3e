// m2g core: --m2g-* options and their spank_job_env encoding.
#include "core/job/intent.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "core/base/enum_names.hpp"
#include "core/base/error.hpp"
#include "core/base/keys.hpp"
#include "core/base/text.hpp"

namespace m2g {

namespace {

constexpr auto kLocalityNames = enum_names<Locality::Any>({"", "strict", "prefer", "any"});
constexpr auto kLevelNames = enum_names<LocalityLevel::Spine>({"nvlink", "leaf", "spine"});
constexpr auto kClassNames = enum_names<WorkloadClass::Agentic>(
    {"", "training", "finetune", "inference", "batch", "benchmark", "dataproc", "agentic"});

// "a, b or c": the words `t` accepts.
template <typename E, size_t N>
std::string accepted(const EnumNames<E, N>& t)
{
    std::vector<const char*> words;
    for (const char* n : t.names)
        if (*n)
            words.push_back(n);
    std::string out;
    for (size_t i = 0; i < words.size(); ++i)
        out += std::string(i ? (i + 1 == words.size() ? " or " : ", ") : "") + words[i];
    return out;
}

constexpr size_t kMaxTags = 32;
constexpr size_t kMaxKey = 64;
constexpr size_t kMaxValue = 128;
constexpr int kMaxSegment = 4096;

bool key_char(char c)
{
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_' ||
           c == '.' || c == '-';
}

bool value_char(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_.-:/@+").find(c) != std::string_view::npos;
}

std::string opt(std::string_view name, std::string_view value)
{
    return "--" + std::string(name) + "=" + std::string(value);
}

bool parse_int(std::string_view s, long long min, long long max, long long& out)
{
    if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        return false;
    out = std::stoll(std::string(s));
    return out >= min && out <= max;
}

void parse_locality(std::string_view v, Locality& loc, LocalityLevel& level, const std::string& what)
{
    std::string_view intent = v, lvl;
    if (auto colon = v.find(':'); colon != std::string_view::npos) {
        intent = v.substr(0, colon);
        lvl = v.substr(colon + 1);
    }
    const std::optional<Locality> i = enum_from(kLocalityNames, intent);
    const std::optional<LocalityLevel> l = lvl.empty() ? LocalityLevel::NVLink : enum_from(kLevelNames, lvl);
    if (!i || !l || (v.find(':') != std::string_view::npos && lvl.empty()))
        throw ParseError(what + ": expected " + accepted(kLocalityNames) + ", optionally followed by :" +
                         accepted(kLevelNames) + " (e.g. strict:nvlink)");
    loc = *i;
    level = *l;
}

}  // namespace

const char* to_string(Locality v) { return name_of(kLocalityNames, v, ""); }
const char* to_string(LocalityLevel v) { return name_of(kLevelNames, v, ""); }
const char* to_string(WorkloadClass v) { return name_of(kClassNames, v, ""); }

std::optional<WorkloadClass> workload_class_from(std::string_view name) { return enum_from(kClassNames, name); }

std::string locality_string(const JobIntent& i)
{
    if (i.locality == Locality::Unset)
        return "";
    if (i.locality == Locality::Any)  // no level: nothing is required anywhere
        return "any";
    return std::string(to_string(i.locality)) + ":" + to_string(i.level);
}

std::string JobIntent::tag(std::string_view key) const
{
    for (const Tag& t : tags)
        if (t.first == key)
            return t.second;
    return "";
}

bool JobIntent::operator==(const JobIntent& o) const
{
    return locality == o.locality && level == o.level && segment == o.segment &&
           workload_class == o.workload_class && recipe == o.recipe && defer == o.defer &&
           defer_until == o.defer_until && tags == o.tags && explain == o.explain && model == o.model &&
           gpus == o.gpus && power_w_per_gpu == o.power_w_per_gpu && runtime_s == o.runtime_s &&
           gpu_multiple == o.gpu_multiple;
}

const std::vector<OptionSpec>& option_specs()
{
    static const std::vector<OptionSpec> specs = {
        {kw::kOptTopology, "strict|prefer|any[:nvlink|leaf|spine]", kw::kEnvTopology,
         "[m2g] locality the job needs: strict waits for it, prefer falls back after a wait, any leaves it to Slurm"},
        {kw::kOptSegment, "N", kw::kEnvSegment, "[m2g] the job is groups of N nodes, each group inside one NVLink domain"},
        {kw::kOptClass, "training|finetune|inference|batch|benchmark|dataproc|agentic", kw::kEnvClass,
         "[m2g] workload class, for admission and telemetry"},
        {kw::kOptRecipe, "NAME", kw::kEnvRecipe,
         "[m2g] a named recipe from the site catalog (m2g recipe list); explicit options win"},
        {kw::kOptDefer, "ok|no|until=TIME", kw::kEnvDefer,
         "[m2g] consent to power/grid deferral, with an optional deadline (YYYY-MM-DDTHH:MM or now+2h)"},
        {kw::kOptTag, "KEY=VALUE", kw::kEnvTags, "[m2g] tag the job (tenant, project, model_name, ...); repeatable"},
        {kw::kOptExplain, nullptr, kw::kEnvExplain, "[m2g] print m2g's decision about this job when it is submitted"},
    };
    return specs;
}

void check_tag(std::string_view key, std::string_view value, const std::string& what)
{
    if (key.empty() || key.size() > kMaxKey || !std::all_of(key.begin(), key.end(), key_char))
        throw ParseError(what + ": tag key '" + std::string(key) + "' is not valid; use 1-" + std::to_string(kMaxKey) +
                         " characters of a-z, 0-9, '_', '.', '-'");
    if (value.empty() || value.size() > kMaxValue || !std::all_of(value.begin(), value.end(), value_char))
        throw ParseError(what + ": tag value '" + std::string(value) + "' is not valid; use 1-" +
                         std::to_string(kMaxValue) + " characters of A-Z, a-z, 0-9, '_', '.', '-', ':', '/', '@', '+'");
}

int64_t parse_until(std::string_view text, int64_t now)
{
    const std::string s(text);
    long long epoch = 0;
    if (parse_int(s, 1, 1LL << 40, epoch))  // the encoded form: epoch seconds
        return epoch;
    if (s.rfind("now+", 0) == 0) {
        std::string_view rest = std::string_view(s).substr(4);
        int64_t unit = 1;
        if (!rest.empty() && std::string_view("smhd").find(rest.back()) != std::string_view::npos) {
            const char u = rest.back();
            unit = u == 's' ? 1 : u == 'm' ? 60 : u == 'h' ? 3600 : 86400;
            rest.remove_suffix(1);
        }
        long long n = 0;
        if (!parse_int(rest, 1, 366LL * 86400, n) || n * unit > 366LL * 86400)
            throw ParseError("'" + s + "' is not a time; expected now+N with N in s, m, h or d (at most a year)");
        return now + n * unit;
    }
    std::tm tm{};
    int sec = 0;
    int y, mo, d, h, mi;
    char tail = 0;
    int got = std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &sec, &tail);
    if (got != 6)
        got = std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d%c", &y, &mo, &d, &h, &mi, &tail) == 5 ? 6 : 0;
    if (got != 6 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59 || h < 0 || mi < 0 ||
        sec < 0)
        throw ParseError("'" + s + "' is not a time; expected YYYY-MM-DDTHH:MM[:SS] or now+N[s|m|h|d]");
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    tm.tm_isdst = -1;
    const time_t t = std::mktime(&tm);
    if (t == static_cast<time_t>(-1) || tm.tm_mday != d)
        throw ParseError("'" + s + "' is not a valid date");
    return static_cast<int64_t>(t);
}

void apply_option(JobIntent& intent, std::string_view name, std::string_view value, int64_t now)
{
    const std::string what = opt(name, value);
    JobIntent next = intent;
    if (name == kw::kOptTopology) {
        parse_locality(value, next.locality, next.level, what);
    } else if (name == kw::kOptSegment) {
        long long n = 0;
        if (!parse_int(value, 1, kMaxSegment, n))
            throw ParseError(what + ": expected a whole number of nodes from 1 to " + std::to_string(kMaxSegment));
        next.segment = static_cast<int>(n);
    } else if (name == kw::kOptClass) {
        const std::optional<WorkloadClass> c = workload_class_from(value);
        if (!c)
            throw ParseError(what + ": unknown class; expected " + accepted(kClassNames));
        next.workload_class = *c;
    } else if (name == kw::kOptRecipe) {
        if (value.empty() || value.size() > kMaxKey || !std::all_of(value.begin(), value.end(), key_char))
            throw ParseError(what + ": a recipe name is 1-64 characters of a-z, 0-9, '_', '.', '-' (see m2g recipe list)");
        next.recipe = std::string(value);
    } else if (name == kw::kOptDefer) {
        if (value == "ok") {
            next.defer = DeferConsent::Ok;
            next.defer_until = 0;
        } else if (value == "no") {
            next.defer = DeferConsent::No;
            next.defer_until = 0;
        } else if (value.rfind("until=", 0) == 0) {
            try {
                next.defer_until = parse_until(value.substr(6), now);
            } catch (const ParseError& e) {
                throw ParseError(what + ": " + e.what());
            }
            if (next.defer_until <= now)
                throw ParseError(what + ": the deadline is in the past");
            next.defer = DeferConsent::Until;
        } else {
            throw ParseError(what + ": expected ok, no or until=TIME (YYYY-MM-DDTHH:MM[:SS] or now+N[s|m|h|d])");
        }
    } else if (name == kw::kOptTag) {
        const auto eq = value.find('=');
        if (eq == std::string_view::npos)
            throw ParseError(what + ": expected KEY=VALUE, e.g. tenant=acme");
        const std::string key(value.substr(0, eq)), val(value.substr(eq + 1));
        check_tag(key, val, what);
        auto it = std::find_if(next.tags.begin(), next.tags.end(), [&](const Tag& t) { return t.first == key; });
        if (it != next.tags.end())
            it->second = val;  // the last one given wins, as with other options
        else if (next.tags.size() >= kMaxTags)
            throw ParseError(what + ": at most " + std::to_string(kMaxTags) + " tags per job");
        else
            next.tags.emplace_back(key, val);
    } else if (name == kw::kOptExplain) {
        // A flag: sbatch forwards it to the job's steps with a placeholder
        // value, so whatever comes with it is ignored.
        next.explain = true;
    } else {
        std::string known;
        for (const OptionSpec& s : option_specs())
            known += std::string(known.empty() ? "" : ", ") + "--" + s.name;
        throw ParseError("--" + std::string(name) + ": unknown m2g option; accepted: " + known);
    }
    intent = std::move(next);
}

void merge_under(JobIntent& e, const JobIntent& r)
{
    if (e.locality == Locality::Unset) {
        e.locality = r.locality;
        e.level = r.level;
    }
    if (!e.segment)
        e.segment = r.segment;
    if (e.workload_class == WorkloadClass::Unset)
        e.workload_class = r.workload_class;
    if (e.defer == DeferConsent::Unset) {
        e.defer = r.defer;
        e.defer_until = r.defer_until;
    }
    for (const Tag& t : r.tags)
        if (e.tag(t.first).empty())
            e.tags.push_back(t);
    if (e.model.empty())
        e.model = r.model;
    if (!e.gpus)
        e.gpus = r.gpus;
    if (e.power_w_per_gpu == 0)
        e.power_w_per_gpu = r.power_w_per_gpu;
    if (!e.runtime_s)
        e.runtime_s = r.runtime_s;
    if (!e.gpu_multiple)
        e.gpu_multiple = r.gpu_multiple;
}


std::vector<std::pair<std::string, std::string>> encode_intent(const JobIntent& i)
{
    std::vector<std::pair<std::string, std::string>> out;
    if (i.locality != Locality::Unset)
        out.emplace_back(kw::kEnvTopology, locality_string(i));
    if (i.segment)
        out.emplace_back(kw::kEnvSegment, std::to_string(i.segment));
    if (i.workload_class != WorkloadClass::Unset)
        out.emplace_back(kw::kEnvClass, to_string(i.workload_class));
    if (!i.recipe.empty())
        out.emplace_back(kw::kEnvRecipe, i.recipe);
    if (i.defer == DeferConsent::Ok)
        out.emplace_back(kw::kEnvDefer, "ok");
    else if (i.defer == DeferConsent::No)
        out.emplace_back(kw::kEnvDefer, "no");
    else if (i.defer == DeferConsent::Until)
        out.emplace_back(kw::kEnvDefer, "until=" + std::to_string(i.defer_until));
    if (!i.tags.empty()) {
        std::string tags;
        for (const Tag& t : i.tags)
            tags += (tags.empty() ? "" : ",") + t.first + "=" + t.second;
        out.emplace_back(kw::kEnvTags, tags);
    }
    if (i.explain)
        out.emplace_back(kw::kEnvExplain, "1");
    if (!i.model.empty())
        out.emplace_back(kw::kEnvModel, i.model);
    if (i.gpus)
        out.emplace_back(kw::kEnvGpus, std::to_string(i.gpus));
    if (i.power_w_per_gpu > 0)
        out.emplace_back(kw::kEnvPowerPerGpu, general(i.power_w_per_gpu));
    if (i.runtime_s)
        out.emplace_back(kw::kEnvRuntime, std::to_string(i.runtime_s));
    if (i.gpu_multiple)
        out.emplace_back(kw::kEnvGpuMultiple, std::to_string(i.gpu_multiple));
    return out;
}

JobIntent decode_intent(const std::vector<std::string>& env)
{
    JobIntent i;
    for (const std::string& entry : env) {
        // Prolog and epilog see the entries as SPANK_M2G_*, a job's steps
        // as SLURM_SPANK_M2G_*.
        std::string_view e(entry);
        if (e.rfind("SLURM_SPANK_M2G_", 0) == 0)
            e.remove_prefix(12);
        else if (e.rfind("SPANK_M2G_", 0) == 0)
            e.remove_prefix(6);
        const auto eq = e.find('=');
        if (eq == std::string_view::npos || e.rfind("M2G_", 0) != 0)
            continue;
        const std::string key(e.substr(0, eq)), v(e.substr(eq + 1));
        const std::string what = "spank_job_env " + key + "=" + v;
        long long n = 0;
        if (key == kw::kEnvTopology) {
            parse_locality(v, i.locality, i.level, what);
        } else if (key == kw::kEnvSegment) {
            if (!parse_int(v, 1, kMaxSegment, n))
                throw ParseError(what + ": not a segment size");
            i.segment = static_cast<int>(n);
        } else if (key == kw::kEnvClass) {
            const std::optional<WorkloadClass> c = workload_class_from(v);
            if (!c)
                throw ParseError(what + ": unknown class");
            i.workload_class = *c;
        } else if (key == kw::kEnvRecipe) {
            i.recipe = v;
        } else if (key == kw::kEnvDefer) {
            if (v == "ok")
                i.defer = DeferConsent::Ok;
            else if (v == "no")
                i.defer = DeferConsent::No;
            else if (v.rfind("until=", 0) == 0 && parse_int(std::string_view(v).substr(6), 1, 1LL << 40, n)) {
                i.defer = DeferConsent::Until;
                i.defer_until = n;
            } else {
                throw ParseError(what + ": expected ok, no or until=EPOCH");
            }
        } else if (key == kw::kEnvTags) {
            // Like every other key, a later M2G_TAGS (e.g. SLURM_SPANK_M2G_TAGS
            // after M2G_TAGS) replaces the earlier one, and one value holds
            // what encode_intent writes: unique keys, at most kMaxTags.
            std::vector<Tag> tags;
            std::istringstream ss(v);
            for (std::string item; std::getline(ss, item, ',');) {
                const auto sep = item.find('=');
                if (sep == std::string::npos)
                    throw ParseError(what + ": expected KEY=VALUE[,KEY=VALUE...]");
                Tag t(item.substr(0, sep), item.substr(sep + 1));
                check_tag(t.first, t.second, what);
                if (std::any_of(tags.begin(), tags.end(), [&](const Tag& o) { return o.first == t.first; }))
                    throw ParseError(what + ": tag key '" + t.first + "' given twice; each key once");
                if (tags.size() >= kMaxTags)
                    throw ParseError(what + ": more than " + std::to_string(kMaxTags) + " tags");
                tags.push_back(std::move(t));
            }
            i.tags = std::move(tags);
        } else if (key == kw::kEnvExplain) {
            i.explain = v == "1";
        } else if (key == kw::kEnvModel) {
            i.model = v;
        } else if (key == kw::kEnvGpus) {
            if (!parse_int(v, 1, 1 << 20, n))
                throw ParseError(what + ": not a GPU count");
            i.gpus = static_cast<int>(n);
        } else if (key == kw::kEnvPowerPerGpu) {
            char* end = nullptr;
            i.power_w_per_gpu = std::strtod(v.c_str(), &end);
            if (end == v.c_str() || *end || !(i.power_w_per_gpu >= 0))
                throw ParseError(what + ": not a power in W");
        } else if (key == kw::kEnvRuntime) {
            if (!parse_int(v, 1, 1LL << 40, n))
                throw ParseError(what + ": not a runtime in seconds");
            i.runtime_s = n;
        } else if (key == kw::kEnvGpuMultiple) {
            if (!parse_int(v, 1, 1 << 20, n))
                throw ParseError(what + ": not a GPU count");
            i.gpu_multiple = static_cast<int>(n);
        }
    }
    return i;
}

void apply_env_defaults(JobIntent& intent, const std::set<std::string>& given,
                        const std::function<std::optional<std::string>(const char*)>& getenv_fn, int64_t now)
{
    for (const OptionSpec& spec : option_specs()) {
        const bool tags = spec.env == std::string(kw::kEnvTags);
        // Tags add up: the environment's fill in keys the command line
        // did not give.
        if (given.count(spec.name) && !tags)
            continue;
        const std::optional<std::string> v = getenv_fn(spec.env);
        if (!v || v->empty())
            continue;
        try {
            if (tags) {
                std::istringstream ss(*v);
                for (std::string item; std::getline(ss, item, ',');) {
                    JobIntent probe;
                    apply_option(probe, spec.name, item, now);
                    if (intent.tag(probe.tags.at(0).first).empty())
                        intent.tags.push_back(probe.tags.at(0));
                }
            } else {
                apply_option(intent, spec.name, *v, now);
            }
        } catch (const ParseError& e) {
            throw ParseError(std::string("environment ") + spec.env + "=" + *v + ": " + e.what());
        }
    }
}

std::string describe(const JobIntent& i)
{
    std::string out;
    for (const auto& [k, v] : encode_intent(i)) {
        std::string key = k.substr(4);  // drop M2G_
        for (auto& c : key)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out += (out.empty() ? "" : " ") + key + "=" + v;
    }
    return out.empty() ? "(no m2g options)" : out;
}

}  // namespace m2g
