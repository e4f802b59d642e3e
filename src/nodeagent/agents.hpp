// Where each node's m2g-nodeagent listens, and what the agents say the
// running jobs draw: for m2g-curtaild (caps) and `m2g forecast
// --measured-power` (a running job's draw instead of its class estimate).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace m2g {
namespace nodeagent {

// Node name -> agent URL from an agent map file: "NODE URL" per line,
// '#' comments; throws Error with file:line on anything else.
std::map<std::string, std::string> read_agent_map(const std::string& path);

// NodeAgentURL='s pattern for one node: %n its name, %a its address.
std::string expand_url(const std::string& pattern, const std::string& node, const std::string& addr);

// NodeAgentTokenFile='s token, without trailing blanks ("" for no file).
std::string read_token(const std::string& path);

// What the agents of the nodes asked (name, URL) report: per running job,
// the mean draw of its GPUs (W) over the GPUs they reported for it.
struct JobDraw {
    std::map<uint32_t, double> w_gpu;
    int asked = 0;
    int answered = 0;
    std::vector<std::string> errors;  // one per agent that did not answer, naming it
};
JobDraw job_gpu_draw(const std::vector<std::pair<std::string, std::string>>& node_urls, const std::string& token,
                     long timeout_ms);

}  // namespace nodeagent
}  // namespace m2g
