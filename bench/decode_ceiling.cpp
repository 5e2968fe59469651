// GCC 12's AVX-512 headers start some intrinsics from an undefined vector, which it then
// reports as maybe uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "bench/decode_ceiling.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/half.h"
#include "reference/parallel.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace cutcheck::bench {
namespace {

// Four vectors of 8 sums in flight: with weights in L1, 64 columns (eight vectors) were no
// faster (0.039 against 0.038 ns a bf16 weight on one core, a standalone measurement).
constexpr int panel_width = 32;

// Where column j of a panel sits among a term's 32 elements, so that the vectors of sums
// come out in column order. A bf16 term is one 64-byte load, widened by interleaving with
// zeros 16 bits at a time within each 128-bit lane: the low interleave takes elements
// 0-3 of every lane (sums 0-15), the high one elements 4-7 (sums 16-31). An f32 term is
// two loads, in order.
int position(int j, DType dtype) {
  if (dtype == DType::f32) return j;
  const int m = j % 16;
  return 8 * (m / 4) + m % 4 + (j >= 16 ? 4 : 0);
}

#if defined(__x86_64__)
// One panel's 32 sums: term k of every column added before term k + 1, each sum in its
// own lane, the multiply-add fused (exact: docs/numerics.md).
template <class T>
__attribute__((target("avx512f,avx512bw,avx512dq"))) void panel_sums(int64_t K, const double* x, const T* w,
                                                                     double* out) {
  __m512d acc[4];
  for (__m512d& a : acc) a = _mm512_setzero_pd();
  for (int64_t k = 0; k < K; ++k) {
    const __m512d xk = _mm512_set1_pd(x[k]);
    __m512 lo, hi;  // sums 0-15, 16-31, as f32
    if constexpr (sizeof(T) == 2) {
      const __m512i term = _mm512_load_si512(w + k * panel_width);
      lo = _mm512_castsi512_ps(_mm512_unpacklo_epi16(_mm512_setzero_si512(), term));
      hi = _mm512_castsi512_ps(_mm512_unpackhi_epi16(_mm512_setzero_si512(), term));
    } else {
      lo = _mm512_load_ps(w + k * panel_width);
      hi = _mm512_load_ps(w + k * panel_width + 16);
    }
    acc[0] = _mm512_fmadd_pd(xk, _mm512_cvtps_pd(_mm512_castps512_ps256(lo)), acc[0]);
    acc[1] = _mm512_fmadd_pd(xk, _mm512_cvtps_pd(_mm512_extractf32x8_ps(lo, 1)), acc[1]);
    acc[2] = _mm512_fmadd_pd(xk, _mm512_cvtps_pd(_mm512_castps512_ps256(hi)), acc[2]);
    acc[3] = _mm512_fmadd_pd(xk, _mm512_cvtps_pd(_mm512_extractf32x8_ps(hi, 1)), acc[3]);
  }
  for (int a = 0; a < 4; ++a) _mm512_storeu_pd(out + 8 * a, acc[a]);
}
#endif

double element(const Tensor& w, int64_t at) {
  if (w.dtype() == DType::f32) return double(w.as<float>()[size_t(at)]);
  return double(bf16_to_f32(reinterpret_cast<const uint16_t*>(w.raw().data())[at]));
}

}  // namespace

std::string DecodeCeiling::unsupported() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    return "";
#endif
  return "the ceiling's kernel needs AVX-512 F, BW and DQ";
}

DecodeCeiling::DecodeCeiling(const TensorMap& weights) {
  for (const auto& [name, w] : weights) {
    if (w.shape().size() != 2 || (w.dtype() != DType::f32 && w.dtype() != DType::bf16)) continue;
    const int64_t N = w.shape()[0], K = w.shape()[1], panels = (N + panel_width - 1) / panel_width;
    Tensor packed({w.dtype(), {panels, K, panel_width}});  // zero-filled: the columns past N stay zero
    const size_t size = dtype_size(w.dtype());
    const std::byte* from = w.raw().data();
    std::byte* to = packed.raw_mut().data();
    for (int64_t n = 0; n < N; ++n) {
      const int64_t p = n / panel_width;
      std::byte* column = to + (size_t(p * K * panel_width) + size_t(position(int(n % panel_width), w.dtype()))) * size;
      for (int64_t k = 0; k < K; ++k)
        std::memcpy(column + size_t(k * panel_width) * size, from + size_t(n * K + k) * size, size);
    }
    Matrix m{&w, std::move(packed), {}, std::vector<double>(size_t(panels * panel_width))};
    // f32 values, as a decode's activations are: their products with f32 or bf16 weights
    // are exact in double, so the fused multiply-add gives the definition's bits.
    for (int64_t k = 0; k < K; ++k) m.x.push_back(double(float(1.0 + 0.001 * double(k % 997))));
    matrices_.push_back(std::move(m));
  }
  double elements = 0;
  for (size_t i = 0; i < matrices_.size(); ++i) {
    for (int64_t p = 0; p < matrices_[i].panels(); ++p) work_.push_back({i, p});
    elements += double(matrices_[i].packed.elements());
  }
  work_cost_ = work_.empty() ? 0 : elements / double(work_.size());
}

double DecodeCeiling::pass_seconds(int threads) {
  KernelThreads scope(threads);
  const auto start = std::chrono::steady_clock::now();
#if defined(__x86_64__)
  parallel_for(int64_t(work_.size()), work_cost_, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const auto [i, p] = work_[size_t(u)];
      Matrix& m = matrices_[i];
      const int64_t K = m.K();
      const size_t at = size_t(p * K * panel_width);
      double* out = m.sums.data() + p * panel_width;
      if (m.packed.dtype() == DType::f32) panel_sums(K, m.x.data(), m.packed.as<float>().data() + at, out);
      else panel_sums(K, m.x.data(), reinterpret_cast<const uint16_t*>(m.packed.raw().data()) + at, out);
    }
  });
#endif
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool DecodeCeiling::agrees_with_definition() const {
  if (matrices_.empty()) return false;
  for (const Matrix& m : matrices_) {
    const int64_t N = m.weight->shape()[0], K = m.K();
    for (int64_t p : {int64_t(0), m.panels() - 1})
      for (int64_t n = p * panel_width; n < std::min(N, (p + 1) * panel_width); ++n) {
        double sum = 0.0;
        for (int64_t k = 0; k < K; ++k) sum += m.x[size_t(k)] * element(*m.weight, n * K + k);
        if (std::memcmp(&sum, &m.sums[size_t(n)], sizeof sum) != 0) return false;
      }
  }
  return true;
}

}  // namespace cutcheck::bench
