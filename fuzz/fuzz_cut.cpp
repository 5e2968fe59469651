// The cut text parser: what parses prints back to text that parses to the same cut.
#include <cstdlib>

#include "core/error.h"
#include "model/cut.h"

using namespace cutcheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    Cut c = Cut::parse(text, "fuzz");
    if (!(Cut::parse(c.str(), "again") == c)) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
