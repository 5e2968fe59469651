// maximum and minimum as IEEE 754-2019 defines them (and StableHLO names them): NaN when
// either operand is NaN, and -0 below +0. Shared by the element-wise ops and reduce.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace cutcheck {

inline double ieee_maximum(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return NAN;
  if (x == y) return std::signbit(x) ? y : x;  // max(-0, +0) = +0
  return x > y ? x : y;
}

inline double ieee_minimum(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return NAN;
  if (x == y) return std::signbit(x) ? x : y;  // min(-0, +0) = -0
  return x < y ? x : y;
}

// The bits of an f32 as an integer that orders as the values do: -0 just below +0, NaNs
// beyond the infinities (by sign). Negative values have their magnitude bits flipped, so
// the map is its own inverse. Integer compares of keys vectorise where a floating-point
// compare, which may trap on NaN, keeps GCC to a branch.
inline int32_t f32_order_key(int32_t bits) { return bits ^ ((bits >> 31) & 0x7fffffff); }

inline int32_t f32_order_key(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return f32_order_key(bits);
}

}  // namespace cutcheck
