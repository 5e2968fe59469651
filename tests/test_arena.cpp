// The interpreter without keep_values: intermediates in one arena reused across runs,
// element-wise chains, reshapes and cache updates written over the operand that dies at
// them, inputs given up written over in place. Every one of these is a fast path of the
// plain one (each value its own zeroed buffer, kept): the outputs must be the same bits,
// on every cut of a model, run after run (the arena holds the last run's values, so a
// kernel that left an element unwritten would show), and an input the caller still
// shares is never written.
#include <gmock/gmock.h>

#include <fmt/format.h>

#include <random>

#include "author/author.h"
#include "author/builder.h"
#include "core/error.h"
#include "core/half.h"
#include "harness/runner.h"
#include "model/signature.h"
#include "model/weights.h"
#include "program/inputs.h"

namespace cutcheck {
namespace {

std::vector<Cut> every_kind_of_cut() {
  return {Cut::decode(8),       Cut::prefill(3, 8),  Cut::batch(2, 8),        Cut::forward(),
          Cut::forward_layer(1), Cut::forward_head(), Cut::decode_embed(),     Cut::decode_layer(1, 8),
          Cut::decode_head(),    Cut::batch_embed(2), Cut::batch_layer(0, 2, 8), Cut::batch_head(2),
          Cut::prefill_layer(1, 3, 8), Cut::prefill_head(3)};
}

void expect_same_bits(const TensorMap& want, const TensorMap& got) {
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [name, t] : want) EXPECT_TRUE(t.same_bits(got.at(name))) << name;
}

// A deep copy, so that the copy given up shares no storage with the one kept.
TensorMap deep_copy(const TensorMap& m) {
  TensorMap out;
  for (const auto& [name, t] : m) out.emplace(name, t.clone());
  return out;
}

TEST(Arena, EveryCutGivesThePlainPathsBits) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    ModelSpec spec = builtin_spec("tiny");
    spec.dtype = dtype;
    const TensorMap weights = synthetic_weights(spec, 4);
    RunOptions lean;
    lean.keep_values = false;
    for (const Cut& cut : every_kind_of_cut()) {
      SCOPED_TRACE(cut.str() + " " + std::string(dtype_name(dtype)));
      const Program program = authored_program(cut, spec);
      Executable plain(program, weights), arena(program, weights, lean);
      for (uint64_t seed : {1, 2, 3}) {  // the arena holds the previous run's values
        const TensorMap in = random_inputs(program, seed);
        const TensorMap want = plain.run(in);
        expect_same_bits(want, arena.run(in));
        expect_same_bits(want, arena.run(deep_copy(in)));  // given up: written over
      }
    }
  }
}

// Decode{8} of the tiny spec, without keep_values.
Executable lean_decode(const Program& program) {
  RunOptions lean;
  lean.keep_values = false;
  return Executable(program, synthetic_weights(builtin_spec("tiny"), 5), lean);
}

TEST(Arena, AGivenUpCacheIsUpdatedInPlaceAndASharedOneIsNot) {
  const Program program = authored_program(Cut::decode(8), builtin_spec("tiny"));
  Executable e = lean_decode(program);
  const TensorMap in = random_inputs(program, 7);
  const std::string k = k_cache_name(0);

  TensorMap given = deep_copy(in);
  const std::byte* buffer = given.at(k).raw().data();
  const TensorMap out = e.run(std::move(given));
  EXPECT_EQ(out.at(k).raw().data(), buffer) << "the cache's own buffer carries the update";
  EXPECT_TRUE(out.at(k).sole_owner());

  const TensorMap kept = deep_copy(in);
  TensorMap shared = kept;  // shares every buffer with `kept`
  const TensorMap again = e.run(std::move(shared));
  EXPECT_NE(again.at(k).raw().data(), kept.at(k).raw().data());
  for (const auto& [name, t] : in) EXPECT_TRUE(t.same_bits(kept.at(name))) << name << " was written";
  expect_same_bits(out, again);
}

TEST(Arena, IntermediatesAreNotKept) {
  const Program program = authored_program(Cut::decode(8), builtin_spec("tiny"));
  Executable e = lean_decode(program);
  e.run(random_inputs(program, 1));
  EXPECT_THROW(e.value(*program.find("l0.attn_norm.sq")), Error);
  EXPECT_NO_THROW(e.value(*program.find(weight::wq(0))));
}

// A constant or iota larger than computed_once_max_bytes is not held between runs: it
// has a place among the intermediates, which an element-wise op then writes over, so each
// run must compute it again. Two runs on other inputs give the plain path's bits; a small
// constant is computed once and kept.
TEST(Arena, LargeValuesFromNothingAreComputedEachRun) {
  const int64_t rows = int64_t(computed_once_max_bytes / (64 * sizeof(float))) + 1;
  const TensorType wide{DType::f32, {rows, 64}};
  Builder b("large_constant");
  const ValueId x = b.input("x", wide);
  const ValueId ones = b.constant(1.0, wide, "ones");
  const ValueId counts = b.convert(b.iota(0, TensorType{DType::i32, {rows, 64}}, "counts.i32"), DType::f32, "counts");
  const ValueId small = b.constant(2.0, TensorType{DType::f32, {1, 64}}, "small");
  const ValueId shifted = b.binary(OpKind::add, b.binary(OpKind::add, x, ones, "plus_one"), counts, "shifted");
  b.output("y", b.binary(OpKind::multiply, shifted, shifted, "y"));
  b.output("s", b.binary(OpKind::add, small, small, "s"));
  const Program program = b.finish();
  RunOptions lean;
  lean.keep_values = false;
  Executable plain(program, {}), arena(program, {}, lean);
  EXPECT_GE(arena.arena_bytes(), 2 * wide.bytes());  // the ones and the counts have places of their own
  for (uint64_t seed : {1, 2, 3}) {
    const TensorMap in = random_inputs(program, seed);
    expect_same_bits(plain.run(in), arena.run(deep_copy(in)));
  }
  EXPECT_THROW(arena.value(ones), Error);
  EXPECT_NO_THROW(arena.value(small));
}

// A bf16 weight converted to f32 only to be a dot_general's rhs is contracted as stored:
// the same bits as converting it first (the plain path does), on the decode kernel (3
// rows) and the blocked one (6 rows), and no widened copy in the arena. A converted
// weight that something else reads too, or that is an output, is still converted.
TEST(Arena, Bf16WeightsAreContractedAsStored) {
  const int64_t N = 37, K = 40;
  auto program_of = [&](bool also_added, bool also_output) {
    Builder b("bf16_rhs");
    const ValueId x = b.input("x", {DType::f32, {3, K}}), rows = b.input("rows", {DType::f32, {6, K}});
    const ValueId wide = b.convert(b.weight("w", {DType::bf16, {N, K}}), DType::f32, "w.f32");
    b.output("y", b.dot(x, wide, {1}, {1}, "y"));
    b.output("z", b.dot(rows, wide, {1}, {1}, "z"));
    if (also_added) b.output("twice", b.binary(OpKind::add, wide, wide, "twice"));
    if (also_output) b.output("w.f32", wide);
    return b.finish();
  };
  Tensor w(TensorType{DType::bf16, {N, K}});
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  auto* bits = reinterpret_cast<uint16_t*>(w.raw_mut().data());
  for (int64_t i = 0; i < N * K; ++i) bits[i] = f32_to_bf16(value(rng));
  const TensorMap weights{{"w", w}};
  RunOptions lean;
  lean.keep_values = false;
  for (bool also_added : {false, true})
    for (bool also_output : {false, true}) {
      SCOPED_TRACE(fmt::format("also added {}, also an output {}", also_added, also_output));
      const Program program = program_of(also_added, also_output);
      Executable plain(program, weights), arena(program, weights, lean);
      // The widened weight, N x K f32, is the one intermediate, where it is made at all.
      EXPECT_EQ(arena.arena_bytes(), also_added && !also_output ? uint64_t(N * K * 4) : 0u);
      for (uint64_t seed : {1, 2}) {
        const TensorMap in = random_inputs(program, seed);
        expect_same_bits(plain.run(in), arena.run(in));
      }
    }
  // The cuts of a bf16 model, prefill rows past the decode kernel's: the same bits.
  ModelSpec spec = builtin_spec("tiny");
  spec.dtype = DType::bf16;
  const TensorMap model = synthetic_weights(spec, 6);
  for (const Cut& cut : {Cut::decode(8), Cut::prefill(7, 8), Cut::batch(5, 8), Cut::forward_head()}) {
    SCOPED_TRACE(cut.str());
    const Program program = authored_program(cut, spec);
    Executable plain(program, model), arena(program, model, lean);
    const TensorMap in = random_inputs(program, 9);
    expect_same_bits(plain.run(in), arena.run(in));
  }
}

}  // namespace
}  // namespace cutcheck
