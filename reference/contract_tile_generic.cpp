// The portable tile kernel: GCC vector extensions, which every target lowers to what it
// has; a separate multiply and add (the same bits as fused, see contract_tile.h).
#include "reference/contract_tile.h"

// The vectors never cross a call boundary that is not inlined, so how a target without
// 32-byte registers would pass them does not matter.
#pragma GCC diagnostic ignored "-Wpsabi"

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

}  // namespace cutcheck
