// fuzz_signals: a signals feed (m2g.signals/v1 JSON, doc/signals.md) ->
// parse_signals against a fixed model: test/fixtures/nvl72-8rack.conf,
// embedded at build time (contrib/m2g-fuzz writes nvl72_8rack_conf.inc), so
// the binary runs from any directory.
#include "test/fuzz/fuzz.hpp"
#include "core/model/config.hpp"
#include "core/power/signals.hpp"

namespace {

const char kModelConf[] =
#include "nvl72_8rack_conf.inc"
    ;

constexpr int64_t kNow = 1795986000;  // 2026-11-29T21:00:00Z, as test_signals.cpp

const m2g::Model& model()
{
    static const m2g::Model m = m2g::build_model(m2g::parse_m2g_conf(kModelConf, "nvl72-8rack.conf"));
    return m;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    (void)model();  // a broken fixture fails here, not inside the first input
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string feed = m2g_fuzz::text(data, size);
    try {
        const m2g::Signals s = m2g::parse_signals(feed, "signals.json", model(), kNow);
        // What the plugins then ask of a snapshot.
        for (size_t d = 0; d < model().domains.size(); ++d)
            (void)m2g::effective_budget_kw(model(), &s, m2g::EventScope::Rack, static_cast<int>(d), kNow);
        (void)m2g::effective_budget_kw(model(), &s, m2g::EventScope::Site, m2g::kNone, kNow);
        (void)m2g::active_events(&s, kNow);
    } catch (const m2g::Error& e) {
        m2g_fuzz::check_message(e);
    }
    return 0;
}
