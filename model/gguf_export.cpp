#include "model/gguf_export.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "core/error.h"
#include "model/checkpoint_export.h"
#include "model/gguf.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

constexpr uint64_t alignment = 32;  // general.alignment, llama.cpp's default

// GGUF's value types and ggml's tensor types, the few written here.
enum ValueType : uint32_t { u32 = 4, i32 = 5, f32 = 6, string = 8, array = 9 };
uint32_t ggml_type(DType dtype) { return dtype == DType::f32 ? 0 : dtype == DType::f16 ? 1 : 30; }
// general.file_type: llama.cpp's ALL_F32, MOSTLY_F16, MOSTLY_BF16.
uint32_t file_type(DType dtype) { return dtype == DType::f32 ? 0 : dtype == DType::f16 ? 1 : 32; }

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

void put_metadata(Encoder& e, const ModelSpec& spec, DType dtype) {
  e.key_text("general.architecture", "llama");
  e.key_text("general.name", spec.name);
  e.key_u32("general.alignment", alignment);
  e.key_u32("general.file_type", file_type(dtype));
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
  DType container;  // F32 for norms, else the file's dtype
  uint64_t offset, bytes;
};

}  // namespace

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

void write_gguf(const fs::path& out, const ModelSpec& spec, const TensorMap& weights, DType dtype) {
  spec.validate();
  check_gguf_expressible(spec);
  check_weights(weights, spec, "weights to export");
  if (!(dtype == DType::f32 || is_half(dtype)))
    throw Error(fmt::format("GGUF export: dtype {} is not one of f32, f16, bf16", dtype_name(dtype)));

  // The tensors in llama.cpp's converter's order, each at an aligned offset; norms (the
  // one-dimensional weights) stay F32, as llama.cpp's CPU kernels multiply by them.
  const auto names = checkpoint_name_map(spec, gguf_tensor_names);
  std::vector<TensorEntry> entries;
  uint64_t offset = 0;
  for (const WeightInfo& w : weight_layout(spec)) {
    const DType stored = w.shape.size() == 1 ? DType::f32 : dtype;
    const uint64_t bytes = TensorType{stored, w.shape}.bytes();
    entries.push_back({names.at(w.name), w.name, w.shape, stored, offset, bytes});
    offset += (bytes + alignment - 1) / alignment * alignment;
  }

  Encoder e;
  put_metadata(e, spec, dtype);
  put_vocabulary(e, spec.vocab);
  std::string tensor_infos;
  {
    Encoder infos;
    for (const TensorEntry& t : entries) {
      infos.text(t.file_name);
      infos.put(uint32_t(t.shape.size()));
      for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) infos.put(uint64_t(*d));  // fastest first
      infos.put(ggml_type(t.container));
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
      const Tensor data = exported_weight(spec, weights, t.weight, RopeStyle::interleaved, dtype, t.container);
      write(data.raw());
      write({zeros, size_t((alignment - t.bytes % alignment) % alignment)});
    }
  });
}

}  // namespace cutcheck
