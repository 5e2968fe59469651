#include "properties/generators.h"

#include <algorithm>
#include <cstring>

#include "model/sharding.h"
#include "properties/choice.h"

namespace cutcheck {

using rc::gen::element;
using rc::gen::inRange;

rc::Gen<ModelSpec> gen_spec(int64_t min_dim) { return gen_spec(SpecSpace{min_dim}); }

rc::Gen<Case> gen_case(std::vector<CutKind> kinds, int64_t min_dim) {
  return rc::gen::exec([kinds, min_dim] { return *gen_case_for(*gen_spec(min_dim), kinds); });
}

namespace {

// Where a position lies: a distance back from the last position the cache allows, `steps`
// rows (0, 1 or 2: the tail of a cache is where its last tile ends) or, when steps < 0,
// a share of the whole range in 65536ths. Both shrink toward 0: a full cache.
struct Back {
  int32_t steps = 0;
  int32_t share = 0;
  int32_t from(int32_t last) const {
    const int64_t back = steps >= 0 ? std::min(steps, last) : (int64_t(share) * (int64_t(last) + 1)) >> 16;
    return int32_t(last - back);
  }
};

rc::Gen<Back> gen_back() {
  return either(rc::gen::map(inRange<int32_t>(0, 3), [](int32_t steps) { return Back{steps, 0}; }),
                rc::gen::map(inRange<int32_t>(0, 1 << 16), [](int32_t share) { return Back{-1, share}; }));
}

}  // namespace

// The order of the draws is what shrinking follows. RapidCheck's exec shrinks them one
// by one in order, and each time it takes a shrink of a draw it makes every later draw
// again as first drawn (and never goes back to an earlier one). So:
// - a position is a distance back from the end (Back), drawn before ctx: a distance
//   shrunk to 0 keeps the case at the end of its cache while ctx shrinks under it (drawn
//   after ctx, it would come back at its first value with every smaller ctx tried, and a
//   failure that needs the cache's tail would keep a long cache);
// - tokens and positions are one draw each, not one per row: the draws after them (the
//   seeds, the k scale) keep their places, and so their values, when the rows shrink (a
//   failure that needs large keys would lose them on 3 shrinks in 4, and keep its rows).
rc::Gen<Case> gen_case_for(ModelSpec spec, std::vector<CutKind> kinds, ShapeSpace shapes) {
  return rc::gen::exec([spec, kinds, shapes] {
    Case c;
    c.spec = spec;
    c.cut.kind = *rc::gen::elementOf(kinds);
    const CutParams p = cut_params(c.cut.kind);
    const Family family = c.cut.family();
    if (p.layer) c.cut.layer = *inRange<int64_t>(0, c.spec.layers);
    if (p.rows) c.cut.rows = *gen_extent(1, 4, shapes.rows_max, *gen_large(shapes.large_share));
    const size_t rows = size_t(c.cut.row_count());
    std::vector<Back> backs;  // batch: one per row; decode and prefill: one (the first row's)
    if (p.ctx) backs = *rc::gen::container<std::vector<Back>>(family == Family::batch ? rows : 1, gen_back());
    if (p.ctx) {
      // The cache stays within its budget: a wide spec gets a shorter ctx.
      const int64_t layers = c.cut.part() == Part::whole ? c.spec.layers : 1;
      const int64_t per_position = layers * c.spec.kv_width() * (family == Family::batch ? c.cut.rows : 1);
      const int64_t lo = family == Family::prefill ? c.cut.rows : 1;
      const int64_t hi = std::max({lo, std::min<int64_t>(12, shapes.ctx_max),
                                   std::min(shapes.ctx_max, shapes.cache_floats / per_position)});
      c.cut.ctx = *gen_extent(lo, 12, hi, *gen_large(shapes.large_share));
    }
    c.tokens = *rc::gen::container<std::vector<int32_t>>(rows, inRange<int32_t>(0, int32_t(c.spec.vocab)));
    // The last position a row may take: each row of a prefill takes one past the first's.
    const int32_t last = int32_t(c.cut.ctx) - (family == Family::prefill ? int32_t(rows) : 1);
    for (const Back& b : backs) c.positions.push_back(b.from(last));
    if (!p.ctx) c.positions.push_back(0);  // no cache, no position
    c.weight_seed = *inRange<uint64_t>(0, 1000);
    c.data_seed = *inRange<uint64_t>(0, 1000);
    c.k_scale = *choice_of(1.0f, 1.0f, 1.0f, 1000.0f);
    return c;
  });
}

void widen_for_tp(ModelSpec& s, int64_t tp) {
  const int64_t group = s.heads / s.kv_heads;
  if (s.kv_heads % tp != 0) s.kv_heads = tp;
  s.heads = s.kv_heads * group;
  s.ffn = (s.ffn + tp - 1) / tp * tp;
}

rc::Gen<Case> gen_split_case() {
  return rc::gen::exec([] {
    Case c = *gen_case(splitting_kinds(), 4);
    c.tp = *element<int64_t>(1, 2, 4);
    widen_for_tp(c.spec, c.tp);
    return c;
  });
}

rc::Gen<Cut> gen_any_cut(const ModelSpec& spec) {
  return rc::gen::exec([spec] {
    Cut c;
    c.kind = *rc::gen::elementOf(all_cut_kinds());
    // The boundaries are where refusals go wrong: favour them.
    c.layer = *rc::gen::oneOf(element<int64_t>(-1, 0, spec.layers - 1, spec.layers), inRange<int64_t>(-1, spec.layers + 2));
    c.rows = *rc::gen::oneOf(element<int64_t>(0, 1), inRange<int64_t>(0, 8));
    c.ctx = *rc::gen::oneOf(element<int64_t>(0, 1, c.rows, c.rows - 1), inRange<int64_t>(0, 8));
    return c;
  });
}

rc::Gen<TensorMap> gen_tensor_map() {
  return rc::gen::exec([] {
    TensorMap out;
    int n = *inRange(0, 5);
    for (int i = 0; i < n; ++i) {
      std::string name = *element<std::string>("a", "x.0", "layers.1.attention.wq", "k.3", "__x", "名前");
      DType dtype = *element(DType::f32, DType::i32, DType::i1);
      Shape shape;
      int rank = *inRange(0, 4);
      for (int d = 0; d < rank; ++d) shape.push_back(*inRange<int64_t>(0, 5));
      Tensor t({dtype, shape});
      auto bytes = t.raw_mut();
      std::vector<uint8_t> fill = *rc::gen::container<std::vector<uint8_t>>(bytes.size(), rc::gen::arbitrary<uint8_t>());
      if (dtype == DType::i1)
        for (uint8_t& b : fill) b &= 1;
      if (!fill.empty()) std::memcpy(bytes.data(), fill.data(), bytes.size());  // an empty vector has no data()
      out.insert_or_assign(name, std::move(t));
    }
    return out;
  });
}

}  // namespace cutcheck
