// Small weights transposed for the contractions of decode steps (Executable,
// interpreter.h: hold_small_weights_transposed), each made once and shared by every
// executable planned with the same RunOptions: a runner's programs (generate's, one per
// cache bucket) read the same weights, and writing a fresh copy of them for each
// program cost more than any of its runs.
#pragma once

#include <memory>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace cutcheck {

// A program whose weights total at most this many bytes as f32 reads them from cache
// step after step (stories260K's are 1 MiB; bench512's 104 MiB come from memory): only
// then are the weights its decode steps contract transposed.
constexpr int64_t transposed_weights_max_bytes = int64_t(4) << 20;

class TransposedWeights {
 public:
  // Each w [N, K] (f32, or bf16 widened exactly) as f32 [K, N]: made on the first call
  // for w's storage, the same tensor after that. The copies one call makes share one
  // block of memory, its pages asked for at once, in a huge page from 512 KiB up
  // (core/pages.h: 1 MiB of fresh pages took 1.8 ms asked for at once, 0.2 ms in a huge
  // page, on this project's machine). Safe to call from several threads.
  std::vector<const Tensor*> of(const std::vector<const Tensor*>& ws);
  // The bytes the copies made so far hold.
  uint64_t bytes();

 private:
  std::mutex m_;
  // Each weight kept alongside its copy, so that no other tensor takes its storage's
  // address while the copy is known by it.
  std::vector<std::pair<Tensor, std::unique_ptr<Tensor>>> made_;
};

}  // namespace cutcheck
