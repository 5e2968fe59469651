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

namespace {

// Reads one byte of every page of the mapped weights, so that the first timed step does
// not pay for mapping them (a page fault per 4 KiB: a quarter of a second for llama1b).
void touch(const TensorMap& weights) {
  uint64_t sum = 0;
  for (const auto& [name, t] : weights)
    for (size_t i = 0; i < t.raw().size(); i += 4096) sum += uint64_t(t.raw()[i]);
  volatile uint64_t sink = sum;
  (void)sink;
}

}  // namespace

const Workload& workload(const std::string& name, Placement placement) {
  static std::map<std::pair<std::string, Placement>, Workload> loaded;
  auto it = loaded.find({name, placement});
  if (it != loaded.end()) return it->second;
  Workload w;
  fs::path checkpoint = fs::path(CUTCHECK_SHARED_DIR) / "models" / "stories260K.bin";
  if (name == "stories260K" && fs::exists(checkpoint)) {
    Llama2cModel m = read_llama2c(checkpoint);
    w = {m.spec, std::move(m.weights), "llama2.c checkpoint"};
  } else {
    // NAME-DTYPE: the built-in NAME with its weights in DTYPE (llama1b-bf16, llama3-8b-q4_0).
    const size_t dash = name.rfind('-');
    DType dtype = DType::f32;
    const bool typed = dash != std::string::npos && parse_dtype(name.substr(dash + 1), dtype);
    w.spec = builtin_spec(typed ? name.substr(0, dash) : name);
    if (typed) w.spec.dtype = dtype;
    w.source = "seeded";
    const char* data = std::getenv("CUTCHECK_BENCH_DATA");
    fs::path dir = fs::path(data ? data : "bench-data") / name;
    if (!fs::exists(weights_file(dir))) write_synthetic_weights(dir, w.spec, 1);
    w.weights = read_weights(dir, w.spec);  // mapped, not copied
    if (placement == Placement::owned)
      for (auto& [tensor_name, t] : w.weights) t = t.clone();
    else
      touch(w.weights);
  }
  return loaded.emplace(std::pair{name, placement}, std::move(w)).first->second;
}

}  // namespace cutcheck::bench
