// The safetensors format: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, then the bytes.
// cutcheck reads F32, I32 and BOOL, and refuses anything it cannot vouch for:
// offsets past the end, overlapping or unindexed bytes, sizes that disagree with shapes.
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

// Maps the file and returns views into it (no copy, unless a tensor is misaligned).
SafetensorsContents read_safetensors(const fs::path& path);

// Parses bytes already in memory; the tensors view `bytes`, kept alive by `keepalive`.
SafetensorsContents parse_safetensors(std::span<const std::byte> bytes, const std::string& source,
                                      std::shared_ptr<const void> keepalive);

std::string encode_safetensors(const TensorMap& tensors, const Metadata& metadata = {});
void write_safetensors(const fs::path& path, const TensorMap& tensors, const Metadata& metadata = {});

}  // namespace cutcheck
