// The tile kernel for AVX-512F (built with -mavx512f; run only where the CPU has it).
// GCC 12's AVX-512 headers start some intrinsics from an undefined vector, which it then
// reports as maybe uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "reference/contract_stream_x86.h"
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
  static vec zero() { return _mm512_setzero_pd(); }
  static void widen(__m256 c, vec* d) { d[0] = _mm512_cvtps_pd(c); }
};

}  // namespace

void tile_avx512(int rows, int64_t kc, const double* a, const double* b, double* c, int64_t ldc) {
  tile_rows<Avx512>(rows, kc, a, b, c, ldc);
}

// Sixteen columns: two independent chains of sums per row keep the adds' latency hidden.
void stream_avx512(int rows, int64_t K, const double* x, const float* const* w, double* out) {
  stream_rows<Avx512, 2>(rows, K, x, w, out);
}

void stream_bf16_avx512(int rows, int64_t K, const double* x, const uint16_t* const* w, double* out) {
  stream_rows<Avx512, 2>(rows, K, x, w, out);
}

// Eight rows by eight terms at a time: eight loads of 8 f32, widened, then an 8 x 8
// transpose in registers, so that each store writes one term's eight rows. Other rows
// and terms go through the plain loops.
void pack_rows_avx512(const float* src, const int64_t* base, int valid, int lanes, int64_t kc, double* dst) {
  const int full = lanes % 8 == 0 ? valid / 8 * 8 : 0;
  const int64_t kfull = kc / 8 * 8;
  for (int r = 0; r < full; r += 8) {
    const float* row[8];
    for (int i = 0; i < 8; ++i) row[i] = src + base[r + i];
    for (int64_t k = 0; k < kfull; k += 8) {
      __m512d v[8], t[8];
      for (int i = 0; i < 8; ++i) v[i] = _mm512_cvtps_pd(_mm256_loadu_ps(row[i] + k));
      // v[i] = row i, terms k..k+7. Pairs, then quads, then halves.
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_pd(v[i], v[i + 1]);      // (i,0)(i+1,0)(i,2)(i+1,2)...
        t[i + 1] = _mm512_unpackhi_pd(v[i], v[i + 1]);  // (i,1)(i+1,1)(i,3)(i+1,3)...
      }
      for (int i = 0; i < 8; i += 4)
        for (int j = 0; j < 2; ++j) {
          v[i + j] = _mm512_shuffle_f64x2(t[i + j], t[i + j + 2], 0x88);      // 128-bit lanes 0,2 | 0,2
          v[i + j + 2] = _mm512_shuffle_f64x2(t[i + j], t[i + j + 2], 0xdd);  // lanes 1,3 | 1,3
        }
      for (int j = 0; j < 4; ++j) {
        t[j] = _mm512_shuffle_f64x2(v[j], v[j + 4], 0x88);
        t[j + 4] = _mm512_shuffle_f64x2(v[j], v[j + 4], 0xdd);
      }
      // t[q] holds term k + q of rows 0..7.
      for (int q = 0; q < 8; ++q) _mm512_storeu_pd(dst + (k + q) * lanes + r, t[q]);
    }
    for (int i = 0; i < 8; ++i)
      for (int64_t k = kfull; k < kc; ++k) dst[k * lanes + r + i] = double(row[i][k]);
  }
  for (int i = full; i < valid; ++i)
    for (int64_t k = 0; k < kc; ++k) dst[k * lanes + i] = double(src[base[i] + k]);
  for (int i = valid; i < lanes; ++i)
    for (int64_t k = 0; k < kc; ++k) dst[k * lanes + i] = 0.0;
}

}  // namespace cutcheck
