// Writing a model as a GGUF file llama.cpp loads and runs: the `llama` architecture, F32,
// F16 or BF16 projections and embeddings (norms in F32, as llama.cpp's converter keeps
// them), the metadata llama.cpp reads, and a synthetic SentencePiece vocabulary of the
// spec's size. llama.cpp's `llama` architecture rotates pairs (2i, 2i+1), so the q and k
// rows are written in the interleaved order whatever the spec's rope_style; the file
// imports (model/gguf.h) as the same model with rope_style = interleaved
// (docs/checkpoints.md, "Exporting").
#pragma once

#include "core/files.h"
#include "core/tensor.h"
#include "model/spec.h"

namespace cutcheck {

// llama.context_length in every file written: llama.cpp reads it as the trained context
// (a default and a warning threshold); no computation of the `llama` architecture
// depends on it.
constexpr int64_t gguf_context_length = 4096;

// Throws Error (exit 2) for a spec llama.cpp's `llama` architecture cannot express (or
// cutcheck's GGUF reader could not read back), naming the knob.
void check_gguf_expressible(const ModelSpec& spec);

// Writes `out` atomically (nothing is left on a failure), streaming one tensor at a time.
// `weights` are the spec's (checked against its layout); `dtype` is the file's (f32, f16
// or bf16).
void write_gguf(const fs::path& out, const ModelSpec& spec, const TensorMap& weights, DType dtype);

}  // namespace cutcheck
