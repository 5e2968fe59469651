// The two 16-bit float formats checkpoints store, widened to f32 exactly: bf16 is the
// top half of an f32; f16 (IEEE binary16) has 5 exponent bits and 10 fraction bits.
// Narrowing rounds to nearest, ties to even; beyond the largest finite value it gives
// infinity; a NaN stays a (quiet) NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/tensor.h"

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

inline uint16_t f32_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // NaN: keep it quiet
  // Adding 0x7fff plus the kept half's lowest bit rounds the dropped half to nearest, ties to even.
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

inline uint16_t f32_to_f16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00;   // NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00;  // 65520 and above round to infinity
  if (magnitude < 0x38800000u) {                       // below 2^-14: a multiple of 2^-24
    // Scaling by 2^24 is exact; nearbyint rounds ties to even; 1024 is the smallest normal's bits.
    return sign | uint16_t(std::nearbyint(std::fabs(value) * 0x1p24f));
  }
  const uint32_t rebiased = magnitude - 0x38000000u;  // exponent bias 127 -> 15
  return sign | uint16_t((rebiased + 0xfffu + ((rebiased >> 13) & 1)) >> 13);
}

// The 16-bit dtype `dtype` (bf16 or f16) to and from f32.
inline float half_to_f32(DType dtype, uint16_t bits) { return dtype == DType::bf16 ? bf16_to_f32(bits) : f16_to_f32(bits); }
inline uint16_t f32_to_half(DType dtype, float value) {
  return dtype == DType::bf16 ? f32_to_bf16(value) : f32_to_f16(value);
}

}  // namespace cutcheck
