// The JSON readers: spec, manifest and conformance case. The first byte picks the
// reader; what reads must write back and read again to the same value.
#include <cstdlib>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "model/spec.h"
#include "program/manifest.h"
#include "properties/case.h"

using namespace cutcheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  set_memory_limit(16 << 20);
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    Json j = parse_json(text, "fuzz");
    switch (data[0] % 3) {
      case 0: {
        ModelSpec s = ModelSpec::from_json(j, "fuzz");
        if (!(ModelSpec::from_json(parse_json(s.to_json().dump(), "again"), "again") == s)) std::abort();
        break;
      }
      case 1: {
        Manifest m = Manifest::from_json(j, "fuzz");
        if (!(Manifest::from_json(parse_json(m.to_json().dump(), "again"), "again") == m)) std::abort();
        break;
      }
      default: {
        Case c = Case::from_json(j, "fuzz");
        if (Case::from_json(parse_json(c.to_json().dump(), "again"), "again").str() != c.str()) std::abort();
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
