// The AdminComment "m2g:[...]" segment: each writer replaces only its part;
// its two parts as typed structs, with one writer (format) and one parser.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/power/admission.hpp"
#include "core/job/annotation.hpp"
#include "core/base/keys.hpp"

using m2g::AnnotationPart;
using m2g::get_annotation;
using m2g::foreign_structured;
using m2g::set_annotation;

TEST(Annotation, PlacementAloneKeepsTheIssue4Format)
{
    EXPECT_EQ(set_annotation("", AnnotationPart::Placement, "domains=nvl02 reason=best fit"),
              "m2g:[domains=nvl02 reason=best fit]");
}

TEST(Annotation, AdmissionFollowsPlacement)
{
    std::string c = set_annotation("", AnnotationPart::Admission, "defer until=2026-11-29T22:00:00Z");
    EXPECT_EQ(c, "m2g:[admission=defer until=2026-11-29T22:00:00Z]");
    c = set_annotation(c, AnnotationPart::Placement, "domains=nvl01");
    EXPECT_EQ(c, "m2g:[domains=nvl01; admission=defer until=2026-11-29T22:00:00Z]");
    c = set_annotation(c, AnnotationPart::Placement, "domains=nvl03");
    EXPECT_EQ(c, "m2g:[domains=nvl03; admission=defer until=2026-11-29T22:00:00Z]");
    c = set_annotation(c, AnnotationPart::Admission, "admit");
    EXPECT_EQ(c, "m2g:[domains=nvl03; admission=admit]");
    EXPECT_EQ(get_annotation(c, AnnotationPart::Placement), "domains=nvl03");
    EXPECT_EQ(get_annotation(c, AnnotationPart::Admission), "admit");
}

TEST(Annotation, OtherToolsTextSurvivesOnBothSides)
{
    std::string c = set_annotation("ticket 42", AnnotationPart::Placement, "domains=nvl01");
    EXPECT_EQ(c, "ticket 42 m2g:[domains=nvl01]");
    c = set_annotation("ticket 42 m2g:[domains=nvl01] audited", AnnotationPart::Admission, "admit");
    EXPECT_EQ(c, "ticket 42 m2g:[domains=nvl01; admission=admit] audited");
}

TEST(Annotation, SeparatorsInTextCannotBreakTheSegment)
{
    const std::string c = set_annotation("", AnnotationPart::Placement, "reason=a; b] c");
    EXPECT_EQ(c, "m2g:[reason=a, b) c]");
    EXPECT_EQ(get_annotation(c, AnnotationPart::Admission), "");
}

TEST(Annotation, EmptyPartsRemoveTheSegment)
{
    std::string c = set_annotation("note m2g:[admission=defer]", AnnotationPart::Admission, "");
    EXPECT_EQ(c, "note");
    EXPECT_EQ(set_annotation("", AnnotationPart::Placement, ""), "");
}

TEST(Annotation, UnterminatedSegmentIsRepaired)
{
    EXPECT_EQ(set_annotation("m2g:[domains=nvl01", AnnotationPart::Admission, "admit"),
              "m2g:[domains=nvl01; admission=admit]");
}

// slurm-bridge keeps {"pods":[...]} in AdminComment and parses it back as
// strict JSON: m2g leaves such a comment alone, whichever part it writes.
TEST(Annotation, LeavesAnotherToolsStructuredCommentAlone)
{
    const std::string bridge = R"({"pods":["ml/train-0","ml/train-1"]})";
    EXPECT_TRUE(foreign_structured(bridge));
    EXPECT_TRUE(foreign_structured("  [1,2]"));
    EXPECT_FALSE(foreign_structured("ticket 42"));
    EXPECT_FALSE(foreign_structured(""));
    EXPECT_EQ(set_annotation(bridge, AnnotationPart::Placement, "domains=1 nodes=r01n[01-18]"), bridge);
    EXPECT_EQ(set_annotation(bridge, AnnotationPart::Admission, "admit class=training"), bridge);
    EXPECT_EQ(set_annotation("ticket 42", AnnotationPart::Admission, "admit"), "ticket 42 m2g:[admission=admit]");
}

// ---- the typed parts: one writer (format), one parser (parse_*) ----------------------

using m2g::AdmissionAnnotation;
using m2g::Annotation;
using m2g::CurtailAnnotation;
using m2g::CurtailStep;
using m2g::curtail_step_from;
using m2g::parse_curtail;
using m2g::read_annotation;
using m2g::write_annotation;
using m2g::PlacementAnnotation;
using m2g::PlacementState;
using m2g::Verdict;
using m2g::WaitCause;
using m2g::WorkloadClass;

namespace m2g {
// gtest shows a placement part as its text and its typed wait fields.
void PrintTo(const PlacementAnnotation& p, std::ostream* os)
{
    std::string over;
    for (const std::string& o : p.over)
        over += (over.empty() ? "" : ",") + o;
    *os << "{" << format(p) << "} state=" << static_cast<int>(p.state) << " wait=" << to_string(p.wait)
        << " need=" << p.need << " over=" << over;
}
}  // namespace m2g

namespace {

constexpr int64_t kNow = 1795982400;  // 2026-11-29T20:00:00Z
constexpr int64_t kHour = 3600;

PlacementAnnotation placed()
{
    PlacementAnnotation p;
    p.state = PlacementState::Placed;
    p.domains = {"nvl02"};
    p.leaves = {"leaf01"};
    p.policy = "prefer:nvlink";
    p.score = 17;
    p.reason = "nvl02, best fit (17 of 18 nodes left free there)";
    p.signals = "rack nvl01 over budget: 0.0 kW free, job needs 1.7 kW/node";
    return p;
}

// A waiting part without its typed cause, as the struct was before wait=.
PlacementAnnotation waiting(const std::string& reason, const std::string& signals = "")
{
    PlacementAnnotation p;
    p.state = PlacementState::Waiting;
    p.policy = "strict:nvlink";
    p.reason = reason;
    p.signals = signals;
    return p;
}

// ... with it, as this m2g writes and reads it.
PlacementAnnotation waits(WaitCause wait, const std::string& reason, int need = 0,
                          const std::vector<std::string>& over = {}, const std::string& signals = "")
{
    PlacementAnnotation p = waiting(reason, signals);
    p.wait = wait;
    p.need = need;
    p.over = over;
    return p;
}

AdmissionAnnotation deferred()
{
    AdmissionAnnotation a;
    a.verdict = Verdict::Defer;
    a.workload_class = WorkloadClass::Training;
    a.w_gpu = 413;
    a.until = kNow + 2 * kHour + 42 * 60 + 52;
    a.cause = "dr-test";
    a.reason = "defer: DR event dr-test (site -50%) until 2026-11-29T22:42:52Z, class=training consent=default, 1.7 kW";
    return a;
}

}  // namespace

// Today's placement texts (select/m2g 0.x, in sacct databases) read as fields.
TEST(AnnotationStruct, ParsesTodaysPlacementTexts)
{
    EXPECT_EQ(m2g::parse_placement("domains=nvl02 leaves=leaf01 policy=prefer:nvlink score=17 reason=nvl02, best fit "
                                   "(17 of 18 nodes left free there) signals=rack nvl01 over budget: 0.0 kW free, "
                                   "job needs 1.7 kW/node"),
              placed());
    PlacementAnnotation two;
    two.state = PlacementState::Placed;
    two.domains = {"nvl06", "nvl07"};
    two.leaves = {"leaf02"};
    two.policy = "strict:nvlink";
    two.score = 0;
    two.reason = "2 NVLink domains (2 whole, lower bound 2) under leaf02";
    EXPECT_EQ(m2g::parse_placement("domains=nvl06,nvl07 leaves=leaf02 policy=strict:nvlink score=0 reason=2 NVLink "
                                   "domains (2 whole, lower bound 2) under leaf02"),
              two);
    PlacementAnnotation none = m2g::parse_placement("domains=- leaves=- policy=prefer:nvlink score=1200 reason=x");
    EXPECT_EQ(none.state, PlacementState::Placed);
    EXPECT_TRUE(none.domains.empty());
    EXPECT_TRUE(none.leaves.empty());
    EXPECT_EQ(none.score, 1200.0);

    EXPECT_EQ(m2g::parse_placement("waiting policy=strict:nvlink reason=waiting for an NVLink domain with 18 free "
                                   "healthy nodes (best now: nvl01 with 17)"),
              waits(WaitCause::NvlinkDomain,
                    "waiting for an NVLink domain with 18 free healthy nodes (best now: nvl01 with 17)", 18));
    PlacementAnnotation site =
        waits(WaitCause::SitePower, "site power: 0.0 kW free of 10.0 kW, maintenance mw-1: 2 nodes avoided");
    site.policy = "prefer:nvlink";
    EXPECT_EQ(m2g::parse_placement("waiting policy=prefer:nvlink reason=site power: 0.0 kW free of 10.0 kW, "
                                   "maintenance mw-1: 2 nodes avoided"),
              site);
    EXPECT_EQ(m2g::parse_placement("waiting policy=strict:nvlink reason=waiting for 2 free healthy nodes "
                                   "signals=maintenance mw-1: 2 nodes avoided"),
              waits(WaitCause::Nodes, "waiting for 2 free healthy nodes", 2, {}, "maintenance mw-1: 2 nodes avoided"));

    PlacementAnnotation stock;
    stock.state = PlacementState::Stock;
    stock.policy = "any";
    stock.signals = "maintenance mw-1: 18 nodes avoided";
    EXPECT_EQ(m2g::parse_placement("policy=any maintenance mw-1: 18 nodes avoided"), stock);
}

// Today's admission texts (job_submit/m2g), every form.
TEST(AnnotationStruct, ParsesTodaysAdmissionTexts)
{
    AdmissionAnnotation admit;
    admit.verdict = Verdict::Admit;
    admit.workload_class = WorkloadClass::Unset;
    admit.w_gpu = 404;
    EXPECT_EQ(m2g::parse_admission("admit class=none w_gpu=404"), admit);

    EXPECT_EQ(m2g::parse_admission("defer class=training w_gpu=413 until=2026-11-29T22:42:52Z cause=dr-test "
                                   "reason=defer: DR event dr-test (site -50%) until 2026-11-29T22:42:52Z, "
                                   "class=training consent=default, 1.7 kW"),
              deferred());

    const AdmissionAnnotation mon =
        m2g::parse_admission("monitor would defer class=batch w_gpu=372 until=2026-11-29T21:00:00Z "
                             "cause=maintenance:mw-1 reason=defer: maintenance mw-1 until 2026-11-29T21:00:00Z "
                             "avoid=18 nodes (maintenance mw-1) user_begin=1795982000");
    EXPECT_TRUE(mon.monitor);
    EXPECT_EQ(mon.verdict, Verdict::Defer);
    EXPECT_EQ(mon.workload_class, WorkloadClass::Batch);
    EXPECT_EQ(mon.until, kNow + kHour);
    EXPECT_EQ(mon.cause, "maintenance:mw-1");
    EXPECT_EQ(mon.reason, "defer: maintenance mw-1 until 2026-11-29T21:00:00Z");
    EXPECT_EQ(mon.avoid_nodes, 18);
    EXPECT_EQ(mon.avoid_for, "maintenance mw-1");
    EXPECT_EQ(mon.user_begin, 1795982000);
    EXPECT_FALSE(mon.waits());  // monitor enforces nothing

    const AdmissionAnnotation rel =
        m2g::parse_admission("released at 2026-11-29T21:45:00Z: admit class=training w_gpu=413 user_begin=1795986000");
    EXPECT_EQ(rel.released_at, kNow + kHour + 45 * 60);
    EXPECT_EQ(rel.verdict, Verdict::Admit);
    EXPECT_EQ(rel.user_begin, 1795986000);

    const AdmissionAnnotation pace = m2g::parse_admission(
        "pace class=inference w_gpu=101 until=2026-11-29T20:01:00Z cause=failsafe reason=x");
    EXPECT_EQ(pace.verdict, Verdict::Pace);
    EXPECT_EQ(pace.until, kNow + 60);
    EXPECT_TRUE(pace.waits());
    EXPECT_TRUE(deferred().waits());

    const AdmissionAnnotation rej = m2g::parse_admission(
        "reject class=benchmark w_gpu=700 reason=class benchmark is reserved, ask your admin");
    EXPECT_EQ(rej.verdict, Verdict::Reject);
    EXPECT_EQ(rej.reason, "class benchmark is reserved, ask your admin");
    EXPECT_FALSE(rej.waits());

    const AdmissionAnnotation steer = m2g::parse_admission("admit class=training w_gpu=413 avoid=18 nodes (maintenance mw-1)");
    EXPECT_EQ(steer.avoid_nodes, 18);
    EXPECT_EQ(steer.avoid_for, "maintenance mw-1");
    EXPECT_EQ(steer.reason, "");
}

// format() writes exactly what select/m2g and job_submit/m2g wrote before
// the struct, so sacct shows the same text for the same decision.
TEST(AnnotationStruct, FormatWritesTodaysTexts)
{
    EXPECT_EQ(m2g::format(placed()),
              "domains=nvl02 leaves=leaf01 policy=prefer:nvlink score=17 reason=nvl02, best fit (17 of 18 nodes left "
              "free there) signals=rack nvl01 over budget: 0.0 kW free, job needs 1.7 kW/node");
    EXPECT_EQ(m2g::format(waiting("waiting for an NVLink domain with 2 free healthy nodes (best now: d1 with 1)")),
              "waiting policy=strict:nvlink reason=waiting for an NVLink domain with 2 free healthy nodes (best now: "
              "d1 with 1)");
    PlacementAnnotation stock;
    stock.state = PlacementState::Stock;
    stock.policy = "any";
    stock.signals = "maintenance mw-1: 2 nodes avoided";
    EXPECT_EQ(m2g::format(stock), "policy=any maintenance mw-1: 2 nodes avoided");
    PlacementAnnotation nowhere = placed();
    nowhere.domains.clear();
    nowhere.leaves.clear();
    nowhere.signals.clear();
    EXPECT_EQ(m2g::format(nowhere), "domains=- leaves=- policy=prefer:nvlink score=17 reason=nvl02, best fit (17 of "
                                    "18 nodes left free there)");
    EXPECT_EQ(m2g::format(PlacementAnnotation{}), "");

    EXPECT_EQ(m2g::format(deferred()),
              "defer class=training w_gpu=413 until=2026-11-29T22:42:52Z cause=dr-test reason=defer: DR event dr-test "
              "(site -50%) until 2026-11-29T22:42:52Z, class=training consent=default, 1.7 kW");
    AdmissionAnnotation rel;
    rel.released_at = kNow + kHour + 45 * 60;
    rel.verdict = Verdict::Admit;
    rel.workload_class = WorkloadClass::Training;
    rel.w_gpu = 413;
    rel.user_begin = 1795986000;
    EXPECT_EQ(m2g::format(rel), "released at 2026-11-29T21:45:00Z: admit class=training w_gpu=413 user_begin=1795986000");
    AdmissionAnnotation mon = deferred();
    mon.monitor = true;
    mon.avoid_nodes = 18;
    mon.avoid_for = "maintenance mw-1";
    EXPECT_EQ(m2g::format(mon).rfind("monitor would defer class=training w_gpu=413 until=", 0), 0u) << m2g::format(mon);
    EXPECT_NE(m2g::format(mon).find(", 1.7 kW avoid=18 nodes (maintenance mw-1)"), std::string::npos)
        << m2g::format(mon);
}

// The builder from a Decision gives what job_submit/m2g's admission text
// gave: d.annotation() with " class=<c> w_gpu=<W>" after the verdict,
// "monitor would " before it and " user_begin=<t>" after it.
TEST(AnnotationStruct, AdmissionFromADecisionMatchesTheOldText)
{
    auto old_text = [](const m2g::Decision& d, const m2g::JobIntent& in, double w, int64_t ub, bool monitor) {
        std::string text = d.annotation();
        char facts[96];
        std::snprintf(facts, sizeof facts, " class=%s w_gpu=%.0f",
                      in.workload_class == WorkloadClass::Unset ? "none" : m2g::to_string(in.workload_class), w);
        const auto sp = text.find(' ');
        text.insert(sp == std::string::npos ? text.size() : sp, facts);
        return (monitor ? "monitor would " : "") + text + (ub > 0 ? " user_begin=" + std::to_string(ub) : "");
    };
    const m2g::AdmissionPolicy ap;
    m2g::JobIntent in;
    in.workload_class = WorkloadClass::Training;
    in.power_w_per_gpu = 412.6;
    std::vector<m2g::Decision> ds(5);
    ds[1].verdict = Verdict::Defer;
    ds[1].begin_time = kNow + 2 * kHour;
    ds[1].cause = "maintenance:mw-1";
    ds[1].reason = "defer: maintenance mw-1 until 2026-11-29T22:00:00Z";
    ds[1].avoid_nodes = {1, 2, 3};
    ds[1].avoid_for = "maintenance mw-1";
    ds[2].verdict = Verdict::Pace;
    ds[2].begin_time = kNow + 60;
    ds[2].cause = "dr-1";
    ds[2].reason = "pace: non-deferrable during DR event dr-1";
    ds[3].verdict = Verdict::Reject;
    ds[3].reason = "class benchmark is reserved";
    ds[3].avoid_nodes = {4};
    ds[4].avoid_nodes = {5, 6};
    ds[4].avoid_for = "maintenance mw-2";
    ds[4].reason = "admit: steering clear";
    for (const m2g::Decision& d : ds)
        for (const bool monitor : {false, true})
            for (const int64_t ub : {int64_t{0}, kNow + kHour}) {
                const AdmissionAnnotation a = m2g::admission_annotation(d, in, ap, ub, monitor);
                EXPECT_EQ(m2g::format(a), old_text(d, in, m2g::power_w_per_gpu(ap, in), ub, monitor));
                EXPECT_EQ(m2g::parse_admission(m2g::format(a)), a) << m2g::format(a);
            }
    m2g::JobIntent none;
    EXPECT_EQ(m2g::format(m2g::admission_annotation(ds[0], none, ap, 0, false)),
              old_text(ds[0], none, m2g::power_w_per_gpu(ap, none), 0, false));
}

TEST(AnnotationStruct, RoundTripsEveryKind)
{
    PlacementAnnotation many = placed();
    many.domains = {"nvl01", "nvl02", "nvl03"};
    many.leaves = {"leaf01", "leaf02"};
    many.score = 1234567.25;  // more digits than %g keeps
    PlacementAnnotation bare = placed();
    bare.score.reset();
    bare.reason.clear();
    bare.signals.clear();
    PlacementAnnotation stock;
    stock.state = PlacementState::Stock;
    stock.policy = "any";
    stock.signals = "rack d1 over budget: 0.5 kW free,  job needs 2.0 kW/node";  // spacing kept
    PlacementAnnotation stock_quiet = stock;
    stock_quiet.signals.clear();
    for (const PlacementAnnotation& p :
         {placed(), many, bare, stock, stock_quiet, waits(WaitCause::Pacing, "pacing: 4 GPUs already started this interval"),
          waits(WaitCause::NvlinkDomain, "waiting for 3 NVLink domains with 40 free healthy nodes", 40, {},
                "maintenance mw-1: 2 nodes avoided"),
          waits(WaitCause::RackPower, "rack d1 over budget: 0.0 kW free, job needs 2.0 kW/node", 0, {"d1", "d2"}),
          waits(WaitCause::Maintenance, "rack d1 over budget: the typed cause wins", 7, {"d3"}),
          waits(WaitCause::Other, "")}) {
        EXPECT_EQ(m2g::parse_placement(m2g::format(p)), p) << m2g::format(p);
    }

    AdmissionAnnotation newer = deferred();
    newer.workload_class = WorkloadClass::Unset;
    newer.unknown_class = "gaming";  // a newer m2g's class
    AdmissionAnnotation everything = deferred();
    everything.released_at = kNow;
    everything.monitor = true;
    everything.avoid_nodes = 18;
    everything.avoid_for = "maintenance mw-1,mw-2";
    everything.user_begin = kNow + kHour;
    AdmissionAnnotation no_facts;
    no_facts.verdict = Verdict::Admit;
    AdmissionAnnotation reject;
    reject.verdict = Verdict::Reject;
    reject.workload_class = WorkloadClass::Agentic;
    reject.w_gpu = 150;
    reject.reason = "--m2g-defer=no is not allowed during DR event dr-1 for account ml";
    for (const AdmissionAnnotation& a : {deferred(), newer, everything, no_facts, reject})
        EXPECT_EQ(m2g::parse_admission(m2g::format(a)), a) << m2g::format(a);

    // Through the segment, beside other tools' text.
    Annotation both;
    both.placement = placed();
    both.admission = everything;
    const std::string c =
        m2g::write_annotation(m2g::write_annotation("ticket 42", everything), placed());
    EXPECT_EQ(c.rfind("ticket 42 m2g:[domains=nvl02 ", 0), 0u) << c;
    EXPECT_EQ(m2g::read_annotation(c), both);
    EXPECT_EQ(m2g::read_annotation(m2g::write_annotation(c, PlacementAnnotation{})).placement, std::nullopt);
    EXPECT_EQ(m2g::read_annotation("ticket 42"), Annotation{});
    EXPECT_TRUE(m2g::has_annotation("m2g:[]"));
    EXPECT_FALSE(m2g::has_annotation("ticket 42"));
}

// A waiting part carries its cause typed, before reason= (which stays for
// people): wait=, then need= and over= when they say something.
TEST(AnnotationStruct, WaitingPartsCarryATypedCause)
{
    EXPECT_EQ(m2g::format(waits(WaitCause::NvlinkDomain,
                                "waiting for an NVLink domain with 18 free healthy nodes (best now: nvl01 with 17)", 18)),
              "waiting policy=strict:nvlink wait=nvlink-domain need=18 reason=waiting for an NVLink domain with 18 "
              "free healthy nodes (best now: nvl01 with 17)");
    EXPECT_EQ(m2g::format(waits(WaitCause::RackPower, "rack nvl01 over budget: x, rack nvl02 over budget: y", 0,
                                {"nvl01", "nvl02"}, "maintenance mw-1: 2 nodes avoided")),
              "waiting policy=strict:nvlink wait=rack-power over=nvl01,nvl02 reason=rack nvl01 over budget: x, rack "
              "nvl02 over budget: y signals=maintenance mw-1: 2 nodes avoided");
    EXPECT_EQ(m2g::format(waits(WaitCause::Failsafe, "signals stale/missing, fail-safe defer holds deferrable work")),
              "waiting policy=strict:nvlink wait=failsafe reason=signals stale/missing, fail-safe defer holds "
              "deferrable work");
    // None is not written: the text is the one before wait= existed.
    EXPECT_EQ(m2g::format(waiting("x")), "waiting policy=strict:nvlink reason=x");
    // Every cause by its stable key, both ways.
    for (size_t i = 1; i < m2g::kw::kWaitCauses.size(); ++i) {
        const auto c = static_cast<WaitCause>(i);
        EXPECT_EQ(m2g::wait_cause_from(m2g::to_string(c)), c) << i;
        EXPECT_EQ(m2g::parse_placement(m2g::format(waits(c, "r"))).wait, c) << i;
    }
    EXPECT_EQ(m2g::to_string(WaitCause::None), std::string());
    EXPECT_EQ(m2g::wait_cause_from(""), std::nullopt);
    EXPECT_EQ(m2g::wait_cause_from("Switch"), std::nullopt);
    // The typed fields decide, whatever the sentence says.
    EXPECT_EQ(m2g::parse_placement("waiting policy=any wait=maintenance reason=waiting for 18 free healthy nodes with 9"),
              [] {
                  PlacementAnnotation p = waits(WaitCause::Maintenance, "waiting for 18 free healthy nodes with 9");
                  p.policy = "any";
                  return p;
              }());
    // A newer m2g's cause reads as other; nonsense in need= and over= as none.
    const PlacementAnnotation newer = m2g::parse_placement("waiting policy=prefer:nvlink wait=cooling need=x over=- "
                                                           "reason=rack nvl01 over budget: 0.0 kW free");
    EXPECT_EQ(newer.wait, WaitCause::Other);
    EXPECT_EQ(newer.need, 0);
    EXPECT_TRUE(newer.over.empty());
    EXPECT_EQ(newer.reason, "rack nvl01 over budget: 0.0 kW free");
    // wait= in a placed part or free text is no field.
    EXPECT_EQ(m2g::parse_placement("domains=nvl01 leaves=- policy=strict:nvlink wait=switch reason=x").wait,
              WaitCause::None);
    EXPECT_EQ(m2g::parse_placement("waiting policy=strict:nvlink reason=a wait=switch b").reason, "a wait=switch b");
    // Through the segment, beside the admission part.
    Annotation both;
    both.placement = waits(WaitCause::RowPower, "row row1 over budget: 4.0 kW free, job needs 5.0 kW", 0, {"row1"});
    both.admission = deferred();
    EXPECT_EQ(m2g::read_annotation(m2g::write_annotation(m2g::write_annotation("", deferred()), *both.placement)), both);
}

// Records written before wait= (jobs in accounting databases) hold only the
// sentence: the parser derives the cause from it, from the exact texts
// Engine::place() and gate() wrote, so `m2g explain` reads them as before.
TEST(AnnotationStruct, LegacyWaitingTextsDeriveTheirCause)
{
    struct Want {
        const char* reason;
        WaitCause wait;
        int need;
        std::vector<std::string> over;
    };
    const Want want[] = {
        // Engine::place()
        {"waiting for an NVLink domain with 18 free healthy nodes (best now: nvl01 with 17)", WaitCause::NvlinkDomain,
         18, {}},
        {"waiting for an NVLink domain with 12 free healthy nodes (best now: nvl01 with 8), avoided: nvl05 (NVLink "
         "fault), 2 degraded nodes",
         WaitCause::NvlinkDomain, 12, {}},
        {"waiting for 2 NVLink domains with 36 free healthy nodes (best now: 3 domains)", WaitCause::NvlinkDomain, 36,
         {}},
        {"waiting for a leaf switch with 20 free healthy nodes (best now: 2 leaf switches)", WaitCause::Switch, 20, {}},
        {"waiting for a spine switch with 200 free healthy nodes (best now: 4 leaf switches)", WaitCause::Switch, 200,
         {}},
        {"waiting for 200 free healthy nodes under one switch (usable now: 144)", WaitCause::Nodes, 200, {}},
        {"waiting for 36 free healthy nodes in whole segments under one switch (usable now: 18, avoided: nvl01 (over "
         "its power or thermal limit))",
         WaitCause::Nodes, 36, {}},
        {"the job asks for no nodes", WaitCause::Other, 0, {}},
        {"20 nodes are not a whole number of segments of 8, ask for a multiple of --m2g-segment", WaitCause::Other, 0,
         {}},
        // gate(): the blocking sentence first, then its notes
        {"site power: 1.0 kW free of 1200.0 kW (event dr-1 -25%)", WaitCause::SitePower, 0, {}},
        {"site power: 0.0 kW free of 10.0 kW, maintenance mw-1: 2 nodes avoided", WaitCause::SitePower, 0, {}},
        {"pacing: 4 GPUs already started this interval", WaitCause::Pacing, 0, {}},
        {"signals stale/missing, fail-safe defer holds deferrable work, rack nvl01 over budget: 0.0 kW free, job "
         "needs 1.7 kW/node",
         WaitCause::Failsafe, 0, {}},
        {"rack nvl01 over budget: 0.0 kW free, job needs 1.7 kW/node", WaitCause::RackPower, 0, {"nvl01"}},
        {"rack nvl01 over budget: 7.0 kW free, job needs 1.7 kW/node, rack nvl02 over budget: 12.0 kW free, job needs "
         "1.7 kW/node, row row2 over budget: 2.0 kW free, job needs 3.3 kW",
         WaitCause::RackPower, 0, {"nvl01", "nvl02"}},
        {"row row1 over budget: 2.0 kW free, job needs 6.6 kW", WaitCause::RowPower, 0, {"row1"}},
        {"maintenance mw-1: 18 nodes avoided", WaitCause::Maintenance, 0, {}},
        {"maintenance mw-1: 17 nodes avoided, 2 nodes down, rack nvl03 over budget: 0.0 kW free, job needs 1.7 "
         "kW/node",
         WaitCause::Maintenance, 0, {}},
        {"3 nodes down", WaitCause::NodesDown, 0, {}},
        {"3 nodes down, rack nvl01 over budget: 0.0 kW free, job needs 1.7 kW/node", WaitCause::NodesDown, 0, {}},
        {"m2g: internal error: bad_alloc", WaitCause::Other, 0, {}},
        {"something new", WaitCause::Other, 0, {}},
        {"", WaitCause::Other, 0, {}},
    };
    for (const Want& w : want) {
        const PlacementAnnotation p =
            m2g::parse_placement(std::string("waiting policy=strict:nvlink reason=") + w.reason);
        EXPECT_EQ(p, waits(w.wait, w.reason, w.need, w.over)) << w.reason;
        // Written again, the typed fields round trip.
        EXPECT_EQ(m2g::parse_placement(m2g::format(p)), p) << w.reason;
    }
    EXPECT_EQ(m2g::parse_placement("waiting").wait, WaitCause::Other);
    EXPECT_EQ(m2g::parse_placement("waiting policy=x reason=waiting for  nodes with nodes").need, 0);
}

TEST(AnnotationStruct, SegmentRulesHoldForTypedWriters)
{
    // Separators and line breaks in free text cannot break the segment.
    PlacementAnnotation p = waiting("a; b] c\nd");
    const std::string c = m2g::write_annotation("", p);
    EXPECT_EQ(c, "m2g:[waiting policy=strict:nvlink reason=a, b) c d]");
    EXPECT_EQ(m2g::read_annotation(c).placement->reason, "a, b) c d");
    EXPECT_EQ(m2g::read_annotation(c).admission, std::nullopt);
    // slurm-bridge's JSON stays as it is.
    const std::string bridge = R"({"pods":["ml/train-0"]})";
    EXPECT_EQ(m2g::write_annotation(bridge, placed()), bridge);
    EXPECT_EQ(m2g::write_annotation(bridge, deferred()), bridge);
    // The admission part follows the placement part and each replaces only its own.
    std::string both = m2g::write_annotation("", deferred());
    both = m2g::write_annotation(both, waiting("x"));
    EXPECT_EQ(both.rfind("m2g:[waiting policy=strict:nvlink reason=x; admission=defer class=training ", 0), 0u) << both;
    EXPECT_EQ(*m2g::read_annotation(both).admission, deferred());
}

TEST(AnnotationStruct, ScoresKeepEveryDigit)
{
    EXPECT_EQ(m2g::format_score(17), "17");
    EXPECT_EQ(m2g::format_score(0), "0");
    EXPECT_EQ(m2g::format_score(8.5), "8.5");
    EXPECT_EQ(m2g::format_score(100000), "100000");
    EXPECT_EQ(m2g::format_score(1234567), "1234567");
    for (const double s : {0.1 + 0.2, 1e-7, 123456.789, 1e300})
        EXPECT_EQ(std::strtod(m2g::format_score(s).c_str(), nullptr), s) << m2g::format_score(s);
}

TEST(AnnotationStruct, GarbageNeverThrowsAndLeavesFieldsEmpty)
{
    for (const char* text : {"", " ", "=", "= == === reason=", "policy=", "waiting", "domains=,,, leaves=",
                             "score=abc domains=x", "\xff\xfe\x01=\x02"}) {
        const PlacementAnnotation p = m2g::parse_placement(text);
        EXPECT_FALSE(p.score && !std::isfinite(*p.score)) << text;
        for (const std::string& d : p.domains)
            EXPECT_FALSE(d.empty()) << text;
    }
    EXPECT_EQ(m2g::parse_placement("score=abc domains=x").score, std::nullopt);
    EXPECT_EQ(m2g::parse_placement("waiting").state, PlacementState::Waiting);
    EXPECT_EQ(m2g::parse_placement("reason=x").state, PlacementState::None);
    for (const char* text : {"", "released at : admit", "released at nonsense: defer until=soon w_gpu=abc cause= reason=",
                             "defer w_gpu=-5 until=2026-13-45T99:00:00Z user_begin=x avoid=many nodes",
                             "admit w_gpu=inf avoid=0 nodes () user_begin=-3", "monitor would ", "\x01\x02=\x03"}) {
        const AdmissionAnnotation a = m2g::parse_admission(text);
        EXPECT_EQ(a.released_at, 0) << text;
        EXPECT_EQ(a.w_gpu, 0) << text;
        EXPECT_EQ(a.until, 0) << text;
        EXPECT_EQ(a.avoid_nodes, 0) << text;
        EXPECT_EQ(a.user_begin, 0) << text;
    }
    const AdmissionAnnotation g = m2g::parse_admission("released at nonsense: defer until=soon class=gaming");
    EXPECT_EQ(g.verdict, Verdict::Defer);
    EXPECT_EQ(g.workload_class, WorkloadClass::Unset);
    EXPECT_EQ(g.unknown_class, "gaming");
    EXPECT_EQ(m2g::parse_admission("admission-ish words").verdict, std::nullopt);
}

// m2g-curtaild's part comes last and leaves the other two alone.
TEST(Annotation, CurtailPartFollowsAdmission)
{
    std::string c = set_annotation("ticket 7 m2g:[domains=nvl01; admission=admit class=training]",
                                   AnnotationPart::Curtail, "cap w_gpu=300 cause=dr-1 scope=site at=2026-11-29T20:00:00Z");
    EXPECT_EQ(c, "ticket 7 m2g:[domains=nvl01; admission=admit class=training; curtail=cap w_gpu=300 cause=dr-1 "
                 "scope=site at=2026-11-29T20:00:00Z]");
    c = set_annotation(c, AnnotationPart::Placement, "domains=nvl02");
    c = set_annotation(c, AnnotationPart::Admission, "admit class=batch");
    EXPECT_EQ(get_annotation(c, AnnotationPart::Curtail), "cap w_gpu=300 cause=dr-1 scope=site at=2026-11-29T20:00:00Z");
    EXPECT_EQ(get_annotation(c, AnnotationPart::Placement), "domains=nvl02");
    EXPECT_EQ(get_annotation(c, AnnotationPart::Admission), "admit class=batch");
    c = set_annotation(c, AnnotationPart::Curtail, "");
    EXPECT_EQ(c, "ticket 7 m2g:[domains=nvl02; admission=admit class=batch]");
}

// The curtail part's typed form: one writer, one parser, the text as
// m2g-curtaild has always written it.
TEST(Annotation, CurtailPartRoundTrips)
{
    CurtailAnnotation c;
    c.step = CurtailStep::Cap;
    c.w_gpu = 300;
    c.cause = "dr-1";
    c.scope = "site";
    c.at = 1795982400;  // 2026-11-29T20:00:00Z
    EXPECT_EQ(format(c), "cap w_gpu=300 cause=dr-1 scope=site at=2026-11-29T20:00:00Z");
    EXPECT_EQ(parse_curtail(format(c)), c);
    c.monitor = true;
    EXPECT_EQ(format(c), "monitor would cap w_gpu=300 cause=dr-1 scope=site at=2026-11-29T20:00:00Z");
    EXPECT_EQ(parse_curtail(format(c)), c);
    CurtailAnnotation r;
    r.step = CurtailStep::Uncap;
    r.cause = "restore";
    r.scope = "nvl03";
    r.at = 1795982400;
    EXPECT_EQ(format(r), "uncap cause=restore scope=nvl03 at=2026-11-29T20:00:00Z");
    EXPECT_EQ(parse_curtail(format(r)), r);
    for (CurtailStep s : {CurtailStep::Suspend, CurtailStep::Signal, CurtailStep::Requeue, CurtailStep::Resume}) {
        r.step = s;
        EXPECT_EQ(parse_curtail(format(r)), r) << to_string(s);
    }
    EXPECT_EQ(format(CurtailAnnotation{}), "") << "no step, no part";

    const std::string comment = write_annotation("m2g:[domains=nvl01; admission=admit class=training]", c);
    EXPECT_EQ(comment, "m2g:[domains=nvl01; admission=admit class=training; curtail=monitor would cap w_gpu=300 "
                       "cause=dr-1 scope=site at=2026-11-29T20:00:00Z]");
    const Annotation a = read_annotation(comment);
    ASSERT_TRUE(a.curtail);
    EXPECT_EQ(*a.curtail, c);
    EXPECT_FALSE(read_annotation("m2g:[domains=nvl01]").curtail);

    // Anything else never throws; what is not recognised stays empty.
    const CurtailAnnotation g = parse_curtail("throttle w_gpu=lots cause=x at=yesterday");
    EXPECT_FALSE(g.step);
    EXPECT_EQ(g.w_gpu, 0);
    EXPECT_EQ(g.cause, "x");
    EXPECT_EQ(g.at, 0);
    EXPECT_EQ(curtail_step_from("suspend"), CurtailStep::Suspend);
    EXPECT_EQ(curtail_step_from("pause"), std::nullopt);
}

// defer=no: an honoured --m2g-defer=no, so that readers outside slurmctld
// (m2g-curtaild) leave the job alone.
TEST(Annotation, HonouredNoDeferIsRecorded)
{
    m2g::AdmissionPolicy ap;
    m2g::Decision d;
    d.deferrable = false;
    m2g::JobIntent intent;
    intent.workload_class = m2g::WorkloadClass::Training;
    intent.defer = m2g::DeferConsent::No;
    const m2g::AdmissionAnnotation a = m2g::admission_annotation(d, intent, ap, 0, false);
    EXPECT_TRUE(a.no_defer);
    EXPECT_EQ(m2g::format(a), "admit class=training w_gpu=413 defer=no");
    EXPECT_EQ(m2g::parse_admission(m2g::format(a)), a);
    d.deferrable = true;  // converted (NoDeferAction=convert): deferrable after all
    EXPECT_FALSE(m2g::admission_annotation(d, intent, ap, 0, false).no_defer);
    EXPECT_FALSE(m2g::parse_admission("admit class=training w_gpu=413").no_defer);
}

// A placement by preemption names its victims and the work they lost;
// older readers' fields parse as before, and a text without them has none.
TEST(AnnotationStruct, PreemptionVictimsRoundTrip)
{
    const std::string text = "domains=nvl02 leaves=leaf01 policy=strict:nvlink score=0 preempted=17,23 "
                             "evicted_gpu_h=12.5 reason=preempts 2 job(s) (12.5 GPU-h of work) to clear nvl02";
    const m2g::PlacementAnnotation p = m2g::parse_placement(text);
    EXPECT_EQ(p.state, m2g::PlacementState::Placed);
    EXPECT_EQ(p.domains, (std::vector<std::string>{"nvl02"}));
    EXPECT_EQ(p.preempted, (std::vector<uint32_t>{17, 23}));
    ASSERT_TRUE(p.evicted_gpu_h);
    EXPECT_DOUBLE_EQ(*p.evicted_gpu_h, 12.5);
    EXPECT_EQ(p.reason, "preempts 2 job(s) (12.5 GPU-h of work) to clear nvl02");
    EXPECT_EQ(m2g::format(p), text);
    const m2g::PlacementAnnotation plain = m2g::parse_placement("domains=nvl01 leaves=leaf01 policy=strict:nvlink reason=x");
    EXPECT_TRUE(plain.preempted.empty());
    EXPECT_FALSE(plain.evicted_gpu_h);
    // Junk ids are dropped, not guessed.
    EXPECT_EQ(m2g::parse_placement("domains=a leaves=- policy=p preempted=5,x,-3,0 reason=r").preempted,
              (std::vector<uint32_t>{5}));
}
