// The tile kernel for AVX2 with FMA (built with -mavx2 -mfma; run only where the CPU has them).
#include <immintrin.h>

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
};

}  // namespace

void tile_avx2(int rows, int64_t kc, const double* a, const double* b, double* c, int64_t ldc) {
  tile_rows<Avx2>(rows, kc, a, b, c, ldc);
}

}  // namespace cutcheck
