// Where generated cases lie: mostly small (fast to run, quick to shrink, where most bugs
// already show), with a fixed share of large extents where real kernels break: cache
// lengths on and beside the tile sizes (15, 16, 17, 31, 32, 33, ...), rows past a vector
// width, wide heads and many query heads per kv head. docs/conformance.md ("Shape space")
// states the distribution; each choice shrinks toward the small side.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <vector>

namespace cutcheck {

struct ShapeSpace {
  int64_t ctx_max = 12;      // cache rows (ctx) of a cut
  int64_t rows_max = 4;      // rows of a batch or prefill cut
  double large_share = 0;    // chance that an extent (ctx, rows, a random spec) is drawn large
  // Floats one K (or V) cache of a case may hold; ctx is capped below ctx_max to stay in it,
  // so that a wide fixed spec does not make every large case a large allocation.
  int64_t cache_floats = int64_t(1) << 22;

  // The property catalog's: ctx <= 12, rows <= 4, never large.
  static ShapeSpace small() { return {}; }
  // A conformance campaign's default: ctx to 4096, rows to 64, a fifth of extents large.
  static ShapeSpace campaign() { return {4096, 64, 0.2}; }
};

// True with probability `share`. Shrinks to false.
rc::Gen<bool> gen_large(double share);

// An extent in [lo, hi]: when `large`, on or beside a power of two from 8 up (above small_max) (half the
// time) or anywhere above `small_max`; otherwise in [lo, small_max]. Shrinks toward lo.
rc::Gen<int64_t> gen_extent(int64_t lo, int64_t small_max, int64_t hi, bool large);

// 7, 8, 9, 15, 16, 17, 31, 32, 33, ... up to hi, at least lo: the sizes tiled kernels get wrong.
std::vector<int64_t> tile_boundaries(int64_t lo, int64_t hi);

}  // namespace cutcheck
