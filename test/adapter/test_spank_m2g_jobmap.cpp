// CMocka tests of the SPANK adapter src/plugins/spank_m2g/spank_m2g_jobmap.cpp
// (the dcgm-exporter job mapping and node_exporter textfile in the job
// prolog and epilog), linked against link-seam fakes of the Slurm calls it
// makes (spank_fakes.cpp) and the real core (libm2gcore); one child process
// per case, as in test_spank_m2g.cpp (spank_harness.hpp).
//
// One case pins a defect found while writing these tests and since fixed:
// a malformed SPANK_M2G_* entry failed the epilog before it cleaned up.
#include <signal.h>

#include <cstdint>
#include <string>
#include <vector>

#include "spank_harness.hpp"

namespace {

// ---------------------------------------------------------------------------
// slurmd start: the arguments are checked where a mistake shows at once.

void test_init_checks_arguments_in_slurmd(void**)
{
    start(S_CTX_SLURMD);
    EXPECT_RC(call_init({"dcgm_dir=/run/dcgm/%n", "textfile_dir=/var/lib/node-exporter"}), 0);
    EXPECT_NO_MESSAGES();
    assert_int_equal(fake::state().option_register_calls, 0);
    EXPECT_RC(call_init({"dcgm_dir=run/dcgm"}), -1);
    EXPECT_ERROR_HAS("m2g: spank_m2g_jobmap.so: ", "'dcgm_dir=run/dcgm'", "dcgm_dir needs an absolute path");
    fake::state().errors.clear();
    EXPECT_RC(call_init({"gpus=4"}), -1);
    EXPECT_ERROR_HAS("m2g: spank_m2g_jobmap.so: ", "unknown key 'gpus'");
}

// ---------------------------------------------------------------------------
// Prolog and epilog (job script context, root): dcgm-exporter mapping files
// and the node_exporter textfile.

struct ScriptSetup {
    std::string dcgm_root, text_root;  // <scratch>/dcgm, <scratch>/text
    std::string dcgm, text;            // .../node01
    std::vector<std::string> args;
};

ScriptSetup script_setup(uint32_t job_id, const char* gpus, bool dcgm = true, bool textfile = true)
{
    start(S_CTX_JOB_SCRIPT);
    ScriptSetup s;
    s.dcgm_root = g_scratch + "/dcgm";
    s.text_root = g_scratch + "/text";
    s.dcgm = s.dcgm_root + "/node01";
    s.text = s.text_root + "/node01";
    make_dir(s.dcgm_root);
    make_dir(s.text_root);
    if (dcgm)
        s.args.push_back("dcgm_dir=" + s.dcgm_root + "/%n");
    if (textfile)
        s.args.push_back("textfile_dir=" + s.text_root + "/%n");
    fake::state().job_id = job_id;
    set_env("SLURMD_NODENAME", "node01");
    if (gpus)
        set_env("SLURM_JOB_GPUS", gpus);
    set_env("SPANK_M2G_CLASS", "training");
    set_env("SPANK_M2G_TAGS", "tenant=acme,project=x");
    return s;
}

void test_prolog_epilog_dcgm_and_textfile(void**)
{
    ScriptSetup s = script_setup(77, "0,2");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPT(read_file(s.dcgm + "/0"), "77\n");
    EXPECT_OPT(read_file(s.dcgm + "/2"), "77\n");
    assert_false(exists(s.dcgm + "/1"));
    EXPECT_OPT(read_file(s.text + "/m2g_job_77.prom"),
               "# HELP m2g_job_info A Slurm job running on this node, with its m2g class and tags.\n"
               "# TYPE m2g_job_info gauge\n"
               "m2g_job_info{job_id=\"77\",node=\"node01\",class=\"training\",recipe=\"\",tenant=\"acme\","
               "project=\"x\",model=\"\"} 1\n");
    assert_false(exists(s.text + "/m2g_job_77.prom.tmp"));

    EXPECT_RC(call(slurm_spank_job_epilog, s.args), 0);
    EXPECT_NO_MESSAGES();
    assert_false(exists(s.dcgm + "/0"));
    assert_false(exists(s.dcgm + "/2"));
    assert_false(exists(s.text + "/m2g_job_77.prom"));
}

void test_prolog_gpu_range_and_job_id_from_environment(void**)
{
    ScriptSetup s = script_setup(0, "1-3", true, false);
    fake::state().job_id.reset();  // S_JOB_ID not available: SLURM_JOB_ID
    set_env("SLURM_JOB_ID", "501");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    EXPECT_NO_MESSAGES();
    assert_false(exists(s.dcgm + "/0"));
    for (const char* g : {"/1", "/2", "/3"})
        EXPECT_OPT(read_file(s.dcgm + g), "501\n");
    assert_false(exists(s.text));
}

void test_prolog_shared_gpu_keeps_other_jobs(void**)
{
    ScriptSetup s = script_setup(77, "0,2");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    fake::state().job_id = 78;
    set_env("SLURM_JOB_GPUS", "0,1");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    EXPECT_OPT(read_file(s.dcgm + "/0"), "77\n78\n");
    EXPECT_OPT(read_file(s.dcgm + "/1"), "78\n");
    EXPECT_OPT(read_file(s.dcgm + "/2"), "77\n");

    fake::state().job_id = 77;
    set_env("SLURM_JOB_GPUS", "0,2");
    EXPECT_RC(call(slurm_spank_job_epilog, s.args), 0);
    EXPECT_NO_MESSAGES();
    EXPECT_OPT(read_file(s.dcgm + "/0"), "78\n");
    EXPECT_OPT(read_file(s.dcgm + "/1"), "78\n");
    assert_false(exists(s.dcgm + "/2"));
    assert_false(exists(s.text + "/m2g_job_77.prom"));
    assert_true(exists(s.text + "/m2g_job_78.prom"));
}

void test_prolog_without_gpus_writes_textfile_only(void**)
{
    ScriptSetup s = script_setup(60, nullptr);
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    EXPECT_NO_MESSAGES();
    assert_false(exists(s.dcgm));
    assert_true(exists(s.text + "/m2g_job_60.prom"));
}

void test_prolog_refuses_symlinked_gpu_file(void**)
{
    ScriptSetup s = script_setup(77, "0", true, false);
    make_dir(s.dcgm);
    const std::string victim = g_scratch + "/victim";
    write_file(victim, "keep\n");
    make_symlink(victim, s.dcgm + "/0");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR("m2g: prolog: cannot open " + s.dcgm + "/0: " + std::strerror(ELOOP));
    EXPECT_OPT(read_file(victim), "keep\n");
    assert_true(is_symlink(s.dcgm + "/0"));

    // A dangling link: the target is not created either.
    fake::state().errors.clear();
    const std::string planted = g_scratch + "/planted";
    make_symlink(planted, s.dcgm + "/1");
    set_env("SLURM_JOB_GPUS", "1");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR("m2g: prolog: cannot open " + s.dcgm + "/1: " + std::strerror(ELOOP));
    assert_false(exists(planted));
}

void test_epilog_refuses_symlinked_gpu_file(void**)
{
    ScriptSetup s = script_setup(77, "0", true, false);
    make_dir(s.dcgm);
    const std::string victim = g_scratch + "/victim";
    write_file(victim, "77\n");
    make_symlink(victim, s.dcgm + "/0");
    EXPECT_RC(call(slurm_spank_job_epilog, s.args), -1);
    EXPECT_ERROR("m2g: epilog: cannot open " + s.dcgm + "/0: " + std::strerror(ELOOP));
    EXPECT_OPT(read_file(victim), "77\n");
    assert_true(is_symlink(s.dcgm + "/0"));
}

void test_prolog_refuses_symlinked_textfile(void**)
{
    ScriptSetup s = script_setup(77, nullptr, false, true);
    make_dir(s.text);
    const std::string victim = g_scratch + "/victim";
    write_file(victim, "keep\n");
    make_symlink(victim, s.text + "/m2g_job_77.prom.tmp");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR("m2g: prolog: cannot create " + s.text + "/m2g_job_77.prom.tmp: " + std::strerror(ELOOP));
    EXPECT_OPT(read_file(victim), "keep\n");
    assert_false(exists(s.text + "/m2g_job_77.prom"));
}

void test_prolog_refuses_symlinked_node_dir(void**)
{
    ScriptSetup s = script_setup(77, "0", true, false);
    const std::string elsewhere = g_scratch + "/elsewhere";
    make_dir(elsewhere);
    make_symlink(elsewhere, s.dcgm);
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR_HAS("m2g: prolog: ", s.dcgm.c_str(), "symbolic links are not followed");
    assert_false(exists(elsewhere + "/0"));
}

void test_prolog_rejects_unsafe_node_name(void**)
{
    ScriptSetup s = script_setup(77, "0");
    set_env("SLURMD_NODENAME", "../../etc");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR_HAS("m2g: prolog: ", "'../../etc'", "not a plain host name");
    assert_false(exists(s.dcgm));
    assert_false(exists(s.text));
    assert_false(exists(g_scratch + "/etc"));
}

void test_prolog_rejects_bad_gpu_list(void**)
{
    ScriptSetup s = script_setup(77, "0,x");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), -1);
    EXPECT_ERROR_HAS("m2g: prolog: ", "GPU list '0,x'");
    assert_false(exists(s.dcgm));
}

void test_prolog_without_directories_does_nothing(void**)
{
    ScriptSetup s = script_setup(77, "0");
    set_env("SPANK_M2G_CLASS", "gaming");  // not even decoded
    EXPECT_RC(call(slurm_spank_job_prolog, {"recipes=/etc/slurm/m2g-recipes.conf"}), 0);
    EXPECT_RC(call(slurm_spank_job_epilog), 0);
    EXPECT_NO_MESSAGES();
    assert_false(exists(s.dcgm));
    assert_false(exists(s.text));
}

void test_prolog_and_epilog_reject_bad_argument(void**)
{
    script_setup(77, "0");
    EXPECT_RC(call(slurm_spank_job_prolog, {"dcgm_dir=relative/dir"}), -1);
    EXPECT_ERROR("m2g: prolog: plugstack.conf argument 'dcgm_dir=relative/dir': dcgm_dir needs an absolute path");
    fake::state().errors.clear();
    EXPECT_RC(call(slurm_spank_job_epilog, {"spool=/x"}), -1);
    EXPECT_ERROR_HAS("m2g: epilog: ", "unknown key 'spool'");
}

// Regression: a malformed SPANK_M2G_* entry must not stop the epilog from
// removing the mapping files.
void test_epilog_cleans_up_despite_malformed_intent(void**)
{
    ScriptSetup s = script_setup(77, "0");
    EXPECT_RC(call(slurm_spank_job_prolog, s.args), 0);
    set_env("SPANK_M2G_CLASS", "gaming");
    EXPECT_RC(call(slurm_spank_job_epilog, s.args), 0);
    assert_false(exists(s.dcgm + "/0"));
    assert_false(exists(s.text + "/m2g_job_77.prom"));
}

}  // namespace

int main()
{
    const CMUnitTest tests[] = {
        CASE(test_init_checks_arguments_in_slurmd),
        CASE(test_prolog_epilog_dcgm_and_textfile),
        CASE(test_prolog_gpu_range_and_job_id_from_environment),
        CASE(test_prolog_shared_gpu_keeps_other_jobs),
        CASE(test_prolog_without_gpus_writes_textfile_only),
        CASE(test_prolog_refuses_symlinked_gpu_file),
        CASE(test_epilog_refuses_symlinked_gpu_file),
        CASE(test_prolog_refuses_symlinked_textfile),
        CASE(test_prolog_refuses_symlinked_node_dir),
        CASE(test_prolog_rejects_unsafe_node_name),
        CASE(test_prolog_rejects_bad_gpu_list),
        CASE(test_prolog_without_directories_does_nothing),
        CASE(test_prolog_and_epilog_reject_bad_argument),
        CASE(test_epilog_cleans_up_despite_malformed_intent),
    };
    ::signal(SIGPIPE, SIG_IGN);
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("spank_m2g_jobmap", tests, nullptr, nullptr) ? 1 : 0;
}
