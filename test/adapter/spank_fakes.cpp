// Link-seam fakes of the Slurm calls spank_m2g.so makes; see spank_fakes.hpp.
#include "spank_fakes.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <setjmp.h>

extern "C" {
#include <cmocka.h>
}

namespace fake {

namespace {

// The plugin sees `struct spank_handle` only as an opaque pointer.
struct Handle {
    int magic = 0x5350414e;  // "SPAN"
} g_handle;

State g_state;

bool handle_ok(spank_t sp)
{
    if (reinterpret_cast<Handle*>(sp) == &g_handle)
        return true;
    ++g_state.bad_handle;
    return false;
}

std::string vformat(const char* fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    const int n = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return "(unformattable message)";
    std::string out(static_cast<size_t>(n) + 1, '\0');
    std::vsnprintf(&out[0], out.size(), fmt, ap);
    out.resize(static_cast<size_t>(n));
    return out;
}

std::vector<std::string>::iterator find_env(const std::string& name)
{
    const std::string prefix = name + "=";
    for (auto it = g_state.job_env.begin(); it != g_state.job_env.end(); ++it)
        if (it->compare(0, prefix.size(), prefix) == 0)
            return it;
    return g_state.job_env.end();
}

}  // namespace

State& state() { return g_state; }

void reset() { g_state = State{}; }

spank_t handle() { return reinterpret_cast<spank_t>(&g_handle); }

std::optional<std::string> job_getenv(const std::string& name)
{
    const auto it = find_env(name);
    if (it == g_state.job_env.end())
        return std::nullopt;
    return it->substr(name.size() + 1);
}

void job_setenv(const std::string& name, const std::string& value)
{
    const auto it = find_env(name);
    if (it != g_state.job_env.end())
        *it = name + "=" + value;
    else
        g_state.job_env.push_back(name + "=" + value);
}

const Option* option(const std::string& name)
{
    for (const Option& o : g_state.options)
        if (o.name == name)
            return &o;
    return nullptr;
}

int give_option(const std::string& name, const char* optarg, int remote)
{
    const Option* o = option(name);
    if (!o || !o->cb)
        fail_msg("option --%s is not registered (or has no callback)", name.c_str());
    return o->cb(o->val, optarg, remote);
}

std::optional<std::string> job_control(const std::string& name)
{
    std::optional<std::string> v;
    for (const EnvSet& e : g_state.job_control_env)
        if (e.name == name)
            v = e.value;
    return v;
}

std::optional<std::string> task_env(const std::string& name)
{
    std::optional<std::string> v;
    for (const EnvSet& e : g_state.setenv_calls)
        if (e.name == name)
            v = e.value;
    return v;
}

std::string transcript()
{
    std::string out;
    for (const std::string& e : g_state.errors)
        out += "slurm_error: " + e + "\n";
    for (const std::string& i : g_state.infos)
        out += "slurm_info: " + i + "\n";
    return out.empty() ? "(no slurm_error or slurm_info)\n" : out;
}

}  // namespace fake

extern "C" {

spank_context_t spank_context(void) { return fake::state().context; }

spank_err_t spank_option_register(spank_t sp, struct spank_option* opt)
{
    fake::State& s = fake::state();
    ++s.option_register_calls;
    if (!fake::handle_ok(sp) || !s.phase_init)
        return ESPANK_BAD_ARG;
    if (!opt || !opt->name || !opt->usage)
        return ESPANK_BAD_ARG;
    if (s.option_register_rc != fake::kSuccess)
        return s.option_register_rc;
    fake::Option o;
    o.name = opt->name;
    if (opt->arginfo)
        o.arginfo = std::string(opt->arginfo);
    o.usage = opt->usage;
    o.has_arg = opt->has_arg;
    o.val = opt->val;
    o.cb = opt->cb;
    s.options.push_back(o);
    return fake::kSuccess;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
    fake::State& s = fake::state();
    s.get_item_calls.push_back(item);
    if (!fake::handle_ok(sp))
        return ESPANK_BAD_ARG;
    // Validity by context, as _check_spank_item_validity() in Slurm 22.05.
    if (item != S_JOB_ID && item != S_JOB_ENV)
        return ESPANK_BAD_ARG;  // the plugin asks for nothing else
    switch (s.context) {
    case S_CTX_SLURMD:
        return ESPANK_NOT_AVAIL;
    case S_CTX_JOB_SCRIPT:
        if (item != S_JOB_ID)
            return ESPANK_NOT_AVAIL;
        break;
    case S_CTX_ALLOCATOR:
        return ESPANK_BAD_ARG;  // S_JOB_ID and S_JOB_ENV are local-only items
    case S_CTX_LOCAL:
    case S_CTX_REMOTE:
        break;
    default:
        return ESPANK_BAD_ARG;
    }
    va_list ap;
    // The prototype is Slurm's (C, where an enum before `...` is fine); in
    // C++ clang calls va_start after an enum parameter undefined, because
    // an enum is promoted. The x86-64 and aarch64 ABIs pass both as int.
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wvarargs"
#endif
    va_start(ap, item);
#ifdef __clang__
#pragma clang diagnostic pop
#endif
    spank_err_t rc = fake::kSuccess;
    if (item == S_JOB_ID) {
        uint32_t* out = va_arg(ap, uint32_t*);
        if (s.job_id)
            *out = *s.job_id;
        else
            rc = ESPANK_NOT_AVAIL;
    } else {
        char*** out = va_arg(ap, char***);
        if (s.context == S_CTX_REMOTE) {
            s.job_env_snapshot = s.job_env;
            s.job_env_ptrs.clear();
            for (std::string& e : s.job_env_snapshot)
                s.job_env_ptrs.push_back(&e[0]);
            s.job_env_ptrs.push_back(nullptr);
            *out = s.job_env_ptrs.data();
        } else {
            *out = nullptr;  // Slurm: the step environment exists only in slurmstepd
        }
    }
    va_end(ap);
    return rc;
}

spank_err_t spank_getenv(spank_t sp, const char* var, char* buf, int len)
{
    fake::State& s = fake::state();
    s.getenv_calls.push_back(var ? var : "(null)");
    if (!fake::handle_ok(sp))
        return ESPANK_BAD_ARG;
    if (s.context != S_CTX_REMOTE)
        return ESPANK_NOT_REMOTE;
    if (len < 0 || !var || !buf)
        return ESPANK_BAD_ARG;
    const std::optional<std::string> v = fake::job_getenv(var);
    if (!v)
        return ESPANK_ENV_NOEXIST;
    if (len > 0) {  // strlcpy
        const size_t n = std::min(v->size(), static_cast<size_t>(len) - 1);
        std::memcpy(buf, v->data(), n);
        buf[n] = '\0';
    }
    return v->size() >= static_cast<size_t>(len) ? ESPANK_NOSPACE : fake::kSuccess;
}

spank_err_t spank_setenv(spank_t sp, const char* var, const char* val, int overwrite)
{
    fake::State& s = fake::state();
    s.setenv_calls.push_back({var ? var : "(null)", val ? val : "(null)", overwrite});
    if (!fake::handle_ok(sp))
        return ESPANK_BAD_ARG;
    if (s.context != S_CTX_REMOTE)
        return ESPANK_NOT_REMOTE;
    if (!var || !val)
        return ESPANK_BAD_ARG;
    if (s.setenv_rc != fake::kSuccess)
        return s.setenv_rc;
    if (fake::job_getenv(var) && !overwrite)
        return ESPANK_ENV_EXISTS;
    fake::job_setenv(var, val);
    return fake::kSuccess;
}

spank_err_t spank_job_control_setenv(spank_t sp, const char* var, const char* val, int overwrite)
{
    fake::State& s = fake::state();
    if (!fake::handle_ok(sp))
        return ESPANK_BAD_ARG;
    if (s.context == S_CTX_REMOTE)
        return ESPANK_NOT_LOCAL;
    if (s.context == S_CTX_SLURMD)
        return ESPANK_NOT_AVAIL;
    if (!var || !val)
        return ESPANK_BAD_ARG;
    if (s.job_control_setenv_rc != fake::kSuccess)
        return s.job_control_setenv_rc;
    if (!overwrite && fake::job_control(var))
        return ESPANK_BAD_ARG;  // Slurm: dyn_spank_set_job_env() refuses
    s.job_control_env.push_back({var, val, overwrite});
    return fake::kSuccess;
}

void slurm_error(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fake::state().errors.push_back(fake::vformat(fmt, ap));
    va_end(ap);
}

void slurm_info(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fake::state().infos.push_back(fake::vformat(fmt, ap));
    va_end(ap);
}

}  // extern "C"
