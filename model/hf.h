// Hugging Face checkpoints: a folder with config.json and model.safetensors (or a
// sharded model.safetensors.index.json) for LlamaForCausalLM and MistralForCausalLM.
// The projections keep their stored row order: Hugging Face stores q and k for the
// `half` rotary style, so the spec says rope_style = half (docs/checkpoints.md).
#pragma once

#include "core/json.h"
#include "model/checkpoint.h"

namespace cutcheck {

struct ImportedModel {
  ModelSpec spec;
  TensorMap weights;  // by cutcheck's names (model/weights.h), in spec.dtype
};

// Hugging Face's tensor names (transformers' Llama, Mistral, Qwen2 and Qwen3 classes).
extern const CheckpointNames hf_tensor_names;

// The spec config.json describes. Throws FormatError naming `source` and the key for an
// architecture cutcheck does not import, a key that changes semantics the spec has no
// knob for, an unknown key, or a value of the wrong type.
ModelSpec hf_spec(const Json& config, const std::string& source);

// The model from a config and the tensors of every shard; `tensors_source` (the
// safetensors file or the shard index) is named for a missing tensor.
// The weights keep the checkpoint's dtype unless `widen` (take_weights).
ImportedModel read_hf(const Json& config, const std::string& config_source, CheckpointTensors tensors,
                      const std::string& tensors_source, bool widen = false);

// Reads DIR/config.json and DIR/model.safetensors.index.json's shards, or DIR/model.safetensors.
ImportedModel read_hf(const fs::path& dir, bool widen = false);

// Writes OUT/spec.json and OUT/model.safetensors.
void import_hf(const fs::path& dir, const fs::path& out, bool widen = false);

}  // namespace cutcheck
