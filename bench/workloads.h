// The models the benchmarks run: stories260K (the real checkpoint when ../shared has it),
// bench512 and llama1b (seeded weights, written once to the bench data folder and mapped
// from there afterwards). A name ending in -bf16 (llama1b-bf16) is that model with its
// weights stored in bf16.
#pragma once

#include <string>

#include "core/tensor.h"
#include "model/spec.h"

namespace cutcheck::bench {

struct Workload {
  ModelSpec spec;
  TensorMap weights;
  std::string source;  // "llama2.c checkpoint" or "seeded"
};

// Loaded once per process.
const Workload& workload(const std::string& name);

uint64_t weight_bytes(const TensorMap& weights);

}  // namespace cutcheck::bench
