// A cutcheck program: typed SSA over static-shaped tensors. Inputs and weights are
// declared, every other value is defined by exactly one operation, outputs are named.
// The text form is in text.h; the rules are checked by verifier.h; the op set is in
// ops.h; rewrite.h edits a program by value name; docs/language.md describes all of it.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/tensor.h"
#include "program/ops.h"

namespace cutcheck {

using ValueId = int32_t;

// Where a statement stood in its text (1-based); 0:0 for programs built in memory.
struct Location {
  int line = 0, column = 0;
};

struct ValueDef {
  std::string name;  // without the '%'
  TensorType type;
};

struct InputDecl {
  ValueId value;
  // The closed interval every element must lie in (i32 inputs only). The interpreter
  // refuses inputs outside it before running anything.
  std::optional<std::pair<int64_t, int64_t>> range;
  Location loc;
};

struct WeightDecl {
  ValueId value;  // its name is the weight's name in the manifest
  Location loc;
};

struct Operation {
  OpKind kind;
  ValueId result;
  std::vector<ValueId> operands;
  std::vector<Attr> attrs;  // in the order of op_info(kind).attrs
  std::string note;         // printed as a comment line above the op
  Location loc;

  const Attr& attr(std::string_view name) const;
  int64_t integer(std::string_view name) const;
  double number(std::string_view name) const;
  const std::vector<int64_t>& ints(std::string_view name) const;
  const std::vector<std::vector<int64_t>>& int_lists(std::string_view name) const;
  const std::string& word(std::string_view name) const;
};

struct OutputDecl {
  std::string name;
  ValueId value;
  Location loc;
};

// Which chip of a tp split this program runs on.
struct Replica {
  int64_t index = 0, count = 1;
  bool operator==(const Replica&) const = default;
};

struct Program {
  std::string label;  // free text; the author puts the cut here
  std::optional<Replica> replica;
  std::vector<ValueDef> values;
  std::vector<InputDecl> inputs;
  std::vector<WeightDecl> weights;
  std::vector<Operation> ops;
  std::vector<OutputDecl> outputs;

  const ValueDef& value(ValueId id) const { return values[size_t(id)]; }
  const TensorType& type(ValueId id) const { return values[size_t(id)].type; }
  const std::string& name(ValueId id) const { return values[size_t(id)].name; }
  // The value with this name, if any.
  std::optional<ValueId> find(std::string_view name) const;
  // The op that defines `id`; none for inputs and weights.
  const Operation* definition(ValueId id) const;
  // The weight `id` is, looking through its conversions (a weight widened to f32 to be a
  // contraction's operand); none where it is computed from anything else.
  std::optional<ValueId> weight_behind(ValueId id) const;
};

}  // namespace cutcheck
