// A matrix-vector kernel (StreamFn, contract_tile.h) for x86 vector units, 8 terms of 8
// columns at a time transposed in registers: AVX2's, and AVX-512's for weights in cache
// (AVX-512's from memory reads a cache line at a time: contract_tile_avx512.cpp).
// Included by the translation units built for those sets; everything here has internal
// linkage, so code built for one set never stands in for another's.
#pragma once

#include <immintrin.h>

#include "reference/contract_tile.h"

namespace cutcheck {
namespace {

// r[j] holds 8 consecutive terms of column j; afterwards c[q] holds term q of columns 0..7.
inline void transpose8(const __m256 r[8], __m256 c[8]) {
  __m256 t[8], s[8];
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);      // (j,0)(j+1,0)(j,1)(j+1,1) | terms 4, 5
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);  // terms 2, 3 | 6, 7
  }
  for (int j = 0; j < 8; j += 4) {
    s[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);      // columns j..j+3, term 0 | 4
    s[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xee);  // term 1 | 5
    s[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);  // term 2 | 6
    s[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xee);  // term 3 | 7
  }
  for (int q = 0; q < 4; ++q) {
    c[q] = _mm256_permute2f128_ps(s[q], s[q + 4], 0x20);
    c[q + 4] = _mm256_permute2f128_ps(s[q], s[q + 4], 0x31);
  }
}

// Eight consecutive terms, as f32.
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// V: vec (V::lanes doubles), zero, splat, fma, store, and widen(c, d), which widens the
// 8 f32 of c into 8 / lanes vectors. G groups of 8 columns, R rows.
template <class V, int G, int R, class T>
void stream_of(int64_t K, const double* x, const T* const* w, double* out) {
  constexpr int W = 8 / V::lanes, width = 8 * G;
  typename V::vec acc[R][G * W];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < G * W; ++v) acc[i][v] = V::zero();
  const int64_t k8 = K / 8 * 8;
  for (int64_t k = 0; k < k8; k += 8)
    for (int g = 0; g < G; ++g) {
      __m256 r[8], c[8];
      for (int j = 0; j < 8; ++j) r[j] = load8(w[g * 8 + j] + k);
      transpose8(r, c);
      for (int q = 0; q < 8; ++q) {
        typename V::vec d[W];
        V::widen(c[q], d);
        for (int i = 0; i < R; ++i) {
          const typename V::vec xi = V::splat(x[i * K + k + q]);
          for (int v = 0; v < W; ++v) acc[i][g * W + v] = V::fma(xi, d[v], acc[i][g * W + v]);
        }
      }
    }
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < G * W; ++v) V::store(out + i * width + v * V::lanes, acc[i][v]);
  stream_terms(R, width, k8, K, K, x, w, out);  // the last K % 8 terms
}

template <class V, int G, class T>
void stream_rows(int rows, int64_t K, const double* x, const T* const* w, double* out) {
  switch (rows) {
    case 1: return stream_of<V, G, 1>(K, x, w, out);
    case 2: return stream_of<V, G, 2>(K, x, w, out);
    case 3: return stream_of<V, G, 3>(K, x, w, out);
    default: return stream_of<V, G, 4>(K, x, w, out);
  }
}

// A unit's term: its first `cols` columns (at most 8), zero beyond them, as f32; no load
// passes the columns' end. AVX-512 masks the load; AVX2 reads a short unit through a
// zeroed copy.
#ifdef __AVX512BW__
inline __m256 unit_term(const float* p, int cols) {
  return _mm512_castps512_ps256(_mm512_maskz_loadu_ps(__mmask16((1u << cols) - 1), p));
}
inline __m256 unit_term(const uint16_t* p, int cols) {
  const __m512i bits = _mm512_maskz_loadu_epi16(__mmask32((1u << cols) - 1), p);
  const __m256i wide = _mm256_cvtepu16_epi32(_mm512_castsi512_si128(bits));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
#else
template <class T>
inline __m256 unit_term(const T* p, int cols) {
  if (cols == 8) return load8(p);
  T part[8] = {};
  for (int j = 0; j < cols; ++j) part[j] = p[j];
  return load8(part);
}
#endif

// The side-by-side kernel (SideFn): a pass keeps the sums of U units (8 columns each)
// for each of R rows in registers, enough in flight to cover the multiply-add's latency,
// and adds term k to all of them before term k + 1. Always U units, so that the loop
// over them unrolls and the sums stay in registers: a pass of fewer repeats its first
// unit, whose repeated sums are not stored. With `shared`, every unit has the same lhs
// rows (one batch's columns), each row's term broadcast once for all units.
// With `full`, every unit has 8 columns: plain loads, and no masks to hold (AVX-512 has
// 7 mask registers for 8 units: one was reloaded from the stack on every term).
template <class V, int R, int U, bool shared, bool full, class T>
void side_pass(int64_t K, const int64_t* kr, int units, const SideUnit<T>* unit, double* out) {
  constexpr int W = 8 / V::lanes;
  typename V::vec acc[R][U * W];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < U * W; ++v) acc[i][v] = V::zero();
  const double* x[U];
  const T* w[U];
  int cols[U];
  for (int u = 0; u < U; ++u) {
    const SideUnit<T>& at = unit[u < units ? u : 0];
    x[u] = at.x, w[u] = at.w, cols[u] = at.cols;
  }
  for (int64_t k = 0; k < K; ++k) {
    typename V::vec xs[R];
    if constexpr (shared)
      for (int i = 0; i < R; ++i) xs[i] = V::splat(x[0][i * K + k]);
    // Unrolled whole, so that every sum has a register of its own.
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) {
      typename V::vec d[W];
      V::widen(full ? load8(w[u] + kr[k]) : unit_term(w[u] + kr[k], cols[u]), d);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const typename V::vec xi = shared ? xs[i] : V::splat(x[u][i * K + k]);
#pragma GCC unroll 2
        for (int v = 0; v < W; ++v) acc[i][u * W + v] = V::fma(xi, d[v], acc[i][u * W + v]);
      }
    }
  }
  // Every sum stored by a fixed index first: an index known only at run time would keep
  // the sums in memory throughout.
  alignas(64) double sums[U][R][8];
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
      for (int v = 0; v < W; ++v) V::store(sums[u][i] + v * V::lanes, acc[i][u * W + v]);
  for (int u = 0; u < U && u < units; ++u)
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < cols[u]; ++j) out[(u * R + i) * 8 + j] = sums[u][i][j];
}

// One pass over n <= U units, by the narrowest pass that holds them (U, U / 2, ...), so
// that a short pass does not repeat its first unit many times over.
template <class V, int R, int U, class T>
void side_fit(int64_t K, const int64_t* kr, int n, const SideUnit<T>* unit, double* out) {
  if constexpr (U > 1)
    if (n <= U / 2) return side_fit<V, R, U / 2>(K, kr, n, unit, out);
  bool shared = true, full = true;
  for (int u = 0; u < n; ++u) shared = shared && unit[u].x == unit[0].x, full = full && unit[u].cols == 8;
  if (shared && full) return side_pass<V, R, U, true, true>(K, kr, n, unit, out);
  if (shared) return side_pass<V, R, U, true, false>(K, kr, n, unit, out);
  if (full) return side_pass<V, R, U, false, true>(K, kr, n, unit, out);
  side_pass<V, R, U, false, false>(K, kr, n, unit, out);
}

// Passes of up to U units over the call's units; U such that R x U x W sums, 8 of them,
// stay in registers (AVX-512 has 32, AVX2 16).
template <class V, int R, class T>
void side_of(int64_t K, const int64_t* kr, int units, const SideUnit<T>* unit, double* out) {
  constexpr int U = 8 / (R * (8 / V::lanes)) > 0 ? 8 / (R * (8 / V::lanes)) : 1;
  for (int u0 = 0; u0 < units; u0 += U)
    side_fit<V, R, U>(K, kr, units - u0 < U ? units - u0 : U, unit + u0, out + u0 * R * 8);
}

template <class V, class T>
void side_rows(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<T>* unit, double* out) {
  switch (rows) {
    case 1: return side_of<V, 1>(K, kr, units, unit, out);
    case 2: return side_of<V, 2>(K, kr, units, unit, out);
    case 3: return side_of<V, 3>(K, kr, units, unit, out);
    default: return side_of<V, 4>(K, kr, units, unit, out);
  }
}

}  // namespace
}  // namespace cutcheck
