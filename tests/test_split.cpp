// tp splits: sharding, the collectives' semantics, and chips that do not match.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include "author/author.h"
#include "core/error.h"
#include "harness/split.h"
#include "model/sharding.h"
#include "model/weights.h"
#include "program/split.h"
#include "program/text.h"
#include "reference/chips.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;
using test::floats;

// Chip `chip` of `n`: y = collective(x), for the collective line given.
Program chip_program(int chip, int n, const std::string& collective) {
  return parse_and_verify(fmt::format("program \"c\"\nchip {} of {}\ninput %x : f32[2]\n{}\noutput y = %y\n", chip, n,
                                      collective));
}

TEST(Collectives, AllReduceSumsInDoubleAndAllGatherConcatenates) {
  const std::string reduce = "%y = all_reduce %x {kind = add, replica_groups = [[0, 1, 2]]} : f32[2]";
  std::vector<Executable> chips;
  for (int c = 0; c < 3; ++c) chips.emplace_back(chip_program(c, 3, reduce), TensorMap{});
  std::vector<Executable*> ptrs{&chips[0], &chips[1], &chips[2]};
  // 1e8 + 4 + 4 summed in f32 stays 1e8 (each + 4 is a tie, rounded to even); in double
  // it is 100000008, an f32.
  auto out = run_chips(ptrs, {{{"x", Tensor::of_f32({2}, {1e8f, 1})}},
                              {{"x", Tensor::of_f32({2}, {4, 2})}},
                              {{"x", Tensor::of_f32({2}, {4, 3})}}});
  for (auto& o : out) EXPECT_EQ(floats(o.at("y")), (std::vector<float>{100000008.0f, 6}));

  const std::string gather = "%y = all_gather %x {all_gather_dim = 0, replica_groups = [[1, 0]]} : f32[4]";
  std::vector<Executable> g;
  for (int c = 0; c < 2; ++c) g.emplace_back(chip_program(c, 2, gather), TensorMap{});
  auto gathered = run_chips({&g[0], &g[1]}, {{{"x", Tensor::of_f32({2}, {1, 2})}}, {{"x", Tensor::of_f32({2}, {3, 4})}}});
  EXPECT_EQ(floats(gathered[0].at("y")), (std::vector<float>{3, 4, 1, 2}));  // the group's order: chip 1, then 0
  EXPECT_EQ(floats(gathered[1].at("y")), (std::vector<float>{3, 4, 1, 2}));
}

TEST(Collectives, MismatchedChipsAreAnErrorNotAHang) {
  const std::string reduce = "%y = all_reduce %x {kind = add, replica_groups = [[0, 1]]} : f32[2]";
  Program with = chip_program(0, 2, reduce);
  Program without = parse_and_verify("program \"c\"\nchip 1 of 2\ninput %x : f32[2]\n%y = add %x, %x : f32[2]\noutput y = %y\n");
  try {
    verify_split({&with, &without});
    FAIL();
  } catch (const VerifyError& e) {
    EXPECT_THAT(e.what(), HasSubstr("chip 1 ends after 0 collectives, chip 0 goes on to %y = all_reduce of f32[2]"));
  }
  // Run anyway, skipping the check: chip 1 finishes while chip 0 waits.
  Executable a(with, {}), b(without, {});
  TensorMap x{{"x", Tensor::of_f32({2}, {1, 2})}};
  try {
    run_chips({&a, &b}, {x, x});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("chip 1 reached the end while chip 0 reached %y (all_reduce)"));
  }
  // Shapes that differ.
  Program wide = parse_and_verify("program \"c\"\nchip 1 of 2\ninput %x : f32[3]\n%y = all_reduce %x {kind = add, replica_groups = [[0, 1]]} : f32[3]\noutput y = %y\n");
  EXPECT_THROW(verify_split({&with, &wide}), VerifyError);
  Executable w(wide, {});
  try {
    run_chips({&a, &w}, {x, {{"x", Tensor::of_f32({3}, {1, 2, 3})}}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the collectives do not match"));
  }
  // A chip line that does not fit.
  Program stray = chip_program(0, 2, reduce);
  EXPECT_THROW(verify_split({&with, &stray}), VerifyError);
}

TEST(Sharding, CachesSplitByKvHeadsAndGatherBack) {
  Tensor cache({DType::f32, {3, 4, 2}});  // [C, K, E]
  auto v = cache.as_mut<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  Tensor c1 = shard_cache(cache, 2, 1);
  EXPECT_EQ(c1.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(floats(c1), (std::vector<float>{4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23}));
  EXPECT_TRUE(gather_cache({shard_cache(cache, 2, 0), c1}).same_bits(cache));
}

TEST(Sharding, WeightsSplitMegatronStyle) {
  ModelSpec spec = builtin_spec("stories260K");
  spec.ffn = 176;  // divisible by 4
  TensorMap w = synthetic_weights(spec, 1);
  TensorMap chip = shard_weights(w, spec, 4, 3);
  EXPECT_EQ(chip.at("layers.0.attention.wq").shape(), (Shape{16, 64}));  // 2 of 8 heads, by rows
  EXPECT_EQ(chip.at("layers.0.attention.wk").shape(), (Shape{8, 64}));   // 1 of 4 kv heads
  EXPECT_EQ(chip.at("layers.0.attention.wo").shape(), (Shape{64, 16}));  // by columns
  EXPECT_EQ(chip.at("layers.0.feed_forward.w1").shape(), (Shape{44, 64}));
  EXPECT_EQ(chip.at("layers.0.feed_forward.w2").shape(), (Shape{64, 44}));
  EXPECT_TRUE(chip.at("norm").same_bits(w.at("norm")));  // replicated
  // Chip 3 holds the last rows of wq.
  EXPECT_EQ(chip.at("layers.0.attention.wq").as<float>()[0], w.at("layers.0.attention.wq").as<float>()[48 * 64]);
}

TEST(WriteSplit, RefusesWithTheReason) {
  ModelSpec spec = builtin_spec("stories260K");
  try {
    write_split(Cut::decode(8), spec, "w", 3);
    FAIL();
  } catch (const NotYet& e) {
    EXPECT_THAT(e.what(), HasSubstr("decode{ctx=8} cannot be split 3 ways: tp = 3 does not divide heads = 8"));
  }
  try {
    write_split(Cut::decode(8), spec, "w", 8);
    FAIL();
  } catch (const NotYet& e) {
    EXPECT_THAT(e.what(), HasSubstr("tp = 8 does not divide kv_heads = 4"));
  }
  ModelSpec odd_ffn = spec;
  odd_ffn.ffn = 170;
  try {
    write_split(Cut::batch_layer(0, 2, 8), odd_ffn, "w", 4);
    FAIL();
  } catch (const NotYet& e) {
    EXPECT_THAT(e.what(), HasSubstr("tp = 4 does not divide ffn = 170"));
  }
  EXPECT_NO_THROW(write_split(Cut::decode(8), spec, "w", 4));  // 172 = 4 * 43
  try {
    write_split(Cut::prefill(2, 8), spec, "w", 2);
    FAIL();
  } catch (const NotYet& e) {
    EXPECT_THAT(e.what(), HasSubstr("prefill{rows=2,ctx=8} cannot be split yet"));
  }
  EXPECT_THROW(write_split(Cut::decode_layer(9, 8), spec, "w", 2), Refused);
}

TEST(WriteSplit, ChipProgramsNameTheirShards) {
  std::vector<Authored> chips = write_split(Cut::decode_layer(1, 8), builtin_spec("tiny"), "w", 2);
  ASSERT_EQ(chips.size(), 2u);
  EXPECT_THAT(chips[1].text, HasSubstr("chip 1 of 2"));
  EXPECT_THAT(chips[1].text, HasSubstr("all_reduce"));
  EXPECT_EQ(chips[1].manifest.find("layers.1.attention.wq")->file, "tp2/chip1.safetensors");
  EXPECT_EQ(chips[1].manifest.find("layers.1.attention_norm")->file, "model.safetensors");
  std::vector<const Program*> programs{&chips[0].program, &chips[1].program};
  EXPECT_NO_THROW(verify_split(programs));
  EXPECT_EQ(print(parse_and_verify(chips[0].text)), chips[0].text);
}

}  // namespace
}  // namespace cutcheck
