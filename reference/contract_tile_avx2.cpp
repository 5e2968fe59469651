// The tile kernel for AVX2 with FMA (built with -mavx2 -mfma; run only where the CPU has them).
#include <immintrin.h>

#include "reference/contract_stream_x86.h"
#include "reference/contract_tile.h"

namespace cutcheck {
namespace {

struct Avx2 {
  using vec = __m256d;
  static constexpr int lanes = 4;
  static vec load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, vec v) { _mm256_storeu_pd(p, v); }
  static vec splat(double x) { return _mm256_set1_pd(x); }
  static vec fma(vec a, vec b, vec c) { return _mm256_fmadd_pd(a, b, c); }
  static vec zero() { return _mm256_setzero_pd(); }
  static void widen(__m256 c, vec* d) {
    d[0] = _mm256_cvtps_pd(_mm256_castps256_ps128(c));
    d[1] = _mm256_cvtps_pd(_mm256_extractf128_ps(c, 1));
  }
};

}  // namespace

void tile_avx2(int rows, int64_t kc, const double* a, const double* b, double* c, int64_t ldc) {
  tile_rows<Avx2>(rows, kc, a, b, c, ldc);
}

// Eight columns: two vectors of sums per row, sixteen registers for four rows.
void stream_avx2(int rows, int64_t K, const double* x, const float* const* w, double* out) {
  stream_rows<Avx2, 1>(rows, K, x, w, out);
}

void stream_bf16_avx2(int rows, int64_t K, const double* x, const uint16_t* const* w, double* out) {
  stream_rows<Avx2, 1>(rows, K, x, w, out);
}

void side_avx2(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<float>* unit, double* out) {
  side_rows<Avx2>(rows, K, kr, units, unit, out);
}

void side_bf16_avx2(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<uint16_t>* unit, double* out) {
  side_rows<Avx2>(rows, K, kr, units, unit, out);
}

}  // namespace cutcheck
