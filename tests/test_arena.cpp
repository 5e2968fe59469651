// The interpreter without keep_values: intermediates in one arena reused across runs,
// element-wise chains, reshapes and cache updates written over the operand that dies at
// them, inputs given up written over in place. Every one of these is a fast path of the
// plain one (each value its own zeroed buffer, kept): the outputs must be the same bits,
// on every cut of a model, run after run (the arena holds the last run's values, so a
// kernel that left an element unwritten would show), and an input the caller still
// shares is never written.
#include <gmock/gmock.h>

#include "author/author.h"
#include "core/error.h"
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

}  // namespace
}  // namespace cutcheck
