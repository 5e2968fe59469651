// The safetensors reader. What reads must write back and read again bit for bit.
#include <cstdlib>

#include "core/error.h"
#include "core/limits.h"
#include "core/safetensors.h"

using namespace cutcheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  set_memory_limit(16 << 20);
  try {
    SafetensorsContents c = parse_safetensors(std::as_bytes(std::span(data, size)), "fuzz", nullptr);
    std::string again = encode_safetensors(c.tensors, c.metadata);
    SafetensorsContents d = parse_safetensors(std::as_bytes(std::span(again.data(), again.size())), "again", nullptr);
    if (d.tensors.size() != c.tensors.size() || d.metadata != c.metadata) std::abort();
    for (const auto& [name, t] : c.tensors)
      if (!d.tensors.count(name) || !d.tensors.at(name).same_bits(t)) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
