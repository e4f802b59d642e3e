// fuzz_options: the --m2g-* options (spank_m2g, the CLI, the simulator and
// m2g-slinky all parse them with apply_option), their spank_job_env
// encoding (decode_intent, which job_submit/m2g and select/m2g read) and the
// plugstack.conf arguments of spank_m2g.so (parse_spank_args).
//
// The input is lines ('\n'). Each line is used three ways:
//   1. --m2g-* option: the first byte picks the option (modulo the number of
//      option_specs(), plus one slot for an option name outside the table,
//      taken up to the first '='), the rest is the value; applied in order
//      to one JobIntent, a refused line leaving it unchanged;
//   2. one "KEY=VALUE" entry of a job environment, all lines together
//      given to decode_intent;
//   3. plugstack.conf: the line's whitespace-separated words are the
//      plugin's arguments for parse_spank_args.
// Properties checked besides "only m2g::Error escapes": what apply_option
// built survives encode_intent -> decode_intent unchanged (the job's
// intent must reach job_submit as the user gave it), and a JobIntent never
// holds one tag key twice.
#include <set>
#include <sstream>

#include "test/fuzz/fuzz.hpp"
#include "core/job/intent.hpp"
#include "core/base/plugin_args.hpp"

namespace {

constexpr int64_t kNow = 1795986000;  // 2026-11-29T21:00:00Z

// "any" carries no level (locality_string), so the level of an Any intent
// does not travel and does not matter.
m2g::JobIntent normalized(m2g::JobIntent i)
{
    if (i.locality == m2g::Locality::Any || i.locality == m2g::Locality::Unset)
        i.level = m2g::LocalityLevel::NVLink;
    return i;
}

std::string dump(const m2g::JobIntent& i)
{
    std::string s = m2g::describe(i) + " level=" + m2g::to_string(i.level);
    for (const auto& [k, v] : m2g::encode_intent(i))
        s += "\n  " + k + "=" + v;
    return s;
}

void check_unique_tags(const m2g::JobIntent& i, const char* where)
{
    std::set<std::string> keys;
    for (const m2g::Tag& t : i.tags)
        if (!keys.insert(t.first).second)
            m2g_fuzz::violated(where, "tag key '" + t.first + "' twice in " + dump(i));
}

std::vector<std::string> words(const std::string& line)
{
    std::istringstream ss(line);
    std::vector<std::string> out;
    for (std::string w; ss >> w;)
        out.push_back(w);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::vector<std::string> lines = m2g_fuzz::lines(m2g_fuzz::text(data, size));
    const auto& specs = m2g::option_specs();

    m2g::JobIntent intent;
    for (const std::string& line : lines) {
        if (line.empty())
            continue;
        const size_t pick = static_cast<unsigned char>(line[0]) % (specs.size() + 1);
        std::string name, value = line.substr(1);
        if (pick < specs.size()) {
            name = specs[pick].name;
        } else {  // a name outside the table: "NAME=VALUE"
            const size_t eq = value.find('=');
            name = value.substr(0, eq);
            value = eq == std::string::npos ? "" : value.substr(eq + 1);
        }
        const m2g::JobIntent before = intent;
        try {
            m2g::apply_option(intent, name, value, kNow);
        } catch (const m2g::Error& e) {
            m2g_fuzz::check_message(e);
            if (!(intent == before))
                m2g_fuzz::violated("a refused option leaves the intent unchanged", "--" + name + "=" + value);
        }
    }
    check_unique_tags(intent, "apply_option keeps tag keys unique");

    // What the SPANK plugin encodes, job_submit decodes: the same intent.
    std::vector<std::string> env;
    for (const auto& [k, v] : m2g::encode_intent(intent))
        env.push_back(k + "=" + v);
    try {
        const m2g::JobIntent back = m2g::decode_intent(env);
        if (!(normalized(back) == normalized(intent)))
            m2g_fuzz::violated("decode_intent(encode_intent(i)) == i", "sent " + dump(intent) + "\ngot  " + dump(back));
    } catch (const m2g::Error& e) {
        m2g_fuzz::violated("decode_intent accepts what encode_intent wrote", dump(intent) + "\n" + e.what());
    }

    // The lines as a job environment.
    try {
        const m2g::JobIntent decoded = m2g::decode_intent(lines);
        check_unique_tags(decoded, "decode_intent keeps tag keys unique");
        (void)m2g::describe(decoded);
    } catch (const m2g::Error& e) {
        m2g_fuzz::check_message(e);
    }

    // Each line as spank_m2g.so's plugstack.conf arguments.
    for (const std::string& line : lines) {
        try {
            (void)m2g::parse_spank_args(words(line));
        } catch (const m2g::Error& e) {
            m2g_fuzz::check_message(e);
        }
    }
    return 0;
}
