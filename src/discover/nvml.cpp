// NVML with dlopen: see nvml.hpp.
#include "discover/nvml.hpp"

#include <dlfcn.h>

#include <string>
#include <vector>

namespace m2g {

namespace {

constexpr const char* kSymbols[Nvml::kEntryCount] = {
    "nvmlInit_v2",
    "nvmlShutdown",
    "nvmlErrorString",
    "nvmlSystemGetDriverVersion",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetGpuFabricInfo",
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceSetPowerManagementLimit",
    "nvmlDeviceGetPowerManagementDefaultLimit",
    "nvmlDeviceGetPowerManagementLimitConstraints",
    "nvmlDeviceGetEnforcedPowerLimit",
};

}  // namespace

const char* Nvml::symbol(Entry e)
{
    return e >= 0 && e < kEntryCount ? kSymbols[e] : "?";
}

template <typename F>
void Nvml::bind(Entry e, F& fn)
{
    fn = reinterpret_cast<F>(dlsym(lib_, kSymbols[e]));
    found_[e] = fn != nullptr;
}

Nvml::Nvml(const std::string& path, const std::vector<Entry>& required) : path_(path)
{
    dlerror();
    lib_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
        const char* e = dlerror();
        error_ = "cannot load NVML: " + std::string(e ? e : path);
        return;
    }
    bind(kInit, init);
    bind(kShutdown, shutdown);
    bind(kErrorString, error_string);
    bind(kDriverVersion, driver_version);
    bind(kCount, count);
    bind(kHandle, handle);
    bind(kName, name);
    bind(kUuid, uuid);
    bind(kPciInfo, pci);
    bind(kFabricInfo, fabric);
    bind(kNvLinkState, nvlink_state);
    bind(kPowerUsage, power_usage);
    bind(kPowerLimit, power_limit);
    bind(kSetPowerLimit, set_power_limit);
    bind(kDefaultPowerLimit, default_power_limit);
    bind(kPowerLimitConstraints, power_limit_constraints);
    bind(kEnforcedPowerLimit, enforced_power_limit);
    for (Entry e : required) {
        if (!found_[e]) {
            error_ = path + " has no " + kSymbols[e] + " (not NVML, or a driver older than m2g supports)";
            return;
        }
    }
    ok_ = true;
}

Nvml::~Nvml()
{
    if (lib_)
        dlclose(lib_);
}

std::vector<std::string> Nvml::missing() const
{
    std::vector<std::string> out;
    if (!lib_)
        return out;
    for (int e = 0; e < kEntryCount; ++e)
        if (!found_[e])
            out.push_back(kSymbols[e]);
    return out;
}

std::string Nvml::text(nvml::Return r) const
{
    const char* s = error_string ? error_string(r) : nullptr;
    return (s && *s ? std::string(s) : std::string("NVML error")) + " (" + std::to_string(r) + ")";
}

}  // namespace m2g
