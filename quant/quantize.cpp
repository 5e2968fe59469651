#include "quant/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/half.h"
#include "quant/fields.h"
#include "quant/rounding.h"

// Byte identity with ggml needs its f32 operations in its order: every expression below
// keeps ggml's operands, their grouping and its int-to-float conversions, and the build's
// -ffp-contract=off keeps products and sums separately rounded as ggml's reference build does.

namespace cutcheck {
namespace {

using namespace quant_fields;
using namespace quant_rounding;

// ggml's threshold below which a group's largest magnitude counts as all zero (GROUP_MAX_EPS).
constexpr float group_max_eps = 1e-15f;

// Values too large for the format: a block whose scale rounds to infinity in f16 (ggml
// stores the infinity, and the block dequantizes to infinities and NaNs), or, for the
// K-quants, whose sub-block fit overflowed f32 (ggml then writes zero or arbitrary codes).
[[noreturn]] void too_large(QuantFormat format, int64_t block, const std::string& what) {
  const int64_t values = block_layout(format, 0).values;
  throw InputError(fmt::format("{} block {} (values {}..{}): {}; the values are too large for the format",
                               quant_format_name(format), block, block * values, (block + 1) * values - 1, what));
}

// The f16 bits of a block's scale `field`, refused beyond f16's range (65504).
uint16_t f16_scale(float value, QuantFormat format, int64_t block, const char* field) {
  const uint16_t bits = f32_to_f16(value);
  if ((bits & 0x7c00) == 0x7c00) too_large(format, block, fmt::format("its scale {} = {} is beyond f16's range", field, value));
  return bits;
}

void check_fit(float value, QuantFormat format, int64_t block, int sub_block, const char* what) {
  if (!std::isfinite(value)) too_large(format, block, fmt::format("sub-block {}'s fitted {} is {}", sub_block, what, value));
}

// quantize_row_q8_0_ref for one block: d = amax / 127.
void q8_0_block(const float* x, int64_t block, std::byte* out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(out + q8_0_d, f16_scale(d, QuantFormat::q8_0, block, "d"));
  for (int j = 0; j < 32; ++j) out[q8_0_q + j] = std::byte(q8_0_code(x[j], id));
}

// The value of largest magnitude of a 32-value block, the first of equals, with its sign.
float signed_max(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// quantize_row_q4_0_ref for one block: the value of largest magnitude gets code 0, so
// d = max / -8.
void q4_0_block(const float* x, int64_t block, std::byte* out) {
  const float d = signed_max(x) / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(out + q4_0_d, f16_scale(d, QuantFormat::q4_0, block, "d"));
  for (int j = 0; j < 16; ++j) out[q4_0_q + j] = std::byte(q4_0_code(x[j], id) | q4_0_code(x[j + 16], id) << 4);
}

// quantize_row_q5_0_ref for one block: Q4_0's rule with 5-bit codes, d = max / -16; the codes'
// low nibbles packed as Q4_0's, their fifth bits in qh.
void q5_0_block(const float* x, int64_t block, std::byte* out) {
  const float d = signed_max(x) / -16;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(out + q5_0_d, f16_scale(d, QuantFormat::q5_0, block, "d"));
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int low = q5_0_code(x[j], id), high = q5_0_code(x[j + 16], id);
    out[q5_0_q + j] = std::byte((low & 15) | (high & 15) << 4);
    qh |= uint32_t(low >> 4) << j | uint32_t(high >> 4) << (j + 16);
  }
  store_u32(out + q5_0_qh, qh);
}

// make_qkx2_quants as quantize_row_q4_K_ref calls it (n 32, nmax 15, rmin -1, rdelta 0.1,
// nstep 20, squared error): fits x ~ scale * L - offset with L in 0..15 and offset >= 0 by
// weighted least squares over 21 trial scales. Returns the scale; writes L and the offset.
float fit_scale_and_offset(const float* x, const float* w, uint8_t* L, float& offset) {
  constexpr int n = 32, nmax = 15, nstep = 20;
  constexpr float rmin = -1.0f, rdelta = 0.1f;
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    offset = -min;
    return 0.0f;
  }
  auto code = [&](float iscale, float xi) { return uint8_t(std::clamp(nearest_int(iscale * (xi - min)), 0, nmax)); };
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = code(iscale, x[i]);
    const float diff = scale * L[i] + min - x[i];
    best_error += w[i] * (diff * diff);
  }
  uint8_t trial[n];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      trial[i] = code(iscale, x[i]);
      const float l = trial[i];
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (!(D > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * trial[i] + this_min - x[i];
      error += w[i] * (diff * diff);
    }
    if (error < best_error) {
      std::copy(trial, trial + n, L);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  offset = -min;
  return scale;
}

// quantize_row_q4_K_ref for one super-block.
void q4_K_block(const float* x, int64_t block, std::byte* out) {
  uint8_t L[256];
  float scales[8], offsets[8];
  float max_scale = 0, max_offset = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    float weights[32];
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = fit_scale_and_offset(xs, weights, L + 32 * j, offsets[j]);
    check_fit(scales[j], QuantFormat::q4_K, block, j, "scale");
    check_fit(offsets[j], QuantFormat::q4_K, block, j, "min");
    if (scales[j] > max_scale) max_scale = scales[j];
    if (offsets[j] > max_offset) max_offset = offsets[j];
  }
  // Each sub-block's scale and offset as 6-bit multiples of the largest / 63. nearest_int's
  // int narrows to 8 bits before the cap at 63, as ggml's uint8_t assignment does.
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_offset = max_offset > 0 ? 63.f / max_offset : 0.f;
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = std::min(uint8_t(63), uint8_t(nearest_int(inv_scale * scales[j])));
    m[j] = std::min(uint8_t(63), uint8_t(nearest_int(inv_offset * offsets[j])));
  }
  const uint16_t d_bits = f16_scale(max_scale / 63.f, QuantFormat::q4_K, block, "d");
  const uint16_t dmin_bits = f16_scale(max_offset / 63.f, QuantFormat::q4_K, block, "dmin");
  store_u16(out + q4_K_d, d_bits);
  store_u16(out + q4_K_dmin, dmin_bits);
  pack_scale_mins(sc, m, out + q4_K_scales);
  // The codes again against the stored scales; a sub-block whose scale is 0 keeps the fit's.
  for (int j = 0; j < 8; ++j) {
    const float d = f16_to_f32(d_bits) * sc[j];
    if (d == 0.0f) continue;
    const float dm = f16_to_f32(dmin_bits) * m[j];
    for (int i = 32 * j; i < 32 * j + 32; ++i) L[i] = uint8_t(std::clamp(nearest_int((x[i] + dm) / d), 0, 15));
  }
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) out[q4_K_q + 32 * c + l] = std::byte(L[64 * c + l] | L[64 * c + 32 + l] << 4);
  }
}

// make_qx_quants as quantize_row_q6_K_ref calls it (n 16, nmax 32, rmse_type 1: weights x^2,
// no importance): codes l in -32..31 for x ~ scale * l, the scale refined over 18 trial
// inverse scales around -32 / max. Writes l + 32 to L (0 for an all-zero group).
float fit_symmetric_scale(const float* x, uint8_t* L) {
  constexpr int n = 16, nmax = 32;
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < group_max_eps) {
    std::fill(L, L + n, uint8_t{0});
    return 0.0f;
  }
  auto code = [](float iscale, float xi) { return std::clamp(nearest_int(iscale * xi), -nmax, nmax - 1); };
  // The weighted sums of x * l and l * l for the codes of `iscale`.
  auto sums = [&](float iscale, float& sumlx, float& suml2) {
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const float l = code(iscale, x[i]);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
  };
  auto keep_codes = [&](float iscale) {
    for (int i = 0; i < n; ++i) L[i] = uint8_t(nmax + code(iscale, x[i]));
  };
  float iscale = -nmax / max;
  float sumlx, suml2;
  sums(iscale, sumlx, suml2);
  keep_codes(iscale);
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sums(iscale, sumlx, suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      keep_codes(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// quantize_row_q6_K_ref for one super-block.
void q6_K_block(const float* x, int64_t block, std::byte* out) {
  uint8_t L[256];
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    scales[ib] = fit_symmetric_scale(x + 16 * ib, L + 16 * ib);
    check_fit(scales[ib], QuantFormat::q6_K, block, ib, "scale");
    if (std::fabs(scales[ib]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[ib]);
      max_scale = scales[ib];
    }
  }
  if (max_abs_scale < group_max_eps) {
    std::fill(out, out + 210, std::byte{0});
    return;
  }
  // The sub-block scales as int8 multiples of the largest / -128 (so it gets -128), capped at
  // 127; the codes again against the stored scales, a zero scale keeping the fit's.
  const float iscale = -128.f / max_scale;
  const uint16_t d_bits = f16_scale(1 / iscale, QuantFormat::q6_K, block, "d");
  store_u16(out + q6_K_d, d_bits);
  int8_t sc[16];
  for (int ib = 0; ib < 16; ++ib) {
    sc[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
    out[q6_K_scales + ib] = std::byte(sc[ib]);
  }
  for (int j = 0; j < 16; ++j) {
    const float d = f16_to_f32(d_bits) * sc[j];
    if (d == 0.0f) continue;
    for (int i = 16 * j; i < 16 * j + 16; ++i) L[i] = uint8_t(32 + std::clamp(nearest_int(x[i] / d), -32, 31));
  }
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = L + 128 * h;
    std::byte* ql = out + q6_K_ql + 64 * h;
    std::byte* qh = out + q6_K_qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      ql[l] = std::byte((q[l] & 15) | (q[l + 64] & 15) << 4);
      ql[l + 32] = std::byte((q[l + 32] & 15) | (q[l + 96] & 15) << 4);
      qh[l] = std::byte(q[l] >> 4 | (q[l + 32] >> 4) << 2 | (q[l + 64] >> 4) << 4 | (q[l + 96] >> 4) << 6);
    }
  }
}

// Q8_0's rule over the whole row, the scale amax / 127 kept in f32.
void i8_row(const float* x, int64_t n, std::byte* out) {
  float amax = 0.0f;
  for (int64_t j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float s = amax / 127;
  const float id = s != 0.0f ? 1.0f / s : 0.0f;
  store_f32(out + i8_row_scale, s);
  for (int64_t j = 0; j < n; ++j) out[i8_row_q + j] = std::byte(q8_0_code(x[j], id));
}

}  // namespace

void quantize_row_reference(QuantFormat format, const float* x, int64_t n, std::byte* out) {
  row_bytes(format, n);  // refuses a length that is not a whole number of blocks
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      throw InputError(fmt::format("{}: value {} of the row is {}; the quantizers define no code for it",
                                   quant_format_name(format), i, x[i]));
    }
  }
  if (format == QuantFormat::i8_row) return i8_row(x, n, out);
  void (*one_block)(const float*, int64_t, std::byte*) = nullptr;
  switch (format) {
    case QuantFormat::q8_0: one_block = q8_0_block; break;
    case QuantFormat::q4_0: one_block = q4_0_block; break;
    case QuantFormat::q5_0: one_block = q5_0_block; break;
    case QuantFormat::q4_K: one_block = q4_K_block; break;
    case QuantFormat::q6_K: one_block = q6_K_block; break;
    case QuantFormat::i8_row: break;
  }
  const BlockLayout layout = block_layout(format, n);
  for (int64_t block = 0; block < n / layout.values; ++block) {
    one_block(x + block * layout.values, block, out + block * layout.bytes);
  }
}

}  // namespace cutcheck
