// Link-seam fakes of the Slurm calls spank_m2g.so makes (see
// `nm -D --undefined-only spank_m2g.so`): spank_option_register,
// spank_context, spank_get_item, spank_getenv, spank_setenv,
// spank_job_control_setenv, slurm_error and slurm_info.
//
// The fakes record every call and serve what a test configures. They follow
// Slurm 22.05's src/common/plugstack.c where it matters to a plugin:
//   - spank_option_register only while fake::state().phase_init is set
//     (Slurm: only from slurm_spank_init), and copies the option;
//   - spank_getenv/spank_setenv only in remote context (else
//     ESPANK_NOT_REMOTE), on one job environment that S_JOB_ENV also
//     returns; spank_getenv truncates and returns ESPANK_NOSPACE as strlcpy;
//   - spank_job_control_setenv not in remote (ESPANK_NOT_LOCAL) or slurmd
//     (ESPANK_NOT_AVAIL) context;
//   - spank_get_item: S_JOB_ID and S_JOB_ENV by context as Slurm allows them.
// Every call with a handle other than fake::handle() fails with
// ESPANK_BAD_ARG and is counted in bad_handle.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

namespace fake {

// ESPANK_SUCCESS is a plain 0 (a #define), not a spank_err_t enumerator.
inline constexpr spank_err_t kSuccess = static_cast<spank_err_t>(ESPANK_SUCCESS);

// A registered option, copied as Slurm copies it.
struct Option {
    std::string name;
    std::optional<std::string> arginfo;  // nullopt: NULL (a flag)
    std::string usage;
    int has_arg = 0;
    int val = 0;
    spank_opt_cb_f cb = nullptr;
};

// One spank_setenv or spank_job_control_setenv call.
struct EnvSet {
    std::string name;
    std::string value;
    int overwrite = 0;
};

struct State {
    // ---- served --------------------------------------------------------
    spank_context_t context = S_CTX_ERROR;
    bool phase_init = false;             // inside slurm_spank_init (see call_init in the tests)
    std::optional<uint32_t> job_id;      // S_JOB_ID; nullopt: ESPANK_NOT_AVAIL where Slurm would serve it
    std::vector<std::string> job_env;    // "KEY=VALUE": S_JOB_ENV, spank_getenv, spank_setenv (remote)
    spank_err_t option_register_rc = kSuccess;      // forced result when not ESPANK_SUCCESS
    spank_err_t job_control_setenv_rc = kSuccess;   // likewise
    spank_err_t setenv_rc = kSuccess;               // likewise

    // ---- recorded ------------------------------------------------------
    std::vector<Option> options;          // spank_option_register, successful ones
    int option_register_calls = 0;
    std::vector<EnvSet> job_control_env;  // spank_job_control_setenv, accepted ones, in order
    std::vector<EnvSet> setenv_calls;     // spank_setenv, every call, in order
    std::vector<std::string> getenv_calls;
    std::vector<spank_item_t> get_item_calls;
    std::vector<std::string> errors;      // slurm_error, formatted
    std::vector<std::string> infos;       // slurm_info, formatted
    int bad_handle = 0;

    // Storage behind the char** returned for S_JOB_ENV.
    std::vector<std::string> job_env_snapshot;
    std::vector<char*> job_env_ptrs;
};

// The one fake state of this process, and a fresh start.
State& state();
void reset();

// The handle the fakes accept.
spank_t handle();

// The job environment (remote context), as spank_getenv sees it.
std::optional<std::string> job_getenv(const std::string& name);
void job_setenv(const std::string& name, const std::string& value);

// A registered option by name (without "--"), or nullptr.
const Option* option(const std::string& name);

// What Slurm does when the user gives --name[=optarg]: call the option's
// callback with its val. Fails the current CMocka test when the option is
// not registered.
int give_option(const std::string& name, const char* optarg, int remote = 0);

// The value of the last spank_job_control_setenv of `name`, or nullopt.
std::optional<std::string> job_control(const std::string& name);

// The value of the last spank_setenv of `name`, or nullopt.
std::optional<std::string> task_env(const std::string& name);

// Every recorded error and info message, one per line, for failure output.
std::string transcript();

}  // namespace fake
