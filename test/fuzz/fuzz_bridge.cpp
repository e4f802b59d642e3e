// fuzz_bridge: bridge-intents.json (m2g.bridge-intents/v1, doc/slinky.md)
// -> parse_bridge_intents, the same text as an AdminComment -> bridge_pods,
// and the job's pods resolved against the document.
#include "test/fuzz/fuzz.hpp"
#include "core/job/bridge.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string doc_text = m2g_fuzz::text(data, size);
    std::vector<std::string> pods;
    try {
        pods = m2g::bridge_pods(doc_text);  // never throws: "not one" is an empty list
    } catch (const m2g::Error& e) {
        m2g_fuzz::violated("bridge_pods never throws", e.what());
    }
    try {
        const m2g::BridgeIntents doc = m2g::parse_bridge_intents(doc_text, "bridge-intents.json");
        if (pods.empty())
            for (const auto& [name, intent] : doc.pods)
                pods.push_back(name);
        (void)m2g::resolve_bridge_intent(doc, pods);
    } catch (const m2g::Error& e) {
        m2g_fuzz::check_message(e);
    }
    return 0;
}
