#include "properties/generators.h"

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

rc::Gen<Case> gen_case_for(ModelSpec spec, std::vector<CutKind> kinds, ShapeSpace shapes) {
  return rc::gen::exec([spec, kinds, shapes] {
    Case c;
    c.spec = spec;
    c.cut.kind = *rc::gen::elementOf(kinds);
    const CutParams p = cut_params(c.cut.kind);
    const Family family = c.cut.family();
    if (p.layer) c.cut.layer = *inRange<int64_t>(0, c.spec.layers);
    if (p.rows) c.cut.rows = *gen_extent(1, 4, shapes.rows_max, *gen_large(shapes.large_share));
    if (p.ctx) {
      // The cache stays within its budget: a wide spec gets a shorter ctx.
      const int64_t layers = c.cut.part() == Part::whole ? c.spec.layers : 1;
      const int64_t per_position = layers * c.spec.kv_width() * (family == Family::batch ? c.cut.rows : 1);
      const int64_t lo = family == Family::prefill ? c.cut.rows : 1;
      const int64_t hi = std::max({lo, std::min<int64_t>(12, shapes.ctx_max),
                                   std::min(shapes.ctx_max, shapes.cache_floats / per_position)});
      c.cut.ctx = *gen_extent(lo, 12, hi, *gen_large(shapes.large_share));
    }
    // Tokens and positions are drawn as one container each, so that a case makes the same
    // number of draws whatever its rows: RapidCheck's exec redraws every draw after one it
    // shrinks from that draw's place in the sequence, and a draw per row would move the
    // seeds and the k scale to other places (other values) whenever the rows shrink. A
    // failure that needs large keys then lost them on 3 shrinks in 4, and stayed wide.
    const size_t rows = size_t(c.cut.row_count());
    c.tokens = *rc::gen::container<std::vector<int32_t>>(rows, inRange<int32_t>(0, int32_t(c.spec.vocab)));
    // Positions are drawn as a distance back from the last one the cache allows, a short
    // one half the time: tails of the cache are where tiles end. Shrinking goes toward
    // a full cache, so a smaller ctx keeps the bug that needed a long one.
    auto back_from = [](int32_t last) {
      return rc::gen::map(either(inRange<int32_t>(0, std::min(last, 2) + 1), inRange<int32_t>(0, last + 1)),
                          [last](int32_t back) { return last - back; });
    };
    const int32_t ctx = int32_t(c.cut.ctx);
    if (!p.ctx)  // no cache, no position
      c.positions.push_back(0);
    else if (family == Family::batch)
      c.positions = *rc::gen::container<std::vector<int32_t>>(rows, back_from(ctx - 1));
    else if (family == Family::prefill)
      c.positions.push_back(*back_from(ctx - int32_t(rows)));
    else
      c.positions.push_back(*back_from(ctx - 1));
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
