// m2g tools: job traces for the simulator.
#include "tools/sim/trace.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/model/config.hpp"
#include "core/base/error.hpp"

namespace m2g {

namespace {

std::string where(const std::string& file, int line)
{
    return file + ":" + std::to_string(line) + ": ";
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

bool to_double(std::string_view s, double& out)
{
    const std::string str(trim(s));
    if (str.empty())
        return false;
    char* end = nullptr;
    errno = 0;
    out = std::strtod(str.c_str(), &end);
    return errno == 0 && end && *end == '\0' && std::isfinite(out);
}

// Calls fn(line_number, line) for each line.
template <class Fn>
void for_each_line(std::string_view text, Fn fn)
{
    int no = 0;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        ++no;
        fn(no, line);
        if (nl == std::string_view::npos)
            break;
        text.remove_prefix(nl + 1);
    }
}

std::vector<std::string_view> split(std::string_view line, char sep)
{
    std::vector<std::string_view> out;
    size_t start = 0;
    for (;;) {
        const size_t p = line.find(sep, start);
        out.push_back(line.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
        if (p == std::string_view::npos)
            return out;
        start = p + 1;
    }
}

}  // namespace

Trace parse_philly_csv(std::string_view text, const std::string& file)
{
    Trace t;
    t.format = "philly";
    int c_id = -1, c_submit = -1, c_dur = -1, c_gpus = -1;
    size_t ncols = 0;
    bool header = false;
    for_each_line(text, [&](int no, std::string_view raw) {
        const std::string_view line = trim(raw);
        if (line.empty())
            return;
        const std::vector<std::string_view> f = split(line, ',');
        if (!header) {
            for (size_t i = 0; i < f.size(); ++i) {
                const std::string_view name = trim(f[i]);
                const int col = static_cast<int>(i);
                if (name == "job_id")
                    c_id = col;
                else if (name == "submit_s")
                    c_submit = col;
                else if (name == "duration_s")
                    c_dur = col;
                else if (name == "num_gpus")
                    c_gpus = col;
            }
            if (c_id < 0 || c_submit < 0 || c_dur < 0 || c_gpus < 0)
                throw ParseError(where(file, no) +
                                 "the header must name the columns job_id, submit_s, duration_s and num_gpus "
                                 "(the Philly CSV of ../shared/data); for SWF use a .swf file");
            ncols = f.size();
            header = true;
            return;
        }
        if (f.size() != ncols)
            throw ParseError(where(file, no) + std::to_string(f.size()) + " fields, the header has " +
                             std::to_string(ncols));
        TraceJob j;
        j.id = std::string(trim(f[c_id]));
        double gpus = 0;
        if (!to_double(f[c_submit], j.submit) || j.submit < 0)
            throw ParseError(where(file, no) + "submit_s '" + std::string(f[c_submit]) +
                             "': expected seconds, 0 or more");
        if (!to_double(f[c_dur], j.duration) || j.duration < 0)
            throw ParseError(where(file, no) + "duration_s '" + std::string(f[c_dur]) +
                             "': expected seconds, 0 or more");
        if (!to_double(f[c_gpus], gpus) || gpus < 1 || gpus > 1e6 || gpus != std::floor(gpus))
            throw ParseError(where(file, no) + "num_gpus '" + std::string(f[c_gpus]) +
                             "': expected a whole number from 1 to 1000000");
        j.gpus = static_cast<int>(gpus);
        t.jobs.push_back(std::move(j));
    });
    if (!header)
        throw ParseError(file + ": empty trace: expected a header row and one row per job");
    return t;
}

Trace parse_swf(std::string_view text, const std::string& file)
{
    Trace t;
    t.format = "swf";
    for_each_line(text, [&](int no, std::string_view raw) {
        std::string_view line = trim(raw);
        if (line.empty() || line.front() == ';')
            return;
        std::vector<std::string_view> f;
        size_t i = 0;
        while (i < line.size()) {
            while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
                ++i;
            const size_t s = i;
            while (i < line.size() && line[i] != ' ' && line[i] != '\t')
                ++i;
            if (i > s)
                f.push_back(line.substr(s, i - s));
        }
        if (f.size() != 18)
            throw ParseError(where(file, no) + std::to_string(f.size()) +
                             " fields; an SWF job line has 18 (job, submit, wait, run time, processors, ...)");
        double v[18];
        for (size_t k = 0; k < 18; ++k)
            if (!to_double(f[k], v[k]))
                throw ParseError(where(file, no) + "field " + std::to_string(k + 1) + " '" + std::string(f[k]) +
                                 "' is not a number");
        // -1 is SWF's "unknown" in every field (LLNL-Thunder-2007-1.1-cln has
        // 1,190 such records: every field -1): skipped and counted, as an
        // unknown run time is. Any other negative submit time is an error.
        if (v[1] == -1) {
            ++t.skipped;
            return;
        }
        if (v[1] < 0)
            throw ParseError(where(file, no) + "submit time (field 2) must be 0 or more, or -1 (unknown)");
        // Field 8 is the requested processors, field 5 the allocated ones
        // (either may be -1: unknown).
        const double procs = v[7] > 0 ? v[7] : v[4];
        if (v[3] < 0 || procs <= 0) {
            ++t.skipped;
            return;
        }
        if (procs > 1e6 || procs != std::floor(procs))
            throw ParseError(where(file, no) + "processors '" + std::to_string(procs) +
                             "': expected a whole number up to 1000000");
        TraceJob j;
        j.id = std::string(f[0]);
        j.submit = v[1];
        j.duration = v[3];
        j.gpus = static_cast<int>(procs);
        j.limit = v[8] > 0 ? v[8] : 0;
        t.jobs.push_back(std::move(j));
    });
    return t;
}

Trace read_trace(const std::string& path)
{
    const std::string text = read_text_file(path);
    bool swf = path.size() >= 4 && path.compare(path.size() - 4, 4, ".swf") == 0;
    if (!swf) {
        const size_t p = text.find_first_not_of(" \t\r\n");
        swf = p != std::string::npos && text[p] == ';';
    }
    return swf ? parse_swf(text, path) : parse_philly_csv(text, path);
}

}  // namespace m2g
