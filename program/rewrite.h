// Editing a program by its value names: the faults (faults/) and the mutants (mutate/)
// are written as rewrites of the program a backend is given, never as branches in the
// author. Values are found by name pattern (the author's names are the documented
// anchors, docs/faults.md); every edit is type-checked when it is made and the whole
// program is verified again by finish(), so an ill-typed rewrite is refused, never run.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "program/program.h"

namespace cutcheck {

// A rewrite looked for a value the program does not have. The message names the pattern.
class AnchorMissing : public Error {
 public:
  using Error::Error;
};

// Whether `name` matches `pattern`, where '*' stands for any run of characters
// (including none and including '.'); everything else matches itself.
bool name_matches(std::string_view pattern, std::string_view name);

class Rewriter {
 public:
  explicit Rewriter(Program program);

  const Program& program() const { return p_; }
  const TensorType& type(ValueId v) const { return p_.type(v); }
  const std::string& name(ValueId v) const { return p_.name(v); }

  // The op results whose names match `pattern`, in program order; with `kind`, only the
  // results of ops of that kind.
  std::vector<ValueId> find(std::string_view pattern, std::optional<OpKind> kind = std::nullopt) const;
  // As find(), but throws AnchorMissing when nothing matches.
  std::vector<ValueId> require(std::string_view pattern, std::optional<OpKind> kind = std::nullopt) const;
  // The value named exactly `name` (an op result, input or weight); AnchorMissing if none.
  ValueId value(std::string_view name) const;

  // The op that defines `v`; Error when `v` is an input or a weight.
  const Operation& op(ValueId v) const;
  ValueId operand(ValueId v, size_t i) const { return op(v).operands.at(i); }
  bool is_op_result(ValueId v) const;
  // The values whose ops read `v`, in program order.
  std::vector<ValueId> users(ValueId v) const;

  // A new op just before (or after) the op that defines `anchor`; before an input or a
  // weight means before the first op. The result type follows the op's type rule (and
  // `stated`, for ops that state theirs); an ill-typed op throws VerifyError. The name
  // is made unique with a numeric suffix. Inserting before an op takes over its note, so
  // that the printed comment stays above its group of ops.
  ValueId insert_before(ValueId anchor, OpKind kind, std::vector<ValueId> operands, std::vector<Attr> attrs,
                        const std::string& name, std::optional<TensorType> stated = std::nullopt);
  ValueId insert_after(ValueId anchor, OpKind kind, std::vector<ValueId> operands, std::vector<Attr> attrs,
                       const std::string& name, std::optional<TensorType> stated = std::nullopt);
  // A splat constant placed before the op that defines `anchor`.
  ValueId constant_before(ValueId anchor, double value, TensorType type, const std::string& name);

  // Every use of `from` by an op after the definition of `to` becomes a use of `to`, and
  // so do the outputs naming `from` unless `outputs` is false. Both must have one type.
  void replace_uses(ValueId from, ValueId to, bool outputs = true);
  // Operand `i` of the op that defines `v` becomes `to`. The op's type rule must still
  // hold and give the same result type.
  void set_operand(ValueId v, size_t i, ValueId to);
  // Sets attributes of the op that defines `v` (several at once, for those that only
  // type-check together, such as a slice's start and limit); same rule as set_operand.
  void set_attrs(ValueId v, const std::vector<std::pair<std::string, Attr>>& attrs);
  void set_attr(ValueId v, const std::string& attr, Attr value) { set_attrs(v, {{attr, std::move(value)}}); }
  // Exchanges operands `i` and `j` of the op that defines `v`; same rule as set_operand.
  void swap_operands(ValueId v, size_t i = 0, size_t j = 1);
  // The op that defines `v` is skipped: its users (and outputs) read its operand `i`
  // instead, which must have the result's type. The op itself stays, unused.
  void bypass(ValueId v, size_t i = 0);
  // Changes the kind of the op that defines `v` (add to subtract, maximum to minimum);
  // the attributes stay, so the new kind must take the same ones.
  void set_kind(ValueId v, OpKind kind);

  // Verifies the whole program and hands it over.
  Program finish();

 private:
  size_t index_of(ValueId v) const;  // the position in p_.ops of the op defining v
  size_t position(ValueId v) const;  // where "before v" is: index_of, or 0 for inputs and weights
  ValueId insert_at(size_t at, OpKind kind, std::vector<ValueId> operands, std::vector<Attr> attrs,
                    const std::string& name, std::optional<TensorType> stated);
  // Checks the op at `index` against its type rule, and that its result type is unchanged.
  void recheck(size_t index, const char* edit) const;

  Program p_;
  std::unordered_set<std::string> names_;  // every value's name, for making new ones unique
};

}  // namespace cutcheck
