// Each op of the language against values worked out by hand.
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <string>
#include <mutex>
#include <set>
#include <stdexcept>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "author/builder.h"
#include "core/error.h"
#include "core/half.h"
#include "core/ieee.h"
#include "core/quant_blocks.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "reference/contract_tile.h"
#include "reference/kernels.h"
#include "reference/parallel.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using test::floats;
using test::ints_of;
using test::run_op;
using V = std::vector<float>;
using I = std::vector<int32_t>;

TEST(Ops, ConstantFillsEveryElement) {
  EXPECT_EQ(floats(run_op(OpKind::constant, {}, {number(-2.5)}, TensorType{DType::f32, {2, 2}})), (V{-2.5, -2.5, -2.5, -2.5}));
  EXPECT_EQ(ints_of(run_op(OpKind::constant, {}, {number(7)}, TensorType{DType::i32, {3}})), (I{7, 7, 7}));
}

TEST(Ops, IotaCountsAlongItsDimension) {
  EXPECT_EQ(ints_of(run_op(OpKind::iota, {}, {integer(1)}, TensorType{DType::i32, {2, 3}})), (I{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(floats(run_op(OpKind::iota, {}, {integer(0)}, TensorType{DType::f32, {2, 3}})), (V{0, 0, 0, 1, 1, 1}));
}

TEST(Ops, ConvertTruncatesSaturatesAndMapsNanToZero) {
  Tensor x = Tensor::of_f32({5}, {1.9f, -1.9f, 3e9f, -3e9f, NAN});
  EXPECT_EQ(ints_of(run_op(OpKind::convert, {x}, {}, TensorType{DType::i32, {5}})),
            (I{1, -1, INT32_MAX, INT32_MIN, 0}));
  EXPECT_EQ(floats(run_op(OpKind::convert, {Tensor::of_i32({2}, {16777217, -3})}, {}, TensorType{DType::f32, {2}})),
            (V{16777216.0f, -3.0f}));
}

TEST(Ops, ArithmeticIsIeeeSingle) {
  Tensor a = Tensor::of_f32({4}, {1, 0.1f, 3, -8});
  Tensor b = Tensor::of_f32({4}, {2, 0.2f, 0.5f, 2});
  EXPECT_EQ(floats(run_op(OpKind::add, {a, b})), (V{3, 0.1f + 0.2f, 3.5f, -6}));
  EXPECT_EQ(floats(run_op(OpKind::subtract, {a, b})), (V{-1, 0.1f - 0.2f, 2.5f, -10}));
  EXPECT_EQ(floats(run_op(OpKind::multiply, {a, b})), (V{2, 0.1f * 0.2f, 1.5f, -16}));
  EXPECT_EQ(floats(run_op(OpKind::divide, {a, b})), (V{0.5f, 0.1f / 0.2f, 6, -4}));
  EXPECT_EQ(floats(run_op(OpKind::power, {Tensor::of_f32({2}, {2, 9}), Tensor::of_f32({2}, {10, 0.5f})})), (V{1024, 3}));
}

TEST(Ops, MaximumAndMinimumPropagateNan) {
  Tensor a = Tensor::of_f32({3}, {1, NAN, -1});
  Tensor b = Tensor::of_f32({3}, {2, 0, -3});
  V mx = floats(run_op(OpKind::maximum, {a, b}));
  V mn = floats(run_op(OpKind::minimum, {a, b}));
  EXPECT_EQ(mx[0], 2);
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], -1);
  EXPECT_EQ(mn[0], 1);
  EXPECT_TRUE(std::isnan(mn[1]));
  EXPECT_EQ(mn[2], -3);
}

TEST(Ops, IntegerArithmeticWraps) {
  Tensor a = Tensor::of_i32({3}, {INT32_MAX, 5, -7});
  Tensor b = Tensor::of_i32({3}, {1, -9, 3});
  EXPECT_EQ(ints_of(run_op(OpKind::add, {a, b})), (I{INT32_MIN, -4, -4}));
  EXPECT_EQ(ints_of(run_op(OpKind::multiply, {a, b})), (I{INT32_MAX, -45, -21}));
  EXPECT_EQ(ints_of(run_op(OpKind::maximum, {a, b})), (I{INT32_MAX, 5, 3}));
  EXPECT_EQ(ints_of(run_op(OpKind::negate, {Tensor::of_i32({2}, {INT32_MIN, 4})})), (I{INT32_MIN, -4}));
}

TEST(Ops, UnaryFunctionsAreRoundedDoubleResults) {
  Tensor x = Tensor::of_f32({3}, {0, 1, -2});
  EXPECT_EQ(floats(run_op(OpKind::negate, {x})), (V{-0.0f, -1, 2}));
  EXPECT_EQ(floats(run_op(OpKind::exponential, {x})), (V{1, float(std::exp(1.0)), float(std::exp(-2.0))}));
  EXPECT_EQ(floats(run_op(OpKind::logistic, {x})), (V{0.5f, float(1 / (1 + std::exp(-1.0))), float(1 / (1 + std::exp(2.0)))}));
  EXPECT_EQ(floats(run_op(OpKind::sine, {x})), (V{0, float(std::sin(1.0)), float(std::sin(-2.0))}));
  EXPECT_EQ(floats(run_op(OpKind::cosine, {x})), (V{1, float(std::cos(1.0)), float(std::cos(-2.0))}));
  Tensor p = Tensor::of_f32({3}, {4, 0.25f, 2});
  EXPECT_EQ(floats(run_op(OpKind::sqrt, {p})), (V{2, 0.5f, float(std::sqrt(2.0))}));
  EXPECT_EQ(floats(run_op(OpKind::rsqrt, {p})), (V{0.5f, 2, float(1 / std::sqrt(2.0))}));
  EXPECT_EQ(floats(run_op(OpKind::log, {p})), (V{float(std::log(4.0)), float(std::log(0.25)), float(std::log(2.0))}));
}

// The nearest bf16 to a finite x, found by comparing the two bf16 neighbours in double.
float nearest_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint32_t down_bits = bits & 0xffff0000u, up_bits = down_bits + 0x10000u;  // toward zero, and one bf16 step out
  float down, up;
  std::memcpy(&down, &down_bits, 4);
  std::memcpy(&up, &up_bits, 4);
  // One step past the largest bf16 is 2^128: IEEE rounds to infinity from half-way there.
  const double up_value = (up_bits & 0x7fffffffu) == 0x7f800000u ? std::copysign(0x1p128, x) : double(up);
  const double to_down = std::abs(double(x) - double(down)), to_up = std::abs(up_value - double(x));
  if (to_down != to_up) return to_down < to_up ? down : up;
  return (down_bits & 0x10000u) == 0 ? down : up;  // a tie goes to the even one
}

TEST(Ops, ReducePrecisionRoundsToNearestEvenAndClampsTheExponent) {
  auto rp = [](V x, int64_t e, int64_t m) {
    return floats(run_op(OpKind::reduce_precision, {Tensor::of_f32({int64_t(x.size())}, x)}, {integer(e), integer(m)}));
  };
  const float one = 1, tie_even = 1 + 0x1p-8f, tie_odd = 1 + 3 * 0x1p-8f, past_tie = 1 + 0x1p-8f + 0x1p-20f;
  const float big = std::numeric_limits<float>::max(), tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(rp({one, tie_even, tie_odd, past_tie, -tie_odd}, 8, 7), (V{1, 1, 1 + 0x1p-6f, 1 + 0x1p-7f, -(1 + 0x1p-6f)}));
  V edge = rp({big, -big, INFINITY, -0.0f, tiny, NAN}, 8, 7);  // bf16 has f32's exponent range and subnormals
  EXPECT_EQ(edge[0], INFINITY);
  EXPECT_EQ(edge[1], -INFINITY);
  EXPECT_EQ(edge[2], INFINITY);
  EXPECT_TRUE(std::signbit(edge[3]) && edge[3] == 0);
  EXPECT_EQ(edge[4], 0.0f);  // 2^-149 is under half of bf16's smallest subnormal, 2^-133
  EXPECT_TRUE(std::isnan(edge[5]));
  // fp16's widths: 65520 is a tie above 65504 that rounds to even, 65536, past the largest
  // exponent; 1e-5 is under the smallest normal, 2^-14, and goes to a zero of its sign.
  V half = rp({65504, 65520, 1e-5f, -1e-5f, 0x1p-14f, 3.14159f}, 5, 10);
  EXPECT_EQ(half[0], 65504);
  EXPECT_EQ(half[1], INFINITY);
  EXPECT_EQ(half[2], 0.0f);
  EXPECT_TRUE(std::signbit(half[3]) && half[3] == 0);
  EXPECT_EQ(half[4], 0x1p-14f);
  EXPECT_EQ(half[5], 3.140625f);  // 3.14159 in 10 mantissa bits: 3 + 144/1024
  // f32's own widths, and wider, change nothing.
  V any = {1.1f, -3e38f, tiny, 1e-40f};
  EXPECT_EQ(rp(any, 8, 23), any);
  EXPECT_EQ(rp(any, 11, 52), any);
  // bf16 against the neighbour comparison, over many magnitudes.
  V xs;
  for (int i = -140; i < 128; ++i)
    for (float f : {1.0f, 1.00390625f, 1.3333334f, 1.9960938f, 1.99999988f}) xs.push_back(std::ldexp(f, i));
  V got = rp(xs, 8, 7);
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(got[i], nearest_bf16(xs[i])) << xs[i];
  EXPECT_THROW(run_op(OpKind::reduce_precision, {Tensor::of_f32({1}, {1})}, {integer(0), integer(7)}), VerifyError);
  EXPECT_THROW(run_op(OpKind::reduce_precision, {Tensor::of_i32({1}, {1})}, {integer(8), integer(7)}), VerifyError);
}

TEST(Ops, CompareFollowsIeeeIncludingNan) {
  Tensor a = Tensor::of_f32({3}, {1, 2, NAN});
  Tensor b = Tensor::of_f32({3}, {2, 2, NAN});
  auto cmp = [&](const char* dir) {
    Tensor t = run_op(OpKind::compare, {a, b}, {word(dir)});
    auto v = t.as<uint8_t>();
    return std::vector<int>(v.begin(), v.end());
  };
  EXPECT_EQ(cmp("LT"), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(cmp("LE"), (std::vector<int>{1, 1, 0}));
  EXPECT_EQ(cmp("EQ"), (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(cmp("NE"), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(cmp("GT"), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(cmp("GE"), (std::vector<int>{0, 1, 0}));
}

TEST(Ops, SelectPicksPerElement) {
  // Predicates are never inputs, so this one is computed in the program.
  Builder b("select");
  ValueId a = b.input("a", {DType::i32, {3}}), one = b.input("one", {DType::i32, {3}});
  ValueId t = b.input("t", {DType::f32, {3}}), f = b.input("f", {DType::f32, {3}});
  b.output("r", b.select(b.compare(a, one, "GT", "pred"), t, f, "r"));
  Executable exe(b.finish(), {});
  TensorMap out = exe.run({{"a", Tensor::of_i32({3}, {0, 5, 2})}, {"one", Tensor::of_i32({3}, {1, 1, 1})},
                           {"t", Tensor::of_f32({3}, {1, 2, 3})}, {"f", Tensor::of_f32({3}, {-1, -2, -3})}});
  EXPECT_EQ(floats(out.at("r")), (V{-1, 2, 3}));
}

TEST(Ops, BroadcastInDimMapsOperandDimensions) {
  Tensor x = Tensor::of_f32({2}, {1, 2});
  EXPECT_EQ(floats(run_op(OpKind::broadcast_in_dim, {x}, {ints({0})}, TensorType{DType::f32, {2, 3}})),
            (V{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(floats(run_op(OpKind::broadcast_in_dim, {x}, {ints({1})}, TensorType{DType::f32, {3, 2}})),
            (V{1, 2, 1, 2, 1, 2}));
  Tensor one = Tensor::of_f32({1, 2}, {5, 6});  // a size-1 dimension broadcasts too
  EXPECT_EQ(floats(run_op(OpKind::broadcast_in_dim, {one}, {ints({0, 1})}, TensorType{DType::f32, {2, 2}})),
            (V{5, 6, 5, 6}));
  EXPECT_EQ(floats(run_op(OpKind::broadcast_in_dim, {Tensor::of_f32({}, {4})}, {ints({})}, TensorType{DType::f32, {2}})),
            (V{4, 4}));
}

TEST(Ops, ReshapeKeepsRowMajorOrder) {
  Tensor x = Tensor::of_f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = run_op(OpKind::reshape, {x}, {}, TensorType{DType::f32, {3, 2}});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(floats(r), (V{1, 2, 3, 4, 5, 6}));
}

TEST(Ops, TransposePermutesDimensions) {
  Tensor x = Tensor::of_f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor t = run_op(OpKind::transpose, {x}, {ints({1, 0})});
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(floats(t), (V{1, 4, 2, 5, 3, 6}));
  Tensor y = Tensor::of_f32({2, 1, 2}, {1, 2, 3, 4});
  EXPECT_EQ(floats(run_op(OpKind::transpose, {y}, {ints({2, 1, 0})})), (V{1, 3, 2, 4}));
}

TEST(Ops, SliceTakesStartLimitStride) {
  Tensor x = Tensor::of_f32({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor s = run_op(OpKind::slice, {x}, {ints({0, 1}), ints({2, 4}), ints({1, 2})});
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(floats(s), (V{1, 3, 5, 7}));
  EXPECT_EQ(floats(run_op(OpKind::slice, {x}, {ints({1, 0}), ints({2, 3}), ints({1, 1})})), (V{4, 5, 6}));
}

TEST(Ops, ConcatenateJoinsAlongADimension) {
  Tensor a = Tensor::of_f32({2, 1}, {1, 2});
  Tensor b = Tensor::of_f32({2, 2}, {3, 4, 5, 6});
  EXPECT_EQ(floats(run_op(OpKind::concatenate, {a, b}, {integer(1)})), (V{1, 3, 4, 2, 5, 6}));
  EXPECT_EQ(floats(run_op(OpKind::concatenate, {b, b}, {integer(0)})), (V{3, 4, 5, 6, 3, 4, 5, 6}));
}

TEST(Ops, DynamicUpdateSliceWritesAtClampedStart) {
  Tensor base = Tensor::of_f32({3, 2}, {0, 0, 0, 0, 0, 0});
  Tensor update = Tensor::of_f32({1, 2}, {7, 8});
  auto at = [&](int32_t row, int32_t col) {
    return floats(run_op(OpKind::dynamic_update_slice, {base, update, Tensor::scalar_i32(row), Tensor::scalar_i32(col)}));
  };
  EXPECT_EQ(at(1, 0), (V{0, 0, 7, 8, 0, 0}));
  EXPECT_EQ(at(5, 0), (V{0, 0, 0, 0, 7, 8}));   // clamped to the last row
  EXPECT_EQ(at(-2, 3), (V{7, 8, 0, 0, 0, 0}));  // clamped to the first row and column
}

TEST(Ops, GatherTakesRowsAndClampsIndices) {
  Tensor table = Tensor::of_f32({3, 2}, {0, 1, 10, 11, 20, 21});
  Tensor r = run_op(OpKind::gather, {table, Tensor::of_i32({2, 2}, {2, 0, 1, 9})});
  EXPECT_EQ(r.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(floats(r), (V{20, 21, 0, 1, 10, 11, 20, 21}));
}

TEST(Ops, ReduceAccumulatesInDoubleAndRoundsOnce) {
  // In f32 arithmetic 1e8 + 1 + 1 + 1 + 1 stays 1e8; summed in double it is 1e8 + 4.
  Tensor x = Tensor::of_f32({5}, {1e8f, 1, 1, 1, 1});
  EXPECT_EQ(floats(run_op(OpKind::reduce, {x}, {word("add"), ints({0})})), (V{100000004.0f}));
  Tensor m = Tensor::of_f32({2, 3}, {1, 5, 2, -1, -7, -3});
  EXPECT_EQ(floats(run_op(OpKind::reduce, {m}, {word("add"), ints({1})})), (V{8, -11}));
  EXPECT_EQ(floats(run_op(OpKind::reduce, {m}, {word("max"), ints({1})})), (V{5, -1}));
  EXPECT_EQ(floats(run_op(OpKind::reduce, {m}, {word("min"), ints({0})})), (V{-1, -7, -3}));
  EXPECT_EQ(floats(run_op(OpKind::reduce, {m}, {word("add"), ints({0, 1})})), (V{-3}));
  V with_nan = floats(run_op(OpKind::reduce, {Tensor::of_f32({2}, {NAN, 1})}, {word("max"), ints({0})}));
  EXPECT_TRUE(std::isnan(with_nan[0]));
  EXPECT_EQ(ints_of(run_op(OpKind::reduce, {Tensor::of_i32({3}, {4, -2, 9})}, {word("min"), ints({0})})), (I{-2}));
  EXPECT_EQ(ints_of(run_op(OpKind::reduce, {Tensor::of_i32({2}, {INT32_MAX, 1})}, {word("add"), ints({0})})),
            (I{INT32_MIN}));
}

// reduce against its definition written out here, bit for bit, over the layouts the
// kernel walks differently: reduced dimensions last (folded straight through memory, four
// result elements side by side, the last group ragged) or not, several of them, every
// dimension reduced, empty and size-1 dimensions. The definition visits the operand in
// row-major order and folds each element into its result element, which takes its terms
// in ascending row-major order of the reduced indices. The values are chosen to show
// it: +-2^24 cancel exactly, and how many bits of a small term (a random f32 near 2^-8)
// survive depends on which large ones came before it. (A NaN term: Ops.ReduceAccumulatesInDoubleAndRoundsOnce.)
TEST(Ops, ReduceHasTheBitsOfItsDefinitionOnEveryLayout) {
  struct Case {
    Shape shape;
    std::vector<int64_t> dims;
  };
  const std::vector<Case> cases = {
      {{1, 4, 2, 13}, {3}}, {{7, 9}, {1}},    {{5, 3}, {1}},       {{1, 1}, {1}},       {{3, 0}, {1}},
      {{0, 5}, {1}},        {{2, 3, 5}, {1, 2}}, {{6, 5}, {0}},    {{4, 6, 5}, {1}},    {{4, 6, 5}, {0, 2}},
      {{300}, {0}},         {{9, 8}, {0, 1}},   {{5, 1, 7}, {2}},  {{5, 7, 1}, {1, 2}}, {{2, 1, 300}, {2}},
      {{11, 37}, {1}}};
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> pick(0, 999);
  std::uniform_real_distribution<float> fraction(1.0f, 2.0f);
  for (size_t n = 0; n < cases.size(); ++n) {
    const Case& c = cases[n];
    Tensor x(TensorType{DType::f32, c.shape});
    for (float& v : x.as_mut<float>()) {
      const int p = pick(rng);
      const float sign = p % 2 ? -1.0f : 1.0f;
      v = p < 10 ? sign * 0.0f : p < 500 ? sign * 0x1p24f : sign * std::ldexp(fraction(rng), -8);
    }
    Shape kept_shape;
    for (size_t d = 0; d < c.shape.size(); ++d)
      if (std::find(c.dims.begin(), c.dims.end(), int64_t(d)) == c.dims.end()) kept_shape.push_back(c.shape[d]);
    // The result element of each operand element, walking the operand in row-major order.
    std::vector<size_t> result_of;
    std::vector<int64_t> at(c.shape.size(), 0);
    for (int64_t i = 0; i < x.elements(); ++i) {
      size_t r = 0;
      for (size_t d = 0, k = 0; d < c.shape.size(); ++d)
        if (std::find(c.dims.begin(), c.dims.end(), int64_t(d)) == c.dims.end()) r = r * size_t(kept_shape[k++]) + size_t(at[d]);
      result_of.push_back(r);
      for (size_t d = c.shape.size(); d-- > 0;)
        if (++at[d] < c.shape[d]) break;
        else at[d] = 0;
    }
    const size_t results = size_t(element_count(kept_shape));
    for (const char* kind : {"add", "max", "min"}) {
      const double identity = kind == std::string("add") ? 0.0 : kind == std::string("max") ? -INFINITY : INFINITY;
      std::vector<double> acc(results, identity);
      for (size_t i = 0; i < result_of.size(); ++i) {
        const double v = x.as<float>()[i];
        double& a = acc[result_of[i]];
        a = kind == std::string("add") ? a + v : kind == std::string("max") ? ieee_maximum(a, v) : ieee_minimum(a, v);
      }
      Tensor want(TensorType{DType::f32, kept_shape});
      for (size_t r = 0; r < results; ++r) want.as_mut<float>()[r] = float(acc[r]);
      EXPECT_TRUE(run_op(OpKind::reduce, {x}, {word(kind), ints(c.dims)}).same_bits(want)) << "case " << n << ", " << kind;
    }
  }
}

// max and min over the last dimension take their terms in any order (eval_reduce's
// extreme_trailing); held here to the ordered fold of ieee_maximum / ieee_minimum on the
// values where order or representation could show: NaNs of either sign and payload,
// infinities, both zeros, subnormals, the largest finite values; rows of 0 to 40 terms,
// some with no NaN, some all -inf or all +inf.
TEST(Ops, ReduceMaxAndMinHaveTheOrderedFoldsBitsOnEdgeValues) {
  const float special[] = {NAN, -NAN, std::bit_cast<float>(0x7f800001u), std::bit_cast<float>(0xffc00123u),
                           INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, -1e-40f,
                           3.4028235e38f, -3.4028235e38f, 1.0f, -1.0f};
  std::mt19937 rng(29);
  for (int64_t n = 0; n <= 40; ++n) {
    const int64_t rows = 12;
    Tensor x(TensorType{DType::f32, {rows, n}});
    auto v = x.as_mut<float>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < n; ++i) {
        float& e = v[size_t(r * n + i)];
        // rows 0-3 without NaN; rows 4 and 5 all -inf and all +inf; the rest anything.
        const size_t first = r < 4 ? 4 : 0;
        e = r == 4 ? -INFINITY : r == 5 ? INFINITY : special[first + rng() % (std::size(special) - first)];
      }
    for (const char* kind : {"max", "min"}) {
      const bool is_max = kind == std::string("max");
      Tensor want(TensorType{DType::f32, {rows}});
      for (int64_t r = 0; r < rows; ++r) {
        double a = is_max ? -INFINITY : INFINITY;
        for (int64_t i = 0; i < n; ++i) a = is_max ? ieee_maximum(a, v[size_t(r * n + i)]) : ieee_minimum(a, v[size_t(r * n + i)]);
        want.as_mut<float>()[size_t(r)] = float(a);
      }
      EXPECT_TRUE(run_op(OpKind::reduce, {x}, {word(kind), ints({1})}).same_bits(want)) << "n " << n << ", " << kind;
    }
  }
}

TEST(Ops, DotGeneralContractsAndBatches) {
  // [2,3] . [2,3] contracting dimension 1 of both: x W^T.
  Tensor x = Tensor::of_f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor w = Tensor::of_f32({2, 3}, {1, 0, -1, 2, 1, 0});
  Tensor r = run_op(OpKind::dot_general, {x, w}, {ints({}), ints({}), ints({1}), ints({1})});
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(floats(r), (V{-2, 4, -2, 13}));
  // Batched: result [batch, lhs free, rhs free].
  Tensor a = Tensor::of_f32({2, 1, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::of_f32({2, 2, 1}, {5, 6, 7, 8});
  Tensor bt = run_op(OpKind::dot_general, {a, b}, {ints({0}), ints({0}), ints({2}), ints({1})});
  EXPECT_EQ(bt.shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(floats(bt), (V{17, 53}));
  // Two contracting dimensions, summed in double: 1e8 + 1 + 1 + 1 + 1.
  Tensor big = Tensor::of_f32({1, 5}, {1e8f, 1, 1, 1, 1});
  Tensor ones = Tensor::of_f32({1, 5}, {1, 1, 1, 1, 1});
  EXPECT_EQ(floats(run_op(OpKind::dot_general, {big, ones}, {ints({}), ints({}), ints({0, 1}), ints({0, 1})})),
            (V{100000004.0f}));
}

// The tiled dot_general (every tile kernel this machine runs, one to three threads)
// against the naive definition, bit for bit, over the shape classes the blocking cuts
// differently: ragged row tiles and column panels, blocks of k, strided and transposed
// operands, batch dimensions, several or no contracting dimensions, rank-0 results; and
// the decode path (up to stream_rows_max rows against weights streamed in place) with
// ragged column blocks and k that is and is not a multiple of the transposed 8 terms.
struct DotCase {
  Shape lhs, rhs;
  std::vector<int64_t> lb, rb, lc, rc;
};

Program dot_program(const DotCase& c) {
  Builder b("dot");
  ValueId l = b.input("lhs", {DType::f32, c.lhs}), r = b.input("rhs", {DType::f32, c.rhs});
  b.output("y", b.dot(l, r, c.lc, c.rc, "y", c.lb, c.rb));
  return b.finish();
}

Tensor order_revealing_values(const Shape& shape, std::mt19937& rng) {
  // Half the elements +-2^24, whose products (+-2^48) cancel exactly again and again as
  // a sum runs; the others small (+-1, or 2^-20 with random bits), so that whether a
  // small product survives depends on which large ones came before it: a sum taken in
  // another order rounds differently. One element in a thousand is large enough that a
  // sum overflows f32 when rounded.
  Tensor t(TensorType{DType::f32, shape});
  std::uniform_real_distribution<float> fraction(1.0f, 2.0f);
  std::uniform_int_distribution<int> pick(0, 3999);
  for (float& v : t.as_mut<float>()) {
    const int p = pick(rng);
    const float sign = p % 2 ? -1.0f : 1.0f;
    v = p < 4 ? 3e38f : p < 2000 ? sign * 0x1p24f : p < 3000 ? sign : sign * std::ldexp(fraction(rng), -20);
  }
  return t;
}

// Every kernel this machine runs, each twice: its decode path always reading the weights
// as from memory, and always as from cache (which one a contraction takes depends on the
// weights' size, and the test shapes are small).
struct KernelPath {
  TileKernel kernel;
  std::string name;
};
std::vector<KernelPath> every_kernel_path() {
  std::vector<KernelPath> paths;
  for (int i = 0; i < tile_kernel_count(); ++i) {
    TileKernel memory = tile_kernel(i), cache = tile_kernel(i);
    memory.cache_bytes = 0;
    cache.cache_bytes = std::numeric_limits<int64_t>::max();
    paths.push_back({memory, std::string(memory.isa) + " (weights from memory)"});
    paths.push_back({cache, std::string(cache.isa) + " (weights from cache)"});
  }
  return paths;
}

TEST(Ops, DotGeneralTiledHasTheBitsOfTheNaiveDefinition) {
  std::vector<DotCase> cases;
  auto project = [&](int64_t rows, int64_t cols, int64_t k) { cases.push_back({{rows, k}, {cols, k}, {}, {}, {1}, {1}}); };
  for (int64_t rows : {1, 2, 5, 6, 7, 13, 97})
    for (int64_t cols : {1, 3, 8, 15, 16, 17, 33})
      for (int64_t k : {1, 2, 129}) project(rows, cols, k);
  project(3, 1100, 64);    // more columns than a block: several column blocks, the last ragged
  project(200, 40, 64);    // more rows than a block
  project(2, 5, 5000);     // huge k: many blocks of k carried in double
  for (int64_t rows : {1, 3, 4})
    for (int64_t k : {7, 8, 9, 15, 16, 17, 24, 31, 33, 47, 64, 65})
      project(rows, 21, k);  // the stream's k tail (8 terms at a time with AVX2, 16 with AVX-512), ragged columns
  project(1, 1100, 512);   // a decode projection large enough to share between threads
  cases.push_back({{64, 7}, {64, 19}, {}, {}, {0}, {0}});                       // both operands transposed
  cases.push_back({{9, 5, 8}, {11, 5, 8}, {1}, {1}, {2}, {2}});                 // batch in the middle (q . k per head)
  cases.push_back({{2, 3, 7, 8}, {2, 3, 17, 8}, {0, 1}, {0, 1}, {3}, {3}});     // two batch dimensions
  cases.push_back({{3, 4, 10}, {3, 10, 18}, {0}, {0}, {2}, {1}});              // rhs contracting over rows (probs . v)
  for (int64_t rows : {1, 2, 3, 4})                                             // ... its columns side by side, few rows
    for (int64_t cols : {1, 7, 8, 9, 17, 33, 64, 65, 130})  // passes of 2 to 8 units of 8 columns, calls of 8
      for (int64_t k : {1, 129}) cases.push_back({{rows, k}, {k, cols}, {}, {}, {1}, {0}});
  cases.push_back({{1, 4, 2, 37}, {37, 4, 8}, {1}, {1}, {3}, {0}});             // probs . v of a decode step, batch strided
  for (int64_t rows : {1, 2, 4})                                                // ... units of short columns from 9 batches
    cases.push_back({{9, rows, 30}, {9, 30, 5}, {0}, {0}, {2}, {1}});
  cases.push_back({{2, 0}, {0, 9}, {}, {}, {1}, {0}});                          // no terms: +0.0
  cases.push_back({{4, 6, 5}, {7, 6, 5}, {}, {}, {1, 2}, {1, 2}});             // two contracting dimensions
  cases.push_back({{4, 6, 5}, {5, 7, 6}, {}, {}, {2, 1}, {0, 2}});             // ... listed out of order
  cases.push_back({{300}, {300}, {}, {}, {0}, {0}});                           // a rank-0 result
  cases.push_back({{7, 3}, {20}, {}, {}, {}, {}});                             // no contracting dimension
  std::mt19937 rng(21);
  for (size_t n = 0; n < cases.size(); ++n) {
    const DotCase& c = cases[n];
    const Program program = dot_program(c);
    const Operation& op = program.ops.back();
    const Tensor lhs = order_revealing_values(c.lhs, rng), rhs = order_revealing_values(c.rhs, rng);
    const Tensor* operands[] = {&lhs, &rhs};
    Tensor want(program.type(op.result));
    dot_general_naive(op, operands, want);
    for (const KernelPath& path : every_kernel_path())
      for (int threads : {1, 2, 3}) {
        KernelThreads scope(threads);
        Tensor got(program.type(op.result));
        dot_general_tiled(path.kernel, op, operands, got);
        EXPECT_TRUE(got.same_bits(want)) << "case " << n << " with " << path.name << ", " << threads << " threads";
      }
  }
}

// An rhs of bf16 (a weight as stored) gives the bits of the same contraction on the rhs
// converted to f32 first, in the naive definition and in every tiled kernel: the decode
// path (rows up to stream_rows_max) and the blocked one, ragged and transposed.
TEST(Ops, DotGeneralWidensBf16WeightsExactly) {
  std::vector<DotCase> cases;
  for (int64_t rows : {1, 4, 7})
    for (int64_t cols : {5, 16, 33})
      for (int64_t k : {9, 129}) cases.push_back({{rows, k}, {cols, k}, {}, {}, {1}, {1}});
  for (int64_t rows : {1, 2, 3, 4})  // the stream's k tail: 32 bf16 terms at a time with AVX-512
    for (int64_t k : {31, 32, 33, 64, 95}) cases.push_back({{rows, k}, {21, k}, {}, {}, {1}, {1}});
  cases.push_back({{64, 7}, {64, 19}, {}, {}, {0}, {0}});  // the rhs's terms strided
  for (int64_t rows : {1, 2, 3, 4})                         // and few rows: their columns side by side
    for (int64_t cols : {19, 70}) cases.push_back({{rows, 64}, {64, cols}, {}, {}, {1}, {0}});
  std::mt19937 rng(19);
  for (size_t n = 0; n < cases.size(); ++n) {
    const DotCase& c = cases[n];
    const Program program = dot_program(c);
    const Operation& op = program.ops.back();
    const Tensor lhs = order_revealing_values(c.lhs, rng);
    Tensor stored(TensorType{DType::bf16, c.rhs}), widened(TensorType{DType::f32, c.rhs});
    const Tensor values = order_revealing_values(c.rhs, rng);
    auto* bits = reinterpret_cast<uint16_t*>(stored.raw_mut().data());
    // Now and then a value whose widening is easy to get wrong: a subnormal, -0, an
    // infinity (a whole column's sum then infinite or NaN).
    const uint16_t special[] = {0x0001, 0x807f, 0x8000, 0x7f80, 0xff80};
    for (size_t i = 0; i < size_t(values.elements()); ++i) {
      bits[i] = rng() % 50 == 0 ? special[rng() % 5] : f32_to_bf16(values.as<float>()[i]);
      widened.as_mut<float>()[i] = bf16_to_f32(bits[i]);
    }
    const Tensor* wide_operands[] = {&lhs, &widened};
    const Tensor* stored_operands[] = {&lhs, &stored};
    Tensor want(program.type(op.result)), got(program.type(op.result));
    dot_general_naive(op, wide_operands, want);
    dot_general_naive(op, stored_operands, got);
    EXPECT_TRUE(got.same_bits(want)) << "case " << n << ", naive";
    for (const KernelPath& path : every_kernel_path())
      for (int threads : {1, 2}) {
        KernelThreads scope(threads);
        Tensor tiled(program.type(op.result));
        dot_general_tiled(path.kernel, op, stored_operands, tiled);
        EXPECT_TRUE(tiled.same_bits(want)) << "case " << n << " with " << path.name << ", " << threads << " threads";
      }
  }
}

// A quantized weight contracted as stored (x . w^T, the interpreter's hand-over of a
// weight in place of its convert): in panels of dequantized rows on the f32 kernels, the
// same bits as the definition's sums over the dequantized values, for every format, a
// decode's rows and a prefill's, one panel, several and a short last one, on every kernel
// path and thread count; the definition's own quantized loop agrees too.
TEST(Ops, QuantizedWeightsContractAsTheirDequantizedValues) {
  std::mt19937 rng(29);
  for (QuantFormat format : all_quant_formats)
    for (int64_t k : {int64_t(256), int64_t(2048)})
      for (int64_t rows : {1, 3, 6})
        for (int64_t cols : {1, 37, 300}) {
          const DotCase c{{rows, k}, {cols, k}, {}, {}, {1}, {1}};
          const Program program = dot_program(c);
          const Operation& op = program.ops.back();
          const Tensor lhs = order_revealing_values(c.lhs, rng);
          std::vector<float> values(size_t(cols * k));  // within the formats' range (an f16 scale)
          std::uniform_real_distribution<float> value(-4.0f, 4.0f);
          for (float& v : values) v = value(rng);
          Tensor stored(TensorType{dtype_of(format), c.rhs}), widened(TensorType{DType::f32, c.rhs});
          const uint64_t row_bytes = stored.bytes() / uint64_t(cols);
          for (int64_t n = 0; n < cols; ++n)
            quantize_row_reference(format, values.data() + n * k, k, stored.raw_mut().data() + n * row_bytes);
          dequantize_tensor(stored, widened.as_mut<float>().data());
          const Tensor* wide_operands[] = {&lhs, &widened};
          const Tensor* stored_operands[] = {&lhs, &stored};
          Tensor want(program.type(op.result)), naive(program.type(op.result));
          dot_general_naive(op, wide_operands, want);
          dot_general_naive(op, stored_operands, naive);
          const std::string where = fmt::format("{}, {} x {}, k {}", quant_format_name(format), rows, cols, k);
          EXPECT_TRUE(naive.same_bits(want)) << where << ", the definition";
          for (const KernelPath& path : every_kernel_path())
            for (int threads : {1, 2}) {
              KernelThreads scope(threads);
              Tensor got(program.type(op.result));
              dot_general_tiled(path.kernel, op, stored_operands, got);
              EXPECT_TRUE(got.same_bits(want)) << where << ", " << path.name << ", " << threads << " threads";
            }
        }
}

// Owned storage starts on a cache line at every size, malloc's large blocks (which start
// 16 bytes past one) included, zeroed, uninitialized or cloned, so that a weight copied
// into memory the process owns is read by the decode kernels in whole lines.
TEST(Ops, OwnedTensorsStartOnACacheLine) {
  for (int64_t elements : {int64_t(1), int64_t(3), int64_t(1000), int64_t(1) << 20, (int64_t(1) << 22) + 5}) {
    const TensorType type{DType::bf16, {elements}};
    const Tensor zeroed(type), uninitialized = Tensor::uninitialized(type), copy = zeroed.clone();
    for (const Tensor* t : {&zeroed, &uninitialized, &copy})
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw().data()) % Tensor::storage_alignment, 0u) << elements;
  }
}

// A decode step's weights wherever they lie: rows that start at every offset from a
// cache line (all rows equally far from one, as a whole-line row puts them, or each at
// its own offset), in f32 and bf16, k shorter than a line, within a line of it and long,
// one to four lhs rows, one column or several, against the naive definition bit for bit.
// The decode kernel adds the terms before a row's first line boundary and after its last
// in steps of their own (memory allocated with malloc starts 16 bytes past a line; a
// file's tensors anywhere).
TEST(Ops, DecodeWeightsAtAnyOffsetFromACacheLine) {
  std::mt19937 rng(23);
  for (DType dtype : {DType::f32, DType::bf16})
    for (int64_t k : {1, 5, 16, 24, 32, 64, 96, 200})
      for (int64_t offset_bytes : {0, 2, 4, 16, 30, 48, 62})
        for (int64_t rows : {1, 2, 3, 4})
          for (int64_t cols : {1, 37}) {
            const int64_t size = dtype == DType::bf16 ? 2 : 4;
            if (offset_bytes % size != 0) continue;
            const DotCase c{{rows, k}, {cols, k}, {}, {}, {1}, {1}};
            const Program program = dot_program(c);
            const Operation& op = program.ops.back();
            const Tensor lhs = order_revealing_values(c.lhs, rng), values = order_revealing_values(c.rhs, rng);
            // The rhs inside a larger tensor, offset_bytes past a line boundary.
            const Tensor whole(TensorType{DType::f32, {cols * k + 64}});
            const uint64_t to_line = (64 - reinterpret_cast<uintptr_t>(whole.raw().data()) % 64) % 64;
            Tensor rhs = Tensor::part_of({dtype, c.rhs}, whole, to_line + uint64_t(offset_bytes));
            Tensor widened(TensorType{DType::f32, c.rhs});
            for (size_t i = 0; i < size_t(values.elements()); ++i) {
              const float v = values.as<float>()[i];
              if (dtype == DType::bf16) {
                reinterpret_cast<uint16_t*>(rhs.raw_mut().data())[i] = f32_to_bf16(v);
                widened.as_mut<float>()[i] = bf16_to_f32(f32_to_bf16(v));
              } else {
                rhs.as_mut<float>()[i] = v;
                widened.as_mut<float>()[i] = v;
              }
            }
            const Tensor* wide_operands[] = {&lhs, &widened};
            const Tensor* operands[] = {&lhs, &rhs};
            Tensor want(program.type(op.result));
            dot_general_naive(op, wide_operands, want);
            for (const KernelPath& path : every_kernel_path()) {
              Tensor got(program.type(op.result));
              dot_general_tiled(path.kernel, op, operands, got);
              EXPECT_TRUE(got.same_bits(want)) << dtype_name(dtype) << ", " << rows << " x " << cols << ", k " << k
                                               << ", " << offset_bytes << " bytes past a line, " << path.name;
            }
          }
}

// parallel_for's pieces cover [0, count) once each, on workers kept from call to call; a
// call from inside a piece or from a second thread while the pool is busy still finishes
// (its pieces run in turn), and an exception from any piece reaches the caller. Workers
// poll for a while after a piece and then sleep: calls come both back to back and after
// the workers have gone to sleep.
TEST(Ops, ParallelForCoversEachIndexOnceOnKeptWorkers) {
  // The threads that ran pieces. With `gather`, each piece waits until that many threads
  // have started one, so that no thread takes a second piece before the others have woken
  // and taken theirs (the wait's limit only ends a broken pool's test).
  auto covered = [](int64_t count, size_t gather = 0) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
    std::mutex m;
    std::condition_variable arrived;
    std::set<std::thread::id> ran_on;
    parallel_for(count, 1e9, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) ++hits[size_t(i)];
      std::unique_lock lock(m);
      ran_on.insert(std::this_thread::get_id());
      arrived.notify_all();
      arrived.wait_for(lock, std::chrono::duration<double>(test::generous_seconds), [&] { return ran_on.size() >= gather; });
    });
    for (int64_t i = 0; i < count; ++i) EXPECT_EQ(hits[size_t(i)], 1) << "index " << i << " of " << count;
    return ran_on;
  };
  for (int threads : {1, 2, 3, 5}) {
    KernelThreads scope(threads);
    for (int64_t count : {0, 1, 2, 3, 7, 1000}) EXPECT_LE(covered(count).size(), size_t(threads));
  }
  KernelThreads scope(3);
  const std::set<std::thread::id> first = covered(3, 3), second = covered(3, 3);
  EXPECT_EQ(first.size(), 3u);
  EXPECT_EQ(first, second);  // the same workers, not new threads
  EXPECT_EQ(first.count(std::this_thread::get_id()), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the workers' polling
  EXPECT_EQ(covered(3, 3), first);

  // Work past int64_t's range (the sanitizer build flags a conversion that overflows).
  std::atomic<int64_t> huge{0};
  parallel_for(1000, std::numeric_limits<double>::max(), [&](int64_t b, int64_t e) { huge += e - b; });
  EXPECT_EQ(huge, 1000);

  std::atomic<int64_t> inner{0};
  parallel_for(4, 1e9, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      parallel_for(10, 1e9, [&](int64_t b, int64_t e) { inner += e - b; });
  });
  EXPECT_EQ(inner, 40);

  std::atomic<int64_t> total{0};
  auto caller = [&] {
    KernelThreads two(2);
    for (int r = 0; r < 200; ++r) parallel_for(100, 1e9, [&](int64_t b, int64_t e) { total += e - b; });
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(total, 2 * 200 * 100);

  for (int64_t thrower : {0, 2})
    EXPECT_THROW(parallel_for(3, 1e9,
                              [&](int64_t begin, int64_t) {
                                if (begin == thrower) throw std::runtime_error("piece");
                              }),
                 std::runtime_error);
  EXPECT_EQ(covered(3, 3), first);  // and the pool still works
}

// A thread held up in one piece does not hold up the rest: the others take the pieces
// left. Index 0's piece waits until every other index is done; the thread that runs it
// runs nothing else (an equal share per thread would leave it half of the indices, and the
// wait would last until its limit).
TEST(Ops, ParallelForGivesASlowThreadFewerPieces) {
  KernelThreads scope(2);
  const int64_t count = 1000;
  std::vector<std::thread::id> ran_by(static_cast<size_t>(count));
  std::mutex m;
  std::condition_variable progress;
  int64_t done = 0;
  parallel_for(count, 1e9, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) ran_by[size_t(i)] = std::this_thread::get_id();
    std::unique_lock lock(m);
    done += end - begin;
    progress.notify_all();
    if (begin == 0) progress.wait_for(lock, std::chrono::duration<double>(test::generous_seconds), [&] { return done == count; });
  });
  const int64_t by_slow = std::count(ran_by.begin(), ran_by.end(), ran_by[0]);
  EXPECT_LT(by_slow, count / 4) << "the thread held up in index 0's piece ran " << by_slow << " of " << count;
}

TEST(Ops, TypeRulesRefuseMismatches) {
  Tensor a = Tensor::of_f32({2}, {1, 2});
  Tensor b = Tensor::of_f32({3}, {1, 2, 3});
  EXPECT_THROW(run_op(OpKind::add, {a, b}), VerifyError);
  EXPECT_THROW(run_op(OpKind::divide, {Tensor::of_i32({1}, {1}), Tensor::of_i32({1}, {1})}), VerifyError);
  EXPECT_THROW(run_op(OpKind::transpose, {a}, {ints({1})}), VerifyError);
  EXPECT_THROW(run_op(OpKind::slice, {a}, {ints({1}), ints({3}), ints({1})}), VerifyError);
  EXPECT_THROW(run_op(OpKind::reshape, {a}, {}, TensorType{DType::f32, {3}}), VerifyError);
  EXPECT_THROW(run_op(OpKind::dot_general, {a, b}, {ints({}), ints({}), ints({0}), ints({0})}), VerifyError);
  EXPECT_THROW(run_op(OpKind::compare, {a, a}, {word("LTE")}), VerifyError);
}

}  // namespace
}  // namespace cutcheck
