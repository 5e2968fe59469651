// A test engine of the engine protocol (docs/engines.md) with a fault planted on request,
// to show that `cutcheck conform-engine` catches each and shrinks it (tests/cli_engines.sh).
//   cutcheck-test-engine FAULT describe
//   cutcheck-test-engine FAULT run --model DIR --format cutcheck --precision f32 --requests R --out O
// It runs cutcheck's reference, a Decode step per token, on the `cutcheck` model folder.
// FAULT is one of
//   none   correct
//   late   a token 0 (a BOS) goes before every prompt, so each position is evaluated one late
//   norm   the final norm's first gain is 1% larger than the file says
//   token  the second generated token of each request is the runner-up, not the arg-max
//   top3   correct, answering with the top 3 log-probabilities (and `include`) only
//   top3-gap  the same, leaving out the second most likely token
//   shift  every log-probability 1e-3 higher at positions 20 and on
// It declares f32, f16 and bf16 and computes in f32 on the weights as stored.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <string>

#include "core/error.h"
#include "core/files.h"
#include "core/json.h"
#include "harness/runner.h"
#include "model/signature.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

// The full vocabulary's log-probabilities, or with `top` > 0 [token, logprob] pairs of the
// `top` most likely and the `include` tokens (one left out by the top3-gap fault).
Json log_softmax(const std::vector<float>& z, int top, const Json& include, bool gap) {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  for (float v : z) m = std::max(m, double(v));
  for (float v : z) s += std::exp(double(v) - m);
  Json out = Json::array();
  for (float v : z) {
    const double lp = double(v) - m - std::log(s);
    out.push_back(std::isinf(lp) ? Json(nullptr) : Json(lp));
  }
  if (top == 0) return out;
  std::vector<int> order(z.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return z[size_t(a)] > z[size_t(b)]; });
  std::vector<int> chosen(order.begin(), order.begin() + std::min<size_t>(size_t(top) + gap, order.size()));
  if (gap && chosen.size() > 1) chosen.erase(chosen.begin() + 1);
  for (const Json& t : include)
    if (std::find(chosen.begin(), chosen.end(), t.get<int>()) == chosen.end()) chosen.push_back(t.get<int>());
  Json pairs = Json::array();
  for (int t : chosen) pairs.push_back({t, out[size_t(t)]});
  return pairs;
}

Json answer(ReferenceRunner& runner, const ModelSpec& spec, const Json& request, const std::string& fault, int top) {
  std::vector<int32_t> sequence;
  if (fault == "late") sequence.push_back(0);
  const int64_t shift = int64_t(sequence.size());
  for (const Json& t : request.at("prompt")) sequence.push_back(t.get<int32_t>());
  const int64_t prompt = int64_t(sequence.size()), steps = request.at("steps").get<int64_t>();
  std::map<int64_t, Json> wanted, include;
  for (size_t i = 0; i < request.at("positions").size(); ++i) {
    const int64_t p = request.at("positions")[i].get<int64_t>() + shift;
    wanted[p] = nullptr;
    include[p] = top ? request.at("include")[i] : Json::array();
  }
  const int64_t ctx = prompt + steps;
  TensorMap state;
  for (int64_t l = 0; l < spec.layers; ++l) {
    state.emplace(k_cache_name(l), Tensor({DType::f32, {ctx, spec.kv_heads, spec.head_dim}}));
    state.emplace(v_cache_name(l), Tensor({DType::f32, {ctx, spec.kv_heads, spec.head_dim}}));
  }
  Json tokens = Json::array();
  for (int64_t pos = 0; pos < std::max(prompt, prompt + steps - 1); ++pos) {
    TensorMap in = state;
    in["token"] = Tensor::scalar_i32(sequence[size_t(pos)]);
    in["pos"] = Tensor::scalar_i32(int32_t(pos));
    TensorMap out = runner.run(Cut::decode(ctx), in);
    for (auto& [name, t] : state) t = out.at(name);
    auto z = out.at("logits").as<float>();
    const std::vector<float> logits(z.begin(), z.end());
    if (wanted.count(pos)) {
      wanted[pos] = log_softmax(logits, top, include[pos], fault == "top3-gap");
      if (fault == "shift" && pos - shift >= 20)
        for (Json& lp : wanted[pos])
          if (lp.is_number()) lp = lp.get<double>() + 1e-3;
    }
    if (pos >= prompt - 1 && int64_t(tokens.size()) < steps) {  // this position generates a token
      int32_t next = out.at("next").as<int32_t>()[0];
      if (fault == "token" && pos == prompt) {  // the second generated token: the runner-up
        int32_t second = next == 0 ? 1 : 0;
        for (int32_t t = 0; t < int32_t(logits.size()); ++t)
          if (t != next && logits[size_t(t)] > logits[size_t(second)]) second = t;
        next = second;
      }
      tokens.push_back(next);
      sequence.push_back(next);
    }
  }
  Json logprobs = Json::array();
  for (auto& [p, lp] : wanted) logprobs.push_back(lp);
  return {{"id", request.at("id")}, {"tokens", tokens}, {"logprobs", logprobs}};
}

int main_(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[1] == "describe") {
    Json d = {{"format", "cutcheck-engine-1"}, {"name", "cutcheck-test-engine " + args[0]},
              {"model_formats", {"cutcheck"}}, {"precisions", {"f32", "f16", "bf16"}}, {"max_context", 80}};
    if (args[0].starts_with("top3")) d.update({{"logprobs", "top_k"}, {"max_top_k", 3}});
    std::cout << d.dump() << "\n";
    return 0;
  }
  std::map<std::string, std::string> opt;
  for (size_t i = 2; i + 1 < args.size(); i += 2) opt[args[i]] = args[i + 1];
  if (args.size() < 2 || args[1] != "run" || !opt.count("--model") || !opt.count("--requests") || !opt.count("--out")) {
    std::cerr << "usage: cutcheck-test-engine FAULT describe | FAULT run --model DIR ... --requests R --out O\n";
    return 2;
  }
  const std::string fault = args[0];
  const fs::path model = opt["--model"];
  const ModelSpec spec = ModelSpec::from_json(parse_json(read_file(model / "spec.json", max_bytes::spec), "spec.json"), "spec.json");
  TensorMap weights = read_weights(model, spec);
  if (fault == "norm") {
    Tensor gain = weights.at(weight::final_norm()).clone();
    gain.as_mut<float>()[0] *= 1.01f;
    weights[weight::final_norm()] = gain;
  }
  ReferenceRunner runner(spec, weights);
  const Json requests = parse_json(read_file(opt["--requests"], max_bytes::engine_case_record), "requests");
  Json results = Json::array();
  const int top = int(requests.at("top_k").get<int64_t>());
  for (const Json& r : requests.at("requests")) results.push_back(answer(runner, spec, r, fault, top));
  write_file_atomic(opt["--out"], Json{{"format", "cutcheck-engine-1"}, {"results", results}}.dump() + "\n");
  return 0;
}

}  // namespace
}  // namespace cutcheck

int main(int argc, char** argv) {
  try {
    return cutcheck::main_(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "cutcheck-test-engine: " << e.what() << "\n";
    return 1;
  }
}
