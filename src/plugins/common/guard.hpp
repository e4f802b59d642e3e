// m2g plugins: no C++ exception crosses into Slurm's C code. An entry point
// whose whole body may throw runs it through m2g_guarded(), which logs what
// was thrown as "<prefix><what>: <exception>" with the plugin's log
// function (error() in slurmctld and slurmd, slurm_error() in a SPANK
// plugin) and returns `failed`. Entry points whose fallback is more than a
// return code (admit the job without m2g, let cons_tres decide alone) keep
// their own catch and say so there.
#pragma once

#include <exception>

template <class R, class Log, class F>
R m2g_guarded(Log log, const char* prefix, const char* what, R failed, F&& body)
{
    try {
        return body();
    } catch (const std::exception& e) {
        log("%s%s: %s", prefix, what, e.what());
    } catch (...) {
        log("%s%s: unexpected error", prefix, what);
    }
    return failed;
}
