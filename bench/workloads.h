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

// Where the seeded weights of a workload lie. The timing benchmarks copy them into memory
// the process owns: this virtual machine reads mapped file pages at anything from 6 to
// 68 GB/s from one pass to the next (the host's paging, not the kernel being measured),
// owned pages at a steady rate. The peak-memory benchmark maps them, as cutcheck does.
enum class Placement { owned, mapped };

// Loaded once per process and placement.
const Workload& workload(const std::string& name, Placement placement = Placement::owned);

uint64_t weight_bytes(const TensorMap& weights);

}  // namespace cutcheck::bench
