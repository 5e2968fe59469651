// GGUF files (llama.cpp's format), version 2 and 3, little-endian: the `llama`
// architecture with F32, F16 and BF16 tensors. llama.cpp's converter permutes the q and k
// rows of Hugging Face checkpoints back to Meta's pair order, so the spec says
// rope_style = interleaved and the rows are taken as stored (docs/checkpoints.md).
// A float32 metadata value reads as the shortest decimal that rounds to it (1e-5 rather
// than 9.99999975e-06), the value the converter started from.
#pragma once

#include <map>
#include <span>
#include <variant>

#include "model/checkpoint.h"
#include "model/hf.h"

namespace cutcheck {

// A metadata value: the GGUF type code and what it holds. Arrays are checked and skipped
// (tokenizer tables); their element type and count are kept.
struct GgufValue {
  uint32_t type = 0;
  std::variant<int64_t, uint64_t, double, bool, std::string> value;  // uint64_t only above INT64_MAX
  uint32_t array_type = 0;
  uint64_t array_count = 0;
};

struct GgufFile {
  uint32_t version = 0;
  uint64_t alignment = 32;
  std::map<std::string, GgufValue> metadata;
  CheckpointTensors tensors;  // shapes in cutcheck's order (GGUF lists the fastest dimension first)
};

std::string gguf_type_name(uint32_t value_type);  // "uint32", "string", ...

// The container: header, metadata, tensor infos, alignment and every tensor's bytes in
// the file. Throws FormatError naming `source` and the key or tensor.
GgufFile parse_gguf(std::span<const std::byte> bytes, const std::string& source,
                    std::shared_ptr<const void> keepalive);

// The tensor names of llama.cpp's `llama` architecture (no knob tensors).
extern const CheckpointNames gguf_tensor_names;

// The spec the metadata describes (architecture `llama`).
ModelSpec gguf_spec(const GgufFile& file, const std::string& source);

// The weights keep the checkpoint's dtype unless `widen` (take_weights).
ImportedModel read_gguf(std::span<const std::byte> bytes, const std::string& source,
                        std::shared_ptr<const void> keepalive, bool widen = false);
ImportedModel read_gguf(const fs::path& path, bool widen = false);

// Writes OUT/spec.json and OUT/model.safetensors.
void import_gguf(const fs::path& file, const fs::path& out, bool widen = false);

}  // namespace cutcheck
