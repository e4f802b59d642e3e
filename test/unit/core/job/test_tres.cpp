// GPU counts from the TRES strings slurmctld keeps for a job.
#include <gtest/gtest.h>

#include "core/job/tres.hpp"

using m2g::gpus_in_tres;
using m2g::job_gpus;

TEST(Tres, GpuItems)
{
    EXPECT_EQ(gpus_in_tres("gres:gpu:4"), 4);
    EXPECT_EQ(gpus_in_tres("gres/gpu=8"), 8);
    EXPECT_EQ(gpus_in_tres("gres:gpu:a100:2"), 2);
    EXPECT_EQ(gpus_in_tres("gres:gpu:a100"), 1);
    EXPECT_EQ(gpus_in_tres("gres:gpu"), 1);
    EXPECT_EQ(gpus_in_tres("gres:gpu:1k"), 1024);
    EXPECT_EQ(gpus_in_tres("gres:gpu:a100:2,gres:gpu:h100:1"), 3);
}

TEST(Tres, OtherItemsAndJunkCountNothing)
{
    EXPECT_EQ(gpus_in_tres(""), 0);
    EXPECT_EQ(gpus_in_tres("gres:mps:100"), 0);
    EXPECT_EQ(gpus_in_tres("gres:gpufoo:3"), 0);
    EXPECT_EQ(gpus_in_tres("license:x:2,gres:gpu:4"), 4);
    EXPECT_EQ(gpus_in_tres("gres:gpu:a100:x2"), 0);
    EXPECT_EQ(gpus_in_tres("gres:gpu:99999999999999999999"), 0);
}

TEST(Tres, JobTotals)
{
    EXPECT_EQ(job_gpus("gres:gpu:8", "gres:gpu:4", "", 4, 0), 8);
    EXPECT_EQ(job_gpus("", "gres:gpu:4", "", 18, 0), 72);
    EXPECT_EQ(job_gpus("", "", "gres:gpu:1", 2, 8), 8);
    EXPECT_EQ(job_gpus("", "", "gres:gpu:1", 2, 0), 2);
    EXPECT_EQ(job_gpus("", "", "", 3, 3), 0);
    EXPECT_EQ(job_gpus("", "gres:gpu:4", "", 0, 0), 4);
}
