// The op set: each op's name, operands, attributes and type rule, in one table.
// Names and semantics follow StableHLO where StableHLO has the op; docs/language.md
// states each one. The interpreter's kernels (reference/kernels.h) give the values.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/tensor.h"

namespace cutcheck {

// The highest rank a value may have (the verifier enforces it).
constexpr int max_tensor_rank = 8;

enum class OpKind : uint8_t {
  // Values from nothing.
  constant,
  iota,
  // Element-wise.
  convert,
  add,
  subtract,
  multiply,
  divide,
  maximum,
  minimum,
  power,
  negate,
  exponential,
  log,
  sqrt,
  rsqrt,
  logistic,
  sine,
  cosine,
  reduce_precision,
  compare,
  select,
  // Data movement.
  broadcast_in_dim,
  reshape,
  transpose,
  slice,
  concatenate,
  dynamic_update_slice,
  gather,
  // A quantized value's codes, scales or mins, as f32.
  block_field,
  // Reductions and contractions.
  reduce,
  dot_general,
  // Collectives across the chips of a tp split.
  all_reduce,
  all_gather,  // the last: op_count follows it
};

// How many ops there are: every OpKind has a row in the op table, at its own index.
inline constexpr size_t op_count = size_t(OpKind::all_gather) + 1;

// What an op computes, as the consumers that treat ops alike (the bound, the variants, the
// mutants, the op suite) tell them apart. Ops of one class are handled alike; an op with
// a rule of its own has a class of its own.
enum class OpClass : uint8_t {
  value,             // constant, iota: from the program alone
  convert,           // the value in another dtype
  unary,             // f(x) element by element: OpInfo::scalar
  binary,            // f(x, y) element by element: OpInfo::scalar
  reduce_precision,  // x rounded to a narrower format
  compare,           // a predicate per element
  select,            // per element one of two values
  movement,          // elements moved or copied, never computed
  reduction,         // reduce
  contraction,       // dot_general
  collective,        // across the chips of a tp split
};

// How the reference's f32 result relates to the exact one (kernels.h).
enum class Rounding : uint8_t {
  exact,              // no rounding: the result is exactly representable (max, negate, data movement)
  correctly_rounded,  // the exact result rounded once to f32 (+, -, *, /, sqrt, int to float)
  function,           // an elementary function: the double result rounded, within BoundModel::function_ulps
  sum,                // a sum accumulated in double in a fixed order, rounded once (reduce, dot_general)
};

// Which operand's buffer the reference's kernel may write its result over: it reads each
// element of that operand before writing the same element of the result, or leaves it.
enum class InPlace : uint8_t {
  none,
  any,    // element i of the result from element i of the operands alone
  first,  // operand 0 (dynamic_update_slice: copied to itself, then the update written)
};

// The element-wise semantics of a unary or binary op (a unary op ignores y and dy).
struct Scalar {
  // On f32 operands widened to double; the result is rounded to f32 once.
  double (*f64)(double x, double y) = nullptr;
  // On i32 operands: the exact result, which the kernel wraps to i32 (two's complement);
  // set exactly where the op takes i32 (OpInfo::i32).
  int64_t (*i32)(int64_t x, int64_t y) = nullptr;
  // In f32 arithmetic as a plain C backend writes it (the C library's float functions),
  // for the functions and sqrt (harness/variants.h). Unset for +, -, *, / and the exact
  // ops, whose f32 form has the bits of f64 rounded.
  float (*f32)(float x, float y) = nullptr;
  // f(x + dx, y + dy) - r for finite x, y and r = f(x, y) as the reference has it, without
  // the cancellation of subtracting two nearly equal values (bound/perturbed_runs.h).
  // Unset: computed as that difference.
  double (*change)(double x, double dx, double y, double dy, double r) = nullptr;
};

enum class AttrKind : uint8_t {
  integer,    // 3
  number,     // -inf, 0.125, 1e-05
  ints,       // [0, 2]
  int_lists,  // [[0, 1], [2, 3]]
  word,       // one of the listed words, such as LT or add
};

// One attribute value; which alternative is set follows the AttrKind.
using Attr = std::variant<int64_t, double, std::vector<int64_t>, std::vector<std::vector<int64_t>>, std::string>;

struct AttrSpec {
  std::string_view name;
  AttrKind kind;
  std::vector<std::string_view> words;  // the allowed words, for AttrKind::word
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  int min_operands;
  int max_operands;  // -1: any number
  std::vector<AttrSpec> attrs;
  // The result type is stated by the program rather than inferred from the operands
  // (constant, iota, convert, reshape, broadcast_in_dim): the type rule checks it.
  bool stated_type;
  OpClass op_class;
  bool i32;  // takes i32 operands (element-wise ops; the others' type rules say which)
  Rounding rounding;
  InPlace in_place;
  bool commutes;  // f(x, y) = f(y, x) for every x and y (compare's depends on its direction)
  Scalar scalar;  // unary and binary ops
};

// The row of `kind`. The table places each row at its kind's index and checks, when first
// read, that every OpKind has exactly one row.
const OpInfo& op_info(OpKind kind);
// Throws nothing: returns false for an unknown name.
bool find_op(std::string_view name, OpKind& out);
std::vector<OpKind> all_op_kinds();  // in enum order
// The ops of one class, in enum order.
std::vector<OpKind> op_kinds(OpClass op_class);

// The type rule of an op: the result type for these operand types and attributes.
// `stated` is the type the program writes down; required for stated_type ops and,
// when given for the others, compared with the inferred type. Throws VerifyError with a
// message that names the rule (the caller adds the location).
TensorType result_type(OpKind kind, std::span<const TensorType* const> operands, std::span<const Attr> attrs,
                       const TensorType* stated);

// Convenience for building attribute lists in code.
inline Attr ints(std::vector<int64_t> v) { return Attr(std::move(v)); }
inline Attr word(std::string w) { return Attr(std::move(w)); }
inline Attr integer(int64_t v) { return Attr(v); }
inline Attr number(double v) { return Attr(v); }

}  // namespace cutcheck
