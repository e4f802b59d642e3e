// m2g CLI: the helpers commands.hpp declares for more than one command group.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>
#include <json-c/json.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "core/base/error.hpp"
#include "core/model/config.hpp"

namespace m2g {
namespace cli {

void add_conf_option(CLI::App* sub, std::string& conf, const char* alias)
{
    const std::string names = *alias ? std::string("--conf,") + alias : std::string("--conf");
    sub->add_option(names, conf,
                    std::string(kConfOptionHelp) + (*alias ? std::string("; ") + alias + " is its old name" : ""))
        ->type_name("FILE");
}

void add_json_flag(CLI::App* sub, bool& as_json) { sub->add_flag("--json", as_json, "one JSON object"); }

void emit(const std::string& text, const std::string& output)
{
    if (output.empty() || output == "-") {
        std::cout << text;
        return;
    }
    std::ofstream out(output, std::ios::trunc);
    if (!out || !(out << text) || !out.flush())
        throw Error(output + ": cannot write");
}

void print_warnings(const std::vector<std::string>& warnings, const std::string& file)
{
    for (const auto& w : warnings)
        std::cerr << "m2g: warning: " << file << ": " << w << "\n";
}

std::string plural(size_t n, const std::string& one, const std::string& many)
{
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string with_from(const std::string& body, const std::string& from, const char* writer, const std::string* path)
{
    std::unique_ptr<json_object, void (*)(json_object*)> o(json_tokener_parse(body.c_str()),
                                                           [](json_object* j) { json_object_put(j); });
    if (!o || !json_object_is_type(o.get(), json_type_object))
        throw Error(std::string("internal error: ") + writer + " wrote bad JSON");
    json_object_object_add(o.get(), "from", json_object_new_string(from.c_str()));
    if (path)
        json_object_object_add(o.get(), "path", path->empty() ? nullptr : json_object_new_string(path->c_str()));
    return std::string(json_object_to_json_string_ext(o.get(), JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) +
           "\n";
}

}  // namespace cli
}  // namespace m2g
