// The AdminComment "m2g:[...]" segment: each writer replaces only its part.
#include <gtest/gtest.h>

#include "topology/annotation.hpp"

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
