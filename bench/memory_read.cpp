#include "bench/memory_read.h"

#include <benchmark/benchmark.h>

#include <chrono>

#include "reference/parallel.h"

namespace cutcheck::bench {
namespace {

// Eight independent sums, which the compiler vectorises: with one running sum the adds
// wait on each other and the loop measured about two thirds of what the memory delivers.
uint64_t sum_of(const uint64_t* p, int64_t n) {
  uint64_t s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += p[i + j];
  for (; i < n; ++i) s[0] += p[i];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

// Blocks are cut into pieces of 1 MiB, so that a large block is shared between threads;
// parallel_for hands each thread runs of pieces.
constexpr int64_t piece_words = (int64_t(1) << 20) / 8;

}  // namespace

double read_seconds(const std::vector<std::span<const uint64_t>>& blocks, int threads) {
  std::vector<std::span<const uint64_t>> pieces;
  for (std::span<const uint64_t> b : blocks)
    for (size_t at = 0; at < b.size(); at += size_t(piece_words)) pieces.push_back(b.subspan(at, std::min(b.size() - at, size_t(piece_words))));
  std::vector<uint64_t> sums(pieces.size());
  KernelThreads scope(threads);
  const auto start = std::chrono::steady_clock::now();
  parallel_for(int64_t(pieces.size()), 1e9, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) sums[size_t(p)] = sum_of(pieces[size_t(p)].data(), int64_t(pieces[size_t(p)].size()));
  });
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  benchmark::DoNotOptimize(sums.data());
  return took.count();
}

std::vector<std::span<const uint64_t>> weight_words(const TensorMap& weights) {
  std::vector<std::span<const uint64_t>> words;
  for (const auto& [name, t] : weights) {
    const std::span<const std::byte> bytes = t.raw();
    const auto at = reinterpret_cast<uintptr_t>(bytes.data());
    const uintptr_t first = (at + 7) / 8 * 8, end = at + bytes.size();
    if (first < end) words.emplace_back(reinterpret_cast<const uint64_t*>(first), (end - first) / 8);
  }
  return words;
}

}  // namespace cutcheck::bench
