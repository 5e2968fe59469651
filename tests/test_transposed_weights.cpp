// Small weights held transposed (Executable::hold_small_weights_transposed): a decode
// step's contraction against a weight small enough to stay in cache runs on a copy [K, N]
// made when the program is planned. The same sums over the same terms in the same order:
// the outputs must be the bits of the reference's kernels on the weights as given (a
// kernel table given explicitly, for which the interpreter rewrites nothing), on the cuts
// of an f32 and a bf16 model, with and without keep_values, run after run.
#include <gmock/gmock.h>

#include <fmt/format.h>

#include "author/builder.h"
#include "core/pages.h"
#include "harness/runner.h"
#include "model/weights.h"
#include "program/inputs.h"
#include "reference/contract_tile.h"

namespace cutcheck {
namespace {

void expect_same_bits(const TensorMap& want, const TensorMap& got) {
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [name, t] : want) EXPECT_TRUE(t.same_bits(got.at(name))) << name;
}

TEST(TransposedWeights, SmallWeightsGiveTheBitsOfTheWeightsAsGiven) {
  RunOptions as_given;
  as_given.kernels = kernel_for;
  for (DType dtype : {DType::f32, DType::bf16}) {
    ModelSpec spec = builtin_spec("tiny");
    spec.dtype = dtype;
    const TensorMap weights = synthetic_weights(spec, 8);
    for (const Cut& cut : {Cut::decode(8), Cut::batch(2, 8), Cut::batch(4, 8), Cut::prefill(3, 8),
                           Cut::decode_layer(1, 8), Cut::decode_head(), Cut::prefill(7, 8)})
      for (bool keep : {true, false}) {
        SCOPED_TRACE(fmt::format("{} {} keep_values {}", cut.str(), dtype_name(dtype), keep));
        const Program program = authored_program(cut, spec);
        RunOptions options;
        options.keep_values = keep;
        Executable fast(program, weights, options), plain(program, weights, as_given);
        EXPECT_EQ(plain.transposed_bytes(), 0u);
        // A bf16 weight is a dot_general's rhs only once its convert is dropped (keep_values off).
        const bool few_rows = cut.str().find("rows=7") == std::string::npos;
        if (few_rows && (dtype == DType::f32 || !keep)) {
          EXPECT_GT(fast.transposed_bytes(), 0u);
        }
        for (uint64_t seed : {1, 2}) {
          const TensorMap in = random_inputs(program, seed);
          expect_same_bits(plain.run(in), fast.run(in));
        }
      }
  }
}

// Which contractions qualify: up to stream_rows_max lhs rows, against a rank-2 weight
// whose terms are its rows, in a program whose weights total at most
// transposed_weights_max_bytes as f32; a weight read by two such contractions is
// transposed once, and executables given the same RunOptions::transposed share it.
TEST(TransposedWeights, OnlyTheWeightsOfSmallModelsDecodeStepsAreTransposed) {
  const int64_t K = 64, most_rows = transposed_weights_max_bytes / (K * 4);
  auto program_of = [&](int64_t rows, int64_t N, bool twice) {
    Builder b("small_weight");
    const ValueId x = b.input("x", {DType::f32, {rows, K}}), w = b.weight("w", {DType::f32, {N, K}});
    b.output("y", b.dot(x, w, {1}, {1}, "y"));
    if (twice) b.output("z", b.dot(x, w, {1}, {1}, "z"));
    return b.finish();
  };
  auto planned = [&](int64_t rows, int64_t N, bool twice) {
    const TensorMap weights{{"w", Tensor({DType::f32, {N, K}})}};
    return Executable(program_of(rows, N, twice), weights).transposed_bytes();
  };
  EXPECT_EQ(planned(1, 10, false), uint64_t(10 * K * 4));
  EXPECT_EQ(planned(4, 10, true), uint64_t(10 * K * 4));
  EXPECT_EQ(planned(5, 10, false), 0u);
  EXPECT_EQ(planned(1, most_rows, false), uint64_t(most_rows * K * 4));
  EXPECT_EQ(planned(1, most_rows + 1, false), 0u);

  RunOptions shared;
  shared.transposed = std::make_shared<TransposedWeights>();
  const TensorMap weights{{"w", Tensor({DType::f32, {10, K}})}};
  Executable one(program_of(1, 10, false), weights, shared), two(program_of(2, 10, true), weights, shared);
  EXPECT_EQ(one.transposed_bytes(), uint64_t(10 * K * 4));
  EXPECT_EQ(two.transposed_bytes(), uint64_t(10 * K * 4));
  EXPECT_EQ(shared.transposed->bytes(), uint64_t(10 * K * 4)) << "one copy for both";
}

// The copies' memory: from huge_page_min_bytes up, every byte asked for is there and
// writable, on a 2 MiB boundary (a huge page's, where the kernel gives them), whatever the
// size against 2 MiB; below it none (ordinary memory instead). The copies of one call
// share one block, each from a cache line on.
TEST(TransposedWeights, CopiesLieInOneBlock) {
  EXPECT_EQ(huge_page_memory(huge_page_min_bytes - 1), nullptr);
  for (uint64_t bytes : {huge_page_min_bytes, uint64_t(2) << 20, (uint64_t(2) << 20) + 1}) {
    std::shared_ptr<std::byte> memory = huge_page_memory(bytes);
    ASSERT_NE(memory, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(memory.get()) % (uint64_t(2) << 20), 0u) << bytes;
    std::memset(memory.get(), 0x5a, bytes);
    EXPECT_EQ(memory.get()[bytes - 1], std::byte{0x5a}) << bytes;
  }
  {  // stories260K's copies, 0.99 MiB of them, made when its decode step is planned
    const ModelSpec spec = builtin_spec("stories260K");
    const TensorMap weights = synthetic_weights(spec, 1);
    RunOptions options;
    options.keep_values = false;
    options.transposed = std::make_shared<TransposedWeights>();
    const Executable decode(authored_program(Cut::decode(8), spec), weights, options);
    ASSERT_GT(options.transposed->bytes(), huge_page_min_bytes);
    const std::vector<const Tensor*> copies = options.transposed->of({&weights.at("layers.0.attention.wq")});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(copies[0]->raw().data()) % (uint64_t(2) << 20), 0u) << "the first copy starts the huge page";
  }
  {  // a megabyte of copies: one block on a huge page's boundary
    const TensorMap big{{"w", Tensor({DType::f32, {1024, 256}})}};
    TransposedWeights transposed;
    const Tensor* copy = transposed.of({&big.at("w")})[0];
    EXPECT_EQ(reinterpret_cast<uintptr_t>(copy->raw().data()) % (uint64_t(2) << 20), 0u);
  }
  const TensorMap weights = synthetic_weights(builtin_spec("tiny"), 3);
  const Tensor &a = weights.at("layers.0.attention.wq"), &b = weights.at("layers.0.feed_forward.w2");
  TransposedWeights transposed;
  const Tensor a_again = a;  // another tensor over the same storage
  const std::vector<const Tensor*> copies = transposed.of({&a, &b, &a_again});
  ASSERT_EQ(copies.size(), 3u);
  EXPECT_EQ(copies[0], copies[2]) << "one copy of a weight asked for twice";
  EXPECT_EQ(copies[0]->shape(), (Shape{a.shape()[1], a.shape()[0]}));
  EXPECT_EQ(copies[1]->shape(), (Shape{b.shape()[1], b.shape()[0]}));
  const auto* first = copies[0]->raw().data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  EXPECT_EQ(copies[1]->raw().data(), first + (copies[0]->bytes() + 63) / 64 * 64) << "the next cache line of one block";
  EXPECT_EQ(copies[0]->as<float>()[1], a.as<float>()[a.shape()[1]]) << "[K, N]: term 0 of column 1";
  EXPECT_EQ(transposed.of({&b})[0], copies[1]) << "made once";
  EXPECT_EQ(transposed.bytes(), a.bytes() + b.bytes());
}

}  // namespace
}  // namespace cutcheck
