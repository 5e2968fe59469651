// The JSON readers: spec, manifest and conformance case. The first byte picks the
// reader; what reads must write back and read again to the same value.
#include <cstdlib>

#include "core/error.h"
#include "fuzz/fuzz_input.h"
#include "model/spec.h"
#include "program/manifest.h"

using namespace cutcheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto input = fuzz::pick_reader(data, size, 3);
  if (!input) return 0;
  try {
    switch (input->reader) {
      case 0: {
        ModelSpec s = ModelSpec::from_json(parse_json(input->text, "fuzz"), "fuzz");
        if (!(ModelSpec::from_json(parse_json(s.to_json().dump(), "again"), "again") == s)) std::abort();
        break;
      }
      case 1: {
        Manifest m = Manifest::from_json(parse_json(input->text, "fuzz"), "fuzz");
        if (!(Manifest::from_json(parse_json(m.to_json().dump(), "again"), "again") == m)) std::abort();
        break;
      }
      default: fuzz::case_round_trip(input->text);
    }
  } catch (const Error&) {
  }
  return 0;
}
