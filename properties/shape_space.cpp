#include "properties/shape_space.h"

#include <algorithm>

#include "properties/choice.h"

namespace cutcheck {

rc::Gen<bool> gen_large(double share) {
  const int threshold = 1000 - int(std::clamp(share, 0.0, 1.0) * 1000 + 0.5);
  // The draw shrinks toward 0, so toward small.
  return rc::gen::map(rc::gen::inRange(0, 1000), [threshold](int u) { return u >= threshold; });
}

std::vector<int64_t> tile_boundaries(int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (int64_t p = 8; p - 1 <= hi; p *= 2)
    for (int64_t n : {p - 1, p, p + 1})
      if (n >= lo && n <= hi) out.push_back(n);
  return out;
}

rc::Gen<int64_t> gen_extent(int64_t lo, int64_t small_max, int64_t hi, bool large) {
  small_max = std::clamp(small_max, lo, hi);
  if (!large || small_max == hi) return rc::gen::inRange<int64_t>(lo, small_max + 1);
  std::vector<int64_t> boundaries = tile_boundaries(small_max + 1, hi);
  rc::Gen<int64_t> anywhere = rc::gen::inRange<int64_t>(small_max + 1, hi + 1);
  if (boundaries.empty()) return anywhere;
  // Boundaries first: a failure shrinks to the smallest boundary that still fails.
  return either(choice(boundaries), anywhere);
}

}  // namespace cutcheck
