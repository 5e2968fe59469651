// The program rewriter: finding values by name, each edit, and refusing ill-typed ones.
#include <gmock/gmock.h>

#include "core/error.h"
#include "program/rewrite.h"
#include "program/text.h"
#include "reference/interpreter.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char* small_program = R"(program "small"
input %a : f32[3]
input %b : f32[3]
# the sum
%l0.sum = add %a, %b : f32[3]
%l1.sum = add %l0.sum, %b : f32[3]
%l1.big = maximum %l1.sum, %a : f32[3]
%l1.small = subtract %l1.big, %b : f32[3]
%rows = reshape %l1.small : f32[1,3]
output y = %l1.small
output rows = %rows
)";

Tensor vec(std::vector<float> v) {
  Tensor t({DType::f32, {int64_t(v.size())}});
  std::copy(v.begin(), v.end(), t.as_mut<float>().begin());
  return t;
}

std::vector<float> run(const Program& p, const std::string& output = "y") {
  return test::floats(Executable(p, {}).run({{"a", vec({1, 2, 3})}, {"b", vec({10, 20, 30})}}).at(output));
}

TEST(Rewrite, NamesMatchGlobs) {
  EXPECT_TRUE(name_matches("l*.sum", "l0.sum"));
  EXPECT_TRUE(name_matches("l*.sum", "l12.sum"));
  EXPECT_TRUE(name_matches("*norm.eps", "l3.attn_norm.eps"));
  EXPECT_TRUE(name_matches("*", ""));
  EXPECT_FALSE(name_matches("l*.sum", "l0.sum2"));
  EXPECT_FALSE(name_matches("l*.sum", "x.l0.sum.y"));
  EXPECT_TRUE(name_matches("a*b*c", "aXXbYYbc"));
  EXPECT_FALSE(name_matches("a*b*c", "aXXbYYb"));
}

TEST(Rewrite, FindsByPatternAndKind) {
  Rewriter r(parse_and_verify(small_program));
  EXPECT_EQ(r.find("l*.sum").size(), 2u);
  EXPECT_EQ(r.find("l1.*", OpKind::maximum).size(), 1u);
  EXPECT_TRUE(r.find("l*.sum", OpKind::multiply).empty());
  try {
    r.require("l*.probs");
    FAIL() << "no anchor, no error";
  } catch (const AnchorMissing& e) {
    EXPECT_THAT(e.what(), HasSubstr("%l*.probs"));
  }
  EXPECT_THROW(r.value("nope"), AnchorMissing);
  EXPECT_THAT(r.users(r.value("b")).size(), 3u);
}

TEST(Rewrite, EachEditChangesWhatItSays) {
  const Program p = parse_and_verify(small_program);
  EXPECT_THAT(run(p), ElementsAre(11, 22, 33));  // max(a + 2b, a) - b = a + b
  {  // swap: subtract b - big
    Rewriter r(p);
    r.swap_operands(r.value("l1.small"));
    EXPECT_THAT(run(r.finish()), ElementsAre(-11, -22, -33));
  }
  {  // kind: add -> subtract in layer 1 only
    Rewriter r(p);
    r.set_kind(r.value("l1.sum"), OpKind::subtract);  // a + b - b = a; max(a, a) - b
    EXPECT_THAT(run(r.finish()), ElementsAre(1 - 10, 2 - 20, 3 - 30));
  }
  {  // bypass the maximum: l1.small reads l1.sum
    Rewriter r(p);
    r.bypass(r.value("l1.big"));
    EXPECT_THAT(run(r.finish()), ElementsAre(11, 22, 33));
  }
  {  // insert after and replace uses: l0.sum doubled for everything after it, outputs too
    Rewriter r(p);
    ValueId s = r.value("l0.sum");
    ValueId twice = r.insert_after(s, OpKind::add, {s, s}, {}, "l0.sum");
    EXPECT_EQ(r.name(twice), "l0.sum_2");
    r.replace_uses(s, twice);
    EXPECT_THAT(run(r.finish()), ElementsAre(22, 44, 66));
  }
  {  // a constant inserted before, an operand set; the note moves up with its group
    Rewriter r(p);
    ValueId sum = r.value("l0.sum");
    ValueId one = r.constant_before(sum, 1, {DType::f32, {3}}, "one");
    r.set_operand(sum, 1, one);
    Program q = r.finish();
    EXPECT_THAT(run(q), ElementsAre(2, 3, 4));  // l0.sum = a + 1
    EXPECT_THAT(print(q), HasSubstr("# the sum\n%one = constant"));
  }
  {  // attributes: a reshape has none; a slice's start and limit set together
    Rewriter r(p);
    ValueId rows = r.value("rows");
    ValueId part = r.insert_after(rows, OpKind::slice, {rows}, {ints({0, 0}), ints({1, 1}), ints({1, 1})}, "part");
    r.set_attrs(part, {{"start_indices", ints({0, 2})}, {"limit_indices", ints({1, 3})}});
    ValueId flat = r.insert_after(part, OpKind::reshape, {part}, {}, "flat", TensorType{DType::f32, {1}});
    Program q = r.finish();
    q.outputs.push_back({"z", flat, {}});
    EXPECT_THAT(run(q, "z"), ElementsAre(33));
  }
}

TEST(Rewrite, IllTypedEditsAreRefusedAndLeaveTheProgramAsItWas) {
  const Program p = parse_and_verify(small_program);
  Rewriter r(p);
  ValueId rows = r.value("rows"), small = r.value("l1.small");
  EXPECT_THROW(r.replace_uses(small, rows), VerifyError);            // f32[1,3] for f32[3]
  EXPECT_THROW(r.set_operand(r.value("l1.sum"), 0, rows), VerifyError);  // defined later, and the wrong shape
  EXPECT_THROW(r.set_kind(r.value("rows"), OpKind::add), VerifyError);    // add takes two operands
  EXPECT_THROW(r.insert_after(rows, OpKind::add, {rows, small}, {}, "bad"), VerifyError);
  EXPECT_THROW(r.set_attr(r.value("l1.sum"), "dimension", integer(0)), Error);  // no such attribute
  try {
    r.set_attr(r.insert_after(rows, OpKind::slice, {rows}, {ints({0, 0}), ints({1, 1}), ints({1, 1})}, "part"),
               "limit_indices", ints({1, 2}));
    FAIL() << "a slice whose type changes was accepted";
  } catch (const VerifyError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rewrite refused"));
  }
  Program q = r.finish();
  EXPECT_THAT(run(q), ElementsAre(11, 22, 33));  // nothing refused took effect
}

}  // namespace
}  // namespace cutcheck
