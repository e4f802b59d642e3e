// fuzz_ibnet: `ibnetdiscover` output -> parse_ibnetdiscover (the fabric that
// `m2g discover fabric` and `merge` read), then both output forms.
#include "test/fuzz/fuzz.hpp"
#include "tools/formats/discover.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string dump = m2g_fuzz::text(data, size);
    try {
        const m2g::Fabric f = m2g::parse_ibnetdiscover(dump, "ibnetdiscover.out");
        if (f.level.size() != f.nodes.size())
            m2g_fuzz::violated("Fabric::level has one entry per node", std::to_string(f.level.size()) + " levels, " +
                                                                            std::to_string(f.nodes.size()) + " nodes");
        (void)m2g::format_fabric(f, false);
        (void)m2g::format_fabric(f, true);
    } catch (const m2g::Error& e) {
        m2g_fuzz::check_message(e);
    }
    return 0;
}
