#include "harness/generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "harness/compose.h"
#include "core/checked.h"
#include "model/footprint.h"
#include "model/signature.h"

namespace cutcheck {

std::string via_name(Via via) {
  switch (via) {
    case Via::automatic: return "auto";
    case Via::decode: return "decode";
    case Via::prefill: return "prefill";
    case Via::batch: return "batch";
    case Via::pieces: return "pieces";
  }
  return "?";
}

Via parse_via(const std::string& name) {
  for (Via v : {Via::automatic, Via::decode, Via::prefill, Via::batch, Via::pieces})
    if (via_name(v) == name) return v;
  throw Error(fmt::format("unknown path '{}' (choose auto, decode, prefill, batch or pieces)", name));
}

namespace {

// The kv caches of every layer, zero at first, in the layout the path's cuts use.
TensorMap empty_caches(const ModelSpec& spec, int64_t ctx, bool batched) {
  TensorMap caches;
  Shape shape = batched ? Shape{1, ctx, spec.kv_heads, spec.head_dim} : Shape{ctx, spec.kv_heads, spec.head_dim};
  for (int64_t l = 0; l < spec.layers; ++l) {
    caches.emplace(k_cache_name(l), Tensor({DType::f32, shape}));
    caches.emplace(v_cache_name(l), Tensor({DType::f32, shape}));
  }
  return caches;
}

// The capacity a cut feeding positions up to `end` (exclusive) runs with when the caches
// grow: the smallest bucket of 64, 128, 256, ... holding them, at most `ctx`. Each bucket
// costs a program (authored, printed, parsed, planned: about 2 ms at stories260K), each
// step attends to its bucket's every position; starting at 64 rather than 16 saves two
// programs for what the first 64 steps spend on masked positions (256 stories260K tokens:
// measured in bench/generate.sh, docs/performance.md).
int64_t bucket_for(int64_t end, int64_t ctx) {
  int64_t bucket = 64;
  while (bucket < end && bucket < ctx) bucket *= 2;
  return std::min(bucket, ctx);
}

// Carries the caches into a larger capacity: the positions written so far are a prefix of
// each cache ([C, K, E], or [1, C, K, E] on the batch path), the new positions are zero.
void grow_caches(TensorMap& caches, int64_t capacity) {
  for (auto& [name, t] : caches) {
    Shape shape = t.shape();
    shape[shape.size() - 3] = capacity;
    Tensor bigger({DType::f32, shape});
    std::memcpy(bigger.raw_mut().data(), t.raw().data(), t.bytes());
    t = std::move(bigger);
  }
}

void take_caches(TensorMap& caches, TensorMap& outputs, const ModelSpec& spec) {
  caches.clear();
  for (int64_t l = 0; l < spec.layers; ++l)
    for (const std::string& name : {k_cache_name(l), v_cache_name(l)}) caches.emplace(name, std::move(outputs.at(name)));
}

std::vector<float> to_vector(const Tensor& t) {
  auto v = t.as<float>();
  return {v.begin(), v.end()};
}

struct Step {
  std::vector<float> logits;
  int32_t next;
};

// Feeds `tokens` from position `pos` through one cut of the path and returns what the
// last of them produces.
Step feed(CutRunner& runner, const ModelSpec& spec, Via via, int64_t ctx, TensorMap& caches,
          const std::vector<int32_t>& tokens, int64_t pos) {
  const int64_t R = int64_t(tokens.size());
  TensorMap in = std::move(caches);  // given up: the runner may update them in place
  TensorMap out;
  if ((via == Via::decode || via == Via::pieces || via == Via::batch) && R != 1)
    throw Error(fmt::format("the {} path feeds one token at a time", via_name(via)));
  if (via == Via::decode || (via == Via::automatic && R == 1)) {
    in["token"] = Tensor::scalar_i32(tokens[0]);
    in["pos"] = Tensor::scalar_i32(int32_t(pos));
    out = runner.run_giving(Cut::decode(ctx), std::move(in));
  } else if (via == Via::prefill || via == Via::automatic) {
    in["tokens"] = Tensor::of_i32({R}, tokens);
    in["pos"] = Tensor::scalar_i32(int32_t(pos));
    out = runner.run_giving(Cut::prefill(R, ctx), std::move(in));
  } else if (via == Via::batch) {
    in["tokens"] = Tensor::of_i32({1}, tokens);
    in["pos"] = Tensor::of_i32({1}, {int32_t(pos)});
    out = runner.run_giving(Cut::batch(1, ctx), std::move(in));
    out["logits"] = out.at("logits").reshaped({spec.vocab});
    out["next"] = out.at("next").reshaped({});
  } else {  // pieces: embed, each layer, head as separate programs
    in["token"] = Tensor::scalar_i32(tokens[0]);
    in["pos"] = Tensor::scalar_i32(int32_t(pos));
    out = run_pieces(runner, spec, pieces_of(Cut::decode(ctx), spec), in);
  }
  take_caches(caches, out, spec);
  return {to_vector(out.at("logits")), out.at("next").as<int32_t>()[0]};
}

}  // namespace

Generation generate(CutRunner& runner, const ModelSpec& spec, const GenerateOptions& options) {
  if (options.prompt.empty()) throw InputError("the prompt needs at least one token");
  for (int32_t t : options.prompt)
    if (t < 0 || t >= spec.vocab)
      throw InputError(fmt::format("prompt token {} is outside the vocabulary [0, {})", t, spec.vocab));
  if (options.steps < 0) throw InputError("steps must not be negative");
  const int64_t prompt = int64_t(options.prompt.size());
  const int64_t needed = checked_add(prompt, options.steps, "prompt + steps");
  const int64_t ctx = options.ctx > 0 ? options.ctx : needed;
  if (ctx > INT32_MAX) throw InputError(fmt::format("ctx = {} is beyond positions as i32 can count", ctx));
  if (needed - 1 > ctx)
    throw InputError(fmt::format("{} prompt tokens and {} steps need a cache of {} positions, but ctx is {}", prompt,
                                 options.steps, prompt + options.steps - 1, ctx));
  Generation g;
  if (options.steps == 0) return g;
  // The whole generation's memory, refused before the caches are made.
  const int64_t rows = options.via == Via::automatic || options.via == Via::prefill ? prompt : 1;
  check_run_fits(spec, rows > 1 ? Cut::prefill(std::min(rows, ctx), ctx) : Cut::decode(ctx), "generate --ctx");

  // Without a given ctx, the caches start small and grow through buckets as the
  // positions fill them, as serving engines do: a step's work and copies scale with the
  // positions written so far, not with the whole generation's. Positions past those a
  // step attends to change no output (docs/cuts.md), so the tokens and logits are those
  // of one static capacity, bit for bit (tests/test_real_model.cpp).
  const bool grow = options.ctx == 0;
  int64_t capacity = grow ? bucket_for(rows, ctx) : ctx;
  TensorMap caches = empty_caches(spec, capacity, options.via == Via::batch);
  auto run = [&](const std::vector<int32_t>& tokens, int64_t pos) {
    const int64_t end = pos + int64_t(tokens.size());
    if (end > capacity) {
      // The smaller capacity's programs are not run again; the runner may free them first.
      for (const Cut& cut : {Cut::decode(capacity), Cut::prefill(prompt, capacity), Cut::prefill(1, capacity),
                             Cut::batch(1, capacity)})
        runner.forget(cut);
      for (const Cut& cut : pieces_of(Cut::decode(capacity), spec))
        if (cut.ctx == capacity) runner.forget(cut);  // the layers; embed and head keep
      capacity = bucket_for(end, ctx);
      grow_caches(caches, capacity);
    }
    return feed(runner, spec, options.via, capacity, caches, tokens, pos);
  };

  // The prompt: all at once where the path takes rows, one token at a time otherwise.
  Step step{};
  bool chunked = options.via == Via::automatic || options.via == Via::prefill;
  if (chunked) {
    step = run(options.prompt, 0);
  } else {
    for (int64_t p = 0; p < prompt; ++p) step = run({options.prompt[size_t(p)]}, p);
  }
  for (int64_t k = 0;; ++k) {
    g.tokens.push_back(step.next);
    if (options.keep_logits) g.logits.push_back(std::move(step.logits));
    if (k + 1 == options.steps) break;
    step = run({g.tokens.back()}, prompt + k);
  }
  return g;
}

}  // namespace cutcheck
