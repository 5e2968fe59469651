// Quantized blocks (quant/): each format's layout on hand-worked blocks whose bytes and
// values are worked out here from the layout (scales and signs, zero blocks, the extreme
// codes, every scale position of the K-quants, rows of two blocks); hand-worked blocks from
// ggml's reference quantizers, ties included; dequantize(quantize(x)) within each format's
// error on random rows; and the refusals: lengths that are not whole blocks, sizes that
// overflow, non-finite scales and inputs, values too large for f16 scales.
// (tests/quant_ggml_identity.cpp checks byte identity with ggml itself.)
#include <gmock/gmock.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/random.h"
#include "core/quant_blocks.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "quant/rounding.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

std::vector<std::byte> bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(std::byte(v));
  return out;
}

std::vector<float> dequantize(QuantFormat format, const std::vector<std::byte>& blocks, int64_t n) {
  EXPECT_EQ(int64_t(blocks.size()), row_bytes(format, n));
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(format, blocks.data(), n, out.data());
  return out;
}

std::vector<std::byte> quantize(QuantFormat format, const std::vector<float>& x) {
  std::vector<std::byte> out(static_cast<size_t>(row_bytes(format, int64_t(x.size()))));
  quantize_row_reference(format, x.data(), int64_t(x.size()), out.data());
  return out;
}

// The message of the E that `f` throws ("" and a failure when it throws nothing).
template <class E, class F> std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

TEST(Quant, NamesAndBlockSizes) {
  for (QuantFormat f : all_quant_formats) {
    QuantFormat parsed;
    ASSERT_TRUE(parse_quant_format(quant_format_name(f), parsed));
    EXPECT_EQ(parsed, f);
  }
  QuantFormat parsed;
  EXPECT_FALSE(parse_quant_format("q4_k", parsed));  // ggml's spelling only
  // The sizes of ggml's structs: 2 + 32, 2 + 16, 2 + 2 + 12 + 128, 128 + 64 + 16 + 2.
  EXPECT_EQ(block_layout(QuantFormat::q8_0, 64).values, 32);
  EXPECT_EQ(block_layout(QuantFormat::q8_0, 64).bytes, 34);
  EXPECT_EQ(block_layout(QuantFormat::q4_0, 64).bytes, 18);
  EXPECT_EQ(block_layout(QuantFormat::q4_K, 256).values, 256);
  EXPECT_EQ(block_layout(QuantFormat::q4_K, 256).bytes, 144);
  EXPECT_EQ(block_layout(QuantFormat::q6_K, 256).bytes, 210);
  EXPECT_EQ(block_layout(QuantFormat::i8_row, 7).values, 7);
  EXPECT_EQ(block_layout(QuantFormat::i8_row, 7).bytes, 11);
}

TEST(Quant, BytesFor) {
  EXPECT_EQ(bytes_for(QuantFormat::q8_0, 3, 64), 3 * 2 * 34);
  EXPECT_EQ(bytes_for(QuantFormat::q4_0, 2, 32), 2 * 18);
  EXPECT_EQ(bytes_for(QuantFormat::q4_K, 1, 512), 2 * 144);
  EXPECT_EQ(bytes_for(QuantFormat::q6_K, 4, 256), 4 * 210);
  EXPECT_EQ(bytes_for(QuantFormat::i8_row, 3, 5), 3 * (4 + 5));
  EXPECT_EQ(bytes_for(QuantFormat::i8_row, 2, 0), 2 * 4);  // an empty row still carries its scale
  EXPECT_EQ(bytes_for(QuantFormat::q4_K, 0, 256), 0);
  EXPECT_EQ(bytes_for(QuantFormat::q6_K, 5, 0), 0);
}

TEST(Quant, BytesForRefusesRowsThatAreNotWholeBlocks) {
  EXPECT_THAT(error_of<FormatError>([] { bytes_for(QuantFormat::q4_K, 1, 100); }),
              HasSubstr("q4_K: a row of 100 values is not a whole number of 256-value blocks"));
  EXPECT_THAT(error_of<FormatError>([] { bytes_for(QuantFormat::q8_0, 2, 33); }),
              HasSubstr("q8_0: a row of 33 values is not a whole number of 32-value blocks"));
  EXPECT_THAT(error_of<FormatError>([] { row_bytes(QuantFormat::q6_K, 255); }), HasSubstr("q6_K: a row of 255 values"));
  EXPECT_THAT(error_of<FormatError>([] { row_bytes(QuantFormat::q4_0, 48); }), HasSubstr("q4_0: a row of 48 values"));
  EXPECT_THAT(error_of<FormatError>([] { bytes_for(QuantFormat::q8_0, -1, 32); }), HasSubstr("q8_0: -1 rows"));
  EXPECT_THAT(error_of<FormatError>([] { bytes_for(QuantFormat::i8_row, 1, -4); }),
              HasSubstr("i8_row: a row of -4 values: the length is negative"));
}

TEST(Quant, BytesForRefusesSizesThatOverflow) {
  constexpr int64_t max = std::numeric_limits<int64_t>::max();
  // 2^58 blocks of 34 bytes: more than 2^63 bytes in one row.
  EXPECT_THAT(error_of<LimitError>([&] { row_bytes(QuantFormat::q8_0, max - max % 32); }),
              HasSubstr("q8_0: the bytes of a row of"));
  EXPECT_THAT(error_of<LimitError>([&] { row_bytes(QuantFormat::i8_row, max); }), HasSubstr("i8_row"));
  EXPECT_THAT(error_of<LimitError>([] { bytes_for(QuantFormat::q6_K, int64_t{1} << 40, int64_t{1} << 30); }),
              HasSubstr("q6_K: the bytes of 1099511627776 rows of 1073741824 values"));
  // Just below the edge: 2^30 rows of 2^31 values of Q4_K, 2^30 * 2^23 * 144 bytes, fits.
  EXPECT_EQ(bytes_for(QuantFormat::q4_K, int64_t{1} << 30, int64_t{1} << 31), (int64_t{1} << 53) * 144);
}

TEST(Quant, GgmlsThreeRoundingRules) {
  using namespace quant_rounding;
  // nearest_int: halves to even, the rest to nearest; NaN 0, infinities -2^22.
  EXPECT_EQ(nearest_int(2.5f), 2);
  EXPECT_EQ(nearest_int(3.5f), 4);
  EXPECT_EQ(nearest_int(-2.5f), -2);
  EXPECT_EQ(nearest_int(-3.5f), -4);
  EXPECT_EQ(nearest_int(0.5f), 0);
  EXPECT_EQ(nearest_int(-0.0f), 0);
  EXPECT_EQ(nearest_int(0.49999997f), 0);
  EXPECT_EQ(nearest_int(14.769f), 15);
  EXPECT_EQ(nearest_int(-31.4f), -31);
  EXPECT_EQ(nearest_int(4194302.5f), 4194302);
  EXPECT_EQ(nearest_int(std::numeric_limits<float>::quiet_NaN()), 0);
  EXPECT_EQ(nearest_int(std::numeric_limits<float>::infinity()), -4194304);
  EXPECT_EQ(nearest_int(-std::numeric_limits<float>::infinity()), -4194304);
  // Q8_0: roundf(x * id), halves away from zero; 0 where id overflowed.
  EXPECT_EQ(q8_0_code(2.5f, 1.0f), 3);
  EXPECT_EQ(q8_0_code(-0.5f, 1.0f), -1);
  EXPECT_EQ(q8_0_code(1.0f, 127.0f), 127);
  EXPECT_EQ(q8_0_code(-1.0f, 128.0f), -128);
  EXPECT_EQ(q8_0_code(1e-40f, std::numeric_limits<float>::infinity()), 0);
  EXPECT_EQ(q8_0_code(0.0f, std::numeric_limits<float>::infinity()), 0);
  // Q4_0: floor(x * id + 8.5) capped at 15, so halves go up; 0 where id overflowed.
  EXPECT_EQ(q4_0_code(0.5f, 1.0f), 9);
  EXPECT_EQ(q4_0_code(-0.5f, 1.0f), 8);
  EXPECT_EQ(q4_0_code(-1.5f, 1.0f), 7);
  EXPECT_EQ(q4_0_code(-8.0f, 1.0f), 0);
  EXPECT_EQ(q4_0_code(7.5f, 1.0f), 15);
  EXPECT_EQ(q4_0_code(8.0f, 1.0f), 15);
  EXPECT_EQ(q4_0_code(-1e-40f, -std::numeric_limits<float>::infinity()), 0);
}

// ---- Q8_0: f16 d, 32 int8 codes; value = d * q.

TEST(Quant, Q8_0Dequantizes) {
  // d = 0.5 (f16 0x3800, little-endian 00 38); codes -128, 127, 0, 1, -1, 2, then 7 and -7 alternating.
  std::vector<std::byte> b = bytes({0x00, 0x38, 0x80, 0x7f, 0x00, 0x01, 0xff, 0x02});
  for (int i = 6; i < 32; ++i) b.push_back(std::byte(i % 2 ? 0xf9 : 0x07));
  const std::vector<float> v = dequantize(QuantFormat::q8_0, b, 32);
  EXPECT_EQ(v[0], -64.0f);
  EXPECT_EQ(v[1], 63.5f);
  EXPECT_EQ(v[2], 0.0f);
  EXPECT_EQ(v[3], 0.5f);
  EXPECT_EQ(v[4], -0.5f);
  EXPECT_EQ(v[5], 1.0f);
  for (int i = 6; i < 32; ++i) EXPECT_EQ(v[i], i % 2 ? -3.5f : 3.5f) << i;
}

TEST(Quant, Q8_0ScalesSignsZerosAndTwoBlocks) {
  // Block 0: d = -0.5 (0xb800): code 3 gives -1.5, code -128 gives 64. Block 1: d = 65504
  // (0x7bff, the largest f16): code -128 gives -8384512, exactly. Other codes 0.
  std::vector<std::byte> b(68, std::byte{0});
  b[0] = std::byte{0x00}, b[1] = std::byte{0xb8}, b[2] = std::byte{3}, b[33] = std::byte{0x80};
  b[34] = std::byte{0xff}, b[35] = std::byte{0x7b}, b[36 + 31] = std::byte{0x80};
  const std::vector<float> v = dequantize(QuantFormat::q8_0, b, 64);
  EXPECT_EQ(v[0], -1.5f);
  EXPECT_EQ(v[31], 64.0f);
  EXPECT_EQ(v[63], -8384512.0f);
  for (int i : {1, 30, 32, 62}) EXPECT_EQ(v[i], 0.0f) << i;
  // The smallest subnormal scale, 2^-24 (0x0001): code -128 gives -2^-17.
  std::vector<std::byte> tiny(34, std::byte{0});
  tiny[0] = std::byte{0x01}, tiny[2] = std::byte{0x80};
  EXPECT_EQ(dequantize(QuantFormat::q8_0, tiny, 32)[0], -0x1p-17f);
  // A zero block.
  for (float x : dequantize(QuantFormat::q8_0, std::vector<std::byte>(34, std::byte{0}), 32)) EXPECT_EQ(x, 0.0f);
}

TEST(Quant, Q8_0QuantizesAsGgml) {
  // amax 127 makes d = 1 (0x3c00); roundf rounds halves away from zero: -63.5 -> -64,
  // 0.5 -> 1, 2.5 -> 3, -0.5 -> -1.
  std::vector<float> x(32, 0.0f);
  x[0] = 127, x[1] = -63.5f, x[2] = 0.5f, x[3] = 2.5f, x[4] = -0.5f, x[5] = 1.25f, x[31] = -127;
  std::vector<std::byte> expected = bytes({0x00, 0x3c, 127, 0xc0, 1, 3, 0xff, 1});
  expected.resize(34, std::byte{0});
  expected[33] = std::byte{0x81};  // -127
  EXPECT_EQ(quantize(QuantFormat::q8_0, x), expected);
  // amax 1: d = 1/127 = 0.0078740..., f16 2^-7 * (1 + 8/1024) = 0x2008; 1 * (1/d) rounds to 127.
  std::vector<float> one(32, 0.0f);
  one[7] = -1;
  std::vector<std::byte> expected_one(34, std::byte{0});
  expected_one[0] = std::byte{0x08}, expected_one[1] = std::byte{0x20}, expected_one[2 + 7] = std::byte{0x81};
  EXPECT_EQ(quantize(QuantFormat::q8_0, one), expected_one);
  // All zeros: d = 0 and every code 0.
  EXPECT_EQ(quantize(QuantFormat::q8_0, std::vector<float>(64, 0.0f)), std::vector<std::byte>(68, std::byte{0}));
}

// ---- Q4_0: f16 d, 16 bytes of nibbles (byte j: value j low, value j + 16 high); value = d * (q - 8).

TEST(Quant, Q4_0Dequantizes) {
  // d = 0.25 (0x3400). Byte 0 = 0xf0: value 0 has code 0 (-2), value 16 code 15 (1.75).
  // Byte 1 = 0x08: value 1 code 8 (0), value 17 code 0 (-2). Byte 15 = 0x7a: value 15
  // code 10 (0.5), value 31 code 7 (-0.25). Other bytes 0x88: zeros.
  std::vector<std::byte> b = bytes({0x00, 0x34, 0xf0, 0x08});
  for (int j = 2; j < 15; ++j) b.push_back(std::byte{0x88});
  b.push_back(std::byte{0x7a});
  const std::vector<float> v = dequantize(QuantFormat::q4_0, b, 32);
  EXPECT_EQ(v[0], -2.0f);
  EXPECT_EQ(v[16], 1.75f);
  EXPECT_EQ(v[1], 0.0f);
  EXPECT_EQ(v[17], -2.0f);
  EXPECT_EQ(v[15], 0.5f);
  EXPECT_EQ(v[31], -0.25f);
  for (int i : {2, 14, 18, 30}) EXPECT_EQ(v[i], 0.0f) << i;
}

TEST(Quant, Q4_0NegativeScaleAndTwoBlocks) {
  // Block 0: d = -1 (0xbc00), every byte 0xf0: codes 0 -> 8, 15 -> -7. Block 1: d = 2 (0x4000),
  // every byte 0x0f: codes 15 -> 14 (low nibbles), 0 -> -16 (high).
  std::vector<std::byte> b = bytes({0x00, 0xbc});
  for (int j = 0; j < 16; ++j) b.push_back(std::byte{0xf0});
  b.push_back(std::byte{0x00}), b.push_back(std::byte{0x40});
  for (int j = 0; j < 16; ++j) b.push_back(std::byte{0x0f});
  const std::vector<float> v = dequantize(QuantFormat::q4_0, b, 64);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(v[i], 8.0f) << i;
    EXPECT_EQ(v[16 + i], -7.0f) << i;
    EXPECT_EQ(v[32 + i], 14.0f) << i;
    EXPECT_EQ(v[48 + i], -16.0f) << i;
  }
}

TEST(Quant, Q4_0QuantizesAsGgml) {
  // The largest magnitude, -8, gets code 0: d = -8 / -8 = 1 (0x3c00). Codes are
  // floor(x + 8.5) capped at 15: 7.5 -> 15 (16 capped), 0.5 -> 9 and -0.5 -> 8 (halves
  // round up), 3.49 -> 11, 7 -> 15, 0 -> 8.
  std::vector<float> x(32, 0.0f);
  x[0] = -8, x[1] = 7.5f, x[2] = 0.5f, x[3] = -0.5f, x[16] = 3.49f, x[17] = 7;
  std::vector<std::byte> expected = bytes({0x00, 0x3c, 0xb0, 0xff, 0x89, 0x88});
  expected.resize(18, std::byte{0x88});
  EXPECT_EQ(quantize(QuantFormat::q4_0, x), expected);
  // Equal magnitudes of both signs: the first sets d = 4 / -8 = -0.5 (0xb800); 4 gets code 0,
  // -4 code 16 capped at 15, so -4 comes back as -0.5 * (15 - 8) = -3.5.
  std::vector<float> y(32, 0.0f);
  y[0] = 4, y[1] = -4;
  const std::vector<std::byte> q = quantize(QuantFormat::q4_0, y);
  EXPECT_EQ(q[0], std::byte{0x00});
  EXPECT_EQ(q[1], std::byte{0xb8});
  EXPECT_EQ(q[2], std::byte{0x80});
  EXPECT_EQ(q[3], std::byte{0x8f});
  const std::vector<float> back = dequantize(QuantFormat::q4_0, q, 32);
  EXPECT_EQ(back[0], 4.0f);
  EXPECT_EQ(back[1], -3.5f);
  // All zeros: d = 0 / -8 = -0 (f16 0x8000), and every code 8 (0 * 0 + 8.5 floors to 8).
  std::vector<std::byte> zero = bytes({0x00, 0x80});
  zero.resize(18, std::byte{0x88});
  EXPECT_EQ(quantize(QuantFormat::q4_0, std::vector<float>(32, 0.0f)), zero);
}

// ---- Q5_0: f16 d, a uint32 of fifth bits, 16 bytes of low nibbles (paired as Q4_0's);
// value = d * (q - 16).

TEST(Quant, Q5_0Dequantizes) {
  // d = 0.25 (0x3400); qh = 0x00010001: values 0 and 16 have their fifth bit. Byte 0 = 0xf0:
  // value 0 code 0 | 16 = 16 (0), value 16 code 15 | 16 = 31 (3.75). Byte 1 = 0x0f: value 1
  // code 15 (-0.25), value 17 code 0 (-4). Every other code 0: -4.
  std::vector<std::byte> b = bytes({0x00, 0x34, 0x01, 0x00, 0x01, 0x00, 0xf0, 0x0f});
  b.resize(22, std::byte{0x00});
  const std::vector<float> v = dequantize(QuantFormat::q5_0, b, 32);
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[16], 3.75f);
  EXPECT_EQ(v[1], -0.25f);
  EXPECT_EQ(v[17], -4.0f);
  for (int i : {2, 15, 18, 31}) EXPECT_EQ(v[i], -4.0f) << i;
}

TEST(Quant, Q5_0QuantizesAsGgml) {
  // The largest magnitude, -16, gets code 0: d = -16 / -16 = 1 (0x3c00). Codes are
  // floor(x + 16.5) capped at 31: 15.5 -> 31 (32 capped), 0.5 -> 17, -0.5 -> 16, 3.49 -> 19,
  // 15 -> 31, 0 -> 16. Low nibbles paired as Q4_0's; every fifth bit set but value 0's.
  std::vector<float> x(32, 0.0f);
  x[0] = -16, x[1] = 15.5f, x[2] = 0.5f, x[3] = -0.5f, x[16] = 3.49f, x[17] = 15;
  std::vector<std::byte> expected = bytes({0x00, 0x3c, 0xfe, 0xff, 0xff, 0xff, 0x30, 0xff, 0x01});
  expected.resize(22, std::byte{0x00});
  EXPECT_EQ(quantize(QuantFormat::q5_0, x), expected);
  const std::vector<float> back = dequantize(QuantFormat::q5_0, expected, 32);
  EXPECT_EQ(back[0], -16.0f);
  EXPECT_EQ(back[1], 15.0f);
  EXPECT_EQ(back[16], 3.0f);
  EXPECT_EQ(back[2], 1.0f);
  EXPECT_EQ(back[3], 0.0f);
}

// ---- Q4_K: f16 d and dmin, eight 6-bit scales and mins in 12 bytes, 128 bytes of nibbles.

// Scales sc = {1, 2, 3, 4, 21, 38, 55, 63} and mins m = {5, 6, 7, 8, 26, 41, 60, 35},
// packed by hand as ggml's get_scale_min_k4 reads them:
//   s[0..3]  = sc[0..3] | (sc[4..7] >> 4) << 6 = 1|1<<6, 2|2<<6, 3|3<<6, 4|3<<6
//   s[4..7]  = m[0..3] | (m[4..7] >> 4) << 6   = 5|1<<6, 6|2<<6, 7|3<<6, 8|2<<6
//   s[8..11] = (sc[4..7] & 15) | (m[4..7] & 15) << 4 = 5|10<<4, 6|9<<4, 7|12<<4, 15|3<<4
const int q4_K_sc[8] = {1, 2, 3, 4, 21, 38, 55, 63};
const int q4_K_m[8] = {5, 6, 7, 8, 26, 41, 60, 35};

std::vector<std::byte> q4_K_block() {
  // d = 0.5 (0x3800), dmin = 0.25 (0x3400).
  std::vector<std::byte> b = bytes({0x00, 0x38, 0x00, 0x34, 0x41, 0x82, 0xc3, 0xc4, 0x45, 0x86, 0xc7, 0x88, 0xa5, 0x96, 0xc7, 0x3f});
  // Chunk c, byte l: low nibble l % 16 (value 64c + l), high nibble 15 - l % 16 (value 64c + 32 + l).
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) b.push_back(std::byte((l % 16) | (15 - l % 16) << 4));
  }
  return b;
}

TEST(Quant, Q4_KDequantizesEveryScaleAndMinPosition) {
  const std::vector<float> v = dequantize(QuantFormat::q4_K, q4_K_block(), 256);
  // Worked out: value 0 is sub-block 0, code 0: 0.5*1*0 - 0.25*5 = -1.25. Value 33 is
  // sub-block 1, code 15 - 1 = 14: 0.5*2*14 - 0.25*6 = 12.5. Value 224 is sub-block 7,
  // code 15: 0.5*63*15 - 0.25*35 = 463.75. Value 255: code 0: -8.75. Value 141 is
  // sub-block 4, code 13: 0.5*21*13 - 0.25*26 = 130. Value 175 is sub-block 5, code 0:
  // -0.25*41 = -10.25.
  EXPECT_EQ(v[0], -1.25f);
  EXPECT_EQ(v[33], 12.5f);
  EXPECT_EQ(v[224], 463.75f);
  EXPECT_EQ(v[255], -8.75f);
  EXPECT_EQ(v[141], 130.0f);
  EXPECT_EQ(v[175], -10.25f);
  // Every value: sub-block j = i / 32, the code from the nibble layout above.
  for (int i = 0; i < 256; ++i) {
    const int j = i / 32, l = i % 32;
    const int code = j % 2 == 0 ? l % 16 : 15 - l % 16;
    EXPECT_EQ(v[i], float(0.5 * q4_K_sc[j] * code - 0.25 * q4_K_m[j])) << i;
  }
}

TEST(Quant, Q4_KTwoSuperBlocksAndTheRoundedDifference) {
  // Super-block 1: d = 1024 (0x6400), dmin = 2^-24 (0x0001), all scales and mins 1, codes
  // 1: 1024 * 1 - 2^-24 is not an f32; it rounds (to nearest) to 1024. Code 0: -2^-24 exactly.
  std::vector<std::byte> b = q4_K_block();
  std::vector<std::byte> second = bytes({0x00, 0x64, 0x01, 0x00, 1, 1, 1, 1, 1, 1, 1, 1, 0x11, 0x11, 0x11, 0x11});
  for (int l = 0; l < 128; ++l) second.push_back(std::byte{0x01});  // low nibbles 1, high 0
  b.insert(b.end(), second.begin(), second.end());
  const std::vector<float> v = dequantize(QuantFormat::q4_K, b, 512);
  EXPECT_EQ(v[0], -1.25f);  // the first super-block as before
  for (int i = 256; i < 512; ++i) EXPECT_EQ(v[i], (i - 256) % 64 < 32 ? 1024.0f : -0x1p-24f) << i;
  // A zero super-block.
  for (float x : dequantize(QuantFormat::q4_K, std::vector<std::byte>(144, std::byte{0}), 256)) EXPECT_EQ(x, 0.0f);
}

TEST(Quant, Q4_KQuantizesAsGgml) {
  // Sub-block j alternates 0 and 15 * 2^-j: its fit is exact (scale 2^-j, min 0, codes 0 and
  // 15, error 0, so no trial scale beats it). The largest scale is 1, so the 6-bit scales are
  // nearest_int(63 * 2^-j) = 63, 32 (31.5, a tie, to even), 16, 8, 4, 2, 1 and 0; every min
  // is 0. d = f16(1/63) = 2^-6 * (1 + 16/1024) = 0x2410, dmin = 0. The codes again against
  // d * sc: 15 / (d * 63) = 15.004 and 7.5 / (d * 32) = 14.77, ... all 15; sub-block 7's
  // scale is 0, so it keeps the fit's codes (15 too), and comes back as zeros.
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = i % 2 ? 15.0f * std::ldexp(1.0f, -(i / 32)) : 0.0f;
  std::vector<std::byte> expected =
      bytes({0x10, 0x24, 0x00, 0x00, 0x3f, 0x20, 0x10, 0x08, 0x00, 0x00, 0x00, 0x00, 0x04, 0x02, 0x01, 0x00});
  for (int l = 0; l < 128; ++l) expected.push_back(std::byte(l % 2 ? 0xff : 0x00));
  const std::vector<std::byte> q = quantize(QuantFormat::q4_K, x);
  EXPECT_EQ(q, expected);
  const std::vector<float> back = dequantize(QuantFormat::q4_K, q, 256);
  EXPECT_EQ(back[1], float(0.015869140625 * 63 * 15));  // 14.996...
  EXPECT_EQ(back[32 * 7 + 1], 0.0f);
  // All zeros: every byte 0.
  EXPECT_EQ(quantize(QuantFormat::q4_K, std::vector<float>(512, 0.0f)), std::vector<std::byte>(288, std::byte{0}));
}

// ---- Q6_K: ql (128), qh (64), sixteen int8 scales, f16 d; value = d * sc[i / 16] * (q - 32).

TEST(Quant, Q6_KDequantizesTheBitLayout) {
  // d = 0.5 (0x3800 at bytes 208-209); scales sc[k] = k + 1 except sc[0] = 127, sc[1] = -128.
  std::vector<std::byte> b(210, std::byte{0});
  b[208] = std::byte{0x00}, b[209] = std::byte{0x38};
  for (int k = 0; k < 16; ++k) b[192 + k] = std::byte(k + 1);
  b[192] = std::byte{127}, b[193] = std::byte{0x80};
  // ql[0] = 0x21: value 0 low bits 1, value 64 low bits 2. qh[0] = 0b11100100: high bits
  // 0 (value 0), 1 (value 32), 2 (value 64), 3 (value 96). ql[32] = 0: values 32 and 96 low 0.
  // Half 1: ql[64 + 5] = 0xf3 (value 133 low 3, value 197 low 15), ql[96 + 5] = 0x5c
  // (value 165 low 12, value 229 low 5), qh[32 + 5] = 0b01101100 (values 133: 0, 165: 3,
  // 197: 2, 229: 1).
  b[0] = std::byte{0x21}, b[128] = std::byte{0xe4};
  b[69] = std::byte{0xf3}, b[101] = std::byte{0x5c}, b[128 + 37] = std::byte{0x6c};
  const std::vector<float> v = dequantize(QuantFormat::q6_K, b, 256);
  EXPECT_EQ(v[0], 0.5f * 127 * (1 - 32));      // code 1, scale 0
  EXPECT_EQ(v[32], 0.5f * 3 * (16 - 32));      // code 16, scale 2 (values 32..47)
  EXPECT_EQ(v[64], 0.5f * 5 * (34 - 32));      // code 2 | 2 << 4, scale 4
  EXPECT_EQ(v[96], 0.5f * 7 * (48 - 32));      // code 0 | 3 << 4, scale 6
  EXPECT_EQ(v[133], 0.5f * 9 * (3 - 32));      // scale 8 (values 128..143)
  EXPECT_EQ(v[165], 0.5f * 11 * (60 - 32));    // code 12 | 3 << 4, scale 10
  EXPECT_EQ(v[197], 0.5f * 13 * (47 - 32));    // code 15 | 2 << 4, scale 12
  EXPECT_EQ(v[229], 0.5f * 15 * (21 - 32));    // code 5 | 1 << 4, scale 14
  EXPECT_EQ(v[16], 0.5f * -128 * (0 - 32));    // code 0 with scale -128: 2048
  EXPECT_EQ(v[1], 0.5f * 127 * -32);
}

TEST(Quant, Q6_KExtremeCodesAtEveryScalePosition) {
  // Two super-blocks. In the first every code is 63 (ql and qh all ones): value = d * sc * 31;
  // in the second every code is 0: value = d * sc * -32. d = 0.25 (0x3400) and 2 (0x4000);
  // sc[k] = (k odd ? -1 : 1) * (8 * k + 1).
  std::vector<std::byte> b(420, std::byte{0});
  std::fill(b.begin(), b.begin() + 192, std::byte{0xff});
  for (int k = 0; k < 16; ++k) b[192 + k] = b[210 + 192 + k] = std::byte(int8_t((k % 2 ? -1 : 1) * (8 * k + 1)));
  b[208] = std::byte{0x00}, b[209] = std::byte{0x34};
  b[418] = std::byte{0x00}, b[419] = std::byte{0x40};
  const std::vector<float> v = dequantize(QuantFormat::q6_K, b, 512);
  for (int i = 0; i < 256; ++i) {
    const int k = i / 16, sc = (k % 2 ? -1 : 1) * (8 * k + 1);
    EXPECT_EQ(v[i], 0.25f * float(sc) * 31) << i;
    EXPECT_EQ(v[256 + i], 2.0f * float(sc) * -32) << i;
  }
}

TEST(Quant, Q6_KQuantizesAsGgml) {
  // One nonzero value, 1, first in the block. Sub-block 0's fit: max 1, inverse scale -32, so
  // code -32 for 1 and 0 for the zeros; weights x^2 leave only the 1: sumlx = -32, suml2 = 1024,
  // scale -1/32, and no trial inverse scale -(32 + 0.1 is) does strictly better. Sub-blocks
  // 1..15 are all zero: scale 0, stored codes 0. So max_scale = -1/32, the inverse scale
  // -128 / max_scale = 4096, d = 2^-12 (0x0c00), sc[0] = -128 (0x80), the others 0. Codes
  // again: 1 / (2^-12 * -128) = -32 (stored 0), the zeros 0 (stored 32: low bits 0, high
  // bits 2 in qh[1..15]); the zero-scale sub-blocks keep the fit's stored 0.
  std::vector<float> x(256, 0.0f);
  x[0] = 1;
  std::vector<std::byte> expected(210, std::byte{0});
  for (int l = 1; l < 16; ++l) expected[128 + l] = std::byte{0x02};
  expected[192] = std::byte{0x80};
  expected[209] = std::byte{0x0c};
  const std::vector<std::byte> q = quantize(QuantFormat::q6_K, x);
  EXPECT_EQ(q, expected);
  const std::vector<float> back = dequantize(QuantFormat::q6_K, q, 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(back[i], x[i]) << i;
  // All zeros: every byte 0.
  EXPECT_EQ(quantize(QuantFormat::q6_K, std::vector<float>(256, 0.0f)), std::vector<std::byte>(210, std::byte{0}));
}

// ---- i8_row: f32 scale, then the row's int8 codes; value = s * q.

TEST(Quant, I8RowDequantizesAndQuantizes) {
  // s = 0.5 (f32 0x3f000000, little-endian 00 00 00 3f); codes -128, 127, 0, -1.
  const std::vector<float> v = dequantize(QuantFormat::i8_row, bytes({0x00, 0x00, 0x00, 0x3f, 0x80, 0x7f, 0x00, 0xff}), 4);
  EXPECT_EQ(v, (std::vector<float>{-64.0f, 63.5f, 0.0f, -0.5f}));
  // s = 0.1f (0x3dcccccd) times 3 is rounded once: the f32 nearest to 3 * 0.1f.
  const float rounded = float(3.0 * double(0.1f));
  EXPECT_EQ(dequantize(QuantFormat::i8_row, bytes({0xcd, 0xcc, 0xcc, 0x3d, 3}), 1)[0], rounded);
  // Q8_0's rule with an f32 scale: amax 254 gives s = 2 exactly, so 3 -> roundf(1.5) = 2 and
  // -5 -> roundf(-2.5) = -3 (halves away from zero).
  EXPECT_EQ(quantize(QuantFormat::i8_row, {254.0f, 3.0f, -5.0f, 0.0f, -254.0f}),
            bytes({0x00, 0x00, 0x00, 0x40, 127, 2, 0xfd, 0, 0x81}));
  EXPECT_EQ(quantize(QuantFormat::i8_row, {}), bytes({0, 0, 0, 0}));
}

// ---- Round trips and refusals.

TEST(Quant, RoundTripsWithinEachFormatsError) {
  // Gaussian rows at scales 2^-4..2^8 (f16 scales stay normal). Per block (super-block for the K-quants) of largest
  // magnitude a: Q8_0 and i8_row are off by at most half a step, d / 2, plus Q8_0's f16
  // rounding of d (127 codes * d * 2^-11); Q4_0 by one step, a / 8 (its largest value of the
  // other sign caps at code 15), plus d's rounding; Q6_K by half its sub-block step plus the rounding of scales
  // to 8 bits, under a / 32; Q4_K by its 15-step range plus 6-bit scales, under a / 4.
  SplitMix64 rng{42};
  for (QuantFormat f : all_quant_formats) {
    const int64_t block = f == QuantFormat::i8_row ? 512 : block_layout(f, 0).values;
    for (int row = 0; row < 40; ++row) {
      std::vector<float> x(512);
      const float s = std::ldexp(1.0f, int(rng.next() % 13) - 4);
      for (float& v : x) v = float(rng.normal()) * s;
      const std::vector<float> back = dequantize(f, quantize(f, x), 512);
      for (int64_t b = 0; b < 512; b += block) {
        float a = 0;
        for (int64_t i = b; i < b + block; ++i) a = std::max(a, std::fabs(x[size_t(i)]));
        const float bound = f == QuantFormat::q8_0 ? a / 127 * (0.5f + 127 * 0x1p-11f) * (1 + 0x1p-10f)
                            : f == QuantFormat::i8_row ? a / 127 * 0.5f * (1 + 0x1p-14f)
                            : f == QuantFormat::q4_0   ? a / 8 * (1 + 0x1p-8f)
                            : f == QuantFormat::q5_0   ? a / 16 * (1 + 0x1p-7f)
                            : f == QuantFormat::q6_K   ? a / 32
                                                       : a / 4;
        for (int64_t i = b; i < b + block; ++i) {
          ASSERT_LE(std::fabs(back[size_t(i)] - x[size_t(i)]), bound)
              << quant_format_name(f) << " row " << row << " value " << i << ": " << x[size_t(i)] << " came back as "
              << back[size_t(i)];
        }
      }
    }
  }
}

TEST(Quant, DequantizeRefusesNonFiniteScalesAndPartialBlocks) {
  std::vector<std::byte> b(68, std::byte{0});
  b[34] = std::byte{0x00}, b[35] = std::byte{0x7c};  // block 1's d is +infinity
  float out[256];
  EXPECT_THAT(error_of<FormatError>([&] { dequantize_row(QuantFormat::q8_0, b.data(), 64, out); }),
              HasSubstr("q8_0 block 1: the scale d is inf (f16 bits 0x7c00)"));
  std::vector<std::byte> k(144, std::byte{0});
  k[2] = std::byte{0x01}, k[3] = std::byte{0x7e};  // dmin is a NaN
  EXPECT_THAT(error_of<FormatError>([&] { dequantize_row(QuantFormat::q4_K, k.data(), 256, out); }),
              HasSubstr("q4_K block 0: the scale dmin is nan (f16 bits 0x7e01)"));
  std::vector<std::byte> six(210, std::byte{0});
  six[209] = std::byte{0xfc};  // -infinity
  EXPECT_THAT(error_of<FormatError>([&] { dequantize_row(QuantFormat::q6_K, six.data(), 256, out); }),
              HasSubstr("q6_K block 0: the scale d is -inf"));
  const std::vector<std::byte> row = bytes({0x00, 0x00, 0xc0, 0x7f, 1});  // an f32 NaN scale
  EXPECT_THAT(error_of<FormatError>([&] { dequantize_row(QuantFormat::i8_row, row.data(), 1, out); }),
              HasSubstr("i8_row: the row's scale is nan"));
  EXPECT_THAT(error_of<FormatError>([&] { dequantize_row(QuantFormat::q4_0, b.data(), 31, out); }),
              HasSubstr("q4_0: a row of 31 values is not a whole number of 32-value blocks"));
}

TEST(Quant, QuantizeRefusesNonFiniteAndTooLargeValues) {
  std::vector<float> x(256, 1.0f);
  x[37] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(error_of<InputError>([&] { quantize(QuantFormat::q4_K, x); }), HasSubstr("q4_K: value 37 of the row is nan"));
  x[37] = -std::numeric_limits<float>::infinity();
  EXPECT_THAT(error_of<InputError>([&] { quantize(QuantFormat::i8_row, x); }), HasSubstr("i8_row: value 37 of the row is -inf"));
  // Q8_0's d = amax / 127 passes f16's 65504 once amax > 65519.99 * 127 (round to nearest).
  std::vector<float> big(64, 0.0f);
  big[40] = 65504.0f * 127;
  EXPECT_NO_THROW(quantize(QuantFormat::q8_0, big));
  big[40] = 65520.0f * 127;
  EXPECT_THAT(error_of<InputError>([&] { quantize(QuantFormat::q8_0, big); }),
              HasSubstr("q8_0 block 1 (values 32..63): its scale d = 65520 is beyond f16's range"));
  // Q4_0: d = max / -8.
  big[40] = -65520.0f * 8;
  EXPECT_THAT(error_of<InputError>([&] { quantize(QuantFormat::q4_0, big); }), HasSubstr("q4_0 block 1"));
  std::vector<float> huge(256, 0.0f);
  huge[3] = 1e12f;
  EXPECT_THAT(error_of<InputError>([&] { quantize(QuantFormat::q4_K, huge); }), HasSubstr("q4_K block 0"));
  EXPECT_THAT(error_of<InputError>([&] { quantize(QuantFormat::q6_K, huge); }), HasSubstr("q6_K block 0"));
  // Values so large that Q6_K's weighted sums overflow f32 (x^3 beyond 3.4e38): the fit is
  // not finite, where ggml writes a zero block.
  std::fill(huge.begin(), huge.end(), 1e13f);
  EXPECT_THAT(error_of<InputError>([&] { quantize(QuantFormat::q6_K, huge); }), HasSubstr("fitted scale is"));
  EXPECT_THAT(error_of<FormatError>([&] { quantize(QuantFormat::q6_K, std::vector<float>(100, 0.0f)); }),
              HasSubstr("q6_K: a row of 100 values"));
}

TEST(Quant, TinyBlocksGetZeroCodes) {
  // A largest magnitude below 127 * 2^-128 makes 1 / d overflow: every x * (1 / d) is then
  // infinite or NaN, which C leaves undefined; ggml's x86-64 build and cutcheck store code 0
  // (Q4_0: nibble 0). d itself rounds to 0 in f16, so the block dequantizes to zeros either way.
  std::vector<float> x(32, 0.0f);
  x[0] = 0x1p-140f, x[1] = -0x1p-141f;
  EXPECT_EQ(quantize(QuantFormat::q8_0, x), std::vector<std::byte>(34, std::byte{0}));
  std::vector<std::byte> q4 = quantize(QuantFormat::q4_0, x);
  EXPECT_EQ(q4[1], std::byte{0x80});  // d = -2^-143 rounds to -0 in f16
  for (int j = 2; j < 18; ++j) EXPECT_EQ(q4[j], std::byte{0x00}) << j;
}

// Every dequantized value is the formula's value: exact for Q8_0, Q4_0 and Q6_K (the
// products never need more than f32's 24 bits), and for Q4_K the exact difference rounded
// once. The exact values are computed in long double (64 significant bits: every product
// here and Q4_K's difference are exact in it): every finite f16 scale with every Q8_0 and
// Q4_0 code, and random K-quant blocks whose scales run over every finite f16.
TEST(Quant, DequantizedValuesAreExact) {
  std::vector<std::byte> q8(8 * 34), q4(2 * 18);
  std::vector<float> y(256);
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7c00) == 0x7c00) continue;  // infinities and NaNs are refused
    const long double d = f16_to_f32(uint16_t(bits));
    for (int i = 0; i < 256; ++i) {
      std::byte* block = q8.data() + 34 * (i / 32);
      block[0] = std::byte(bits & 0xff), block[1] = std::byte(bits >> 8);
      block[2 + i % 32] = std::byte(i);
    }
    dequantize_row(QuantFormat::q8_0, q8.data(), 256, y.data());
    for (int i = 0; i < 256; ++i) ASSERT_EQ((long double)y[size_t(i)], d * int8_t(i)) << bits << " " << i;
    for (int b = 0; b < 2; ++b) {
      q4[size_t(18 * b)] = std::byte(bits & 0xff), q4[size_t(18 * b + 1)] = std::byte(bits >> 8);
      for (int j = 0; j < 16; ++j) q4[size_t(18 * b + 2 + j)] = std::byte((j + 8 * b) % 16 | (15 - j) << 4);
    }
    dequantize_row(QuantFormat::q4_0, q4.data(), 64, y.data());
    for (int b = 0; b < 2; ++b)
      for (int j = 0; j < 16; ++j) {
        ASSERT_EQ((long double)y[size_t(32 * b + j)], d * ((j + 8 * b) % 16 - 8)) << bits;
        ASSERT_EQ((long double)y[size_t(32 * b + 16 + j)], d * (15 - j - 8)) << bits;
      }
  }
  SplitMix64 rng{39};
  auto finite_f16 = [&] {
    for (;;) {
      const uint16_t bits = uint16_t(rng.next());
      if ((bits & 0x7c00) != 0x7c00) return bits;
    }
  };
  std::vector<std::byte> k(210);
  for (int trial = 0; trial < 4000; ++trial) {
    for (std::byte& b : k) b = std::byte(rng.next() & 0xff);
    const uint16_t d_bits = finite_f16(), dmin_bits = finite_f16();
    // Q4_K: d, dmin, the 12 bytes of 6-bit scales and mins, 128 bytes of nibbles.
    k[0] = std::byte(d_bits & 0xff), k[1] = std::byte(d_bits >> 8);
    k[2] = std::byte(dmin_bits & 0xff), k[3] = std::byte(dmin_bits >> 8);
    dequantize_row(QuantFormat::q4_K, k.data(), 256, y.data());
    const long double d = f16_to_f32(d_bits), dmin = f16_to_f32(dmin_bits);
    for (int i = 0; i < 256; ++i) {
      const int j = i / 32, c = i / 64, l = i % 32;
      const uint8_t* s = reinterpret_cast<const uint8_t*>(k.data()) + 4;
      const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
      const int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | (s[j] >> 6) << 4;
      const uint8_t pair = uint8_t(k[size_t(16 + 32 * c + l)]);
      const int q = i % 64 < 32 ? pair & 15 : pair >> 4;
      ASSERT_EQ(y[size_t(i)], float(d * sc * q - dmin * m)) << trial << " " << i;
    }
    // Q6_K: ql, qh, 16 int8 scales, d last.
    k[208] = std::byte(d_bits & 0xff), k[209] = std::byte(d_bits >> 8);
    dequantize_row(QuantFormat::q6_K, k.data(), 256, y.data());
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, l = i % 32, part = i % 128 / 32;
      const uint8_t ql = uint8_t(k[size_t(64 * h + l + (part % 2) * 32)]);
      const uint8_t qh = uint8_t(k[size_t(128 + 32 * h + l)]);
      const int q = ((part < 2 ? ql & 15 : ql >> 4) | (qh >> (2 * part) & 3) << 4) - 32;
      ASSERT_EQ((long double)y[size_t(i)], d * int8_t(k[size_t(192 + i / 16)]) * q) << trial << " " << i;
    }
  }
}

}  // namespace
}  // namespace cutcheck
