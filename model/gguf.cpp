#include "model/gguf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>

#include "core/checked.h"
#include "core/error.h"
#include "model/weights.h"
#include "core/quant_blocks.h"

namespace cutcheck {
namespace {

enum ValueType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9, u64 = 10,
  i64 = 11, f64 = 12
};

constexpr uint64_t max_name_bytes = 1 << 16;
constexpr int max_array_depth = 4;
constexpr uint32_t max_dims = 4;  // llama.cpp's GGML_MAX_DIMS

// ggml's tensor types by enum ggml_type value, named for messages.
std::string ggml_type_name(uint32_t type) {
  static const char* names[] = {"F32",    "F16",     "Q4_0",   "Q4_1",    "Q4_2",   "Q4_3",   "Q5_0",   "Q5_1",
                                "Q8_0",   "Q8_1",    "Q2_K",   "Q3_K",    "Q4_K",   "Q5_K",   "Q6_K",   "Q8_K",
                                "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S",  "IQ2_S",  "IQ4_XS",
                                "I8",     "I16",     "I32",    "I64",     "F64",    "IQ1_M",  "BF16"};
  if (type < std::size(names)) return names[type];
  return fmt::format("ggml type {}", type);
}

// Bounds-checked little-endian reads; each failure names what was being read and where.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const std::string& source) : bytes_(bytes), source_(source) {}

  template <class T> T read(const std::string& what) {
    need(sizeof(T), what);
    T out;
    std::memcpy(&out, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return out;
  }

  std::string text(const std::string& what, uint64_t max_bytes) {
    const uint64_t n = read<uint64_t>(what + " (length)");
    if (n > max_bytes) throw FormatError(fmt::format("{}: {} is {} bytes long, more than the {} allowed", source_, what, n, max_bytes));
    need(n, what);
    std::string out(reinterpret_cast<const char*>(bytes_.data() + at_), size_t(n));
    at_ += n;
    return out;
  }

  void skip(uint64_t n, const std::string& what) {
    need(n, what);
    at_ += n;
  }

  size_t at() const { return at_; }
  uint64_t remaining() const { return bytes_.size() - at_; }
  size_t size() const { return bytes_.size(); }

 private:
  void need(uint64_t n, const std::string& what) {
    if (n > bytes_.size() - at_)
      throw FormatError(fmt::format("{}: {} needs {} bytes at byte {}, but the file ends at byte {}", source_, what, n,
                                    at_, bytes_.size()));
  }

  std::span<const std::byte> bytes_;
  size_t at_ = 0;
  const std::string& source_;
};

uint64_t fixed_size(uint32_t type) {
  switch (type) {
    case u8: case i8: case boolean: return 1;
    case u16: case i16: return 2;
    case u32: case i32: case f32: return 4;
    case u64: case i64: case f64: return 8;
    default: return 0;
  }
}

// Reads one value of `type` (not an array) into `out`.
void read_scalar(Cursor& in, uint32_t type, const std::string& what, const std::string& source, GgufValue& out) {
  switch (type) {
    case u8: out.value = int64_t(in.read<uint8_t>(what)); break;
    case i8: out.value = int64_t(in.read<int8_t>(what)); break;
    case u16: out.value = int64_t(in.read<uint16_t>(what)); break;
    case i16: out.value = int64_t(in.read<int16_t>(what)); break;
    case u32: out.value = int64_t(in.read<uint32_t>(what)); break;
    case i32: out.value = int64_t(in.read<int32_t>(what)); break;
    case i64: out.value = in.read<int64_t>(what); break;
    case u64: {
      const uint64_t v = in.read<uint64_t>(what);
      if (v > uint64_t(INT64_MAX)) out.value = v;
      else out.value = int64_t(v);
      break;
    }
    case f32: {
      // The decimal the converter rounded to f32 (1e-5 for 9.99999975e-06): the shortest that rounds back.
      const std::string shortest = fmt::format("{}", in.read<float>(what));
      out.value = std::strtod(shortest.c_str(), nullptr);
      break;
    }
    case f64: out.value = in.read<double>(what); break;
    case boolean: {
      const uint8_t b = in.read<uint8_t>(what);
      if (b > 1) throw FormatError(fmt::format("{}: {} is a bool stored as {}, not 0 or 1", source, what, b));
      out.value = b == 1;
      break;
    }
    case string: out.value = in.text(what, uint64_t(1) << 30); break;
    default: throw FormatError(fmt::format("{}: {} has value type {}, which GGUF does not define", source, what, type));
  }
}

void skip_array(Cursor& in, const std::string& what, const std::string& source, int depth, uint32_t& type,
                uint64_t& count) {
  if (depth > max_array_depth)
    throw FormatError(fmt::format("{}: {} nests arrays more than {} deep", source, what, max_array_depth));
  type = in.read<uint32_t>(what + " (array element type)");
  count = in.read<uint64_t>(what + " (array length)");
  if (const uint64_t size = fixed_size(type)) {
    if (count > in.remaining() / size)
      throw FormatError(fmt::format("{}: {} holds {} elements of {} bytes, more than the {} bytes left in the file",
                                    source, what, count, size, in.remaining()));
    in.skip(count * size, what);
    return;
  }
  for (uint64_t i = 0; i < count; ++i) {  // each element takes at least 8 bytes: the loop ends with the file
    const std::string element = fmt::format("{}[{}]", what, i);
    if (type == array) {
      uint32_t inner_type;
      uint64_t inner_count;
      skip_array(in, element, source, depth + 1, inner_type, inner_count);
    } else if (type == string) {
      in.text(element, uint64_t(1) << 30);
    } else {
      throw FormatError(fmt::format("{}: {} has element type {}, which GGUF does not define", source, what, type));
    }
  }
}

// The bytes of a tensor of ggml type `type` and stored.shape: F32, F16 and BF16 values, or
// rows of quantized blocks (quant/blocks.h), each row along the fastest dimension a whole
// number of blocks. Refuses any other type, a row that is not whole blocks and a size that
// overflows, naming the tensor.
uint64_t stored_size(const StoredTensor& stored, uint32_t type, const std::string& source, const std::string& what) {
  const Shape& shape = stored.shape;
  if (const auto format = quant_format_of_ggml_name(stored.dtype); format && ggml_type(*format)->id == type) {
    try {
      const int64_t cols = shape.back();
      const int64_t rows = element_count(Shape(shape.begin(), shape.end() - 1));
      return uint64_t(bytes_for(*format, rows, cols));
    } catch (const Error& e) {
      throw FormatError(fmt::format("{}: {} is {} of shape {} (rows of {} values): {}", source, what, stored.dtype,
                                    shape_str(shape), shape.back(), e.what()));
    }
  }
  if (type != 0 && type != 1 && type != 30)
    throw FormatError(fmt::format("{}: {} is {}; cutcheck reads F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K and Q6_K tensors",
                                  source, what, stored.dtype));
  try {
    return checked_mul(uint64_t(element_count(shape)), type == 0 ? 4u : 2u, what);
  } catch (const LimitError&) {
    throw FormatError(fmt::format("{}: {} has shape {}, too large", source, what, shape_str(shape)));
  }
}

GgufValue read_value(Cursor& in, const std::string& key, const std::string& source) {
  GgufValue out;
  const std::string what = fmt::format("key '{}'", key);
  out.type = in.read<uint32_t>(what + " (value type)");
  if (out.type == array) skip_array(in, what, source, 1, out.array_type, out.array_count);
  else read_scalar(in, out.type, what, source, out);
  return out;
}

// Metadata lookups that name the key and the type found.
struct Keys {
  const GgufFile& file;
  const std::string& source;

  const GgufValue* find(const std::string& key) const {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? nullptr : &it->second;
  }

  [[noreturn]] void wrong_type(const std::string& key, const GgufValue& v, const char* wanted) const {
    throw FormatError(fmt::format("{}: key '{}' has type {}, but it must be {}", source, key, gguf_type_name(v.type),
                                  wanted));
  }

  int64_t integer(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const {
    const GgufValue* v = find(key);
    if (!v) {
      if (fallback) return *fallback;
      throw FormatError(fmt::format("{}: key '{}' is missing", source, key));
    }
    if (std::holds_alternative<uint64_t>(v->value))
      throw FormatError(fmt::format("{}: key '{}' = {} is out of range", source, key, std::get<uint64_t>(v->value)));
    if (v->type == array || v->type == boolean || !std::holds_alternative<int64_t>(v->value))
      wrong_type(key, *v, "an integer");
    return std::get<int64_t>(v->value);
  }

  double number(const std::string& key, std::optional<double> fallback = std::nullopt) const {
    const GgufValue* v = find(key);
    if (!v) {
      if (fallback) return *fallback;
      throw FormatError(fmt::format("{}: key '{}' is missing", source, key));
    }
    if (v->type != f32 && v->type != f64) wrong_type(key, *v, "a float32 or float64");
    return std::get<double>(v->value);
  }

  std::string text(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) throw FormatError(fmt::format("{}: key '{}' is missing", source, key));
    if (v->type != string) wrong_type(key, *v, "a string");
    return std::get<std::string>(v->value);
  }
};

// The llama keys the spec is read from or checked against; any other llama.* key may
// change the model and is refused.
const std::set<std::string> llama_keys = {
    "llama.context_length",       "llama.embedding_length",         "llama.block_count",
    "llama.feed_forward_length",  "llama.attention.head_count",     "llama.attention.head_count_kv",
    "llama.attention.layer_norm_rms_epsilon", "llama.rope.freq_base", "llama.rope.dimension_count",
    "llama.attention.key_length", "llama.attention.value_length",   "llama.vocab_size",
    "llama.rope.scaling.type",    "llama.rope.scaling.factor",      "llama.expert_count",
    "llama.expert_used_count"};

void check_refused_keys(const Keys& m) {
  for (const auto& [key, value] : m.file.metadata) {
    if (key.starts_with("llama.") && !llama_keys.contains(key))
      throw FormatError(fmt::format("{}: key '{}' is not one cutcheck knows, and it may change the model; "
                                    "docs/checkpoints.md lists the keys read and ignored",
                                    m.source, key));
  }
  if (m.find("llama.rope.scaling.type")) {
    const std::string type = m.text("llama.rope.scaling.type");
    if (type != "none" && type != "linear")
      throw FormatError(fmt::format("{}: key 'llama.rope.scaling.type' is \"{}\": it rescales the rotary "
                                    "frequencies in a way the spec has no knob for (it reads \"none\" and "
                                    "\"linear\")",
                                    m.source, type));
  }
  if (m.find("llama.rope.scaling.factor") && m.number("llama.rope.scaling.factor") != 1.0 &&
      m.find("llama.rope.scaling.type") == nullptr)
    throw FormatError(fmt::format("{}: key 'llama.rope.scaling.factor' is {}: it rescales the rotary frequencies, "
                                  "and the spec has no knob for that yet",
                                  m.source, m.number("llama.rope.scaling.factor")));
  for (const char* key : {"llama.expert_count", "llama.expert_used_count"})
    if (m.integer(key, 0) != 0)
      throw FormatError(fmt::format("{}: key '{}' is {}: a mixture of experts is not a model the spec describes",
                                    m.source, key, m.integer(key)));
  if (m.find("split.count") && m.integer("split.count") > 1)
    throw FormatError(fmt::format("{}: key 'split.count' is {}: a GGUF split across files is not read (merge the "
                                  "parts first)",
                                  m.source, m.integer("split.count")));
}

}  // namespace

std::string gguf_type_name(uint32_t value_type) {
  static const char* names[] = {"uint8", "int8",  "uint16", "int16", "uint32", "int32", "float32",
                                "bool",  "string", "array", "uint64", "int64", "float64"};
  if (value_type < std::size(names)) return names[value_type];
  return fmt::format("type {}", value_type);
}

GgufFile parse_gguf(std::span<const std::byte> bytes, const std::string& source,
                    std::shared_ptr<const void> keepalive) {
  Cursor in(bytes, source);
  GgufFile file;
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0)
    throw FormatError(fmt::format("{}: not a GGUF file (it must start with the bytes \"GGUF\")", source));
  in.skip(4, "the magic");
  file.version = in.read<uint32_t>("the version");
  if (file.version != 2 && file.version != 3)
    throw FormatError(fmt::format("{}: GGUF version {} is not read (2 and 3 are; a big-endian file reads as a huge "
                                  "version)",
                                  source, file.version));
  const uint64_t tensor_count = in.read<uint64_t>("the tensor count");
  const uint64_t key_count = in.read<uint64_t>("the metadata count");

  // Each key and tensor takes at least 8 bytes, so the loops end with the file.
  for (uint64_t i = 0; i < key_count; ++i) {
    std::string key = in.text(fmt::format("metadata key {}", i), max_name_bytes);
    GgufValue value = read_value(in, key, source);
    if (!file.metadata.emplace(key, std::move(value)).second)
      throw FormatError(fmt::format("{}: key '{}' appears twice", source, key));
  }
  if (auto it = file.metadata.find("general.alignment"); it != file.metadata.end()) {
    const GgufValue& v = it->second;
    if (v.type != u32)
      throw FormatError(fmt::format("{}: key 'general.alignment' has type {}, but it must be a uint32", source,
                                    gguf_type_name(v.type)));
    file.alignment = uint64_t(std::get<int64_t>(v.value));
    if (file.alignment == 0 || (file.alignment & (file.alignment - 1)) != 0)
      throw FormatError(fmt::format("{}: key 'general.alignment' is {}, not a power of two", source, file.alignment));
  }

  struct Info {
    std::string name;
    StoredTensor stored;
    uint64_t offset, size;
  };
  std::vector<Info> infos;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    Info info;
    info.name = in.text(fmt::format("the name of tensor {}", i), max_name_bytes);
    const std::string what = fmt::format("tensor '{}'", info.name);
    const uint32_t dims = in.read<uint32_t>(what + " (dimension count)");
    if (dims == 0 || dims > max_dims)
      throw FormatError(fmt::format("{}: {} has {} dimensions; GGUF allows 1 to {}", source, what, dims, max_dims));
    for (uint32_t d = 0; d < dims; ++d) {
      const uint64_t n = in.read<uint64_t>(what + " (dimensions)");
      if (n > uint64_t(INT64_MAX)) throw FormatError(fmt::format("{}: {} has dimension {}, too large", source, what, n));
      info.stored.shape.insert(info.stored.shape.begin(), int64_t(n));  // GGUF lists the fastest dimension first
    }
    const uint32_t type = in.read<uint32_t>(what + " (type)");
    info.offset = in.read<uint64_t>(what + " (offset)");
    info.stored.dtype = ggml_type_name(type);
    info.size = stored_size(info.stored, type, source, what);
    if (info.offset % file.alignment != 0)
      throw FormatError(fmt::format("{}: {} starts at offset {}, not a multiple of the alignment {}", source, what,
                                    info.offset, file.alignment));
    infos.push_back(std::move(info));
  }
  // The data starts at the next multiple of the alignment.
  const uint64_t data_start = (uint64_t(in.at()) + file.alignment - 1) / file.alignment * file.alignment;
  const uint64_t data_size = data_start <= bytes.size() ? bytes.size() - data_start : 0;
  std::sort(infos.begin(), infos.end(), [](const Info& a, const Info& b) { return a.offset < b.offset; });
  uint64_t covered = 0;
  const Info* previous = nullptr;
  for (Info& info : infos) {
    // A size its type and shape imply that disagrees with the offsets or the file's length.
    if (info.offset < covered)
      throw FormatError(fmt::format("{}: tensor '{}' ({} of shape {}: {} bytes at offset {}) runs into tensor '{}' at "
                                    "offset {}",
                                    source, previous->name, previous->stored.dtype, shape_str(previous->stored.shape),
                                    previous->size, previous->offset, info.name, info.offset));
    if (info.size > data_size || info.offset > data_size - info.size)
      throw FormatError(fmt::format("{}: tensor '{}' ({} of shape {}: {} bytes at offset {}) runs past the {} data "
                                    "bytes",
                                    source, info.name, info.stored.dtype, shape_str(info.stored.shape), info.size,
                                    info.offset, data_size));
    covered = info.offset + info.size;
    previous = &info;
    info.stored.bytes = {bytes.data() + data_start + info.offset, size_t(info.size)};
    if (!file.tensors.emplace(info.name, CheckpointTensor{source, info.stored, keepalive}).second)
      throw FormatError(fmt::format("{}: tensor '{}' appears twice", source, info.name));
  }
  return file;
}

ModelSpec gguf_spec(const GgufFile& file, const std::string& source) {
  const Keys m{file, source};
  const std::string arch = m.text("general.architecture");
  if (arch != "llama")
    throw FormatError(fmt::format("{}: architecture '{}' is not one cutcheck imports (llama)", source, arch));
  check_refused_keys(m);

  ModelSpec s;
  s.name = fs::path(source).stem().string();
  s.dim = m.integer("llama.embedding_length");
  s.layers = m.integer("llama.block_count");
  s.ffn = m.integer("llama.feed_forward_length");
  s.heads = m.integer("llama.attention.head_count");
  s.kv_heads = m.integer("llama.attention.head_count_kv", s.heads);
  if (s.heads > 0 && !m.find("llama.attention.key_length") && s.dim % s.heads != 0)
    throw FormatError(fmt::format("{}: llama.embedding_length ({}) is not a multiple of llama.attention.head_count "
                                  "({}) and no llama.attention.key_length is given",
                                  source, s.dim, s.heads));
  s.head_dim = m.integer("llama.attention.key_length", s.heads > 0 ? s.dim / s.heads : 0);
  for (const char* key : {"llama.attention.value_length", "llama.rope.dimension_count"})
    if (m.integer(key, s.head_dim) != s.head_dim)
      throw FormatError(fmt::format("{}: key '{}' is {}, but the heads are {} wide; the spec has no knob for that",
                                    source, key, m.integer(key), s.head_dim));
  s.norm_eps = m.number("llama.attention.layer_norm_rms_epsilon");
  s.rope_theta = m.number("llama.rope.freq_base", 10000.0);
  s.rope_style = RopeStyle::interleaved;
  s.tied = !file.tensors.contains("output.weight");
  // llama.cpp's linear scaling multiplies each position by 1 / factor: the spec's linear.
  if (m.find("llama.rope.scaling.type") && m.text("llama.rope.scaling.type") == "linear")
    s.rope_scaling = {RopeScalingType::linear, m.number("llama.rope.scaling.factor", 1.0)};
  // The vocabulary: stated, or the embedding's rows.
  if (m.find("llama.vocab_size")) {
    s.vocab = m.integer("llama.vocab_size");
  } else {
    auto it = file.tensors.find("token_embd.weight");
    if (it == file.tensors.end()) throw FormatError(fmt::format("{}: tensor 'token_embd.weight' is missing", source));
    s.vocab = it->second.stored.shape.front();
  }
  try {
    s.validate();
  } catch (const SpecError& e) {
    impossible_model(source, e.what());
  }
  return s;
}

const CheckpointNames gguf_tensor_names = {"token_embd.weight",
                                    "output_norm.weight",
                                    "output.weight",
                                    "blk.{}.",
                                    {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                                     "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_down.weight",
                                     "ffn_up.weight"}};

ImportedModel read_gguf(std::span<const std::byte> bytes, const std::string& source,
                        std::shared_ptr<const void> keepalive, bool widen) {
  GgufFile file = parse_gguf(bytes, source, std::move(keepalive));
  ImportedModel m;
  m.spec = gguf_spec(file, source);
  m.weights = take_weights(m.spec, file.tensors, gguf_tensor_names, source, widen);
  return m;
}

ImportedModel read_gguf(const fs::path& path, bool widen) {
  auto mapped = MappedFile::open(path);
  std::span<const std::byte> bytes = mapped->bytes();
  return read_gguf(bytes, path.string(), std::move(mapped), widen);
}

void import_gguf(const fs::path& file, const fs::path& out, bool widen) {
  ImportedModel m = read_gguf(file, widen);
  write_imported(out, m.spec, m.weights);
}

}  // namespace cutcheck
