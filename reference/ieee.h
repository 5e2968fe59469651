// maximum and minimum as IEEE 754-2019 defines them (and StableHLO names them): NaN when
// either operand is NaN, and -0 below +0. Shared by the element-wise ops and reduce.
#pragma once

#include <cmath>

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

}  // namespace cutcheck
