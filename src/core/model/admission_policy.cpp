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

const char* to_string(FailSafe f) { return name_of(kFailSafeNames, f); }
const char* to_string(AdmissionMode m) { return name_of(kAdmissionModeNames, m); }
const char* to_string(NoDeferAction a) { return name_of(kNoDeferActionNames, a, "convert"); }
const char* to_string(MaintenanceAction a) { return name_of(kMaintenanceActionNames, a, "defer"); }
const char* to_string(CurtailLevel l) { return name_of(kCurtailLevelNames, l, "none"); }
const char* to_string(CurtailMode m) { return name_of(kCurtailModeNames, m, "off"); }

}  // namespace m2g
