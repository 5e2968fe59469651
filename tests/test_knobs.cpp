// The spec's knobs (rope_scaling, attention_bias, qk_norm, sliding_window) against cases
// worked by hand from the published rules (docs/spec-knobs.md): the frequency tables, a
// biased and normed q head, and a windowed attention whose answer is a mean of known
// rows. The properties cross-check every knob against the oracle on random specs; these
// pin the rules themselves, so that the author and the oracle cannot share a mistake.
#include <gmock/gmock.h>

#include <cmath>

#include "faults/catalog.h"
#include "harness/runner.h"
#include "model/signature.h"
#include "model/weights.h"
#include "oracle/oracle.h"
#include "reference/interpreter.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

ValueId named(const Program& p, const std::string& name) {
  for (const Operation& op : p.ops)
    if (p.name(op.result) == name) return op.result;
  throw Error("no value %" + name);
}

// The authored rotary frequency table of `spec` (a Forward program's %rope.freq_scaled).
std::vector<float> program_frequencies(const ModelSpec& spec) {
  Executable e(authored_program(Cut{CutKind::forward}, spec), synthetic_weights(spec, 1));
  e.run({{"token", Tensor::scalar_i32(0)}});
  return test::floats(e.value(named(e.program(), "rope.freq_scaled")));
}

ModelSpec llama31_rope() {  // Llama 3.1's rotary settings, on a small body
  ModelSpec s = builtin_spec("tiny");
  s.head_dim = 128, s.heads = 1, s.kv_heads = 1;
  s.rope_theta = 500000;
  s.rope_scaling = {RopeScalingType::llama3, 8, 1, 4, 8192};
  return s;
}

TEST(RopeScaling, Llama3FrequenciesMatchTheRuleWorkedByHand) {
  // theta = 500000, head_dim = 128: freq_i = theta^(-i/64), wavelength 2 pi / freq_i,
  // against 8192 / 4 = 2048 (short) and 8192 / 1 = 8192 (long).
  const ModelSpec s = llama31_rope();
  EXPECT_DOUBLE_EQ(rope_frequency(s, 0), 1.0);                    // wavelength 6.28: kept
  EXPECT_NEAR(rope_frequency(s, 20), 0.016560440080994446, 1e-15);  // 379.4: kept
  // 2948.3: blended, s = (8192 / 2948.30 - 1) / 3 = 0.592849,
  // (1 - s) * 0.00213112 / 8 + s * 0.00213112 = 0.00137189
  EXPECT_NEAR(rope_frequency(s, 30), 0.0013718935677611381, 1e-15);
  EXPECT_NEAR(rope_frequency(s, 34), 0.0001785078127679964, 1e-16);  // 6695.1: s = 0.074527
  EXPECT_NEAR(rope_frequency(s, 40), 0.0002742481756762073 / 8, 1e-17);  // 22910.6: divided by 8
  EXPECT_NEAR(rope_frequency(s, 63), 2.455140791131609e-06 / 8, 1e-19);
  // The author writes the same rule as program ops, in f32.
  const std::vector<float> table = program_frequencies(s);
  ASSERT_EQ(table.size(), 64u);
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_NEAR(table[size_t(i)], rope_frequency(s, i), 4e-6 * rope_frequency(s, i)) << "pair " << i;
}

TEST(RopeScaling, LinearDividesEveryFrequency) {
  ModelSpec s = builtin_spec("tiny");  // head_dim 4, theta 10000: frequencies 1 and 1/100
  s.rope_scaling = {RopeScalingType::linear, 4};
  EXPECT_DOUBLE_EQ(rope_frequency(s, 0), 0.25);
  EXPECT_DOUBLE_EQ(rope_frequency(s, 1), 0.0025);
  EXPECT_THAT(program_frequencies(s), ::testing::ElementsAre(0.25f, ::testing::FloatNear(0.0025f, 1e-9f)));
}

// One head of width 4 over dim 4, one layer: small enough to work through by hand.
ModelSpec by_hand() {
  ModelSpec s;
  s.name = "by-hand";
  s.vocab = 4, s.dim = 4, s.layers = 1, s.heads = 1, s.kv_heads = 1, s.head_dim = 4, s.ffn = 1;
  s.norm_eps = 1e-12;
  return s;
}

Tensor values(Shape shape, std::vector<float> v) {
  Tensor t({DType::f32, std::move(shape)});
  std::copy(v.begin(), v.end(), t.as_mut<float>().begin());
  return t;
}

TensorMap unit_weights(const ModelSpec& s) {  // norms 1, wq and wo the identity, the rest 0
  TensorMap w;
  for (const WeightInfo& info : weight_layout(s)) {
    Tensor t({DType::f32, info.shape});
    const bool norm = info.name == weight::final_norm() || info.name.ends_with("_norm");
    const bool identity = info.name.ends_with(".wq") || info.name.ends_with(".wo");
    auto v = t.as_mut<float>();
    for (int64_t i = 0; i < t.elements(); ++i)
      v[size_t(i)] = norm ? 1.0f : identity && i / s.dim == i % s.dim ? 1.0f : 0.0f;
    w.emplace(info.name, std::move(t));
  }
  return w;
}

TEST(AttentionBiasAndQkNorm, AQHeadWorkedByHand) {
  // x = [3, 4, 0, 0]: RMSNorm divides by sqrt(25 / 4) = 2.5, so xn = [1.2, 1.6, 0, 0] and
  // q = xn + bq = [1.2, 1.6, 3, 0]; its RMS is sqrt(13 / 4) = 1.802776, and q_norm's
  // gains [2, 1, 1, 1] give [1.331282, 0.887521, 1.664101, 0].
  ModelSpec s = by_hand();
  s.attention_bias = s.qk_norm = true;
  TensorMap w = unit_weights(s);
  w[weight::bq(0)] = values({4}, {0, 0, 3, 0});
  w[weight::q_norm(0)] = values({4}, {2, 1, 1, 1});
  Executable e(authored_program(Cut{CutKind::forward_layer}, s), w);
  e.run({{"x", values({4}, {3, 4, 0, 0})}});
  EXPECT_THAT(test::floats(e.value(named(e.program(), "l0.q_biased"))),
              ::testing::Pointwise(::testing::FloatNear(1e-6f), std::vector<float>{1.2f, 1.6f, 3, 0}));
  EXPECT_THAT(test::floats(e.value(named(e.program(), "l0.q_norm"))),
              ::testing::Pointwise(::testing::FloatNear(4e-6f), std::vector<float>{1.331282f, 0.887521f, 1.664101f, 0}));
}

// decode_layer at pos 5 of a cache of 8 with a window of 3: q = 0 makes every score 0, so
// the attention is the plain mean of the v rows the window holds, 3, 4 and the new row 5
// (v = wv xn + bv = bv). With wo the identity and the MLP zero, x leaves as
// x + (v3 + v4 + bv) / 3. Rows 0..2 (before the window) and 6, 7 are NaN: don't-care.
TensorMap windowed_inputs(const ModelSpec& s) {
  const float nan = std::nanf("");
  Tensor k({DType::f32, {8, 1, 4}}), v({DType::f32, {8, 1, 4}});
  auto kv = k.as_mut<float>(), vv = v.as_mut<float>();
  for (int64_t c = 0; c < 8; ++c)
    for (int64_t i = 0; i < 4; ++i) {
      const bool seen = c == 3 || c == 4;
      kv[size_t(c * 4 + i)] = seen ? 0.5f : nan;
      vv[size_t(c * 4 + i)] = seen ? float(c) : nan;
    }
  (void)s;
  return {{"x", values({4}, {1, 2, 3, 4})}, {"pos", Tensor::scalar_i32(5)}, {k_cache_name(0), k}, {v_cache_name(0), v}};
}

ModelSpec windowed() {
  ModelSpec s = by_hand();
  s.sliding_window = 3;
  s.attention_bias = true;
  return s;
}

TensorMap windowed_weights(const ModelSpec& s) {
  TensorMap w = unit_weights(s);
  w[weight::wq(0)] = values({4, 4}, std::vector<float>(16, 0.0f));  // q = 0
  w[weight::bv(0)] = values({4}, {2, 0, 0, 0});
  return w;
}

TEST(SlidingWindow, AttendsToTheWindowAloneWorkedByHand) {
  const ModelSpec s = windowed();
  const Cut cut{CutKind::decode_layer, 0, 0, 8};
  // (3 + 4 + 2) / 3 = 3 in the first element, (3 + 4 + 0) / 3 = 7/3 in the others.
  const std::vector<float> want{1 + 3.0f, 2 + 7 / 3.0f, 3 + 7 / 3.0f, 4 + 7 / 3.0f};
  ReferenceRunner reference(s, windowed_weights(s));
  EXPECT_THAT(test::floats(reference.run(cut, windowed_inputs(s)).at("x")),
              ::testing::Pointwise(::testing::FloatNear(1e-6f), want));
  Oracle oracle(s, windowed_weights(s));
  EXPECT_THAT(test::floats(oracle.run(cut, windowed_inputs(s)).at("x")),
              ::testing::Pointwise(::testing::FloatNear(1e-6f), want));
  // One key more reads row 2, before the window: NaN reaches the output.
  ReferenceRunner faulty(s, windowed_weights(s), with_fault(find_fault("sliding-window-off-by-one"), s));
  for (float x : test::floats(faulty.run(cut, windowed_inputs(s)).at("x"))) EXPECT_TRUE(std::isnan(x));
}

TEST(SpecKnobs, ReadBackFromJsonAndStayOutOfPlainSpecs) {
  ModelSpec s = llama31_rope();
  s.attention_bias = s.qk_norm = true;
  s.sliding_window = 4096;
  const Json j = s.to_json();
  EXPECT_EQ(j.at("rope_scaling"), Json::parse(R"({"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})"));
  EXPECT_EQ(j.at("sliding_window"), 4096);
  EXPECT_EQ(ModelSpec::from_json(j, "knobs"), s);
  EXPECT_THAT(s.summary(), HasSubstr("rope_scaling=llama3(factor=8,low_freq_factor=1,high_freq_factor=4,"
                                     "original_max_position_embeddings=8192) attention_bias=true qk_norm=true "
                                     "sliding_window=4096"));
  const Json plain = builtin_spec("tiny").to_json();
  for (const char* key : {"rope_scaling", "attention_bias", "qk_norm", "sliding_window"})
    EXPECT_FALSE(plain.contains(key)) << key;
}

TEST(SpecKnobs, WeightsFollowTheKnobsAndSplitWithTheirHeads) {
  ModelSpec s = builtin_spec("tiny");  // 4 heads over 2 kv heads of 4
  s.attention_bias = s.qk_norm = true;
  const TensorMap w = synthetic_weights(s, 1);
  EXPECT_EQ(w.at(weight::bq(1)).shape(), Shape{16});
  EXPECT_EQ(w.at(weight::bk(1)).shape(), Shape{8});
  EXPECT_EQ(w.at(weight::k_norm(1)).shape(), Shape{4});
  EXPECT_EQ(w.size(), synthetic_weights(builtin_spec("tiny"), 1).size() + 2 * 5);
}

}  // namespace
}  // namespace cutcheck
