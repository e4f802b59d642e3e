// m2g tools: the m2g:[...] AdminComment segment as the reports print it
// (see parsed_annotation.hpp): core/job/annotation.hpp reads the text, this
// flattens what it read into words.
#include "tools/reports/parsed_annotation.hpp"

#include "core/job/annotation.hpp"
#include "tools/reports/report_util.hpp"

namespace m2g {

using reports::class_label;

const char* to_string(PlacementKind k)
{
    switch (k) {
    case PlacementKind::Placed:
        return "placed";
    case PlacementKind::Waiting:
        return "waiting";
    case PlacementKind::None:
        break;
    }
    return "";
}

ParsedAnnotation parse_annotation(std::string_view admin_comment) noexcept
{
    ParsedAnnotation a;
    try {
        a.found = has_annotation(admin_comment);
        const Annotation read = read_annotation(admin_comment);
        if (read.placement) {
            const PlacementAnnotation& p = *read.placement;
            a.placement = p.state == PlacementState::Waiting ? PlacementKind::Waiting
                          : p.state == PlacementState::None  ? PlacementKind::None
                                                             : PlacementKind::Placed;
            a.policy = p.policy;
            a.domains = p.domains;
            a.leaves = p.leaves;
            a.score = p.score ? format_score(*p.score) : "";
            a.placement_reason = p.reason;
            a.signals = p.signals;
            a.wait = p.wait;
            a.need = p.need;
            a.over = p.over;
            a.prefer_since = p.prefer_since;
        }
        if (read.admission) {
            const AdmissionAnnotation& d = *read.admission;
            a.verdict = d.verdict ? to_string(*d.verdict) : "";
            a.monitor = d.monitor;
            a.released_at = d.released_at;
            a.cls = !d.unknown_class.empty() ? d.unknown_class
                    : d.workload_class       ? class_label(*d.workload_class)
                                             : "";
            a.workload_class = d.workload_class.value_or(WorkloadClass::Unset);
            a.w_gpu = d.w_gpu;
            a.until = d.until;
            a.cause = d.cause;
            a.admission_reason = d.reason;
            a.avoid = d.avoid_nodes > 0 ? std::to_string(d.avoid_nodes) + " nodes (" + d.avoid_for + ")" : "";
            a.user_begin = d.user_begin;
        }
        if (read.curtail) {
            const CurtailAnnotation& c = *read.curtail;
            a.curtail = format(c);
            a.curtail_step = c.step ? to_string(*c.step) : "";
            a.curtail_monitor = c.monitor;
            a.curtail_w_gpu = c.w_gpu;
            a.curtail_cause = c.cause;
            a.curtail_scope = c.scope;
            a.curtail_at = c.at;
        }
    } catch (...) {
        // Out of memory on a comment: whatever was parsed stays.
    }
    return a;
}

bool admission_holds(const ParsedAnnotation& a, int64_t now)
{
    return (a.verdict == "defer" || a.verdict == "pace") && !a.monitor && a.released_at == 0 && a.until > now;
}

}  // namespace m2g
