// m2g core: verdicts and wait causes (see verdict.hpp).
#include "core/job/verdict.hpp"

#include "core/base/enum_names.hpp"
#include "core/base/keys.hpp"

namespace m2g {

namespace {
constexpr auto kVerdictNames = enum_names<Verdict::Reject>({"admit", "defer", "pace", "reject"});
constexpr auto kWaitCauseNames = enum_names<WaitCause::Other>(kw::kWaitCauses);
constexpr auto kCurtailStepNames =
    enum_names<CurtailStep::Uncap>({"cap", "suspend", "signal", "requeue", "resume", "uncap"});
}  // namespace

const char* to_string(Verdict v) { return name_of(kVerdictNames, v); }

std::optional<Verdict> verdict_from(std::string_view word) { return enum_from(kVerdictNames, word); }

const char* to_string(WaitCause c) { return name_of(kWaitCauseNames, c); }

std::optional<WaitCause> wait_cause_from(std::string_view key) { return enum_from(kWaitCauseNames, key); }

const char* to_string(CurtailStep s) { return name_of(kCurtailStepNames, s, "cap"); }

std::optional<CurtailStep> curtail_step_from(std::string_view word) { return enum_from(kCurtailStepNames, word); }

}  // namespace m2g
