#include "model/gguf_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "model/checkpoint_export.h"
#include "model/gguf.h"
#include "model/weights.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace cutcheck {
namespace {

constexpr uint64_t alignment = 32;  // general.alignment, llama.cpp's default

// GGUF's value types and ggml's float tensor types, the few written here.
enum ValueType : uint32_t { u32 = 4, i32 = 5, f32 = 6, string = 8, array = 9 };
uint32_t ggml_float_type(DType dtype) { return dtype == DType::f32 ? 0 : dtype == DType::f16 ? 1 : 30; }

struct FileTypeInfo {
  GgufFileType type;
  const char* name;
  uint32_t llama_ftype;  // general.file_type: enum llama_ftype (include/llama.h)
};
constexpr FileTypeInfo file_types[] = {{GgufFileType::f32, "f32", 0},   {GgufFileType::f16, "f16", 1},
                                       {GgufFileType::bf16, "bf16", 32}, {GgufFileType::q8_0, "q8_0", 7},
                                       {GgufFileType::q4_0, "q4_0", 2},  {GgufFileType::q4_k_m, "q4_k_m", 15}};

const FileTypeInfo& info(GgufFileType type) {
  for (const FileTypeInfo& t : file_types)
    if (t.type == type) return t;
  throw Error("GGUF export: unknown file type");
}

// llama_tensor_get_type_impl's use_more_bits: the first and last eighth of the layers and
// every third one between get more bits.
bool use_more_bits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// Little-endian encoding of the header's parts.
class Encoder {
 public:
  template <class T> void put(T v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void text(const std::string& s) {
    put<uint64_t>(s.size());
    out_ += s;
  }
  void key(const std::string& name, uint32_t type) {
    text(name);
    put(type);
    ++keys_;
  }
  void key_u32(const std::string& name, int64_t v) {
    key(name, u32);
    put(uint32_t(v));
  }
  void key_f32(const std::string& name, double v) {
    key(name, f32);
    put(float(v));
  }
  void key_text(const std::string& name, const std::string& v) {
    key(name, string);
    text(v);
  }
  void array_header(const std::string& name, uint32_t element_type, uint64_t count) {
    key(name, array);
    put(element_type);
    put(count);
  }
  void pad() { out_.resize((out_.size() + alignment - 1) / alignment * alignment, '\0'); }
  std::string& bytes() { return out_; }
  uint64_t keys() const { return keys_; }

 private:
  std::string out_;
  uint64_t keys_ = 0;
};

void put_metadata(Encoder& e, const ModelSpec& spec, GgufFileType type) {
  e.key_text("general.architecture", "llama");
  e.key_text("general.name", spec.name);
  e.key_u32("general.alignment", alignment);
  e.key_u32("general.file_type", info(type).llama_ftype);
  // GGML_QNT_VERSION, as llama-quantize writes it.
  if (gguf_default_quant(type)) e.key_u32("general.quantization_version", 2);
  e.key_u32("llama.context_length", gguf_context_length);
  e.key_u32("llama.embedding_length", spec.dim);
  e.key_u32("llama.block_count", spec.layers);
  e.key_u32("llama.feed_forward_length", spec.ffn);
  e.key_u32("llama.attention.head_count", spec.heads);
  e.key_u32("llama.attention.head_count_kv", spec.kv_heads);
  e.key_u32("llama.attention.key_length", spec.head_dim);
  e.key_u32("llama.attention.value_length", spec.head_dim);
  e.key_u32("llama.rope.dimension_count", spec.head_dim);  // every element of a head rotates
  e.key_f32("llama.attention.layer_norm_rms_epsilon", spec.norm_eps);
  e.key_f32("llama.rope.freq_base", spec.rope_theta);
  e.key_u32("llama.vocab_size", spec.vocab);
  if (spec.rope_scaling.type == RopeScalingType::linear) {
    e.key_text("llama.rope.scaling.type", "linear");
    e.key_f32("llama.rope.scaling.factor", spec.rope_scaling.factor);
  }
}

// A SentencePiece ("llama") vocabulary of the spec's size, laid out as llama2.c's and
// Llama 2's are: <unk>, <s>, </s>, then the byte tokens <0x00>..<0xFF> as far as the
// vocabulary reaches, then placeholders <tN>. llama.cpp needs a vocabulary whose size is
// the embedding's rows; with all 256 byte tokens any text tokenizes. cutcheck hands an
// engine token ids only, so the pieces' text is never compared.
void put_vocabulary(Encoder& e, int64_t vocab) {
  enum TokenType : int32_t { normal = 1, unknown = 2, control = 3, byte = 6 };
  const int64_t V = vocab;
  auto piece = [](int64_t id) -> std::string {
    if (id == 0) return "<unk>";
    if (id == 1) return "<s>";
    if (id == 2) return "</s>";
    if (id < 3 + 256) return fmt::format("<0x{:02X}>", id - 3);
    return fmt::format("<t{}>", id);
  };
  auto type = [](int64_t id) { return id == 0 ? unknown : id < 3 ? control : id < 3 + 256 ? byte : normal; };
  e.key_text("tokenizer.ggml.model", "llama");
  e.array_header("tokenizer.ggml.tokens", string, uint64_t(V));
  for (int64_t id = 0; id < V; ++id) e.text(piece(id));
  e.array_header("tokenizer.ggml.scores", f32, uint64_t(V));
  for (int64_t id = 0; id < V; ++id) e.put(0.0f);
  e.array_header("tokenizer.ggml.token_type", i32, uint64_t(V));
  for (int64_t id = 0; id < V; ++id) e.put(int32_t(type(id)));
  // The special tokens where the vocabulary has them (a vocabulary of 2 has no </s>).
  const std::pair<const char*, int64_t> special[] = {{"tokenizer.ggml.unknown_token_id", 0},
                                                     {"tokenizer.ggml.bos_token_id", 1},
                                                     {"tokenizer.ggml.eos_token_id", 2}};
  for (const auto& [key, id] : special)
    if (id < V) e.key_u32(key, id);
  e.key(std::string("tokenizer.ggml.add_bos_token"), 7);  // bool: the ids cutcheck gives are the whole prompt
  e.put(uint8_t(0));
}

struct TensorEntry {
  std::string file_name, weight;
  Shape shape;
  GgufTensorType stored;
  DType values;  // what a float tensor's values are rounded to (a norm in F32 holds an f16 file's values)
  uint64_t offset, bytes;
};

// Writes entry `t` as the file stores it: a quantized tensor's rows by ggml's reference
// quantizers, from the weight's f32 values.
// The f32 weight `x` quantized row by row (its last dimension) by ggml's reference quantizer.
std::vector<std::byte> quantized_rows(const std::string& weight, QuantFormat format, const Tensor& x) {
  const int64_t cols = x.shape().back(), rows = x.elements() / cols, stride = row_bytes(format, cols);
  std::vector<std::byte> out(size_t(rows * stride));
  const float* values = x.as<float>().data();
  for (int64_t r = 0; r < rows; ++r) {
    try {
      quantize_row_reference(format, values + r * cols, cols, out.data() + r * stride);
    } catch (const Error& e) {
      throw InputError(fmt::format("GGUF export: weight '{}' ({}), row {}: {}", weight, ggml_type(format)->name, r,
                                   e.what()));
    }
  }
  return out;
}

void write_tensor(const FileSink& write, const ModelSpec& spec, const TensorMap& weights, const TensorEntry& t) {
  if (!t.stored.quant) {
    write(exported_weight(spec, weights, t.weight, RopeStyle::interleaved, t.values, t.stored.dtype).raw());
    return;
  }
  const Tensor x = exported_weight(spec, weights, t.weight, RopeStyle::interleaved, DType::f32);
  write(quantized_rows(t.weight, *t.stored.quant, x));
}

}  // namespace

std::optional<QuantFormat> gguf_default_quant(GgufFileType type) {
  switch (type) {
    case GgufFileType::q8_0: return QuantFormat::q8_0;
    case GgufFileType::q4_0: return QuantFormat::q4_0;
    case GgufFileType::q4_k_m: return QuantFormat::q4_K;
    default: return std::nullopt;
  }
}

DType gguf_float_dtype(GgufFileType type) {
  return type == GgufFileType::f16 ? DType::f16 : type == GgufFileType::bf16 ? DType::bf16 : DType::f32;
}

void check_gguf_expressible(const ModelSpec& spec) {
  const std::string format = "GGUF (llama.cpp's llama architecture)";
  if (spec.qk_norm)
    inexpressible(format, spec, "qk_norm: the llama architecture has no per-head q/k norm (Qwen3's has; "
                                "export-hf writes it as Qwen3ForCausalLM)");
  if (spec.sliding_window > 0)
    inexpressible(format, spec, fmt::format("sliding_window = {}: the llama architecture attends to the whole "
                                            "context (export-hf writes a window as MistralForCausalLM)",
                                            spec.sliding_window));
  if (spec.attention_bias)
    inexpressible(format, spec, "attention_bias: cutcheck's GGUF reader takes no q/k/v biases, so the file could "
                                "not be checked to import as the same model (export-hf writes them as "
                                "Qwen2ForCausalLM)");
  if (spec.rope_scaling.type == RopeScalingType::llama3)
    inexpressible(format, spec, "rope_scaling llama3: llama.cpp stores it as per-pair factors (rope_freqs.weight), "
                                "which cutcheck's GGUF reader does not map back to the rule's four parameters");
  for (auto [field, value] : {std::pair{"vocab", spec.vocab}, {"dim", spec.dim}, {"layers", spec.layers},
                              {"heads", spec.heads}, {"kv_heads", spec.kv_heads}, {"head_dim", spec.head_dim},
                              {"ffn", spec.ffn}})
    if (value > int64_t(std::numeric_limits<uint32_t>::max()))
      inexpressible(format, spec, fmt::format("{} = {} does not fit GGUF's uint32 key", field, value));
}

std::string gguf_file_type_name(GgufFileType type) { return info(type).name; }

GgufFileType parse_gguf_file_type(const std::string& name, const std::string& option) {
  for (const FileTypeInfo& t : file_types)
    if (name == t.name) return t.type;
  throw Error(fmt::format("{} '{}': choose f32, f16, bf16, q8_0, q4_0 or q4_k_m", option, name));
}

GgufFileType gguf_file_type(DType dtype) {
  if (dtype == DType::f32) return GgufFileType::f32;
  if (dtype == DType::f16) return GgufFileType::f16;
  if (dtype == DType::bf16) return GgufFileType::bf16;
  throw Error(fmt::format("GGUF export: dtype {} is not one of f32, f16, bf16", dtype_name(dtype)));
}

GgufTensorType gguf_tensor_type(const ModelSpec& spec, const std::string& weight, GgufFileType type) {
  const std::vector<WeightInfo> layout = weight_layout(spec);
  const auto w = std::find_if(layout.begin(), layout.end(), [&](const WeightInfo& i) { return i.name == weight; });
  if (w == layout.end()) throw Error(fmt::format("GGUF export: '{}' is not a weight of {}", weight, spec.summary()));
  if (w->shape.size() == 1) return {std::nullopt, DType::f32};  // norms stay F32
  std::optional<QuantFormat> quant = gguf_default_quant(type);
  if (!quant) return {std::nullopt, gguf_float_dtype(type)};
  const int64_t cols = w->shape.back();
  if (weight == weight::output() || (spec.tied && weight == weight::embedding())) {
    if (*quant != QuantFormat::q8_0) quant = cols % 256 == 0 ? QuantFormat::q6_K : QuantFormat::q8_0;
  } else if (type == GgufFileType::q4_k_m) {
    for (int64_t l = 0; l < spec.layers; ++l)
      if ((weight == weight::wv(l) || weight == weight::w2(l)) && use_more_bits(l, spec.layers))
        quant = QuantFormat::q6_K;
  }
  // tensor_type_fallback: rows that are not whole blocks of the type chosen.
  if (cols % block_layout(*quant, cols).values != 0) {
    if (*quant == QuantFormat::q4_K) quant = QuantFormat::q5_0;
    if (*quant == QuantFormat::q6_K) quant = QuantFormat::q8_0;
    if (cols % block_layout(*quant, cols).values != 0) return {std::nullopt, DType::f16};
  }
  return {quant, DType::f32};
}

TensorMap gguf_stored_weights(const ModelSpec& spec, const TensorMap& weights, GgufFileType type) {
  if (!gguf_default_quant(type)) throw Error(fmt::format("gguf_stored_weights: {} is no quantized file type", gguf_file_type_name(type)));
  check_weights(weights, spec, "weights to store");
  TensorMap out;
  for (const WeightInfo& w : weight_layout(spec)) {
    const GgufTensorType stored = gguf_tensor_type(spec, w.name, type);
    const std::string what = fmt::format("weight '{}'", w.name);
    Tensor x = convert_weight(weights.at(w.name), DType::f32, what);
    if (!stored.quant) {
      out.insert_or_assign(w.name, convert_weight(convert_weight(x, stored.dtype, what), DType::f32, what));
      continue;
    }
    // Each row's blocks are its own, so the rows' order in the file does not matter here.
    const QuantFormat format = *stored.quant;
    const int64_t cols = w.shape.back(), rows = x.elements() / cols, stride = row_bytes(format, cols);
    const std::vector<std::byte> blocks = quantized_rows(w.name, format, x);
    Tensor back = Tensor::uninitialized(x.type());
    float* to = back.as_mut<float>().data();
    for (int64_t r = 0; r < rows; ++r) dequantize_row(format, blocks.data() + r * stride, cols, to + r * cols);
    out.insert_or_assign(w.name, std::move(back));
  }
  return out;
}

void write_gguf(const fs::path& out, const ModelSpec& spec, const TensorMap& weights, GgufFileType type) {
  spec.validate();
  check_gguf_expressible(spec);
  check_weights(weights, spec, "weights to export");

  // The tensors in llama.cpp's converter's order, each at an aligned offset; norms (the
  // one-dimensional weights) stay F32, as llama.cpp's CPU kernels multiply by them.
  const auto names = checkpoint_name_map(spec, gguf_tensor_names);
  const bool quantized = gguf_default_quant(type).has_value();
  std::vector<TensorEntry> entries;
  uint64_t offset = 0;
  for (const WeightInfo& w : weight_layout(spec)) {
    const GgufTensorType stored = gguf_tensor_type(spec, w.name, type);
    // A float file's norms hold the file dtype's values; a quantized file's hold the weights'.
    const DType values = quantized ? stored.dtype : gguf_float_dtype(type);
    const int64_t cols = w.shape.back();
    const uint64_t bytes = stored.quant ? uint64_t(bytes_for(*stored.quant, element_count(w.shape) / cols, cols))
                                        : TensorType{stored.dtype, w.shape}.bytes();
    entries.push_back({names.at(w.name), w.name, w.shape, stored, values, offset, bytes});
    offset += (bytes + alignment - 1) / alignment * alignment;
  }

  Encoder e;
  put_metadata(e, spec, type);
  put_vocabulary(e, spec.vocab);
  std::string tensor_infos;
  {
    Encoder infos;
    for (const TensorEntry& t : entries) {
      infos.text(t.file_name);
      infos.put(uint32_t(t.shape.size()));
      for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) infos.put(uint64_t(*d));  // fastest first
      infos.put(t.stored.quant ? ggml_type(*t.stored.quant)->id : ggml_float_type(t.stored.dtype));
      infos.put(t.offset);
    }
    tensor_infos = std::move(infos.bytes());
  }
  Encoder header;
  header.bytes() = "GGUF";
  header.put(uint32_t(3));
  header.put(uint64_t(entries.size()));
  header.put(e.keys());
  header.bytes() += e.bytes();
  header.bytes() += tensor_infos;
  header.pad();

  write_file_atomic(out, [&](const FileSink& write) {
    write(std::as_bytes(std::span(header.bytes())));
    const std::byte zeros[alignment] = {};
    for (const TensorEntry& t : entries) {
      write_tensor(write, spec, weights, t);
      write({zeros, size_t((alignment - t.bytes % alignment) % alignment)});
    }
  });
}

}  // namespace cutcheck
