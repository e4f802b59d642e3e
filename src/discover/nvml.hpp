// NVML loaded with dlopen at run time: the one copy of the entry points m2g
// uses, shared by `m2g discover node` (probe.cpp) and m2g-nodeagent.
//
// Every type and signature here is written from NVIDIA's public NVML API
// reference (docs.nvidia.com/deploy/nvml-api), not copied from nvml.h, so no
// NVIDIA SDK is needed to build m2g. Power values are milliwatts, as NVML
// gives them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace m2g {
namespace nvml {

using Return = int;  // nvmlReturn_t, a C enum
constexpr Return kSuccess = 0;
constexpr Return kErrorUninitialized = 1;
constexpr Return kErrorInvalidArgument = 2;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorNoPermission = 4;
using Device = struct DeviceOpaque*;  // nvmlDevice_t

constexpr unsigned kNvlinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr unsigned kDeviceNameV2BufferSize = 96;
constexpr unsigned kDeviceUuidV2BufferSize = 96;
constexpr unsigned kSystemDriverVersionBufferSize = 80;
constexpr int kFeatureEnabled = 1;  // nvmlEnableState_t NVML_FEATURE_ENABLED

// nvmlPciInfo_t, as filled by nvmlDeviceGetPciInfo_v3.
struct PciInfo {
    char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, "00000000:1B:00.0"
};
static_assert(sizeof(PciInfo) == 68, "nvmlPciInfo_t layout");

// nvmlGpuFabricInfo_t (the unversioned struct of nvmlDeviceGetGpuFabricInfo).
struct GpuFabricInfo {
    unsigned char clusterUuid[16];  // NVML_GPU_FABRIC_UUID_LEN
    Return status;                  // meaningful when state is COMPLETED
    unsigned int cliqueId;
    unsigned char state;            // nvmlGpuFabricState_t
};
static_assert(offsetof(GpuFabricInfo, status) == 16 && offsetof(GpuFabricInfo, cliqueId) == 20 &&
                  offsetof(GpuFabricInfo, state) == 24,
              "nvmlGpuFabricInfo_t layout");
constexpr unsigned char kFabricNotSupported = 0, kFabricNotStarted = 1, kFabricInProgress = 2, kFabricCompleted = 3;

}  // namespace nvml

// One NVML library opened with dlopen. Construction never throws: ok() says
// whether the library loaded and has every entry point the caller requires;
// error() says why not. Entry points the caller did not require may be
// null (has(), missing()). Not copyable; the library is closed with the
// object. nvmlInit_v2/nvmlShutdown are the caller's (see NvmlSession).
class Nvml {
  public:
    enum Entry {
        kInit,                   // nvmlInit_v2
        kShutdown,               // nvmlShutdown
        kErrorString,            // nvmlErrorString
        kDriverVersion,          // nvmlSystemGetDriverVersion
        kCount,                  // nvmlDeviceGetCount_v2
        kHandle,                 // nvmlDeviceGetHandleByIndex_v2
        kName,                   // nvmlDeviceGetName
        kUuid,                   // nvmlDeviceGetUUID
        kPciInfo,                // nvmlDeviceGetPciInfo_v3
        kFabricInfo,             // nvmlDeviceGetGpuFabricInfo
        kNvLinkState,            // nvmlDeviceGetNvLinkState
        kPowerUsage,             // nvmlDeviceGetPowerUsage
        kPowerLimit,             // nvmlDeviceGetPowerManagementLimit
        kSetPowerLimit,          // nvmlDeviceSetPowerManagementLimit
        kDefaultPowerLimit,      // nvmlDeviceGetPowerManagementDefaultLimit
        kPowerLimitConstraints,  // nvmlDeviceGetPowerManagementLimitConstraints
        kEnforcedPowerLimit,     // nvmlDeviceGetEnforcedPowerLimit
        kEntryCount
    };

    // The exported symbol name of an entry point.
    static const char* symbol(Entry e);

    // Opens `path` (a file name for the loader's search path, or a path)
    // and resolves every entry point; `required` in the order their absence
    // is reported: the first one missing makes ok() false with
    //   "<path> has no <symbol> (not NVML, or a driver older than m2g supports)".
    // A library that does not load: "cannot load NVML: <dlerror text>".
    Nvml(const std::string& path, const std::vector<Entry>& required);
    ~Nvml();
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    bool ok() const { return ok_; }
    const std::string& error() const { return error_; }
    const std::string& path() const { return path_; }
    bool has(Entry e) const { return found_[e]; }
    // The symbols of the entry points that were not found, in Entry order.
    std::vector<std::string> missing() const;

    // "Insufficient Permissions (4)": nvmlErrorString's text and the number.
    std::string text(nvml::Return r) const;

    // The entry points (null when absent).
    nvml::Return (*init)() = nullptr;
    nvml::Return (*shutdown)() = nullptr;
    const char* (*error_string)(nvml::Return) = nullptr;
    nvml::Return (*driver_version)(char*, unsigned) = nullptr;
    nvml::Return (*count)(unsigned*) = nullptr;
    nvml::Return (*handle)(unsigned, nvml::Device*) = nullptr;
    nvml::Return (*name)(nvml::Device, char*, unsigned) = nullptr;
    nvml::Return (*uuid)(nvml::Device, char*, unsigned) = nullptr;
    nvml::Return (*pci)(nvml::Device, nvml::PciInfo*) = nullptr;
    nvml::Return (*fabric)(nvml::Device, nvml::GpuFabricInfo*) = nullptr;
    nvml::Return (*nvlink_state)(nvml::Device, unsigned, int*) = nullptr;
    nvml::Return (*power_usage)(nvml::Device, unsigned*) = nullptr;               // mW
    nvml::Return (*power_limit)(nvml::Device, unsigned*) = nullptr;               // mW
    nvml::Return (*set_power_limit)(nvml::Device, unsigned) = nullptr;            // mW
    nvml::Return (*default_power_limit)(nvml::Device, unsigned*) = nullptr;       // mW
    nvml::Return (*power_limit_constraints)(nvml::Device, unsigned*, unsigned*) = nullptr;  // min, max mW
    nvml::Return (*enforced_power_limit)(nvml::Device, unsigned*) = nullptr;      // mW

  private:
    template <typename F>
    void bind(Entry e, F& fn);

    void* lib_ = nullptr;
    std::string path_;
    bool ok_ = false;
    std::string error_;
    bool found_[kEntryCount] = {};
};

// nvmlInit_v2 on construction, nvmlShutdown on destruction (when init
// succeeded). `nv` must be ok() and outlive the session.
class NvmlSession {
  public:
    explicit NvmlSession(const Nvml& nv) : nv_(nv), rc_(nv.init()) {}
    ~NvmlSession()
    {
        if (rc_ == nvml::kSuccess)
            nv_.shutdown();
    }
    NvmlSession(const NvmlSession&) = delete;
    NvmlSession& operator=(const NvmlSession&) = delete;
    // nvmlInit_v2's answer.
    nvml::Return init_result() const { return rc_; }

  private:
    const Nvml& nv_;
    nvml::Return rc_;
};

}  // namespace m2g
