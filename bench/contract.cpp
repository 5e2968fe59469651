#include "bench/contract.h"

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <random>
#include <string>
#include <vector>

#include "author/builder.h"
#include "bench/memory_read.h"
#include "core/half.h"
#include "core/quant_blocks.h"
#include "model/spec.h"
#include "quant/quantize.h"
#include "reference/interpreter.h"
#include "reference/parallel.h"

namespace cutcheck::bench {
namespace {

// The contractions of one layer of a `rows`-row prefill: x[rows, in] . w[out, in]^T for
// q, k, v, o, w1, w3 and w2 (the head is left out: one per model, not per layer).
struct Shape2 {
  int64_t out, in;
};

std::vector<Shape2> layer_projections(const ModelSpec& s) {
  const int64_t q = s.q_width(), kv = s.kv_width();
  return {{q, s.dim}, {kv, s.dim}, {kv, s.dim}, {s.dim, q}, {s.ffn, s.dim}, {s.ffn, s.dim}, {s.dim, s.ffn}};
}

constexpr int64_t prefill_rows = 128;

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

double layer_flops(const ModelSpec& s) {
  double f = 0;
  for (const Shape2& p : layer_projections(s)) f += 2.0 * double(prefill_rows) * double(p.out) * double(p.in);
  return f;
}

// One projection as the reference runs it: a dot_general op on f32 tensors.
struct Projection {
  Program program;
  Tensor x, w, y;
};

Projection projection(const Shape2& p, uint32_t seed) {
  Builder b("projection");
  ValueId x = b.input("x", {DType::f32, {prefill_rows, p.in}}), w = b.input("w", {DType::f32, {p.out, p.in}});
  b.output("y", b.dot(x, w, {1}, {1}, "y"));
  Projection r{b.finish(), Tensor::of_f32({prefill_rows, p.in}, random_floats(prefill_rows * p.in, seed)),
               Tensor::of_f32({p.out, p.in}, random_floats(p.out * p.in, seed + 1)), Tensor({DType::f32, {prefill_rows, p.out}})};
  return r;
}

void reference_layer(benchmark::State& state, const std::string& model, int threads) {
  const ModelSpec spec = builtin_spec(model);
  std::vector<Projection> layer;
  uint32_t seed = 1;
  for (const Shape2& p : layer_projections(spec)) layer.push_back(projection(p, seed += 2));
  KernelThreads scope(threads);
  for (auto _ : state)
    for (Projection& p : layer) {
      const Tensor* operands[] = {&p.x, &p.w};
      eval_dot_general(p.program.ops.back(), operands, p.y);
      benchmark::DoNotOptimize(p.y.as<float>().data());
    }
  state.counters["GFLOP/s"] = benchmark::Counter(layer_flops(spec) * double(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}

// The same shapes through cblas_dgemm on double operands (converted once, outside the loop).
void dgemm_layer(benchmark::State& state, const std::string& model, int threads) {
  const ModelSpec spec = builtin_spec(model);
  struct Operands {
    std::vector<double> x, w, y;
    Shape2 shape;
  };
  std::vector<Operands> layer;
  uint32_t seed = 1;
  for (const Shape2& p : layer_projections(spec)) {
    std::vector<float> x = random_floats(prefill_rows * p.in, seed += 2), w = random_floats(p.out * p.in, seed + 1);
    layer.push_back({{x.begin(), x.end()}, {w.begin(), w.end()}, std::vector<double>(size_t(prefill_rows * p.out)), p});
  }
  openblas_set_num_threads(threads);
  for (auto _ : state)
    for (Operands& o : layer) {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(prefill_rows), int(o.shape.out), int(o.shape.in), 1.0,
                  o.x.data(), int(o.shape.in), o.w.data(), int(o.shape.in), 0.0, o.y.data(), int(o.shape.out));
      benchmark::DoNotOptimize(o.y.data());
    }
  state.counters["GFLOP/s"] = benchmark::Counter(layer_flops(spec) * double(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}

// One decode row against llama1b's feed-forward weight (8192 x 2048) as stored: in bf16,
// or quantized, contracted as the reference does (panels of dequantized rows on the f32
// kernels) or by the definition's loop (a row dequantized, then one sum at a time).
void stored_decode(benchmark::State& state, DType stored, bool definition) {
  const int64_t N = 8192, K = 2048;
  Builder b("decode row");
  const ValueId x = b.input("x", {DType::f32, {1, K}}), w = b.input("w", {DType::f32, {N, K}});
  b.output("y", b.dot(x, w, {1}, {1}, "y"));
  const Program program = b.finish();
  const std::vector<float> values = random_floats(N * K, 7);
  Tensor lhs = Tensor::of_f32({1, K}, random_floats(K, 5)), rhs(TensorType{stored, {N, K}}), y({DType::f32, {1, N}});
  if (stored == DType::bf16) {
    auto* bits = reinterpret_cast<uint16_t*>(rhs.raw_mut().data());
    for (size_t i = 0; i < values.size(); ++i) bits[i] = f32_to_bf16(values[i]);
  } else {
    const uint64_t row_bytes = rhs.bytes() / uint64_t(N);
    for (int64_t n = 0; n < N; ++n)
      quantize_row_reference(*quant_format(stored), values.data() + n * K, K, rhs.raw_mut().data() + n * row_bytes);
  }
  const Tensor* operands[] = {&lhs, &rhs};
  KernelThreads scope(1);
  for (auto _ : state) {
    if (definition)
      dot_general_naive(program.ops.back(), operands, y);
    else
      eval_dot_general(program.ops.back(), operands, y);
    benchmark::DoNotOptimize(y.as<float>().data());
  }
  state.counters["weight MB"] = double(rhs.bytes()) / 1e6;
}

// Reads 1 GiB once per iteration, split between `threads` threads as a decode step splits
// its weights. One read first, untimed: the first pass over freshly written pages ran 30%
// slower than the next ones here (27 against 39 GB/s).
void read_bandwidth(benchmark::State& state, int threads) {
  std::vector<uint64_t> buffer(size_t(1) << 27, 1);
  const std::vector<std::span<const uint64_t>> blocks = {buffer};
  read_seconds(blocks, threads);
  for (auto _ : state) state.SetIterationTime(read_seconds(blocks, threads));
  const double bytes = double(buffer.size() * sizeof(uint64_t)) * double(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsRate);
  state.SetBytesProcessed(int64_t(bytes));
}

}  // namespace

void register_contractions() {
  for (int threads : {1, 2})
    benchmark::RegisterBenchmark(threads == 1 ? "memory/read_bandwidth" : "memory/read_bandwidth_2_threads", read_bandwidth,
                                 threads)
        ->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("contract/decode_row/bf16", stored_decode, DType::bf16, false)->Unit(benchmark::kMillisecond);
  for (DType stored : {DType::q4_0, DType::q4_K, DType::q8_0})
    for (bool definition : {false, true})
      benchmark::RegisterBenchmark(
          ("contract/decode_row/" + std::string(dtype_name(stored)) + (definition ? "/definition" : "/panels")).c_str(),
          stored_decode, stored, definition)
          ->Unit(benchmark::kMillisecond);
  for (std::string model : {"bench512", "llama1b"})
    for (int threads : {1, 2}) {
      const std::string suffix = model + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(("contract/reference/" + suffix).c_str(), reference_layer, model, threads)
          ->UseRealTime()->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("contract/dgemm/" + suffix).c_str(), dgemm_layer, model, threads)
          ->UseRealTime()->Unit(benchmark::kMillisecond);
    }
}

}  // namespace cutcheck::bench
