// m2g core: json-c helpers (see json.hpp).
#include "core/base/json.hpp"

#include "core/base/error.hpp"

#include <utility>

namespace m2g {

JsonPtr json_parse(const std::string& text, const std::string& what, const std::string& expected)
{
    json_tokener* tok = json_tokener_new();
    json_object* o = json_tokener_parse_ex(tok, text.c_str(), static_cast<int>(text.size()) + 1);
    const json_tokener_error err = json_tokener_get_error(tok);
    json_tokener_free(tok);
    if (!o || err != json_tokener_success)
        throw ParseError(what + ": not JSON (" + json_tokener_error_desc(err) + ")" +
                         (expected.empty() ? "" : "; expected " + expected));
    return JsonPtr(o);
}

JsonPtr json_parse_object(const std::string& text, const std::string& what)
{
    JsonPtr j = json_parse(text, what);
    if (!json_object_is_type(j.get(), json_type_object))
        throw ParseError(what + ": expected a JSON object");
    return j;
}

json_object* json_member(json_object* o, const char* key)
{
    json_object* v = nullptr;
    return o && json_object_object_get_ex(o, key, &v) ? v : nullptr;
}

std::string json_string_text(json_object* v)
{
    return std::string(json_object_get_string(v), static_cast<size_t>(json_object_get_string_len(v)));
}

std::string json_string_at(json_object* o, const char* key, const std::string& what, const std::string& path)
{
    json_object* v = json_member(o, key);
    if (!v || json_object_is_type(v, json_type_null))
        return "";
    if (!json_object_is_type(v, json_type_string))
        throw ParseError(what + ": " + path + key + ": expected a string");
    return json_object_get_string(v);
}

std::map<std::string, std::string> json_string_map(json_object* o, const char* key, const std::string& what,
                                                   const std::string& path)
{
    std::map<std::string, std::string> m;
    json_object* v = json_member(o, key);
    if (!v || json_object_is_type(v, json_type_null))
        return m;
    if (!json_object_is_type(v, json_type_object))
        throw ParseError(what + ": " + path + key + ": expected an object of strings");
    json_object_object_foreach(v, k, val)
    {
        if (!json_object_is_type(val, json_type_string))
            throw ParseError(what + ": " + path + key + "." + k + ": expected a string");
        m[k] = json_object_get_string(val);
    }
    return m;
}

JsonPtr json_new_object() { return JsonPtr(json_object_new_object()); }
JsonPtr json_new_array() { return JsonPtr(json_object_new_array()); }

void json_add_value(json_object* o, const char* key, JsonPtr v) { json_object_object_add(o, key, v.release()); }

void json_add_string(json_object* o, const char* key, const std::string& v)
{
    json_add_value(o, key, JsonPtr(json_object_new_string_len(v.data(), static_cast<int>(v.size()))));
}

void json_add_int(json_object* o, const char* key, int64_t v) { json_add_value(o, key, JsonPtr(json_object_new_int64(v))); }

void json_add_double(json_object* o, const char* key, double v)
{
    json_add_value(o, key, JsonPtr(json_object_new_double(v)));
}

void json_add_bool(json_object* o, const char* key, bool v)
{
    json_add_value(o, key, JsonPtr(json_object_new_boolean(v ? 1 : 0)));
}

void json_add_strings(json_object* o, const char* key, const std::vector<std::string>& v)
{
    JsonPtr a = json_new_array();
    for (const std::string& s : v)
        json_object_array_add(a.get(), json_object_new_string_len(s.data(), static_cast<int>(s.size())));
    json_add_value(o, key, std::move(a));
}

void json_append(json_object* array, JsonPtr v) { json_object_array_add(array, v.release()); }

std::string json_line(json_object* o)
{
    return std::string(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) +
           "\n";
}

}  // namespace m2g
