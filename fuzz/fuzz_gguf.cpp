// The GGUF importer: any bytes give a model whose weights fit its spec, or an Error.
#include "core/error.h"
#include "core/limits.h"
#include "model/gguf.h"
#include "model/weights.h"

using namespace cutcheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  set_memory_limit(16 << 20);
  try {
    ImportedModel m = read_gguf(std::as_bytes(std::span(data, size)), "fuzz", nullptr);
    check_weights(m.weights, m.spec, "fuzz");
  } catch (const Error&) {
  }
  return 0;
}
