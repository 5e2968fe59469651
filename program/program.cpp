#include "program/program.h"

#include <fmt/format.h>

#include "core/error.h"

namespace cutcheck {

const Attr& Operation::attr(std::string_view name) const {
  const OpInfo& info = op_info(kind);
  for (size_t i = 0; i < info.attrs.size() && i < attrs.size(); ++i)
    if (info.attrs[i].name == name) return attrs[i];
  throw Error(fmt::format("{} has no attribute {}", info.name, name));
}

int64_t Operation::integer(std::string_view name) const { return std::get<int64_t>(attr(name)); }
double Operation::number(std::string_view name) const { return std::get<double>(attr(name)); }
const std::vector<int64_t>& Operation::ints(std::string_view name) const {
  return std::get<std::vector<int64_t>>(attr(name));
}
const std::vector<std::vector<int64_t>>& Operation::int_lists(std::string_view name) const {
  return std::get<std::vector<std::vector<int64_t>>>(attr(name));
}
const std::string& Operation::word(std::string_view name) const { return std::get<std::string>(attr(name)); }

std::optional<ValueId> Program::find(std::string_view name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return ValueId(i);
  return std::nullopt;
}

const Operation* Program::definition(ValueId id) const {
  for (const Operation& op : ops)
    if (op.result == id) return &op;
  return nullptr;
}

std::optional<ValueId> Program::weight_behind(ValueId id) const {
  for (const Operation* op = definition(id); op && op->kind == OpKind::convert; op = definition(id)) id = op->operands[0];
  for (const WeightDecl& w : weights)
    if (w.value == id) return id;
  return std::nullopt;
}

}  // namespace cutcheck
