// The inner loop of the contraction kernel (kernels_contract.cpp): a tile of up to
// tile_rows_max output rows by two vectors of output columns continues its sums over a
// block of k, in order. Operands arrive packed and widened to double:
//   a[k * tile_rows_max + i]   the lhs element of row i, term k
//   b[k * width + j]           the rhs element of column j, term k (width = 2 vectors)
//   c[i * ldc + j]             the running sum of output (i, j), read and written back
// Every accumulator takes its terms one at a time in ascending k, exactly as the naive
// definition does. The multiply-add is fused where the machine has FMA: a product of two
// values widened from f32 (or bf16, f16) is exact in double, so fma(a, b, c) rounds once,
// as a * b + c does (docs/numerics.md).
//
// The template is instantiated once per instruction set, each in its own translation unit
// built for that set (contract_tile_*.cpp); this header includes nothing the standard
// library would instantiate, so no code built for a wider set can leak into the others.
#pragma once

#include <cstdint>

namespace cutcheck {

constexpr int tile_rows_max = 6;
constexpr int tile_width_max = 16;

// The matrix-vector kernel of a decode step (a few lhs rows): the weights are read once,
// straight from where they are stored, never packed. For `width` output columns at a
// time it sums, for each of `rows` lhs rows,
//   out[i * width + j] = sum over k of x[i * K + k] * w[j][k]
// from +0.0 in ascending k, in double: x holds the lhs rows already widened, w[j] points
// at column j's K consecutive terms (a weight row), f32 or bf16 (the bits of a bf16 value,
// widened exactly as it is loaded). Columns are loaded side by side and transposed in
// registers, so that each vector lane is one column's sum. w[width + j] points at the
// columns the next call will read (the same ones when there is none): a kernel may
// prefetch them, and reads nothing else through them. The kernels for weights in cache
// (TileKernel::from_cache) prefetch nothing and are handed other valid columns there.
constexpr int stream_rows_max = 4;
constexpr int stream_width_max = 16;
using StreamFn = void (*)(int rows, int64_t K, const double* x, const float* const* w, double* out);
using StreamBf16Fn = void (*)(int rows, int64_t K, const double* x, const uint16_t* const* w, double* out);

// The kernel for an rhs whose columns lie side by side (probs . v, and a weight the
// interpreter holds transposed: interpreter.h), in units of up to 8 columns: unit u's
// term k of column j is w[kr[k] + j] (w, kr: the unit's), its lhs rows x[i * K + k] are
// already widened to double, and for each of `rows` rows it sums
//   out[(u * rows + i) * 8 + j] = sum over k of x[i * K + k] * w[kr[k] + j]
// from +0.0 in ascending k, in double. No transpose: each term's columns are one load,
// and term k is added to every sum before term k + 1. Units may come from different
// batches (a head's 8 columns of v each), so that a call has enough sums in flight.
constexpr int side_units_max = 8;
template <class T>
struct SideUnit {
  const double* x;
  const T* w;
  int cols;
};
using SideFn = void (*)(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<float>* unit, double* out);
using SideBf16Fn = void (*)(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<uint16_t>* unit,
                            double* out);
struct SideKernel {
  SideFn f32;
  SideBf16Fn bf16;
};

// A tile kernel for one instruction set.
using TileFn = void (*)(int rows, int64_t kc, const double* a, const double* b, double* c, int64_t ldc);
// Packs `valid` f32 rows, each kc consecutive terms from src + base[i], widened, into
// dst[k * lanes + i]; zero for i from valid to lanes. (A transpose: the rows' terms are
// consecutive in memory, the packed block has each term's rows side by side.)
using PackFn = void (*)(const float* src, const int64_t* base, int valid, int lanes, int64_t kc, double* dst);
// A matrix-vector kernel for f32 and for bf16 weights, `width` output columns per call.
struct StreamKernel {
  int width;
  StreamFn f32;
  StreamBf16Fn bf16;
};
struct TileKernel {
  const char* isa;
  int width;  // output columns per tile
  TileFn run;
  PackFn pack_rows;
  // A decode step's weights come from memory on a large model and from cache on a small
  // one (stories260K's are 1 MB): a kernel that keeps the memory busy (few columns per
  // call, prefetching) is latency-bound on cached weights, where more columns' sums in
  // flight pay. Weights of at most `cache_bytes` per batch take `from_cache`.
  StreamKernel from_memory, from_cache;
  int64_t cache_bytes;
  SideKernel side;
};

// The packing of consecutive terms in plain loops (contract_tile_generic.cpp).
void pack_rows_plain(const float* src, const int64_t* base, int valid, int lanes, int64_t kc, double* dst);

// The kernels this machine can run, widest first; tile_kernel() is the first.
int tile_kernel_count();
const TileKernel& tile_kernel(int i = 0);

// The kernel of each instruction set, each in its own translation unit; the x86 ones are
// built on x86-64 only (CUTCHECK_X86_TILES).
void tile_generic(int rows, int64_t kc, const double* a, const double* b, double* c, int64_t ldc);
void tile_avx2(int rows, int64_t kc, const double* a, const double* b, double* c, int64_t ldc);
void tile_avx512(int rows, int64_t kc, const double* a, const double* b, double* c, int64_t ldc);
void pack_rows_avx512(const float* src, const int64_t* base, int valid, int lanes, int64_t kc, double* dst);
void stream_generic(int rows, int64_t K, const double* x, const float* const* w, double* out);
void stream_avx2(int rows, int64_t K, const double* x, const float* const* w, double* out);
void stream_avx512(int rows, int64_t K, const double* x, const float* const* w, double* out);
void stream_bf16_generic(int rows, int64_t K, const double* x, const uint16_t* const* w, double* out);
void stream_bf16_avx2(int rows, int64_t K, const double* x, const uint16_t* const* w, double* out);
void stream_bf16_avx512(int rows, int64_t K, const double* x, const uint16_t* const* w, double* out);
void side_generic(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<float>* unit, double* out);
void side_bf16_generic(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<uint16_t>* unit, double* out);
void side_avx2(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<float>* unit, double* out);
void side_bf16_avx2(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<uint16_t>* unit, double* out);
void side_avx512(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<float>* unit, double* out);
void side_bf16_avx512(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<uint16_t>* unit, double* out);
void stream_cached_avx512(int rows, int64_t K, const double* x, const float* const* w, double* out);
void stream_cached_bf16_avx512(int rows, int64_t K, const double* x, const uint16_t* const* w, double* out);

// A bf16 value's bits widened to f32 (exact: bf16 is the top half of an f32). Here rather
// than core/half.h's, so that no inline function with external linkage is built for a
// wider instruction set.
static inline float widen_term(float v) { return v; }
static inline float widen_term(uint16_t bits) {
  const uint32_t wide = uint32_t(bits) << 16;
  float f;
  __builtin_memcpy(&f, &wide, sizeof f);
  return f;
}

// A decode kernel's terms outside its vector steps, in scalar code: each of the `rows` x
// `width` sums in out, taken over the terms before `from` so far, goes on over [from, to)
// in order (K: the length of each lhs row). The product is exact, so a separate multiply
// and add round as the fused one does. Static, as widen_term is, so each instruction
// set's kernel has its own copy.
template <class T>
static inline void stream_terms(int rows, int width, int64_t from, int64_t to, int64_t K, const double* x,
                                const T* const* w, double* out) {
  if (from >= to) return;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < width; ++j) {
      double sum = out[i * width + j];
      for (int64_t k = from; k < to; ++k) sum += x[i * K + k] * double(widen_term(w[j][k]));
      out[i * width + j] = sum;
    }
}

// V: vec (a vector of `lanes` doubles), load, store, splat, fma(a, b, c) = a * b + c.
template <class V, int R>
inline void tile_of(int64_t kc, const double* a, const double* b, double* c, int64_t ldc) {
  constexpr int L = V::lanes;
  typename V::vec acc[R][2];
  for (int i = 0; i < R; ++i) {
    acc[i][0] = V::load(c + i * ldc);
    acc[i][1] = V::load(c + i * ldc + L);
  }
  for (int64_t k = 0; k < kc; ++k) {
    const typename V::vec b0 = V::load(b + k * 2 * L), b1 = V::load(b + k * 2 * L + L);
    for (int i = 0; i < R; ++i) {
      const typename V::vec ai = V::splat(a[k * tile_rows_max + i]);
      acc[i][0] = V::fma(ai, b0, acc[i][0]);
      acc[i][1] = V::fma(ai, b1, acc[i][1]);
    }
  }
  for (int i = 0; i < R; ++i) {
    V::store(c + i * ldc, acc[i][0]);
    V::store(c + i * ldc + L, acc[i][1]);
  }
}

template <class V>
inline void tile_rows(int rows, int64_t kc, const double* a, const double* b, double* c, int64_t ldc) {
  switch (rows) {
    case 1: return tile_of<V, 1>(kc, a, b, c, ldc);
    case 2: return tile_of<V, 2>(kc, a, b, c, ldc);
    case 3: return tile_of<V, 3>(kc, a, b, c, ldc);
    case 4: return tile_of<V, 4>(kc, a, b, c, ldc);
    case 5: return tile_of<V, 5>(kc, a, b, c, ldc);
    default: return tile_of<V, 6>(kc, a, b, c, ldc);
  }
}

}  // namespace cutcheck
