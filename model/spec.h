// A Llama-family model spec: the shapes and constants every cut of it is built from.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/tensor.h"

namespace cutcheck {

// Which elements rotary embedding rotates together: (2i, 2i+1) as in Meta's and
// llama2.c's code, or (i, i + head_dim/2) as in Hugging Face's.
enum class RopeStyle { interleaved, half };

std::string rope_style_name(RopeStyle style);

// How rotary frequencies are rescaled for contexts longer than the model was trained on
// (docs/spec-knobs.md gives each rule and where it is published). `none` keeps
// freq_i = rope_theta^(-2i / head_dim); `linear` divides every frequency by `factor`;
// `llama3` divides the low frequencies by `factor`, keeps the high ones and blends
// between them, by wavelength against original_max_position_embeddings.
enum class RopeScalingType { none, linear, llama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::none;
  double factor = 1;
  double low_freq_factor = 1;                      // llama3 only
  double high_freq_factor = 4;                     // llama3 only
  int64_t original_max_position_embeddings = 8192;  // llama3 only

  bool operator==(const RopeScaling&) const = default;
};

// The parameters of a scaling `type` from a JSON object under their names (the spec's and
// transformers' alike): `factor`, and for llama3 `low_freq_factor`, `high_freq_factor`,
// `original_max_position_embeddings`. Throws FormatError naming `where` and the key.
RopeScaling read_rope_scaling_parameters(RopeScalingType type, const Json& json, const std::string& where);

struct ModelSpec {
  std::string name = "custom";
  int64_t vocab = 0;     // V
  int64_t dim = 0;       // D, the residual width
  int64_t layers = 0;    // L
  int64_t heads = 0;     // H query heads
  int64_t kv_heads = 0;  // K key/value heads; heads % kv_heads == 0 (grouped-query attention)
  int64_t head_dim = 0;  // E, even (rotary pairs)
  int64_t ffn = 0;       // F, the SwiGLU hidden width
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeStyle rope_style = RopeStyle::interleaved;
  bool tied = true;  // the head reuses the token embedding
  // The weights' element type: f32, or bf16 / f16 as checkpoints store them. Programs
  // declare weights in it and widen them to f32 where they are used (docs/language.md).
  DType dtype = DType::f32;
  // Weights stored in a type of their own, by name (model/weights.h): a checkpoint that
  // mixes types per tensor, as a GGUF Q4_K_M file keeps some matrices in Q6_K and those
  // whose rows are not whole blocks in F32. Each is f32, bf16, f16 or, for a matrix, a
  // quantized type; stored_type (model/weights.h) is the one place that reads it.
  std::map<std::string, DType> weight_dtypes;
  // Every weight stored as `type`: none keeps a type of its own.
  void store_every_weight_as(DType type) {
    dtype = type;
    weight_dtypes.clear();
  }
  // The knobs of newer checkpoints; their defaults are the plain Llama model, and a spec
  // JSON leaves out a knob at its default.
  RopeScaling rope_scaling;
  bool attention_bias = false;  // q, k, v projections add a bias (Qwen2)
  bool qk_norm = false;         // RMSNorm over each head of q and k before rotary (Qwen3)
  int64_t sliding_window = 0;   // 0: none; W: a query at p sees keys at (p - W, p] (Mistral)

  int64_t group() const { return heads / kv_heads; }  // query heads per kv head
  int64_t q_width() const { return heads * head_dim; }
  int64_t kv_width() const { return kv_heads * head_dim; }

  // Throws SpecError naming the first field that is impossible.
  void validate() const;
  std::string summary() const;  // one line, for reports and counterexamples
  std::string knob_summary() const;  // the knobs that are set, " name=value" each; "" for none

  Json to_json() const;
  // Reads and validates; `source` names the document in errors.
  static ModelSpec from_json(const Json& json, const std::string& source);

  bool operator==(const ModelSpec&) const = default;
};

// The frequency of rotary pair i (0 <= i < head_dim / 2) in double, scaling applied: the
// rule as published, for the oracle and for hand-checked tests (the author writes the
// same rule as program ops).
double rope_frequency(const ModelSpec& spec, int64_t i);

std::vector<std::string> builtin_spec_names();
// Throws SpecError for an unknown name.
ModelSpec builtin_spec(const std::string& name);
// A built-in name, or the path of a spec JSON file.
ModelSpec load_spec(const std::string& name_or_path);

}  // namespace cutcheck
