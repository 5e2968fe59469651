// Small weights transposed for the contractions of decode steps (Executable,
// interpreter.h: hold_small_weights_transposed), each made once and shared by every
// executable planned with the same RunOptions: a runner's programs (generate's, one per
// cache bucket) read the same weights, and writing a fresh copy of them for each
// program cost more than any of its runs.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace cutcheck {

class TransposedWeights {
 public:
  // w [N, K] (f32, or bf16 widened exactly) as f32 [K, N]: made on the first call for
  // w's storage, the same tensor after that. Safe to call from several threads.
  const Tensor& of(const Tensor& w);

 private:
  std::mutex m_;
  // Each weight kept alongside its copy, so that no other tensor takes its storage's
  // address while the copy is known by it.
  std::vector<std::pair<Tensor, std::unique_ptr<Tensor>>> made_;
};

}  // namespace cutcheck
