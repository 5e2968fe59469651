#include "tools/common.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "core/error.h"

namespace cutcheck::cli {

const CLI::Validator seed_number(
    [](std::string& text) -> std::string {
      uint64_t value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        return fmt::format("a seed is a decimal number from 0 to 2^64 - 1, got '{}'", text);
      return "";
    },
    "SEED");

const CLI::Validator positive_seconds(
    [](std::string& text) -> std::string {
      double value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
          value <= 0 || value > 1e9)
        return fmt::format("a time in seconds is a number above 0 (and at most 1e9), got '{}'", text);
      return "";
    },
    "SECONDS");

const CLI::Validator tp_width(
    [](std::string& text) -> std::string {
      int64_t value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 1 || value > 4096)
        return fmt::format("a tp width is a whole number from 1 to 4096, got '{}'", text);
      return "";
    },
    "TP");

void check_report_path(const std::string& option, const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!path.empty() && fs::exists(status) && !fs::is_regular_file(status))
    throw Error(fmt::format("{} '{}': exists and is not a regular file; refusing to replace it", option, path));
}

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
