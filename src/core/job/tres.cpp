// m2g core: GPU counts from TRES request strings.
#include "core/job/tres.hpp"

#include <cctype>
#include <string>

namespace m2g {

namespace {

// "4", "4k" → 4, 4096; anything else → -1.
int64_t count(std::string_view s)
{
    if (s.empty())
        return -1;
    int64_t v = 0;
    size_t i = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
        v = v * 10 + (s[i] - '0');
        if (v > (int64_t{1} << 40))
            return -1;
    }
    if (i == 0)
        return -1;
    if (i == s.size())
        return v;
    if (i + 1 == s.size() && (s[i] == 'k' || s[i] == 'K'))
        return v * 1024;
    return -1;
}

}  // namespace

int64_t gpus_in_tres(std::string_view tres)
{
    int64_t total = 0;
    while (!tres.empty()) {
        const auto comma = tres.find(',');
        std::string_view item = tres.substr(0, comma);
        tres = comma == std::string_view::npos ? std::string_view() : tres.substr(comma + 1);
        for (std::string_view prefix : {"gres:", "gres/"})
            if (item.substr(0, prefix.size()) == prefix)
                item.remove_prefix(prefix.size());
        if (item.substr(0, 3) != "gpu" || (item.size() > 3 && item[3] != ':' && item[3] != '='))
            continue;
        if (item.size() == 3) {  // "gres:gpu": one
            total += 1;
            continue;
        }
        const auto sep = item.find_last_of(":=");
        int64_t n = count(item.substr(sep + 1));
        if (n < 0) {
            // "gpu:a100" (a type, no count) means one; "gpu:4x" or an
            // overflowing count is junk.
            const char tail0 = item.size() > sep + 1 ? item[sep + 1] : '\0';
            if (item.find_first_of(":=") == sep && !std::isdigit(static_cast<unsigned char>(tail0)))
                n = 1;
            else
                continue;
        }
        total += n;
    }
    return total;
}

int64_t job_gpus(std::string_view per_job, std::string_view per_node, std::string_view per_task, int64_t nodes,
                 int64_t tasks)
{
    if (const int64_t g = gpus_in_tres(per_job))
        return g;
    if (nodes < 1)
        nodes = 1;
    if (const int64_t g = gpus_in_tres(per_node))
        return g * nodes;
    if (const int64_t g = gpus_in_tres(per_task))
        return g * (tasks > 0 ? tasks : nodes);
    return 0;
}

}  // namespace m2g
