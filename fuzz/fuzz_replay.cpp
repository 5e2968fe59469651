// What --replay and check --reproduce read: a reproducer's case.json (first byte even) and
// a reproduce string (odd). A case that reads must write back and read to the same case;
// nothing may crash, leak or allocate past the limit.
#include <cstdlib>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "properties/case.h"
#include "properties/check.h"

using namespace cutcheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  set_memory_limit(16 << 20);
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (data[0] % 2 == 0) {
      Case c = Case::from_json(parse_json(text, "case.json"), "case.json");
      if (Case::from_json(parse_json(c.to_json().dump(), "again"), "again").str() != c.str()) std::abort();
    } else {
      for (const ReproduceEntry& r : read_reproduce(text, 100))
        if (r.size < 0 || r.size > 100) std::abort();
    }
  } catch (const Error&) {
  }
  return 0;
}
