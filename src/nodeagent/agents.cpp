#include "nodeagent/agents.hpp"

#include <sstream>

#include "core/base/error.hpp"
#include "core/base/source.hpp"
#include "nodeagent/client.hpp"

namespace m2g {
namespace nodeagent {

std::map<std::string, std::string> read_agent_map(const std::string& path)
{
    std::map<std::string, std::string> out;
    std::istringstream in(read_text_file(path));
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        const auto hash = line.find('#');
        if (hash != std::string::npos)
            line.resize(hash);
        std::istringstream ls(line);
        std::string node, url, extra;
        if (!(ls >> node))
            continue;
        if (!(ls >> url) || (ls >> extra) || (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0))
            throw Error(path + ":" + std::to_string(n) +
                        ": expected \"NODE URL\" with an http:// or https:// URL, e.g. \"r01n01 "
                        "http://10.0.0.7:6830\"");
        out[node] = url;
    }
    return out;
}

std::string expand_url(const std::string& pattern, const std::string& node, const std::string& addr)
{
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size() && (pattern[i + 1] == 'n' || pattern[i + 1] == 'a')) {
            out += pattern[i + 1] == 'n' ? node : addr;
            ++i;
        } else {
            out += pattern[i];
        }
    }
    return out;
}

std::string read_token(const std::string& path)
{
    if (path.empty())
        return "";
    std::string t = read_text_file(path);
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' '))
        t.pop_back();
    return t;
}

JobDraw job_gpu_draw(const std::vector<std::pair<std::string, std::string>>& node_urls, const std::string& token,
                     long timeout_ms)
{
    JobDraw out;
    std::map<uint32_t, std::pair<double, int>> sum;  // job -> (W, GPUs)
    for (const auto& [node, url] : node_urls) {
        ++out.asked;
        try {
            const NodePower p = get_power(url, token, timeout_ms);
            ++out.answered;
            for (const GpuPower& g : p.gpus) {
                if (!g.error.empty())
                    continue;  // NVML could not read it: its 0 W is no measurement
                for (uint32_t job : g.jobs) {
                    // A GPU shared by several jobs: each gets its share.
                    sum[job].first += g.draw_w / static_cast<double>(g.jobs.size());
                    sum[job].second += 1;
                }
            }
        } catch (const std::exception& e) {
            out.errors.push_back(node + ": " + e.what());
        }
    }
    for (const auto& [job, s] : sum)
        if (s.second > 0)
            out.w_gpu[job] = s.first / s.second;
    return out;
}

}  // namespace nodeagent
}  // namespace m2g
