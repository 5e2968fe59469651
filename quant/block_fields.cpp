#include "quant/block_fields.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "quant/fields.h"

namespace cutcheck {
namespace {

using namespace quant_fields;

// The 256 codes of a q6_K super-block, in value order.
void q6_K_codes(const std::byte* b, float* y) {
  for (int h = 0; h < 2; ++h) {
    const std::byte* ql = b + q6_K_ql + 64 * h;
    const std::byte* qh = b + q6_K_qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      const uint8_t high = byte_at(qh, l);
      y[128 * h + l] = float(((byte_at(ql, l) & 15) | (high & 3) << 4) - 32);
      y[128 * h + 32 + l] = float(((byte_at(ql, l + 32) & 15) | (high >> 2 & 3) << 4) - 32);
      y[128 * h + 64 + l] = float(((byte_at(ql, l) >> 4) | (high >> 4 & 3) << 4) - 32);
      y[128 * h + 96 + l] = float(((byte_at(ql, l + 32) >> 4) | (high >> 6 & 3) << 4) - 32);
    }
  }
}

}  // namespace

float quant_fields::finite_f16(QuantFormat format, const std::byte* p, int64_t block, const char* field) {
  const uint16_t bits = load_u16(p);
  const float value = f16_to_f32(bits);
  if (!std::isfinite(value))
    throw FormatError(fmt::format("{} block {}: the scale {} is {} (f16 bits 0x{:04x}), not a finite number",
                                  quant_format_name(format), block, field, value, bits));
  return value;
}

void row_codes(QuantFormat format, const std::byte* blocks, int64_t n, float* y) {
  const BlockLayout layout = block_layout(format, n);
  row_bytes(format, n);  // whole blocks
  if (format == QuantFormat::i8_row) {
    for (int64_t i = 0; i < n; ++i) y[i] = float(int8_t(blocks[i8_row_q + i]));
    return;
  }
  for (int64_t k = 0; k < n / layout.values; ++k, y += layout.values) {
    const std::byte* b = blocks + k * layout.bytes;
    switch (format) {
      case QuantFormat::q8_0:
        for (int i = 0; i < 32; ++i) y[i] = float(int8_t(b[q8_0_q + i]));
        break;
      case QuantFormat::q4_0:
        for (int j = 0; j < 16; ++j) {
          y[j] = float((byte_at(b, q4_0_q + j) & 15) - 8);
          y[j + 16] = float((byte_at(b, q4_0_q + j) >> 4) - 8);
        }
        break;
      case QuantFormat::q5_0: {
        const uint32_t qh = load_u32(b + q5_0_qh);
        for (int j = 0; j < 16; ++j) {
          y[j] = float(int((byte_at(b, q5_0_q + j) & 15) | (qh >> j & 1) << 4) - 16);
          y[j + 16] = float(int((byte_at(b, q5_0_q + j) >> 4) | (qh >> (j + 16) & 1) << 4) - 16);
        }
        break;
      }
      case QuantFormat::q4_K:
        for (int c = 0; c < 4; ++c)
          for (int l = 0; l < 32; ++l) {
            y[64 * c + l] = float(byte_at(b, q4_K_q + 32 * c + l) & 15);
            y[64 * c + 32 + l] = float(byte_at(b, q4_K_q + 32 * c + l) >> 4);
          }
        break;
      case QuantFormat::q6_K: q6_K_codes(b, y); break;
      case QuantFormat::i8_row: break;
    }
  }
}

void row_scales(QuantFormat format, const std::byte* blocks, int64_t n, float* y) {
  const BlockLayout layout = block_layout(format, n);
  row_bytes(format, n);
  if (format == QuantFormat::i8_row) {
    y[0] = load_f32(blocks + i8_row_scale);
    if (!std::isfinite(y[0])) throw FormatError(fmt::format("i8_row: the row's scale is {}, not a finite number", y[0]));
    return;
  }
  for (int64_t k = 0; k < n / layout.values; ++k) {
    const std::byte* b = blocks + k * layout.bytes;
    switch (format) {
      case QuantFormat::q8_0: *y++ = finite_f16(format, b + q8_0_d, k, "d"); break;
      case QuantFormat::q4_0: *y++ = finite_f16(format, b + q4_0_d, k, "d"); break;
      case QuantFormat::q5_0: *y++ = finite_f16(format, b + q5_0_d, k, "d"); break;
      case QuantFormat::q4_K: {
        const float d = finite_f16(format, b + q4_K_d, k, "d");
        for (int j = 0; j < 8; ++j) *y++ = d * float(unpack_scale_min(b + q4_K_scales, j).scale);
        break;
      }
      case QuantFormat::q6_K: {
        const float d = finite_f16(format, b + q6_K_d, k, "d");
        for (int j = 0; j < 16; ++j) *y++ = d * float(int8_t(b[q6_K_scales + j]));
        break;
      }
      case QuantFormat::i8_row: break;
    }
  }
}

void row_mins(QuantFormat format, const std::byte* blocks, int64_t n, float* y) {
  if (!has_mins(format)) throw Error(fmt::format("{} has no mins", quant_format_name(format)));
  const BlockLayout layout = block_layout(format, n);
  row_bytes(format, n);
  for (int64_t k = 0; k < n / layout.values; ++k) {
    const std::byte* b = blocks + k * layout.bytes;
    const float dmin = finite_f16(format, b + q4_K_dmin, k, "dmin");
    for (int j = 0; j < 8; ++j) *y++ = dmin * float(unpack_scale_min(b + q4_K_scales, j).min);
  }
}

void check_scales(const Tensor& t, const std::string& what) {
  const QuantFormat format = *quant_format(t.dtype());
  const std::byte* blocks = t.raw().data();
  const int64_t cols = t.shape().back(), rows = cols == 0 ? 0 : t.elements() / cols;
  const int64_t stride = row_bytes(format, cols), parts = cols == 0 ? 0 : cols / values_per_scale(format, cols);
  std::vector<float> scratch(static_cast<size_t>(parts));
  for (int64_t r = 0; r < rows; ++r) {
    try {
      row_scales(format, blocks + r * stride, cols, scratch.data());
      if (has_mins(format)) row_mins(format, blocks + r * stride, cols, scratch.data());
    } catch (const FormatError& e) {
      throw FormatError(fmt::format("{} row {}: {}", what, r, e.what()));
    }
  }
}

}  // namespace cutcheck
