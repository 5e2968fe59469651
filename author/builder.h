// Builds a Program in memory, one op at a time. Result types come from the op table's
// type rule (program/ops.h), the same rule the verifier applies to parsed text, so the
// author never writes a shape by hand except where an op states its type.
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "program/program.h"

namespace cutcheck {

class Builder {
 public:
  explicit Builder(std::string label, std::optional<Replica> replica = std::nullopt);

  ValueId input(const std::string& name, TensorType type,
                std::optional<std::pair<int64_t, int64_t>> range = std::nullopt);
  // Declares a weight once; a second call with the same name returns the same value.
  ValueId weight(const std::string& name, TensorType type);
  void output(const std::string& name, ValueId value);

  // A comment printed above the next op.
  void note(std::string text) { note_ = std::move(text); }

  // The general form: `stated` is required for ops whose result type is stated.
  ValueId op(OpKind kind, std::vector<ValueId> operands, std::vector<Attr> attrs, const std::string& name,
             std::optional<TensorType> stated = std::nullopt);

  // Shorthands for the ops the author uses most.
  ValueId constant(double value, TensorType type, const std::string& name);
  ValueId iota(int64_t dimension, TensorType type, const std::string& name);
  ValueId convert(ValueId x, DType dtype, const std::string& name);
  ValueId binary(OpKind kind, ValueId a, ValueId b, const std::string& name);
  ValueId unary(OpKind kind, ValueId x, const std::string& name);
  ValueId compare(ValueId a, ValueId b, const std::string& direction, const std::string& name);
  ValueId select(ValueId pred, ValueId on_true, ValueId on_false, const std::string& name);
  ValueId broadcast(ValueId x, Shape shape, std::vector<int64_t> dims, const std::string& name);
  ValueId reshape(ValueId x, Shape shape, const std::string& name);
  ValueId transpose(ValueId x, std::vector<int64_t> permutation, const std::string& name);
  ValueId slice(ValueId x, std::vector<int64_t> start, std::vector<int64_t> limit, const std::string& name);
  ValueId concatenate(std::vector<ValueId> parts, int64_t dimension, const std::string& name);
  ValueId reduce(ValueId x, const std::string& kind, std::vector<int64_t> dims, const std::string& name);
  // dot_general without batching dimensions, or with them.
  ValueId dot(ValueId lhs, ValueId rhs, std::vector<int64_t> lhs_contract, std::vector<int64_t> rhs_contract,
              const std::string& name, std::vector<int64_t> lhs_batch = {}, std::vector<int64_t> rhs_batch = {});

  const TensorType& type(ValueId v) const { return program_.type(v); }
  const Shape& shape(ValueId v) const { return program_.type(v).shape; }
  const Program& program() const { return program_; }

  // Verifies and hands over the program.
  Program finish();

 private:
  ValueId define(const std::string& name, TensorType type);

  Program program_;
  std::unordered_set<std::string> names_;
  std::string note_;
};

}  // namespace cutcheck
