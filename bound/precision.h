// The precision a backend declares it computes in, and what that means for rounding:
// every value is stored in the precision's format (rounded to nearest, ties to even),
// while sums accumulate in at least f32, as every bf16 or f16 matrix unit does.
// docs/numerics.md derives the error bounds from these figures.
#pragma once

#include <string>
#include <string_view>

namespace cutcheck {

enum class Precision { f32, bf16, f16 };

struct PrecisionInfo {
  Precision precision;
  std::string_view name;
  int mantissa_bits;  // significand bits, the implicit one included: f32 24, bf16 8, f16 11
  int min_exponent;   // of the smallest normal number, 2^min_exponent
  double max_finite;  // the largest finite value; beyond it rounding overflows to infinity
  double unit_roundoff() const;  // u = 2^-mantissa_bits: |round(x) - x| <= u |x| in the normal range
  double underflow() const;      // the largest absolute rounding error near zero: half the smallest subnormal
};

const PrecisionInfo& precision_info(Precision p);
// Throws Error naming the precisions there are.
Precision parse_precision(std::string_view name);
std::string precision_names();  // "f32, bf16, f16"

// x rounded to the precision's format (nearest, ties to even; overflow to infinity).
// NaN and infinities are kept.
double round_to(const PrecisionInfo& p, double x);

// Unit roundoff of the accumulation of sums, for every precision: f32's.
inline constexpr double accumulation_roundoff = 0x1p-24;

}  // namespace cutcheck
