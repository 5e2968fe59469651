// The tile kernel for AVX-512F (built with -mavx512f; run only where the CPU has it).
#include <immintrin.h>

#include "reference/contract_tile.h"

namespace cutcheck {
namespace {

struct Avx512 {
  using vec = __m512d;
  static constexpr int lanes = 8;
  static vec load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, vec v) { _mm512_storeu_pd(p, v); }
  static vec splat(double x) { return _mm512_set1_pd(x); }
  static vec fma(vec a, vec b, vec c) { return _mm512_fmadd_pd(a, b, c); }
};

}  // namespace

void tile_avx512(int rows, int64_t kc, const double* a, const double* b, double* c, int64_t ldc) {
  tile_rows<Avx512>(rows, kc, a, b, c, ldc);
}

}  // namespace cutcheck
