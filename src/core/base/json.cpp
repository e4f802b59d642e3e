// m2g core: json-c helpers (see json.hpp).
#include "core/base/json.hpp"

#include "core/base/error.hpp"

namespace m2g {

JsonPtr json_parse_object(const std::string& text, const std::string& what)
{
    json_tokener* tok = json_tokener_new();
    json_object* o = json_tokener_parse_ex(tok, text.c_str(), static_cast<int>(text.size()) + 1);
    const json_tokener_error err = json_tokener_get_error(tok);
    json_tokener_free(tok);
    if (!o || err != json_tokener_success)
        throw ParseError(what + ": not JSON (" + json_tokener_error_desc(err) + ")");
    JsonPtr j(o);
    if (!json_object_is_type(o, json_type_object))
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

}  // namespace m2g
