// The tile kernel for AVX-512F, BW and VL (built with -mavx512f -mavx512bw -mavx512vl;
// run only where the CPU has all three). VL lets 256-bit operations use all 32 vector
// registers: without it the decode kernel's 8 x 8 transposes spilled to the stack.
// GCC 12's AVX-512 headers start some intrinsics from an undefined vector, which it then
// reports as maybe uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

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

namespace {

// The decode kernel (StreamFn) for AVX-512: groups of 8 columns, each column's terms read
// a cache line's worth (16 f32 or 32 bf16) at a time, four 128-bit blocks. The first step
// of the transpose shuffles whole blocks: block t of columns 0..3 goes into the four
// 128-bit lanes of one register, of columns 4..7 into another. Then one two-source
// permutation per pair of terms gathers [term q of columns 0..7 | term q + 1 of columns
// 0..7] as 16 f32; for bf16 the permutation also widens, putting each bf16 value in the
// upper half of a 32-bit lane and zeroing the lower half, which is the f32 of the same
// value. Each half is widened to double and added. Lane j of the sums is column j's, its
// terms in ascending k, as in the generic kernel. Two groups (16 columns) at a time: a
// group's sums form one chain of dependent adds, and with one chain the kernel waits on
// the adds' latency. Not more than two: with weight rows of 4 KiB (a 1B model) more than
// 16 columns put more than 16 lines in one L1 set, and from memory 32 streams read slower
// than 16. The widening stays a permutation into the upper half (an integer widening
// would turn a subnormal bf16 weight into a subnormal double, which multiplies slowly),
// and the adds stay fused. The measurements behind each choice: docs/performance.md,
// "The decode kernel".
template <class T>
struct Line {
  static constexpr int terms = 64 / int(sizeof(T));  // per column per step
  static constexpr int per_block = terms / 4;         // terms in a 128-bit block
  static constexpr int pairs = per_block / 2;         // permutations per block
};

// The permutation's indices for pair p of a block: output f32 m (m < 8: term 2p, column
// m; m >= 8: term 2p + 1, column m - 8) comes from a (lane c: column c) or b (lane c:
// column 4 + c). f32 elements index 32-bit lanes, bf16 ones 16-bit lanes, each bf16
// into the odd (upper) half of its f32, the even ones zeroed by the mask (pair_of).
template <class T>
__m512i pair_index(int p) {
  constexpr int n = Line<T>::per_block;
  alignas(64) int32_t f32[16];
  alignas(64) int16_t bf16[32];
  for (int m = 0; m < 16; ++m) {
    const int term = 2 * p + m / 8, column = m % 8;
    const int from = (column < 4 ? 0 : 4 * n) + (column % 4) * n + term;  // a's lanes, then b's
    f32[m] = from;
    bf16[2 * m] = 0;
    bf16[2 * m + 1] = int16_t(from);
  }
  return sizeof(T) == 4 ? _mm512_load_si512(f32) : _mm512_load_si512(bf16);
}

inline __m512 pair_of(__m512i a, __m512i index, __m512i b, float) {
  return _mm512_permutex2var_ps(_mm512_castsi512_ps(a), index, _mm512_castsi512_ps(b));
}
inline __m512 pair_of(__m512i a, __m512i index, __m512i b, uint16_t) {
  return _mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau, a, index, b));
}

// Four columns' lines (c[j]: the line of column j, four 128-bit blocks) regrouped by
// block: afterwards c[t] holds block t of columns 0..3, one to a 128-bit lane. Two rounds
// of block shuffles, a 4 x 4 transpose of blocks.
inline void blocks_by_term(__m512i c[4]) {
  const __m512i even01 = _mm512_shuffle_i32x4(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0));  // c0.0 c0.2 c1.0 c1.2
  const __m512i odd01 = _mm512_shuffle_i32x4(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1));   // c0.1 c0.3 c1.1 c1.3
  const __m512i even23 = _mm512_shuffle_i32x4(c[2], c[3], _MM_SHUFFLE(2, 0, 2, 0));
  const __m512i odd23 = _mm512_shuffle_i32x4(c[2], c[3], _MM_SHUFFLE(3, 1, 3, 1));
  c[0] = _mm512_shuffle_i32x4(even01, even23, _MM_SHUFFLE(2, 0, 2, 0));  // c0.0 c1.0 c2.0 c3.0
  c[1] = _mm512_shuffle_i32x4(odd01, odd23, _MM_SHUFFLE(2, 0, 2, 0));
  c[2] = _mm512_shuffle_i32x4(even01, even23, _MM_SHUFFLE(3, 1, 3, 1));
  c[3] = _mm512_shuffle_i32x4(odd01, odd23, _MM_SHUFFLE(3, 1, 3, 1));
}

// The terms before the first cache-line boundary of every column, 0 unless all of the
// `width` columns lie equally far from one (and on whole terms).
template <class T>
int64_t lead_to_line(int64_t K, const T* const* w, int width) {
  const uintptr_t offset = reinterpret_cast<uintptr_t>(w[0]) % 64;
  for (int j = 1; j < width; ++j)
    if (reinterpret_cast<uintptr_t>(w[j]) % 64 != offset) return 0;
  if (offset % sizeof(T) != 0) return 0;
  const int64_t lead = int64_t((64 - offset) % 64 / sizeof(T));
  return lead < K ? lead : K;
}

// A line of 64 bytes from p, of which only the elements set in `mask` are read (the others
// are zero, and may lie outside the column, before its start or past its end).
inline __m512i load_part(__mmask64 mask, uintptr_t p, float) {
  return _mm512_maskz_loadu_epi32(__mmask16(mask), reinterpret_cast<const void*>(p));
}
inline __m512i load_part(__mmask64 mask, uintptr_t p, uint16_t) {
  return _mm512_maskz_loadu_epi16(__mmask32(mask), reinterpret_cast<const void*>(p));
}

// One step of G groups of 8 columns: the line of terms [k, k + terms) of each column, its
// terms added in order. A `part` step adds only the terms in [from, to) and reads nothing
// of a column outside them: the columns' first line when they start past a line boundary
// (k is then negative: the line starts before them), and their last when it is partial.
// So a load reads one line, whole or in part (but for a column shorter than the distance
// to its first boundary, whose one part step spans two lines, reading only the column):
// a load across two lines cost more than whole loads gain (weights 16 bytes off a line:
// bf16 0.119 -> 0.130 ns a weight), and those terms in scalar code would
// cost a quarter of a bf16 decode step (32 of each column's 2048 terms; 1B shape, weights
// 16 bytes off a line). With `prefetch`, the next call's line at the same k is fetched
// into L2: a weight row's first lines would otherwise wait for memory, as the hardware's
// prefetcher starts afresh on each page. The loops are unrolled whole, so that the
// regrouped blocks stay in registers.
template <int R, int G, bool prefetch, bool part, class T>
__attribute__((always_inline)) inline void line_step(int64_t k, int64_t from, int64_t to, int64_t K, const double* x,
                                                     const T* const* w, const __m512i* index, __m512d (&acc)[R][G]) {
  using L = Line<T>;
  constexpr int width = 8 * G;
  if constexpr (prefetch)
#pragma GCC unroll 64
    for (int j = 0; j < width; ++j) _mm_prefetch(reinterpret_cast<const char*>(w[width + j] + k), _MM_HINT_T1);
  __mmask64 mask = 0;
  if constexpr (part) {
    const int64_t first = std::max<int64_t>(from - k, 0), end = std::min<int64_t>(to - k, L::terms);
    mask = (end == 64 ? ~0ull : (1ull << end) - 1) & ~((1ull << first) - 1);
  }
  auto line = [&](const T* column) {
    if constexpr (part) return load_part(mask, reinterpret_cast<uintptr_t>(column) + uintptr_t(k * int64_t(sizeof(T))), T{});
    else return _mm512_loadu_si512(column + k);
  };
  // a[g][t]: block t of group g's columns 0..3, b[g][t]: of columns 4..7.
  __m512i a[G][4], b[G][4];
#pragma GCC unroll 64
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 64
    for (int j = 0; j < 4; ++j) {
      a[g][j] = line(w[8 * g + j]);
      b[g][j] = line(w[8 * g + 4 + j]);
    }
#pragma GCC unroll 64
  for (int g = 0; g < G; ++g) blocks_by_term(a[g]), blocks_by_term(b[g]);
#pragma GCC unroll 64
  for (int t = 0; t < 4; ++t)
#pragma GCC unroll 64
    for (int p = 0; p < L::pairs; ++p) {
      const int64_t term = k + t * L::per_block + 2 * p;
      if (part && (term + 1 < from || term >= to)) continue;
#pragma GCC unroll 64
      for (int g = 0; g < G; ++g) {
        const __m512 f = pair_of(a[g][t], index[p], b[g][t], T{});
        const __m512d first = _mm512_cvtps_pd(_mm512_castps512_ps256(f));
        const __m512d second = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
        if (!part || term >= from)
          for (int i = 0; i < R; ++i) acc[i][g] = _mm512_fmadd_pd(_mm512_set1_pd(x[i * K + term]), first, acc[i][g]);
        if (!part || term + 1 < to)
          for (int i = 0; i < R; ++i) acc[i][g] = _mm512_fmadd_pd(_mm512_set1_pd(x[i * K + term + 1]), second, acc[i][g]);
      }
    }
}

// G groups of 8 columns, R rows; each line loaded once, whole, then regrouped in
// registers: weight rows of 4 KiB or a multiple (K = 2048 bf16) put every column's line
// at the same L1 set, and reading a line a block at a time took it from L2 four times
// (30% slower, against K = 2080). The terms before the columns' first line boundary go
// in a part step when every column lies equally far from its boundary (as the rows of one
// weight do when a row is a whole number of lines; else every load may cross a line), and
// the terms after the last whole step in another.
template <int R, int G, bool prefetch, class T>
void stream_lines(int64_t K, const double* x, const T* const* w, double* out) {
  using L = Line<T>;
  __m512i index[L::pairs];
  for (int p = 0; p < L::pairs; ++p) index[p] = pair_index<T>(p);
  __m512d acc[R][G];
  for (int i = 0; i < R; ++i)
    for (int g = 0; g < G; ++g) acc[i][g] = _mm512_setzero_pd();
  const int64_t lead = lead_to_line(K, w, 8 * G);
  if (lead > 0) line_step<R, G, false, true>(lead - L::terms, 0, lead, K, x, w, index, acc);
  const int64_t whole = lead + (K - lead) / L::terms * L::terms;
  for (int64_t k = lead; k < whole; k += L::terms) line_step<R, G, prefetch, false>(k, 0, K, K, x, w, index, acc);
  if (whole < K) line_step<R, G, false, true>(whole, whole, K, K, x, w, index, acc);
  for (int i = 0; i < R; ++i)
    for (int g = 0; g < G; ++g) _mm512_storeu_pd(out + i * 8 * G + 8 * g, acc[i][g]);
}

template <int G, bool prefetch, class T>
void stream_lines_rows(int rows, int64_t K, const double* x, const T* const* w, double* out) {
  switch (rows) {
    case 1: return stream_lines<1, G, prefetch>(K, x, w, out);
    case 2: return stream_lines<2, G, prefetch>(K, x, w, out);
    case 3: return stream_lines<3, G, prefetch>(K, x, w, out);
    default: return stream_lines<4, G, prefetch>(K, x, w, out);
  }
}

// Weights in cache: 16 columns, two independent chains of sums per row to hide the adds'
// latency, nothing prefetched. Below a line of terms per column (head_dim 8 scores), 8
// terms at a time transposed in registers (contract_stream_x86.h) rather than all of
// them in the scalar tail.
template <class T>
void stream_cached(int rows, int64_t K, const double* x, const T* const* w, double* out) {
  if (K >= Line<T>::terms) return stream_lines_rows<2, false>(rows, K, x, w, out);
  stream_rows<Avx512, 2>(rows, K, x, w, out);
}

}  // namespace

void stream_avx512(int rows, int64_t K, const double* x, const float* const* w, double* out) {
  stream_lines_rows<2, true>(rows, K, x, w, out);
}

void stream_bf16_avx512(int rows, int64_t K, const double* x, const uint16_t* const* w, double* out) {
  stream_lines_rows<2, true>(rows, K, x, w, out);
}

void stream_cached_avx512(int rows, int64_t K, const double* x, const float* const* w, double* out) {
  stream_cached(rows, K, x, w, out);
}

void stream_cached_bf16_avx512(int rows, int64_t K, const double* x, const uint16_t* const* w, double* out) {
  stream_cached(rows, K, x, w, out);
}

void side_avx512(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<float>* unit, double* out) {
  side_rows<Avx512>(rows, K, kr, units, unit, out);
}

void side_bf16_avx512(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<uint16_t>* unit, double* out) {
  side_rows<Avx512>(rows, K, kr, units, unit, out);
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
