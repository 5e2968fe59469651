// A quantized row taken apart into what its values are made of, so that a program can
// write a format's dequantization as ops (the `block_field` op, docs/language.md) and a
// fault can change one part of it (a block's scale, its min) as a kernel bug would:
//
//   value i = codes[i] * scales[i / s] - mins[i / s],   s = values_per_scale(format, n)
//
// codes: the integer value i stores with its offset removed (q8_0 q; q4_0 q - 8; q5_0
// q - 16; q4_K q; q6_K q - 32; i8_row q); scales: the factor of each run of s values (d for
// q8_0, q4_0, q5_0; d * sc[j] for q4_K and q6_K; the row's s for i8_row); mins: dmin * m[j]
// for q4_K, the one format with mins. Every code, scale and min is exact in f32, and the
// formula computed in f32 in that order (a product, then a difference) gives the bits
// dequantize_row gives (tests/test_quant.cpp holds them equal on every format).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/quant_blocks.h"
#include "core/tensor.h"

namespace cutcheck {

// values_per_scale and has_mins are layout facts: core/quant_blocks.h.

// Each reads the row_bytes(format, n) bytes at `blocks` and writes n codes, or
// n / values_per_scale scales or mins. row_mins throws Error for a format without mins;
// the scales throw FormatError for a scale that is not finite, as dequantize_row does.
void row_codes(QuantFormat format, const std::byte* blocks, int64_t n, float* out);
void row_scales(QuantFormat format, const std::byte* blocks, int64_t n, float* out);
void row_mins(QuantFormat format, const std::byte* blocks, int64_t n, float* out);

// Every block of a quantized tensor's rows has finite scales (and mins): what ggml's
// ggml_validate_row_data asks too. Throws FormatError beginning with `what` and naming the
// row, the block and the field.
void check_scales(const Tensor& t, const std::string& what);

}  // namespace cutcheck
