// m2g core: JSON documents with json-c — the owning pointer; members
// looked up and type-checked with messages that name the document and the
// path of what was wrong; and the few builders the --json outputs share.
#pragma once

#include <json-c/json.h>

#include <map>
#include <memory>
#include <cstdint>
#include <string>
#include <vector>

namespace m2g {

struct JsonDeleter {
    void operator()(json_object* o) const { json_object_put(o); }
};
using JsonPtr = std::unique_ptr<json_object, JsonDeleter>;

// `text` as one JSON value of any type. Throws ParseError
// "<what>: not JSON (<json-c's reason>)", then "; expected <expected>" when
// that is given.
JsonPtr json_parse(const std::string& text, const std::string& what, const std::string& expected = "");

// `text` as one JSON object. Throws ParseError "<what>: not JSON (...)" or
// "<what>: expected a JSON object".
JsonPtr json_parse_object(const std::string& text, const std::string& what);

// o[key], or null when o is null or has no such member.
json_object* json_member(json_object* o, const char* key);

// A JSON string's text, all of it: json_object_get_string() alone stops at
// an embedded "\u0000". `v` must be a string.
std::string json_string_text(json_object* v);

// o[key] as a string: "" when absent or null; ParseError
// "<what>: <path><key>: expected a string" when it is another type.
std::string json_string_at(json_object* o, const char* key, const std::string& what, const std::string& path);

// o[key] as an object of strings (empty when absent or null); ParseError
// naming the member that is not.
std::map<std::string, std::string> json_string_map(json_object* o, const char* key, const std::string& what,
                                                   const std::string& path);

// ---- writing ---------------------------------------------------------------
// A new empty object / array, owned.
JsonPtr json_new_object();
JsonPtr json_new_array();

// o[key] = v (an existing member is replaced). json_add_value takes `v`'s
// ownership; null adds a JSON null.
void json_add_value(json_object* o, const char* key, JsonPtr v);
void json_add_string(json_object* o, const char* key, const std::string& v);
void json_add_int(json_object* o, const char* key, int64_t v);
void json_add_double(json_object* o, const char* key, double v);
void json_add_bool(json_object* o, const char* key, bool v);
void json_add_strings(json_object* o, const char* key, const std::vector<std::string>& v);
// Appends to an array, taking `v`'s ownership.
void json_append(json_object* array, JsonPtr v);

// The document on one line, '/' unescaped, with a final newline: what a
// --json option prints.
std::string json_line(json_object* o);

}  // namespace m2g
