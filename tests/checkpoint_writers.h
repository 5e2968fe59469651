// The test suite's own writers of Hugging Face folders and GGUF files, written from the
// formats' descriptions and independent of cutcheck's readers (model/hf.h, model/gguf.h):
// the readers are tested against these, and malformed files are these, patched.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/files.h"
#include "core/json.h"
#include "core/tensor.h"
#include "model/spec.h"

namespace cutcheck::test {

enum class Stored { f32, f16, bf16 };

// f32 rounded to nearest, ties to even, as a 16-bit pattern.
uint16_t round_to_bf16(float value);
uint16_t round_to_f16(float value);

// Meta's (llama2.c's) q/k row order to Hugging Face's, as transformers' conversion script
// permutes it: within each head, rows (2i, 2i+1) become rows (i, i + E/2).
Tensor meta_to_hf_rows(const Tensor& w, int64_t heads);
// And llama.cpp's converter's permutation, from Hugging Face's order back.
Tensor hf_to_llamacpp_rows(const Tensor& w, int64_t heads);

// A Hugging Face LlamaForCausalLM folder: config.json and the tensors by Hugging Face's
// names in its layout (f32 values, stored as `dtype`). A spec with knobs makes the
// architecture that has them: Qwen2ForCausalLM (attention_bias), Qwen3ForCausalLM
// (qk_norm), MistralForCausalLM (sliding_window alone); rope_scaling as transformers
// writes it.
struct HfFolder {
  Json config;
  std::vector<std::pair<std::string, Tensor>> tensors;
  Stored dtype = Stored::f32;

  // From weights by cutcheck's names (Meta's row order); `permute = false` plants the bug
  // of forgetting Hugging Face's q/k order.
  static HfFolder of(const ModelSpec& spec, const TensorMap& weights, Stored dtype, bool permute = true);
  // DIR/config.json and model.safetensors, or `shards` files and model.safetensors.index.json.
  void write(const fs::path& dir, int shards = 1) const;
  Tensor& tensor(const std::string& name);
  void erase(const std::string& name);
};

// A GGUF v3 file as llama.cpp's converter writes a llama model.
struct GgufWriter {
  struct Key {
    std::string name;
    uint32_t type;
    std::string value;  // the encoded value, after the type
  };
  struct TensorInfo {
    std::string name;
    Shape shape;        // cutcheck's order; written fastest dimension first
    uint32_t type;      // ggml type: 0 F32, 1 F16, 30 BF16
    std::string data;
  };
  std::vector<Key> keys;
  std::vector<TensorInfo> tensors;
  uint32_t version = 3;
  uint64_t alignment = 32;

  static GgufWriter of(const ModelSpec& spec, const TensorMap& weights, Stored dtype);
  void set_u32(const std::string& key, uint32_t value);
  void set_f32(const std::string& key, float value);
  void set_string(const std::string& key, const std::string& value);
  void erase_key(const std::string& key);
  TensorInfo& tensor(const std::string& name);
  void erase_tensor(const std::string& name);
  std::string bytes() const;
};

}  // namespace cutcheck::test
