// A Llama-family model spec: the shapes and constants every cut of it is built from.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "core/tensor.h"

namespace cutcheck {

// Which elements rotary embedding rotates together: (2i, 2i+1) as in Meta's and
// llama2.c's code, or (i, i + head_dim/2) as in Hugging Face's.
enum class RopeStyle { interleaved, half };

std::string rope_style_name(RopeStyle style);

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

  int64_t group() const { return heads / kv_heads; }  // query heads per kv head
  int64_t q_width() const { return heads * head_dim; }
  int64_t kv_width() const { return kv_heads * head_dim; }

  // Throws SpecError naming the first field that is impossible.
  void validate() const;
  std::string summary() const;  // one line, for reports and counterexamples

  Json to_json() const;
  // Reads and validates; `source` names the document in errors.
  static ModelSpec from_json(const Json& json, const std::string& source);

  bool operator==(const ModelSpec&) const = default;
};

std::vector<std::string> builtin_spec_names();
// Throws SpecError for an unknown name.
ModelSpec builtin_spec(const std::string& name);
// A built-in name, or the path of a spec JSON file.
ModelSpec load_spec(const std::string& name_or_path);

}  // namespace cutcheck
