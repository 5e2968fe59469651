// The portable tile kernel: GCC vector extensions, which every target lowers to what it
// has; a separate multiply and add (the same bits as fused, see contract_tile.h).
// The vectors never cross a call boundary that is not inlined, so how a target without
// 32-byte registers would pass them does not matter.
#pragma GCC diagnostic ignored "-Wpsabi"

#include "reference/contract_tile.h"

namespace cutcheck {
namespace {

struct Generic {
  typedef double vec __attribute__((vector_size(32)));
  static constexpr int lanes = 4;
  static vec load(const double* p) {
    vec v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(double* p, vec v) { __builtin_memcpy(p, &v, sizeof v); }
  static vec splat(double x) { return vec{} + x; }
  static vec fma(vec a, vec b, vec c) { return a * b + c; }
};

}  // namespace

void tile_generic(int rows, int64_t kc, const double* a, const double* b, double* c, int64_t ldc) {
  tile_rows<Generic>(rows, kc, a, b, c, ldc);
}

// Eight columns of sums side by side, each taking its terms in ascending k.
template <class T>
void stream_plain(int rows, int64_t K, const double* x, const T* const* w, double* out) {
  constexpr int width = 8;
  for (int i = 0; i < rows; ++i) {
    double sum[width] = {};
    for (int64_t k = 0; k < K; ++k)
      for (int j = 0; j < width; ++j) sum[j] += x[i * K + k] * double(widen_term(w[j][k]));
    for (int j = 0; j < width; ++j) out[i * width + j] = sum[j];
  }
}

void stream_generic(int rows, int64_t K, const double* x, const float* const* w, double* out) {
  stream_plain(rows, K, x, w, out);
}

void stream_bf16_generic(int rows, int64_t K, const double* x, const uint16_t* const* w, double* out) {
  stream_plain(rows, K, x, w, out);
}

// Each unit's columns' sums side by side for each row, term k added to all of them
// before term k + 1.
template <class T>
void side_plain(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<T>* unit, double* out) {
  for (int u = 0; u < units; ++u)
    for (int i = 0; i < rows; ++i) {
      const SideUnit<T>& at = unit[u];
      double sum[8] = {};
      for (int64_t k = 0; k < K; ++k)
        for (int j = 0; j < at.cols; ++j) sum[j] += at.x[i * K + k] * double(widen_term(at.w[kr[k] + j]));
      for (int j = 0; j < at.cols; ++j) out[(u * rows + i) * 8 + j] = sum[j];
    }
}

void side_generic(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<float>* unit, double* out) {
  side_plain(rows, K, kr, units, unit, out);
}

void side_bf16_generic(int rows, int64_t K, const int64_t* kr, int units, const SideUnit<uint16_t>* unit, double* out) {
  side_plain(rows, K, kr, units, unit, out);
}

void pack_rows_plain(const float* src, const int64_t* base, int valid, int lanes, int64_t kc, double* dst) {
  for (int i = 0; i < valid; ++i) {
    const float* s = src + base[i];
    for (int64_t k = 0; k < kc; ++k) dst[k * lanes + i] = double(s[k]);
  }
  for (int i = valid; i < lanes; ++i)
    for (int64_t k = 0; k < kc; ++k) dst[k * lanes + i] = 0.0;
}

}  // namespace cutcheck
