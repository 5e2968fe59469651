// Arithmetic on sizes, counts and spans computed from input (headers, specs, ranges,
// case files). Each overflow becomes a LimitError that names what overflowed, never a
// wrapped value that later divides by zero or reads past a mapping.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

#include "core/error.h"

namespace cutcheck {

inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) throw LimitError(fmt::format("{}: {} x {} overflows", what, a, b));
  return out;
}

inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) throw LimitError(fmt::format("{}: {} + {} overflows", what, a, b));
  return out;
}

inline uint64_t checked_mul(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t out;
  if (__builtin_mul_overflow(a, b, &out)) throw LimitError(fmt::format("{}: {} x {} overflows", what, a, b));
  return out;
}

inline uint64_t checked_add(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t out;
  if (__builtin_add_overflow(a, b, &out)) throw LimitError(fmt::format("{}: {} + {} overflows", what, a, b));
  return out;
}

// The number of integers in [lo, hi] (lo <= hi), when it fits in 64 bits.
inline uint64_t checked_span(int64_t lo, int64_t hi, std::string_view what) {
  if (lo > hi) throw LimitError(fmt::format("{}: the range [{}, {}] is empty", what, lo, hi));
  const uint64_t width = uint64_t(hi) - uint64_t(lo);  // exact: two's complement difference of lo <= hi
  return checked_add(width, uint64_t{1}, what);
}

}  // namespace cutcheck
