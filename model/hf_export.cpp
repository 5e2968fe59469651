#include "model/hf_export.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/safetensors.h"
#include "model/checkpoint.h"
#include "model/checkpoint_export.h"
#include "model/gguf_export.h"
#include "model/hf.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

const char* torch_dtype(DType dtype) {
  return dtype == DType::f32 ? "float32" : dtype == DType::f16 ? "float16" : "bfloat16";
}

// A folder export-hf may replace: nothing in it but what it writes.
void check_replaceable(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(st)) return;
  if (!fs::is_directory(st))
    throw IoError(fmt::format("'{}' exists and is not a folder; refusing to replace it", dir.string()));
  for (const auto& entry : fs::directory_iterator(dir)) {
    const fs::path name = entry.path().filename();
    if (!entry.is_symlink() && entry.is_regular_file() && (name == "config.json" || name == "model.safetensors"))
      continue;
    throw IoError(fmt::format("'{}' exists and holds '{}', which export-hf does not write; refusing to replace it "
                              "(give a new or empty folder)",
                              dir.string(), name.string()));
  }
}

}  // namespace

Json hf_config(const ModelSpec& spec, DType dtype) {
  if (spec.attention_bias && spec.qk_norm)
    inexpressible("a Hugging Face folder", spec,
                  "attention_bias with qk_norm: no transformers class has both (Qwen2 has the biases, Qwen3 the norms)");
  // The class whose semantics carry the knobs: Qwen2's biases come with the class (no key).
  std::string arch = "LlamaForCausalLM", model_type = "llama";
  if (spec.attention_bias) arch = "Qwen2ForCausalLM", model_type = "qwen2";
  if (spec.qk_norm) arch = "Qwen3ForCausalLM", model_type = "qwen3";
  if (spec.sliding_window > 0 && arch == "LlamaForCausalLM") arch = "MistralForCausalLM", model_type = "mistral";

  Json config = {{"architectures", {arch}},
                 {"model_type", model_type},
                 {"vocab_size", spec.vocab},
                 {"hidden_size", spec.dim},
                 {"intermediate_size", spec.ffn},
                 {"num_hidden_layers", spec.layers},
                 {"num_attention_heads", spec.heads},
                 {"num_key_value_heads", spec.kv_heads},
                 {"head_dim", spec.head_dim},
                 {"hidden_act", "silu"},
                 {"rms_norm_eps", spec.norm_eps},
                 {"rope_theta", spec.rope_theta},
                 {"tie_word_embeddings", spec.tied},
                 {"max_position_embeddings", gguf_context_length},
                 {"torch_dtype", torch_dtype(dtype)}};
  if (arch == "LlamaForCausalLM" || arch == "Qwen3ForCausalLM") config["attention_bias"] = false;
  if (arch == "LlamaForCausalLM") config["mlp_bias"] = false;
  // The spec's own rope_scaling object: transformers reads its "type" as the older name of
  // "rope_type", with the same parameter names.
  if (const Json spec_json = spec.to_json(); spec_json.contains("rope_scaling"))
    config["rope_scaling"] = spec_json["rope_scaling"];
  if (spec.sliding_window > 0) {
    config["sliding_window"] = spec.sliding_window;
    if (arch != "MistralForCausalLM") {  // Qwen slides only where told to: here every layer
      config["use_sliding_window"] = true;
      config["max_window_layers"] = 0;
    }
  }
  return config;
}

void write_hf(const fs::path& dir, const ModelSpec& spec, const TensorMap& weights, DType dtype) {
  spec.validate();
  const Json config = hf_config(spec, dtype);
  check_weights(weights, spec, "weights to export");
  if (!(dtype == DType::f32 || is_half(dtype)))
    throw Error(fmt::format("Hugging Face export: dtype {} is not one of f32, f16, bf16", dtype_name(dtype)));
  check_replaceable(dir);

  // safetensors lays tensors out in name order: Hugging Face's names, each from its weight.
  const auto names = checkpoint_name_map(spec, hf_tensor_names);
  std::map<std::string, std::string> weight_of;  // Hugging Face name -> cutcheck name
  std::map<std::string, TensorType> types;
  for (const WeightInfo& w : weight_layout(spec)) {
    weight_of.emplace(names.at(w.name), w.name);
    types.emplace(names.at(w.name), TensorType{dtype, w.shape});
  }
  const std::string header = encode_safetensors_header(types, {{"format", "pt"}});
  publish_folder(dir, [&](const fs::path& temp) {
    write_file_atomic(temp / "model.safetensors", [&](const FileSink& write) {
      write(std::as_bytes(std::span(header.data(), header.size())));
      for (const auto& [name, weight] : weight_of)
        write(exported_weight(spec, weights, weight, RopeStyle::half, dtype).raw());
    });
    write_file_atomic(temp / "config.json", config.dump(2) + "\n");
  });
}

}  // namespace cutcheck
