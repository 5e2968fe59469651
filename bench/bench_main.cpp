// cutcheck's benchmarks. Ratios between rows of one run are what to read; see
// bench/run.sh for the table and docs/performance.md for the figures.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "bench/contract.h"
#include "bench/decode_ceiling.h"
#include "bench/memory_read.h"
#include "bench/plain_loops.h"
#include "bench/workloads.h"
#include "harness/runner.h"
#include "model/signature.h"
#include "oracle/oracle.h"
#include "properties/check.h"

namespace cutcheck::bench {
namespace {

TensorMap zero_caches(const ModelSpec& spec, const Cut& cut) {
  TensorMap caches;
  for (const Port& p : signature(cut, spec).inputs)
    if (p.name.starts_with("k.") || p.name.starts_with("v.")) caches.emplace(p.name, Tensor(p.type));
  return caches;
}

// NaN for no values: a ratio of it then shows as missing rather than as a number.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? std::nan("") : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Greedy decode steps through Decode{ctx} on `runner`, positions 0, 1, ... ctx - 1 and
// round again; returns the tokens of the first `check` steps, and each timed step's
// seconds in `took` when given.
std::vector<int32_t> decode_steps(benchmark::State& state, CutRunner& runner, const ModelSpec& spec, int64_t ctx,
                                  size_t check = 0, std::vector<double>* took = nullptr) {
  const Cut cut = Cut::decode(ctx);
  TensorMap caches = zero_caches(spec, cut);
  int32_t token = 1;
  int64_t pos = 0;
  std::vector<int32_t> tokens;
  std::vector<std::string> cache_names;
  for (const auto& [name, t] : caches) cache_names.push_back(name);
  // One step, as generate takes it: the caches handed over (the runner updates them in
  // place) and the updated ones taken back.
  auto step = [&] {
    TensorMap in = std::move(caches);
    in["token"] = Tensor::scalar_i32(token);
    in["pos"] = Tensor::scalar_i32(int32_t(pos));
    TensorMap out = runner.run_giving(cut, std::move(in));
    token = out.at("next").as<int32_t>()[0];
    if (tokens.size() < check) tokens.push_back(token);
    caches.clear();
    for (const std::string& name : cache_names) caches.emplace(name, std::move(out.at(name)));
    pos = (pos + 1) % ctx;
  };
  // The first step, untimed, pays once what no later one does: authoring and planning
  // the program, and the first touch of its buffers (50 to 70 ms of llama1b's).
  step();
  if (took) took->reserve(size_t(state.max_iterations));
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    step();
    if (took) took->push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["tokens/s"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
  return tokens;
}

int64_t decode_ctx(const std::string& model) { return model.starts_with("llama1b") ? 32 : 64; }

// A decode's steps against its bound: the time to read the same weights once, as fast as
// this machine reads (read_threads), measured right after the steps. The memory's speed
// drifts from minute to minute on a shared host (two threads read a buffer at anything
// from 32.6 to 55.8 GB/s), so a bound measured apart from the
// steps moves every ratio with it. Medians, so that a step or a read the host interrupted
// moves neither (one interruption here held a 0.8 ms contraction for 8.7 ms).
void against_bound(benchmark::State& state, const TensorMap& weights, const std::vector<double>& steps) {
  const std::vector<std::span<const uint64_t>> words = weight_words(weights);
  std::vector<double> reads;
  for (int i = 0; i < 5; ++i) reads.push_back(read_seconds(words, read_threads));
  const double step = median(steps), bound = median(reads);
  state.counters["weight GB"] = double(weight_bytes(weights)) / 1e9;  // the bytes a step must read
  state.counters["step ms"] = step * 1e3;
  state.counters["bound ms"] = bound * 1e3;
  state.counters["time / bound"] = step / bound;
}

// The steps run back to back, as generate runs them: reads between them made steps up to
// a tenth faster, for reasons not found.
void reference_decode(benchmark::State& state, const std::string& model, int threads) {
  const Workload& w = workload(model);
  RunOptions run;
  run.threads = threads;
  run.keep_values = false;  // as cutcheck generate and run do: bf16 weights are never kept widened
  ReferenceRunner runner(w.spec, w.weights, ProgramEdit{}, run);
  std::vector<double> steps;
  decode_steps(state, runner, w.spec, decode_ctx(model), 0, &steps);
  against_bound(state, w.weights, steps);
}

// The yardstick for the reference's decode (decode_ceiling.h): the same arithmetic on a
// copy of the weights laid out for it, on two threads, against the same bound.
void decode_ceiling(benchmark::State& state, const std::string& model) {
  if (const std::string why = DecodeCeiling::unsupported(); !why.empty()) return state.SkipWithError(why.c_str());
  const Workload& w = workload(model);
  DecodeCeiling ceiling(w.weights);
  ceiling.pass_seconds(2);  // untimed: the sums the check reads
  if (!ceiling.agrees_with_definition()) return state.SkipWithError("the ceiling's sums differ from the definition's");
  std::vector<double> steps;
  steps.reserve(size_t(state.max_iterations));
  for (auto _ : state) {
    steps.push_back(ceiling.pass_seconds(2));
    state.SetIterationTime(steps.back());
  }
  against_bound(state, w.weights, steps);
}

void oracle_decode(benchmark::State& state, const std::string& model) {
  const Workload& w = workload(model);
  Oracle oracle(w.spec, w.weights);
  decode_steps(state, oracle, w.spec, decode_ctx(model));
}

void plain_decode(benchmark::State& state, const std::string& model) {
  const Workload& w = workload(model);
  const int64_t ctx = decode_ctx(model);
  PlainDecoder plain(w.spec, w.weights, ctx);
  int32_t token = 1;
  int64_t pos = 0;
  for (auto _ : state) {
    const std::vector<float>& logits = plain.forward(token, pos);
    token = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    pos = (pos + 1) % ctx;
  }
  state.counters["tokens/s"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
}

// The interpreter's per-op overhead: decode steps of stories260K (tiny contractions, so
// the time is mostly the ~570 ops' own) as `cutcheck generate` runs them, intermediates
// in the arena and the caches given up to be updated in place (lean), or with every value
// kept and the caches shared, as the error-bound pass runs them (kept). ops/s counts the
// program's ops that run each step.
void decode_step_overhead(benchmark::State& state, bool lean) {
  const Workload& w = workload("stories260K");
  const Cut cut = Cut::decode(64);
  RunOptions run;
  run.keep_values = !lean;
  ReferenceRunner runner(w.spec, w.weights, ProgramEdit{}, run);
  const Program program = authored_program(cut, w.spec);
  int64_t ops = 0;
  for (const Operation& op : program.ops) ops += op.operands.empty() ? 0 : 1;  // the others run once, when planned
  TensorMap caches = zero_caches(w.spec, cut);
  int32_t token = 1;
  int64_t pos = 0;
  for (auto _ : state) {
    TensorMap in = lean ? std::move(caches) : caches;
    in["token"] = Tensor::scalar_i32(token);
    in["pos"] = Tensor::scalar_i32(int32_t(pos));
    TensorMap out = lean ? runner.run_giving(cut, std::move(in)) : runner.run(cut, in);
    token = out.at("next").as<int32_t>()[0];
    caches.clear();
    for (auto& [name, t] : out)
      if (name.starts_with("k.") || name.starts_with("v.")) caches.emplace(name, std::move(t));
    pos = (pos + 1) % 64;
  }
  state.counters["ops/s"] = benchmark::Counter(double(state.iterations() * ops), benchmark::Counter::kIsRate);
  state.counters["ops/step"] = double(ops);
}

// Decode at a fixed ctx, for the growth of a step's time with the cache's capacity.
void reference_decode_ctx(benchmark::State& state) {
  const Workload& w = workload("stories260K");
  ReferenceRunner runner(w.spec, w.weights);
  decode_steps(state, runner, w.spec, state.range(0));
}

// Prefill of `rows` rows from position 0 into a cache of exactly that many positions.
void reference_prefill(benchmark::State& state, const std::string& model) {
  const Workload& w = workload(model);
  const int64_t rows = state.range(0);
  const Cut cut = Cut::prefill(rows, rows);
  ReferenceRunner runner(w.spec, w.weights);
  TensorMap in = zero_caches(w.spec, cut);
  std::vector<int32_t> tokens(static_cast<size_t>(rows));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7 + 1) % size_t(w.spec.vocab));
  in["tokens"] = Tensor::of_i32({rows}, tokens);
  in["pos"] = Tensor::scalar_i32(0);
  for (auto _ : state) benchmark::DoNotOptimize(runner.run(cut, in));
  state.counters["tokens/s"] =
      benchmark::Counter(double(state.iterations() * rows), benchmark::Counter::kIsRate);
}

// The property catalog at 100 cases each, as `cutcheck check` runs it.
void check_catalog(benchmark::State& state) {
  Subject subject = Subject::reference();
  int64_t cases = 0;
  for (auto _ : state)
    for (const Property& p : catalog()) cases += check(p, subject, {100, 1}).cases;
  state.counters["cases/s"] = benchmark::Counter(double(cases), benchmark::Counter::kIsRate);
}

// The plain loops must compute what the reference computes, or the comparison means nothing.
void plain_agrees(benchmark::State& state) {
  const Workload& w = workload("stories260K");
  ReferenceRunner runner(w.spec, w.weights);
  PlainDecoder plain(w.spec, w.weights, 64);
  std::vector<int32_t> reference = decode_steps(state, runner, w.spec, 64, 16);
  int32_t token = 1;
  for (size_t pos = 0; pos < reference.size(); ++pos) {
    const std::vector<float>& logits = plain.forward(token, int64_t(pos));
    token = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (token != reference[pos]) state.SkipWithError("the plain loops and the reference disagree");
  }
}

void register_all() {
  register_contractions();
  benchmark::RegisterBenchmark("sanity/plain_agrees_with_reference", plain_agrees)->Iterations(16);
  for (std::string model : {"stories260K", "bench512", "llama1b"}) {
    const bool big = model == "llama1b";
    // Wall-clock time: a step's work is split between threads, and the calling thread's
    // CPU time would leave out the others'.
    // The reference's steps on the 1B shape: nine, for a median (a step takes a tenth of a
    // second).
    auto iterations = [&](benchmark::internal::Benchmark* b, int steps = 3) {
      if (big) b->Iterations(steps);
      b->UseRealTime()->Unit(benchmark::kMillisecond);
    };
    iterations(benchmark::RegisterBenchmark(("decode/plain/" + model).c_str(), plain_decode, model));
    iterations(benchmark::RegisterBenchmark(("decode/reference/" + model).c_str(), reference_decode, model, 1), 9);
    iterations(benchmark::RegisterBenchmark(("decode/reference_2_threads/" + model).c_str(), reference_decode, model, 2), 9);
    iterations(benchmark::RegisterBenchmark(("decode/oracle/" + model).c_str(), oracle_decode, model));
  }
  // The 1B shape with its weights stored in bf16 (half the bytes to read) and in Q4_0
  // (dequantized a panel of rows at a time).
  for (std::string model : {"llama1b-bf16", "llama1b-q4_0"})
    for (int threads : {1, 2}) {
      const std::string name = (threads == 1 ? "decode/reference/" : "decode/reference_2_threads/") + model;
      benchmark::RegisterBenchmark(name.c_str(), reference_decode, model, threads)
          ->Iterations(9)->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  for (std::string model : {"bench512", "llama1b", "llama1b-bf16"})
    benchmark::RegisterBenchmark(("decode/ceiling_2_threads/" + model).c_str(), decode_ceiling, model)
        ->Iterations(9)->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("prefill/reference/stories260K", reference_prefill, std::string("stories260K"))
      ->Arg(16)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("prefill/reference/bench512", reference_prefill, std::string("bench512"))
      ->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("overhead/decode_step_lean/stories260K", decode_step_overhead, true)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("overhead/decode_step_kept/stories260K", decode_step_overhead, false)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("growth/decode_ctx/stories260K", reference_decode_ctx)
      ->Arg(64)->Arg(128)->Arg(256)->Arg(512)->Arg(1024)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("check/catalog_100_cases", check_catalog)->Iterations(1)->Unit(benchmark::kSecond);
}

}  // namespace
}  // namespace cutcheck::bench

int main(int argc, char** argv) {
  cutcheck::bench::register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
