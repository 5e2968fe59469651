// The exporters (model/gguf_export.h, model/hf_export.h) against the importers: a model
// written as GGUF or as a Hugging Face folder and read back is the same model, bit for bit,
// for stories260K and for random specs of every dtype, both rotary styles, tied and untied
// heads and grouped-query attention. The expected weights are made here, independently of
// the exporters: the rows permuted by the test suite's own permutations
// (tests/checkpoint_writers.h) and rounded by its own rounding.
#include <gmock/gmock.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "model/checkpoint_export.h"
#include "model/gguf.h"
#include "model/gguf_export.h"
#include "model/hf.h"
#include "model/hf_export.h"
#include "model/llama2c.h"
#include "model/weights.h"
#include "properties/generators.h"
#include "tests/checkpoint_writers.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

// Every element as f32 (widening bf16 and f16 is exact), so that tensors of any dtype
// compare by value bits.
Tensor as_f32(const Tensor& t) {
  Tensor out({DType::f32, t.shape()});
  auto o = out.as_mut<float>();
  const std::byte* p = t.raw().data();
  for (size_t i = 0; i < o.size(); ++i) {
    if (t.dtype() == DType::f32) {
      std::memcpy(&o[i], p + 4 * i, 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, p + 2 * i, 2);
      o[i] = t.dtype() == DType::bf16 ? bf16_to_f32(bits) : f16_to_f32(bits);
    }
  }
  return out;
}

// f32 values rounded to `dtype` by the test suite's own rounding, as f32 again.
Tensor rounded(const Tensor& f32, DType dtype) {
  if (dtype == DType::f32) return f32;
  Tensor out({DType::f32, f32.shape()});
  auto in = f32.as<float>();
  auto o = out.as_mut<float>();
  for (size_t i = 0; i < o.size(); ++i)
    o[i] = dtype == DType::bf16 ? bf16_to_f32(test::round_to_bf16(in[i])) : f16_to_f32(test::round_to_f16(in[i]));
  return out;
}

bool same_values(const Tensor& a, const Tensor& b) { return as_f32(a).same_bits(as_f32(b)); }

// The heads a weight's rows are permuted over for the rotary order (0: not permuted),
// written out here rather than taken from the exporter.
int64_t permuted_heads(const ModelSpec& spec, const std::string& name) {
  for (int64_t l = 0; l < spec.layers; ++l) {
    if (name == weight::wq(l) || name == weight::bq(l)) return spec.heads;
    if (name == weight::wk(l) || name == weight::bk(l)) return spec.kv_heads;
    if (name == weight::q_norm(l) || name == weight::k_norm(l)) return 1;
  }
  return 0;
}

// The weights a file of rotary order `to` and dtype `dtype` must import as.
TensorMap expected_weights(const ModelSpec& spec, const TensorMap& weights, RopeStyle to, DType dtype) {
  TensorMap out;
  for (const auto& [name, t] : weights) {
    Tensor v = as_f32(t);
    if (const int64_t heads = permuted_heads(spec, name); heads > 0 && spec.rope_style != to)
      v = to == RopeStyle::half ? test::meta_to_hf_rows(v, heads) : test::hf_to_llamacpp_rows(v, heads);
    out.emplace(name, rounded(v, dtype));
  }
  return out;
}

// The spec an export of `spec` imports as.
ModelSpec expected_spec(ModelSpec spec, const std::string& name, RopeStyle style, DType dtype) {
  spec.name = name;
  spec.rope_style = style;
  spec.dtype = dtype;
  return spec;
}

// Empty when the imported model is the expected one; else what differs.
std::string model_difference(const ModelSpec& want_spec, const TensorMap& want, const ImportedModel& got) {
  if (!(got.spec == want_spec)) return "spec " + got.spec.to_json().dump() + " != " + want_spec.to_json().dump();
  if (got.weights.size() != want.size()) return "weight count differs";
  for (const auto& [name, w] : want) {
    auto it = got.weights.find(name);
    if (it == got.weights.end()) return "missing " + name;
    if (it->second.dtype() != want_spec.dtype) return name + " has dtype " + std::string(dtype_name(it->second.dtype()));
    if (!same_values(it->second, w)) return name + " differs";
  }
  return "";
}

std::string round_trip_gguf(const ModelSpec& spec, const TensorMap& weights, DType dtype, const fs::path& dir) {
  const fs::path file = dir / "model.gguf";
  write_gguf(file, spec, weights, dtype);
  return model_difference(expected_spec(spec, "model", RopeStyle::interleaved, dtype),
                          expected_weights(spec, weights, RopeStyle::interleaved, dtype), read_gguf(file));
}

std::string round_trip_hf(const ModelSpec& spec, const TensorMap& weights, DType dtype, const fs::path& dir) {
  const fs::path folder = dir / "hf";
  write_hf(folder, spec, weights, dtype);
  return model_difference(expected_spec(spec, "hf", RopeStyle::half, dtype),
                          expected_weights(spec, weights, RopeStyle::half, dtype), read_hf(folder));
}

TEST(Export, Stories260KRoundTripsBitwise) {
  SKIP_WITHOUT_SHARED(shared);
  const Llama2cModel m = read_llama2c(shared / "models" / "stories260K.bin");
  const fs::path dir = test::temp_dir("export-stories");
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    EXPECT_EQ(round_trip_gguf(m.spec, m.weights, dtype, dir), "") << dtype_name(dtype);
    EXPECT_EQ(round_trip_hf(m.spec, m.weights, dtype, dir), "") << dtype_name(dtype);
  }
  // A half-order model written as GGUF reads back as llama2.c's weights: the two
  // permutations undo each other.
  ModelSpec half = m.spec;
  half.rope_style = RopeStyle::half;
  write_hf(dir / "hf", m.spec, m.weights, DType::f32);
  const ImportedModel from_hf = read_hf(dir / "hf");
  write_gguf(dir / "back.gguf", from_hf.spec, from_hf.weights, DType::f32);
  const ImportedModel back = read_gguf(dir / "back.gguf");
  for (const auto& [name, w] : m.weights) EXPECT_TRUE(back.weights.at(name).same_bits(w)) << name;
}

// The specs each format can express: GGUF has none of the knobs but linear scaling; a
// Hugging Face class has q/k/v biases or q/k norms, not both.
ModelSpec gguf_expressible(ModelSpec s) {
  s.qk_norm = s.attention_bias = false;
  s.sliding_window = 0;
  if (s.rope_scaling.type == RopeScalingType::llama3) s.rope_scaling = {};
  return s;
}

rc::Gen<DType> gen_dtype() { return rc::gen::element(DType::f32, DType::bf16, DType::f16); }

RC_GTEST_PROP(Export, RandomSpecsRoundTripThroughGguf, ()) {
  static const fs::path dir = test::temp_dir("export-rc-gguf");
  ModelSpec spec = gguf_expressible(*gen_spec());
  spec.dtype = *gen_dtype();
  const DType dtype = *gen_dtype();
  const TensorMap weights = synthetic_weights(spec, *rc::gen::arbitrary<uint64_t>());
  const std::string difference = round_trip_gguf(spec, weights, dtype, dir);
  RC_ASSERT(difference == "");
}

RC_GTEST_PROP(Export, RandomSpecsRoundTripThroughHuggingFace, ()) {
  static const fs::path dir = test::temp_dir("export-rc-hf");
  ModelSpec spec = *gen_spec();
  if (spec.attention_bias) spec.qk_norm = false;
  spec.dtype = *gen_dtype();
  const DType dtype = *gen_dtype();
  const TensorMap weights = synthetic_weights(spec, *rc::gen::arbitrary<uint64_t>());
  const std::string difference = round_trip_hf(spec, weights, dtype, dir);
  RC_ASSERT(difference == "");
}

// The check itself fails where it must: a GGUF written without the permutation (a
// half-order spec's rows as they are) reads back as another model.
TEST(Export, RoundTripCheckCatchesUnpermutedRows) {
  ModelSpec spec = builtin_spec("tiny");
  spec.rope_style = RopeStyle::half;
  const TensorMap weights = synthetic_weights(spec, 7);
  ModelSpec mislabelled = spec;
  mislabelled.rope_style = RopeStyle::interleaved;  // the exporter then keeps the rows as they are
  const fs::path dir = test::temp_dir("export-unpermuted");
  write_gguf(dir / "model.gguf", mislabelled, weights, DType::f32);
  const std::string difference =
      model_difference(expected_spec(spec, "model", RopeStyle::interleaved, DType::f32),
                       expected_weights(spec, weights, RopeStyle::interleaved, DType::f32), read_gguf(dir / "model.gguf"));
  EXPECT_THAT(difference, HasSubstr("layers.0.attention.wk differs"));
}

TEST(Export, RefusesWhatTheFormatCannotExpress) {
  ModelSpec spec = builtin_spec("tiny");
  const fs::path dir = test::temp_dir("export-refused");
  auto gguf_error = [&](ModelSpec s) {
    try {
      write_gguf(dir / "x.gguf", s, synthetic_weights(s, 1), DType::f32);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ModelSpec s = spec;
  s.qk_norm = true;
  EXPECT_THAT(gguf_error(s), HasSubstr("qk_norm"));
  s = spec, s.sliding_window = 4;
  EXPECT_THAT(gguf_error(s), HasSubstr("sliding_window = 4"));
  s = spec, s.attention_bias = true;
  EXPECT_THAT(gguf_error(s), HasSubstr("attention_bias"));
  s = spec, s.rope_scaling = {RopeScalingType::llama3, 8};
  EXPECT_THAT(gguf_error(s), HasSubstr("llama3"));
  EXPECT_FALSE(fs::exists(dir / "x.gguf"));
  s = spec, s.attention_bias = s.qk_norm = true;
  EXPECT_THROW(write_hf(dir / "hf", s, synthetic_weights(s, 1), DType::f32), Error);
  EXPECT_FALSE(fs::exists(dir / "hf"));
}

TEST(Export, RefusesNarrowingThatOverflows) {
  ModelSpec spec = builtin_spec("tiny");
  TensorMap weights = synthetic_weights(spec, 1);
  Tensor big = weights.at(weight::w2(0)).clone();
  big.as_mut<float>()[3] = 70000.0f;  // beyond f16's 65504
  weights[weight::w2(0)] = big;
  const fs::path dir = test::temp_dir("export-overflow");
  try {
    write_gguf(dir / "x.gguf", spec, weights, DType::f16);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("weight 'layers.0.feed_forward.w2': element 3 is 70000"));
  }
  EXPECT_FALSE(fs::exists(dir / "x.gguf"));
  write_gguf(dir / "x.gguf", spec, weights, DType::bf16);  // bf16 has f32's range
}

TEST(Export, HfRefusesToReplaceAForeignFolder) {
  const ModelSpec spec = builtin_spec("tiny");
  const fs::path dir = test::temp_dir("export-foreign");
  write_file_atomic(dir / "hf" / "notes.txt", "mine");
  EXPECT_THROW(write_hf(dir / "hf", spec, synthetic_weights(spec, 1), DType::f32), IoError);
  EXPECT_EQ(test::read_whole(dir / "hf" / "notes.txt"), "mine");
  // An earlier export is replaced as a whole.
  write_hf(dir / "ok", spec, synthetic_weights(spec, 1), DType::f32);
  write_hf(dir / "ok", spec, synthetic_weights(spec, 2), DType::bf16);
  EXPECT_EQ(read_hf(dir / "ok").spec.dtype, DType::bf16);
}

}  // namespace
}  // namespace cutcheck
