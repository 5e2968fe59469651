// Quantized rows to f32, each value exactly as quant/blocks.h defines it and bit for bit as
// ggml's dequantize_row_q8_0, _q4_0, _q5_0, _q4_K and _q6_K compute it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant_blocks.h"
#include "core/tensor.h"

namespace cutcheck {

// Reads the row_bytes(format, n) bytes at `blocks` (any alignment) and writes n floats to
// `out`. Throws FormatError when n is not a whole number of blocks, or when a block's scale
// is not finite (an f16 infinity or NaN, or i8_row's f32 one), naming the block and the
// field: ggml's ggml_validate_row_data refuses those blocks too.
void dequantize_row(QuantFormat format, const std::byte* blocks, int64_t n, float* out);

// Every row of a quantized tensor (core/tensor.h) to `out`, its elements() floats: the
// one loop over a tensor's rows that convert, the exports and the tests share.
void dequantize_tensor(const Tensor& t, float* out);

}  // namespace cutcheck
