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
  // Reductions and contractions.
  reduce,
  dot_general,
  // Collectives across the chips of a tp split.
  all_reduce,
  all_gather,
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
};

const OpInfo& op_info(OpKind kind);
// Throws nothing: returns false for an unknown name.
bool find_op(std::string_view name, OpKind& out);
std::vector<OpKind> all_op_kinds();

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
