// m2g core: the admission policy of m2g.conf (see admission_policy.hpp).
#include "core/model/admission_policy.hpp"

#include "core/job/intent.hpp"  // WorkloadClass

namespace m2g {

std::array<ClassPolicy, 8> AdmissionPolicy::default_classes()
{
    // Index: WorkloadClass. Work that can wait for power (training, batch,
    // ...) is deferrable; work with a user waiting on it (inference,
    // agentic) and jobs that say nothing are not. power_w_per_gpu 0: take
    // DefaultPowerPerGpuW, else class_power_defaults().
    std::array<ClassPolicy, 8> c{};
    c[static_cast<int>(WorkloadClass::Unset)].deferrable = false;
    c[static_cast<int>(WorkloadClass::Training)].deferrable = true;
    c[static_cast<int>(WorkloadClass::Finetune)].deferrable = true;
    c[static_cast<int>(WorkloadClass::Inference)].deferrable = false;
    c[static_cast<int>(WorkloadClass::Batch)].deferrable = true;
    c[static_cast<int>(WorkloadClass::Benchmark)].deferrable = true;
    c[static_cast<int>(WorkloadClass::Dataproc)].deferrable = true;
    c[static_cast<int>(WorkloadClass::Agentic)].deferrable = false;
    // Curtailment: work that may wait may also be suspended; the rest is
    // left alone unless m2g.conf says otherwise.
    for (ClassPolicy& cp : c)
        cp.curtail = cp.deferrable ? CurtailLevel::Suspend : CurtailLevel::None;
    return c;
}

const char* to_string(FailSafe f)
{
    switch (f) {
    case FailSafe::Last:
        return "last";
    case FailSafe::Open:
        return "open";
    case FailSafe::Defer:
        return "defer";
    }
    return "?";
}

const char* to_string(AdmissionMode m)
{
    switch (m) {
    case AdmissionMode::Enforce:
        return "enforce";
    case AdmissionMode::Monitor:
        return "monitor";
    case AdmissionMode::Off:
        return "off";
    }
    return "?";
}

const char* to_string(NoDeferAction a)
{
    return a == NoDeferAction::Reject ? "reject" : "convert";
}

const char* to_string(MaintenanceAction a)
{
    return a == MaintenanceAction::Steer ? "steer" : "defer";
}

const char* to_string(CurtailLevel l)
{
    switch (l) {
    case CurtailLevel::None:
        return "none";
    case CurtailLevel::Cap:
        return "cap";
    case CurtailLevel::Suspend:
        return "suspend";
    case CurtailLevel::Requeue:
        return "requeue";
    }
    return "none";
}

const char* to_string(CurtailMode m)
{
    switch (m) {
    case CurtailMode::Off:
        return "off";
    case CurtailMode::Monitor:
        return "monitor";
    case CurtailMode::Enforce:
        return "enforce";
    }
    return "off";
}


}  // namespace m2g
