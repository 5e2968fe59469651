// The op table against the enum it describes, and its facts against what the ops do.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <set>
#include <string>

#include "core/error.h"
#include "program/ops.h"
#include "reference/kernels.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

TEST(OpTable, EveryOpKindHasItsOwnRow) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < op_count; ++i) {
    const OpKind kind = OpKind(i);
    const OpInfo& info = op_info(kind);
    EXPECT_EQ(size_t(info.kind), i) << info.name;
    OpKind found;
    ASSERT_TRUE(find_op(info.name, found)) << info.name;
    EXPECT_EQ(found, kind) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << info.name << " names two rows";
  }
  EXPECT_EQ(all_op_kinds().size(), op_count);
  std::vector<OpKind> by_class;
  for (OpClass c : {OpClass::value, OpClass::convert, OpClass::unary, OpClass::binary, OpClass::reduce_precision,
                    OpClass::compare, OpClass::select, OpClass::movement, OpClass::reduction, OpClass::contraction,
                    OpClass::collective})
    for (OpKind k : op_kinds(c)) by_class.push_back(k);
  EXPECT_EQ(by_class.size(), op_count);  // every op in exactly one class
}

// An element-wise op takes i32 operands exactly where its row says so.
TEST(OpTable, I32SupportIsTheTypeRules) {
  for (OpKind kind : all_op_kinds()) {
    const OpInfo& info = op_info(kind);
    if (info.op_class != OpClass::unary && info.op_class != OpClass::binary) continue;
    const TensorType i32{DType::i32, {2}};
    std::vector<const TensorType*> operands(size_t(info.min_operands), &i32);
    bool typed = true;
    try {
      result_type(kind, operands, {}, nullptr);
    } catch (const VerifyError&) {
      typed = false;
    }
    EXPECT_EQ(typed, info.i32) << info.name;
    EXPECT_EQ(bool(info.scalar.i32), info.i32) << info.name;
    EXPECT_TRUE(info.scalar.f64) << info.name;
  }
}

// The facts the consumers read, against what each op does on sample values: a commuting
// op gives the same bits both ways round; an exact one returns one of its operands (or
// its negation); the reference's kernel has the bits of the scalar semantics rounded once.
TEST(OpTable, ScalarFactsHoldOnSampleValues) {
  const std::vector<float> xs = {0.0f, -0.0f, 1.5f, -2.25f, 3e-39f, 1e30f, 0.7f, INFINITY, -INFINITY, NAN};
  for (OpKind kind : all_op_kinds()) {
    const OpInfo& info = op_info(kind);
    const bool binary = info.op_class == OpClass::binary;
    if (!binary && info.op_class != OpClass::unary) continue;
    std::vector<float> a, b;
    for (float x : xs)
      for (float y : binary ? xs : std::vector<float>{0.0f}) a.push_back(x), b.push_back(y);
    std::vector<Tensor> in = {Tensor::of_f32({int64_t(a.size())}, a)};
    if (binary) in.push_back(Tensor::of_f32({int64_t(b.size())}, b));
    const std::vector<float> out = test::floats(test::run_op(kind, in));
    for (size_t i = 0; i < a.size(); ++i) {
      const double r = info.scalar.f64(a[i], b[i]);
      EXPECT_TRUE(std::bit_cast<uint32_t>(out[i]) == std::bit_cast<uint32_t>(float(r)) || (std::isnan(out[i]) && std::isnan(r)))
          << info.name << "(" << a[i] << ", " << b[i] << ")";
      if (info.commutes) {
        const double s = info.scalar.f64(b[i], a[i]);
        EXPECT_TRUE(std::bit_cast<uint64_t>(r) == std::bit_cast<uint64_t>(s) || (std::isnan(r) && std::isnan(s)))
            << info.name << " commutes";
      }
      if (info.rounding == Rounding::exact && !std::isnan(r)) {
        EXPECT_TRUE(r == a[i] || r == b[i] || r == -a[i]) << info.name << " is exact";
      }
    }
  }
}

TEST(OpTable, TheInPlaceOperandIsTheRowsAndNoOther) {
  for (OpKind kind : all_op_kinds()) {
    const OpInfo& info = op_info(kind);
    for (size_t operand = 0; operand < 3; ++operand)
      EXPECT_EQ(may_write_over(kind, operand),
                info.in_place == InPlace::any || (info.in_place == InPlace::first && operand == 0))
          << info.name << " operand " << operand;
  }
  EXPECT_TRUE(may_write_over(OpKind::dynamic_update_slice, 0));
  EXPECT_FALSE(may_write_over(OpKind::dynamic_update_slice, 1));
  EXPECT_TRUE(may_write_over(OpKind::add, 1));
  EXPECT_FALSE(may_write_over(OpKind::transpose, 0));
}

}  // namespace
}  // namespace cutcheck
