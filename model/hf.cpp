#include "model/hf.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

// Keys about provenance, training or generation defaults: none changes what the model
// computes from tokens to logits. (pretraining_tp only splits Hugging Face's matmuls.)
const std::set<std::string> descriptive_keys = {
    "_name_or_path", "architectures",   "model_type",     "transformers_version", "torch_dtype",
    "dtype",         "bos_token_id",    "eos_token_id",   "pad_token_id",         "initializer_range",
    "use_cache",     "max_position_embeddings", "attention_dropout", "pretraining_tp", "tokenizer_class",
    "output_attentions", "output_hidden_states", "return_dict"};

// Keys the spec is read from.
const std::set<std::string> spec_keys = {
    "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "head_dim",    "vocab_size",        "rms_norm_eps",      "rope_theta",          "tie_word_embeddings"};

std::string shown(const Json& value) {
  std::string text = value.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

[[noreturn]] void no_knob(const std::string& source, const std::string& key, const Json& value, const std::string& what) {
  throw FormatError(fmt::format("{}: key '{}' is {}: {}, and the spec has no knob for that yet", source, key,
                                shown(value), what));
}

// The architectures read, and the knob each implies: Qwen2 adds q, k, v biases (always,
// with no config key), Qwen3 normalises each q and k head. Qwen2 and Qwen3 slide their
// window only where use_sliding_window says so; Mistral wherever sliding_window is set.
enum class Arch { llama, mistral, qwen2, qwen3 };

Arch check_architecture(const Json& config, const std::string& source) {
  const Json& list = json_field(config, "architectures", source);
  if (!list.is_array() || list.size() != 1 || !list[0].is_string())
    throw FormatError(fmt::format("{}: key 'architectures' must list one architecture, got {}", source, shown(list)));
  const std::string arch = list[0].get<std::string>();
  if (arch == "LlamaForCausalLM") return Arch::llama;
  if (arch == "MistralForCausalLM") return Arch::mistral;
  if (arch == "Qwen2ForCausalLM") return Arch::qwen2;
  if (arch == "Qwen3ForCausalLM") return Arch::qwen3;
  throw FormatError(fmt::format("{}: architecture {} is not one cutcheck imports (LlamaForCausalLM, "
                                "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)",
                                source, arch));
}

// transformers' rope_scaling (or rope_parameters) object as the spec's rope_scaling:
// rope_type (or the older "type") "default", "linear" with a factor, or "llama3" with
// factor, low_freq_factor, high_freq_factor and original_max_position_embeddings. Any other
// type, or a key a type does not take, is refused with the key named.
RopeScaling hf_rope_scaling(const Json& value, const std::string& key, const std::string& source) {
  const std::string where = fmt::format("{}: key '{}'", source, key);
  if (!value.is_object()) throw FormatError(fmt::format("{} is {}, not an object", where, shown(value)));
  const char* type_key = value.contains("rope_type") ? "rope_type" : "type";
  if (!value.contains(type_key) || !value.at(type_key).is_string())
    throw FormatError(fmt::format("{} is {}: it names no rope_type", where, shown(value)));
  const std::string type = value.at(type_key).get<std::string>();
  std::set<std::string> takes = {"rope_type", "type", "rope_theta"};
  RopeScaling rs;
  if (type == "linear") {
    rs.type = RopeScalingType::linear;
    takes.insert("factor");
  } else if (type == "llama3") {
    rs.type = RopeScalingType::llama3;
    takes.insert({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
  } else if (type != "default") {
    throw FormatError(fmt::format("{} is {}: rope_type \"{}\" rescales the rotary frequencies in a way the spec has "
                                  "no knob for (it has \"linear\" and \"llama3\")",
                                  where, shown(value), type));
  }
  for (auto it = value.begin(); it != value.end(); ++it)
    if (!takes.contains(it.key()))
      throw FormatError(fmt::format("{}: '{}' is not read for rope_type \"{}\", and it may change the rotary "
                                    "embedding",
                                    where, it.key(), type));
  return read_rope_scaling_parameters(rs.type, value, where);
}

// Keys allowed only at the value that keeps the architecture's semantics, or read into a
// knob in hf_spec; anything else changes the model.
void check_semantic_key(const std::string& source, const std::string& key, const Json& value) {
  if (key == "rope_scaling" || key == "rope_parameters") {
    if (!value.is_null()) hf_rope_scaling(value, key, source);
  } else if (key == "attention_bias") {  // Llama's and Qwen3's add an o_proj bias too
    if (value != false) no_knob(source, key, value, "it adds biases to the q, k, v and o projections");
  } else if (key == "mlp_bias") {
    if (value != false) no_knob(source, key, value, "it adds biases to the feed-forward projections");
  } else if (key == "use_sliding_window") {
    if (!value.is_boolean())
      throw FormatError(fmt::format("{}: key '{}' must be true or false, got {}", source, key, shown(value)));
  } else if (key == "sliding_window" || key == "max_window_layers" || key == "layer_types") {
    // read with the window (hf_sliding_window)
  } else if (key == "hidden_act") {
    if (value != "silu")
      throw FormatError(fmt::format("{}: key 'hidden_act' is {}; the spec's feed-forward is SwiGLU (\"silu\")", source,
                                    shown(value)));
  } else {
    throw FormatError(fmt::format("{}: key '{}' is not one cutcheck knows, and it may change the model; "
                                  "docs/checkpoints.md lists the keys read and ignored",
                                  source, key));
  }
}

bool present(const Json& config, const std::string& key) { return config.contains(key) && !config.at(key).is_null(); }

// An integer key, or `fallback` when it is absent or null.
int64_t integer_or(const Json& config, const std::string& key, const std::string& source, int64_t fallback) {
  if (!present(config, key)) return fallback;
  return json_int(config, key, source);
}

double number_or(const Json& config, const std::string& key, const std::string& source, double fallback) {
  if (!present(config, key)) return fallback;
  return json_number(config, key, source);
}

// The spec's sliding_window (0 for none). The spec's window covers every layer, so a
// config sliding only some layers is refused, naming the key that says so.
int64_t hf_sliding_window(const Json& config, Arch arch, int64_t layers, const std::string& source) {
  const bool use = present(config, "use_sliding_window") && config.at("use_sliding_window") == true;
  if (!present(config, "sliding_window")) {
    if (use) throw FormatError(fmt::format("{}: key 'use_sliding_window' is true, but no sliding_window is given", source));
    return 0;
  }
  const int64_t window = json_int(config, "sliding_window", source);
  if (arch == Arch::llama)
    throw FormatError(fmt::format("{}: key 'sliding_window' is {}: it limits how far back attention sees, and "
                                  "LlamaForCausalLM has no window (MistralForCausalLM does)",
                                  source, window));
  if (window <= 0) throw FormatError(fmt::format("{}: key 'sliding_window' must be positive, got {}", source, window));
  if (arch == Arch::mistral) return window;
  // Qwen: off unless use_sliding_window; then layer l slides where layer_types says
  // "sliding_attention", or (older configs) where l >= max_window_layers.
  if (!use) return 0;
  std::vector<bool> slides(static_cast<size_t>(layers));
  if (present(config, "layer_types")) {
    const Json& types = config.at("layer_types");
    if (!types.is_array() || int64_t(types.size()) != layers)
      throw FormatError(fmt::format("{}: key 'layer_types' must list one type per layer ({}), got {}", source, layers,
                                    shown(types)));
    for (size_t l = 0; l < types.size(); ++l) {
      if (types[l] != "full_attention" && types[l] != "sliding_attention")
        throw FormatError(fmt::format("{}: key 'layer_types'[{}] is {}, not \"full_attention\" or "
                                      "\"sliding_attention\"",
                                      source, l, shown(types[l])));
      slides[l] = types[l] == "sliding_attention";
    }
  } else {
    const int64_t full = integer_or(config, "max_window_layers", source, 28);  // transformers' default
    for (int64_t l = 0; l < layers; ++l) slides[size_t(l)] = l >= full;
  }
  const int64_t sliding = std::count(slides.begin(), slides.end(), true);
  if (sliding == 0) return 0;
  if (sliding < layers)
    throw FormatError(fmt::format("{}: key '{}' slides the window in {} of {} layers; the spec's sliding_window "
                                  "covers every layer or none",
                                  source, present(config, "layer_types") ? "layer_types" : "max_window_layers", sliding,
                                  layers));
  return window;
}

// The tensors an export may carry beside the weights that hold nothing of their own: old
// checkpoints' rotary inverse frequencies (rope_theta and rope_scaling give them), and a tied head's copy of the embedding.
void drop_redundant(CheckpointTensors& tensors, const ModelSpec& spec) {
  std::erase_if(tensors, [](const auto& entry) { return entry.first.ends_with(".self_attn.rotary_emb.inv_freq"); });
  auto head = tensors.find("lm_head.weight");
  auto embedding = tensors.find("model.embed_tokens.weight");
  if (spec.tied && head != tensors.end() && embedding != tensors.end()) {
    const StoredTensor &h = head->second.stored, &e = embedding->second.stored;
    if (h.dtype != e.dtype || h.shape != e.shape || !std::equal(h.bytes.begin(), h.bytes.end(), e.bytes.begin(), e.bytes.end()))
      throw FormatError(fmt::format("{}: tensor 'lm_head.weight' differs from 'model.embed_tokens.weight', but "
                                    "tie_word_embeddings says the head is the embedding",
                                    head->second.file));
    tensors.erase(head);
  }
}

CheckpointTensor stored_in(const fs::path& file, const StoredTensor& stored, std::shared_ptr<const void> keepalive) {
  return {file.string(), stored, std::move(keepalive)};
}

// Every tensor of a sharded checkpoint, each found in the shard the index names for it.
CheckpointTensors read_shards(const fs::path& dir, const fs::path& index_path) {
  const std::string source = index_path.string();
  Json index = parse_json(read_file(index_path, max_bytes::manifest), source);
  const Json& map = json_field(index, "weight_map", source);
  if (!map.is_object()) throw FormatError(fmt::format("{}: 'weight_map' must map tensor names to files", source));
  std::map<std::string, std::string> shard_of;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it.value().is_string())
      throw FormatError(fmt::format("{}: weight_map['{}'] must be a file name, got {}", source, it.key(),
                                    shown(it.value())));
    shard_of[it.key()] = it.value().get<std::string>();
  }
  CheckpointTensors out;
  std::set<std::string> files;
  for (const auto& [name, file] : shard_of) files.insert(file);
  for (const std::string& file : files) {
    fs::path path = resolve_under(dir, file, fmt::format("{}: shard '{}'", source, file));
    std::error_code ec;
    if (!fs::exists(path, ec))
      throw FormatError(fmt::format("{}: names shard '{}', which is not in '{}'", source, file, dir.string()));
    auto mapped = MappedFile::open(path);
    for (const auto& [name, stored] : index_safetensors(mapped->bytes(), path.string()).tensors) {
      auto listed = shard_of.find(name);
      if (listed == shard_of.end())
        throw FormatError(fmt::format("{}: tensor '{}' is not in the index '{}'", path.string(), name, source));
      if (listed->second != file)
        throw FormatError(fmt::format("{}: tensor '{}' is here, but the index places it in '{}'", path.string(), name,
                                      listed->second));
      out.emplace(name, stored_in(path, stored, mapped));
    }
  }
  for (const auto& [name, file] : shard_of)
    if (!out.contains(name))
      throw FormatError(fmt::format("{}: tensor '{}' is listed in shard '{}', which does not have it", source, name,
                                    file));
  return out;
}

}  // namespace

ModelSpec hf_spec(const Json& config, const std::string& source) {
  if (!config.is_object()) throw FormatError(fmt::format("{}: config.json must be a JSON object", source));
  const Arch arch = check_architecture(config, source);
  for (auto it = config.begin(); it != config.end(); ++it)
    if (!descriptive_keys.contains(it.key()) && !spec_keys.contains(it.key()))
      check_semantic_key(source, it.key(), it.value());

  // Absent keys take the defaults of transformers' configs for the architecture.
  ModelSpec s;
  s.name = fs::path(source).parent_path().filename().string();
  if (s.name.empty()) s.name = "hf";
  s.vocab = json_int(config, "vocab_size", source);
  s.dim = json_int(config, "hidden_size", source);
  s.ffn = json_int(config, "intermediate_size", source);
  s.layers = json_int(config, "num_hidden_layers", source);
  s.heads = json_int(config, "num_attention_heads", source);
  s.kv_heads = integer_or(config, "num_key_value_heads", source, s.heads);
  if (s.heads > 0 && !present(config, "head_dim") && s.dim % s.heads != 0)
    throw FormatError(fmt::format("{}: hidden_size ({}) is not a multiple of num_attention_heads ({}) and no "
                                  "head_dim is given",
                                  source, s.dim, s.heads));
  s.head_dim = integer_or(config, "head_dim", source, s.heads > 0 ? s.dim / s.heads : 0);
  s.norm_eps = number_or(config, "rms_norm_eps", source, 1e-6);
  s.rope_theta = number_or(config, "rope_theta", source, 10000.0);
  if (config.contains("rope_parameters") && config.at("rope_parameters").contains("rope_theta"))
    s.rope_theta = json_number(config.at("rope_parameters"), "rope_theta", source + ": rope_parameters");
  s.rope_style = RopeStyle::half;
  s.tied = config.contains("tie_word_embeddings") && json_bool(config, "tie_word_embeddings", source);
  for (const char* key : {"rope_scaling", "rope_parameters"})
    if (present(config, key)) {
      const RopeScaling rs = hf_rope_scaling(config.at(key), key, source);
      if (rs.type != RopeScalingType::none) s.rope_scaling = rs;
    }
  s.attention_bias = arch == Arch::qwen2;
  s.qk_norm = arch == Arch::qwen3;
  s.sliding_window = s.layers > 0 ? hf_sliding_window(config, arch, s.layers, source) : 0;
  try {
    s.validate();
  } catch (const SpecError& e) {
    impossible_model(source, e.what());
  }
  return s;
}

// Hugging Face's names for the weights.
const CheckpointNames hf_tensor_names = {
    "model.embed_tokens.weight",
    "model.norm.weight",
    "lm_head.weight",
    "model.layers.{}.",
    {"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
     "self_attn.o_proj.weight", "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.down_proj.weight",
     "mlp.up_proj.weight"},
    {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.q_norm.weight",
     "self_attn.k_norm.weight"}};

ImportedModel read_hf(const Json& config, const std::string& config_source, CheckpointTensors tensors,
                      const std::string& tensors_source, bool widen) {
  ImportedModel m;
  m.spec = hf_spec(config, config_source);
  drop_redundant(tensors, m.spec);
  m.weights = take_weights(m.spec, tensors, hf_tensor_names, tensors_source, widen);
  return m;
}

ImportedModel read_hf(const fs::path& dir, bool widen) {
  const fs::path config_path = dir / "config.json";
  const Json config = parse_json(read_file(config_path, max_bytes::spec), config_path.string());
  hf_spec(config, config_path.string());  // a refused config before any tensor is read
  const fs::path index_path = dir / "model.safetensors.index.json", single = dir / "model.safetensors";
  std::error_code ec;
  if (fs::exists(index_path, ec)) return read_hf(config, config_path.string(), read_shards(dir, index_path), index_path.string(), widen);
  if (!fs::exists(single, ec))
    throw FormatError(fmt::format("'{}' has neither model.safetensors nor model.safetensors.index.json (pickled "
                                  "pytorch_model.bin checkpoints are not read)",
                                  dir.string()));
  auto mapped = MappedFile::open(single);
  CheckpointTensors tensors;
  for (const auto& [name, stored] : index_safetensors(mapped->bytes(), single.string()).tensors)
    tensors.emplace(name, stored_in(single, stored, mapped));
  return read_hf(config, config_path.string(), std::move(tensors), single.string(), widen);
}

void import_hf(const fs::path& dir, const fs::path& out, bool widen) {
  std::error_code ec;
  if (fs::equivalent(dir, out, ec))  // the output's model.safetensors would replace the checkpoint's
    throw IoError(fmt::format("'{}' is the checkpoint's own folder; write the import elsewhere", out.string()));
  ImportedModel m = read_hf(dir, widen);
  write_imported(out, m.spec, m.weights);
}

}  // namespace cutcheck
