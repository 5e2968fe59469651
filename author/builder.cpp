#include "author/builder.h"

#include <fmt/format.h>

#include <tuple>

#include "core/error.h"
#include "program/verifier.h"

namespace cutcheck {

Builder::Builder(std::string label, std::optional<Replica> replica) {
  program_.label = std::move(label);
  program_.replica = replica;
}

ValueId Builder::define(const std::string& name, TensorType type) {
  // Names are unique: a repeated hint gets a numeric suffix.
  // Inserting is the test (one lookup, no copy of the hint unless it is taken).
  auto [at, fresh] = names_.insert(name);
  for (int i = 2; !fresh; ++i) std::tie(at, fresh) = names_.insert(fmt::format("{}_{}", name, i));
  program_.values.push_back({*at, std::move(type)});
  return ValueId(program_.values.size() - 1);
}

ValueId Builder::input(const std::string& name, TensorType type, std::optional<std::pair<int64_t, int64_t>> range) {
  if (names_.count(name)) throw Error(fmt::format("input %{} is declared twice", name));
  ValueId v = define(name, std::move(type));
  program_.inputs.push_back({v, range, {}});
  return v;
}

ValueId Builder::weight(const std::string& name, TensorType type) {
  for (const WeightDecl& w : program_.weights)
    if (program_.name(w.value) == name) return w.value;
  if (names_.count(name)) throw Error(fmt::format("weight %{} collides with another value", name));
  ValueId v = define(name, std::move(type));
  program_.weights.push_back({v, {}});
  return v;
}

void Builder::output(const std::string& name, ValueId value) { program_.outputs.push_back({name, value, {}}); }

ValueId Builder::op(OpKind kind, std::vector<ValueId> operands, std::vector<Attr> attrs, const std::string& name,
                    std::optional<TensorType> stated) {
  std::vector<const TensorType*> types;
  for (ValueId v : operands) types.push_back(&program_.type(v));
  TensorType t;
  try {
    t = result_type(kind, types, attrs, stated ? &*stated : nullptr);
  } catch (const VerifyError& e) {
    throw VerifyError(fmt::format("while authoring %{}: {}", name, e.what()));
  }
  ValueId result = define(name, std::move(t));
  program_.ops.push_back({kind, result, std::move(operands), std::move(attrs), std::move(note_), {}});
  note_.clear();
  return result;
}

ValueId Builder::constant(double value, TensorType type, const std::string& name) {
  return op(OpKind::constant, {}, {number(value)}, name, std::move(type));
}

ValueId Builder::iota(int64_t dimension, TensorType type, const std::string& name) {
  return op(OpKind::iota, {}, {integer(dimension)}, name, std::move(type));
}

ValueId Builder::convert(ValueId x, DType dtype, const std::string& name) {
  return op(OpKind::convert, {x}, {}, name, TensorType{dtype, shape(x)});
}

ValueId Builder::binary(OpKind kind, ValueId a, ValueId b, const std::string& name) { return op(kind, {a, b}, {}, name); }

ValueId Builder::unary(OpKind kind, ValueId x, const std::string& name) { return op(kind, {x}, {}, name); }

ValueId Builder::compare(ValueId a, ValueId b, const std::string& direction, const std::string& name) {
  return op(OpKind::compare, {a, b}, {word(direction)}, name);
}

ValueId Builder::select(ValueId pred, ValueId on_true, ValueId on_false, const std::string& name) {
  return op(OpKind::select, {pred, on_true, on_false}, {}, name);
}

ValueId Builder::broadcast(ValueId x, Shape to, std::vector<int64_t> dims, const std::string& name) {
  return op(OpKind::broadcast_in_dim, {x}, {ints(std::move(dims))}, name, TensorType{type(x).dtype, std::move(to)});
}

ValueId Builder::reshape(ValueId x, Shape to, const std::string& name) {
  return op(OpKind::reshape, {x}, {}, name, TensorType{type(x).dtype, std::move(to)});
}

ValueId Builder::transpose(ValueId x, std::vector<int64_t> permutation, const std::string& name) {
  return op(OpKind::transpose, {x}, {ints(std::move(permutation))}, name);
}

ValueId Builder::slice(ValueId x, std::vector<int64_t> start, std::vector<int64_t> limit, const std::string& name) {
  std::vector<int64_t> strides(start.size(), 1);
  return op(OpKind::slice, {x}, {ints(std::move(start)), ints(std::move(limit)), ints(std::move(strides))}, name);
}

ValueId Builder::concatenate(std::vector<ValueId> parts, int64_t dimension, const std::string& name) {
  return op(OpKind::concatenate, std::move(parts), {integer(dimension)}, name);
}

ValueId Builder::reduce(ValueId x, const std::string& kind, std::vector<int64_t> dims, const std::string& name) {
  return op(OpKind::reduce, {x}, {word(kind), ints(std::move(dims))}, name);
}

ValueId Builder::dot(ValueId lhs, ValueId rhs, std::vector<int64_t> lhs_contract, std::vector<int64_t> rhs_contract,
                     const std::string& name, std::vector<int64_t> lhs_batch, std::vector<int64_t> rhs_batch) {
  return op(OpKind::dot_general, {lhs, rhs},
            {ints(std::move(lhs_batch)), ints(std::move(rhs_batch)), ints(std::move(lhs_contract)),
             ints(std::move(rhs_contract))},
            name);
}

Program Builder::finish() {
  verify(program_, program_.label);
  return std::move(program_);
}

}  // namespace cutcheck
