#include "core/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "core/checked.h"
#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"

namespace cutcheck {
namespace {

constexpr uint64_t max_header_bytes = 100 << 20;

// A tensor stored in a dtype cutcheck does not read.
FormatError unsupported_dtype(const std::string& where, const std::string& name, const std::string& dtype) {
  return FormatError(fmt::format("{}: tensor '{}': dtype {} is not supported (cutcheck reads F32, BF16, F16, I32 and BOOL)",
                                 where, name, dtype));
}

std::string_view file_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::i32: return "I32";
    case DType::i1: return "BOOL";
    case DType::bf16: return "BF16";
    case DType::f16: return "F16";
    case DType::q8_0:
    case DType::q4_0:
    case DType::q5_0:
    case DType::q4_K:
    case DType::q6_K:
    case DType::i8_row: return "U8";  // its blocks' bytes (stored_form)
  }
  return "?";
}

bool parse_file_dtype(const std::string& name, DType& out) {
  for (DType d : {DType::f32, DType::i32, DType::i1, DType::bf16, DType::f16}) {
    if (file_dtype(d) == name) {
      out = d;
      return true;
    }
  }
  return false;
}

// Bytes per element of each dtype the safetensors format names.
int element_bytes(const std::string& dtype) {
  static const std::map<std::string, int> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I64", 8}, {"I32", 4},
      {"I16", 2}, {"I8", 1},  {"U64", 8}, {"U32", 4},  {"U16", 2},     {"U8", 1},      {"BOOL", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

struct Entry {
  std::string name;
  StoredTensor stored;
  uint64_t begin, end;
};

Entry read_entry(const std::string& name, const Json& info, const std::string& source) {
  std::string where = fmt::format("{}: tensor '{}'", source, name);
  Entry entry{name, {json_string(info, "dtype", where), {}, {}}, 0, 0};
  const int size = element_bytes(entry.stored.dtype);
  if (size == 0) throw FormatError(fmt::format("{}: dtype {} is not a safetensors dtype", where, entry.stored.dtype));
  entry.stored.shape = json_int_list(info, "shape", where);
  const Shape& shape = entry.stored.shape;
  for (int64_t d : shape)
    if (d < 0) throw FormatError(fmt::format("{}: shape {} has a negative dimension", where, shape_str(shape)));
  std::vector<int64_t> offsets = json_int_list(info, "data_offsets", where);
  if (offsets.size() != 2 || offsets[0] < 0 || offsets[1] < offsets[0])
    throw FormatError(fmt::format("{}: data_offsets must be [begin, end] with 0 <= begin <= end", where));
  entry.begin = uint64_t(offsets[0]);
  entry.end = uint64_t(offsets[1]);
  uint64_t expected = 0;
  try {
    expected = checked_mul(uint64_t(element_count(shape)), uint64_t(size), where);
  } catch (const LimitError&) {
    throw FormatError(fmt::format("{}: shape {} is too large", where, shape_str(shape)));
  }
  if (entry.end - entry.begin != expected)
    throw FormatError(fmt::format("{}: data_offsets span {} bytes but {}{} needs {}", where, entry.end - entry.begin,
                                  entry.stored.dtype, shape_str(shape), expected));
  return entry;
}

}  // namespace

SafetensorsIndex index_safetensors(std::span<const std::byte> bytes, const std::string& source) {
  if (bytes.size() < 8)
    throw FormatError(fmt::format("{}: {} bytes is too short for a safetensors file (8-byte header length)",
                                  source, bytes.size()));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | uint64_t(bytes[size_t(i)]);
  if (header_len > max_header_bytes || header_len > bytes.size() - 8)
    throw FormatError(fmt::format("{}: header length {} runs past the end of the {}-byte file", source, header_len,
                                  bytes.size()));
  std::string header_text(reinterpret_cast<const char*>(bytes.data() + 8), size_t(header_len));
  Json header = parse_json(header_text, source + " (header)");
  if (!header.is_object()) throw FormatError(fmt::format("{}: the header must be a JSON object", source));

  const std::byte* data = bytes.data() + 8 + header_len;
  uint64_t data_size = bytes.size() - 8 - header_len;
  SafetensorsIndex out;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) throw FormatError(fmt::format("{}: __metadata__ must be an object", source));
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          throw FormatError(fmt::format("{}: __metadata__ field '{}' must be a string", source, m.key()));
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    Entry entry = read_entry(it.key(), it.value(), source);
    if (entry.end > data_size)
      throw FormatError(fmt::format("{}: tensor '{}' ends at byte {}, past the {} data bytes", source, entry.name,
                                    entry.end, data_size));
    entries.push_back(std::move(entry));
  }
  // The bytes must be indexed exactly once: sorted by offset, each entry starts where the last ended.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      throw FormatError(fmt::format("{}: tensor '{}' overlaps tensor '{}'", source, e.name, previous->name));
    if (e.begin > covered)
      throw FormatError(fmt::format("{}: bytes {}..{} before tensor '{}' belong to no tensor", source, covered,
                                    e.begin, e.name));
    covered = e.end;
    previous = &e;
  }
  if (covered != data_size)
    throw FormatError(fmt::format("{}: {} trailing bytes belong to no tensor", source, data_size - covered));

  for (Entry& e : entries) {
    e.stored.bytes = {data + e.begin, size_t(e.end - e.begin)};
    out.tensors.emplace(e.name, std::move(e.stored));
  }
  return out;
}

SafetensorsContents parse_safetensors(std::span<const std::byte> bytes, const std::string& source,
                                      std::shared_ptr<const void> keepalive) {
  SafetensorsIndex index = index_safetensors(bytes, source);
  SafetensorsContents out;
  out.metadata = std::move(index.metadata);
  for (auto& [name, stored] : index.tensors) {
    TensorType type{DType::f32, std::move(stored.shape)};
    if (!parse_file_dtype(stored.dtype, type.dtype)) throw unsupported_dtype(source, name, stored.dtype);
    const std::byte* at = stored.bytes.data();
    Tensor t = Tensor::view(type, at, keepalive);
    if (reinterpret_cast<uintptr_t>(at) % dtype_size(type.dtype) != 0) t = t.clone();  // keep loads aligned
    out.tensors.emplace(name, std::move(t));
  }
  return out;
}

StoredForm stored_form(const TensorType& type) {
  StoredForm form{std::string(file_dtype(type.dtype)), type.shape};
  if (const auto format = quant_format(type.dtype)) form.shape.back() = row_bytes(*format, type.shape.back());
  return form;
}

SafetensorsFile SafetensorsFile::open(const fs::path& path) {
  SafetensorsFile f;
  f.path_ = path.string();
  f.mapped_ = MappedFile::open(path);
  f.index_ = index_safetensors(f.mapped_->bytes(), f.path_);
  return f;
}

bool SafetensorsFile::holds(const std::string& name) const { return index_.tensors.count(name) > 0; }

Tensor SafetensorsFile::read(const std::string& name, const TensorType& type, const std::string& what,
                             const std::string& needs) const {
  const StoredTensor& stored = index_.tensors.at(name);
  const StoredForm want = stored_form(type);
  if (stored.dtype != want.dtype || stored.shape != want.shape) {
    DType d = DType::f32;
    const bool readable = parse_file_dtype(stored.dtype, d);
    if (!readable && !is_quantized(type.dtype)) throw unsupported_dtype(path_, name, stored.dtype);
    const std::string is =
        readable ? TensorType{d, stored.shape}.str() : fmt::format("{} {}", stored.dtype, shape_str(stored.shape));
    const std::string as_blocks =
        is_quantized(type.dtype) ? fmt::format(" (its blocks, stored as {} {})", want.dtype, shape_str(want.shape)) : "";
    throw FormatError(fmt::format("{} is {}, {} {}{}", what, is, needs, type.str(), as_blocks));
  }
  Tensor t = Tensor::view(type, stored.bytes.data(), mapped_);
  if (!is_quantized(type.dtype) && reinterpret_cast<uintptr_t>(stored.bytes.data()) % dtype_size(type.dtype) != 0)
    t = t.clone();  // keep loads aligned
  return t;
}

SafetensorsContents read_safetensors(const fs::path& path, Links links) {
  auto mapped = MappedFile::open(path, links);
  std::span<const std::byte> bytes = mapped->bytes();
  return parse_safetensors(bytes, path.string(), std::move(mapped));
}

std::string encode_safetensors_header(const std::map<std::string, TensorType>& types, const Metadata& metadata) {
  Json header = Json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : types) {
    const StoredForm form = stored_form(t);
    header[name] = {{"dtype", form.dtype}, {"shape", form.shape}, {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // pad so the data starts 8-byte aligned
  std::string out(8, '\0');
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((len >> (8 * i)) & 0xff);
  return out + text;
}

namespace {

// The file: its header, then each tensor's bytes from where they are (mapped weights stay
// mapped), so a writer never needs the whole file in memory.
void produce_safetensors(const TensorMap& tensors, const Metadata& metadata, const FileSink& write) {
  std::map<std::string, TensorType> types;
  for (const auto& [name, t] : tensors) types.emplace(name, t.type());
  const std::string header = encode_safetensors_header(types, metadata);
  write(std::as_bytes(std::span(header.data(), header.size())));
  for (const auto& [name, t] : tensors) write(t.raw());
}

}  // namespace

std::string encode_safetensors(const TensorMap& tensors, const Metadata& metadata) {
  std::string out;
  produce_safetensors(tensors, metadata, [&](std::span<const std::byte> bytes) {
    out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  });
  return out;
}

void write_safetensors(const fs::path& path, const TensorMap& tensors, const Metadata& metadata) {
  write_file_atomic(path, [&](const FileSink& write) { produce_safetensors(tensors, metadata, write); });
}

}  // namespace cutcheck
