// llama2.c's checkpoint format: seven int32 (dim, hidden_dim, layers, heads, kv_heads,
// vocab, seq_len; vocab < 0 when the classifier is not the embedding), then f32 tensors
// in run.c's order, including the two rotary tables old checkpoints carry (skipped).
#pragma once

#include <functional>
#include <span>

#include "core/files.h"
#include "core/tensor.h"
#include "model/spec.h"

namespace cutcheck {

struct Llama2cModel {
  ModelSpec spec;
  TensorMap weights;  // by cutcheck's names (model/weights.h)
  int64_t seq_len = 0;
};

// Throws FormatError for a header that makes no sense or a size that does not match it.
Llama2cModel read_llama2c(std::span<const std::byte> bytes, const std::string& source);
Llama2cModel read_llama2c(const fs::path& path);

// Writes DIR/spec.json and DIR/model.safetensors.
void import_llama2c(const fs::path& checkpoint, const fs::path& dir);

}  // namespace cutcheck
