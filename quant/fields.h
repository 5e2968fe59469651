// Where each field of a block lies (quant/blocks.h draws the layouts) and how its bytes are
// read and written: little-endian scalars, and Q4_K's sixteen 6-bit scales and mins in 12
// bytes. The one place both directions (quant/dequantize.cpp, quant/quantize.cpp) take
// the layout from.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "core/quant_blocks.h"

namespace cutcheck::quant_fields {

// Byte offsets within a block.
inline constexpr int q8_0_d = 0, q8_0_q = 2;
inline constexpr int q4_0_d = 0, q4_0_q = 2;
inline constexpr int q5_0_d = 0, q5_0_qh = 2, q5_0_q = 6;
inline constexpr int q4_K_d = 0, q4_K_dmin = 2, q4_K_scales = 4, q4_K_q = 16;
inline constexpr int q6_K_ql = 0, q6_K_qh = 128, q6_K_scales = 192, q6_K_d = 208;
inline constexpr int i8_row_scale = 0, i8_row_q = 4;

inline uint8_t byte_at(const std::byte* p, int64_t i) { return uint8_t(p[i]); }

inline uint16_t load_u16(const std::byte* p) { return uint16_t(byte_at(p, 0) | byte_at(p, 1) << 8); }

inline void store_u16(std::byte* p, uint16_t v) {
  p[0] = std::byte(v & 0xff);
  p[1] = std::byte(v >> 8);
}

inline uint32_t load_u32(const std::byte* p) {
  return uint32_t(byte_at(p, 0)) | uint32_t(byte_at(p, 1)) << 8 | uint32_t(byte_at(p, 2)) << 16 |
         uint32_t(byte_at(p, 3)) << 24;
}

inline void store_u32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = std::byte((v >> (8 * i)) & 0xff);
}

inline float load_f32(const std::byte* p) { return std::bit_cast<float>(load_u32(p)); }

inline void store_f32(std::byte* p, float value) { store_u32(p, std::bit_cast<uint32_t>(value)); }

// The f16 scale `field` of block `block` at `p`, widened; FormatError naming the format,
// the block and the field when it is not finite (ggml's ggml_validate_row_data refuses it).
float finite_f16(QuantFormat format, const std::byte* p, int64_t block, const char* field);

// Sub-block j's 6-bit scale and min in Q4_K's 12 packed bytes (ggml's get_scale_min_k4).
struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};

inline ScaleMin unpack_scale_min(const std::byte* s, int j) {
  if (j < 4) return {uint8_t(byte_at(s, j) & 63), uint8_t(byte_at(s, j + 4) & 63)};
  return {uint8_t((byte_at(s, j + 4) & 15) | (byte_at(s, j - 4) >> 6) << 4),
          uint8_t((byte_at(s, j + 4) >> 4) | (byte_at(s, j) >> 6) << 4)};
}

// The inverse: eight scales and eight mins of 6 bits each into 12 bytes.
inline void pack_scale_mins(const uint8_t scale[8], const uint8_t min[8], std::byte* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = std::byte(scale[j] | (scale[j + 4] >> 4) << 6);
    s[j + 4] = std::byte(min[j] | (min[j + 4] >> 4) << 6);
    s[j + 8] = std::byte((scale[j + 4] & 15) | (min[j + 4] & 15) << 4);
  }
}

}  // namespace cutcheck::quant_fields
