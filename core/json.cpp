#include "core/json.h"

#include <fmt/format.h>

#include <set>

#include "core/error.h"

namespace cutcheck {

Json parse_json(const std::string& text, const std::string& source) {
  constexpr int max_depth = 32;
  std::vector<std::set<std::string>> open_objects;  // keys seen so far in each enclosing object
  auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > max_depth)
      throw FormatError(fmt::format("{}: JSON nested deeper than {} levels", source, max_depth));
    using E = Json::parse_event_t;
    if (event == E::object_start) open_objects.emplace_back();
    if (event == E::object_end) open_objects.pop_back();
    if (event == E::key && !open_objects.back().insert(parsed.get<std::string>()).second)
      throw FormatError(fmt::format("{}: key '{}' appears twice in one object", source, parsed.get<std::string>()));
    return true;
  };
  try {
    return Json::parse(text, check);
  } catch (const Json::exception& e) {
    throw FormatError(fmt::format("{}: malformed JSON: {}", source, e.what()));
  }
}

const Json& json_field(const Json& object, const std::string& key, const std::string& source) {
  if (!object.is_object()) throw FormatError(fmt::format("{}: expected a JSON object", source));
  auto it = object.find(key);
  if (it == object.end()) throw FormatError(fmt::format("{}: missing field '{}'", source, key));
  return *it;
}

int64_t json_int(const Json& object, const std::string& key, const std::string& source) {
  const Json& v = json_field(object, key, source);
  if (!v.is_number_integer())
    throw FormatError(fmt::format("{}: field '{}' must be an integer, got {}", source, key, v.dump()));
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    throw FormatError(fmt::format("{}: field '{}' is out of range: {}", source, key, v.dump()));
  return v.get<int64_t>();
}

double json_number(const Json& object, const std::string& key, const std::string& source) {
  const Json& v = json_field(object, key, source);
  if (!v.is_number())
    throw FormatError(fmt::format("{}: field '{}' must be a number, got {}", source, key, v.dump()));
  return v.get<double>();
}

std::string json_string(const Json& object, const std::string& key, const std::string& source) {
  const Json& v = json_field(object, key, source);
  if (!v.is_string())
    throw FormatError(fmt::format("{}: field '{}' must be a string, got {}", source, key, v.dump()));
  return v.get<std::string>();
}

bool json_bool(const Json& object, const std::string& key, const std::string& source) {
  const Json& v = json_field(object, key, source);
  if (!v.is_boolean())
    throw FormatError(fmt::format("{}: field '{}' must be true or false, got {}", source, key, v.dump()));
  return v.get<bool>();
}

std::vector<int64_t> json_int_list(const Json& object, const std::string& key, const std::string& source) {
  const Json& v = json_field(object, key, source);
  if (!v.is_array())
    throw FormatError(fmt::format("{}: field '{}' must be a list of integers, got {}", source, key, v.dump()));
  std::vector<int64_t> out;
  for (const Json& item : v) {
    if (!item.is_number_integer() || (item.is_number_unsigned() && item.get<uint64_t>() > uint64_t(INT64_MAX)))
      throw FormatError(fmt::format("{}: field '{}' must be a list of integers, got {}", source, key, v.dump()));
    out.push_back(item.get<int64_t>());
  }
  return out;
}

std::string json_text(const Json& document) {
  return document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace cutcheck
