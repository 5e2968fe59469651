// The rounding rules of ggml's reference quantizers, each as ggml's x86-64 build computes it
// (ggml/src/ggml-quants.c): Q8_0 rounds halves away from zero (roundf), Q4_0 rounds them up
// (truncating x + 8.5), the K-quants round them to even (nearest_int).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace cutcheck::quant_rounding {

// ggml's nearest_int: adding 1.5 * 2^23 leaves round-to-nearest-even(v) in the low 23 bits of
// the sum's encoding, offset by 2^22, for |v| < 2^22. Outside that range ggml only asserts, so
// its release build returns these same bits, which this reproduces without undefined
// behaviour: NaN gives 0, an infinity -2^22.
inline int nearest_int(float v) {
  const float shifted = v + 12582912.0f;
  return int(std::bit_cast<uint32_t>(shifted) & 0x007fffffu) - 0x00400000;
}

// Q8_0's code for x given the inverse scale id = 1 / d: roundf(x * id). An inverse scale that
// overflowed (d below 2^-128) makes every x * id infinite or NaN, whose conversion to int8 C
// leaves undefined; ggml's x86-64 build stores 0, and so does this.
inline int8_t q8_0_code(float x, float id) { return std::isfinite(id) ? int8_t(std::round(x * id)) : int8_t(0); }

// Q4_0's code (0..15) for x given id = 1 / d, where d = max / -8: x * id lies in [-8, 8] up to
// rounding, so x * id + 8.5 lies in [0, 17) and truncating it is floor; capped at 15. An
// overflowed inverse scale gives 0, as for Q8_0.
inline int q4_0_code(float x, float id) { return std::isfinite(id) ? std::min(15, int(x * id + 8.5f)) : 0; }

// Q5_0's code (0..31) for x given id = 1 / d, where d = max / -16: as Q4_0's, about 16.
inline int q5_0_code(float x, float id) { return std::isfinite(id) ? std::min(31, int(x * id + 16.5f)) : 0; }

}  // namespace cutcheck::quant_rounding
