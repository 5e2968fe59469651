// Writing a model as a GGUF file llama.cpp loads and runs: the `llama` architecture, F32,
// F16 or BF16 projections and embeddings (norms in F32, as llama.cpp's converter keeps
// them), or projections and embeddings quantized as llama-quantize quantizes them (ggml's
// reference quantizers, quant/quantize.h, and its choice of type per tensor), the metadata
// llama.cpp reads, and a synthetic SentencePiece vocabulary of the
// spec's size. llama.cpp's `llama` architecture rotates pairs (2i, 2i+1), so the q and k
// rows are written in the interleaved order whatever the spec's rope_style; the file
// imports (model/gguf.h) as the same model with rope_style = interleaved
// (docs/checkpoints.md, "Exporting").
#pragma once

#include <optional>
#include <string>

#include "core/files.h"
#include "core/tensor.h"
#include "model/spec.h"
#include "core/quant_blocks.h"

namespace cutcheck {

// llama.context_length in every file written: llama.cpp reads it as the trained context
// (a default and a warning threshold); no computation of the `llama` architecture
// depends on it.
constexpr int64_t gguf_context_length = 4096;

// Throws Error (exit 2) for a spec llama.cpp's `llama` architecture cannot express (or
// cutcheck's GGUF reader could not read back), naming the knob.
void check_gguf_expressible(const ModelSpec& spec);

// A GGUF file's type, llama.cpp's llama_ftype (general.file_type): every matrix in one float
// dtype (ALL_F32, MOSTLY_F16, MOSTLY_BF16), or quantized by llama-quantize's recipe for
// MOSTLY_Q8_0, MOSTLY_Q4_0 or MOSTLY_Q4_K_M.
enum class GgufFileType { f32, f16, bf16, q8_0, q4_0, q4_k_m };

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m".
std::string gguf_file_type_name(GgufFileType type);
// Throws Error naming `option` for any other name.
GgufFileType parse_gguf_file_type(const std::string& name, const std::string& option);
GgufFileType gguf_file_type(DType dtype);  // f32, f16 or bf16
// The format a quantized file type stores its matrices in by default
// (llama_ftype_get_default_type); nullopt for the float types.
std::optional<QuantFormat> gguf_default_quant(GgufFileType type);
// The dtype of a float file type's matrices; f32 for the quantized types (their norms, and
// the f32 weights they are quantized from).
DType gguf_float_dtype(GgufFileType type);

// How a file of `type` stores one weight (cutcheck's name): quantized in `quant`, or else as
// `dtype` values. Norms (one-dimensional) are F32. In a quantized file the type is
// llama.cpp's llama_tensor_get_type (src/llama-quant.cpp) without an importance matrix:
//   - the output head, or the embedding of a tied model: Q6_K, or Q8_0 when its rows are
//     not whole 256-value blocks (in every quantized type but MOSTLY_Q8_0, which keeps Q8_0);
//   - q4_k_m's attn_v (wv) and ffn_down (w2) of layer i of n: Q6_K when use_more_bits(i, n),
//     that is i < n/8, i >= 7n/8 or (i - n/8) % 3 == 2; else Q4_K;
//   - every other matrix: the file type's own (Q8_0, Q4_0, Q4_K);
// then tensor_type_fallback for rows that are not whole blocks of that type: Q4_K falls back
// to Q5_0, Q6_K to Q8_0, and a row that is not whole 32-value blocks to F16. For Q8_0 and
// Q4_0 llama.cpp has no fallback (it refuses the file); cutcheck takes its last one, F16.
struct GgufTensorType {
  std::optional<QuantFormat> quant;
  DType dtype = DType::f32;  // when not quantized
};
GgufTensorType gguf_tensor_type(const ModelSpec& spec, const std::string& weight, GgufFileType type);

// The weights as a file of a quantized `type` stores them, read back to f32: quantized rows
// dequantized (quant/dequantize.h), the fallback F16 rows rounded to f16, the norms as they
// are. What an engine loading the file multiplies by, and so what the reference runs on.
// Throws Error for a float type.
TensorMap gguf_stored_weights(const ModelSpec& spec, const TensorMap& weights, GgufFileType type);

// Writes `out` atomically (nothing is left on a failure), streaming one tensor at a time.
// `weights` are the spec's (checked against its layout); `type` is the file's.
void write_gguf(const fs::path& out, const ModelSpec& spec, const TensorMap& weights, GgufFileType type);
inline void write_gguf(const fs::path& out, const ModelSpec& spec, const TensorMap& weights, DType dtype) {
  write_gguf(out, spec, weights, gguf_file_type(dtype));
}

}  // namespace cutcheck
