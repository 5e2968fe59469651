// What --replay and check --reproduce read: a reproducer's case.json (first byte even) and
// a reproduce string (odd). A case that reads must write back and read to the same case;
// nothing may crash, leak or allocate past the limit.
#include <cstdlib>

#include "core/error.h"
#include "fuzz/fuzz_input.h"
#include "properties/check.h"

using namespace cutcheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto input = fuzz::pick_reader(data, size, 2);
  if (!input) return 0;
  try {
    if (input->reader == 0) {
      fuzz::case_round_trip(input->text);
    } else {
      for (const ReproduceEntry& r : read_reproduce(input->text, 100))
        if (r.size < 0 || r.size > 100) std::abort();
    }
  } catch (const Error&) {
  }
  return 0;
}
