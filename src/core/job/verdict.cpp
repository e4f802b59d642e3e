// m2g core: verdicts and wait causes (see verdict.hpp).
#include "core/job/verdict.hpp"

#include "core/base/keys.hpp"

namespace m2g {

const char* to_string(Verdict v)
{
    switch (v) {
    case Verdict::Admit:
        return "admit";
    case Verdict::Defer:
        return "defer";
    case Verdict::Pace:
        return "pace";
    case Verdict::Reject:
        return "reject";
    }
    return "?";
}

const char* to_string(WaitCause c)
{
    static_assert(kw::kWaitCauses.size() == static_cast<size_t>(WaitCause::Other) + 1,
                  "kw::kWaitCauses names every WaitCause, in order");
    return kw::kWaitCauses[static_cast<size_t>(c)];
}

std::optional<WaitCause> wait_cause_from(std::string_view key)
{
    for (size_t i = 1; i < kw::kWaitCauses.size(); ++i)
        if (key == kw::kWaitCauses[i])
            return static_cast<WaitCause>(i);
    return std::nullopt;
}

const char* to_string(CurtailStep s)
{
    switch (s) {
    case CurtailStep::Cap:
        return "cap";
    case CurtailStep::Suspend:
        return "suspend";
    case CurtailStep::Signal:
        return "signal";
    case CurtailStep::Requeue:
        return "requeue";
    case CurtailStep::Resume:
        return "resume";
    case CurtailStep::Uncap:
        return "uncap";
    }
    return "cap";
}

std::optional<CurtailStep> curtail_step_from(std::string_view word)
{
    for (CurtailStep s : {CurtailStep::Cap, CurtailStep::Suspend, CurtailStep::Signal, CurtailStep::Requeue,
                          CurtailStep::Resume, CurtailStep::Uncap})
        if (word == to_string(s))
            return s;
    return std::nullopt;
}

}  // namespace m2g
