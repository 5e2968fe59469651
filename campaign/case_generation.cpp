#include "campaign/case_generation.h"

#include "core/error.h"
#include "model/sharding.h"
#include "properties/choice.h"
#include "properties/generators.h"

namespace cutcheck {

// The tp widths a case of `kind` may use.
std::vector<int64_t> widths_for(CutKind kind, const ConformOptions& o) {
  std::vector<int64_t> out;
  for (int64_t tp : o.tp) {
    if (tp > 1 && !kind_splits(kind)) continue;
    if (o.spec ? widths_unsplittable(*o.spec, tp).has_value() : !o.specs.splits(tp)) continue;
    out.push_back(tp);
  }
  return out;
}

rc::Gen<Case> gen_conform_case(const ConformOptions& o) {
  std::vector<CutKind> kinds;
  for (CutKind k : o.kinds)
    if (!widths_for(k, o).empty()) kinds.push_back(k);
  if (kinds.empty()) throw Error("no cut kind fits the --cuts and --tp given (and the spec's widths)");
  // Full size: each case is a check of its own, and RapidCheck would start it at size 0.
  return rc::gen::resize(100, rc::gen::exec([o, kinds] {
    const CutKind kind = *rc::gen::elementOf(kinds);
    const int64_t tp = *choice(widths_for(kind, o));  // shrinks toward the first width
    SpecSpace specs = o.specs;
    specs.tp = tp;
    specs.large_share = o.shapes.large_share;  // one share for every extent
    const ModelSpec spec = o.spec ? *o.spec : *gen_spec(specs);
    Case c = *gen_case_for(spec, {kind}, o.shapes);
    c.tp = tp;
    if (!o.large_keys) c.k_scale = 1;
    if (!o.weights.empty()) c.weight_seed = 0;  // the weights are given
    return c;
  }));
}

}  // namespace cutcheck
