// Writing a model as a Hugging Face folder: config.json and model.safetensors in
// transformers' layout, for the class that has the spec's knobs (LlamaForCausalLM;
// Qwen2ForCausalLM for q/k/v biases, Qwen3ForCausalLM for q/k norms, MistralForCausalLM
// for a window alone). transformers rotates pairs (i, i + E/2), so the q and k rows (and
// their biases and norm gains) are written in the half order whatever the spec's
// rope_style; the folder imports (model/hf.h) as the same model with rope_style = half
// (docs/checkpoints.md, "Exporting").
#pragma once

#include "core/files.h"
#include "core/json.h"
#include "core/tensor.h"
#include "model/spec.h"

namespace cutcheck {

// config.json for the spec with weights stored as `dtype`. Throws Error (exit 2) for a
// spec no class transformers has can express (q/k/v biases with q/k norms), naming both.
Json hf_config(const ModelSpec& spec, DType dtype);

// Writes DIR/config.json and DIR/model.safetensors in one step (core/files.h,
// publish_folder): nothing is left half written on a failure. A DIR that exists must hold
// nothing but those two files (an earlier export), or it is refused and left untouched.
// `weights` are the spec's (checked against its layout); `dtype` is the file's.
void write_hf(const fs::path& dir, const ModelSpec& spec, const TensorMap& weights, DType dtype);

}  // namespace cutcheck
