// m2g-nodeagent's PowerBackend over NVML (discover/nvml.hpp, dlopen at run
// time): draw, limits and nvmlDeviceSetPowerManagementLimit by GPU index.
#pragma once

#include <memory>
#include <string>

#include "discover/nvml.hpp"
#include "nodeagent/agent.hpp"

namespace m2g {
namespace nodeagent {

class NvmlPower : public PowerBackend {
  public:
    // Loads `library`, needs every power entry point and nvmlInit_v2 to
    // succeed; throws Error saying which part failed. The GPU count is read
    // once, here.
    explicit NvmlPower(const std::string& library);
    ~NvmlPower() override;

    int gpu_count() override { return count_; }
    unsigned draw_mw(int gpu) override;
    GpuLimits limits(int gpu) override;
    void set_limit_mw(int gpu, unsigned mw) override;

    // e.g. "libnvidia-ml.so.1, 4 GPUs".
    std::string describe() const;

  private:
    nvml::Device device(int gpu);
    [[noreturn]] void fail(int gpu, Nvml::Entry call, nvml::Return r) const;

    Nvml nv_;
    std::unique_ptr<NvmlSession> session_;
    int count_ = 0;
};

}  // namespace nodeagent
}  // namespace m2g
