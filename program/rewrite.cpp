#include "program/rewrite.h"

#include <fmt/format.h>

#include "program/verifier.h"

namespace cutcheck {

bool name_matches(std::string_view pattern, std::string_view name) {
  // Iterative glob: on a mismatch, let the last '*' swallow one more character.
  size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p, ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Rewriter::Rewriter(Program program) : p_(std::move(program)) {
  for (const ValueDef& d : p_.values) names_.insert(d.name);
}

std::vector<ValueId> Rewriter::find(std::string_view pattern, std::optional<OpKind> kind) const {
  std::vector<ValueId> out;
  for (const Operation& op : p_.ops)
    if ((!kind || op.kind == *kind) && name_matches(pattern, p_.name(op.result))) out.push_back(op.result);
  return out;
}

std::vector<ValueId> Rewriter::require(std::string_view pattern, std::optional<OpKind> kind) const {
  std::vector<ValueId> out = find(pattern, kind);
  if (out.empty())
    throw AnchorMissing(fmt::format("{}: no value matches %{}{}", p_.label, pattern,
                                    kind ? fmt::format(" (a {} op)", op_info(*kind).name) : ""));
  return out;
}

ValueId Rewriter::value(std::string_view name) const {
  if (std::optional<ValueId> v = p_.find(name)) return *v;
  throw AnchorMissing(fmt::format("{}: no value is named %{}", p_.label, name));
}

bool Rewriter::is_op_result(ValueId v) const {
  for (const Operation& op : p_.ops)
    if (op.result == v) return true;
  return false;
}

size_t Rewriter::index_of(ValueId v) const {
  for (size_t i = 0; i < p_.ops.size(); ++i)
    if (p_.ops[i].result == v) return i;
  throw Error(fmt::format("%{} is not the result of an op", p_.name(v)));
}

size_t Rewriter::position(ValueId v) const { return is_op_result(v) ? index_of(v) : 0; }

const Operation& Rewriter::op(ValueId v) const { return p_.ops[index_of(v)]; }

std::vector<ValueId> Rewriter::users(ValueId v) const {
  std::vector<ValueId> out;
  for (const Operation& op : p_.ops)
    for (ValueId x : op.operands)
      if (x == v) {
        out.push_back(op.result);
        break;
      }
  return out;
}

ValueId Rewriter::insert_at(size_t at, OpKind kind, std::vector<ValueId> operands, std::vector<Attr> attrs,
                            const std::string& name, std::optional<TensorType> stated) {
  std::vector<const TensorType*> types;
  for (ValueId v : operands) types.push_back(&p_.type(v));
  TensorType t;
  try {
    t = result_type(kind, types, attrs, stated ? &*stated : nullptr);
  } catch (const VerifyError& e) {
    throw VerifyError(fmt::format("{}: rewrite refused: %{} = {}", p_.label, name, e.what()));
  }
  std::string unique = name;
  for (int i = 2; names_.count(unique); ++i) unique = fmt::format("{}_{}", name, i);
  names_.insert(unique);
  p_.values.push_back({unique, std::move(t)});
  const ValueId result = ValueId(p_.values.size() - 1);
  Operation op{kind, result, std::move(operands), std::move(attrs), {}, {}};
  p_.ops.insert(p_.ops.begin() + std::ptrdiff_t(at), std::move(op));
  return result;
}

ValueId Rewriter::insert_before(ValueId anchor, OpKind kind, std::vector<ValueId> operands, std::vector<Attr> attrs,
                                const std::string& name, std::optional<TensorType> stated) {
  const size_t at = position(anchor);
  ValueId v = insert_at(at, kind, std::move(operands), std::move(attrs), name, std::move(stated));
  if (at + 1 < p_.ops.size()) std::swap(p_.ops[at].note, p_.ops[at + 1].note);  // the group's comment stays on top
  return v;
}

ValueId Rewriter::insert_after(ValueId anchor, OpKind kind, std::vector<ValueId> operands, std::vector<Attr> attrs,
                               const std::string& name, std::optional<TensorType> stated) {
  const size_t at = is_op_result(anchor) ? index_of(anchor) + 1 : 0;
  return insert_at(at, kind, std::move(operands), std::move(attrs), name, std::move(stated));
}

ValueId Rewriter::constant_before(ValueId anchor, double value, TensorType type, const std::string& name) {
  return insert_before(anchor, OpKind::constant, {}, {number(value)}, name, std::move(type));
}

void Rewriter::replace_uses(ValueId from, ValueId to, bool outputs) {
  if (p_.type(from) != p_.type(to))
    throw VerifyError(fmt::format("{}: rewrite refused: %{} ({}) cannot stand for %{} ({})", p_.label, p_.name(to),
                                  p_.type(to).str(), p_.name(from), p_.type(from).str()));
  const size_t start = is_op_result(to) ? index_of(to) + 1 : 0;
  for (size_t i = start; i < p_.ops.size(); ++i)
    for (ValueId& x : p_.ops[i].operands)
      if (x == from) x = to;
  if (outputs)
    for (OutputDecl& o : p_.outputs)
      if (o.value == from) o.value = to;
}

void Rewriter::recheck(size_t index, const char* edit) const {
  const Operation& op = p_.ops[index];
  std::vector<const TensorType*> types;
  for (ValueId v : op.operands) types.push_back(&p_.type(v));
  try {
    result_type(op.kind, types, op.attrs, &p_.type(op.result));
  } catch (const VerifyError& e) {
    throw VerifyError(fmt::format("{}: rewrite refused: {} %{}: {}", p_.label, edit, p_.name(op.result), e.what()));
  }
}

void Rewriter::set_operand(ValueId v, size_t i, ValueId to) {
  const size_t index = index_of(v);
  Operation& op = p_.ops[index];
  if (i >= op.operands.size())
    throw Error(fmt::format("{}: %{} has no operand {}", p_.label, p_.name(v), i));
  if (is_op_result(to) && index_of(to) >= index)
    throw VerifyError(fmt::format("{}: rewrite refused: %{} would read %{} before it is defined", p_.label,
                                  p_.name(v), p_.name(to)));
  const ValueId old = op.operands[i];
  op.operands[i] = to;
  try {
    recheck(index, "setting an operand of");
  } catch (...) {
    p_.ops[index].operands[i] = old;
    throw;
  }
}

void Rewriter::set_attrs(ValueId v, const std::vector<std::pair<std::string, Attr>>& attrs) {
  const size_t index = index_of(v);
  Operation& op = p_.ops[index];
  const std::vector<Attr> old = op.attrs;
  const OpInfo& info = op_info(op.kind);
  for (const auto& [name, value] : attrs) {
    size_t slot = info.attrs.size();
    for (size_t i = 0; i < info.attrs.size(); ++i)
      if (info.attrs[i].name == name) slot = i;
    if (slot == info.attrs.size())
      throw Error(fmt::format("{}: %{} = {} has no attribute {}", p_.label, p_.name(v), info.name, name));
    op.attrs[slot] = value;
  }
  try {
    recheck(index, "setting attributes of");
  } catch (...) {
    p_.ops[index].attrs = old;
    throw;
  }
}

void Rewriter::swap_operands(ValueId v, size_t i, size_t j) {
  const size_t index = index_of(v);
  Operation& op = p_.ops[index];
  if (i >= op.operands.size() || j >= op.operands.size())
    throw Error(fmt::format("{}: %{} has no operands {} and {}", p_.label, p_.name(v), i, j));
  std::swap(op.operands[i], op.operands[j]);
  try {
    recheck(index, "swapping operands of");
  } catch (...) {
    std::swap(p_.ops[index].operands[i], p_.ops[index].operands[j]);
    throw;
  }
}

void Rewriter::bypass(ValueId v, size_t i) { replace_uses(v, operand(v, i)); }

void Rewriter::set_kind(ValueId v, OpKind kind) {
  const size_t index = index_of(v);
  const OpKind old = p_.ops[index].kind;
  p_.ops[index].kind = kind;
  try {
    recheck(index, "changing the kind of");
  } catch (...) {
    p_.ops[index].kind = old;
    throw;
  }
}

Program Rewriter::finish() {
  verify(p_, p_.label);
  return std::move(p_);
}

}  // namespace cutcheck
