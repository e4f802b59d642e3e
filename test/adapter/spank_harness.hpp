// The harness of the SPANK adapter tests (test_spank_m2g.cpp,
// test_spank_m2g_jobmap.cpp): one child process per case, an empty scratch
// directory, the plugin driven as Slurm would, and checks that show what it
// logged. Included once per test program.
#pragma once

#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <setjmp.h>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "spank_fakes.hpp"
#include "core/base/error.hpp"

extern char** environ;

namespace {

// ---------------------------------------------------------------------------
// One process per case.

inline std::string g_scratch;  // the case's empty scratch directory (child only)

inline int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

inline std::string read_all_fd(int fd)
{
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0)
            out.append(buf, static_cast<size_t>(n));
        else if (n == 0 || errno != EINTR)
            break;
    }
    return out;
}

// Runs `body` in a child process; true when it passed, else its report is
// printed as TAP diagnostics. Every object here is destroyed on return, so
// the caller's fail() (a longjmp) leaks nothing into later cases' children,
// whose leak check at exit would otherwise report it.
inline bool run_case(CMUnitTestFunction body)
{
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/m2g-spank-test.XXXXXX";
    if (!::mkdtemp(&templ[0]))
        fail_msg("mkdtemp %s: %s", templ.c_str(), std::strerror(errno));
    int fds[2];
    if (::pipe(fds) != 0)
        fail_msg("pipe: %s", std::strerror(errno));
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0)
        fail_msg("fork: %s", std::strerror(errno));
    if (pid == 0) {
        ::close(fds[0]);
        ::dup2(fds[1], STDOUT_FILENO);
        ::dup2(fds[1], STDERR_FILENO);
        ::close(fds[1]);
        ::alarm(60);
        g_scratch = templ;
        cmocka_set_message_output(CM_OUTPUT_STDOUT);
        const CMUnitTest one[] = {{"case", body, nullptr, nullptr, nullptr}};
        const int failed = _cmocka_run_group_tests("case", one, 1, nullptr, nullptr);
        std::fflush(stdout);
        std::fflush(stderr);
        std::exit(failed ? 1 : 0);  // exit, not _exit: sanitizers check for leaks at exit
    }
    ::close(fds[1]);
    const std::string output = read_all_fd(fds[0]);
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::nftw(templ.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return true;
    // The child's report as TAP diagnostics: "# " lines on stdout (CMocka
    // 1.1.5 sends fail_msg() text to stderr, which the TAP driver only
    // copies to the log), then fail the case.
    const std::string why = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                : "exit status " + std::to_string(WEXITSTATUS(status));
    std::printf("# case process failed (%s):\n", why.c_str());
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);)
        std::printf("#   %s\n", line.c_str());
    std::fflush(stdout);
    return false;
}

inline void run_isolated(CMUnitTestFunction body)
{
    if (!run_case(body))
        fail();
}

template <void (*Body)(void**)>
inline void isolated(void**)
{
    run_isolated(Body);
}

#define CASE(f) CMUnitTest{#f, isolated<f>, nullptr, nullptr, nullptr}

// ---------------------------------------------------------------------------
// Checks that show what the plugin logged when they fail.

// (stderr is the pipe to the parent; CMocka's print_error would cut long
// lines at 1024 bytes.)
#define FAIL_WITH(...)                                                                  \
    do {                                                                               \
        std::fprintf(stderr, __VA_ARGS__);                                             \
        std::fprintf(stderr, "\n%s", fake::transcript().c_str());                      \
        std::fflush(stderr);                                                           \
        _fail(__FILE__, __LINE__);                                                     \
    } while (0)

#define EXPECT_RC(expr, want)                                                          \
    do {                                                                               \
        const int rc_ = (expr);                                                        \
        if (rc_ != (want))                                                             \
            FAIL_WITH("%s returned %d, expected %d", #expr, rc_, (want));              \
    } while (0)

// `got` (an optional string) holds `want`, or is empty when want is nullptr.
// `want` copied at once: a caller's `(a + b).c_str()` dies with the full
// expression (ASan found one such use after free).
inline std::optional<std::string> opt_of(const char* s)
{
    return s ? std::optional<std::string>(s) : std::nullopt;
}

#define EXPECT_OPT(got, want)                                                          \
    do {                                                                               \
        const std::optional<std::string> got_ = (got);                                 \
        const std::optional<std::string> want_ = opt_of(want);                         \
        if (want_ ? !got_ || *got_ != *want_ : got_.has_value())                       \
            FAIL_WITH("%s is %s%s%s, expected %s%s%s", #got, got_ ? "'" : "",          \
                      got_ ? got_->c_str() : "absent", got_ ? "'" : "", want_ ? "'" : "", \
                      want_ ? want_->c_str() : "absent", want_ ? "'" : "");            \
    } while (0)

#define EXPECT_STR(got, want)                                                          \
    do {                                                                               \
        const std::string got_ = (got), want_ = (want);                                \
        if (got_ != want_)                                                             \
            FAIL_WITH("%s is\n  '%s'\nexpected\n  '%s'", #got, got_.c_str(), want_.c_str()); \
    } while (0)

#define EXPECT_NO_MESSAGES()                                                           \
    do {                                                                               \
        if (!fake::state().errors.empty() || !fake::state().infos.empty())             \
            FAIL_WITH("expected no slurm_error or slurm_info");                        \
    } while (0)

// Exactly one slurm_error, equal to `want`.
#define EXPECT_ERROR(want)                                                             \
    do {                                                                               \
        const std::string want_e_ = (want);                                            \
        const auto& errs_ = fake::state().errors;                                      \
        if (errs_.size() != 1 || errs_[0] != want_e_)                                  \
            FAIL_WITH("expected exactly one slurm_error:\n  '%s'", want_e_.c_str());   \
    } while (0)

// Exactly one slurm_error, containing every one of the fragments.
#define EXPECT_ERROR_HAS(...)                                                          \
    do {                                                                               \
        const auto& errs_ = fake::state().errors;                                      \
        if (errs_.size() != 1)                                                         \
            FAIL_WITH("expected exactly one slurm_error");                             \
        for (const char* frag_ : {__VA_ARGS__})                                        \
            if (errs_[0].find(frag_) == std::string::npos)                             \
                FAIL_WITH("the slurm_error does not contain '%s'", frag_);             \
    } while (0)

using EnvList = std::vector<std::pair<std::string, std::string>>;

inline std::string show(const EnvList& l)
{
    std::string out;
    for (const auto& [k, v] : l)
        out += "  " + k + "=" + v + "\n";
    return out.empty() ? "  (none)\n" : out;
}

inline EnvList job_control_list()
{
    EnvList out;
    for (const fake::EnvSet& e : fake::state().job_control_env)
        out.emplace_back(e.name, e.value);
    return out;
}

inline EnvList setenv_list()
{
    EnvList out;
    for (const fake::EnvSet& e : fake::state().setenv_calls)
        out.emplace_back(e.name, e.value);
    return out;
}

#define EXPECT_ENV_LIST(got, ...)                                                      \
    do {                                                                               \
        const EnvList got_l_ = (got), want_l_ = EnvList{__VA_ARGS__};                  \
        if (got_l_ != want_l_)                                                         \
            FAIL_WITH("%s is\n%sexpected\n%s", #got, show(got_l_).c_str(), show(want_l_).c_str()); \
    } while (0)

// ---------------------------------------------------------------------------
// Driving the plugin as Slurm would.

const char* const kPrefixes[] = {"M2G_", "SPANK_M2G_", "SLURM_SPANK_M2G_"};
const char* const kSlurmVars[] = {"SLURM_JOB_ID", "SLURM_JOB_GPUS", "SLURMD_NODENAME", "OTEL_RESOURCE_ATTRIBUTES"};

// This process's environment without anything the plugin reads.
inline void clean_env()
{
    std::vector<std::string> names;
    for (char** e = environ; e && *e; ++e) {
        const std::string entry(*e);
        const std::string name = entry.substr(0, entry.find('='));
        for (const char* p : kPrefixes)
            if (name.rfind(p, 0) == 0)
                names.push_back(name);
    }
    for (const char* v : kSlurmVars)
        names.emplace_back(v);
    for (const std::string& n : names)
        ::unsetenv(n.c_str());
}

inline void start(spank_context_t ctx)
{
    fake::reset();
    clean_env();
    fake::state().context = ctx;
}

struct Argv {
    std::vector<std::string> args;
    std::vector<char*> ptrs;
    explicit Argv(std::vector<std::string> a) : args(std::move(a))
    {
        for (std::string& s : args)
            ptrs.push_back(&s[0]);
        ptrs.push_back(nullptr);
    }
    int argc() const { return static_cast<int>(args.size()); }
    char** argv() { return ptrs.data(); }
};

inline int call_init(std::vector<std::string> args = {})
{
    Argv a(std::move(args));
    fake::state().phase_init = true;
    const int rc = slurm_spank_init(fake::handle(), a.argc(), a.argv());
    fake::state().phase_init = false;
    return rc;
}

inline int call(spank_f* fn, std::vector<std::string> args = {})
{
    Argv a(std::move(args));
    return fn(fake::handle(), a.argc(), a.argv());
}

inline std::optional<std::string> read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void write_file(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out)
        fail_msg("cannot write %s", path.c_str());
}

inline void make_dir(const std::string& path)
{
    if (::mkdir(path.c_str(), 0755) != 0)
        fail_msg("mkdir %s: %s", path.c_str(), std::strerror(errno));
}

inline void make_symlink(const std::string& target, const std::string& path)
{
    if (::symlink(target.c_str(), path.c_str()) != 0)
        fail_msg("symlink %s: %s", path.c_str(), std::strerror(errno));
}

inline bool exists(const std::string& path)
{
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

inline bool is_symlink(const std::string& path)
{
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

inline void set_env(const char* name, const char* value)
{
    if (::setenv(name, value, 1) != 0)
        fail_msg("setenv %s", name);
}

}  // namespace
