// --m2g-* options, their environment defaults and the spank_job_env
// encoding: what sbatch accepts, and the exact message for what it rejects.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/base/error.hpp"
#include "core/job/intent.hpp"

using namespace m2g;

namespace {

constexpr int64_t kNow = 1800000000;  // 2027-01-15

JobIntent parse(std::initializer_list<std::pair<const char*, const char*>> opts)
{
    JobIntent i;
    for (const auto& [n, v] : opts)
        apply_option(i, n, v, kNow);
    return i;
}

std::string error_of(const char* name, const char* value)
{
    JobIntent i;
    try {
        apply_option(i, name, value, kNow);
    } catch (const ParseError& e) {
        EXPECT_EQ(i, JobIntent()) << "a rejected option must leave the intent unchanged";
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Options, EveryOptionHasHelpAndAnEnvironmentName)
{
    const auto& specs = option_specs();
    ASSERT_EQ(specs.size(), 7u);
    for (const auto& s : specs) {
        EXPECT_EQ(std::string(s.name).rfind("m2g-", 0), 0u) << s.name;
        EXPECT_EQ(std::string(s.help).rfind("[m2g] ", 0), 0u) << s.name;
        EXPECT_EQ(std::string(s.env).rfind("M2G_", 0), 0u) << s.name;
    }
}

TEST(Options, GoodValues)
{
    JobIntent i = parse({{"m2g-topology", "strict"},
                         {"m2g-segment", "18"},
                         {"m2g-class", "training"},
                         {"m2g-recipe", "llama3-70b-finetune"},
                         {"m2g-defer", "until=now+2h"},
                         {"m2g-tag", "tenant=acme"},
                         {"m2g-tag", "model_name=llama-3.1-70b"},
                         {"m2g-tag", "tenant=globex"},
                         {"m2g-explain", ""}});
    EXPECT_EQ(i.locality, Locality::Strict);
    EXPECT_EQ(i.level, LocalityLevel::NVLink);
    EXPECT_EQ(i.segment, 18);
    EXPECT_EQ(i.workload_class, WorkloadClass::Training);
    EXPECT_EQ(i.recipe, "llama3-70b-finetune");
    EXPECT_EQ(i.defer, DeferConsent::Until);
    EXPECT_EQ(i.defer_until, kNow + 7200);
    ASSERT_EQ(i.tags.size(), 2u);
    EXPECT_EQ(i.tag("tenant"), "globex");  // the last one given wins
    EXPECT_TRUE(i.explain);
    EXPECT_EQ(parse({{"m2g-topology", "prefer:leaf"}}).level, LocalityLevel::Leaf);
    EXPECT_EQ(parse({{"m2g-topology", "any"}}).locality, Locality::Any);
    EXPECT_EQ(parse({{"m2g-defer", "no"}}).defer, DeferConsent::No);
}

TEST(Options, BadValuesNameOptionValueAndWhatIsAccepted)
{
    EXPECT_EQ(error_of("m2g-topology", "strikt"),
              "--m2g-topology=strikt: expected strict, prefer or any, optionally followed by :nvlink, leaf or spine "
              "(e.g. strict:nvlink)");
    EXPECT_EQ(error_of("m2g-topology", "strict:rack"),
              "--m2g-topology=strict:rack: expected strict, prefer or any, optionally followed by :nvlink, leaf or "
              "spine (e.g. strict:nvlink)");
    EXPECT_EQ(error_of("m2g-segment", "0"), "--m2g-segment=0: expected a whole number of nodes from 1 to 4096");
    EXPECT_EQ(error_of("m2g-segment", "4x"), "--m2g-segment=4x: expected a whole number of nodes from 1 to 4096");
    EXPECT_EQ(error_of("m2g-class", "trainin"),
              "--m2g-class=trainin: unknown class; expected training, finetune, inference, batch, benchmark, "
              "dataproc or agentic");
    EXPECT_EQ(error_of("m2g-recipe", "Llama 70B"),
              "--m2g-recipe=Llama 70B: a recipe name is 1-64 characters of a-z, 0-9, '_', '.', '-' (see m2g recipe "
              "list)");
    EXPECT_EQ(error_of("m2g-defer", "maybe"),
              "--m2g-defer=maybe: expected ok, no or until=TIME (YYYY-MM-DDTHH:MM[:SS] or now+N[s|m|h|d])");
    EXPECT_EQ(error_of("m2g-defer", "until=tomorrow"),
              "--m2g-defer=until=tomorrow: 'tomorrow' is not a time; expected YYYY-MM-DDTHH:MM[:SS] or "
              "now+N[s|m|h|d]");
    EXPECT_EQ(error_of("m2g-defer", "until=2020-01-01T00:00"), "--m2g-defer=until=2020-01-01T00:00: the deadline is in the past");
    EXPECT_EQ(error_of("m2g-tag", "tenant"), "--m2g-tag=tenant: expected KEY=VALUE, e.g. tenant=acme");
    EXPECT_EQ(error_of("m2g-tag", "Tenant=acme"),
              "--m2g-tag=Tenant=acme: tag key 'Tenant' is not valid; use 1-64 characters of a-z, 0-9, '_', '.', '-'");
    EXPECT_EQ(error_of("m2g-tag", "tenant=a b"),
              "--m2g-tag=tenant=a b: tag value 'a b' is not valid; use 1-128 characters of A-Z, a-z, 0-9, '_', "
              "'.', '-', ':', '/', '@', '+'");
    EXPECT_EQ(error_of("m2g-tag", "tenant=$(reboot)"),
              "--m2g-tag=tenant=$(reboot): tag value '$(reboot)' is not valid; use 1-128 characters of A-Z, a-z, "
              "0-9, '_', '.', '-', ':', '/', '@', '+'");
    EXPECT_EQ(error_of("m2g-bogus", "1"),
              "--m2g-bogus: unknown m2g option; accepted: --m2g-topology, --m2g-segment, --m2g-class, --m2g-recipe, "
              "--m2g-defer, --m2g-tag, --m2g-explain");
}

TEST(Options, AtMost32Tags)
{
    JobIntent i;
    for (int k = 0; k < 32; ++k)
        apply_option(i, "m2g-tag", ("k" + std::to_string(k) + "=v").c_str(), kNow);
    EXPECT_THROW(apply_option(i, "m2g-tag", "k99=v", kNow), ParseError);
    EXPECT_EQ(i.tags.size(), 32u);
}

TEST(Options, UntilAcceptsDatesRelativeTimesAndEpochs)
{
    EXPECT_EQ(parse_until("now+90", kNow), kNow + 90);
    EXPECT_EQ(parse_until("now+30m", kNow), kNow + 1800);
    EXPECT_EQ(parse_until("now+1d", kNow), kNow + 86400);
    EXPECT_EQ(parse_until("1800003600", kNow), 1800003600);  // the encoded form
    const int64_t t = parse_until("2027-03-01T12:30", kNow);
    EXPECT_EQ(parse_until("2027-03-01T12:30:00", kNow), t);
    EXPECT_THROW(parse_until("2027-02-30T12:30", kNow), ParseError);
    EXPECT_THROW(parse_until("now+400d", kNow), ParseError);
    EXPECT_THROW(parse_until("2027-03-01 12:30", kNow), ParseError);
}

TEST(Encoding, RoundTripsThroughSpankJobEnv)
{
    JobIntent i = parse({{"m2g-topology", "prefer:spine"},
                         {"m2g-segment", "16"},
                         {"m2g-class", "inference"},
                         {"m2g-recipe", "vllm"},
                         {"m2g-defer", "until=now+1h"},
                         {"m2g-tag", "tenant=acme"},
                         {"m2g-tag", "project=p-1"},
                         {"m2g-explain", ""}});
    i.model = "llama-3.1-70b";
    i.gpus = 8;
    i.power_w_per_gpu = 650.5;
    i.runtime_s = 3600;
    std::vector<std::string> env{"PATH=/bin", "M2G_UNKNOWN=ignored"};
    std::map<std::string, std::string> by_key;
    for (const auto& [k, v] : encode_intent(i)) {
        env.push_back(k + "=" + v);
        by_key[k] = v;
    }
    EXPECT_EQ(by_key["M2G_TOPOLOGY"], "prefer:spine");
    EXPECT_EQ(by_key["M2G_DEFER"], "until=" + std::to_string(kNow + 3600));
    EXPECT_EQ(by_key["M2G_TAGS"], "tenant=acme,project=p-1");
    EXPECT_EQ(by_key["M2G_POWER_W_PER_GPU"], "650.5");
    EXPECT_EQ(decode_intent(env), i);
    // Prolog/epilog and job steps see the same entries with a prefix.
    std::vector<std::string> prefixed, stepped;
    for (const auto& e : env) {
        prefixed.push_back("SPANK_" + e);
        stepped.push_back("SLURM_SPANK_" + e);
    }
    EXPECT_EQ(decode_intent(prefixed), i);
    EXPECT_EQ(decode_intent(stepped), i);
    EXPECT_EQ(encode_intent(JobIntent()).size(), 0u);
    EXPECT_EQ(describe(JobIntent()), "(no m2g options)");
}

TEST(Encoding, MalformedValuesNameTheKey)
{
    try {
        decode_intent({"M2G_CLASS=wizard"});
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(std::string(e.what()), "spank_job_env M2G_CLASS=wizard: unknown class");
    }
    EXPECT_THROW(decode_intent({"M2G_TAGS=a=b,c"}), ParseError);
    EXPECT_THROW(decode_intent({"M2G_SEGMENT=-1"}), ParseError);
}

// Found by fuzz_options (test/fuzz): decode_intent appended the tags of
// every M2G_TAGS entry, so two entries (M2G_TAGS and SLURM_SPANK_M2G_TAGS
// in a step's environment) or one value naming a key twice gave a JobIntent
// with a tag key twice, which apply_option never builds (and with more
// tags than its limit of 32).
TEST(Encoding, TagsDecodeToUniqueKeys)
{
    const JobIntent i = decode_intent({"M2G_TAGS=tenant=acme,project=x", "SLURM_SPANK_M2G_TAGS=tenant=acme,project=y"});
    EXPECT_EQ(i.tags, (std::vector<Tag>{{"tenant", "acme"}, {"project", "y"}}));  // the later entry, as other keys
    try {
        decode_intent({"M2G_TAGS=tenant=acme,tenant=globex"});
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "spank_job_env M2G_TAGS=tenant=acme,tenant=globex: tag key 'tenant' given twice; each key once");
    }
    std::string many;
    for (int n = 0; n < 33; ++n)
        many += (n ? ",k" : "k") + std::to_string(n) + "=v";
    EXPECT_THROW(decode_intent({"M2G_TAGS=" + many}), ParseError);
    many = many.substr(0, many.rfind(','));  // 32 tags: the limit
    EXPECT_EQ(decode_intent({"M2G_TAGS=" + many}).tags.size(), 32u);
}

TEST(Precedence, CommandLineOverEnvironmentOverRecipe)
{
    JobIntent cli = parse({{"m2g-class", "batch"}, {"m2g-tag", "tenant=acme"}});
    std::map<std::string, std::string> env{{"M2G_CLASS", "training"},
                                           {"M2G_TOPOLOGY", "prefer:leaf"},
                                           {"M2G_TAGS", "tenant=globex,project=p1"}};
    apply_env_defaults(cli, {"m2g-class", "m2g-tag"},
                       [&](const char* k) -> std::optional<std::string> {
                           auto it = env.find(k);
                           return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
                       },
                       kNow);
    EXPECT_EQ(cli.workload_class, WorkloadClass::Batch);  // command line wins
    EXPECT_EQ(cli.locality, Locality::Prefer);           // environment fills
    EXPECT_EQ(cli.tag("tenant"), "acme");                // tags add up, command line wins per key
    EXPECT_EQ(cli.tag("project"), "p1");
    JobIntent recipe = parse({{"m2g-topology", "strict"}, {"m2g-class", "training"}, {"m2g-segment", "16"}});
    recipe.gpus = 512;
    merge_under(cli, recipe);
    EXPECT_EQ(cli.locality, Locality::Prefer);
    EXPECT_EQ(cli.segment, 16);
    EXPECT_EQ(cli.gpus, 512);

    JobIntent bad;
    try {
        apply_env_defaults(bad, {}, [](const char* k) -> std::optional<std::string> {
            return std::string(k) == "M2G_SEGMENT" ? std::optional<std::string>("lots") : std::nullopt;
        }, kNow);
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "environment M2G_SEGMENT=lots: --m2g-segment=lots: expected a whole number of nodes from 1 to 4096");
    }
}
