#include "reference/transposed_weights.h"

#include <algorithm>

#include "core/pages.h"
#include "reference/contract_tile.h"

namespace cutcheck {
namespace {

// w [N, K] as f32 [K, N], by blocks of 8 x 8 (loops of a fixed count, unrolled).
Tensor transposed_f32(const Tensor& w) {
  const int64_t N = w.shape()[0], K = w.shape()[1];
  Tensor t = Tensor::uninitialized({DType::f32, {K, N}});
  populate_pages(t.raw_mut().data(), t.bytes());  // written whole below
  float* to = t.as_mut<float>().data();
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
  return t;
}

}  // namespace

const Tensor& TransposedWeights::of(const Tensor& w) {
  std::lock_guard lock(m_);
  for (const auto& [weight, copy] : made_)
    if (weight.raw().data() == w.raw().data() && weight.type() == w.type()) return *copy;
  made_.emplace_back(w, std::make_unique<Tensor>(transposed_f32(w)));
  return *made_.back().second;
}

uint64_t TransposedWeights::bytes() {
  std::lock_guard lock(m_);
  uint64_t total = 0;
  for (const auto& made : made_) total += made.second->bytes();
  return total;
}

}  // namespace cutcheck
