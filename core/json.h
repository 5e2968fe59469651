// JSON parsing with a nesting bound and errors that name the file, so a crafted
// document can neither recurse without bound nor fail anonymously.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cutcheck {

using Json = nlohmann::json;

// Parses `text`; throws FormatError "SOURCE: ..." on malformed JSON or nesting deeper than 32.
Json parse_json(const std::string& text, const std::string& source);

// Typed field access for readers of JSON documents: each throws FormatError naming
// `source` and the field when the field is missing or of the wrong kind.
const Json& json_field(const Json& object, const std::string& key, const std::string& source);
int64_t json_int(const Json& object, const std::string& key, const std::string& source);
double json_number(const Json& object, const std::string& key, const std::string& source);
std::string json_string(const Json& object, const std::string& key, const std::string& source);
bool json_bool(const Json& object, const std::string& key, const std::string& source);
std::vector<int64_t> json_int_list(const Json& object, const std::string& key, const std::string& source);

// `document` as indented JSON text with a final newline, invalid UTF-8 replaced (the second
// line of defence: the texts put into reports are clean already).
std::string json_text(const Json& document);

}  // namespace cutcheck
