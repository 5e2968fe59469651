#include "conform/engine_reference.h"

#include <set>

#include "model/signature.h"

namespace cutcheck {

RequestExpectation expect_request(ReferenceRunner& reference, const EngineRequest& request, const Tolerance& tolerance) {
  const ModelSpec& spec = reference.spec();
  const int64_t n = int64_t(request.prompt.size());
  std::set<int64_t> needed(request.positions.begin(), request.positions.end());
  for (int64_t k = 0; k < request.steps; ++k) needed.insert(n - 1 + k);
  RequestExpectation out;
  std::vector<int32_t> sequence = request.prompt;
  for (int64_t p : needed) {  // increasing: a generating position extends the sequence first
    const int64_t rows = p + 1;
    TensorMap in;
    in["tokens"] = Tensor::of_i32({rows}, std::vector<int32_t>(sequence.begin(), sequence.begin() + rows));
    in["pos"] = Tensor::scalar_i32(0);
    for (int64_t l = 0; l < spec.layers; ++l) {
      in.emplace(k_cache_name(l), Tensor({DType::f32, {rows, spec.kv_heads, spec.head_dim}}));
      in.emplace(v_cache_name(l), Tensor({DType::f32, {rows, spec.kv_heads, spec.head_dim}}));
    }
    const Cut cut = Cut::prefill(rows, rows);
    const Expected e = reference.expect(cut, in, tolerance);
    reference.forget(cut);  // each length runs once
    PositionExpectation x;
    auto logits = e.values.at("logits").as<float>();
    auto bounds = e.bounds.at("logits").as<float>();
    x.logits.assign(logits.begin(), logits.end());
    x.bounds.assign(bounds.begin(), bounds.end());
    x.lp = log_probabilities(x.logits, x.bounds, tolerance.k);
    x.next = e.values.at("next").as<int32_t>()[0];
    if (p >= n - 1 && p - (n - 1) < request.steps) {
      out.tokens.push_back(x.next);
      sequence.push_back(x.next);
    }
    out.at.emplace(p, std::move(x));
  }
  return out;
}

}  // namespace cutcheck
