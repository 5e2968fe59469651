// Specs, cuts, signatures, safetensors and synthetic weights.
#include <gmock/gmock.h>

#include <cmath>
#include <unordered_set>

#include "core/error.h"
#include "core/safetensors.h"
#include "model/signature.h"
#include "model/weights.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

TEST(Spec, BuiltinsAreValidAndRoundTripThroughJson) {
  for (const std::string& name : builtin_spec_names()) {
    ModelSpec s = builtin_spec(name);
    EXPECT_NO_THROW(s.validate()) << name;
    EXPECT_EQ(ModelSpec::from_json(s.to_json(), name), s) << name;
  }
  ModelSpec st = builtin_spec("stories260K");
  EXPECT_EQ(st.dim, 64);
  EXPECT_EQ(st.ffn, 172);
  EXPECT_EQ(st.layers, 5);
  EXPECT_EQ(st.heads, 8);
  EXPECT_EQ(st.kv_heads, 4);
  EXPECT_EQ(st.vocab, 512);
}

TEST(Spec, ValidationNamesTheField) {
  auto reason = [](auto mutate) {
    ModelSpec s = builtin_spec("tiny");
    mutate(s);
    try {
      s.validate();
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(reason([](ModelSpec& s) { s.kv_heads = 3; }), HasSubstr("heads (4) must be a multiple of kv_heads (3)"));
  EXPECT_THAT(reason([](ModelSpec& s) { s.dim = 0; }), HasSubstr("dim must be positive"));
  EXPECT_THAT(reason([](ModelSpec& s) { s.head_dim = 5; }), HasSubstr("head_dim must be even"));
  EXPECT_THAT(reason([](ModelSpec& s) { s.norm_eps = NAN; }), HasSubstr("norm_eps"));
  EXPECT_THAT(reason([](ModelSpec& s) { s.rope_theta = -1; }), HasSubstr("rope_theta"));
}

TEST(Spec, JsonErrorsNameTheField) {
  Json j = builtin_spec("tiny").to_json();
  j["rope_style"] = "sideways";
  EXPECT_THROW(ModelSpec::from_json(j, "s.json"), FormatError);
  j = builtin_spec("tiny").to_json();
  j["dim"] = 1.5;
  try {
    ModelSpec::from_json(j, "s.json");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_THAT(e.what(), HasSubstr("s.json: field 'dim' must be an integer"));
  }
  j = builtin_spec("tiny").to_json();
  j["colour"] = "blue";
  EXPECT_THROW(ModelSpec::from_json(j, "s.json"), FormatError);
  EXPECT_THROW(builtin_spec("huge"), SpecError);
}

TEST(Cut, TextRoundTripsForEveryKind) {
  for (CutKind kind : all_cut_kinds()) {
    Cut c{kind, 2, 4, 32};
    EXPECT_EQ(Cut::parse(c.str()), c) << c.str();
  }
  EXPECT_EQ(Cut::decode(16).str(), "decode{ctx=16}");
  EXPECT_EQ(Cut::batch_layer(2, 4, 32).str(), "batch_layer{layer=2,rows=4,ctx=32}");
  EXPECT_EQ(Cut::forward().str(), "forward");
  EXPECT_EQ(Cut::parse(" batch_layer { ctx = 32 , layer=2, rows=4 } "), Cut::batch_layer(2, 4, 32));
  EXPECT_EQ(Cut::parse("BatchLayer{layer=2,rows=4,ctx=32}"), Cut::batch_layer(2, 4, 32));
  EXPECT_EQ(Cut::parse("forward{}"), Cut::forward());
}

TEST(Cut, ParseErrorsPointAtTheProblem) {
  auto error = [](const std::string& text) {
    try {
      Cut::parse(text);
    } catch (const ParseError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(error("decode"), HasSubstr("decode needs parameter 'ctx'"));
  EXPECT_THAT(error("decode{ctx=4,rows=2}"), HasSubstr("cut:1:14: decode takes no parameter 'rows'"));
  EXPECT_THAT(error("decode{ctx=4,ctx=5}"), HasSubstr("parameter 'ctx' given twice"));
  EXPECT_THAT(error("decod{ctx=4}"), HasSubstr("unknown cut 'decod'"));
  EXPECT_THAT(error("decode{ctx=-4}"), HasSubstr("expected a non-negative integer"));
  EXPECT_THAT(error("decode{ctx=99999999999}"), HasSubstr("out of range"));
  EXPECT_THAT(error("decode{ctx=4} x"), HasSubstr("unexpected text after the cut"));
}

TEST(Cut, EqualityAndHashIgnoreUnusedFields) {
  Cut a = Cut::decode(8), b{CutKind::decode, 5, 7, 8};
  EXPECT_EQ(a, b);
  EXPECT_EQ(CutHash()(a), CutHash()(b));
  EXPECT_NE(Cut::decode(8), Cut::decode(9));
  std::unordered_set<Cut, CutHash> set;
  for (CutKind k : all_cut_kinds()) set.insert(Cut{k, 1, 2, 3});
  EXPECT_EQ(set.size(), 14u);
}

TEST(Cut, RefusesExactlyTheImpossibleOnes) {
  ModelSpec s = builtin_spec("tiny");
  EXPECT_THROW(Cut::decode_layer(2, 8).check_possible(s), Refused);
  EXPECT_THROW(Cut::decode(0).check_possible(s), Refused);
  EXPECT_THROW(Cut::batch(0, 8).check_possible(s), Refused);
  EXPECT_NO_THROW(Cut::decode_layer(1, 8).check_possible(s));
  EXPECT_THROW(Cut::prefill(9, 8).check_possible(s), Refused);  // no position satisfies pos + rows <= ctx
  EXPECT_THROW(Cut::prefill_layer(0, 9, 8).check_possible(s), Refused);
  EXPECT_NO_THROW(Cut::prefill(8, 8).check_possible(s));
  EXPECT_NO_THROW(Cut::batch(9, 8).check_possible(s));  // batch rows have caches of their own
}

TEST(Signature, MatchesTheBriefsTable) {
  ModelSpec s = builtin_spec("tiny");  // V=32 D=16 K=2 E=4 L=2
  CutSignature batch = signature(Cut::batch(3, 8), s);
  ASSERT_EQ(batch.inputs.size(), 6u);
  EXPECT_EQ(batch.inputs[0].name, "tokens");
  EXPECT_EQ(batch.input("pos")->type.str(), "i32[3]");
  EXPECT_EQ(batch.input("k.1")->type.str(), "f32[3,8,2,4]");
  EXPECT_EQ(batch.output("logits")->type.str(), "f32[3,32]");
  EXPECT_EQ(batch.output("next")->type.str(), "i32[3]");
  CutSignature prefill = signature(Cut::prefill(3, 8), s);
  EXPECT_EQ(prefill.input("pos")->range->hi, 5);
  EXPECT_EQ(prefill.output("logits")->type.str(), "f32[32]");
  CutSignature layer = signature(Cut::decode_layer(1, 8), s);
  EXPECT_EQ(layer.inputs.size(), 4u);
  EXPECT_TRUE(layer.input("k.1") && !layer.input("k.0"));
  EXPECT_EQ(layer.output("x")->type.str(), "f32[16]");
  CutSignature fwd = signature(Cut::forward(), s);
  EXPECT_EQ(fwd.inputs.size(), 1u);
  EXPECT_EQ(fwd.outputs.size(), 2u);
}

TEST(Safetensors, RoundTripsAndRefusesMalformedFiles) {
  TensorMap t{{"a", Tensor::of_f32({2, 2}, {1, 2, 3, 4})}, {"b", Tensor::of_i32({3}, {-1, 0, 7})}};
  std::string bytes = encode_safetensors(t, {{"k", "v"}});
  auto span = std::as_bytes(std::span(bytes.data(), bytes.size()));
  SafetensorsContents back = parse_safetensors(span, "x", nullptr);
  EXPECT_TRUE(back.tensors.at("a").same_bits(t.at("a")));
  EXPECT_TRUE(back.tensors.at("b").same_bits(t.at("b")));
  EXPECT_EQ(back.metadata.at("k"), "v");
  EXPECT_THROW(parse_safetensors(span.first(bytes.size() - 1), "x", nullptr), FormatError);
  EXPECT_THROW(parse_safetensors(span.first(5), "x", nullptr), FormatError);
}

TEST(Weights, SyntheticWeightsAreSeededAndScaled) {
  ModelSpec s = builtin_spec("tiny");
  TensorMap a = synthetic_weights(s, 1), b = synthetic_weights(s, 1), c = synthetic_weights(s, 2);
  EXPECT_NO_THROW(check_weights(a, s, "synthetic"));
  for (const auto& [name, t] : a) EXPECT_TRUE(t.same_bits(b.at(name))) << name;
  EXPECT_FALSE(a.at("tok_embeddings").same_bits(c.at("tok_embeddings")));
  // Uniform with standard deviation 1/sqrt(fan_in): every value within sqrt(3/fan_in).
  for (float v : a.at("layers.0.attention.wq").as<float>()) EXPECT_LE(std::abs(v), std::sqrt(3.0f / 16) + 1e-6f);
  for (float v : a.at("norm").as<float>()) EXPECT_TRUE(v >= 0.5f && v <= 1.5f);
}

}  // namespace
}  // namespace cutcheck
