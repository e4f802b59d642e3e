// fuzz_conf: m2g.conf text -> parse_m2g_conf -> build_model (m2g.conf(5)).
#include "test/fuzz/fuzz.hpp"
#include "core/model/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string conf = m2g_fuzz::text(data, size);
    try {
        const m2g::ConfigSpec spec = m2g::parse_m2g_conf(conf, "fuzz.conf");
        std::vector<std::string> warnings;
        const m2g::Model model = m2g::build_model(spec, &warnings);
        (void)model;
    } catch (const m2g::Error& e) {
        m2g_fuzz::check_message(e);
    }
    return 0;
}
