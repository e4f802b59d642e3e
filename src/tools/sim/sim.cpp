// m2g tools: the trace-driven simulator's interface (see sim.hpp and
// doc/simulator.md): policies, power draws, the cap-speed curve, and
// simulate(), which runs a sim::Simulator (simulator.hpp).
#include "tools/sim/sim.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <set>

#include "core/base/enum_names.hpp"
#include "core/base/error.hpp"
#include "core/base/source.hpp"
#include "tools/sim/simulator.hpp"

namespace m2g {

namespace {
constexpr auto kSimPolicyNames =
    enum_names<SimPolicy::FirstFit>({"m2g", "tree", "tree-nvl", "block", "block-seg", "firstfit"});
}  // namespace

const char* to_string(SimPolicy p) { return name_of(kSimPolicyNames, p); }

SimPolicy parse_sim_policy(std::string_view s)
{
    if (const std::optional<SimPolicy> p = enum_from(kSimPolicyNames, s))
        return *p;
    throw ParseError("--policy '" + std::string(s) + "': expected m2g, tree, tree-nvl, block, block-seg or firstfit");
}

double PowerCdf::sample(double u) const
{
    if (points.empty())
        return 0;
    const double pct = std::clamp(u, 0.0, 1.0) * 100.0;
    auto it = std::lower_bound(points.begin(), points.end(), pct,
                               [](const std::pair<double, double>& p, double v) { return p.first < v; });
    if (it == points.begin())
        return it->second;
    if (it == points.end())
        return points.back().second;
    const auto& [p1, w1] = *it;
    const auto& [p0, w0] = *std::prev(it);
    return p1 > p0 ? w0 + (w1 - w0) * (pct - p0) / (p1 - p0) : w1;
}

PowerCdf parse_power_cdf(std::string_view text, const std::string& file, const std::string& cluster)
{
    PowerCdf c;
    c.source = file + " (" + cluster + ")";
    std::set<std::string> clusters;
    size_t pos = 0;
    int line_no = 0;
    int col_cluster = -1, col_metric = -1, col_pct = -1, col_value = -1;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos)
            nl = text.size();
        std::string line(text.substr(pos, nl - pos));
        pos = nl + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty())
            continue;
        std::vector<std::string> f;
        size_t a = 0;
        for (;;) {
            const size_t b = line.find(',', a);
            f.push_back(line.substr(a, b == std::string::npos ? std::string::npos : b - a));
            if (b == std::string::npos)
                break;
            a = b + 1;
        }
        const std::string where = file + ":" + std::to_string(line_no) + ": ";
        if (col_cluster < 0) {
            for (size_t i = 0; i < f.size(); ++i) {
                if (f[i] == "cluster")
                    col_cluster = static_cast<int>(i);
                else if (f[i] == "metric")
                    col_metric = static_cast<int>(i);
                else if (f[i] == "cdf_pct")
                    col_pct = static_cast<int>(i);
                else if (f[i] == "value")
                    col_value = static_cast<int>(i);
            }
            if (col_cluster < 0 || col_metric < 0 || col_pct < 0 || col_value < 0)
                throw ParseError(where + "expected a header with the columns cluster, metric, cdf_pct and value "
                                         "(the Acme 2023 power/thermal CDF format)");
            continue;
        }
        const int need = std::max({col_cluster, col_metric, col_pct, col_value});
        if (static_cast<int>(f.size()) <= need)
            throw ParseError(where + "expected " + std::to_string(need + 1) + " or more comma-separated fields, found " +
                             std::to_string(f.size()));
        if (f[col_metric] != "gpu_power")
            continue;
        clusters.insert(f[col_cluster]);
        if (f[col_cluster] != cluster)
            continue;
        char* e1 = nullptr;
        char* e2 = nullptr;
        const double pct = std::strtod(f[col_pct].c_str(), &e1);
        const double w = std::strtod(f[col_value].c_str(), &e2);
        if (f[col_pct].empty() || *e1 || !(pct >= 0 && pct <= 100))
            throw ParseError(where + "cdf_pct '" + f[col_pct] + "': expected a number from 0 to 100");
        if (f[col_value].empty() || *e2 || !(w >= 0 && std::isfinite(w)))
            throw ParseError(where + "value '" + f[col_value] + "': expected watts, 0 or more");
        if (!c.points.empty() && (pct < c.points.back().first || w < c.points.back().second))
            throw ParseError(where + "a CDF must not decrease: " + f[col_pct] + "% at " + f[col_value] +
                             " W after " + sim::num(c.points.back().first) + "% at " + sim::num(c.points.back().second) + " W");
        c.points.emplace_back(pct, w);
    }
    if (c.points.empty()) {
        std::string have;
        for (const std::string& k : clusters)
            have += (have.empty() ? "" : ", ") + k;
        throw Error(file + ": no gpu_power rows for cluster '" + cluster + "'" +
                    (have.empty() ? std::string(" (the file has no gpu_power rows)") : "; clusters with them: " + have));
    }
    return c;
}

PowerCdf read_power_cdf(const std::string& path, const std::string& cluster)
{
    return parse_power_cdf(read_text_file(path), path, cluster);
}

// Perseus artifact (github.com/ml-energy/zeus, sosp24_data/zeus/csv/A100/
// zeus_global.csv): per power limit 300, 275, 250, 225, 200, 175 W, the
// mean over its five jobs of (average draw / draw at 300 W, iteration time
// at 300 W / iteration time). doc/simulator.md has the per-job numbers.
const std::vector<std::pair<double, double>> kCapSpeedDefault = {
    {0.602, 0.577}, {0.683, 0.709}, {0.766, 0.832}, {0.847, 0.923}, {0.924, 0.970}, {1.0, 1.0}};

double cap_speed(const std::vector<std::pair<double, double>>& curve, double x)
{
    const auto& c = curve.empty() ? kCapSpeedDefault : curve;
    if (!(x > 0))
        return 0;
    if (x >= 1 || c.empty())
        return 1;
    if (x <= c.front().first)
        return std::min(1.0, c.front().second * x / c.front().first);
    for (size_t i = 1; i < c.size(); ++i)
        if (x <= c[i].first) {
            const auto& [x0, s0] = c[i - 1];
            const auto& [x1, s1] = c[i];
            return std::min(1.0, x1 > x0 ? s0 + (s1 - s0) * (x - x0) / (x1 - x0) : s1);
        }
    // Past the last point (below 1): towards speed 1 at ratio 1.
    const auto& [xl, sl] = c.back();
    return std::min(1.0, sl + (1.0 - sl) * (x - xl) / (1.0 - xl));
}

std::vector<std::pair<double, double>> parse_cap_speed(std::string_view text)
{
    const std::string what = "--cap-speed '" + std::string(text) +
                             "': expected RATIO:SPEED points separated by commas, e.g. 0.6:0.58,0.8:0.9, with "
                             "0 < RATIO <= 1 ascending and 0 < SPEED <= 1 not decreasing";
    std::vector<std::pair<double, double>> out;
    size_t a = 0;
    while (a <= text.size()) {
        size_t b = text.find(',', a);
        if (b == std::string_view::npos)
            b = text.size();
        const std::string item(text.substr(a, b - a));
        const size_t colon = item.find(':');
        if (colon == std::string::npos)
            throw ParseError(what);
        char* e1 = nullptr;
        char* e2 = nullptr;
        const std::string xs = item.substr(0, colon), ys = item.substr(colon + 1);
        const double x = std::strtod(xs.c_str(), &e1), y = std::strtod(ys.c_str(), &e2);
        if (xs.empty() || ys.empty() || *e1 || *e2 || !(x > 0 && x <= 1) || !(y > 0 && y <= 1) ||
            (!out.empty() && (x <= out.back().first || y < out.back().second)))
            throw ParseError(what);
        out.emplace_back(x, y);
        a = b + 1;
    }
    if (out.empty())
        throw ParseError(what);
    return out;
}

SimResult simulate(const Model& m, const Trace& trace, const SimOptions& opts)
{
    return sim::Simulator(m, trace, opts).run();
}

}  // namespace m2g
