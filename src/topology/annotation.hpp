// m2g core: the "m2g:[...]" segment m2g keeps in a job's AdminComment.
//
//   m2g:[<placement>; admission=<admission>]
//
// select/m2g writes the placement part (where the job went and why, or what
// it waits for); job_submit/m2g writes the admission part, which starts
// with "admission=". Each writer replaces only its own part, and any text other
// tools keep in AdminComment outside the segment is left as it is.
#pragma once

#include <string>
#include <string_view>

namespace m2g {

enum class AnnotationPart { Placement, Admission };

// Whether another tool keeps AdminComment as structured data (it starts
// with '{' or '['): slurm-bridge writes {"pods":[...]} there and parses it
// back strictly, so m2g must not add to it.
bool foreign_structured(std::string_view comment);

// `comment` with `part` of the m2g segment set to `text` (empty: removed;
// the segment goes when both parts are empty). ']' and ';' in `text` are
// replaced by ')' and ',' so the segment stays parseable. A comment that
// foreign_structured() is returned unchanged.
std::string set_annotation(std::string_view comment, AnnotationPart part, std::string_view text);

// The text of `part` ("" when absent).
std::string get_annotation(std::string_view comment, AnnotationPart part);

}  // namespace m2g
