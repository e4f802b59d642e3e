// m2g core: the AdminComment segment.
#include "topology/annotation.hpp"

#include <algorithm>

#include "topology/well_known.hpp"

namespace m2g {

namespace {

struct Segment {
    std::string before, after;  // text outside the segment, trimmed
    std::string placement, admission;
};

std::string trim(std::string_view s)
{
    while (!s.empty() && s.front() == ' ')
        s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ')
        s.remove_suffix(1);
    return std::string(s);
}

Segment split(std::string_view comment)
{
    Segment seg;
    const auto start = comment.find(kw::kAnnotationOpen);
    if (start == std::string_view::npos) {
        seg.before = trim(comment);
        return seg;
    }
    const size_t body = start + std::string_view(kw::kAnnotationOpen).size();
    auto end = comment.find(']', body);
    if (end == std::string_view::npos)
        end = comment.size();
    seg.before = trim(comment.substr(0, start));
    seg.after = end < comment.size() ? trim(comment.substr(end + 1)) : "";
    const std::string_view inner = comment.substr(body, end - body);
    const std::string_view admit = kw::kAnnotationAdmit;
    size_t pos = 0;
    while (pos <= inner.size()) {
        auto semi = inner.find(';', pos);
        if (semi == std::string_view::npos)
            semi = inner.size();
        const std::string piece = trim(inner.substr(pos, semi - pos));
        if (piece.rfind(admit, 0) == 0)
            seg.admission = piece.substr(admit.size());
        else if (!piece.empty())
            seg.placement += (seg.placement.empty() ? "" : ", ") + piece;
        pos = semi + 1;
    }
    return seg;
}

std::string clean(std::string_view text)
{
    std::string out = trim(text);
    std::replace(out.begin(), out.end(), ']', ')');
    std::replace(out.begin(), out.end(), ';', ',');
    return out;
}

}  // namespace

bool foreign_structured(std::string_view comment)
{
    const size_t i = comment.find_first_not_of(" \t\r\n");
    return i != std::string_view::npos && (comment[i] == '{' || comment[i] == '[');
}

std::string set_annotation(std::string_view comment, AnnotationPart part, std::string_view text)
{
    if (foreign_structured(comment))
        return std::string(comment);
    Segment seg = split(comment);
    (part == AnnotationPart::Placement ? seg.placement : seg.admission) = clean(text);
    std::string inner = seg.placement;
    if (!seg.admission.empty())
        inner += (inner.empty() ? "" : "; ") + std::string(kw::kAnnotationAdmit) + seg.admission;
    std::string out = seg.before;
    if (!inner.empty())
        out += (out.empty() ? "" : " ") + std::string(kw::kAnnotationOpen) + inner + "]";
    if (!seg.after.empty())
        out += (out.empty() ? "" : " ") + seg.after;
    return out;
}

std::string get_annotation(std::string_view comment, AnnotationPart part)
{
    const Segment seg = split(comment);
    return part == AnnotationPart::Placement ? seg.placement : seg.admission;
}

}  // namespace m2g
