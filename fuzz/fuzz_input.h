// Pieces the fuzz targets share: the start of every input, and the case.json round trip
// that both fuzz_json and fuzz_replay check.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/json.h"
#include "core/limits.h"
#include "properties/case.h"

namespace cutcheck::fuzz {

// An input whose first byte picks one of `readers` and whose rest is the text.
struct PickedInput {
  unsigned reader;
  std::string text;
};

// Sets a 16 MiB memory limit (a crafted size is refused, not allocated) and splits the
// input; nullopt for an empty one.
inline std::optional<PickedInput> pick_reader(const uint8_t* data, size_t size, unsigned readers) {
  set_memory_limit(16 << 20);
  if (size == 0) return std::nullopt;
  return PickedInput{data[0] % readers, std::string(reinterpret_cast<const char*>(data + 1), size - 1)};
}

// A case.json that reads writes back and reads to the same case; aborts otherwise.
inline void case_round_trip(const std::string& text) {
  Case c = Case::from_json(parse_json(text, "case.json"), "case.json");
  if (Case::from_json(parse_json(c.to_json().dump(), "again"), "again").str() != c.str()) std::abort();
}

}  // namespace cutcheck::fuzz
