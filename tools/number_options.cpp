#include "tools/number_options.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <type_traits>

namespace cutcheck::cli::detail {

namespace {

// "[1, 4096]", "(0, 1000000000]", "[0, inf)".
template <class T>
std::string interval(const Range<T>& range) {
  const bool open_high = std::is_floating_point_v<T> && std::isinf(double(range.high));
  return fmt::format("{}{}, {}{}", range.low_open ? '(' : '[', range.low, range.high, open_high ? ')' : ']');
}

}  // namespace

template <class T>
std::string range_text(const Range<T>& range) {
  return fmt::format("{} in {}", std::is_integral_v<T> ? "INT" : "FLOAT", interval(range));
}

template <class T>
std::string refusal(const std::string& text, const Range<T>& range) {
  T value{};
  // from_chars takes no sign on an unsigned type, no leading '+' or space, and reports an
  // integer the type cannot hold rather than wrapping it.
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool number = !text.empty() && ec == std::errc() && end == text.data() + text.size();
  bool inside = number && (range.low_open ? value > range.low : value >= range.low) && value <= range.high;
  if constexpr (std::is_floating_point_v<T>) inside = inside && std::isfinite(value);
  if (inside) return "";
  return fmt::format("expected {} in {}, got '{}'", std::is_integral_v<T> ? "a whole number" : "a finite number",
                     interval(range), text);
}

template std::string range_text(const Range<int>&);
template std::string range_text(const Range<int64_t>&);
template std::string range_text(const Range<uint64_t>&);
template std::string range_text(const Range<double>&);
template std::string refusal(const std::string&, const Range<int>&);
template std::string refusal(const std::string&, const Range<int64_t>&);
template std::string refusal(const std::string&, const Range<uint64_t>&);
template std::string refusal(const std::string&, const Range<double>&);

}  // namespace cutcheck::cli::detail
