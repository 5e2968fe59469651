// The oracle's cuts: each is the model's pieces (model.cpp) applied to its rows.
#include "oracle/oracle.h"

#include <fmt/format.h>

#include "core/error.h"
#include "model/signature.h"
#include "model/weights.h"
#include "oracle/cache.h"

namespace cutcheck {
namespace {

using Vec = Eigen::VectorXd;

std::vector<Vec> rows_of(const Tensor& x, int64_t dim) {
  std::vector<Vec> rows;
  auto v = x.as<float>();
  for (int64_t r = 0; r * dim < int64_t(v.size()); ++r)
    rows.push_back(Eigen::Map<const Eigen::VectorXf>(v.data() + r * dim, dim).cast<double>());
  return rows;
}

Tensor tensor_of(const std::vector<Vec>& rows, Shape shape) {
  Tensor t({DType::f32, std::move(shape)});
  auto v = t.as_mut<float>();
  for (size_t r = 0; r < rows.size(); ++r)
    for (Eigen::Index i = 0; i < rows[r].size(); ++i) v[r * size_t(rows[r].size()) + size_t(i)] = float(rows[r][i]);
  return t;
}

// The lowest index of the largest logit.
int32_t arg_max(std::span<const float> logits) {
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;
  return int32_t(best);
}

}  // namespace

Oracle::Oracle(ModelSpec spec, TensorMap weights) : spec_(std::move(spec)), weights_(std::move(weights)) {
  spec_.validate();
  check_weights(weights_, spec_, "oracle weights");
}

TensorMap Oracle::run(const Cut& cut, const TensorMap& in) {
  const CutSignature sig = signature(cut, spec_);
  for (const Port& port : sig.inputs) {
    auto it = in.find(port.name);
    if (it == in.end() || it->second.type() != port.type)
      throw InputError(fmt::format("oracle: {} needs input '{}' of type {}", cut.str(), port.name, port.type.str()));
    if (port.range)
      for (int32_t v : it->second.as<int32_t>())
        if (v < port.range->lo || v > port.range->hi)
          throw InputError(fmt::format("oracle: input '{}' holds {}, outside [{}, {}]", port.name, v, port.range->lo,
                                       port.range->hi));
  }
  const Family family = cut.family();
  const Part part = cut.part();
  const int64_t D = spec_.dim, V = spec_.vocab;

  // The rows' activations.
  std::vector<Vec> x;
  if (part == Part::whole || part == Part::embed) {
    for (int32_t token : in.at(sig.inputs[0].name).as<int32_t>()) x.push_back(embed(token));
  } else {
    x = rows_of(in.at("x"), D);
  }

  TensorMap out;
  if (part == Part::whole || part == Part::layer) {
    const int64_t first = part == Part::layer ? cut.layer : 0;
    const int64_t last = part == Part::layer ? cut.layer + 1 : spec_.layers;
    for (int64_t l = first; l < last; ++l) {
      if (family == Family::forward) {  // position 0, no cache: the row attends to itself
        Cache own(spec_.kv_width());
        x[0] = decode_layer(l, x[0], 0, own);
        continue;
      }
      Tensor k = in.at(k_cache_name(l)).clone(), v = in.at(v_cache_name(l)).clone();
      auto pos = in.at("pos").as<int32_t>();
      if (family == Family::decode) {
        Cache cache(k, v);
        x[0] = decode_layer(l, x[0], pos[0], cache);
      } else if (family == Family::batch) {
        for (size_t r = 0; r < x.size(); ++r) {
          Cache cache(k, v, int64_t(r));
          x[r] = decode_layer(l, x[r], pos[r], cache);
        }
      } else {
        Cache cache(k, v);
        x = prefill_layer(l, x, pos[0], cache);
      }
      out.emplace(k_cache_name(l), k);
      out.emplace(v_cache_name(l), v);
    }
  }

  if (part == Part::whole || part == Part::head) {
    if (family == Family::prefill) x = {x.back()};  // the head reads off the last row
    std::vector<Vec> logits;
    for (const Vec& row : x) logits.push_back(this->logits(row));
    Tensor l = tensor_of(logits, family == Family::batch ? Shape{int64_t(x.size()), V} : Shape{V});
    std::vector<int32_t> next;
    for (size_t r = 0; r < x.size(); ++r) next.push_back(arg_max(l.as<float>().subspan(r * size_t(V), size_t(V))));
    out.emplace("logits", l);
    out.emplace("next", family == Family::batch ? Tensor::of_i32({int64_t(next.size())}, next) : Tensor::scalar_i32(next[0]));
  } else {
    const bool rows = family == Family::batch || family == Family::prefill;
    out.emplace("x", tensor_of(x, rows ? Shape{int64_t(x.size()), D} : Shape{D}));
  }
  return out;
}

}  // namespace cutcheck
