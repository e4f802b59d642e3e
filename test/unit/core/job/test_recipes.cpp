// The recipe catalog: the shipped example, expansion, and every error.
#include <gtest/gtest.h>

#include "core/base/error.hpp"
#include "core/job/recipes.hpp"

using namespace m2g;

namespace {

std::string error_of(const std::string& text)
{
    try {
        parse_recipes(text, "m2g-recipes.conf");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

const char* kExample = M2G_FIXTURES "/../../etc/m2g-recipes.conf.example";

}  // namespace

TEST(Recipes, ShippedExampleHasTheRealisticEntries)
{
    RecipeCatalog c = read_recipes(kExample);
    ASSERT_EQ(c.recipes.size(), 5u);
    const Recipe* ft = c.find("llama3-70b-finetune");
    ASSERT_NE(ft, nullptr);
    EXPECT_EQ(ft->intent.gpus, 16);
    EXPECT_EQ(ft->tp * ft->pp * ft->dp, 16);
    EXPECT_EQ(ft->precision, "bf16");
    EXPECT_EQ(ft->intent.workload_class, WorkloadClass::Finetune);
    EXPECT_EQ(ft->intent.runtime_s, 12 * 3600);
    EXPECT_EQ(ft->description, "70B bf16 fine-tune, TP8 x DP2");
    const Recipe* pt = c.find("llama3-405b-pretrain");
    ASSERT_NE(pt, nullptr);
    EXPECT_EQ(pt->intent.gpus, 512);
    EXPECT_EQ(pt->intent.segment, 16);
    EXPECT_EQ(pt->intent.runtime_s, 14 * 86400);
    EXPECT_EQ(c.find("vllm-llama3-70b-serve")->intent.defer, DeferConsent::No);
    EXPECT_EQ(c.find("gpu-benchmark")->intent.gpus, 1);
}

TEST(Recipes, ExplicitOptionsWinOverTheRecipe)
{
    RecipeCatalog c = read_recipes(kExample);
    JobIntent i;
    apply_option(i, "m2g-recipe", "llama3-70b-finetune", 0);
    apply_option(i, "m2g-class", "training", 0);
    expand_recipe(i, c);
    EXPECT_EQ(i.workload_class, WorkloadClass::Training);
    EXPECT_EQ(i.locality, Locality::Strict);
    EXPECT_EQ(i.model, "llama-3.1-70b");
    EXPECT_EQ(i.gpus, 16);
    EXPECT_EQ(i.power_w_per_gpu, 950);
    JobIntent unknown;
    unknown.recipe = "llama3-8b";
    try {
        expand_recipe(unknown, c);
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(std::string(e.what()),
                  std::string("--m2g-recipe=llama3-8b: no such recipe in ") + kExample +
                      "; known: llama3-70b-finetune, llama3-405b-pretrain, vllm-llama3-70b-serve, gpu-benchmark, "
                      "embed-8b-batch");
    }
}

// A recipe sizes the job it names unless the job sized itself: the fine-tune
// (16 GPUs, TP8: replicas of 8, 12 h) on 4-GPU nodes.
TEST(Recipes, SizeTheJobThatGaveNoneAndCheckTheOneThatDid)
{
    RecipeCatalog c = read_recipes(kExample);
    JobIntent i;
    i.recipe = "llama3-70b-finetune";
    expand_recipe(i, c);
    EXPECT_EQ(i.gpu_multiple, 8);
    // Nothing given: 4 nodes x 4 GPUs, its runtime as the limit.
    RecipeSize s = size_from_recipe(i, AskedSize{}, 4);
    EXPECT_TRUE(s.refusal.empty()) << s.refusal;
    EXPECT_EQ(s.nodes, 4);
    EXPECT_EQ(s.gpus_per_node, 4);
    EXPECT_EQ(s.time_limit_s, 12 * 3600);
    EXPECT_EQ(s.said, "-t 12:00:00 -N 4 --gres=gpu:4");
    // The partition's MaxTime cuts the recipe's runtime (a longer limit is refused or never starts).
    AskedSize capped;
    capped.max_time_limit_s = 4 * 3600;
    s = size_from_recipe(i, capped, 4);
    EXPECT_EQ(s.time_limit_s, 4 * 3600);
    EXPECT_EQ(s.said, "-t 04:00:00 (the partition's MaxTime; the recipe's runtime is 12:00:00) -N 4 --gres=gpu:4");
    // -t given: it wins; -N 8 alone: 2 GPUs per node.
    AskedSize a;
    a.time_limit_s = 3600;
    a.nodes = 8;
    s = size_from_recipe(i, a, 4);
    EXPECT_EQ(s.time_limit_s, 0);
    EXPECT_EQ(s.nodes, 0);
    EXPECT_EQ(s.gpus_per_node, 2);
    // --gres=gpu:2 alone: 8 nodes.
    a = AskedSize{};
    a.gpus_per_node = 2;
    s = size_from_recipe(i, a, 4);
    EXPECT_EQ(s.nodes, 8);
    EXPECT_EQ(s.gpus_per_node, 0);
    // Explicit -N and --gres win when they make whole replicas: 6 x 4 = 24 is three.
    a.nodes = 6;
    a.gpus_per_node = 4;
    s = size_from_recipe(i, a, 4);
    EXPECT_TRUE(s.refusal.empty()) << s.refusal;
    EXPECT_FALSE(s.sets() && (s.nodes || s.gpus_per_node));
    // ... and are refused, saying why and what is accepted, when they do not.
    a.nodes = 1;
    s = size_from_recipe(i, a, 4);
    EXPECT_EQ(s.refusal,
              "m2g: --m2g-recipe=llama3-70b-finetune runs on 16 GPUs in model replicas of 8 GPUs (TP*PP); this job "
              "asks for 4 (-N 1 x 4 per node), not a whole number of them. Ask for a multiple of 8; or leave -N and "
              "the GPU options out and m2g sizes the job from the recipe");
    EXPECT_FALSE(s.sets());
    a = AskedSize{};
    a.gpus_total = 12;
    EXPECT_NE(size_from_recipe(i, a, 4).refusal.find("asks for 12 (--gpus/--gpus-per-task)"), std::string::npos);
    a = AskedSize{};
    a.nodes = 3;  // 16 GPUs do not spread evenly over 3 nodes
    EXPECT_NE(size_from_recipe(i, a, 4).refusal.find("-N 3 cannot hold them evenly at most 4 per node"),
              std::string::npos);
    a = AskedSize{};
    a.gpus_per_node = 3;
    EXPECT_NE(size_from_recipe(i, a, 4).refusal.find("not a whole number of nodes at 3 GPUs per node"),
              std::string::npos);
    // A one-GPU recipe: one node with one GPU; no replica rule.
    JobIntent one;
    one.recipe = "gpu-benchmark";
    expand_recipe(one, c);
    EXPECT_EQ(one.gpu_multiple, 0);
    s = size_from_recipe(one, AskedSize{}, 4);
    EXPECT_EQ(s.nodes, 1);
    EXPECT_EQ(s.gpus_per_node, 1);
    // 512 GPUs on 4-GPU nodes: 128 nodes; on 8-GPU nodes: 64.
    JobIntent big;
    big.recipe = "llama3-405b-pretrain";
    expand_recipe(big, c);
    EXPECT_EQ(big.gpu_multiple, 128);
    EXPECT_EQ(size_from_recipe(big, AskedSize{}, 4).nodes, 128);
    EXPECT_EQ(size_from_recipe(big, AskedSize{}, 8).nodes, 64);
    // No recipe, or nodes of unknown size: nothing but the time limit.
    EXPECT_FALSE(size_from_recipe(JobIntent{}, AskedSize{}, 4).sets());
    s = size_from_recipe(i, AskedSize{}, 0);
    EXPECT_EQ(s.nodes, 0);
    EXPECT_EQ(s.time_limit_s, 12 * 3600);
    // The intent carries the replica rule through the job's environment.
    JobIntent back = decode_intent({"M2G_RECIPE=llama3-70b-finetune", "M2G_GPUS=16", "M2G_GPU_MULTIPLE=8"});
    EXPECT_EQ(back.gpu_multiple, 8);
    // m2g recipe show prints the expansion with the size.
    const std::string shown = format_recipe(*c.find("llama3-70b-finetune"), 4);
    EXPECT_NE(shown.find("  sizes a job   -t 12:00:00 -N 4 --gres=gpu:4 (on 4-GPU nodes"), std::string::npos)
        << shown;
    EXPECT_NE(shown.find("  by hand       a multiple of 8 GPUs"), std::string::npos) << shown;
}

TEST(Recipes, SlurmTimeFormats)
{
    EXPECT_EQ(parse_slurm_time("90", "t"), 90 * 60);
    EXPECT_EQ(parse_slurm_time("90:30", "t"), 90 * 60 + 30);
    EXPECT_EQ(parse_slurm_time("12:00:00", "t"), 12 * 3600);
    EXPECT_EQ(parse_slurm_time("2-12", "t"), 2 * 86400 + 12 * 3600);
    EXPECT_EQ(parse_slurm_time("2-12:30", "t"), 2 * 86400 + 12 * 3600 + 1800);
    EXPECT_EQ(parse_slurm_time("1-00:00:01", "t"), 86401);
    EXPECT_EQ(format_slurm_time(86401), "1-00:00:01");
    EXPECT_EQ(format_slurm_time(3600), "01:00:00");
    for (const char* bad : {"", "1:2:3:4", "-1", "1-", "a", "0", "400-00", "1::2"})
        EXPECT_THROW(parse_slurm_time(bad, "t"), ParseError) << bad;
    // Found by contrib/m2g-fuzz (fuzz_recipes, Runtime=:-00): a field that is
    // not a number escaped as std::invalid_argument from std::stoll.
    for (const char* bad : {":-00", "1:-2", "::-1", "9999999999-00", "1:99999999999"})
        EXPECT_THROW(parse_slurm_time(bad, "t"), ParseError) << bad;
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 Runtime=:-00\n").rfind("m2g-recipes.conf:1: ", 0), 0u);
}

TEST(RecipeErrors, NameFileLineAndWhatIsAccepted)
{
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 Gpu=8\n"),
              "m2g-recipes.conf:1: unknown key 'Gpu' in a RecipeName line; accepted keys: Model, Params, Precision, "
              "TP, PP, DP, Gpus, Topology, Segment, Class, Defer, PowerPerGpuW, Runtime, Description");
    EXPECT_EQ(error_of("Recipe=a\n"), "m2g-recipes.conf:1: unknown key 'Recipe'; every line starts with RecipeName=<name>");
    EXPECT_EQ(error_of("RecipeName=a Gpus=8\nRecipeName=a Gpus=4\n"),
              "m2g-recipes.conf:2: RecipeName=a is already defined at m2g-recipes.conf:1");
    EXPECT_EQ(error_of("RecipeName=a\n"), "m2g-recipes.conf:1: RecipeName=a needs Gpus=<count>");
    EXPECT_EQ(error_of("RecipeName=A_B Gpus=1\n"),
              "m2g-recipes.conf:1: RecipeName=A_B is not valid; use 1-64 characters of a-z, 0-9, '_', '.', '-'");
    EXPECT_EQ(error_of("RecipeName=a Gpus=16 TP=8 PP=1 DP=1\n"),
              "m2g-recipes.conf:1: RecipeName=a has Gpus=16 but TP*PP*DP = 8*1*1 = 8");
    EXPECT_EQ(error_of("RecipeName=a Gpus=12 TP=8\n"),
              "m2g-recipes.conf:1: RecipeName=a has Gpus=12, not a multiple of TP=8");
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 Precision=fp12\n"),
              "m2g-recipes.conf:1: Precision=fp12 is not valid; expected one of fp32, tf32, bf16, fp16, fp8, fp4, "
              "int8, int4");
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 Params=seventy\n"),
              "m2g-recipes.conf:1: Params=seventy is not valid; expected a parameter count such as 8B, 70B, 1.5B or "
              "180M");
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 Class=trainin\n"),
              "m2g-recipes.conf:1: Class=trainin: unknown class; expected training, finetune, inference, batch, "
              "benchmark, dataproc or agentic");
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 Topology=tight\n"),
              "m2g-recipes.conf:1: Topology=tight: expected strict, prefer or any, optionally followed by :nvlink, "
              "leaf or spine (e.g. strict:nvlink)");
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 Defer=until=now+1h\n"),
              "m2g-recipes.conf:1: Defer=until=now+1h is not valid; expected ok or no (a deadline is the user's to "
              "give)");
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 PowerPerGpuW=0\n"),
              "m2g-recipes.conf:1: PowerPerGpuW=0 is not valid; expected watts per GPU, more than 0 and at most 5000");
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 Runtime=forever\n"),
              "m2g-recipes.conf:1: Runtime=forever: 'forever' is not a time; expected MM, MM:SS, HH:MM:SS, D-HH, "
              "D-HH:MM or D-HH:MM:SS");
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 Description=\"unclosed\n"),
              "m2g-recipes.conf:1: a double quote is not closed");
    EXPECT_EQ(error_of("RecipeName=a Gpus=8 Model=llama 3\n"), "m2g-recipes.conf:1: expected Key=Value, found \"3\"");
}
