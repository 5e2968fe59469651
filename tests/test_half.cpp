// bf16 and f16 weights: narrowing agrees with the test writers' independent rounding;
// safetensors carries both; the language moves them and widens them with convert, and
// refuses arithmetic on them; a model authored in bf16 computes the same bits as the f32
// model of its widened weights (widening is exact, and nothing else changes); seeded
// weights stream to disk as the same bytes as the in-memory writer's; an interpreter that
// releases dead values gives the same outputs.
#include <gmock/gmock.h>

#include <cmath>
#include <cstring>

#include "author/author.h"
#include "core/error.h"
#include "core/half.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "harness/runner.h"
#include "harness/split.h"
#include "harness/tolerance.h"
#include "model/signature.h"
#include "model/weights.h"
#include "program/inputs.h"
#include "program/text.h"
#include "tests/checkpoint_writers.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

TEST(HalfFloats, NarrowingMatchesTheWritersRounding) {
  auto check = [](float v) {
    ASSERT_EQ(f32_to_bf16(v), test::round_to_bf16(v)) << v;
    ASSERT_EQ(f32_to_f16(v), test::round_to_f16(v)) << v;
  };
  // Every f16 and bf16 value, the midpoints next to them (ties), and random bit patterns.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float h = f16_to_f32(uint16_t(bits)), b = bf16_to_f32(uint16_t(bits));
    for (float v : {h, b}) {
      if (!std::isfinite(v)) continue;
      check(v);
      check(std::nextafter(v, INFINITY));
      check(std::nextafter(v, -INFINITY));
    }
    if (std::isfinite(h) && bits != 0x7bff && bits != 0xfbff) {
      const float next = f16_to_f32(uint16_t(bits + 1));
      if (std::isfinite(next)) check(float((double(h) + double(next)) / 2));  // exactly halfway
    }
  }
  SplitMix64 rng{7};
  for (int i = 0; i < 200000; ++i) {
    float v;
    const uint32_t bits = uint32_t(rng.next());
    std::memcpy(&v, &bits, 4);
    if (std::isfinite(v)) check(v);
  }
  // Beyond the largest finite value: infinity. NaN stays NaN.
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(65519.996f), 0x7bff);
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
}

TEST(HalfFloats, SafetensorsCarriesBf16AndF16) {
  TensorMap t;
  Tensor b({DType::bf16, {2, 3}}), h({DType::f16, {3}});
  for (int i = 0; i < 6; ++i) reinterpret_cast<uint16_t*>(b.raw_mut().data())[i] = f32_to_bf16(float(i) - 2.5f);
  for (int i = 0; i < 3; ++i) reinterpret_cast<uint16_t*>(h.raw_mut().data())[i] = f32_to_f16(float(i) / 3);
  t.emplace("b", b);
  t.emplace("h", h);
  const fs::path file = test::temp_dir("half-st") / "t.safetensors";
  write_safetensors(file, t);
  const std::string text = test::read_whole(file);
  EXPECT_THAT(text, HasSubstr("\"dtype\":\"BF16\""));
  EXPECT_THAT(text, HasSubstr("\"dtype\":\"F16\""));
  TensorMap back = read_safetensors(file).tensors;
  EXPECT_TRUE(back.at("b").same_bits(b));
  EXPECT_TRUE(back.at("h").same_bits(h));
}

const char* const widen_program = R"(program "widen"
input %tokens : i32[2] range [0, 3]
weight %table : bf16[4,3]
weight %w : f16[2,3]
%rows = gather %table, %tokens : bf16[2,3]
%x = convert %rows : f32[2,3]
%wide = convert %w : f32[2,3]
%y = multiply %x, %wide : f32[2,3]
%back = convert %y : bf16[2,3]
output y = %y
output back = %back
)";

TEST(HalfFloats, ProgramsMoveAndWidenThem) {
  Program p = parse_and_verify(widen_program, "widen");
  EXPECT_EQ(print(parse_and_verify(print(p), "printed")), print(p));
  TensorMap weights;
  Tensor table({DType::bf16, {4, 3}}), w({DType::f16, {2, 3}});
  auto* tb = reinterpret_cast<uint16_t*>(table.raw_mut().data());
  auto* wb = reinterpret_cast<uint16_t*>(w.raw_mut().data());
  for (int i = 0; i < 12; ++i) tb[i] = f32_to_bf16(float(i) * 1.5f + 0.25f);  // exact in bf16
  for (int i = 0; i < 6; ++i) wb[i] = f32_to_f16(1.0f / float(1 << i));
  weights.emplace("table", table);
  weights.emplace("w", w);
  Executable e(std::move(p), weights);
  TensorMap out = e.run({{"tokens", Tensor::of_i32({2}, {3, 1})}});
  auto y = out.at("y").as<float>();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(y[size_t(i)], (float(9 + i) * 1.5f + 0.25f) / float(1 << i));
    EXPECT_EQ(y[size_t(3 + i)], (float(3 + i) * 1.5f + 0.25f) / float(1 << (3 + i)));
  }
  EXPECT_EQ(out.at("back").dtype(), DType::bf16);
  const auto* back = reinterpret_cast<const uint16_t*>(out.at("back").raw().data());
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(back[i], test::round_to_bf16(y[i]));
}

TEST(HalfFloats, ArithmeticOnThemIsRefused) {
  auto error = [](const std::string& text) {
    try {
      parse_and_verify(text, "t");
    } catch (const VerifyError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_THAT(error("program \"t\"\nweight %w : bf16[2]\n%y = add %w, %w : bf16[2]\noutput y = %y\n"),
              HasSubstr("operands must be f32 or i32, got bf16[2]"));
  EXPECT_THAT(error("program \"t\"\nweight %w : bf16[2]\n%y = convert %w : i32[2]\noutput y = %y\n"),
              HasSubstr("bf16 and f16 convert to and from f32 only"));
  EXPECT_THAT(error("program \"t\"\nweight %w : bf16[2]\n%y = convert %w : f16[2]\noutput y = %y\n"),
              HasSubstr("bf16 and f16 convert to and from f32 only"));
  EXPECT_THAT(error("program \"t\"\n%c = constant {value = 1} : bf16[2]\noutput c = %c\n"),
              HasSubstr("result must be f32 or i32"));
  EXPECT_THAT(error("program \"t\"\nweight %w : f16[2,2]\nweight %v : f32[2]\n"
                    "%y = dot_general %w, %v {lhs_batching_dimensions = [], rhs_batching_dimensions = [], "
                    "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : f32[2]\noutput y = %y\n"),
              HasSubstr("dot_general"));
}

ModelSpec tiny_in(DType dtype) {
  ModelSpec s = builtin_spec("tiny");
  s.dtype = dtype;
  return s;
}

TensorMap widened(const TensorMap& weights) {
  TensorMap out;
  for (const auto& [name, t] : weights) {
    Tensor w({DType::f32, t.shape()});
    const auto* bits = reinterpret_cast<const uint16_t*>(t.raw().data());
    auto y = w.as_mut<float>();
    for (size_t i = 0; i < y.size(); ++i) y[i] = t.dtype() == DType::bf16 ? bf16_to_f32(bits[i]) : f16_to_f32(bits[i]);
    out.emplace(name, std::move(w));
  }
  return out;
}

// Widening is exact and the rest of the program is the f32 model's: the same bits.
TEST(HalfWeights, AModelInBf16IsItsWidenedF32Model) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    const ModelSpec half = tiny_in(dtype), f32 = tiny_in(DType::f32);
    const TensorMap weights = synthetic_weights(half, 5);
    EXPECT_EQ(weights.at(weight::wq(0)).dtype(), dtype);
    ReferenceRunner a(half, weights), b(f32, widened(weights));
    for (const Cut& cut : {Cut::decode(8), Cut::prefill(3, 8), Cut::batch(2, 8), Cut::forward(), Cut::decode_embed(),
                           Cut::decode_head(), Cut::decode_layer(1, 8)}) {
      SCOPED_TRACE(cut.str());
      Authored text = write(cut, half, "w");
      EXPECT_THAT(text.text, HasSubstr(std::string(": ") + std::string(dtype_name(dtype)) + "["));
      const TensorMap in = random_inputs(authored_program(cut, half), 9);
      const TensorMap x = a.run(cut, in), y = b.run(cut, in);
      for (const auto& [name, t] : y) EXPECT_TRUE(t.same_bits(x.at(name))) << name;
    }
  }
}

TEST(HalfWeights, SplitsShardThemAndAgree) {
  const ModelSpec spec = tiny_in(DType::bf16);
  const TensorMap weights = synthetic_weights(spec, 6);
  ReferenceRunner whole(spec, weights);
  SplitRunner split(spec, weights, 2);
  const Cut cut = Cut::decode(8);
  const TensorMap in = random_inputs(authored_program(cut, spec), 3);
  const TensorMap want = whole.run(cut, in), got = split.run(cut, in);
  // A split sums in another order: within the f32 bound of the unsplit run.
  const Tolerance tolerance = Tolerance::bound(Precision::f32);
  const Comparison c = compare(whole.expect(cut, in, tolerance), got, tolerance);
  EXPECT_TRUE(c.ok) << c.failure;
  EXPECT_EQ(want.at("next").as<int32_t>()[0], got.at("next").as<int32_t>()[0]);
}

TEST(HalfWeights, BoundsTreatThemAsExact) {
  // The bound of a bf16 model in bf16 precision, and in f16 (where widened bf16 values may round).
  const ModelSpec spec = tiny_in(DType::bf16);
  ReferenceRunner r(spec, synthetic_weights(spec, 8));
  const Cut cut = Cut::decode(8);
  const TensorMap in = random_inputs(authored_program(cut, spec), 4);
  for (Precision p : {Precision::f32, Precision::bf16, Precision::f16}) {
    const Tolerance t = Tolerance::bound(p);
    const Expected e = r.expect(cut, in, t);
    const Comparison c = compare(e, e.values, t);
    EXPECT_TRUE(c.ok) << c.failure;
    for (float b : e.bounds.at("logits").as<float>()) EXPECT_TRUE(std::isfinite(b));
  }
}

TEST(HalfWeights, SeededWeightsStreamToTheSameBytes) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    const ModelSpec spec = tiny_in(dtype);
    const fs::path streamed = test::temp_dir("half-streamed"), whole = test::temp_dir("half-whole");
    write_synthetic_weights(streamed, spec, 12);
    write_weights(whole, synthetic_weights(spec, 12), spec);
    EXPECT_EQ(test::read_whole(weights_file(streamed)), test::read_whole(weights_file(whole))) << dtype_name(dtype);
    const TensorMap back = read_weights(streamed, spec);
    EXPECT_EQ(back.at(weight::embedding()).dtype(), dtype);
  }
  // f32 seeded weights are the same values as before bf16 existed; bf16 ones round them.
  const TensorMap f = synthetic_weights(tiny_in(DType::f32), 3), b = synthetic_weights(tiny_in(DType::bf16), 3);
  const auto fv = f.at(weight::w2(1)).as<float>();
  const auto* bv = reinterpret_cast<const uint16_t*>(b.at(weight::w2(1)).raw().data());
  for (size_t i = 0; i < fv.size(); ++i) ASSERT_EQ(bv[i], test::round_to_bf16(fv[i]));
}

TEST(Interpreter, ReleasingDeadValuesGivesTheSameOutputs) {
  const ModelSpec spec = tiny_in(DType::bf16);
  const TensorMap weights = synthetic_weights(spec, 2);
  const Program program = authored_program(Cut::decode(8), spec);
  RunOptions lean;
  lean.keep_values = false;
  Executable kept(program, weights), released(program, weights, lean);
  for (uint64_t seed : {1, 2}) {  // twice: the released buffers come back
    const TensorMap in = random_inputs(program, seed);
    const TensorMap a = kept.run(in), b = released.run(in);
    for (const auto& [name, t] : a) EXPECT_TRUE(t.same_bits(b.at(name))) << name;
  }
  const ValueId widened_wq = *program.find(weight::wq(0) + ".f32");
  EXPECT_EQ(kept.value(widened_wq).dtype(), DType::f32);
  EXPECT_THROW(released.value(widened_wq), Error);
}

TEST(HalfWeights, SpecsSayTheirDtype) {
  ModelSpec spec = builtin_spec("llama3-8b");
  EXPECT_EQ(spec.dtype, DType::bf16);
  EXPECT_EQ(spec.to_json().at("dtype"), "bf16");
  EXPECT_FALSE(builtin_spec("tiny").to_json().contains("dtype"));  // f32 files stay as they were
  Json j = spec.to_json();
  j["dtype"] = "i32";
  EXPECT_THROW(ModelSpec::from_json(j, "spec.json"), FormatError);
  EXPECT_EQ(builtin_spec("qwen3-0.6b").head_dim * builtin_spec("qwen3-0.6b").heads, 2048);
}

}  // namespace
}  // namespace cutcheck
