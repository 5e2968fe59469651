#include "tests/checkpoint_writers.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "model/weights.h"

namespace cutcheck::test {

uint16_t round_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);  // finite values only
}

uint16_t round_to_f16(float value) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const float a = std::fabs(value);
  if (a >= 65520.0f) return sign | 0x7c00;  // half a step past the largest finite: infinity
  if (a < 0x1p-14f) return sign | uint16_t(std::nearbyint(a * 0x1p24f));  // subnormal steps of 2^-24
  int e;
  const float m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  uint32_t fraction = uint32_t(std::nearbyint((2 * m - 1) * 1024));
  uint32_t exponent = uint32_t(e - 1 + 15);
  if (fraction == 1024) fraction = 0, ++exponent;
  if (exponent >= 31) return sign | 0x7c00;
  return uint16_t(sign | (exponent << 10) | fraction);
}

namespace {

// Rows permuted within each head: out row h*E + to(r) = in row h*E + r.
Tensor permute_rows(const Tensor& w, int64_t heads, bool meta_to_hf) {
  const int64_t rows = w.shape()[0], cols = w.type().rank() == 1 ? 1 : w.shape()[1], E = rows / heads;
  Tensor out({DType::f32, w.shape()});
  auto in = w.as<float>();
  auto o = out.as_mut<float>();
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < E / 2; ++i)
      for (int64_t s = 0; s < 2; ++s) {
        const int64_t meta = h * E + 2 * i + s, hf = h * E + s * (E / 2) + i;
        const int64_t from = meta_to_hf ? meta : hf, to = meta_to_hf ? hf : meta;
        std::copy_n(in.begin() + from * cols, cols, o.begin() + to * cols);
      }
  return out;
}

std::string encode(const Tensor& t, Stored dtype) {
  std::string out;
  for (float v : t.as<float>()) {
    if (dtype == Stored::f32) {
      out.append(reinterpret_cast<const char*>(&v), 4);
    } else {
      const uint16_t bits = dtype == Stored::bf16 ? round_to_bf16(v) : round_to_f16(v);
      out.append(reinterpret_cast<const char*>(&bits), 2);
    }
  }
  return out;
}

std::string u64(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }
std::string u32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string gguf_string(const std::string& s) { return u64(s.size()) + s; }

std::string safetensors_of(const std::vector<std::pair<std::string, Tensor>>& tensors, Stored dtype) {
  Json header = Json::object();
  std::string data;
  const char* name = dtype == Stored::f32 ? "F32" : dtype == Stored::f16 ? "F16" : "BF16";
  for (const auto& [tensor, t] : tensors) {
    std::string bytes = encode(t, dtype);
    header[tensor] = {{"dtype", name}, {"shape", t.shape()}, {"data_offsets", {data.size(), data.size() + bytes.size()}}};
    data += bytes;
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  return u64(text.size()) + text + data;
}

}  // namespace

Tensor meta_to_hf_rows(const Tensor& w, int64_t heads) { return permute_rows(w, heads, true); }
Tensor hf_to_llamacpp_rows(const Tensor& w, int64_t heads) { return permute_rows(w, heads, false); }

HfFolder HfFolder::of(const ModelSpec& spec, const TensorMap& weights, Stored dtype, bool permute) {
  HfFolder f;
  f.dtype = dtype;
  f.config = {{"architectures", {"LlamaForCausalLM"}},
              {"model_type", "llama"},
              {"hidden_size", spec.dim},
              {"intermediate_size", spec.ffn},
              {"num_hidden_layers", spec.layers},
              {"num_attention_heads", spec.heads},
              {"num_key_value_heads", spec.kv_heads},
              {"head_dim", spec.head_dim},
              {"vocab_size", spec.vocab},
              {"rms_norm_eps", spec.norm_eps},
              {"rope_theta", spec.rope_theta},
              {"rope_scaling", nullptr},
              {"attention_bias", false},
              {"mlp_bias", false},
              {"hidden_act", "silu"},
              {"tie_word_embeddings", spec.tied},
              {"max_position_embeddings", 512},
              {"torch_dtype", dtype == Stored::f32 ? "float32" : dtype == Stored::f16 ? "float16" : "bfloat16"},
              {"transformers_version", "4.44.0"},
              {"bos_token_id", 1},
              {"eos_token_id", 2}};
  // The knobs as the architectures that have them write them.
  if (spec.attention_bias && spec.qk_norm) throw Error("no Hugging Face architecture has both q/k/v biases and qk norms");
  if (spec.attention_bias) f.config["architectures"] = {"Qwen2ForCausalLM"}, f.config["model_type"] = "qwen2";
  if (spec.qk_norm) f.config["architectures"] = {"Qwen3ForCausalLM"}, f.config["model_type"] = "qwen3";
  if (spec.sliding_window > 0) {
    f.config["sliding_window"] = spec.sliding_window;
    if (spec.attention_bias || spec.qk_norm) {
      f.config["use_sliding_window"] = true;
      f.config["max_window_layers"] = 0;
    } else {
      f.config["architectures"] = {"MistralForCausalLM"}, f.config["model_type"] = "mistral";
    }
  }
  const RopeScaling& rs = spec.rope_scaling;
  if (rs.type == RopeScalingType::linear) f.config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", rs.factor}};
  if (rs.type == RopeScalingType::llama3)
    f.config["rope_scaling"] = {{"rope_type", "llama3"},
                                {"factor", rs.factor},
                                {"low_freq_factor", rs.low_freq_factor},
                                {"high_freq_factor", rs.high_freq_factor},
                                {"original_max_position_embeddings", rs.original_max_position_embeddings}};
  auto add = [&](const std::string& name, const Tensor& t) { f.tensors.emplace_back(name, t); };
  add("model.embed_tokens.weight", weights.at(weight::embedding()));
  for (int64_t l = 0; l < spec.layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    add(p + "input_layernorm.weight", weights.at(weight::attention_norm(l)));
    add(p + "self_attn.q_proj.weight", permute ? meta_to_hf_rows(weights.at(weight::wq(l)), spec.heads) : weights.at(weight::wq(l)));
    add(p + "self_attn.k_proj.weight", permute ? meta_to_hf_rows(weights.at(weight::wk(l)), spec.kv_heads) : weights.at(weight::wk(l)));
    add(p + "self_attn.v_proj.weight", weights.at(weight::wv(l)));
    if (spec.attention_bias) {  // q's and k's in Hugging Face's order, as their rows
      add(p + "self_attn.q_proj.bias", permute ? meta_to_hf_rows(weights.at(weight::bq(l)), spec.heads) : weights.at(weight::bq(l)));
      add(p + "self_attn.k_proj.bias", permute ? meta_to_hf_rows(weights.at(weight::bk(l)), spec.kv_heads) : weights.at(weight::bk(l)));
      add(p + "self_attn.v_proj.bias", weights.at(weight::bv(l)));
    }
    if (spec.qk_norm) {  // one head's gains, in Hugging Face's order too
      add(p + "self_attn.q_norm.weight", permute ? meta_to_hf_rows(weights.at(weight::q_norm(l)), 1) : weights.at(weight::q_norm(l)));
      add(p + "self_attn.k_norm.weight", permute ? meta_to_hf_rows(weights.at(weight::k_norm(l)), 1) : weights.at(weight::k_norm(l)));
    }
    add(p + "self_attn.o_proj.weight", weights.at(weight::wo(l)));
    add(p + "post_attention_layernorm.weight", weights.at(weight::ffn_norm(l)));
    add(p + "mlp.gate_proj.weight", weights.at(weight::w1(l)));
    add(p + "mlp.up_proj.weight", weights.at(weight::w3(l)));
    add(p + "mlp.down_proj.weight", weights.at(weight::w2(l)));
  }
  add("model.norm.weight", weights.at(weight::final_norm()));
  if (!spec.tied) add("lm_head.weight", weights.at(weight::output()));
  return f;
}

void HfFolder::write(const fs::path& dir, int shards) const {
  fs::create_directories(dir);
  write_file_atomic(dir / "config.json", config.dump(2));
  if (shards == 1) {
    write_file_atomic(dir / "model.safetensors", safetensors_of(tensors, dtype));
    return;
  }
  Json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", Json::object()}};
  for (int s = 0; s < shards; ++s) {
    const std::string file = fmt::format("model-{:05}-of-{:05}.safetensors", s + 1, shards);
    std::vector<std::pair<std::string, Tensor>> part;
    for (size_t i = size_t(s); i < tensors.size(); i += size_t(shards)) {
      part.push_back(tensors[i]);
      index["weight_map"][tensors[i].first] = file;
    }
    write_file_atomic(dir / file, safetensors_of(part, dtype));
  }
  write_file_atomic(dir / "model.safetensors.index.json", index.dump(2));
}

Tensor& HfFolder::tensor(const std::string& name) {
  for (auto& [n, t] : tensors)
    if (n == name) return t;
  throw std::out_of_range(name);
}

void HfFolder::erase(const std::string& name) {
  std::erase_if(tensors, [&](const auto& entry) { return entry.first == name; });
}

GgufWriter GgufWriter::of(const ModelSpec& spec, const TensorMap& weights, Stored dtype) {
  GgufWriter g;
  g.set_string("general.architecture", "llama");
  g.set_string("general.name", spec.name);
  g.set_u32("llama.context_length", 512);
  g.set_u32("llama.embedding_length", uint32_t(spec.dim));
  g.set_u32("llama.block_count", uint32_t(spec.layers));
  g.set_u32("llama.feed_forward_length", uint32_t(spec.ffn));
  g.set_u32("llama.rope.dimension_count", uint32_t(spec.head_dim));
  g.set_u32("llama.attention.head_count", uint32_t(spec.heads));
  g.set_u32("llama.attention.head_count_kv", uint32_t(spec.kv_heads));
  g.set_f32("llama.attention.layer_norm_rms_epsilon", float(spec.norm_eps));
  g.set_f32("llama.rope.freq_base", float(spec.rope_theta));
  g.set_u32("general.file_type", dtype == Stored::f32 ? 0 : dtype == Stored::f16 ? 1 : 32);
  // The tokenizer's table, an array of strings the reader must step over.
  std::string tokens = u32(8) + u64(uint64_t(spec.vocab));
  for (int64_t i = 0; i < spec.vocab; ++i) tokens += gguf_string(fmt::format("<{}>", i));
  g.keys.push_back({"tokenizer.ggml.tokens", 9, tokens});

  const uint32_t type = dtype == Stored::f32 ? 0 : dtype == Stored::f16 ? 1 : 30;
  auto add = [&](const std::string& name, const Tensor& t) { g.tensors.push_back({name, t.shape(), type, encode(t, dtype)}); };
  // llama.cpp's converter reads Hugging Face's layout and permutes q and k back.
  auto qk = [&](const Tensor& meta, int64_t heads) { return hf_to_llamacpp_rows(meta_to_hf_rows(meta, heads), heads); };
  add("token_embd.weight", weights.at(weight::embedding()));
  for (int64_t l = 0; l < spec.layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    add(p + "attn_norm.weight", weights.at(weight::attention_norm(l)));
    add(p + "attn_q.weight", qk(weights.at(weight::wq(l)), spec.heads));
    add(p + "attn_k.weight", qk(weights.at(weight::wk(l)), spec.kv_heads));
    add(p + "attn_v.weight", weights.at(weight::wv(l)));
    add(p + "attn_output.weight", weights.at(weight::wo(l)));
    add(p + "ffn_norm.weight", weights.at(weight::ffn_norm(l)));
    add(p + "ffn_gate.weight", weights.at(weight::w1(l)));
    add(p + "ffn_up.weight", weights.at(weight::w3(l)));
    add(p + "ffn_down.weight", weights.at(weight::w2(l)));
  }
  add("output_norm.weight", weights.at(weight::final_norm()));
  if (!spec.tied) add("output.weight", weights.at(weight::output()));
  return g;
}

void GgufWriter::set_u32(const std::string& key, uint32_t value) {
  erase_key(key);
  keys.push_back({key, 4, u32(value)});
}

void GgufWriter::set_f32(const std::string& key, float value) {
  erase_key(key);
  keys.push_back({key, 6, std::string(reinterpret_cast<const char*>(&value), 4)});
}

void GgufWriter::set_string(const std::string& key, const std::string& value) {
  erase_key(key);
  keys.push_back({key, 8, gguf_string(value)});
}

void GgufWriter::erase_key(const std::string& key) {
  std::erase_if(keys, [&](const Key& k) { return k.name == key; });
}

GgufWriter::TensorInfo& GgufWriter::tensor(const std::string& name) {
  for (TensorInfo& t : tensors)
    if (t.name == name) return t;
  throw std::out_of_range(name);
}

void GgufWriter::erase_tensor(const std::string& name) {
  std::erase_if(tensors, [&](const TensorInfo& t) { return t.name == name; });
}

std::string GgufWriter::bytes() const {
  auto pad = [&](std::string& s) { s.resize((s.size() + alignment - 1) / alignment * alignment, '\0'); };
  std::string out = "GGUF" + u32(version) + u64(tensors.size()) + u64(keys.size());
  for (const Key& k : keys) out += gguf_string(k.name) + u32(k.type) + k.value;
  std::string data;
  for (const TensorInfo& t : tensors) {
    out += gguf_string(t.name) + u32(uint32_t(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) out += u64(uint64_t(*d));
    out += u32(t.type) + u64(data.size());
    data += t.data;
    pad(data);
  }
  pad(out);
  return out + data;
}

}  // namespace cutcheck::test
