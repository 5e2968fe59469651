#include <fmt/format.h>

#include <cmath>

#include "program/text.h"

namespace cutcheck {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

std::string format_attr(const Attr& attr, DType result_dtype) {
  struct Visitor {
    DType dtype;
    std::string operator()(int64_t v) const { return fmt::format("{}", v); }
    std::string operator()(double v) const { return format_number(v, dtype); }
    std::string operator()(const std::vector<int64_t>& v) const { return fmt::format("[{}]", fmt::join(v, ", ")); }
    std::string operator()(const std::vector<std::vector<int64_t>>& v) const {
      std::vector<std::string> parts;
      for (const auto& g : v) parts.push_back((*this)(g));
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    std::string operator()(const std::string& v) const { return v; }
  };
  return std::visit(Visitor{result_dtype}, attr);
}

}  // namespace

std::string format_number(double value, DType dtype) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (dtype == DType::i32 || dtype == DType::i1) return fmt::format("{}", int64_t(value));
  std::string s = fmt::format("{}", float(value));
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string print(const Program& p) {
  std::string out = "# cutcheck program: typed SSA over static tensors (see docs/language.md)\n";
  out += fmt::format("program {}\n", quoted(p.label));
  if (p.replica) out += fmt::format("chip {} of {}\n", p.replica->index, p.replica->count);
  out += "\n";
  for (const InputDecl& in : p.inputs) {
    out += fmt::format("input %{} : {}", p.name(in.value), p.type(in.value).str());
    if (in.range) out += fmt::format(" range [{}, {}]", in.range->first, in.range->second);
    out += "\n";
  }
  for (const WeightDecl& w : p.weights) out += fmt::format("weight %{} : {}\n", p.name(w.value), p.type(w.value).str());
  for (const Operation& op : p.ops) {
    if (!op.note.empty()) {
      out += "\n";
      size_t start = 0;
      while (start <= op.note.size()) {
        size_t end = op.note.find('\n', start);
        if (end == std::string::npos) end = op.note.size();
        out += fmt::format("# {}\n", op.note.substr(start, end - start));
        start = end + 1;
      }
    }
    const TensorType& type = p.type(op.result);
    out += fmt::format("%{} = {}", p.name(op.result), op_info(op.kind).name);
    for (size_t i = 0; i < op.operands.size(); ++i) out += fmt::format("{} %{}", i ? "," : "", p.name(op.operands[i]));
    if (!op.attrs.empty()) {
      const OpInfo& info = op_info(op.kind);
      std::vector<std::string> attrs;
      for (size_t i = 0; i < op.attrs.size(); ++i)
        attrs.push_back(fmt::format("{} = {}", info.attrs[i].name, format_attr(op.attrs[i], type.dtype)));
      out += fmt::format(" {{{}}}", fmt::join(attrs, ", "));
    }
    out += fmt::format(" : {}\n", type.str());
  }
  out += "\n";
  for (const OutputDecl& o : p.outputs) out += fmt::format("output {} = %{}\n", o.name, p.name(o.value));
  return out;
}

}  // namespace cutcheck
