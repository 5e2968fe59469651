#include "properties/generators.h"

#include <cstring>

namespace cutcheck {

using rc::gen::element;
using rc::gen::inRange;

rc::Gen<ModelSpec> gen_spec(int64_t min_dim) {
  return rc::gen::exec([min_dim] {
    ModelSpec s;
    s.name = "random";
    s.kv_heads = *element<int64_t>(1, 2, 4);
    s.heads = s.kv_heads * *element<int64_t>(1, 2, 4);
    s.head_dim = 2 * *inRange<int64_t>(1, 5);
    s.dim = *inRange<int64_t>(min_dim, 25);
    s.ffn = *inRange<int64_t>(1, 25);
    s.vocab = *inRange<int64_t>(2, 41);
    s.layers = *inRange<int64_t>(1, 4);
    s.norm_eps = *element(1e-5, 1e-6, 1e-3, 1e-2);
    s.rope_theta = *element(10000.0, 500000.0, 100.0);
    s.rope_style = *element(RopeStyle::interleaved, RopeStyle::half);
    s.tied = *element(true, false);
    return s;
  });
}

rc::Gen<Case> gen_case(std::vector<CutKind> kinds, int64_t min_dim) {
  return rc::gen::exec([kinds, min_dim] { return *gen_case_for(*gen_spec(min_dim), kinds); });
}

rc::Gen<Case> gen_case_for(ModelSpec spec, std::vector<CutKind> kinds) {
  return rc::gen::exec([spec, kinds] {
    Case c;
    c.spec = spec;
    c.cut.kind = *rc::gen::elementOf(kinds);
    const CutParams p = cut_params(c.cut.kind);
    const Family family = c.cut.family();
    if (p.layer) c.cut.layer = *inRange<int64_t>(0, c.spec.layers);
    if (p.rows) c.cut.rows = *inRange<int64_t>(1, 5);
    if (p.ctx) c.cut.ctx = *inRange<int64_t>(family == Family::prefill ? c.cut.rows : 1, 13);
    const int64_t rows = c.cut.row_count();
    for (int64_t r = 0; r < rows; ++r) c.tokens.push_back(*inRange<int32_t>(0, int32_t(c.spec.vocab)));
    const int32_t ctx = int32_t(c.cut.ctx);
    if (!p.ctx)  // no cache, no position
      c.positions.push_back(0);
    else if (family == Family::batch)
      for (int64_t r = 0; r < rows; ++r) c.positions.push_back(*inRange<int32_t>(0, ctx));
    else if (family == Family::prefill)
      c.positions.push_back(*inRange<int32_t>(0, ctx - int32_t(rows) + 1));
    else
      c.positions.push_back(*inRange<int32_t>(0, ctx));
    c.weight_seed = *inRange<uint64_t>(0, 1000);
    c.data_seed = *inRange<uint64_t>(0, 1000);
    c.k_scale = *element(1.0f, 1.0f, 1.0f, 1000.0f);
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
    Case c = *gen_case({CutKind::decode, CutKind::batch, CutKind::decode_layer, CutKind::batch_layer}, 4);
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

std::vector<CutKind> whole_cut_kinds() { return {CutKind::decode, CutKind::batch, CutKind::prefill, CutKind::forward}; }

}  // namespace cutcheck
