// Bytes become a small spec, a cut of it, a tp width and the cut's inputs; the cut is
// authored, verified and interpreted, and two properties are checked on it: a whole cut
// equals its pieces bitwise, and a split equals the unsplit within the tolerance (its
// first layer's caches bitwise). A failed property aborts, so the fuzzer reports it.
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "core/limits.h"
#include "harness/compose.h"
#include "harness/split.h"
#include "harness/tolerance.h"
#include "model/sharding.h"
#include "model/weights.h"
#include "properties/case.h"
#include "properties/compare.h"

using namespace cutcheck;

namespace {

// Reads small numbers off the front of the input; zeros once it runs out.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  int64_t in(int64_t lo, int64_t hi) {  // [lo, hi]
    uint64_t v = at_ < size_ ? data_[at_++] : 0;
    return lo + int64_t(v % uint64_t(hi - lo + 1));
  }
  template <class T>
  T pick(std::initializer_list<T> choices) {
    return *(choices.begin() + in(0, int64_t(choices.size()) - 1));
  }

 private:
  const uint8_t* data_;
  size_t size_, at_ = 0;
};

[[noreturn]] void violated(const Case& c, const std::string& what) {
  std::fprintf(stderr, "property violated: %s\ncase: %s\n", what.c_str(), c.str().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  set_memory_limit(16 << 20);
  Bytes b(data, size);
  Case c;
  ModelSpec& s = c.spec;
  s.name = "fuzz";
  c.tp = b.pick<int64_t>({1, 2});
  s.kv_heads = c.tp * b.pick<int64_t>({1, 2});
  s.heads = s.kv_heads * b.pick<int64_t>({1, 2});
  s.head_dim = 2 * b.in(1, 3);
  s.dim = b.in(1, 12);
  s.ffn = c.tp * b.in(1, 6);
  s.vocab = b.in(2, 16);
  s.layers = b.in(1, 2);
  s.norm_eps = b.pick({1e-5, 1e-2});
  s.rope_theta = b.pick({10000.0, 100.0});
  s.rope_style = b.pick({RopeStyle::interleaved, RopeStyle::half});
  s.tied = b.in(0, 1) == 1;
  c.cut.kind = all_cut_kinds()[size_t(b.in(0, 13))];
  const CutParams p = cut_params(c.cut.kind);
  if (p.layer) c.cut.layer = b.in(0, s.layers - 1);
  if (p.rows) c.cut.rows = b.in(1, 3);
  if (p.ctx) c.cut.ctx = b.in(c.cut.family() == Family::prefill ? c.cut.rows : 1, 6);
  const int64_t rows = c.cut.row_count(), ctx = std::max<int64_t>(c.cut.ctx, 1);
  for (int64_t r = 0; r < rows; ++r) c.tokens.push_back(int32_t(b.in(0, s.vocab - 1)));
  if (!p.ctx)  // no cache, no position
    c.positions.push_back(0);
  else if (c.cut.family() == Family::batch)
    for (int64_t r = 0; r < rows; ++r) c.positions.push_back(int32_t(b.in(0, ctx - 1)));
  else if (c.cut.family() == Family::prefill)
    c.positions.push_back(int32_t(b.in(0, ctx - rows)));
  else
    c.positions.push_back(int32_t(b.in(0, ctx - 1)));
  c.weight_seed = uint64_t(b.in(0, 255));
  c.data_seed = uint64_t(b.in(0, 255));
  c.k_scale = b.pick({1.0f, 1000.0f});

  const TensorMap weights = synthetic_weights(s, c.weight_seed);
  const TensorMap in = case_inputs(c);
  ReferenceRunner reference(s, weights);
  const TensorMap out = reference.run(c.cut, in);

  if (c.cut.part() == Part::whole)
    if (auto diff = bitwise_difference(out, run_pieces(reference, s, pieces_of(c.cut, s), in)))
      violated(c, "composition: " + *diff);

  if (!split_unsupported(c.cut, s, c.tp)) {
    const Tolerance tolerance = Tolerance::bound(Precision::f32);
    Expected unsplit = reference.expect(c.cut, in, tolerance);
    unsplit.values = out;
    if (auto diff = split_difference(c.cut, unsplit, SplitRunner(s, weights, c.tp).run(c.cut, in), tolerance))
      violated(c, "split against unsplit: " + *diff);
  }
  return 0;
}
