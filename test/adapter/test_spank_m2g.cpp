// CMocka tests of the SPANK adapter src/plugins/spank_m2g/spank_m2g.cpp,
// linked against link-seam fakes of the Slurm calls it makes
// (spank_fakes.cpp) and the real core (libm2gcore).
//
// The plugin keeps per-process state (the options seen, the resolved
// intent), as Slurm runs one job or step per process. So every case runs in
// a child process of its own (run_isolated): the parent never calls into
// the plugin, each child starts from a fresh plugin, fresh fakes, an
// environment without M2G_*/SPANK_* variables and an empty scratch
// directory that the parent removes afterwards. Output is TAP, one line per
// case; a failing child's CMocka report becomes the case's "# " diagnostics.
//
// Two cases pin defects found while writing these tests and since fixed:
// a long OTEL_RESOURCE_ATTRIBUTES was replaced instead of extended, and a
// malformed SPANK_M2G_* entry failed the epilog before it cleaned up.
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
#include "core/job/intent.hpp"

extern char** environ;

namespace {

// ---------------------------------------------------------------------------
// One process per case.

std::string g_scratch;  // the case's empty scratch directory (child only)

int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

std::string read_all_fd(int fd)
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
bool run_case(CMUnitTestFunction body)
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

void run_isolated(CMUnitTestFunction body)
{
    if (!run_case(body))
        fail();
}

template <void (*Body)(void**)>
void isolated(void**)
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
std::optional<std::string> opt_of(const char* s)
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

std::string show(const EnvList& l)
{
    std::string out;
    for (const auto& [k, v] : l)
        out += "  " + k + "=" + v + "\n";
    return out.empty() ? "  (none)\n" : out;
}

EnvList job_control_list()
{
    EnvList out;
    for (const fake::EnvSet& e : fake::state().job_control_env)
        out.emplace_back(e.name, e.value);
    return out;
}

EnvList setenv_list()
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
void clean_env()
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

void start(spank_context_t ctx)
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

int call_init(std::vector<std::string> args = {})
{
    Argv a(std::move(args));
    fake::state().phase_init = true;
    const int rc = slurm_spank_init(fake::handle(), a.argc(), a.argv());
    fake::state().phase_init = false;
    return rc;
}

int call(spank_f* fn, std::vector<std::string> args = {})
{
    Argv a(std::move(args));
    return fn(fake::handle(), a.argc(), a.argv());
}

// The core's message for --option=value (the adapter must pass it on as is).
std::string core_message(const char* option, const char* value)
{
    m2g::JobIntent scratch;
    try {
        m2g::apply_option(scratch, option, value, static_cast<int64_t>(std::time(nullptr)));
    } catch (const m2g::ParseError& e) {
        return e.what();
    }
    fail_msg("the core accepts --%s=%s", option, value);
    return "";
}

// Give --option=bad: the callback fails and logs the core's message.
#define EXPECT_OPTION_REJECTED(option, bad)                                            \
    do {                                                                               \
        fake::state().errors.clear();                                                  \
        EXPECT_RC(fake::give_option(option, bad), -1);                                 \
        EXPECT_ERROR("m2g: " + core_message(option, bad));                             \
        EXPECT_ERROR_HAS("m2g: --" option "=" bad ": ");                               \
        fake::state().errors.clear();                                                  \
    } while (0)

std::optional<std::string> read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out)
        fail_msg("cannot write %s", path.c_str());
}

void make_dir(const std::string& path)
{
    if (::mkdir(path.c_str(), 0755) != 0)
        fail_msg("mkdir %s: %s", path.c_str(), std::strerror(errno));
}

void make_symlink(const std::string& target, const std::string& path)
{
    if (::symlink(target.c_str(), path.c_str()) != 0)
        fail_msg("symlink %s: %s", path.c_str(), std::strerror(errno));
}

bool exists(const std::string& path)
{
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

bool is_symlink(const std::string& path)
{
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

void set_env(const char* name, const char* value)
{
    if (::setenv(name, value, 1) != 0)
        fail_msg("setenv %s", name);
}

const char* const kCatalog =
    "# test catalog\n"
    "RecipeName=llama3-70b-finetune Model=llama-3.1-70b Params=70B Precision=bf16 \\\n"
    "    TP=8 PP=1 DP=2 Gpus=16 Topology=strict:nvlink Segment=2 Class=finetune Defer=ok \\\n"
    "    PowerPerGpuW=950 Runtime=12:00:00 Description=\"70B bf16 fine-tune\"\n"
    "RecipeName=gpu-benchmark Gpus=1 Topology=any Class=benchmark Defer=ok \\\n"
    "    PowerPerGpuW=1150 Runtime=00:30:00\n";

std::string write_catalog()
{
    const std::string path = g_scratch + "/m2g-recipes.conf";
    write_file(path, kCatalog);
    return path;
}

// ---------------------------------------------------------------------------
// Option registration.

struct ExpectedOption {
    const char* name;
    const char* arginfo;  // nullptr: a flag
};

const ExpectedOption kOptions[] = {
    {"m2g-topology", "strict|prefer|any[:nvlink|leaf|spine]"},
    {"m2g-segment", "N"},
    {"m2g-class", "training|finetune|inference|batch|benchmark|dataproc|agentic"},
    {"m2g-recipe", "NAME"},
    {"m2g-defer", "ok|no|until=TIME"},
    {"m2g-tag", "KEY=VALUE"},
    {"m2g-explain", nullptr},
};

void expect_all_options_registered(spank_context_t ctx)
{
    start(ctx);
    EXPECT_RC(call_init(), 0);
    EXPECT_NO_MESSAGES();
    const auto& opts = fake::state().options;
    const size_t n = sizeof kOptions / sizeof kOptions[0];
    if (opts.size() != n)
        FAIL_WITH("%zu options registered, expected %zu", opts.size(), n);
    for (size_t i = 0; i < n; ++i) {
        const fake::Option& o = opts[i];
        EXPECT_STR(o.name, kOptions[i].name);
        if (kOptions[i].arginfo) {
            EXPECT_OPT(o.arginfo, kOptions[i].arginfo);
            assert_int_equal(o.has_arg, 1);
        } else {
            EXPECT_OPT(o.arginfo, nullptr);
            assert_int_equal(o.has_arg, 0);
        }
        if (o.usage.rfind("[m2g] ", 0) != 0 || o.usage.size() < 20)
            FAIL_WITH("--%s: usage '%s' is not an [m2g] help text", o.name.c_str(), o.usage.c_str());
        assert_non_null(o.cb);
        for (size_t j = 0; j < i; ++j)
            if (opts[j].val == o.val)
                FAIL_WITH("--%s and --%s share val %d", opts[j].name.c_str(), o.name.c_str(), o.val);
    }
    assert_int_equal(fake::state().bad_handle, 0);
}

void test_registers_options_in_local_context(void**) { expect_all_options_registered(S_CTX_LOCAL); }
void test_registers_options_in_allocator_context(void**) { expect_all_options_registered(S_CTX_ALLOCATOR); }
void test_registers_options_in_remote_context(void**) { expect_all_options_registered(S_CTX_REMOTE); }

void test_registers_nothing_in_slurmd_context(void**)
{
    start(S_CTX_SLURMD);
    EXPECT_RC(call_init({"recipes=/etc/slurm/m2g-recipes.conf"}), 0);
    assert_int_equal(fake::state().option_register_calls, 0);
    EXPECT_NO_MESSAGES();
}

void test_registers_nothing_in_job_script_context(void**)
{
    start(S_CTX_JOB_SCRIPT);
    EXPECT_RC(call_init(), 0);
    assert_int_equal(fake::state().option_register_calls, 0);
    EXPECT_NO_MESSAGES();
}

void test_registration_failure_fails_init(void**)
{
    start(S_CTX_ALLOCATOR);
    fake::state().option_register_rc = ESPANK_ERROR;
    EXPECT_RC(call_init(), -1);
    EXPECT_ERROR("m2g: cannot register --m2g-topology");
}

// ---------------------------------------------------------------------------
// plugstack.conf arguments.

void test_init_rejects_unknown_plugstack_key(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init({"recipes=/etc/slurm/m2g-recipes.conf", "colour=/blue"}), -1);
    EXPECT_ERROR("m2g: spank_m2g.so: plugstack.conf argument 'colour=/blue': unknown key 'colour'; "
                 "accepted keys: recipes, dcgm_dir, textfile_dir");
    assert_int_equal(fake::state().option_register_calls, 0);
}

void test_init_rejects_relative_path(void**)
{
    start(S_CTX_REMOTE);
    EXPECT_RC(call_init({"dcgm_dir=run/dcgm"}), -1);
    EXPECT_ERROR_HAS("m2g: spank_m2g.so: ", "'dcgm_dir=run/dcgm'", "dcgm_dir needs an absolute path");
}

void test_init_rejects_argument_without_value_separator(void**)
{
    start(S_CTX_LOCAL);
    EXPECT_RC(call_init({"verbose"}), -1);
    EXPECT_ERROR_HAS("m2g: spank_m2g.so: ", "'verbose' is not key=value");
}

void test_init_accepts_every_key(void**)
{
    start(S_CTX_LOCAL);
    EXPECT_RC(call_init({"recipes=/etc/slurm/m2g-recipes.conf", "dcgm_dir=/run/dcgm-job-map/%n",
                         "textfile_dir=/var/lib/node_exporter/textfile"}),
              0);
    EXPECT_NO_MESSAGES();
    assert_int_equal(fake::state().options.size(), 7);
}

// ---------------------------------------------------------------------------
// Option callbacks: a good value is taken, a bad one is refused with the
// core's message; the refused value leaves no trace in what is passed on.

void test_option_topology(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-topology", "prefer:leaf"), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-topology", "tight");
    EXPECT_OPTION_REJECTED("m2g-topology", "strict:");
    EXPECT_OPTION_REJECTED("m2g-topology", "strict:rack");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TOPOLOGY", "prefer:leaf"});
}

void test_option_segment(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-segment", "18"), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-segment", "0");
    EXPECT_OPTION_REJECTED("m2g-segment", "eighteen");
    EXPECT_OPTION_REJECTED("m2g-segment", "4097");
    EXPECT_OPTION_REJECTED("m2g-segment", "-1");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list(), {"M2G_SEGMENT", "18"});
}

void test_option_class(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "inference"), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-class", "gaming");
    EXPECT_OPTION_REJECTED("m2g-class", "Training");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list(), {"M2G_CLASS", "inference"});
}

void test_option_recipe(void**)
{
    start(S_CTX_ALLOCATOR);
    const std::string catalog = write_catalog();
    EXPECT_RC(call_init({"recipes=" + catalog}), 0);
    EXPECT_RC(fake::give_option("m2g-recipe", "gpu-benchmark"), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-recipe", "Llama 70B");
    EXPECT_OPTION_REJECTED("m2g-recipe", "../etc/passwd");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_OPT(fake::job_control("M2G_RECIPE"), "gpu-benchmark");
}

void test_option_defer(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-defer", "ok"), 0);
    const int64_t before = static_cast<int64_t>(std::time(nullptr));
    EXPECT_RC(fake::give_option("m2g-defer", "until=now+2h"), 0);
    const int64_t after = static_cast<int64_t>(std::time(nullptr));
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-defer", "maybe");
    EXPECT_OPTION_REJECTED("m2g-defer", "until=2001-01-01T00:00");
    EXPECT_OPTION_REJECTED("m2g-defer", "until=tomorrow");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    const std::optional<std::string> defer = fake::job_control("M2G_DEFER");
    if (!defer || defer->rfind("until=", 0) != 0)
        FAIL_WITH("M2G_DEFER is %s, expected until=<epoch>", defer ? defer->c_str() : "absent");
    const long long until = std::atoll(defer->c_str() + 6);
    if (until < before + 7200 || until > after + 7200)
        FAIL_WITH("M2G_DEFER=%s is not two hours from now", defer->c_str());
    assert_int_equal(job_control_list().size(), 1);
}

void test_option_tag(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-tag", "tenant=acme"), 0);
    EXPECT_RC(fake::give_option("m2g-tag", "project=x"), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-tag", "tenant");
    EXPECT_OPTION_REJECTED("m2g-tag", "Tenant=acme");
    EXPECT_OPTION_REJECTED("m2g-tag", "tenant=a b");
    EXPECT_OPTION_REJECTED("m2g-tag", "tenant=");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TAGS", "tenant=acme,project=x"});
}

// A flag: Slurm passes no value (and a placeholder when forwarding it to
// steps); either is accepted, as the core ignores it.
void test_option_explain(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-explain", nullptr), 0);
    EXPECT_RC(fake::give_option("m2g-explain", "(null)", 1), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list(), {"M2G_EXPLAIN", "1"});
}

void test_option_callback_rejects_unknown_val(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    const fake::Option* o = fake::option("m2g-class");
    assert_non_null(o);
    EXPECT_RC(o->cb(99, "training", 0), -1);
    EXPECT_RC(o->cb(-1, "training", 0), -1);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list());
}

// ---------------------------------------------------------------------------
// Allocator (sbatch, salloc) and local (srun) context: resolution and the
// spank_job_env keys.

void test_allocator_writes_documented_keys(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(fake::give_option("m2g-topology", "strict"), 0);
    EXPECT_RC(fake::give_option("m2g-segment", "18"), 0);
    EXPECT_RC(fake::give_option("m2g-defer", "ok"), 0);
    EXPECT_RC(fake::give_option("m2g-tag", "tenant=acme"), 0);
    EXPECT_RC(fake::give_option("m2g-tag", "project=x"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TOPOLOGY", "strict:nvlink"}, {"M2G_SEGMENT", "18"},
                    {"M2G_CLASS", "training"}, {"M2G_DEFER", "ok"}, {"M2G_TAGS", "tenant=acme,project=x"});
    for (const fake::EnvSet& e : fake::state().job_control_env)
        assert_int_equal(e.overwrite, 1);
    assert_int_equal(fake::state().setenv_calls.size(), 0);
    assert_int_equal(fake::state().bad_handle, 0);
}

void test_allocator_without_options_writes_nothing(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list());
}

void test_local_context_writes_keys(void**)
{
    start(S_CTX_LOCAL);
    set_env("SLURM_JOB_ID", "12");  // srun inside an allocation
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "inference"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_CLASS", "inference"});
}

void test_allocator_env_defaults_fill_options_not_given(void**)
{
    start(S_CTX_ALLOCATOR);
    set_env("M2G_CLASS", "inference");
    set_env("M2G_TOPOLOGY", "prefer:leaf");
    set_env("M2G_SEGMENT", "4");
    set_env("M2G_TAGS", "tenant=envco,team=ml");
    set_env("M2G_DEFER", "");  // empty: not set
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(fake::give_option("m2g-tag", "tenant=acme"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TOPOLOGY", "prefer:leaf"}, {"M2G_SEGMENT", "4"},
                    {"M2G_CLASS", "training"}, {"M2G_TAGS", "tenant=acme,team=ml"});
}

void test_allocator_env_default_ignored_for_given_option(void**)
{
    start(S_CTX_ALLOCATOR);
    set_env("M2G_CLASS", "gaming");  // would be refused, but the option is given
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_CLASS", "training"});
}

void test_allocator_bad_env_default_fails(void**)
{
    start(S_CTX_ALLOCATOR);
    set_env("M2G_SEGMENT", "lots");
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), -1);
    EXPECT_ERROR("m2g: options: environment M2G_SEGMENT=lots: " + core_message("m2g-segment", "lots"));
    EXPECT_ENV_LIST(job_control_list());
}

void test_allocator_recipe_expands_under_options(void**)
{
    start(S_CTX_ALLOCATOR);
    const std::string catalog = write_catalog();
    EXPECT_RC(call_init({"recipes=" + catalog}), 0);
    EXPECT_RC(fake::give_option("m2g-recipe", "llama3-70b-finetune"), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);  // wins over Class=finetune
    EXPECT_RC(fake::give_option("m2g-tag", "tenant=acme"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TOPOLOGY", "strict:nvlink"}, {"M2G_SEGMENT", "2"},
                    {"M2G_CLASS", "training"}, {"M2G_RECIPE", "llama3-70b-finetune"}, {"M2G_DEFER", "ok"},
                    {"M2G_TAGS", "tenant=acme"}, {"M2G_MODEL", "llama-3.1-70b"}, {"M2G_GPUS", "16"},
                    {"M2G_POWER_W_PER_GPU", "950"}, {"M2G_RUNTIME_S", "43200"}, {"M2G_GPU_MULTIPLE", "8"});
}

void test_allocator_recipe_from_environment(void**)
{
    start(S_CTX_ALLOCATOR);
    const std::string catalog = write_catalog();
    set_env("M2G_RECIPE", "gpu-benchmark");
    set_env("M2G_DEFER", "no");  // the environment wins over the recipe's Defer=ok
    EXPECT_RC(call_init({"recipes=" + catalog}), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TOPOLOGY", "any"}, {"M2G_CLASS", "benchmark"},
                    {"M2G_RECIPE", "gpu-benchmark"}, {"M2G_DEFER", "no"}, {"M2G_GPUS", "1"},
                    {"M2G_POWER_W_PER_GPU", "1150"}, {"M2G_RUNTIME_S", "1800"});
}

void test_allocator_unknown_recipe_names_catalog(void**)
{
    start(S_CTX_ALLOCATOR);
    const std::string catalog = write_catalog();
    EXPECT_RC(call_init({"recipes=" + catalog}), 0);
    EXPECT_RC(fake::give_option("m2g-recipe", "nope"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), -1);
    EXPECT_ERROR("m2g: options: --m2g-recipe=nope: no such recipe in " + catalog +
                 "; known: llama3-70b-finetune, gpu-benchmark");
    EXPECT_ENV_LIST(job_control_list());
}

void test_allocator_missing_catalog_names_path(void**)
{
    start(S_CTX_ALLOCATOR);
    const std::string catalog = g_scratch + "/absent.conf";
    EXPECT_RC(call_init({"recipes=" + catalog}), 0);
    EXPECT_RC(fake::give_option("m2g-recipe", "gpu-benchmark"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), -1);
    EXPECT_ERROR_HAS("m2g: options: ", catalog.c_str(), "cannot open");
    EXPECT_ENV_LIST(job_control_list());
}

void test_allocator_catalog_not_read_without_recipe(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init({"recipes=" + g_scratch + "/absent.conf"}), 0);
    EXPECT_RC(fake::give_option("m2g-class", "batch"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_CLASS", "batch"});
}

void test_allocator_explain_prints_info(void**)
{
    start(S_CTX_ALLOCATOR);
    set_env("SLURM_JOB_ID", "5");  // ignored: an allocator always submits
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(fake::give_option("m2g-explain", nullptr), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    assert_int_equal(fake::state().errors.size(), 0);
    if (fake::state().infos.size() != 1 || fake::state().infos[0] != "m2g: job intent: class=training explain=1")
        FAIL_WITH("expected one slurm_info 'm2g: job intent: class=training explain=1'");
    EXPECT_ENV_LIST(job_control_list(), {"M2G_CLASS", "training"}, {"M2G_EXPLAIN", "1"});
}

void test_allocator_explain_from_environment(void**)
{
    start(S_CTX_ALLOCATOR);
    set_env("M2G_EXPLAIN", "1");
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    if (fake::state().infos.size() != 1 || fake::state().infos[0] != "m2g: job intent: explain=1")
        FAIL_WITH("expected one slurm_info 'm2g: job intent: explain=1'");
}

void test_local_explain_only_when_submitting(void**)
{
    start(S_CTX_LOCAL);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-explain", nullptr), 0);
    set_env("SLURM_JOB_ID", "12");  // srun inside an allocation: a step, nothing to explain
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    ::unsetenv("SLURM_JOB_ID");  // srun that submits its own job
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    if (fake::state().infos.size() != 1 || fake::state().infos[0] != "m2g: job intent: explain=1")
        FAIL_WITH("expected one slurm_info 'm2g: job intent: explain=1'");
}

void test_allocator_no_info_without_explain(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
}

void test_allocator_job_control_setenv_failure(void**)
{
    start(S_CTX_ALLOCATOR);
    fake::state().job_control_setenv_rc = ESPANK_ERROR;
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), -1);
    EXPECT_ERROR("m2g: cannot pass M2G_CLASS to the job");
}

void test_post_opt_does_nothing_in_slurmd_and_job_script(void**)
{
    for (spank_context_t ctx : {S_CTX_SLURMD, S_CTX_JOB_SCRIPT}) {
        start(ctx);
        set_env("M2G_CLASS", "gaming");  // not read there
        EXPECT_RC(call_init(), 0);
        EXPECT_RC(call(slurm_spank_init_post_opt), 0);
        EXPECT_NO_MESSAGES();
        EXPECT_ENV_LIST(job_control_list());
        assert_int_equal(fake::state().setenv_calls.size(), 0);
        assert_int_equal(fake::state().get_item_calls.size(), 0);
    }
}

// ---------------------------------------------------------------------------
// Remote context (slurmstepd): the submitted intent and the task environment.

void test_remote_decodes_job_env_and_sets_task_env(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 4242;
    fake::state().job_env = {
        "PATH=/usr/bin:/bin",
        "SLURM_SPANK_M2G_TOPOLOGY=strict:nvlink",
        "SLURM_SPANK_M2G_CLASS=training",
        "SLURM_SPANK_M2G_TAGS=tenant=acme,project=x",
        "SLURM_SPANK_M2G_EXPLAIN=1",
        "SLURM_SPANK_M2G_MODEL=llama-3.1-70b",
        "OTEL_RESOURCE_ATTRIBUTES=service.name=trainer",
    };
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list());
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(setenv_list(), {"M2G_TOPOLOGY", "strict:nvlink"}, {"M2G_CLASS", "training"},
                    {"M2G_TAGS", "tenant=acme,project=x"}, {"M2G_MODEL", "llama-3.1-70b"}, {"M2G_JOB_ID", "4242"},
                    {"OTEL_RESOURCE_ATTRIBUTES",
                     "service.name=trainer,slurm.job.id=4242,m2g.class=training,m2g.tenant=acme,"
                     "m2g.model=llama-3.1-70b"});
    EXPECT_OPT(fake::task_env("M2G_EXPLAIN"), nullptr);
    for (const fake::EnvSet& e : fake::state().setenv_calls)
        assert_int_equal(e.overwrite, 1);
    assert_int_equal(fake::state().bad_handle, 0);
}

void test_remote_job_env_wins_over_forwarded_options(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 7;
    fake::state().job_env = {"SLURM_SPANK_M2G_CLASS=training", "M2G_SEGMENT=4"};
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "inference", 1), 0);  // forwarded: only the last value
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(setenv_list(), {"M2G_CLASS", "training"}, {"M2G_JOB_ID", "7"},
                    {"OTEL_RESOURCE_ATTRIBUTES", "slurm.job.id=7,m2g.class=training"});
}

void test_remote_without_submitted_intent_resolves(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 99;
    fake::state().job_env = {"M2G_SEGMENT=4", "M2G_CLASS=batch", "HOME=/home/u"};
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training", 1), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(setenv_list(), {"M2G_SEGMENT", "4"}, {"M2G_CLASS", "training"}, {"M2G_JOB_ID", "99"},
                    {"OTEL_RESOURCE_ATTRIBUTES", "slurm.job.id=99,m2g.class=training"});
}

void test_remote_malformed_job_env_fails(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 3;
    fake::state().job_env = {"SLURM_SPANK_M2G_CLASS=gaming"};
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), -1);
    EXPECT_ERROR("m2g: job environment: spank_job_env M2G_CLASS=gaming: unknown class");
}

void test_user_init_keeps_existing_otel_keys(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 7;
    fake::state().job_env = {"SLURM_SPANK_M2G_CLASS=training", "SLURM_SPANK_M2G_TAGS=tenant=acme",
                             "OTEL_RESOURCE_ATTRIBUTES=service.name=x,m2g.class=mine"};
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPT(fake::task_env("OTEL_RESOURCE_ATTRIBUTES"),
               "service.name=x,m2g.class=mine,slurm.job.id=7,m2g.tenant=acme");
    EXPECT_OPT(fake::job_getenv("OTEL_RESOURCE_ATTRIBUTES"),
               "service.name=x,m2g.class=mine,slurm.job.id=7,m2g.tenant=acme");
}

void test_user_init_job_id_from_environment(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id.reset();  // S_JOB_ID not available
    set_env("SLURM_JOB_ID", "31337");
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(setenv_list(), {"M2G_JOB_ID", "31337"}, {"OTEL_RESOURCE_ATTRIBUTES", "slurm.job.id=31337"});
}

// Regression: an OTEL_RESOURCE_ATTRIBUTES of 8192 bytes or more must still
// be extended, not replaced.
void test_user_init_extends_long_otel(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 8;
    const std::string existing = "service.name=x,big=" + std::string(9000, 'a');
    fake::state().job_env = {"OTEL_RESOURCE_ATTRIBUTES=" + existing};
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_OPT(fake::task_env("OTEL_RESOURCE_ATTRIBUTES"), (existing + ",slurm.job.id=8").c_str());
}

// ---------------------------------------------------------------------------
// Prolog and epilog (job script context, root): dcgm-exporter mapping files
// and the node_exporter textfile.

struct ScriptSetup {
    std::string dcgm_root, text_root;  // <scratch>/dcgm, <scratch>/text
    std::string dcgm, text;            // .../node01
    std::vector<std::string> args;
};

ScriptSetup script_setup(uint32_t job_id, const char* gpus, bool dcgm = true, bool textfile = true)
{
    start(S_CTX_JOB_SCRIPT);
    ScriptSetup s;
    s.dcgm_root = g_scratch + "/dcgm";
    s.text_root = g_scratch + "/text";
    s.dcgm = s.dcgm_root + "/node01";
    s.text = s.text_root + "/node01";
    make_dir(s.dcgm_root);
    make_dir(s.text_root);
    if (dcgm)
        s.args.push_back("dcgm_dir=" + s.dcgm_root + "/%n");
    if (textfile)
        s.args.push_back("textfile_dir=" + s.text_root + "/%n");
    fake::state().job_id = job_id;
    set_env("SLURMD_NODENAME", "node01");
    if (gpus)
        set_env("SLURM_JOB_GPUS", gpus);
    set_env("SPANK_M2G_CLASS", "training");
    set_env("SPANK_M2G_TAGS", "tenant=acme,project=x");
    return s;
}

void test_prolog_epilog_dcgm_and_textfile(void**)
{
    ScriptSetup s = script_setup(77, "0,2");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPT(read_file(s.dcgm + "/0"), "77\n");
    EXPECT_OPT(read_file(s.dcgm + "/2"), "77\n");
    assert_false(exists(s.dcgm + "/1"));
    EXPECT_OPT(read_file(s.text + "/m2g_job_77.prom"),
               "# HELP m2g_job_info A Slurm job running on this node, with its m2g class and tags.\n"
               "# TYPE m2g_job_info gauge\n"
               "m2g_job_info{job_id=\"77\",node=\"node01\",class=\"training\",recipe=\"\",tenant=\"acme\","
               "project=\"x\",model=\"\"} 1\n");
    assert_false(exists(s.text + "/m2g_job_77.prom.tmp"));

    EXPECT_RC(call(slurm_spank_job_epilog, s.args), 0);
    EXPECT_NO_MESSAGES();
    assert_false(exists(s.dcgm + "/0"));
    assert_false(exists(s.dcgm + "/2"));
    assert_false(exists(s.text + "/m2g_job_77.prom"));
}

void test_prolog_gpu_range_and_job_id_from_environment(void**)
{
    ScriptSetup s = script_setup(0, "1-3", true, false);
    fake::state().job_id.reset();  // S_JOB_ID not available: SLURM_JOB_ID
    set_env("SLURM_JOB_ID", "501");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    EXPECT_NO_MESSAGES();
    assert_false(exists(s.dcgm + "/0"));
    for (const char* g : {"/1", "/2", "/3"})
        EXPECT_OPT(read_file(s.dcgm + g), "501\n");
    assert_false(exists(s.text));
}

void test_prolog_shared_gpu_keeps_other_jobs(void**)
{
    ScriptSetup s = script_setup(77, "0,2");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    fake::state().job_id = 78;
    set_env("SLURM_JOB_GPUS", "0,1");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    EXPECT_OPT(read_file(s.dcgm + "/0"), "77\n78\n");
    EXPECT_OPT(read_file(s.dcgm + "/1"), "78\n");
    EXPECT_OPT(read_file(s.dcgm + "/2"), "77\n");

    fake::state().job_id = 77;
    set_env("SLURM_JOB_GPUS", "0,2");
    EXPECT_RC(call(slurm_spank_job_epilog, s.args), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPT(read_file(s.dcgm + "/0"), "78\n");
    EXPECT_OPT(read_file(s.dcgm + "/1"), "78\n");
    assert_false(exists(s.dcgm + "/2"));
    assert_false(exists(s.text + "/m2g_job_77.prom"));
    assert_true(exists(s.text + "/m2g_job_78.prom"));
}

void test_prolog_without_gpus_writes_textfile_only(void**)
{
    ScriptSetup s = script_setup(60, nullptr);
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    EXPECT_NO_MESSAGES();
    assert_false(exists(s.dcgm));
    assert_true(exists(s.text + "/m2g_job_60.prom"));
}

void test_prolog_refuses_symlinked_gpu_file(void**)
{
    ScriptSetup s = script_setup(77, "0", true, false);
    make_dir(s.dcgm);
    const std::string victim = g_scratch + "/victim";
    write_file(victim, "keep\n");
    make_symlink(victim, s.dcgm + "/0");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR("m2g: prolog: cannot open " + s.dcgm + "/0: " + std::strerror(ELOOP));
    EXPECT_OPT(read_file(victim), "keep\n");
    assert_true(is_symlink(s.dcgm + "/0"));

    // A dangling link: the target is not created either.
    fake::state().errors.clear();
    const std::string planted = g_scratch + "/planted";
    make_symlink(planted, s.dcgm + "/1");
    set_env("SLURM_JOB_GPUS", "1");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR("m2g: prolog: cannot open " + s.dcgm + "/1: " + std::strerror(ELOOP));
    assert_false(exists(planted));
}

void test_epilog_refuses_symlinked_gpu_file(void**)
{
    ScriptSetup s = script_setup(77, "0", true, false);
    make_dir(s.dcgm);
    const std::string victim = g_scratch + "/victim";
    write_file(victim, "77\n");
    make_symlink(victim, s.dcgm + "/0");
    EXPECT_RC(call(slurm_spank_job_epilog, s.args), -1);
    EXPECT_ERROR("m2g: epilog: cannot open " + s.dcgm + "/0: " + std::strerror(ELOOP));
    EXPECT_OPT(read_file(victim), "77\n");
    assert_true(is_symlink(s.dcgm + "/0"));
}

void test_prolog_refuses_symlinked_textfile(void**)
{
    ScriptSetup s = script_setup(77, nullptr, false, true);
    make_dir(s.text);
    const std::string victim = g_scratch + "/victim";
    write_file(victim, "keep\n");
    make_symlink(victim, s.text + "/m2g_job_77.prom.tmp");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR("m2g: prolog: cannot create " + s.text + "/m2g_job_77.prom.tmp: " + std::strerror(ELOOP));
    EXPECT_OPT(read_file(victim), "keep\n");
    assert_false(exists(s.text + "/m2g_job_77.prom"));
}

void test_prolog_refuses_symlinked_node_dir(void**)
{
    ScriptSetup s = script_setup(77, "0", true, false);
    const std::string elsewhere = g_scratch + "/elsewhere";
    make_dir(elsewhere);
    make_symlink(elsewhere, s.dcgm);
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR_HAS("m2g: prolog: ", s.dcgm.c_str(), "symbolic links are not followed");
    assert_false(exists(elsewhere + "/0"));
}

void test_prolog_rejects_unsafe_node_name(void**)
{
    ScriptSetup s = script_setup(77, "0");
    set_env("SLURMD_NODENAME", "../../etc");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR_HAS("m2g: prolog: ", "'../../etc'", "not a plain host name");
    assert_false(exists(s.dcgm));
    assert_false(exists(s.text));
    assert_false(exists(g_scratch + "/etc"));
}

void test_prolog_rejects_bad_gpu_list(void**)
{
    ScriptSetup s = script_setup(77, "0,x");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR_HAS("m2g: prolog: ", "GPU list '0,x'");
    assert_false(exists(s.dcgm));
}

void test_prolog_without_directories_does_nothing(void**)
{
    ScriptSetup s = script_setup(77, "0");
    set_env("SPANK_M2G_CLASS", "gaming");  // not even decoded
    EXPECT_RC(call(slurm_spank_job_prolog, {"recipes=/etc/slurm/m2g-recipes.conf"}), 0);
    EXPECT_RC(call(slurm_spank_job_epilog), 0);
    EXPECT_NO_MESSAGES();
    assert_false(exists(s.dcgm));
    assert_false(exists(s.text));
}

void test_prolog_and_epilog_reject_bad_argument(void**)
{
    script_setup(77, "0");
    EXPECT_RC(call(slurm_spank_job_prolog, {"dcgm_dir=relative/dir"}), -1);
    EXPECT_ERROR("m2g: prolog: plugstack.conf argument 'dcgm_dir=relative/dir': dcgm_dir needs an absolute path");
    fake::state().errors.clear();
    EXPECT_RC(call(slurm_spank_job_epilog, {"spool=/x"}), -1);
    EXPECT_ERROR_HAS("m2g: epilog: ", "unknown key 'spool'");
}

// Regression: a malformed SPANK_M2G_* entry must not stop the epilog from
// removing the mapping files.
void test_epilog_cleans_up_despite_malformed_intent(void**)
{
    ScriptSetup s = script_setup(77, "0");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    set_env("SPANK_M2G_CLASS", "gaming");
    EXPECT_RC(call(slurm_spank_job_epilog, s.args), 0);
    assert_false(exists(s.dcgm + "/0"));
    assert_false(exists(s.text + "/m2g_job_77.prom"));
}

}  // namespace

int main()
{
    const CMUnitTest tests[] = {
        // registration
        CASE(test_registers_options_in_local_context),
        CASE(test_registers_options_in_allocator_context),
        CASE(test_registers_options_in_remote_context),
        CASE(test_registers_nothing_in_slurmd_context),
        CASE(test_registers_nothing_in_job_script_context),
        CASE(test_registration_failure_fails_init),
        // plugstack.conf arguments
        CASE(test_init_rejects_unknown_plugstack_key),
        CASE(test_init_rejects_relative_path),
        CASE(test_init_rejects_argument_without_value_separator),
        CASE(test_init_accepts_every_key),
        // option callbacks
        CASE(test_option_topology),
        CASE(test_option_segment),
        CASE(test_option_class),
        CASE(test_option_recipe),
        CASE(test_option_defer),
        CASE(test_option_tag),
        CASE(test_option_explain),
        CASE(test_option_callback_rejects_unknown_val),
        // allocator and local context
        CASE(test_allocator_writes_documented_keys),
        CASE(test_allocator_without_options_writes_nothing),
        CASE(test_local_context_writes_keys),
        CASE(test_allocator_env_defaults_fill_options_not_given),
        CASE(test_allocator_env_default_ignored_for_given_option),
        CASE(test_allocator_bad_env_default_fails),
        CASE(test_allocator_recipe_expands_under_options),
        CASE(test_allocator_recipe_from_environment),
        CASE(test_allocator_unknown_recipe_names_catalog),
        CASE(test_allocator_missing_catalog_names_path),
        CASE(test_allocator_catalog_not_read_without_recipe),
        CASE(test_allocator_explain_prints_info),
        CASE(test_allocator_explain_from_environment),
        CASE(test_local_explain_only_when_submitting),
        CASE(test_allocator_no_info_without_explain),
        CASE(test_allocator_job_control_setenv_failure),
        CASE(test_post_opt_does_nothing_in_slurmd_and_job_script),
        // remote context
        CASE(test_remote_decodes_job_env_and_sets_task_env),
        CASE(test_remote_job_env_wins_over_forwarded_options),
        CASE(test_remote_without_submitted_intent_resolves),
        CASE(test_remote_malformed_job_env_fails),
        CASE(test_user_init_keeps_existing_otel_keys),
        CASE(test_user_init_job_id_from_environment),
        CASE(test_user_init_extends_long_otel),
        // prolog and epilog
        CASE(test_prolog_epilog_dcgm_and_textfile),
        CASE(test_prolog_gpu_range_and_job_id_from_environment),
        CASE(test_prolog_shared_gpu_keeps_other_jobs),
        CASE(test_prolog_without_gpus_writes_textfile_only),
        CASE(test_prolog_refuses_symlinked_gpu_file),
        CASE(test_epilog_refuses_symlinked_gpu_file),
        CASE(test_prolog_refuses_symlinked_textfile),
        CASE(test_prolog_refuses_symlinked_node_dir),
        CASE(test_prolog_rejects_unsafe_node_name),
        CASE(test_prolog_rejects_bad_gpu_list),
        CASE(test_prolog_without_directories_does_nothing),
        CASE(test_prolog_and_epilog_reject_bad_argument),
        CASE(test_epilog_cleans_up_despite_malformed_intent),
    };
    ::signal(SIGPIPE, SIG_IGN);
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("spank_m2g", tests, nullptr, nullptr) ? 1 : 0;
}
