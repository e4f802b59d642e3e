// GoogleTest main that reports in TAP, so automake's TAP driver and
// contrib/m2g-check count every test case (not just the program).
// Failure details become "# " diagnostic lines.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

namespace {

class TapListener : public testing::EmptyTestEventListener {
  public:
    void OnTestProgramStart(const testing::UnitTest& unit) override
    {
        std::printf("1..%d\n", unit.test_to_run_count());
        std::fflush(stdout);
    }

    void OnTestPartResult(const testing::TestPartResult& r) override
    {
        if (!r.failed())
            return;
        std::ostringstream where;
        where << (r.file_name() ? r.file_name() : "?") << ":" << r.line_number();
        diag_ += "# " + where.str() + "\n";
        std::istringstream lines(r.message());
        for (std::string line; std::getline(lines, line);)
            diag_ += "#   " + line + "\n";
    }

    void OnTestEnd(const testing::TestInfo& info) override
    {
        ++n_;
        const bool ok = info.result()->Passed() || info.result()->Skipped();
        std::printf("%s %d - %s.%s%s\n", ok ? "ok" : "not ok", n_, info.test_suite_name(), info.name(),
                    info.result()->Skipped() ? " # SKIP" : "");
        std::fputs(diag_.c_str(), stdout);
        diag_.clear();
        std::fflush(stdout);
    }

  private:
    int n_ = 0;
    std::string diag_;
};

}  // namespace

int main(int argc, char** argv)
{
    testing::InitGoogleTest(&argc, argv);
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new TapListener);
    return RUN_ALL_TESTS();
}
