// Reading memory as fast as this machine can: the bound a decode step, which reads every
// weight once, cannot beat.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor.h"

namespace cutcheck::bench {

// The threads that read memory fastest here: one core's reads do not reach what the
// memory delivers to two (29 against 45 to 54 GB/s on this machine).
constexpr int read_threads = 2;

// Seconds to read every word of `blocks` once on `threads` threads.
double read_seconds(const std::vector<std::span<const uint64_t>>& blocks, int threads);

// The weights' storage as aligned words: the bytes before a weight's first word boundary
// and after its last are left out, a few bytes of gigabytes (owned weights start on a
// cache line, Tensor::storage_alignment; mapped ones where the file puts them).
std::vector<std::span<const uint64_t>> weight_words(const TensorMap& weights);

}  // namespace cutcheck::bench
