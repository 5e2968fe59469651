#include "model/hf.h"

#include <fmt/format.h>

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

// Keys allowed only at the value that keeps plain Llama semantics; anything else changes the model.
void check_semantic_key(const std::string& source, const std::string& key, const Json& value) {
  if (key == "rope_scaling") {
    if (!value.is_null()) no_knob(source, key, value, "it rescales the rotary frequencies");
  } else if (key == "rope_parameters") {  // newer transformers: rope_theta and the scaling together
    if (!value.is_object() || !value.contains("rope_type") || value.at("rope_type") != "default")
      no_knob(source, key, value, "only rope_type \"default\" keeps plain rotary frequencies");
    for (auto it = value.begin(); it != value.end(); ++it)
      if (it.key() != "rope_type" && it.key() != "rope_theta")
        no_knob(source, key, value, fmt::format("its '{}' changes the rotary embedding", it.key()));
  } else if (key == "attention_bias") {
    if (value != false) no_knob(source, key, value, "it adds biases to the q, k, v and o projections");
  } else if (key == "mlp_bias") {
    if (value != false) no_knob(source, key, value, "it adds biases to the feed-forward projections");
  } else if (key == "sliding_window") {
    if (!value.is_null()) no_knob(source, key, value, "it limits how far back attention sees");
  } else if (key == "use_sliding_window") {
    if (value != false) no_knob(source, key, value, "it limits how far back attention sees");
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

const std::set<std::string> semantic_keys = {"rope_scaling", "rope_parameters", "attention_bias", "mlp_bias",
                                             "sliding_window", "use_sliding_window", "hidden_act"};

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

void check_architecture(const Json& config, const std::string& source) {
  const Json& list = json_field(config, "architectures", source);
  if (!list.is_array() || list.size() != 1 || !list[0].is_string())
    throw FormatError(fmt::format("{}: key 'architectures' must list one architecture, got {}", source, shown(list)));
  const std::string arch = list[0].get<std::string>();
  if (arch == "LlamaForCausalLM" || arch == "MistralForCausalLM") return;
  if (arch == "Qwen2ForCausalLM")
    throw FormatError(fmt::format("{}: architecture {} adds biases to the q, k and v projections, and the spec has "
                                  "no attention_bias knob yet",
                                  source, arch));
  if (arch == "Qwen3ForCausalLM")
    throw FormatError(fmt::format("{}: architecture {} normalises each head of q and k (RMSNorm), and the spec has "
                                  "no qk_norm knob yet",
                                  source, arch));
  throw FormatError(fmt::format("{}: architecture {} is not one cutcheck imports (LlamaForCausalLM, "
                                "MistralForCausalLM)",
                                source, arch));
}

// The tensors an export may carry beside the weights that hold nothing of their own: old
// checkpoints' rotary inverse frequencies (rope_theta gives them; rope_scaling is refused
// above), and a tied head's copy of the embedding.
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
  Json index = parse_json(read_file(index_path, uint64_t{64} << 20), source);
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
  check_architecture(config, source);
  for (auto it = config.begin(); it != config.end(); ++it)
    if (!descriptive_keys.contains(it.key()) && !spec_keys.contains(it.key()))
      check_semantic_key(source, it.key(), it.value());

  // Absent keys take the defaults of transformers' LlamaConfig and MistralConfig.
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
  try {
    s.validate();
  } catch (const SpecError& e) {
    impossible_model(source, e.what());
  }
  return s;
}

// Hugging Face's names for the weights.
const CheckpointNames hf_names = {
    "model.embed_tokens.weight",
    "model.norm.weight",
    "lm_head.weight",
    "model.layers.{}.",
    {"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
     "self_attn.o_proj.weight", "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.down_proj.weight",
     "mlp.up_proj.weight"}};

ImportedModel read_hf(const Json& config, const std::string& config_source, CheckpointTensors tensors,
                      const std::string& tensors_source, bool widen) {
  ImportedModel m;
  m.spec = hf_spec(config, config_source);
  drop_redundant(tensors, m.spec);
  m.weights = take_weights(m.spec, tensors, hf_names, tensors_source, widen);
  return m;
}

ImportedModel read_hf(const fs::path& dir, bool widen) {
  const fs::path config_path = dir / "config.json";
  const Json config = parse_json(read_file(config_path, uint64_t{1} << 20), config_path.string());
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
