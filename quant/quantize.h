// f32 rows to quantized blocks by ggml's reference quantizers, byte for byte:
// quantize_row_q8_0_ref, quantize_row_q4_0_ref, quantize_row_q5_0_ref, quantize_row_q4_K_ref and
// quantize_row_q6_K_ref (ggml/src/ggml-quants.c), the ones llama-quantize uses without an
// importance matrix. i8_row follows Q8_0's rule with the scale kept in f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant_blocks.h"

namespace cutcheck {

// Writes the row_bytes(format, n) bytes of the n values at `x` to `out`. Throws FormatError
// when n is not a whole number of blocks, and InputError for what ggml leaves undefined or
// stores as a block dequantize_row refuses: a value that is not finite (naming it), and a
// block whose scale rounds to infinity in f16 (naming the block). After a throw, `out`
// holds no meaning.
void quantize_row_reference(QuantFormat format, const float* x, int64_t n, std::byte* out);

}  // namespace cutcheck
