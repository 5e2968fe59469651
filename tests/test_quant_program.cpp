// Quantized weights in the program language: a model whose matrices are stored in a block
// format runs exactly as the f32 model of the same weights dequantized, unsplit and split,
// and its bound is that model's; the language refuses what would split a block.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include <cstring>

#include "author/author.h"
#include "core/error.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "faults/catalog.h"
#include "harness/runner.h"
#include "harness/split.h"
#include "model/sharding.h"
#include "model/weights.h"
#include "program/inputs.h"
#include "properties/compare.h"
#include "program/text.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

class QuantizedModel : public ::testing::TestWithParam<DType> {};

TEST_P(QuantizedModel, RunsAsTheF32ModelOfItsDequantizedWeights) {
  const ModelSpec q = test::blocks_spec(GetParam());
  ModelSpec f = q;
  f.dtype = DType::f32;
  const TensorMap weights = synthetic_weights(q, 7);
  // Matrices are stored in the format, at its size; vectors stay f32.
  EXPECT_EQ(weights.at("layers.0.attention.wq").type(), (TensorType{GetParam(), {512, 256}}));
  EXPECT_EQ(weights.at("layers.0.attention.wq").bytes(), uint64_t(bytes_for(*quant_format(GetParam()), 512, 256)));
  EXPECT_EQ(weights.at("norm").type(), (TensorType{DType::f32, {256}}));
  ReferenceRunner quantized(q, weights), plain(f, f32_weights(weights));
  // Without keep_values (as `cutcheck run` runs), the contractions read the weights as
  // stored, a panel of rows dequantized at a time: the same bits.
  RunOptions lean;
  lean.keep_values = false;
  ReferenceRunner as_stored(q, weights, {}, lean);
  for (const Cut& cut : {Cut::decode(12), Cut::prefill(3, 12), Cut::batch_embed(3), Cut::decode_layer(1, 12)}) {
    SCOPED_TRACE(cut.str());
    const Program program = authored_program(cut, q);
    const TensorMap in = random_inputs(program, 5);
    const TensorMap want = plain.run(cut, in);
    EXPECT_EQ(bitwise_difference(want, quantized.run(cut, in)), std::nullopt);
    EXPECT_EQ(bitwise_difference(want, as_stored.run(cut, in)), std::nullopt);
  }
  // The bound treats the stored weights as exact, as it does f32 ones: the program with its
  // quantized types read as f32 (each convert then the identity) on the dequantized weights
  // has the same ops, the same random streams, and the same allowances.
  const Cut cut = Cut::decode(12);
  const Program program = authored_program(cut, q);
  std::string text = print(program);
  const std::string name(dtype_name(GetParam()));
  for (size_t at = text.find(" : " + name + "["); at != std::string::npos; at = text.find(" : " + name + "[", at))
    text.replace(at, 3 + name.size(), " : f32");
  const TensorMap in = random_inputs(program, 6);
  Executable quantized_exe(program, weights), plain_exe(parse_and_verify(text, "as f32"), f32_weights(weights));
  const Expected a = expect(quantized_exe, in, Tolerance::bound(Precision::f32)),
                 b = expect(plain_exe, in, Tolerance::bound(Precision::f32));
  EXPECT_EQ(bitwise_difference(b.values, a.values), std::nullopt);
  EXPECT_EQ(bitwise_difference(b.bounds, a.bounds), std::nullopt);
}

TEST_P(QuantizedModel, SplitsOverChipsOnWholeBlocks) {
  const ModelSpec q = test::blocks_spec(GetParam());
  const TensorMap weights = synthetic_weights(q, 8);
  const Cut cut = Cut::decode(10);
  ReferenceRunner whole(q, weights);
  const TensorMap in = random_inputs(authored_program(cut, q), 9);
  const TensorMap want = whole.run(cut, in);
  SplitRunner split(q, weights, 2);
  const TensorMap got = split.run(cut, in);
  // A split sums in another order: close, and each chip's weights are the whole model's
  // blocks, so the split of the dequantized model gives the same bits.
  ModelSpec f = q;
  f.dtype = DType::f32;
  SplitRunner plain(f, f32_weights(weights), 2);
  EXPECT_EQ(bitwise_difference(plain.run(cut, in), got), std::nullopt);
  EXPECT_EQ(want.at("logits").type(), got.at("logits").type());
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedModel,
                         ::testing::Values(DType::q8_0, DType::q4_0, DType::q5_0, DType::q4_K, DType::q6_K, DType::i8_row),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(QuantizedWeights, WeightsFilesHoldTheBlocksAsBytes) {
  const ModelSpec q = test::blocks_spec(DType::q4_0);
  const TensorMap weights = synthetic_weights(q, 3);
  const fs::path dir = test::temp_dir("quant-weights");
  write_weights(dir, weights, q);
  // U8 [rows, row bytes]: 256 values are 8 blocks of 18 bytes.
  const SafetensorsFile file = SafetensorsFile::open(weights_file(dir));
  const StoredTensor& wq = file.index().tensors.at("layers.1.attention.wq");
  EXPECT_EQ(wq.dtype, "U8");
  EXPECT_EQ(wq.shape, (Shape{512, 144}));
  EXPECT_EQ(bitwise_difference(weights, read_weights(dir, q)), std::nullopt);
  // write_synthetic_weights streams the same bytes.
  const fs::path streamed = test::temp_dir("quant-streamed");
  write_synthetic_weights(streamed, q, 3);
  EXPECT_EQ(read_file(weights_file(streamed), 1 << 24), read_file(weights_file(dir), 1 << 24));
  // Read as another type, the tensor is refused by name.
  ModelSpec other = q;
  other.dtype = DType::q8_0;
  try {
    read_weights(dir, other);
    ADD_FAILURE() << "read as q8_0";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), weights_file(dir).string() +
                                         ": weight 'tok_embeddings' is U8 [40,144], the spec needs q8_0[40,256] (its blocks, "
                                         "stored as U8 [40,272])");
  }
}

TEST(QuantizedWeights, SpecsAndSplitsNeedWholeBlocks) {
  ModelSpec s = test::blocks_spec(DType::q4_K);
  s.ffn = 384;  // 1.5 super-blocks
  try {
    s.validate();
    ADD_FAILURE() << "ffn 384 in q4_K";
  } catch (const SpecError& e) {
    EXPECT_THAT(e.what(), HasSubstr("q4_K stores rows in whole blocks of 256 values, but the rows of "
                                    "layers.0.feed_forward.w2 (384 values) are not"));
  }
  // Weights of a type of their own: the first one left in the spec's dtype is named, and
  // with every w2 in f32 the spec holds.
  for (int64_t l = 0; l + 1 < s.layers; ++l) s.weight_dtypes[weight::w2(l)] = DType::f32;
  try {
    s.validate();
    ADD_FAILURE() << "the last layer's w2 in q4_K";
  } catch (const SpecError& e) {
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("the rows of {} (384 values)", weight::w2(s.layers - 1))));
  }
  s.weight_dtypes[weight::w2(s.layers - 1)] = DType::q8_0;  // 384 = 12 blocks of 32
  EXPECT_NO_THROW(s.validate());
  EXPECT_EQ(stored_type(s, {weight::w2(0), {s.dim, s.ffn}}).dtype, DType::f32);
  EXPECT_EQ(stored_type(s, {weight::w2(s.layers - 1), {s.dim, s.ffn}}).dtype, DType::q8_0);
  EXPECT_EQ(stored_type(s, {weight::w1(0), {s.ffn, s.dim}}).dtype, DType::q4_K);
  // wo's rows (heads x head_dim = 256 values) split in two are half a q4_K super-block.
  ModelSpec q = test::blocks_spec(DType::q4_K);
  q.heads = 4;
  ASSERT_TRUE(widths_unsplittable(q, 2));
  EXPECT_EQ(*widths_unsplittable(q, 2),
            "tp = 2 splits heads x head_dim = 256 into parts of 128 values, not whole 256-value q4_K blocks");
  EXPECT_FALSE(widths_unsplittable(test::blocks_spec(DType::q4_K), 2));
  // Every wo in q8_0 of its own: halves of 128 values are whole q8_0 blocks, and no wo is
  // left in q4_K; one left in q4_K cannot split.
  for (int64_t l = 0; l < q.layers; ++l) q.weight_dtypes[weight::wo(l)] = DType::q8_0;
  EXPECT_FALSE(widths_unsplittable(q, 2));
  q.weight_dtypes.erase(weight::wo(0));
  EXPECT_TRUE(widths_unsplittable(q, 2));
}

// A quantized format's fault acts on a spec whose every matrix is in one of its formats
// (so that every cut changes); a matrix of a type of its own outside them takes that away.
TEST(QuantizedWeights, FaultsActWhereEveryMatrixIsInTheirFormats) {
  ModelSpec s = test::blocks_spec(DType::q4_0);
  const Cut decode = Cut::parse("decode{ctx=4}");
  const Fault& nibbles = find_fault("nibbles-swapped");
  const Fault& neighbour = find_fault("block-scale-neighbour");
  EXPECT_TRUE(nibbles.acts_on(decode, 1, s));
  s.weight_dtypes[weight::w2(0)] = DType::q8_0;  // blocks, no nibbles
  EXPECT_FALSE(nibbles.acts_on(decode, 1, s));
  EXPECT_TRUE(neighbour.acts_on(decode, 1, s));
  // The rewrite reaches the matrix of its own too: every dequantization of the program.
  const Program program = author_program(decode, s);
  const Program faulty = neighbour.apply(program);
  EXPECT_THAT(print(faulty), HasSubstr(weight::w2(0) + ".f32.fault"));
  s.weight_dtypes[weight::w2(0)] = DType::f32;
  EXPECT_FALSE(neighbour.acts_on(decode, 1, s));
}

// The language: quantized values are weights, converted to f32 or gathered by rows.
TEST(QuantizedLanguage, RefusesWhatWouldSplitABlock) {
  const auto error = [](const std::string& body) {
    try {
      parse_and_verify("program \"q\"\ninput %t : i32[2] range [0, 3]\n" + body, "q.txt");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error("weight %w : q4_0[4,64]\n%x = gather %w, %t : q4_0[2,64]\n%y = convert %x : f32[2,64]\noutput y = %y\n"),
            "accepted");
  EXPECT_THAT(error("weight %w : q4_0[4,30]\n%y = convert %w : f32[4,30]\noutput y = %y\n"),
              HasSubstr("q.txt:3:1: weight %w: q4_0[4,30]: q4_0: a row of 30 values is not a whole number of 32-value blocks"));
  EXPECT_THAT(error("weight %w : q4_0[4,64]\n%r = reshape %w : q4_0[8,32]\n%y = convert %r : f32[8,32]\noutput y = %y\n"),
              HasSubstr("q4_0[4,64] is quantized: it is only converted to f32, taken apart by block_field or gathered by rows"));
  EXPECT_THAT(error("weight %w : q4_0[64]\n%x = gather %w, %t : q4_0[2]\n%y = convert %x : f32[2]\noutput y = %y\n"),
              HasSubstr("gathered by rows of a table of rank 2 or more"));
  EXPECT_THAT(error("weight %w : q8_0[4,32]\n%y = convert %w : bf16[4,32]\noutput y = %y\n"),
              HasSubstr("a quantized value converts to f32 only, not q8_0[4,32] to bf16[4,32]"));
  EXPECT_THAT(error("weight %w : q8_0[4,32]\noutput w = %w\n"), HasSubstr("output 'w': q8_0[4,32] is quantized"));
  EXPECT_THAT(error("input %q : q4_K[1,256]\noutput w = %t\n"), HasSubstr("inputs are f32, i32, bf16 or f16, got q4_K[1,256]"));
  // Printed and parsed back alike.
  const std::string text = "program \"q\"\n\nweight %w : q6_K[2,256]\n%y = convert %w : f32[2,256]\n\noutput y = %y\n";
  EXPECT_EQ(print(parse_and_verify(text, "q.txt")), print(parse_and_verify(print(parse_and_verify(text, "q.txt")), "again")));
}

// block_field takes a quantized value apart; written out in the language, codes x scales
// (- mins) is convert's value bit for bit, whatever the bytes (every code, every sign, the
// scales random but finite): the form the dequantization faults rewrite (faults/).
TEST(QuantizedLanguage, CodesTimesScalesMinusMinsIsTheConvertedValue) {
  for (QuantFormat format : all_quant_formats) {
    SCOPED_TRACE(quant_format_name(format));
    const int64_t C = 512, per = values_per_scale(format, C), n = C / per;
    const std::string t = std::string(dtype_name(dtype_of(format)));
    std::string text = fmt::format(
        "program \"parts\"\nweight %w : {0}[3,{1}]\n%v = convert %w : f32[3,{1}]\n"
        "%c = block_field %w {{field = codes}} : f32[3,{1}]\n%s = block_field %w {{field = scales}} : f32[3,{2}]\n"
        "%sb = broadcast_in_dim %s {{broadcast_dimensions = [0, 1]}} : f32[3,{2},{3}]\n%sr = reshape %sb : f32[3,{1}]\n"
        "%p = multiply %c, %sr : f32[3,{1}]\n",
        t, C, n, per);
    if (has_mins(format))
      text += fmt::format(
          "%m = block_field %w {{field = mins}} : f32[3,{1}]\n"
          "%mb = broadcast_in_dim %m {{broadcast_dimensions = [0, 1]}} : f32[3,{1},{2}]\n%mr = reshape %mb : f32[3,{0}]\n"
          "%d = subtract %p, %mr : f32[3,{0}]\noutput v = %v\noutput d = %d\n",
          C, n, per);
    else
      text += "output v = %v\noutput d = %p\n";
    // Random bytes, with each block's scales made finite f16 (i8_row: a finite f32).
    Tensor w({dtype_of(format), {3, C}});
    SplitMix64 rng{uint64_t(format) + 1};
    for (std::byte& b : w.raw_mut()) b = std::byte(rng.next() & 0xff);
    const BlockLayout block = block_layout(format, C);
    const auto finite_f16 = [&](std::byte* at) {  // exponent 1..30: normal and finite
      const uint16_t h = uint16_t((rng.next() & 0x83ff) | ((1 + rng.next() % 30) << 10));
      at[0] = std::byte(h & 0xff), at[1] = std::byte(h >> 8);
    };
    for (int64_t at = 0; at < int64_t(w.bytes()); at += block.bytes) {
      std::byte* b = w.raw_mut().data() + at;
      switch (format) {
        case QuantFormat::q8_0: case QuantFormat::q4_0: case QuantFormat::q5_0: finite_f16(b); break;
        case QuantFormat::q4_K: finite_f16(b), finite_f16(b + 2); break;
        case QuantFormat::q6_K: finite_f16(b + 208); break;
        case QuantFormat::i8_row: {
          const float s = 4 * rng.symmetric();
          std::memcpy(b, &s, 4);
          break;
        }
      }
    }
    Executable e(parse_and_verify(text, "parts"), {{"w", w}});
    const TensorMap out = e.run({});
    EXPECT_TRUE(out.at("v").same_bits(out.at("d"))) << bitwise_difference({{"x", out.at("v")}}, {{"x", out.at("d")}}).value_or("");
    // A wrong field is refused by the type rule.
    if (!has_mins(format)) {
      EXPECT_THROW(parse_and_verify(fmt::format("program \"m\"\nweight %w : {0}[3,{1}]\n%m = block_field %w {{field = mins}} "
                                                ": f32[3,{2}]\noutput m = %m\n", t, C, n),
                                    "m"),
                   VerifyError);
    }
  }
}

}  // namespace
}  // namespace cutcheck
