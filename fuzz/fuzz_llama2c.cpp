// The llama2.c checkpoint reader: any bytes give a model or a FormatError.
#include "core/error.h"
#include "core/limits.h"
#include "model/llama2c.h"
#include "model/weights.h"

using namespace cutcheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  set_memory_limit(16 << 20);
  try {
    Llama2cModel m = read_llama2c(std::as_bytes(std::span(data, size)), "fuzz");
    check_weights(m.weights, m.spec, "fuzz");
  } catch (const Error&) {
  }
  return 0;
}
