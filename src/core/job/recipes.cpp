// m2g core: recipe catalog reader.
#include "core/job/recipes.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "core/base/conf_lines.hpp"
#include "core/base/error.hpp"
#include "core/base/keys.hpp"

namespace m2g {

using namespace conf;

const Recipe* RecipeCatalog::find(std::string_view name) const
{
    for (const Recipe& r : recipes)
        if (r.name == name)
            return &r;
    return nullptr;
}

int64_t parse_slurm_time(std::string_view text, const std::string& what)
{
    const std::string s(text);
    auto bad = [&]() {
        return ParseError(what + ": '" + s + "' is not a time; expected MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS");
    };
    if (s.empty() || s.size() > 16 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == ':' || c == '-'; }))
        throw bad();
    // Every field is 1 to 9 digits (so the conversion cannot fail or overflow).
    auto number = [&](const std::string& field) {
        if (field.empty() || field.size() > 9 ||
            !std::all_of(field.begin(), field.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
            throw bad();
        return std::stoll(field);
    };
    long long days = 0;
    std::string rest = s;
    const auto dash = s.find('-');
    if (dash != std::string::npos) {
        if (dash == 0 || s.find('-', dash + 1) != std::string::npos)
            throw bad();
        days = number(s.substr(0, dash));
        rest = s.substr(dash + 1);
    }
    std::vector<long long> parts;
    std::istringstream ss(rest);
    for (std::string p; std::getline(ss, p, ':');)
        parts.push_back(number(p));
    if (parts.empty() || parts.size() > 3 || rest.back() == ':')
        throw bad();
    long long secs = 0;
    if (dash != std::string::npos) {  // D-HH[:MM[:SS]]
        secs = parts[0] * 3600 + (parts.size() > 1 ? parts[1] * 60 : 0) + (parts.size() > 2 ? parts[2] : 0);
    } else if (parts.size() == 1) {   // MM
        secs = parts[0] * 60;
    } else if (parts.size() == 2) {   // MM:SS
        secs = parts[0] * 60 + parts[1];
    } else {                          // HH:MM:SS
        secs = parts[0] * 3600 + parts[1] * 60 + parts[2];
    }
    secs += days * 86400;
    if (secs <= 0 || secs > 365LL * 86400)
        throw ParseError(what + ": '" + s + "' must be more than zero and at most 365 days");
    return secs;
}

std::string format_slurm_time(int64_t s)
{
    char buf[64];
    const long long d = s / 86400, h = (s % 86400) / 3600, m = (s % 3600) / 60, sec = s % 60;
    if (d)
        std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", d, h, m, sec);
    else
        std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", h, m, sec);
    return buf;
}

namespace {

const LineKind kRecipeLine{kw::kRecipeName,
                           {kw::kRecipeModel, kw::kRecipeParams, kw::kRecipePrecision, kw::kRecipeTP, kw::kRecipePP,
                            kw::kRecipeDP, kw::kRecipeGpus, kw::kRecipeTopology, kw::kRecipeSegment,
                            kw::kRecipeClass, kw::kRecipeDefer, kw::kRecipePower, kw::kRecipeRuntime,
                            kw::kRecipeDescription}};

const std::vector<const char*> kPrecisions = {"fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"};

// Apply a recipe key through the option parser, so a recipe accepts exactly
// what the command line accepts; the message names the recipe key instead.
void apply_as_option(JobIntent& intent, const SourceLoc& loc, const char* key, const char* option,
                     const std::string& value)
{
    try {
        apply_option(intent, option, value, 0);
    } catch (const ParseError& e) {
        std::string msg = e.what();
        const std::string prefix = "--" + std::string(option) + "=" + value;
        if (msg.rfind(prefix, 0) == 0)
            msg = std::string(key) + "=" + value + msg.substr(prefix.size());
        throw ParseError(loc.str() + ": " + msg);
    }
}

bool params_ok(const std::string& p)
{
    // 8B, 70B, 1.5B, 405B, 180M, 1.8T
    if (p.size() < 2 || std::string("KMBT").find(p.back()) == std::string::npos)
        return false;
    const std::string num = p.substr(0, p.size() - 1);
    char* end = nullptr;
    const double v = std::strtod(num.c_str(), &end);
    return end != num.c_str() && *end == '\0' && v > 0 && std::isdigit(static_cast<unsigned char>(num[0]));
}

}  // namespace

RecipeCatalog parse_recipes(std::string_view text, const std::string& file)
{
    RecipeCatalog c;
    c.path = file;
    for (const Line& line : tokenize(text, file)) {
        if (lower(line.pairs[0].key) != lower(kw::kRecipeName))
            throw ParseError(line.loc.str() + ": unknown key '" + line.pairs[0].key + "'; every line starts with " +
                             kw::kRecipeName + "=<name>");
        Fields f(line, kRecipeLine);
        Recipe r;
        r.loc = line.loc;
        r.name = line.pairs[0].value;
        try {
            JobIntent probe;
            apply_option(probe, kw::kOptRecipe, r.name, 0);
        } catch (const ParseError&) {
            throw ParseError(line.loc.str() + ": RecipeName=" + r.name +
                             " is not valid; use 1-64 characters of a-z, 0-9, '_', '.', '-'");
        }
        if (const Recipe* prev = c.find(r.name))
            throw ParseError(line.loc.str() + ": RecipeName=" + r.name + " is already defined at " + prev->loc.str());
        if (!f.has(kw::kRecipeGpus))
            throw ParseError(line.loc.str() + ": RecipeName=" + r.name + " needs Gpus=<count>");
        r.intent.gpus = f.integer(kw::kRecipeGpus, 0, 1, 1 << 20);
        r.tp = f.integer(kw::kRecipeTP, 0, 1, 1 << 16);
        r.pp = f.integer(kw::kRecipePP, 0, 1, 1 << 16);
        r.dp = f.integer(kw::kRecipeDP, 0, 1, 1 << 20);
        if (r.tp && r.pp && r.dp && static_cast<long long>(r.tp) * r.pp * r.dp != r.intent.gpus)
            throw ParseError(line.loc.str() + ": RecipeName=" + r.name + " has Gpus=" + std::to_string(r.intent.gpus) +
                             " but TP*PP*DP = " + std::to_string(r.tp) + "*" + std::to_string(r.pp) + "*" +
                             std::to_string(r.dp) + " = " + std::to_string(static_cast<long long>(r.tp) * r.pp * r.dp));
        if (r.tp && r.intent.gpus % r.tp)
            throw ParseError(line.loc.str() + ": RecipeName=" + r.name + " has Gpus=" + std::to_string(r.intent.gpus) +
                             ", not a multiple of TP=" + std::to_string(r.tp));
        // A model replica's GPUs (TP*PP, or TP when Gpus holds no whole
        // number of TP*PP): a job sized by hand asks for whole replicas.
        {
            const long long tp = r.tp ? r.tp : 1, pp = r.pp ? r.pp : 1;
            long long replica = r.intent.gpus % (tp * pp) == 0 ? tp * pp : tp;
            r.intent.gpu_multiple = replica > 1 ? static_cast<int>(replica) : 0;
        }
        r.intent.model = f.str(kw::kRecipeModel);
        if (!r.intent.model.empty())
            check_tag(kw::kTagModel, r.intent.model, line.loc.str() + ": Model=" + r.intent.model);
        r.params = f.str(kw::kRecipeParams);
        if (!r.params.empty() && !params_ok(r.params))
            throw ParseError(line.loc.str() + ": Params=" + r.params +
                             " is not valid; expected a parameter count such as 8B, 70B, 1.5B or 180M");
        r.precision = lower(f.str(kw::kRecipePrecision));
        if (!r.precision.empty() &&
            std::find(kPrecisions.begin(), kPrecisions.end(), r.precision) == kPrecisions.end())
            throw ParseError(line.loc.str() + ": Precision=" + f.str(kw::kRecipePrecision) +
                             " is not valid; expected one of " + join(kPrecisions));
        if (f.has(kw::kRecipeTopology))
            apply_as_option(r.intent, line.loc, kw::kRecipeTopology, kw::kOptTopology, f.str(kw::kRecipeTopology));
        if (f.has(kw::kRecipeSegment))
            apply_as_option(r.intent, line.loc, kw::kRecipeSegment, kw::kOptSegment, f.str(kw::kRecipeSegment));
        if (f.has(kw::kRecipeClass))
            apply_as_option(r.intent, line.loc, kw::kRecipeClass, kw::kOptClass, f.str(kw::kRecipeClass));
        if (f.has(kw::kRecipeDefer)) {
            const std::string d = f.str(kw::kRecipeDefer);
            if (d != "ok" && d != "no")
                throw ParseError(line.loc.str() + ": Defer=" + d +
                                 " is not valid; expected ok or no (a deadline is the user's to give)");
            apply_as_option(r.intent, line.loc, kw::kRecipeDefer, kw::kOptDefer, d);
        }
        if (f.has(kw::kRecipePower)) {
            r.intent.power_w_per_gpu = f.number(kw::kRecipePower);
            if (r.intent.power_w_per_gpu <= 0 || r.intent.power_w_per_gpu > 5000)
                throw ParseError(line.loc.str() + ": PowerPerGpuW=" + f.str(kw::kRecipePower) +
                                 " is not valid; expected watts per GPU, more than 0 and at most 5000");
        }
        if (f.has(kw::kRecipeRuntime))
            r.intent.runtime_s =
                parse_slurm_time(f.str(kw::kRecipeRuntime), line.loc.str() + ": Runtime=" + f.str(kw::kRecipeRuntime));
        r.description = f.str(kw::kRecipeDescription);
        c.recipes.push_back(std::move(r));
    }
    return c;
}

RecipeCatalog read_recipes(const std::string& path)
{
    return parse_recipes(read_text_file(path), path);
}

void expand_recipe(JobIntent& intent, const RecipeCatalog& catalog)
{
    if (intent.recipe.empty())
        return;
    const Recipe* r = catalog.find(intent.recipe);
    if (!r) {
        std::string names;
        for (const Recipe& x : catalog.recipes)
            names += (names.empty() ? "" : ", ") + x.name;
        throw ParseError("--" + std::string(kw::kOptRecipe) + "=" + intent.recipe + ": no such recipe in " +
                         catalog.path + (names.empty() ? " (it is empty)" : "; known: " + names));
    }
    merge_under(intent, r->intent);
}

RecipeSize size_from_recipe(const JobIntent& intent, const AskedSize& asked, int node_gpus)
{
    RecipeSize out;
    if (intent.recipe.empty() || intent.gpus <= 0)
        return out;
    const int G = intent.gpus, P = node_gpus, m = intent.gpu_multiple;
    const std::string who = "m2g: --" + std::string(kw::kOptRecipe) + "=" + intent.recipe + " runs on " +
                            std::to_string(G) + " GPU" + (G == 1 ? "" : "s");
    const std::string leave = "; or leave -N and the GPU options out and m2g sizes the job from the recipe";
    std::string said;
    auto say = [&](const std::string& s) { said += (said.empty() ? "" : " ") + s; };
    if (asked.time_limit_s <= 0 && intent.runtime_s > 0) {
        const bool cut = asked.max_time_limit_s > 0 && intent.runtime_s > asked.max_time_limit_s;
        out.time_limit_s = cut ? asked.max_time_limit_s : intent.runtime_s;
        say("-t " + format_slurm_time(out.time_limit_s) +
            (cut ? " (the partition's MaxTime; the recipe's runtime is " + format_slurm_time(intent.runtime_s) + ")"
                 : ""));
    }
    // The replica rule, on what the job asks for in all.
    auto whole = [&](long long total, const std::string& how) {
        if (m <= 1 || (total >= m && total % m == 0))
            return true;
        out = RecipeSize{};
        out.refusal = who + " in model replicas of " + std::to_string(m) + " GPUs (TP*PP); this job asks for " +
                      std::to_string(total) + " (" + how + "), not a whole number of them. Ask for a multiple of " +
                      std::to_string(m) + leave;
        return false;
    };
    if (asked.gpus_total > 0) {  // --gpus or --gpus-per-task: Slurm sizes from them
        whole(asked.gpus_total, "--gpus/--gpus-per-task");
    } else if (asked.gpus_per_node > 0) {
        const int g = asked.gpus_per_node;
        if (asked.nodes > 0) {
            whole(static_cast<long long>(asked.nodes) * g,
                  "-N " + std::to_string(asked.nodes) + " x " + std::to_string(g) + " per node");
        } else if (G % g != 0) {
            out = RecipeSize{};
            out.refusal = who + ", not a whole number of nodes at " + std::to_string(g) +
                          " GPUs per node. Give -N, or a GPU count per node that divides " + std::to_string(G) + leave;
        } else if (whole(G, std::to_string(G / g) + " nodes x " + std::to_string(g) + " per node")) {
            out.nodes = G / g;
            say("-N " + std::to_string(out.nodes));
        }
    } else if (asked.nodes > 0) {
        const int n = asked.nodes;
        if (P > 0 && (G % n != 0 || G / n > P)) {
            out = RecipeSize{};
            out.refusal = who + "; -N " + std::to_string(n) + " cannot hold them evenly at most " + std::to_string(P) +
                          " per node. Use a node count that divides " + std::to_string(G) + " into at most " +
                          std::to_string(P) + " per node, or give the GPUs per node too" + leave;
        } else if (P > 0) {
            out.gpus_per_node = G / n;
            say("--gres=gpu:" + std::to_string(out.gpus_per_node));
        }
    } else if (P > 0) {
        int n = (G + P - 1) / P;
        while (n < G && (G % n != 0 || G / n > P))
            ++n;
        out.nodes = n;
        out.gpus_per_node = G / n;
        say("-N " + std::to_string(n) + " --gres=gpu:" + std::to_string(out.gpus_per_node));
    }
    if (out.refusal.empty())
        out.said = said;
    return out;
}

std::string format_recipe_table(const RecipeCatalog& c)
{
    std::ostringstream os;
    char buf[512];
    std::snprintf(buf, sizeof buf, "%-26s %5s  %-10s %-16s %-14s %s\n", "RECIPE", "GPUS", "CLASS", "TOPOLOGY", "MODEL",
                  "DESCRIPTION");
    os << buf;
    for (const Recipe& r : c.recipes) {
        const JobIntent& i = r.intent;
        const std::string topo = i.locality == Locality::Unset ? "-" : locality_string(i);
        std::snprintf(buf, sizeof buf, "%-26s %5d  %-10s %-16s %-14s %s\n", r.name.c_str(), i.gpus,
                      i.workload_class == WorkloadClass::Unset ? "-" : to_string(i.workload_class), topo.c_str(),
                      i.model.empty() ? "-" : i.model.c_str(), r.description.c_str());
        os << buf;
    }
    return os.str();
}

std::string format_recipe(const Recipe& r, int node_gpus)
{
    std::ostringstream os;
    const JobIntent& i = r.intent;
    os << "recipe " << r.name << " (" << r.loc.str() << ")\n";
    if (!r.description.empty())
        os << "  description   " << r.description << "\n";
    if (!i.model.empty())
        os << "  model         " << i.model << (r.params.empty() ? "" : ", " + r.params + " parameters")
           << (r.precision.empty() ? "" : ", " + r.precision) << "\n";
    if (r.tp || r.pp || r.dp)
        os << "  parallelism   TP=" << (r.tp ? r.tp : 1) << " PP=" << (r.pp ? r.pp : 1) << " DP=" << (r.dp ? r.dp : 1)
           << "\n";
    os << "  gpus          " << i.gpus << "\n";
    if (i.power_w_per_gpu > 0)
        os << "  power         " << i.power_w_per_gpu << " W per GPU, " << i.power_w_per_gpu * i.gpus / 1000.0
           << " kW in all\n";
    if (i.runtime_s)
        os << "  runtime       " << format_slurm_time(i.runtime_s) << "\n";
    os << "  expands to    " << describe(i) << "\n";
    if (node_gpus > 0) {
        JobIntent named = i;
        named.recipe = r.name;
        const RecipeSize s = size_from_recipe(named, AskedSize{}, node_gpus);
        os << "  sizes a job   " << (s.said.empty() ? "(nothing to size)" : s.said) << " (on " << node_gpus
           << "-GPU nodes, when the job gives no size of its own)\n";
        if (i.gpu_multiple > 1)
            os << "  by hand       a multiple of " << i.gpu_multiple << " GPUs (one model replica, TP*PP)\n";
    }
    return os.str();
}

}  // namespace m2g
