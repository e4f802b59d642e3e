// m2g-nodeagent's PowerBackend over NVML: see nvml_power.hpp.
#include "nodeagent/nvml_power.hpp"

#include <string>

namespace m2g {
namespace nodeagent {

NvmlPower::NvmlPower(const std::string& library)
    : nv_(library, {Nvml::kInit, Nvml::kShutdown, Nvml::kErrorString, Nvml::kCount, Nvml::kHandle,
                    Nvml::kPowerUsage, Nvml::kPowerLimit, Nvml::kSetPowerLimit, Nvml::kDefaultPowerLimit,
                    Nvml::kPowerLimitConstraints})
{
    if (!nv_.ok())
        throw Error(nv_.error() + " (--nvml names the library)");
    session_ = std::make_unique<NvmlSession>(nv_);
    if (session_->init_result() != nvml::kSuccess)
        throw Error(library + ": nvmlInit_v2: " + nv_.text(session_->init_result()) +
                    " (is the NVIDIA driver loaded?)");
    unsigned n = 0;
    const nvml::Return r = nv_.count(&n);
    if (r != nvml::kSuccess)
        throw Error(library + ": nvmlDeviceGetCount_v2: " + nv_.text(r));
    count_ = static_cast<int>(n);
}

NvmlPower::~NvmlPower() = default;

std::string NvmlPower::describe() const
{
    return nv_.path() + ", " + std::to_string(count_) + " GPU" + (count_ == 1 ? "" : "s");
}

void NvmlPower::fail(int gpu, Nvml::Entry call, nvml::Return r) const
{
    throw BackendError("GPU " + std::to_string(gpu) + ": " + Nvml::symbol(call) + ": " + nv_.text(r));
}

nvml::Device NvmlPower::device(int gpu)
{
    if (gpu < 0 || gpu >= count_)
        throw BackendError("GPU " + std::to_string(gpu) + " is not on this node (NVML reports " +
                           std::to_string(count_) + " GPUs)");
    nvml::Device d = nullptr;
    const nvml::Return r = nv_.handle(static_cast<unsigned>(gpu), &d);
    if (r != nvml::kSuccess)
        fail(gpu, Nvml::kHandle, r);
    return d;
}

unsigned NvmlPower::draw_mw(int gpu)
{
    nvml::Device d = device(gpu);
    unsigned mw = 0;
    const nvml::Return r = nv_.power_usage(d, &mw);
    if (r != nvml::kSuccess)
        fail(gpu, Nvml::kPowerUsage, r);
    return mw;
}

GpuLimits NvmlPower::limits(int gpu)
{
    nvml::Device d = device(gpu);
    GpuLimits l;
    nvml::Return r = nv_.power_limit(d, &l.limit_mw);
    if (r != nvml::kSuccess)
        fail(gpu, Nvml::kPowerLimit, r);
    r = nv_.default_power_limit(d, &l.default_mw);
    if (r != nvml::kSuccess)
        fail(gpu, Nvml::kDefaultPowerLimit, r);
    r = nv_.power_limit_constraints(d, &l.min_mw, &l.max_mw);
    if (r != nvml::kSuccess)
        fail(gpu, Nvml::kPowerLimitConstraints, r);
    return l;
}

void NvmlPower::set_limit_mw(int gpu, unsigned mw)
{
    nvml::Device d = device(gpu);
    const nvml::Return r = nv_.set_power_limit(d, mw);
    if (r != nvml::kSuccess)
        fail(gpu, Nvml::kSetPowerLimit, r);
}

}  // namespace nodeagent
}  // namespace m2g
