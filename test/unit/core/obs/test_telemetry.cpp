// Job tagging on the nodes: OTEL attributes, dcgm-exporter mapping files,
// the node_exporter textfile, and the plugstack.conf arguments.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/base/error.hpp"
#include "core/base/plugin_args.hpp"
#include "core/obs/telemetry.hpp"

using namespace m2g;

namespace {

class TempDir {
  public:
    TempDir()
    {
        char tmpl[] = "/tmp/m2g-telemetry-XXXXXX";
        path_ = mkdtemp(tmpl);
    }
    ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

std::string slurp(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool exists(const std::string& path)
{
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

JobIntent tagged()
{
    JobIntent i;
    apply_option(i, "m2g-class", "training", 0);
    // Decoded feeds are checked, but the writer escapes regardless.
    i.tags.emplace_back("tenant", "acme \"corp\"");
    return i;
}

}  // namespace

TEST(Otel, ExtendsAndNeverReplaces)
{
    JobIntent i;
    apply_option(i, "m2g-class", "training", 0);
    apply_option(i, "m2g-tag", "tenant=acme", 0);
    i.model = "llama-3.1-70b";
    auto attrs = otel_attributes(42, i);
    EXPECT_EQ(otel_extend("", attrs), "slurm.job.id=42,m2g.class=training,m2g.tenant=acme,m2g.model=llama-3.1-70b");
    EXPECT_EQ(otel_extend("service.name=trainer,m2g.tenant=mine", attrs),
              "service.name=trainer,m2g.tenant=mine,slurm.job.id=42,m2g.class=training,m2g.model=llama-3.1-70b");
    EXPECT_EQ(otel_extend("a=b", {{"k", "x y,z"}}), "a=b,k=x%20y%2Cz");
    // A model_name tag is the model users meant.
    apply_option(i, "m2g-tag", "model_name=my-model", 0);
    EXPECT_EQ(otel_attributes(1, i).back().second, "my-model");
}

TEST(Gpus, IndicesFromSlurmJobGpus)
{
    EXPECT_EQ(parse_gpu_indices("0,1,3"), (std::vector<int>{0, 1, 3}));
    EXPECT_EQ(parse_gpu_indices("0-3"), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(parse_gpu_indices("4-5,0"), (std::vector<int>{4, 5, 0}));
    EXPECT_THROW(parse_gpu_indices("0,x"), ParseError);
    EXPECT_THROW(parse_gpu_indices("3-1"), ParseError);
    EXPECT_THROW(parse_gpu_indices("../0"), ParseError);
}

TEST(Paths, NodeDirRefusesAnythingButAHostName)
{
    EXPECT_EQ(node_dir("/run/dcgm/%n", "r01n01"), "/run/dcgm/r01n01");
    EXPECT_EQ(node_dir("/run/dcgm", "r01n01"), "/run/dcgm");
    EXPECT_THROW(node_dir("/run/%n", "../etc"), Error);
    EXPECT_THROW(node_dir("/run/%n", ".."), Error);
    EXPECT_THROW(node_dir("/run/%n", "a/b"), Error);
    EXPECT_THROW(node_dir("/run/%n", ""), Error);
}

TEST(Dcgm, MappingFilesFollowTheJobs)
{
    TempDir t;
    const std::string dir = t.path() + "/map";
    dcgm_map_add(dir, {0, 1}, 100);
    dcgm_map_add(dir, {1}, 101);  // a second job sharing GPU 1
    dcgm_map_add(dir, {1}, 101);  // idempotent
    EXPECT_EQ(slurp(dir + "/0"), "100\n");
    EXPECT_EQ(slurp(dir + "/1"), "100\n101\n");
    dcgm_map_remove(dir, {0, 1}, 100);
    EXPECT_FALSE(exists(dir + "/0"));
    EXPECT_EQ(slurp(dir + "/1"), "101\n");
    dcgm_map_remove(dir, {1}, 101);
    dcgm_map_remove(dir, {1}, 101);  // idempotent, also when already gone
    EXPECT_FALSE(exists(dir + "/1"));
}

TEST(Dcgm, SymlinksAreNotFollowed)
{
    TempDir t;
    const std::string dir = t.path() + "/map";
    ::mkdir(dir.c_str(), 0755);
    ASSERT_EQ(::symlink((t.path() + "/victim").c_str(), (dir + "/0").c_str()), 0);
    EXPECT_THROW(dcgm_map_add(dir, {0}, 7), Error);
    EXPECT_FALSE(exists(t.path() + "/victim"));
    ASSERT_EQ(::symlink(t.path().c_str(), (t.path() + "/linkdir").c_str()), 0);
    EXPECT_THROW(dcgm_map_add(t.path() + "/linkdir", {0}, 7), Error);
    EXPECT_THROW(dcgm_map_add("relative/dir", {0}, 7), Error);
}

TEST(Textfile, OneMetricPerJobWrittenAtomically)
{
    TempDir t;
    const std::string dir = t.path() + "/tf";
    const std::string metric = job_info_metric(55, tagged(), "r01n01");
    EXPECT_EQ(metric,
              "# HELP m2g_job_info A Slurm job running on this node, with its m2g class and tags.\n"
              "# TYPE m2g_job_info gauge\n"
              "m2g_job_info{job_id=\"55\",node=\"r01n01\",class=\"training\",recipe=\"\",tenant=\"acme \\\"corp\\\"\","
              "project=\"\",model=\"\"} 1\n");
    textfile_write(dir, 55, metric);
    EXPECT_EQ(slurp(dir + "/m2g_job_55.prom"), metric);
    EXPECT_FALSE(exists(dir + "/m2g_job_55.prom.tmp"));
    textfile_remove(dir, 55);
    textfile_remove(dir, 55);
    EXPECT_FALSE(exists(dir + "/m2g_job_55.prom"));
}

TEST(PlugstackArgs, KeyValueKnownKeysAbsolutePaths)
{
    SpankArgs a = parse_spank_args({"recipes=/etc/x.conf", "dcgm_dir=/run/dcgm/%n"});
    EXPECT_EQ(a.recipes, "/etc/x.conf");
    EXPECT_EQ(a.dcgm_dir, "/run/dcgm/%n");
    EXPECT_EQ(a.textfile_dir, "");
    EXPECT_EQ(parse_spank_args({}).recipes, "/etc/slurm/m2g-recipes.conf");
    auto msg = [](std::vector<std::string> args) {
        try {
            parse_spank_args(args);
        } catch (const ParseError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(msg({"dcgm=/run"}),
              "plugstack.conf argument 'dcgm=/run': unknown key 'dcgm'; accepted keys: recipes, dcgm_dir, textfile_dir");
    EXPECT_EQ(msg({"verbose"}),
              "plugstack.conf argument 'verbose' is not key=value; accepted keys: recipes, dcgm_dir, textfile_dir");
    EXPECT_EQ(msg({"dcgm_dir=run/dcgm"}), "plugstack.conf argument 'dcgm_dir=run/dcgm': dcgm_dir needs an absolute path");
    EXPECT_EQ(msg({"dcgm_dir=/a/../etc"}), "plugstack.conf argument 'dcgm_dir=/a/../etc': dcgm_dir needs an absolute path");
    EXPECT_EQ(msg({"recipes=/a", "recipes=/b"}), "plugstack.conf argument 'recipes=/b': recipes given twice");
}
