// m2g core: telemetry files and attributes.
#include "core/obs/telemetry.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

#include "core/base/error.hpp"
#include "core/base/keys.hpp"

namespace m2g {

namespace {

std::string pct_encode(const std::string& v)
{
    std::string out;
    for (unsigned char c : v) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':' || c == '/' || c == '@') {
            out += static_cast<char>(c);
        } else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            out += buf;
        }
    }
    return out;
}

[[noreturn]] void fail(const std::string& what, const std::string& path)
{
    throw Error(what + " " + path + ": " + std::strerror(errno));
}

// An fd that closes itself.
struct Fd {
    int fd = -1;
    explicit Fd(int f) : fd(f) {}
    ~Fd()
    {
        if (fd >= 0)
            ::close(fd);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
};

void check_dir(const std::string& dir)
{
    if (dir.empty() || dir[0] != '/')
        throw Error("telemetry directory '" + dir + "' must be an absolute path");
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0) {
        if (errno != ENOENT || ::mkdir(dir.c_str(), 0755) != 0)
            fail("cannot create directory", dir);
        if (::lstat(dir.c_str(), &st) != 0)
            fail("cannot stat", dir);
    }
    if (!S_ISDIR(st.st_mode))
        throw Error("telemetry directory " + dir + " is not a directory (symbolic links are not followed)");
}

std::string read_all(int fd)
{
    std::string out;
    char buf[4096];
    ssize_t n;
    if (::lseek(fd, 0, SEEK_SET) < 0)
        return out;
    while ((n = ::read(fd, buf, sizeof buf)) > 0)
        out.append(buf, static_cast<size_t>(n));
    return out;
}

// Rewrite the job-id set of one GPU's mapping file under an exclusive lock.
void update_map(const std::string& dir, int gpu, uint32_t job_id, bool add)
{
    const std::string path = dir + "/" + std::to_string(gpu);
    Fd f(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (f.fd < 0)
        fail("cannot open", path);
    if (::flock(f.fd, LOCK_EX) != 0)
        fail("cannot lock", path);
    std::vector<std::string> ids;
    std::istringstream in(read_all(f.fd));
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && std::find(ids.begin(), ids.end(), line) == ids.end())
            ids.push_back(line);
    const std::string id = std::to_string(job_id);
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (add)
        ids.push_back(id);
    if (ids.empty()) {
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
            fail("cannot remove", path);
        return;
    }
    std::string text;
    for (const auto& x : ids)
        text += x + "\n";
    if (::ftruncate(f.fd, 0) != 0 || ::lseek(f.fd, 0, SEEK_SET) < 0 ||
        ::write(f.fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        fail("cannot write", path);
}

std::string textfile_path(const std::string& dir, uint32_t job_id)
{
    return dir + "/m2g_job_" + std::to_string(job_id) + ".prom";
}

std::string prom_label(const std::string& v)
{
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"')
            out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

}  // namespace

std::string otel_extend(const std::string& existing, const std::vector<std::pair<std::string, std::string>>& attrs)
{
    std::set<std::string> present;
    std::istringstream in(existing);
    for (std::string item; std::getline(in, item, ',');) {
        const auto eq = item.find('=');
        std::string key = item.substr(0, eq);
        key.erase(0, key.find_first_not_of(" \t"));
        key.erase(key.find_last_not_of(" \t") + 1);
        present.insert(key);
    }
    std::string out = existing;
    for (const auto& [k, v] : attrs) {
        if (present.count(k) || v.empty())
            continue;
        out += (out.empty() ? "" : ",") + k + "=" + pct_encode(v);
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> otel_attributes(uint32_t job_id, const JobIntent& i)
{
    std::vector<std::pair<std::string, std::string>> a;
    a.emplace_back(kw::kOtelJobId, std::to_string(job_id));
    if (i.workload_class != WorkloadClass::Unset)
        a.emplace_back(kw::kOtelClass, to_string(i.workload_class));
    if (!i.tag(kw::kTagTenant).empty())
        a.emplace_back(kw::kOtelTenant, i.tag(kw::kTagTenant));
    const std::string model = !i.tag(kw::kTagModel).empty() ? i.tag(kw::kTagModel) : i.model;
    if (!model.empty())
        a.emplace_back(kw::kOtelModel, model);
    return a;
}

std::vector<int> parse_gpu_indices(const std::string& text)
{
    std::vector<int> out;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        int lo = 0, hi = 0;
        char dash = 0, tail = 0;
        const int got = std::sscanf(item.c_str(), "%d%c%d%c", &lo, &dash, &hi, &tail);
        if (got == 1 && lo >= 0 && lo < 4096) {
            hi = lo;
        } else if (!(got == 3 && dash == '-' && lo >= 0 && hi >= lo && hi < 4096)) {
            throw ParseError("GPU list '" + text + "' is not valid; expected indices such as 0,1,3 or 0-3");
        }
        for (int g = lo; g <= hi; ++g)
            if (std::find(out.begin(), out.end(), g) == out.end())
                out.push_back(g);
    }
    return out;
}

std::string node_dir(const std::string& pattern, const std::string& node)
{
    if (node.empty() || node.size() > 64 || node == "." || node == ".." ||
        !std::all_of(node.begin(), node.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        }))
        throw Error("node name '" + node + "' is not a plain host name; refusing to use it in a path");
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'n') {
            out += node;
            ++i;
        } else {
            out += pattern[i];
        }
    }
    return out;
}

void dcgm_map_add(const std::string& dir, const std::vector<int>& gpus, uint32_t job_id)
{
    check_dir(dir);
    for (int g : gpus)
        update_map(dir, g, job_id, true);
}

void dcgm_map_remove(const std::string& dir, const std::vector<int>& gpus, uint32_t job_id)
{
    check_dir(dir);
    for (int g : gpus)
        update_map(dir, g, job_id, false);
}

std::string job_info_metric(uint32_t job_id, const JobIntent& i, const std::string& node)
{
    std::ostringstream os;
    os << "# HELP m2g_job_info A Slurm job running on this node, with its m2g class and tags.\n"
       << "# TYPE m2g_job_info gauge\n"
       << "m2g_job_info{job_id=\"" << job_id << "\",node=\"" << prom_label(node) << "\",class=\""
       << prom_label(to_string(i.workload_class)) << "\",recipe=\"" << prom_label(i.recipe) << "\",tenant=\""
       << prom_label(i.tag(kw::kTagTenant)) << "\",project=\"" << prom_label(i.tag(kw::kTagProject))
       << "\",model=\"" << prom_label(!i.tag(kw::kTagModel).empty() ? i.tag(kw::kTagModel) : i.model)
       << "\"} 1\n";
    return os.str();
}

void textfile_write(const std::string& dir, uint32_t job_id, const std::string& content)
{
    check_dir(dir);
    const std::string path = textfile_path(dir, job_id);
    const std::string tmp = path + ".tmp";
    {
        Fd f(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
        if (f.fd < 0)
            fail("cannot create", tmp);
        if (::write(f.fd, content.data(), content.size()) != static_cast<ssize_t>(content.size()))
            fail("cannot write", tmp);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0)
        fail("cannot rename into", path);
}

void textfile_remove(const std::string& dir, uint32_t job_id)
{
    const std::string path = textfile_path(dir, job_id);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        fail("cannot remove", path);
}

}  // namespace m2g
