// CMocka tests of the SPANK adapter src/plugins/spank_m2g/spank_m2g.cpp,
// linked against link-seam fakes of the Slurm calls it makes
// (spank_fakes.cpp) and the real core (libm2gcore).
//
// The plugin keeps per-process state (the options seen, the resolved
// intent), as Slurm runs one job or step per process. So every case runs in
// a child process of its own (run_isolated): the parent never calls into
// the plugin, each child starts from a fresh plugin, fresh fakes, an
// environment without M2G_*/SPANK_* variables and an empty scratch
// directory that the parent removes afterwards. Output is TAP, one line per
// case; a failing child's CMocka report becomes the case's "# " diagnostics.
//
// One case pins a defect found while writing these tests and since fixed:
// a long OTEL_RESOURCE_ATTRIBUTES was replaced instead of extended.
#include <cstdint>
#include <ctime>
#include <string>

#include "spank_harness.hpp"
#include "core/base/error.hpp"
#include "core/job/intent.hpp"

namespace {

// The core's message for --option=value (the adapter must pass it on as is).
std::string core_message(const char* option, const char* value)
{
    m2g::JobIntent scratch;
    try {
        m2g::apply_option(scratch, option, value, static_cast<int64_t>(std::time(nullptr)));
    } catch (const m2g::ParseError& e) {
        return e.what();
    }
    fail_msg("the core accepts --%s=%s", option, value);
    return "";
}

// Give --option=bad: the callback fails and logs the core's message.
#define EXPECT_OPTION_REJECTED(option, bad)                                            \
    do {                                                                               \
        fake::state().errors.clear();                                                  \
        EXPECT_RC(fake::give_option(option, bad), -1);                                 \
        EXPECT_ERROR("m2g: " + core_message(option, bad));                             \
        EXPECT_ERROR_HAS("m2g: --" option "=" bad ": ");                               \
        fake::state().errors.clear();                                                  \
    } while (0)

const char* const kCatalog =
    "# test catalog\n"
    "RecipeName=llama3-70b-finetune Model=llama-3.1-70b Params=70B Precision=bf16 \\\n"
    "    TP=8 PP=1 DP=2 Gpus=16 Topology=strict:nvlink Segment=2 Class=finetune Defer=ok \\\n"
    "    PowerPerGpuW=950 Runtime=12:00:00 Description=\"70B bf16 fine-tune\"\n"
    "RecipeName=gpu-benchmark Gpus=1 Topology=any Class=benchmark Defer=ok \\\n"
    "    PowerPerGpuW=1150 Runtime=00:30:00\n";

std::string write_catalog()
{
    const std::string path = g_scratch + "/m2g-recipes.conf";
    write_file(path, kCatalog);
    return path;
}

// ---------------------------------------------------------------------------
// Option registration.

struct ExpectedOption {
    const char* name;
    const char* arginfo;  // nullptr: a flag
};

const ExpectedOption kOptions[] = {
    {"m2g-topology", "strict|prefer|any[:nvlink|leaf|spine]"},
    {"m2g-segment", "N"},
    {"m2g-class", "training|finetune|inference|batch|benchmark|dataproc|agentic"},
    {"m2g-recipe", "NAME"},
    {"m2g-defer", "ok|no|until=TIME"},
    {"m2g-tag", "KEY=VALUE"},
    {"m2g-explain", nullptr},
};

void expect_all_options_registered(spank_context_t ctx)
{
    start(ctx);
    EXPECT_RC(call_init(), 0);
    EXPECT_NO_MESSAGES();
    const auto& opts = fake::state().options;
    const size_t n = sizeof kOptions / sizeof kOptions[0];
    if (opts.size() != n)
        FAIL_WITH("%zu options registered, expected %zu", opts.size(), n);
    for (size_t i = 0; i < n; ++i) {
        const fake::Option& o = opts[i];
        EXPECT_STR(o.name, kOptions[i].name);
        if (kOptions[i].arginfo) {
            EXPECT_OPT(o.arginfo, kOptions[i].arginfo);
            assert_int_equal(o.has_arg, 1);
        } else {
            EXPECT_OPT(o.arginfo, nullptr);
            assert_int_equal(o.has_arg, 0);
        }
        if (o.usage.rfind("[m2g] ", 0) != 0 || o.usage.size() < 20)
            FAIL_WITH("--%s: usage '%s' is not an [m2g] help text", o.name.c_str(), o.usage.c_str());
        assert_non_null(o.cb);
        for (size_t j = 0; j < i; ++j)
            if (opts[j].val == o.val)
                FAIL_WITH("--%s and --%s share val %d", opts[j].name.c_str(), o.name.c_str(), o.val);
    }
    assert_int_equal(fake::state().bad_handle, 0);
}

void test_registers_options_in_local_context(void**) { expect_all_options_registered(S_CTX_LOCAL); }
void test_registers_options_in_allocator_context(void**) { expect_all_options_registered(S_CTX_ALLOCATOR); }
void test_registers_options_in_remote_context(void**) { expect_all_options_registered(S_CTX_REMOTE); }

void test_registers_nothing_in_slurmd_context(void**)
{
    start(S_CTX_SLURMD);
    EXPECT_RC(call_init({"recipes=/etc/slurm/m2g-recipes.conf"}), 0);
    assert_int_equal(fake::state().option_register_calls, 0);
    EXPECT_NO_MESSAGES();
}

// The job mapping moved to spank_m2g_jobmap.so: a plugstack.conf line that
// still gives spank_m2g.so its directories is told so when slurmd starts.
void test_slurmd_says_where_the_job_mapping_went(void**)
{
    start(S_CTX_SLURMD);
    EXPECT_RC(call_init({"dcgm_dir=/run/dcgm/%n", "textfile_dir=/var/lib/node-exporter"}), 0);
    assert_int_equal(fake::state().option_register_calls, 0);
    EXPECT_ERROR_HAS("m2g: dcgm_dir= and textfile_dir= are spank_m2g_jobmap.so's arguments: spank_m2g.so ignores "
                     "them", "required spank_m2g_jobmap.so dcgm_dir=... textfile_dir=...");
}

void test_registers_nothing_in_job_script_context(void**)
{
    start(S_CTX_JOB_SCRIPT);
    EXPECT_RC(call_init(), 0);
    assert_int_equal(fake::state().option_register_calls, 0);
    EXPECT_NO_MESSAGES();
}

void test_registration_failure_fails_init(void**)
{
    start(S_CTX_ALLOCATOR);
    fake::state().option_register_rc = ESPANK_ERROR;
    EXPECT_RC(call_init(), -1);
    EXPECT_ERROR("m2g: cannot register --m2g-topology");
}

// ---------------------------------------------------------------------------
// plugstack.conf arguments.

void test_init_rejects_unknown_plugstack_key(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init({"recipes=/etc/slurm/m2g-recipes.conf", "colour=/blue"}), -1);
    EXPECT_ERROR("m2g: spank_m2g.so: plugstack.conf argument 'colour=/blue': unknown key 'colour'; "
                 "accepted keys: recipes, dcgm_dir, textfile_dir");
    assert_int_equal(fake::state().option_register_calls, 0);
}

void test_init_rejects_relative_path(void**)
{
    start(S_CTX_REMOTE);
    EXPECT_RC(call_init({"dcgm_dir=run/dcgm"}), -1);
    EXPECT_ERROR_HAS("m2g: spank_m2g.so: ", "'dcgm_dir=run/dcgm'", "dcgm_dir needs an absolute path");
}

void test_init_rejects_argument_without_value_separator(void**)
{
    start(S_CTX_LOCAL);
    EXPECT_RC(call_init({"verbose"}), -1);
    EXPECT_ERROR_HAS("m2g: spank_m2g.so: ", "'verbose' is not key=value");
}

void test_init_accepts_every_key(void**)
{
    start(S_CTX_LOCAL);
    EXPECT_RC(call_init({"recipes=/etc/slurm/m2g-recipes.conf", "dcgm_dir=/run/dcgm-job-map/%n",
                         "textfile_dir=/var/lib/node_exporter/textfile"}),
              0);
    EXPECT_NO_MESSAGES();
    assert_int_equal(fake::state().options.size(), 7);
}

// ---------------------------------------------------------------------------
// Option callbacks: a good value is taken, a bad one is refused with the
// core's message; the refused value leaves no trace in what is passed on.

void test_option_topology(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-topology", "prefer:leaf"), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-topology", "tight");
    EXPECT_OPTION_REJECTED("m2g-topology", "strict:");
    EXPECT_OPTION_REJECTED("m2g-topology", "strict:rack");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TOPOLOGY", "prefer:leaf"});
}

void test_option_segment(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-segment", "18"), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-segment", "0");
    EXPECT_OPTION_REJECTED("m2g-segment", "eighteen");
    EXPECT_OPTION_REJECTED("m2g-segment", "4097");
    EXPECT_OPTION_REJECTED("m2g-segment", "-1");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list(), {"M2G_SEGMENT", "18"});
}

void test_option_class(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "inference"), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-class", "gaming");
    EXPECT_OPTION_REJECTED("m2g-class", "Training");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list(), {"M2G_CLASS", "inference"});
}

void test_option_recipe(void**)
{
    start(S_CTX_ALLOCATOR);
    const std::string catalog = write_catalog();
    EXPECT_RC(call_init({"recipes=" + catalog}), 0);
    EXPECT_RC(fake::give_option("m2g-recipe", "gpu-benchmark"), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-recipe", "Llama 70B");
    EXPECT_OPTION_REJECTED("m2g-recipe", "../etc/passwd");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_OPT(fake::job_control("M2G_RECIPE"), "gpu-benchmark");
}

void test_option_defer(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-defer", "ok"), 0);
    const int64_t before = static_cast<int64_t>(std::time(nullptr));
    EXPECT_RC(fake::give_option("m2g-defer", "until=now+2h"), 0);
    const int64_t after = static_cast<int64_t>(std::time(nullptr));
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-defer", "maybe");
    EXPECT_OPTION_REJECTED("m2g-defer", "until=2001-01-01T00:00");
    EXPECT_OPTION_REJECTED("m2g-defer", "until=tomorrow");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    const std::optional<std::string> defer = fake::job_control("M2G_DEFER");
    if (!defer || defer->rfind("until=", 0) != 0)
        FAIL_WITH("M2G_DEFER is %s, expected until=<epoch>", defer ? defer->c_str() : "absent");
    const long long until = std::atoll(defer->c_str() + 6);
    if (until < before + 7200 || until > after + 7200)
        FAIL_WITH("M2G_DEFER=%s is not two hours from now", defer->c_str());
    assert_int_equal(job_control_list().size(), 1);
}

void test_option_tag(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-tag", "tenant=acme"), 0);
    EXPECT_RC(fake::give_option("m2g-tag", "project=x"), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPTION_REJECTED("m2g-tag", "tenant");
    EXPECT_OPTION_REJECTED("m2g-tag", "Tenant=acme");
    EXPECT_OPTION_REJECTED("m2g-tag", "tenant=a b");
    EXPECT_OPTION_REJECTED("m2g-tag", "tenant=");
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TAGS", "tenant=acme,project=x"});
}

// A flag: Slurm passes no value (and a placeholder when forwarding it to
// steps); either is accepted, as the core ignores it.
void test_option_explain(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-explain", nullptr), 0);
    EXPECT_RC(fake::give_option("m2g-explain", "(null)", 1), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list(), {"M2G_EXPLAIN", "1"});
}

void test_option_callback_rejects_unknown_val(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    const fake::Option* o = fake::option("m2g-class");
    assert_non_null(o);
    EXPECT_RC(o->cb(99, "training", 0), -1);
    EXPECT_RC(o->cb(-1, "training", 0), -1);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list());
}

// ---------------------------------------------------------------------------
// Allocator (sbatch, salloc) and local (srun) context: resolution and the
// spank_job_env keys.

void test_allocator_writes_documented_keys(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(fake::give_option("m2g-topology", "strict"), 0);
    EXPECT_RC(fake::give_option("m2g-segment", "18"), 0);
    EXPECT_RC(fake::give_option("m2g-defer", "ok"), 0);
    EXPECT_RC(fake::give_option("m2g-tag", "tenant=acme"), 0);
    EXPECT_RC(fake::give_option("m2g-tag", "project=x"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TOPOLOGY", "strict:nvlink"}, {"M2G_SEGMENT", "18"},
                    {"M2G_CLASS", "training"}, {"M2G_DEFER", "ok"}, {"M2G_TAGS", "tenant=acme,project=x"});
    for (const fake::EnvSet& e : fake::state().job_control_env)
        assert_int_equal(e.overwrite, 1);
    assert_int_equal(fake::state().setenv_calls.size(), 0);
    assert_int_equal(fake::state().bad_handle, 0);
}

void test_allocator_without_options_writes_nothing(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list());
}

void test_local_context_writes_keys(void**)
{
    start(S_CTX_LOCAL);
    set_env("SLURM_JOB_ID", "12");  // srun inside an allocation
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "inference"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_CLASS", "inference"});
}

void test_allocator_env_defaults_fill_options_not_given(void**)
{
    start(S_CTX_ALLOCATOR);
    set_env("M2G_CLASS", "inference");
    set_env("M2G_TOPOLOGY", "prefer:leaf");
    set_env("M2G_SEGMENT", "4");
    set_env("M2G_TAGS", "tenant=envco,team=ml");
    set_env("M2G_DEFER", "");  // empty: not set
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(fake::give_option("m2g-tag", "tenant=acme"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TOPOLOGY", "prefer:leaf"}, {"M2G_SEGMENT", "4"},
                    {"M2G_CLASS", "training"}, {"M2G_TAGS", "tenant=acme,team=ml"});
}

void test_allocator_env_default_ignored_for_given_option(void**)
{
    start(S_CTX_ALLOCATOR);
    set_env("M2G_CLASS", "gaming");  // would be refused, but the option is given
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_CLASS", "training"});
}

void test_allocator_bad_env_default_fails(void**)
{
    start(S_CTX_ALLOCATOR);
    set_env("M2G_SEGMENT", "lots");
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), -1);
    EXPECT_ERROR("m2g: options: environment M2G_SEGMENT=lots: " + core_message("m2g-segment", "lots"));
    EXPECT_ENV_LIST(job_control_list());
}

void test_allocator_recipe_expands_under_options(void**)
{
    start(S_CTX_ALLOCATOR);
    const std::string catalog = write_catalog();
    EXPECT_RC(call_init({"recipes=" + catalog}), 0);
    EXPECT_RC(fake::give_option("m2g-recipe", "llama3-70b-finetune"), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);  // wins over Class=finetune
    EXPECT_RC(fake::give_option("m2g-tag", "tenant=acme"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TOPOLOGY", "strict:nvlink"}, {"M2G_SEGMENT", "2"},
                    {"M2G_CLASS", "training"}, {"M2G_RECIPE", "llama3-70b-finetune"}, {"M2G_DEFER", "ok"},
                    {"M2G_TAGS", "tenant=acme"}, {"M2G_MODEL", "llama-3.1-70b"}, {"M2G_GPUS", "16"},
                    {"M2G_POWER_W_PER_GPU", "950"}, {"M2G_RUNTIME_S", "43200"}, {"M2G_GPU_MULTIPLE", "8"});
}

void test_allocator_recipe_from_environment(void**)
{
    start(S_CTX_ALLOCATOR);
    const std::string catalog = write_catalog();
    set_env("M2G_RECIPE", "gpu-benchmark");
    set_env("M2G_DEFER", "no");  // the environment wins over the recipe's Defer=ok
    EXPECT_RC(call_init({"recipes=" + catalog}), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_TOPOLOGY", "any"}, {"M2G_CLASS", "benchmark"},
                    {"M2G_RECIPE", "gpu-benchmark"}, {"M2G_DEFER", "no"}, {"M2G_GPUS", "1"},
                    {"M2G_POWER_W_PER_GPU", "1150"}, {"M2G_RUNTIME_S", "1800"});
}

void test_allocator_unknown_recipe_names_catalog(void**)
{
    start(S_CTX_ALLOCATOR);
    const std::string catalog = write_catalog();
    EXPECT_RC(call_init({"recipes=" + catalog}), 0);
    EXPECT_RC(fake::give_option("m2g-recipe", "nope"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), -1);
    EXPECT_ERROR("m2g: options: --m2g-recipe=nope: no such recipe in " + catalog +
                 "; known: llama3-70b-finetune, gpu-benchmark");
    EXPECT_ENV_LIST(job_control_list());
}

void test_allocator_missing_catalog_names_path(void**)
{
    start(S_CTX_ALLOCATOR);
    const std::string catalog = g_scratch + "/absent.conf";
    EXPECT_RC(call_init({"recipes=" + catalog}), 0);
    EXPECT_RC(fake::give_option("m2g-recipe", "gpu-benchmark"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), -1);
    EXPECT_ERROR_HAS("m2g: options: ", catalog.c_str(), "cannot open");
    EXPECT_ENV_LIST(job_control_list());
}

void test_allocator_catalog_not_read_without_recipe(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init({"recipes=" + g_scratch + "/absent.conf"}), 0);
    EXPECT_RC(fake::give_option("m2g-class", "batch"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(job_control_list(), {"M2G_CLASS", "batch"});
}

void test_allocator_explain_prints_info(void**)
{
    start(S_CTX_ALLOCATOR);
    set_env("SLURM_JOB_ID", "5");  // ignored: an allocator always submits
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(fake::give_option("m2g-explain", nullptr), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    assert_int_equal(fake::state().errors.size(), 0);
    if (fake::state().infos.size() != 1 || fake::state().infos[0] != "m2g: job intent: class=training explain=1")
        FAIL_WITH("expected one slurm_info 'm2g: job intent: class=training explain=1'");
    EXPECT_ENV_LIST(job_control_list(), {"M2G_CLASS", "training"}, {"M2G_EXPLAIN", "1"});
}

void test_allocator_explain_from_environment(void**)
{
    start(S_CTX_ALLOCATOR);
    set_env("M2G_EXPLAIN", "1");
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    if (fake::state().infos.size() != 1 || fake::state().infos[0] != "m2g: job intent: explain=1")
        FAIL_WITH("expected one slurm_info 'm2g: job intent: explain=1'");
}

void test_local_explain_only_when_submitting(void**)
{
    start(S_CTX_LOCAL);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-explain", nullptr), 0);
    set_env("SLURM_JOB_ID", "12");  // srun inside an allocation: a step, nothing to explain
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
    ::unsetenv("SLURM_JOB_ID");  // srun that submits its own job
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    if (fake::state().infos.size() != 1 || fake::state().infos[0] != "m2g: job intent: explain=1")
        FAIL_WITH("expected one slurm_info 'm2g: job intent: explain=1'");
}

void test_allocator_no_info_without_explain(void**)
{
    start(S_CTX_ALLOCATOR);
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_NO_MESSAGES();
}

void test_allocator_job_control_setenv_failure(void**)
{
    start(S_CTX_ALLOCATOR);
    fake::state().job_control_setenv_rc = ESPANK_ERROR;
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training"), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), -1);
    EXPECT_ERROR("m2g: cannot pass M2G_CLASS to the job");
}

void test_post_opt_does_nothing_in_slurmd_and_job_script(void**)
{
    for (spank_context_t ctx : {S_CTX_SLURMD, S_CTX_JOB_SCRIPT}) {
        start(ctx);
        set_env("M2G_CLASS", "gaming");  // not read there
        EXPECT_RC(call_init(), 0);
        EXPECT_RC(call(slurm_spank_init_post_opt), 0);
        EXPECT_NO_MESSAGES();
        EXPECT_ENV_LIST(job_control_list());
        assert_int_equal(fake::state().setenv_calls.size(), 0);
        assert_int_equal(fake::state().get_item_calls.size(), 0);
    }
}

// ---------------------------------------------------------------------------
// Remote context (slurmstepd): the submitted intent and the task environment.

void test_remote_decodes_job_env_and_sets_task_env(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 4242;
    fake::state().job_env = {
        "PATH=/usr/bin:/bin",
        "SLURM_SPANK_M2G_TOPOLOGY=strict:nvlink",
        "SLURM_SPANK_M2G_CLASS=training",
        "SLURM_SPANK_M2G_TAGS=tenant=acme,project=x",
        "SLURM_SPANK_M2G_EXPLAIN=1",
        "SLURM_SPANK_M2G_MODEL=llama-3.1-70b",
        "OTEL_RESOURCE_ATTRIBUTES=service.name=trainer",
    };
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_ENV_LIST(job_control_list());
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(setenv_list(), {"M2G_TOPOLOGY", "strict:nvlink"}, {"M2G_CLASS", "training"},
                    {"M2G_TAGS", "tenant=acme,project=x"}, {"M2G_MODEL", "llama-3.1-70b"}, {"M2G_JOB_ID", "4242"},
                    {"OTEL_RESOURCE_ATTRIBUTES",
                     "service.name=trainer,slurm.job.id=4242,m2g.class=training,m2g.tenant=acme,"
                     "m2g.model=llama-3.1-70b"});
    EXPECT_OPT(fake::task_env("M2G_EXPLAIN"), nullptr);
    for (const fake::EnvSet& e : fake::state().setenv_calls)
        assert_int_equal(e.overwrite, 1);
    assert_int_equal(fake::state().bad_handle, 0);
}

void test_remote_job_env_wins_over_forwarded_options(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 7;
    fake::state().job_env = {"SLURM_SPANK_M2G_CLASS=training", "M2G_SEGMENT=4"};
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "inference", 1), 0);  // forwarded: only the last value
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(setenv_list(), {"M2G_CLASS", "training"}, {"M2G_JOB_ID", "7"},
                    {"OTEL_RESOURCE_ATTRIBUTES", "slurm.job.id=7,m2g.class=training"});
}

void test_remote_without_submitted_intent_resolves(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 99;
    fake::state().job_env = {"M2G_SEGMENT=4", "M2G_CLASS=batch", "HOME=/home/u"};
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(fake::give_option("m2g-class", "training", 1), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(setenv_list(), {"M2G_SEGMENT", "4"}, {"M2G_CLASS", "training"}, {"M2G_JOB_ID", "99"},
                    {"OTEL_RESOURCE_ATTRIBUTES", "slurm.job.id=99,m2g.class=training"});
}

void test_remote_malformed_job_env_fails(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 3;
    fake::state().job_env = {"SLURM_SPANK_M2G_CLASS=gaming"};
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), -1);
    EXPECT_ERROR("m2g: job environment: spank_job_env M2G_CLASS=gaming: unknown class");
}

void test_user_init_keeps_existing_otel_keys(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 7;
    fake::state().job_env = {"SLURM_SPANK_M2G_CLASS=training", "SLURM_SPANK_M2G_TAGS=tenant=acme",
                             "OTEL_RESOURCE_ATTRIBUTES=service.name=x,m2g.class=mine"};
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPT(fake::task_env("OTEL_RESOURCE_ATTRIBUTES"),
               "service.name=x,m2g.class=mine,slurm.job.id=7,m2g.tenant=acme");
    EXPECT_OPT(fake::job_getenv("OTEL_RESOURCE_ATTRIBUTES"),
               "service.name=x,m2g.class=mine,slurm.job.id=7,m2g.tenant=acme");
}

void test_user_init_job_id_from_environment(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id.reset();  // S_JOB_ID not available
    set_env("SLURM_JOB_ID", "31337");
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_ENV_LIST(setenv_list(), {"M2G_JOB_ID", "31337"}, {"OTEL_RESOURCE_ATTRIBUTES", "slurm.job.id=31337"});
}

// Regression: an OTEL_RESOURCE_ATTRIBUTES of 8192 bytes or more must still
// be extended, not replaced.
void test_user_init_extends_long_otel(void**)
{
    start(S_CTX_REMOTE);
    fake::state().job_id = 8;
    const std::string existing = "service.name=x,big=" + std::string(9000, 'a');
    fake::state().job_env = {"OTEL_RESOURCE_ATTRIBUTES=" + existing};
    EXPECT_RC(call_init(), 0);
    EXPECT_RC(call(slurm_spank_init_post_opt), 0);
    EXPECT_RC(call(slurm_spank_user_init), 0);
    EXPECT_OPT(fake::task_env("OTEL_RESOURCE_ATTRIBUTES"), (existing + ",slurm.job.id=8").c_str());
}

}  // namespace

int main()
{
    const CMUnitTest tests[] = {
        // registration
        CASE(test_registers_options_in_local_context),
        CASE(test_registers_options_in_allocator_context),
        CASE(test_registers_options_in_remote_context),
        CASE(test_registers_nothing_in_slurmd_context),
        CASE(test_slurmd_says_where_the_job_mapping_went),
        CASE(test_registers_nothing_in_job_script_context),
        CASE(test_registration_failure_fails_init),
        // plugstack.conf arguments
        CASE(test_init_rejects_unknown_plugstack_key),
        CASE(test_init_rejects_relative_path),
        CASE(test_init_rejects_argument_without_value_separator),
        CASE(test_init_accepts_every_key),
        // option callbacks
        CASE(test_option_topology),
        CASE(test_option_segment),
        CASE(test_option_class),
        CASE(test_option_recipe),
        CASE(test_option_defer),
        CASE(test_option_tag),
        CASE(test_option_explain),
        CASE(test_option_callback_rejects_unknown_val),
        // allocator and local context
        CASE(test_allocator_writes_documented_keys),
        CASE(test_allocator_without_options_writes_nothing),
        CASE(test_local_context_writes_keys),
        CASE(test_allocator_env_defaults_fill_options_not_given),
        CASE(test_allocator_env_default_ignored_for_given_option),
        CASE(test_allocator_bad_env_default_fails),
        CASE(test_allocator_recipe_expands_under_options),
        CASE(test_allocator_recipe_from_environment),
        CASE(test_allocator_unknown_recipe_names_catalog),
        CASE(test_allocator_missing_catalog_names_path),
        CASE(test_allocator_catalog_not_read_without_recipe),
        CASE(test_allocator_explain_prints_info),
        CASE(test_allocator_explain_from_environment),
        CASE(test_local_explain_only_when_submitting),
        CASE(test_allocator_no_info_without_explain),
        CASE(test_allocator_job_control_setenv_failure),
        CASE(test_post_opt_does_nothing_in_slurmd_and_job_script),
        // remote context
        CASE(test_remote_decodes_job_env_and_sets_task_env),
        CASE(test_remote_job_env_wins_over_forwarded_options),
        CASE(test_remote_without_submitted_intent_resolves),
        CASE(test_remote_malformed_job_env_fails),
        CASE(test_user_init_keeps_existing_otel_keys),
        CASE(test_user_init_job_id_from_environment),
        CASE(test_user_init_extends_long_otel),
    };
    ::signal(SIGPIPE, SIG_IGN);
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("spank_m2g", tests, nullptr, nullptr) ? 1 : 0;
}
