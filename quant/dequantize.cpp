#include "quant/dequantize.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "core/half.h"
#include "quant/fields.h"

namespace cutcheck {
namespace {

using namespace quant_fields;

// Each function below reads one block at `b` and writes its values to `y`. The int-to-float
// conversions and the products are ggml's, operand for operand.

void q8_0_block(const std::byte* b, int64_t block, float* y) {
  const float d = finite_f16(QuantFormat::q8_0, b + q8_0_d, block, "d");
  for (int i = 0; i < 32; ++i) y[i] = float(int8_t(b[q8_0_q + i])) * d;
}

void q4_0_block(const std::byte* b, int64_t block, float* y) {
  const float d = finite_f16(QuantFormat::q4_0, b + q4_0_d, block, "d");
  for (int j = 0; j < 16; ++j) {
    const uint8_t pair = byte_at(b, q4_0_q + j);
    y[j] = float((pair & 15) - 8) * d;
    y[j + 16] = float((pair >> 4) - 8) * d;
  }
}

void q5_0_block(const std::byte* b, int64_t block, float* y) {
  const float d = finite_f16(QuantFormat::q5_0, b + q5_0_d, block, "d");
  const uint32_t qh = load_u32(b + q5_0_qh);
  for (int j = 0; j < 16; ++j) {
    const uint8_t pair = byte_at(b, q5_0_q + j);
    y[j] = float(int((pair & 15) | (qh >> j & 1) << 4) - 16) * d;
    y[j + 16] = float(int((pair >> 4) | (qh >> (j + 16) & 1) << 4) - 16) * d;
  }
}

void q4_K_block(const std::byte* b, int64_t block, float* y) {
  const float d = finite_f16(QuantFormat::q4_K, b + q4_K_d, block, "d");
  const float dmin = finite_f16(QuantFormat::q4_K, b + q4_K_dmin, block, "dmin");
  for (int c = 0; c < 4; ++c) {  // a chunk of 32 bytes holds sub-blocks 2c (low nibbles) and 2c + 1 (high)
    const ScaleMin low = unpack_scale_min(b + q4_K_scales, 2 * c), high = unpack_scale_min(b + q4_K_scales, 2 * c + 1);
    const float d_low = d * float(low.scale), m_low = dmin * float(low.min);
    const float d_high = d * float(high.scale), m_high = dmin * float(high.min);
    const std::byte* q = b + q4_K_q + 32 * c;
    for (int l = 0; l < 32; ++l) {
      y[64 * c + l] = d_low * float(byte_at(q, l) & 15) - m_low;
      y[64 * c + 32 + l] = d_high * float(byte_at(q, l) >> 4) - m_high;
    }
  }
}

void q6_K_block(const std::byte* b, int64_t block, float* y) {
  const float d = finite_f16(QuantFormat::q6_K, b + q6_K_d, block, "d");
  auto value = [&](int i, int code) { y[i] = d * float(int8_t(b[q6_K_scales + i / 16])) * float(code - 32); };
  for (int h = 0; h < 2; ++h) {
    const std::byte* ql = b + q6_K_ql + 64 * h;
    const std::byte* qh = b + q6_K_qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      const uint8_t high = byte_at(qh, l);
      value(128 * h + l, (byte_at(ql, l) & 15) | (high & 3) << 4);
      value(128 * h + 32 + l, (byte_at(ql, l + 32) & 15) | (high >> 2 & 3) << 4);
      value(128 * h + 64 + l, (byte_at(ql, l) >> 4) | (high >> 4 & 3) << 4);
      value(128 * h + 96 + l, (byte_at(ql, l + 32) >> 4) | (high >> 6 & 3) << 4);
    }
  }
}

void i8_row(const std::byte* b, int64_t n, float* y) {
  const float s = load_f32(b + i8_row_scale);
  if (!std::isfinite(s)) throw FormatError(fmt::format("i8_row: the row's scale is {}, not a finite number", s));
  for (int64_t i = 0; i < n; ++i) y[i] = s * float(int8_t(b[i8_row_q + i]));
}

}  // namespace

void dequantize_row(QuantFormat format, const std::byte* blocks, int64_t n, float* out) {
  row_bytes(format, n);  // refuses a length that is not a whole number of blocks
  if (format == QuantFormat::i8_row) return i8_row(blocks, n, out);
  void (*one_block)(const std::byte*, int64_t, float*) = nullptr;
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
    one_block(blocks + block * layout.bytes, block, out + block * layout.values);
  }
}

void dequantize_tensor(const Tensor& t, float* out) {
  const QuantFormat format = *quant_format(t.dtype());
  const int64_t cols = t.shape().back(), rows = cols == 0 ? 0 : t.elements() / cols;
  const size_t stride = size_t(row_bytes(format, cols));
  for (int64_t r = 0; r < rows; ++r) dequantize_row(format, t.raw().data() + size_t(r) * stride, cols, out + r * cols);
}

}  // namespace cutcheck
