// Engine conformance: the log-softmax bound, the protocol's readers, the judge.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include <cmath>
#include <random>

#include "bound/log_softmax.h"
#include "core/error.h"
#include "engine/engine_judge.h"
#include "engine/engine_case.h"
#include "engine/engine_protocol.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

// log softmax(z) in double, the definition.
std::vector<double> exact_log_softmax(const std::vector<double>& z) {
  double m = -INFINITY, s = 0;
  for (double v : z) m = std::max(m, v);
  for (double v : z) s += std::exp(v - m);
  std::vector<double> out;
  for (double v : z) out.push_back(v - m - std::log(s));
  return out;
}

struct Row {
  std::vector<float> logits, bounds;
};

Row random_row(std::mt19937_64& rng, int V, double spread, double relative_bound) {
  std::normal_distribution<double> normal(0, spread);
  Row r;
  for (int j = 0; j < V; ++j) {
    r.logits.push_back(float(normal(rng)));
    r.bounds.push_back(float(relative_bound * (1 + std::abs(r.logits.back()))));
  }
  return r;
}

// Log-probabilities bounded from runs whose logit deviations are drawn by `draw(j)`.
template <class Draw>
LogProbabilities bounded(const std::vector<float>& logits, Draw draw, const BoundModel& model = {}) {
  LogSoftmaxBound b(logits, model);
  std::vector<std::vector<float>> drawn;
  for (int r = 0; r < model.total_runs(); ++r) {
    std::vector<float> d(logits.size());
    if (r < model.runs) {
      for (size_t j = 0; j < d.size(); ++j) d[j] = float(model.amplification * draw(j));
      drawn.push_back(d);
    } else {  // a probe: its twin's draws at half the size
      for (size_t j = 0; j < d.size(); ++j) d[j] = drawn[size_t(model.draws_of(r))][j] / 2;
    }
    b.add_run(r, d, uint64_t(model.draws_of(r)));
  }
  return b.result();
}

// An engine whose logits err as the runs model them (independent errors of the logits'
// size, each logit its own) lands within the bound: its log-probabilities computed exactly
// from its logits, over many rows and engines.
TEST(LogSoftmaxBound, HoldsForEnginesErringAsTheRunsModel) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 100; ++trial) {
    const int V = 2 + int(rng() % 60);
    const Row row = random_row(rng, V, trial % 2 ? 1.0 : 8.0, trial % 3 ? 1e-6 : 0.03);
    std::normal_distribution<double> unit(0, 1);
    const LogProbabilities lp = bounded(row.logits, [&](size_t j) { return row.bounds[j] * unit(rng); });
    std::vector<double> z(row.logits.begin(), row.logits.end());
    for (int engine = 0; engine < 20; ++engine) {
      std::vector<double> moved = z;
      for (int j = 0; j < V; ++j) moved[size_t(j)] += row.bounds[size_t(j)] * unit(rng);
      const std::vector<double> got = exact_log_softmax(moved);
      for (int i = 0; i < V; ++i)
        if (std::isfinite(lp.bound[size_t(i)])) {
          ASSERT_LE(std::abs(got[size_t(i)] - lp.value[size_t(i)]), lp.bound[size_t(i)]) << "trial " << trial << " token " << i;
        }
    }
  }
}

// A deviation common to every logit moves no log-probability: runs whose logits all shift
// together give bounds of the log-softmax's own rounding, however large the shift. So the
// likeliest token's log-probability is held as tightly as its margin allows.
TEST(LogSoftmaxBound, ACommonShiftOfTheLogitsCancels) {
  std::mt19937_64 rng(11);
  const Row row = random_row(rng, 32, 2.0, 0);
  std::normal_distribution<double> unit(0, 1);
  double shift = 0;
  int drawn = 0;
  const LogProbabilities lp = bounded(row.logits, [&](size_t j) {
    if (j == 0) shift = unit(rng);
    ++drawn;
    return shift;  // the same for every logit of a run
  });
  EXPECT_EQ(drawn, 32 * BoundModel{}.runs);  // the probes repeat their twins' draws
  for (size_t i = 0; i < row.logits.size(); ++i) {
    EXPECT_LT(lp.bound[i], 1e-4) << i;  // against shifts of about 4
    EXPECT_GT(lp.bound[i], 0) << i;  // the rounding is never nothing
  }
}

TEST(LogSoftmaxBound, UnboundedWhereARunIsOrTheProbabilityIsSubnormal) {
  const LogProbabilities a = bounded({1, 2, 3}, [](size_t j) { return j == 1 ? NAN : 0.0; });
  for (double b : a.bound) EXPECT_TRUE(std::isinf(b));
  const LogProbabilities b = bounded({0, 200}, [](size_t) { return 0.0; });
  EXPECT_TRUE(std::isinf(b.bound[0]));  // log p = -200: below log 2^-126
  EXPECT_TRUE(std::isfinite(b.bound[1]));
}

// An expectation whose log-probabilities have the given bounds (the judge's tests).
PositionExpectation expectation(const std::vector<float>& logits, const std::vector<float>& bounds, int32_t next) {
  const std::vector<double> z(logits.begin(), logits.end());
  // The normalisation is not what these tests judge: its allowance is infinite here.
  LogProbabilities lp{exact_log_softmax(z), std::vector<double>(bounds.begin(), bounds.end()), INFINITY};
  return {logits, bounds, lp, next};
}

// One request reporting position 2 of a random 16-token row, and what the reference expects there.
struct OnePosition {
  PositionExpectation x;
  std::vector<EngineRequest> requests{{{1, 2, 3}, 0, {2}}};
  RequestExpectation want;
};

OnePosition one_position(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Row row = random_row(rng, 16, 1.5, 1e-6);
  OnePosition o;
  o.x = expectation(row.logits, row.bounds, 0);
  o.x.next = int32_t(std::max_element(row.logits.begin(), row.logits.end()) - row.logits.begin());
  o.want.at.emplace(2, o.x);
  return o;
}

// A planted error just past the bound fails, one just inside passes, and the failure
// names the request, position and token.
TEST(EngineJudge, CatchesAPlantedLogProbabilityErrorJustPastItsBound) {
  const auto [x, requests, want] = one_position(3);
  for (double factor : {0.9, 1.1}) {
    EngineResult got;
    got.logprobs.push_back({x.lp.value, {}});
    got.logprobs[0].full[5] += factor * x.lp.bound[5];
    const EngineVerdict v = judge_engine(requests, {want}, {got}, 0);
    EXPECT_EQ(v.passed, factor < 1) << factor;
    if (!v.passed) {
      EXPECT_THAT(v.failure, HasSubstr("request 0, position 2, token 5"));
    }
  }
}

// Log-probabilities shifted together by 1e-3 (a wrong normaliser) fail, though the
// logits' own errors (1e-2, an f16 engine's) hide the shift from every token's bound; a
// correct engine erring as much, its log-softmax computed and reported in f32, passes.
TEST(EngineJudge, LogProbabilitiesThatDoNotNormaliseFail) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> unit(0, 1);
  for (int trial = 0; trial < 40; ++trial) {
    const Row row = random_row(rng, 64, 3.0, 1e-2);
    PositionExpectation x = expectation(row.logits, row.bounds, 0);
    x.lp = bounded(row.logits, [&](size_t j) { return row.bounds[j] * unit(rng); });
    x.next = int32_t(std::max_element(row.logits.begin(), row.logits.end()) - row.logits.begin());
    EXPECT_LT(x.lp.total_bound, 1e-4);  // the normaliser's f32 rounding, at the runs' amplification
    const std::vector<EngineRequest> requests{{{1, 2, 3}, 0, {2}}};
    RequestExpectation want;
    want.at.emplace(2, x);
    std::vector<double> moved(row.logits.begin(), row.logits.end());
    for (size_t j = 0; j < moved.size(); ++j) moved[j] += row.bounds[j] * unit(rng);
    EngineResult got;
    got.logprobs.push_back({exact_log_softmax(moved), {}});
    for (double& lp : got.logprobs[0].full) lp = double(float(lp));  // reported in f32
    EXPECT_TRUE(judge_engine(requests, {want}, {got}, 0).passed) << trial;
    for (double& lp : got.logprobs[0].full) lp += 1e-3;
    const EngineVerdict v = judge_engine(requests, {want}, {got}, 0);
    EXPECT_FALSE(v.passed) << trial;
    EXPECT_THAT(v.failure, HasSubstr("do not normalise"));
  }
}

// The engine's log-probabilities are held by the element rule of every judge
// (harness/tolerance.h): the tolerance's floor widens what passes, and the figures are the
// ones compare() gives for the same values as an output.
TEST(EngineJudge, AppliesTheToleranceAsCompareDoes) {
  const auto [x, requests, want] = one_position(5);
  EngineResult got;
  got.logprobs.push_back({x.lp.value, {}});
  got.logprobs[0].full[5] += 1.5 * x.lp.bound[5];
  Tolerance floored = Tolerance::bound(Precision::f32);
  EXPECT_FALSE(judge_engine(requests, {want}, {got}, 0, floored).passed);
  floored.floor = x.lp.bound[5];  // allowed: twice the bound
  const EngineVerdict v = judge_engine(requests, {want}, {got}, 0, floored);
  EXPECT_TRUE(v.passed) << v.failure;
  // The same values as an f32 output: compare() reports the same figures.
  std::vector<float> w(x.lp.value.begin(), x.lp.value.end()), g(got.logprobs[0].full.begin(), got.logprobs[0].full.end()),
      b(x.lp.bound.begin(), x.lp.bound.end());
  const Shape shape{int64_t(w.size())};
  const Expected as_output{{{"logprobs", Tensor::of_f32(shape, w)}}, {{"logprobs", Tensor::of_f32(shape, b)}}};
  const Comparison c = compare(as_output, {{"logprobs", Tensor::of_f32(shape, g)}}, floored);
  ASSERT_TRUE(c.ok);
  // The engine's values rounded to f32 first, as the output's are.
  EngineResult got32;
  got32.logprobs.push_back({std::vector<double>(g.begin(), g.end()), {}});
  RequestExpectation want32 = want;
  want32.at.at(2).lp.value.assign(w.begin(), w.end());
  want32.at.at(2).lp.bound.assign(b.begin(), b.end());
  const EngineVerdict v32 = judge_engine(requests, {want32}, {got32}, 0, floored);
  EXPECT_EQ(v32.logprobs.max_abs, c.outputs[0].max_abs);
  EXPECT_EQ(v32.logprobs.headroom, c.outputs[0].headroom);
  EXPECT_EQ(v32.logprobs.nmse, c.outputs[0].nmse);
  EXPECT_EQ(v32.logprobs.mismatches, c.outputs[0].mismatches);
}

TEST(EngineJudge, ANearTieIsReportedAndAClearWrongTokenFails) {
  const std::vector<float> logits{1.0f, 1.0f + 1e-7f, -3.0f}, bounds{1e-6f, 1e-6f, 1e-6f};
  PositionExpectation x = expectation(logits, bounds, 1);
  const std::vector<EngineRequest> requests{{{0}, 1, {}}};
  RequestExpectation want;
  want.tokens = {1};
  want.at.emplace(0, x);
  EngineResult tie{{0}, {}};
  EngineVerdict v = judge_engine(requests, {want}, {tie}, 0);
  EXPECT_TRUE(v.passed);
  ASSERT_EQ(v.ties.size(), 1u);
  EXPECT_THAT(v.ties[0], HasSubstr("the engine chose 0, the reference 1"));
  EngineResult wrong{{2}, {}};
  v = judge_engine(requests, {want}, {wrong}, 0);
  EXPECT_FALSE(v.passed);
  EXPECT_THAT(v.failure, HasSubstr("the engine chose token 2, the reference 1"));
}

TEST(EngineJudge, ATopKThatLeavesOutALikelyTokenFails) {
  const std::vector<float> logits{3, 2, 1, 0}, bounds{1e-6f, 1e-6f, 1e-6f, 1e-6f};
  PositionExpectation x = expectation(logits, bounds, 0);
  const std::vector<EngineRequest> requests{{{0, 1}, 0, {1}}};
  RequestExpectation want;
  want.at.emplace(1, x);
  EngineResult complete{{}, {{{}, {{0, x.lp.value[0]}, {1, x.lp.value[1]}}}}};
  EXPECT_TRUE(judge_engine(requests, {want}, {complete}, 2).passed);
  EngineResult missing{{}, {{{}, {{0, x.lp.value[0]}, {2, x.lp.value[2]}}}}};
  const EngineVerdict v = judge_engine(requests, {want}, {missing}, 2);
  EXPECT_FALSE(v.passed);
  EXPECT_THAT(v.failure, HasSubstr("token 1"));
  EXPECT_THAT(v.failure, HasSubstr("missing from the engine's top-k"));
}

TEST(EngineProtocol, ResultsErrorsNameTheKey) {
  const std::vector<EngineRequest> requests{{{1, 2}, 2, {0, 1}}};
  auto error = [&](const std::string& text, int64_t top_k = 0) {
    try {
      parse_results(Json::parse(text), requests, 4, top_k, "results.json");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string ok_lp = "[-1.5, -1.4, null, -1.2]";
  EXPECT_EQ(error(R"({"format": "cutcheck-engine-1", "results": [{"id": 0, "tokens": [1, 3], "logprobs": [)" + ok_lp +
                  ", " + ok_lp + "]}]}"),
            "no error");
  EXPECT_THAT(error(R"({"format": "cutcheck-engine-1", "results": [{"id": 0, "tokens": [1, 3], "logprobs": [[-1, -2, -3], )" +
                    ok_lp + "]}]}"),
              HasSubstr("results[0].logprobs[0]: 3 numbers, the vocabulary has 4"));
  EXPECT_THAT(error(R"({"format": "cutcheck-engine-1", "results": [{"id": 0, "tokens": [1], "logprobs": []}]})"),
              HasSubstr("results[0].tokens: expected a list of 2 token ids"));
  EXPECT_THAT(error(R"({"format": "cutcheck-engine-1", "results": [{"id": 0, "tokens": [1, 9], "logprobs": []}]})"),
              HasSubstr("results[0].tokens[1]: token 9 is outside the vocabulary"));
  EXPECT_THAT(error(R"({"format": "cutcheck-engine-1", "results": [{"id": 0, "tokens": [1, 3], "logprobs": [)" + ok_lp +
                    R"(, [-1, "x", -1, -1]]}]})"),
              HasSubstr("results[0].logprobs[1][1]: expected a number"));
  EXPECT_THAT(error(R"({"format": "cutcheck-engine-1", "results": []})"), HasSubstr("no result for request 0"));
  EXPECT_THAT(error(R"({"format": "cutcheck-engine-1", "results": [{"id": 0, "tokens": [1, 3], "logprobs": [[[0, -1]], [[0, -1], [0, -2]]]}]})", 1),
              HasSubstr("results[0].logprobs[1][1][0]: token 0 appears twice"));
  EXPECT_THAT(error(R"({"format": "cutcheck-engine-2", "results": []})"), HasSubstr("is not cutcheck-engine-1"));
}

// The quantized precisions: what the engine is handed (GGUF only) and how the activation
// meeting each weight is rounded, by the weight's type in llama-quantize's recipe.
TEST(EngineProtocol, QuantizedPrecisionsRoundWhatMeetsEachWeightByItsType) {
  const EnginePrecision q4 = EnginePrecision::parse("q4_0"), k = EnginePrecision::parse("q4_k_m");
  EXPECT_TRUE(q4.quantized());
  EXPECT_EQ(q4.name(), "q4_0");
  EXPECT_EQ(q4.compute(), Precision::f32);
  EXPECT_FALSE(EnginePrecision::parse("f16").quantized());
  EXPECT_EQ(EnginePrecision::parse("f16").compute(), Precision::f16);
  EXPECT_THROW(EnginePrecision::parse("fp8"), Error);
  ModelSpec s;  // rows of 64 (dim) and 96 (ffn): whole Q4_0 blocks, no whole K-quant super-blocks
  s.vocab = 16, s.dim = 64, s.layers = 1, s.heads = 2, s.kv_heads = 1, s.head_dim = 32, s.ffn = 96;
  auto meets = [&](const EnginePrecision& p, const std::string& w) {
    const ActivationRounding r = p.weight_meets(s).at(w);
    return fmt::format("{} {} {}", r.kind == ActivationRounding::Kind::f16 ? "f16" : "int8", r.block, r.f16_scale);
  };
  EXPECT_EQ(meets(q4, weight::wq(0)), "int8 32 true");           // Q4_0 beside Q8_0 blocks
  EXPECT_EQ(meets(q4, weight::embedding()), "int8 32 true");     // the tied head: Q6_K falls back to Q8_0
  EXPECT_EQ(meets(k, weight::wq(0)), "int8 32 true");            // Q4_K falls back to Q5_0
  EXPECT_EQ(q4.weight_meets(s).count(weight::attention_norm(0)), 0u);  // a norm meets nothing
  s.dim = 256, s.ffn = 512, s.head_dim = 128;
  EXPECT_EQ(meets(k, weight::wq(0)), "int8 256 false");          // Q4_K beside Q8_K blocks
  s.dim = 40, s.head_dim = 20;
  EXPECT_EQ(meets(q4, weight::wq(0)), "f16 0 false");            // rows of 40: F16, beside f16
  EXPECT_TRUE(EnginePrecision::parse("f32").weight_meets(s).empty());
}

// A quantized precision's cases have dim and ffn in whole blocks, within the engine's limits.
TEST(EngineProtocol, QuantizedCasesHaveWholeBlocksWithinTheLimits) {
  const std::string base = R"("format": "cutcheck-engine-1", "name": "e", "model_formats": ["gguf"], "precisions": ["q4_0"], "max_context": 64)";
  const EngineDescription free = EngineDescription::from_json(Json::parse("{" + base + "}"), "describe");
  const EngineDescription small = EngineDescription::from_json(Json::parse("{" + base + R"(, "limits": {"dim": 16}})"), "describe");
  EngineCaseSpace space;
  space.row_multiple = 32;
  for (int seed = 0; seed < 40; ++seed) {
    const EngineCase c = gen_engine_case(free, space)(rc::Random(uint64_t(seed)), 100).value();
    EXPECT_EQ(c.spec.dim % 32, 0) << c.str();
    EXPECT_EQ(c.spec.ffn % 32, 0) << c.str();
    const EngineCase d = gen_engine_case(small, space)(rc::Random(uint64_t(seed)), 100).value();
    EXPECT_EQ(small.refuses(d.spec), "") << d.str();
  }
}

TEST(EngineProtocol, DescriptionErrorsNameTheKey) {
  auto error = [](const std::string& text) {
    try {
      EngineDescription::from_json(Json::parse(text), "describe");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string base = R"("format": "cutcheck-engine-1", "name": "e", "model_formats": ["gguf"], "precisions": ["f32"], "max_context": 64)";
  EXPECT_EQ(error("{" + base + "}"), "no error");
  EXPECT_THAT(error("{" + base + R"(, "max_topk": 3})"), HasSubstr("unknown key 'max_topk'"));
  EXPECT_THAT(error("{" + base + R"(, "logprobs": "top_k"})"), HasSubstr("max_top_k"));
  EXPECT_THAT(error("{" + base + R"(, "knobs": ["rope_sclaing"]})"), HasSubstr("knobs: \"rope_sclaing\" is not one of"));
  EXPECT_THAT(error("{" + base + R"(, "limits": {"width": 3}})"), HasSubstr("limits: unknown field 'width'"));
  EXPECT_THAT(error(R"({"format": "cutcheck-engine-1", "name": "e", "model_formats": ["onnx"], "precisions": ["f32"], "max_context": 64})"),
              HasSubstr("model_formats: unknown model format 'onnx'"));
  const EngineDescription d = EngineDescription::from_json(
      Json::parse("{" + base + R"(, "limits": {"dim": 8}, "rope_styles": ["half"]})"), "describe");
  ModelSpec s;
  s.vocab = 8, s.dim = 16, s.layers = 1, s.heads = 2, s.kv_heads = 1, s.head_dim = 4, s.ffn = 8;
  EXPECT_THAT(d.refuses(s), HasSubstr("dim = 16 is above the engine's limit of 8"));
  s.dim = 8;
  EXPECT_THAT(d.refuses(s), HasSubstr("rope_style interleaved"));
  s.rope_style = RopeStyle::half;
  EXPECT_EQ(d.refuses(s), "");
}

}  // namespace
}  // namespace cutcheck
