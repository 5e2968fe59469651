#include "engine/engine_reference.h"

#include <fmt/format.h>

#include <memory>
#include <set>

#include "core/error.h"
#include "core/random.h"
#include "harness/generate.h"
#include "model/signature.h"

namespace cutcheck {

RequestExpectation expect_request(ReferenceRunner& reference, const EngineRequest& request, const BoundModel& model) {
  const ModelSpec& spec = reference.spec();
  const int64_t n = int64_t(request.prompt.size());
  std::set<int64_t> needed(request.positions.begin(), request.positions.end());
  for (int64_t k = 0; k < request.steps; ++k) needed.insert(n - 1 + k);
  RequestExpectation out;
  if (request.steps > 0) {
    GenerateOptions g;
    g.prompt = request.prompt;
    g.steps = request.steps;
    g.keep_logits = false;
    out.tokens = generate(reference, spec, g).tokens;
  }
  if (needed.empty()) return out;

  // One pass over the sequence's first R tokens, piece by piece.
  const int64_t R = *needed.rbegin() + 1;
  std::vector<int32_t> sequence = request.prompt;
  sequence.insert(sequence.end(), out.tokens.begin(), out.tokens.end());
  std::vector<Cut> pieces{Cut::batch_embed(R)};
  for (int64_t l = 0; l < spec.layers; ++l) pieces.push_back(Cut::prefill_layer(l, R, R));
  pieces.push_back(Cut::batch_head(R));
  TensorMap values{{"tokens", Tensor::of_i32({R}, std::vector<int32_t>(sequence.begin(), sequence.begin() + R))},
                   {"pos", Tensor::scalar_i32(0)}};
  std::vector<std::unique_ptr<PerturbedRuns>> runs;
  for (const Cut& piece : pieces) {
    TensorMap in;
    for (const Port& port : signature(piece, spec).inputs) {
      auto it = values.find(port.name);
      in.insert_or_assign(port.name, it != values.end() ? it->second : Tensor(port.type));  // empty caches
    }
    const Executable& e = reference.run_kept(piece, in);
    for (auto& [name, t] : e.outputs()) values.insert_or_assign(name, t);
    runs.push_back(std::make_unique<PerturbedRuns>(e.program(), [&e](ValueId v) -> const Tensor& { return e.value(v); },
                                                   model));
  }
  const Tensor& logits = values.at("logits");
  const int64_t V = spec.vocab;
  auto row = [&](const Tensor& t, int64_t p) { return t.as<float>().subspan(size_t(p * V), size_t(V)); };
  std::map<int64_t, LogSoftmaxBound> lp;
  for (int64_t p : needed) lp.emplace(p, LogSoftmaxBound(row(logits, p), model));
  Allowance logit_allowance(model);
  for (int r = 0; r < model.total_runs(); ++r) {
    TensorMap deviation;
    for (auto& piece : runs) {
      TensorMap handed;  // x goes on from piece to piece; each layer's caches are its own
      if (auto it = deviation.find("x"); it != deviation.end()) handed.emplace("x", it->second);
      deviation = piece->run(r, handed);
    }
    const Tensor& d = deviation.at("logits");
    logit_allowance.add(r, d);
    for (auto& [p, bound] : lp)
      bound.add_run(r, row(d, p), mix64(model.seed ^ 0x6c6f67, uint64_t(p) * 4096 + uint64_t(model.draws_of(r))));
  }
  const Tensor bounds = logit_allowance.bound();
  auto next = values.at("next").as<int32_t>();
  for (int64_t p : needed) {
    PositionExpectation x;
    auto z = row(logits, p), b = row(bounds, p);
    x.logits.assign(z.begin(), z.end());
    x.bounds.assign(b.begin(), b.end());
    x.lp = lp.at(p).result();
    x.next = next[size_t(p)];
    const int64_t step = p - (n - 1);
    if (step >= 0 && step < request.steps && out.tokens[size_t(step)] != x.next)
      throw Error(fmt::format("the reference's decode steps chose token {} at position {} where its prefill rows choose {}",
                              out.tokens[size_t(step)], p, x.next));
    out.at.emplace(p, std::move(x));
  }
  for (const Cut& piece : pieces) reference.forget(piece);
  return out;
}

}  // namespace cutcheck
