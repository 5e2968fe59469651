#include "bound/precision.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "core/error.h"

namespace cutcheck {
namespace {

const std::array<PrecisionInfo, 3> precisions{{
    {Precision::f32, "f32", 24, -126, 0x1.fffffep127},
    {Precision::bf16, "bf16", 8, -126, 0x1.fep127},
    {Precision::f16, "f16", 11, -14, 65504.0},
}};

}  // namespace

double PrecisionInfo::unit_roundoff() const { return std::ldexp(1.0, -mantissa_bits); }
double PrecisionInfo::underflow() const { return std::ldexp(1.0, min_exponent - mantissa_bits); }

const PrecisionInfo& precision_info(Precision p) { return precisions[size_t(p)]; }

std::string precision_names() { return "f32, bf16, f16"; }

Precision parse_precision(std::string_view name) {
  for (const PrecisionInfo& p : precisions)
    if (p.name == name) return p.precision;
  throw Error(fmt::format("unknown precision '{}'; the precisions are {}", name, precision_names()));
}

double round_to(const PrecisionInfo& p, double x) {
  if (!std::isfinite(x) || x == 0) return x;
  // The spacing of the format around x: 2^(e - mantissa_bits + 1) for x in [2^e, 2^(e+1)),
  // and the subnormal spacing below the smallest normal.
  int e = std::ilogb(x);
  if (e < p.min_exponent) e = p.min_exponent;
  const double spacing = std::ldexp(1.0, e - p.mantissa_bits + 1);
  // Values at or past the largest finite value plus half its spacing overflow.
  const double limit = p.max_finite + std::ldexp(1.0, std::ilogb(p.max_finite) - p.mantissa_bits);
  if (std::abs(x) >= limit) return std::copysign(INFINITY, x);
  return std::nearbyint(x / spacing) * spacing;  // the default rounding mode: nearest, ties to even
}

}  // namespace cutcheck
