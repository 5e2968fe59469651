#include "bench/workloads.h"

#include <cstdlib>
#include <map>

#include "model/llama2c.h"
#include "model/weights.h"

namespace cutcheck::bench {

uint64_t weight_bytes(const TensorMap& weights) {
  uint64_t n = 0;
  for (const auto& [name, t] : weights) n += t.bytes();
  return n;
}

const Workload& workload(const std::string& name) {
  static std::map<std::string, Workload> loaded;
  auto it = loaded.find(name);
  if (it != loaded.end()) return it->second;
  Workload w;
  fs::path checkpoint = fs::path(CUTCHECK_SHARED_DIR) / "models" / "stories260K.bin";
  if (name == "stories260K" && fs::exists(checkpoint)) {
    Llama2cModel m = read_llama2c(checkpoint);
    w = {m.spec, std::move(m.weights), "llama2.c checkpoint"};
  } else {
    w.spec = builtin_spec(name);
    w.source = "seeded";
    const char* data = std::getenv("CUTCHECK_BENCH_DATA");
    fs::path dir = fs::path(data ? data : "bench-data") / name;
    if (!fs::exists(weights_file(dir))) write_weights(dir, synthetic_weights(w.spec, 1), w.spec);
    w.weights = read_weights(dir, w.spec);  // mapped, not copied
  }
  return loaded.emplace(name, std::move(w)).first->second;
}

}  // namespace cutcheck::bench
