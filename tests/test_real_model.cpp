// The real checkpoint: llama2.c's stories260K, imported and generated from on every cut
// path, against the fixture llama2.c's own run.c produced (../shared/fixtures).
#include <gmock/gmock.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/json.h"
#include "harness/generate.h"
#include "harness/split.h"
#include "model/llama2c.h"
#include "model/weights.h"
#include "oracle/oracle.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

struct Fixture {
  std::vector<int32_t> tokens;
  std::map<int, std::vector<float>> logits;
};

Fixture read_fixture(const fs::path& shared) {
  fs::path path = shared / "fixtures" / "stories260K-greedy.json";
  Json j = parse_json(test::read_whole(path), path.string());
  Fixture f;
  f.tokens = j.at("tokens").get<std::vector<int32_t>>();
  for (auto& [pos, values] : j.at("logits").items()) f.logits[std::stoi(pos)] = values.get<std::vector<float>>();
  return f;
}

TEST(RealModel, ImportsTheStoriesHeader) {
  SKIP_WITHOUT_SHARED(shared);
  Llama2cModel m = read_llama2c(shared / "models" / "stories260K.bin");
  ModelSpec want = builtin_spec("stories260K");
  want.name = m.spec.name;
  EXPECT_EQ(m.spec, want);
  EXPECT_EQ(m.seq_len, 512);
  EXPECT_NO_THROW(check_weights(m.weights, m.spec, "import"));
}

TEST(RealModel, RefusesTruncatedAndInconsistentCheckpoints) {
  SKIP_WITHOUT_SHARED(shared);
  std::string bytes = test::read_whole(shared / "models" / "stories260K.bin");
  auto span = std::as_bytes(std::span(bytes.data(), bytes.size()));
  try {
    read_llama2c(span.first(span.size() - 4), "cut.bin");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cut.bin: 1056536 bytes, but a llama2.c checkpoint"));
  }
  EXPECT_THROW(read_llama2c(span.first(20), "short.bin"), FormatError);
  std::string bad = bytes;
  int32_t heads = 7;  // 64 is not a multiple of 7
  std::memcpy(bad.data() + 12, &heads, 4);
  EXPECT_THROW(read_llama2c(std::as_bytes(std::span(bad.data(), bad.size())), "bad.bin"), FormatError);
}

class Greedy : public ::testing::TestWithParam<Via> {};

TEST_P(Greedy, ReproducesLlama2cTokensAndLogits) {
  SKIP_WITHOUT_SHARED(shared);
  Fixture fixture = read_fixture(shared);
  Llama2cModel m = read_llama2c(shared / "models" / "stories260K.bin");
  ReferenceRunner runner(m.spec, m.weights);
  Generation g = generate(runner, m.spec, {{1}, 64, 0, GetParam()});
  EXPECT_EQ(g.tokens, fixture.tokens);
  // llama2.c sums in f32, the reference in double: logits differ by summation error
  // only. docs/numerics.md states the bound.
  double worst = 0;
  for (const auto& [pos, want] : fixture.logits)
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, double(std::abs(g.logits[size_t(pos)][i] - want[i])));
  EXPECT_LT(worst, 1e-4) << "largest logit difference against llama2.c";
  RecordProperty("worst_logit_difference", std::to_string(worst));
  std::printf("largest logit difference against llama2.c via %s: %.3g\n", via_name(GetParam()).c_str(), worst);
}

// Growing caches (ctx 0) against one static capacity: the same tokens and logits, bit
// for bit, on every path, across the 64 -> 128 buckets and from a prompt that starts
// past the first bucket's middle into a last bucket cut short at prompt + steps.
TEST_P(Greedy, GrowingCachesGiveTheBitsOfOneCapacity) {
  SKIP_WITHOUT_SHARED(shared);
  Llama2cModel m = read_llama2c(shared / "models" / "stories260K.bin");
  ReferenceRunner runner(m.spec, m.weights);
  for (const std::vector<int32_t>& prompt : {std::vector<int32_t>{1}, std::vector<int32_t>(40, 7)}) {
    const int64_t steps = 70;
    Generation grown = generate(runner, m.spec, {prompt, steps, 0, GetParam()});
    Generation fixed = generate(runner, m.spec, {prompt, steps, int64_t(prompt.size()) + steps, GetParam()});
    EXPECT_EQ(grown.tokens, fixed.tokens);
    GenerateOptions tokens_only{prompt, steps, 0, GetParam()};
    tokens_only.keep_logits = false;
    const Generation lean = generate(runner, m.spec, tokens_only);
    EXPECT_EQ(lean.tokens, grown.tokens);
    EXPECT_TRUE(lean.logits.empty());
    ASSERT_EQ(grown.logits.size(), fixed.logits.size());
    for (size_t k = 0; k < grown.logits.size(); ++k)
      EXPECT_EQ(0, std::memcmp(grown.logits[k].data(), fixed.logits[k].data(), grown.logits[k].size() * sizeof(float)))
          << "step " << k;
  }
}

TEST(RealModel, TheOracleAlsoReproducesLlama2c) {
  SKIP_WITHOUT_SHARED(shared);
  Fixture fixture = read_fixture(shared);
  Llama2cModel m = read_llama2c(shared / "models" / "stories260K.bin");
  Oracle oracle(m.spec, m.weights);
  Generation g = generate(oracle, m.spec, {{1}, 64, 0, Via::decode});
  EXPECT_EQ(g.tokens, fixture.tokens);
  double worst = 0;
  for (const auto& [pos, want] : fixture.logits)
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, double(std::abs(g.logits[size_t(pos)][i] - want[i])));
  EXPECT_LT(worst, 1e-4);
  std::printf("largest logit difference, oracle against llama2.c: %.3g\n", worst);
}

TEST(RealModel, SplitGenerationReproducesLlama2c) {
  SKIP_WITHOUT_SHARED(shared);
  Fixture fixture = read_fixture(shared);
  Llama2cModel m = read_llama2c(shared / "models" / "stories260K.bin");
  for (int64_t tp : {2, 4}) {
    SplitRunner runner(m.spec, m.weights, tp);
    EXPECT_EQ(generate(runner, m.spec, {{1}, 64, 0, Via::decode}).tokens, fixture.tokens) << "tp " << tp;
  }
  SplitRunner batched(m.spec, m.weights, 2);
  EXPECT_EQ(generate(batched, m.spec, {{1}, 64, 0, Via::batch}).tokens, fixture.tokens);
  EXPECT_THROW(SplitRunner(m.spec, m.weights, 3), NotYet);
}

INSTANTIATE_TEST_SUITE_P(Paths, Greedy,
                         ::testing::Values(Via::automatic, Via::decode, Via::prefill, Via::batch, Via::pieces),
                         [](const auto& info) { return via_name(info.param); });

}  // namespace
}  // namespace cutcheck
