// m2g core: the "m2g:[...]" segment m2g keeps in a job's AdminComment.
//
//   m2g:[<placement>; admission=<admission>; curtail=<curtail>]
//
// select/m2g writes the placement part (where the job went and why, or what
// it waits for); job_submit/m2g writes the admission part, which starts
// with "admission="; m2g-curtaild writes the curtail part, which starts with
// "curtail=" (what it last did to the running job during a power event, or
// in CurtailMode=monitor what it would have done).
// Each writer replaces only its own part, and any text other tools keep in
// AdminComment outside the segment is left as it is.
//
// The parts are key=value words that sacct users read as they are, so
// they stay plain text; PlacementAnnotation, AdmissionAnnotation and
// CurtailAnnotation are their typed form, format() their one writer and
// parse_placement() / parse_admission() / parse_curtail() their one parser
// (`m2g explain`, `m2g status`, m2g-exporter, m2g-curtaild and the release
// thread read them through it):
//
//   placement, by state:
//     Placed   domains=<d,...|-> leaves=<l,...|-> policy=<p> score=<s>[ preempted=<jobid,...>]
//              [ evicted_gpu_h=<h>] reason=<why>[ signals=<notes>]
//     Waiting  waiting policy=<p> wait=<cause>[ need=<n>][ over=<name,...>] reason=<what it waits for>
//              [ signals=<notes>]
//     Stock    policy=<p> <notes>          (locality any: cons_tres placed it, the gate left notes)
//   admission:
//     [released at <RFC 3339>: ][monitor would ]<admit|defer|pace|reject>[ class=<c>][ w_gpu=<W>][ defer=no][ signal=[B:]<n>]
//     [ until=<RFC 3339>][ cause=<c>][ reason=<why>][ avoid=<n> nodes (<for>)][ user_begin=<epoch s>]
//   curtail:
//     [monitor would ]<cap|suspend|signal|requeue|resume|uncap>[ w_gpu=<W>][ cause=<c>][ scope=<s>] at=<RFC 3339>
//
// A waiting part's wait=, need= and over= are its typed cause (WaitCause,
// placement.hpp), the nodes it waits for and the racks or rows over budget:
// readers classify a wait by them, never by reason=, which is for people.
// Parts written before wait= existed (jobs in accounting databases) have
// none: parse_placement() derives them from the reason sentence those m2g
// releases wrote, and nothing else reads that sentence.
//
// reason= and signals= run to the end of the placement part (reason= up to
// " signals="); the admission reason= runs up to " avoid=" or
// " user_begin=", avoid= up to " user_begin=": they may hold '=' and
// spaces. Free text is written on one line with ';' and ']' replaced by
// ',' and ')', so parse(format(x)) == x for any x whose text fields hold
// none of ";]\n\r\t", do not start or end with a space, and do not contain
// the words that end them (" signals=", " avoid=", " user_begin="), and
// whose wait, need (>= 0) and over (names without ',' or spaces) are set
// on a Waiting x only, with wait not None (a Waiting text without wait=
// reads as the legacy one above).
// Parsing never throws on any text: what it does not recognise stays empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/job/intent.hpp"
#include "core/job/verdict.hpp"

namespace m2g {

// ---- the placement part (select/m2g) ----------------------------------------------

enum class PlacementState {
    None,     // no placement text m2g recognises
    Placed,   // the engine chose the nodes
    Waiting,  // the job waits (topology, power, pacing, maintenance, ...)
    Stock,    // locality any: cons_tres placed it; `signals` says what the gate avoided
};

struct PlacementAnnotation {
    PlacementState state = PlacementState::None;
    std::vector<std::string> domains;  // Placed: NVLink domains (none written "-")
    std::vector<std::string> leaves;   // Placed: leaf switches (none written "-")
    std::string policy;                // "strict:nvlink", "prefer:leaf", "any"
    std::optional<double> score;       // Placed: the engine's score, lower is better
    std::string reason;                // Placed: why there; Waiting: what it waits for
    std::string signals;               // what the signals gate avoided or noted ("": nothing)
    // Waiting only (see above): never None once parsed.
    WaitCause wait = WaitCause::None;  // wait=
    int need = 0;                      // need=: NvlinkDomain, Switch, Nodes: the nodes it waits for; 0 none
    std::vector<std::string> over;     // over=: RackPower: the racks over budget; RowPower: the rows
    int64_t prefer_since = 0;          // prefer_since= (epoch s): the prefer wait's start; 0 none runs
    int64_t room_since = 0;            // room_since= (epoch s): PowerRoom: its wait for room began; 0 none
    // Placed only: the jobs evicted to make room (preempted=, ascending job
    // ids) and the work they lost (evicted_gpu_h=, GPU-hours; set whenever
    // the placement came from a preemption plan, also with no victims).
    std::vector<uint32_t> preempted;
    std::optional<double> evicted_gpu_h;

    // m2g placed it (Placed) or let cons_tres place it with notes (Stock).
    bool placed() const { return state == PlacementState::Placed || state == PlacementState::Stock; }
    bool operator==(const PlacementAnnotation& o) const;
};

// The placement part's text ("" for state None).
std::string format(const PlacementAnnotation& p);
PlacementAnnotation parse_placement(std::string_view text);

// A score as format() writes it: "%g" ("17", "8.5"), with more digits
// when "%g" would round it.
std::string format_score(double score);

// ---- the admission part (job_submit/m2g) ------------------------------------------

struct AdmissionAnnotation {
    int64_t released_at = 0;         // "released at <t>: ": the release thread let the job go at t; 0 not
    bool monitor = false;            // "monitor would ...": Admission=monitor, nothing enforced
    std::optional<Verdict> verdict;  // nullopt: none, or a word this m2g does not know
    // class=: the class admission assumed (Unset is written "none");
    // nullopt: no class=. A name this m2g does not know (a newer m2g's)
    // parses to Unset and is kept in unknown_class, which format() writes.
    std::optional<WorkloadClass> workload_class;
    std::string unknown_class;
    int w_gpu = 0;                   // w_gpu=: whole watts per GPU admission assumed; 0 unknown
    bool no_defer = false;           // defer=no: the owner's --m2g-defer=no was honoured (not deferrable)
    std::string checkpoint_signal;   // signal=[B:]N: the job's --signal (m2g-curtaild's checkpoint request), "" none
    int64_t until = 0;               // until= (epoch s): Defer/Pace eligible from; 0 none
    std::string cause;               // event id, "maintenance:<id>", "power:site", "failsafe"; "" none
    std::string reason;              // reason= ("" none)
    int avoid_nodes = 0;             // avoid=<n> nodes (<avoid_for>): nodes select/m2g keeps it off
    std::string avoid_for;           //   "maintenance mw-1,mw-2"
    int64_t user_begin = 0;          // user_begin=: the owner's own --begin (epoch s); 0 none

    // m2g holds the job back: a Defer or Pace in force, not monitor-only
    // and not released (until= is the caller's to judge).
    bool waits() const;
    // waits() and until= still ahead of `now`: admission holds the pending
    // job back at `now` (`m2g status`, `m2g explain`).
    bool holds_at(int64_t now) const;
    bool operator==(const AdmissionAnnotation& o) const;
};

// What an admission cause= names. The words are written by admission
// (core/power/admission.cpp) with these constants and read back only
// through cause_of().
inline constexpr std::string_view kCauseMaintenance = "maintenance:";  // + the window's id
inline constexpr std::string_view kCauseSitePower = "power:site";
inline constexpr std::string_view kCauseFailsafe = "failsafe";

enum class CauseKind {
    None,         // no cause=
    Event,        // a demand-response event: id is its id
    Maintenance,  // a maintenance window: id is its id
    SitePower,    // the site budget (no event)
    Failsafe,     // SignalsFailSafe=defer: signals stale or missing
    Other,        // a word this m2g does not know (a newer m2g's, "power:<row>")
};
struct AdmissionCause {
    CauseKind kind = CauseKind::None;
    std::string id;  // Event, Maintenance: the event's or window's id
};
AdmissionCause cause_of(std::string_view cause);

// signal=: "[B:]N" (1 <= N <= 64) to (N, batch shell only); nullopt otherwise.
std::optional<std::pair<int, bool>> parse_checkpoint_signal(std::string_view text);

// The admission part's text, without the "admission=" the segment adds.
std::string format(const AdmissionAnnotation& a);
AdmissionAnnotation parse_admission(std::string_view text);

// Whole watts as written in w_gpu= (0 for none, negative or not finite).
int whole_watts(double w);

// ---- the curtail part (m2g-curtaild) ------------------------------------------------

struct CurtailAnnotation {
    bool monitor = false;              // "monitor would ...": CurtailMode=monitor, nothing applied
    std::optional<CurtailStep> step;   // nullopt: none, or a word this m2g does not know
    int w_gpu = 0;                     // w_gpu=: cap, uncap, resume: the per-GPU cap set (whole W); 0 none
    std::string cause;                 // cause=: the event id, "power:<scope>", "restore"; "" none
    std::string scope;                 // scope=: "site", a row or a rack; "" none
    int64_t at = 0;                    // at= (epoch s): when m2g-curtaild acted; 0 none

    bool operator==(const CurtailAnnotation& o) const;
};

// The curtail part's text, without the "curtail=" the segment adds ("" for
// no step). parse_curtail(format(c)) == c for a c with a step, at != 0 and
// cause and scope without spaces, ';' or ']' (and w_gpu only on cap,
// uncap and resume).
std::string format(const CurtailAnnotation& c);
CurtailAnnotation parse_curtail(std::string_view text);

// ---- the segment --------------------------------------------------------------------

struct Annotation {
    std::optional<PlacementAnnotation> placement;  // nullopt: no placement part
    std::optional<AdmissionAnnotation> admission;  // nullopt: no admission part
    std::optional<CurtailAnnotation> curtail;      // nullopt: no curtail part

    bool operator==(const Annotation& o) const;
};

// The parts of `admin_comment`'s segment, parsed.
Annotation read_annotation(std::string_view admin_comment);

// Whether `admin_comment` holds an m2g segment (an empty one too).
bool has_annotation(std::string_view admin_comment);

// `comment` with one part of the segment replaced by `part`'s text, as
// set_annotation() does (an empty text removes the part).
std::string write_annotation(std::string_view comment, const PlacementAnnotation& part);
std::string write_annotation(std::string_view comment, const AdmissionAnnotation& part);
std::string write_annotation(std::string_view comment, const CurtailAnnotation& part);

// ---- the parts as text ----------------------------------------------------------------

// Curtail: what m2g-curtaild last did to the running job (CurtailAnnotation).
enum class AnnotationPart { Placement, Admission, Curtail };

// Whether another tool keeps AdminComment as structured data (it starts
// with '{' or '['): slurm-bridge writes {"pods":[...]} there and parses it
// back strictly, so m2g must not add to it.
bool foreign_structured(std::string_view comment);

// `text` as one line that cannot end the segment or a part: ']' and ';'
// become ')' and ',', line breaks and tabs spaces (admission's reasons are
// written through it before they reach a part).
std::string one_line(std::string_view text);

// `comment` with `part` of the m2g segment set to `text` (empty: removed;
// the segment goes when both parts are empty). ']' and ';' in `text` are
// replaced by ')' and ',' so the segment stays parseable. A comment that
// foreign_structured() is returned unchanged. `text` is format()'s.
std::string set_annotation(std::string_view comment, AnnotationPart part, std::string_view text);

// The text of `part` ("" when absent).
std::string get_annotation(std::string_view comment, AnnotationPart part);

}  // namespace m2g
