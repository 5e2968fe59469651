// The safetensors format: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, then the bytes.
// cutcheck's tensors are F32, BF16, F16, I32 and BOOL, and quantized weights as U8 blocks
// (stored_form); the layout checks (offsets past the end,
// overlapping or unindexed bytes, sizes that disagree with shapes) hold for every dtype, so
// checkpoint importers index any dtype (and refuse the ones cutcheck does not read) the same way.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>

#include "core/files.h"
#include "core/tensor.h"

namespace cutcheck {

using Metadata = std::map<std::string, std::string>;

struct SafetensorsContents {
  TensorMap tensors;
  Metadata metadata;
};

// A tensor as the file stores it: the file's dtype name (F32, BF16, F16, ...), its shape
// and its bytes, in place.
struct StoredTensor {
  std::string dtype;
  Shape shape;
  std::span<const std::byte> bytes;
};

struct SafetensorsIndex {
  std::map<std::string, StoredTensor> tensors;
  Metadata metadata;
};

// How a tensor of `type` lies in a file: its dtype's name (F32, BF16, ...) and its shape,
// or for a quantized type (core/tensor.h) its blocks as bytes, U8 [rows..., row bytes]: the
// format names no block formats, and a U8 tensor is what every safetensors reader reads.
struct StoredForm {
  std::string dtype;
  Shape shape;
};
StoredForm stored_form(const TensorType& type);

// Checks the header and the layout of any dtype safetensors names; throws FormatError
// naming `source` and the tensor.
SafetensorsIndex index_safetensors(std::span<const std::byte> bytes, const std::string& source);

// Maps the file and returns views into it (no copy, unless a tensor is misaligned).
SafetensorsContents read_safetensors(const fs::path& path, Links links = Links::follow);

// Parses bytes already in memory; the tensors view `bytes`, kept alive by `keepalive`.
SafetensorsContents parse_safetensors(std::span<const std::byte> bytes, const std::string& source,
                                      std::shared_ptr<const void> keepalive);

// A mapped file read by a reader that knows each tensor's type (a manifest, a spec), the
// quantized ones included: read() checks the tensor is stored in that type's form.
class SafetensorsFile {
 public:
  static SafetensorsFile open(const fs::path& path);
  bool holds(const std::string& name) const;
  // The tensor `name` (it must be held) as `type`. Throws FormatError when the file stores
  // it otherwise: "WHAT is f16[2,3], NEEDS f32[2,3]", or naming a dtype cutcheck does not read.
  Tensor read(const std::string& name, const TensorType& type, const std::string& what, const std::string& needs) const;
  const SafetensorsIndex& index() const { return index_; }

 private:
  std::string path_;
  std::shared_ptr<const MappedFile> mapped_;
  SafetensorsIndex index_;
};

std::string encode_safetensors(const TensorMap& tensors, const Metadata& metadata = {});
// The 8-byte length and the header of a file holding tensors of these types, in name
// order: the data follows it, tensor after tensor in that order (for writers that stream).
std::string encode_safetensors_header(const std::map<std::string, TensorType>& types, const Metadata& metadata = {});
void write_safetensors(const fs::path& path, const TensorMap& tensors, const Metadata& metadata = {});

}  // namespace cutcheck
