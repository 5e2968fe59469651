// Numeric command-line options, each declared with the values that mean something for it.
// CLI11 alone takes "nan" and "inf" for a double and wraps "-1" into an unsigned; here the
// range is part of the declaration, --help shows it ("INT in [1, 4096]", "FLOAT in (0, 1000000000]",
// "FLOAT in [0, inf)"), and anything else is refused while the command line is parsed, before
// any work, naming the option (exit 2): NaN, infinities, numbers outside the range, integers
// the option's type cannot hold, and text that is not a plain decimal number.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cutcheck::cli {

// [low, high], or (low, high] when low_open. A floating-point range whose high is infinity
// takes every finite number from low on.
template <class T>
struct Range {
  T low, high;
  bool low_open = false;
};

namespace detail {
template <class T>
struct NumberOf {
  using type = T;
};
template <class T>
struct NumberOf<std::optional<T>> {
  using type = T;
};
template <class T>
struct NumberOf<std::vector<T>> {
  using type = T;
};

// "INT in [1, 4096]": the range as --help shows it.
template <class T>
std::string range_text(const Range<T>& range);
// Why `text` is not a number of `range`, or "" when it is one.
template <class T>
std::string refusal(const std::string& text, const Range<T>& range);
}  // namespace detail

// The element type of a numeric option's variable: int for int, std::optional<int> and
// std::vector<int>.
template <class T>
using NumberOf = typename detail::NumberOf<T>::type;

// Declares the option `name` of `cmd`, stored in `value` (a number, an optional number or a
// list of numbers), taking the numbers of `range` only.
template <class T>
CLI::Option* add_number(CLI::App* cmd, const std::string& name, T& value, const std::string& help,
                        const Range<NumberOf<T>>& range) {
  return cmd->add_option(name, value, help)
      ->type_name(detail::range_text(range))
      ->check(CLI::Validator([range](std::string& text) { return detail::refusal(text, range); }, ""));
}

// The ranges several commands share.
inline constexpr Range<uint64_t> seeds{0, std::numeric_limits<uint64_t>::max()};
inline constexpr Range<double> seconds{0, 1e9, true};  // a time limit that expires, and not at once
inline constexpr Range<int64_t> tp_widths{1, 4096};
inline constexpr Range<int> jobs{0, 1024};     // 0: one per core
inline constexpr Range<int> threads{1, 1024};  // each is a thread started
inline constexpr Range<int> case_counts{1, 100000000};
inline constexpr Range<double> tolerances{0, std::numeric_limits<double>::infinity()};

}  // namespace cutcheck::cli
