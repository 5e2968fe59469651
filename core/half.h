// The two 16-bit float formats checkpoints store, widened to f32 exactly: bf16 is the
// top half of an f32; f16 (IEEE binary16) has 5 exponent bits and 10 fraction bits.
#pragma once

#include <bit>
#include <cstdint>

namespace cutcheck {

inline float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

inline float f16_to_f32(uint16_t bits) {
  const uint32_t sign = uint32_t(bits >> 15) << 31;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  const uint32_t fraction = bits & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (fraction << 13));  // inf, NaN
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (fraction << 13));
  // Zero or subnormal: fraction * 2^-24, exact in f32.
  const float magnitude = float(fraction) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

}  // namespace cutcheck
