#include "tools/common.h"

#include <fmt/format.h>

#include <charconv>

#include "core/error.h"

namespace cutcheck::cli {

ModelSpec resolve_spec(const std::string& spec, const std::string& weights_dir) {
  if (!spec.empty()) return load_spec(spec);
  if (!weights_dir.empty() && fs::exists(fs::path(weights_dir) / "spec.json"))
    return load_spec((fs::path(weights_dir) / "spec.json").string());
  throw Error("give --spec (a built-in name or a spec file), or --weights with a spec.json inside");
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

std::vector<int32_t> parse_token_list(const std::string& text) {
  std::vector<int32_t> out;
  for (const std::string& item : split_list(text)) {
    int32_t v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      throw Error(fmt::format("'{}' is not a comma-separated list of token ids", text));
    out.push_back(v);
  }
  return out;
}

Tolerance tolerance_option(const std::string& tolerance, const std::string& precision) {
  if (tolerance == "f32" || tolerance == "bf16")
    throw Error(fmt::format("--tolerance {0}: the fixed presets are now fixed-f32 and fixed-bf16; the default is "
                            "--tolerance bound --precision {0}, a bound per element (docs/numerics.md)",
                            tolerance));
  return Tolerance::parse(tolerance, parse_precision(precision));
}

}  // namespace cutcheck::cli
