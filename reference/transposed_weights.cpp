#include "reference/transposed_weights.h"

#include <algorithm>

#include "core/limits.h"
#include "core/pages.h"
#include "reference/contract_tile.h"

namespace cutcheck {
namespace {

// w [N, K] as f32 [K, N] into `to`, by blocks of 8 x 8 (loops of a fixed count, unrolled).
void transpose_into(const Tensor& w, float* to) {
  const int64_t N = w.shape()[0], K = w.shape()[1];
  auto fill = [&](const auto* from) {
    constexpr int64_t B = 8;
    for (int64_t n0 = 0; n0 < N; n0 += B)
      for (int64_t k0 = 0; k0 < K; k0 += B) {
        if (n0 + B <= N && k0 + B <= K) {
          for (int64_t k = 0; k < B; ++k)
            for (int64_t n = 0; n < B; ++n) to[(k0 + k) * N + n0 + n] = widen_term(from[(n0 + n) * K + k0 + k]);
        } else {
          for (int64_t k = k0; k < std::min(K, k0 + B); ++k)
            for (int64_t n = n0; n < std::min(N, n0 + B); ++n) to[k * N + n] = widen_term(from[n * K + k]);
        }
      }
  };
  if (w.dtype() == DType::bf16) fill(reinterpret_cast<const uint16_t*>(w.raw().data()));
  else fill(w.as<float>().data());
}

// Each copy starts on a cache line of its own, as the block does (Tensor storage, or a
// huge page).
uint64_t line_rounded(uint64_t bytes) {
  constexpr uint64_t line = Tensor::storage_alignment;
  return (bytes + line - 1) / line * line;
}

}  // namespace

std::vector<const Tensor*> TransposedWeights::of(const std::vector<const Tensor*>& ws) {
  std::lock_guard lock(m_);
  // A weight is known by its storage: tensors sharing it (the same weight bound twice)
  // share one copy.
  auto same = [](const Tensor& a, const Tensor& b) { return a.raw().data() == b.raw().data() && a.type() == b.type(); };
  auto made = [&](const Tensor& w) -> const Tensor* {
    for (const auto& [weight, copy] : made_)
      if (same(weight, w)) return copy.get();
    return nullptr;
  };
  std::vector<const Tensor*> missing;
  uint64_t bytes = 0;
  for (const Tensor* w : ws)
    if (!made(*w) && std::none_of(missing.begin(), missing.end(), [&](const Tensor* m) { return same(*m, *w); })) {
      missing.push_back(w);
      bytes += line_rounded(uint64_t(w->elements()) * sizeof(float));
    }
  if (!missing.empty()) {
    check_memory(bytes, "the transposed copies of small weights");
    std::shared_ptr<std::byte> memory = huge_page_memory(bytes);  // written whole below
    const TensorType type{DType::f32, {int64_t(bytes / sizeof(float))}};
    Tensor block;
    if (memory) {
      block = Tensor::over(type, std::move(memory));
    } else {  // fewer bytes than a huge page is for: ordinary memory, which starts on a cache line
      block = Tensor::uninitialized(type);
      populate_pages(block.raw_mut().data(), bytes);
    }
    uint64_t at = 0;
    for (const Tensor* w : missing) {
      auto copy = std::make_unique<Tensor>(Tensor::part_of({DType::f32, {w->shape()[1], w->shape()[0]}}, block, at));
      transpose_into(*w, copy->as_mut<float>().data());
      at += line_rounded(copy->bytes());
      made_.emplace_back(*w, std::move(copy));
    }
  }
  std::vector<const Tensor*> copies;
  for (const Tensor* w : ws) copies.push_back(made(*w));
  return copies;
}

uint64_t TransposedWeights::bytes() {
  std::lock_guard lock(m_);
  uint64_t total = 0;
  for (const auto& made : made_) total += made.second->bytes();
  return total;
}

}  // namespace cutcheck
