#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <string_view>

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

// Writes straight onto the text being printed: a program has hundreds of attributes, and a
// string made for each, then joined and copied, costs allocations and copies for nothing.
void write_attr(std::string& out, const Attr& attr, DType result_dtype) {
  auto to = std::back_inserter(out);
  struct Visitor {
    std::string& out;
    std::back_insert_iterator<std::string> to;
    DType dtype;
    void operator()(int64_t v) const { fmt::format_to(to, "{}", v); }
    void operator()(double v) const { out += format_number(v, dtype); }
    void operator()(const std::vector<int64_t>& v) const { fmt::format_to(to, "[{}]", fmt::join(v, ", ")); }
    void operator()(const std::vector<std::vector<int64_t>>& v) const {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        (*this)(v[i]);
      }
      out += ']';
    }
    void operator()(const std::string& v) const { out += v; }
  };
  std::visit(Visitor{out, to, result_dtype}, attr);
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
  auto to = std::back_inserter(out);  // each line formatted onto the text, not into a string of its own
  fmt::format_to(to, "program {}\n", quoted(p.label));
  if (p.replica) fmt::format_to(to, "chip {} of {}\n", p.replica->index, p.replica->count);
  out += "\n";
  for (const InputDecl& in : p.inputs) {
    fmt::format_to(to, "input %{} : {}", p.name(in.value), p.type(in.value).str());
    if (in.range) fmt::format_to(to, " range [{}, {}]", in.range->first, in.range->second);
    out += "\n";
  }
  for (const WeightDecl& w : p.weights) fmt::format_to(to, "weight %{} : {}\n", p.name(w.value), p.type(w.value).str());
  for (const Operation& op : p.ops) {
    if (!op.note.empty()) {
      out += "\n";
      size_t start = 0;
      while (start <= op.note.size()) {
        size_t end = op.note.find('\n', start);
        if (end == std::string::npos) end = op.note.size();
        fmt::format_to(to, "# {}\n", std::string_view(op.note).substr(start, end - start));
        start = end + 1;
      }
    }
    const TensorType& type = p.type(op.result);
    const OpInfo& info = op_info(op.kind);
    fmt::format_to(to, "%{} = {}", p.name(op.result), info.name);
    for (size_t i = 0; i < op.operands.size(); ++i) fmt::format_to(to, "{} %{}", i ? "," : "", p.name(op.operands[i]));
    if (!op.attrs.empty()) {
      out += " {";
      for (size_t i = 0; i < op.attrs.size(); ++i) {
        fmt::format_to(to, "{}{} = ", i ? ", " : "", info.attrs[i].name);
        write_attr(out, op.attrs[i], type.dtype);
      }
      out += "}";
    }
    fmt::format_to(to, " : {}\n", type.str());
  }
  out += "\n";
  for (const OutputDecl& o : p.outputs) fmt::format_to(to, "output {} = %{}\n", o.name, p.name(o.value));
  return out;
}

}  // namespace cutcheck
