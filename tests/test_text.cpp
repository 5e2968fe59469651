// The text form: canonical printing, parse errors with line:column, verifier errors.
#include <gmock/gmock.h>

#include "author/author.h"
#include "core/error.h"
#include "core/text.h"
#include "program/text.h"
#include "program/verifier.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

using ::testing::HasSubstr;

const char* small_program = R"(program "small"
input %x : f32[2,3]
input %pos : i32[] range [0, 7]
weight %w : f32[4,3]
%y = dot_general %x, %w {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]} : f32[2,4]
# a note
%z = add %y, %y : f32[2,4]
output z = %z
)";

TEST(Text, PrintParsePrintIsStable) {
  Program p = parse_and_verify(small_program);
  std::string once = print(p);
  EXPECT_EQ(print(parse_and_verify(once)), once);
  EXPECT_THAT(once, HasSubstr("# a note\n%z = add %y, %y : f32[2,4]"));
  EXPECT_EQ(p.inputs[1].range, (std::pair<int64_t, int64_t>{0, 7}));
}

// Authored programs print back to themselves: the property roundtrip.program (test_properties).

TEST(Text, NumbersReadBackExactly) {
  for (float v : {1e-5f, 0.1f, 3.4028235e38f, 1.17549435e-38f, -0.0f, 123456.789f}) {
    std::string s = format_number(v, DType::f32);
    EXPECT_EQ(double(float(std::stod(s))), double(v)) << s;
  }
  EXPECT_EQ(format_number(-INFINITY, DType::f32), "-inf");
  EXPECT_EQ(format_number(2, DType::f32), "2.0");
  EXPECT_EQ(format_number(2, DType::i32), "2");
}

// Parses `text` and returns the error message, or "" when it parses.
std::string parse_error(const std::string& text) {
  try {
    parse_and_verify(text, "p.txt");
  } catch (const ParseError& e) {
    return e.what();
  } catch (const VerifyError& e) {
    return std::string("verify: ") + e.what();
  }
  return "";
}

TEST(Text, ParseErrorsNameLineAndColumn) {
  EXPECT_THAT(parse_error("input %x : f32[2]\n"), HasSubstr("p.txt:1:1: expected 'program'"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f33[2]\n"), HasSubstr("p.txt:2:12: expected a type"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n%y = frobnicate %x : f32[2]\n"),
              HasSubstr("p.txt:3:6: unknown op 'frobnicate'"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n%y = add %x, %q : f32[2]\n"),
              HasSubstr("p.txt:3:14: %q is not defined before this use"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n%x = add %x, %x : f32[2]\n"),
              HasSubstr("p.txt:3:1: %x is defined twice"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n%y = reduce %x {kind = add} : f32[]\n"),
              HasSubstr("p.txt:3:1: reduce needs attribute 'dimensions'"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n%y = reduce %x {kind = add, dimensions = [0], dimensions = [0]} : f32[]\n"),
              HasSubstr("attribute 'dimensions' is given twice"));
  EXPECT_THAT(parse_error("program \"p\"\noutput y = %x\ninput %x : f32[2]\n"),
              HasSubstr("p.txt:2:12: %x is not defined"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n%y = add %x, %x : f32[2]\noutput y = %y\ninput %z : f32[2]\n"),
              HasSubstr("p.txt:5:1: an input cannot follow outputs"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[99999999999999999999]\n"), HasSubstr("out of range"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[-2]\n"), HasSubstr("dimension -2 is negative"));
  EXPECT_THAT(parse_error("program \"p\nx"), HasSubstr("p.txt:1:9: unterminated string"));
  EXPECT_THAT(parse_error("program \"p\"\n%y = constant {value = nope} : f32[]\n"), HasSubstr("expected a number"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2] $\n"), HasSubstr("p.txt:2:19: unexpected character '$'"));
}

TEST(Text, VerifierChecksTypesAndShapes) {
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n%y = add %x, %x : f32[3]\noutput y = %y\n"),
              HasSubstr("verify: p.txt:3:1: %y = add: result type is f32[2], but the program states f32[3]"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n%y = reshape %x : f32[3]\noutput y = %y\n"),
              HasSubstr("cannot reshape f32[2] to f32[3]"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2] range [0, 1]\n%y = add %x, %x : f32[2]\noutput y = %y\n"),
              HasSubstr("only i32 inputs may declare a range"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n%y = add %x, %x : f32[2]\noutput y = %y\noutput y = %x\n"),
              HasSubstr("output 'y' is named twice"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n"), HasSubstr("the program has no outputs"));
  EXPECT_THAT(parse_error("program \"p\"\ninput %x : f32[2]\n%y = all_reduce %x {kind = add, replica_groups = [[0]]} : f32[2]\noutput y = %y\n"),
              HasSubstr("a collective needs the program's 'chip i of n' line"));
  EXPECT_THAT(parse_error("program \"p\"\nchip 0 of 2\ninput %x : f32[2]\n%y = all_reduce %x {kind = add, replica_groups = [[0, 0]]} : f32[2]\noutput y = %y\n"),
              HasSubstr("replica_groups must name each chip 0..1 once"));
}

TEST(Text, VerifierRefusesHugeShapesBeforeAllocating) {
  std::string text = "program \"p\"\ninput %x : f32[1000000,1000000,1000]\n%y = add %x, %x : f32[1000000,1000000,1000]\noutput y = %y\n";
  EXPECT_THROW(parse_and_verify(text), LimitError);
}

// What a process printed last, for one-line messages: line breaks (either kind) and spaces
// that end the text are not a line of their own.
TEST(ProcessText, LastLineIsWhatAProcessSaidLast) {
  EXPECT_EQ(last_line(""), "");
  EXPECT_EQ(last_line("one line"), "one line");
  EXPECT_EQ(last_line("first\nsecond\n"), "second");
  EXPECT_EQ(last_line("first\r\nsecond \r\n\n"), "second");
  EXPECT_EQ(last_line("first\n\n\n"), "first");
  EXPECT_EQ(last_line("\n\n"), "");
  EXPECT_EQ(last_line("  indented\n"), "  indented");
}

}  // namespace
}  // namespace cutcheck
