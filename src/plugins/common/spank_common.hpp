// What both SPANK plugins (spank_m2g.cpp, spank_m2g_jobmap.cpp) need of
// Slurm's SPANK calls: the log prefix, the job id and the exception guard.
// Included by those two files only, each after <slurm/spank.h>.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "plugins/common/guard.hpp"

namespace m2g_spank {

inline constexpr const char* kLog = "m2g: ";

// The job's id: the SPANK item where Slurm gives it, else SLURM_JOB_ID.
inline uint32_t job_id_of(spank_t sp)
{
    uint32_t id = 0;
    if (spank_get_item(sp, S_JOB_ID, &id) == ESPANK_SUCCESS)
        return id;
    const char* env = std::getenv("SLURM_JOB_ID");
    return env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 0;
}

// A hook's body, its exceptions logged as "m2g: WHERE: ..." and turned into -1.
template <typename F>
int guarded(const char* where, F&& f)
{
    return m2g_guarded(slurm_error, kLog, where, -1, std::forward<F>(f));
}

}  // namespace m2g_spank
