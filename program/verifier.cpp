#include "program/verifier.h"

#include <fmt/format.h>

#include <cctype>
#include <climits>
#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_set>

#include "core/checked.h"
#include "core/error.h"
#include "core/limits.h"

namespace cutcheck {
namespace {

class Verifier {
 public:
  Verifier(const Program& p, const std::string& source) : p_(p), source_(source), defined_(p.values.size(), false) {
    names_.reserve(p.values.size());
  }

  // The fewest bytes any run needs: the inputs, and the op results alive at once when each
  // is released after its last reader (weights are mapped, not counted). An interpreter
  // that keeps every value checks their sum itself (reference/interpreter.cpp).
  uint64_t live_peak() const {
    const std::string what = fmt::format("{}: the program's values", source_);
    std::vector<size_t> last(p_.values.size(), 0);
    std::vector<bool> released(p_.values.size(), false);  // the results of ops that read something
    for (size_t i = 0; i < p_.ops.size(); ++i) {
      for (ValueId v : p_.ops[i].operands) last[size_t(v)] = i;
      released[size_t(p_.ops[i].result)] = !p_.ops[i].operands.empty();
    }
    for (const OutputDecl& o : p_.outputs) released[size_t(o.value)] = false;
    uint64_t live = 0;
    for (const InputDecl& in : p_.inputs) live = checked_add(live, p_.type(in.value).bytes(), what);
    uint64_t peak = live;
    for (size_t i = 0; i < p_.ops.size(); ++i) {
      const ValueId r = p_.ops[i].result;
      live = checked_add(live, p_.type(r).bytes(), what);
      peak = std::max(peak, live);
      for (ValueId v : p_.ops[i].operands)
        if (last[size_t(v)] == i && released[size_t(v)]) {
          live -= p_.type(v).bytes();
          released[size_t(v)] = false;  // an operand read twice by this op is released once
        }
    }
    return peak;
  }

  void run() {
    for (const InputDecl& in : p_.inputs) {
      define(in.value, in.loc);
      const TensorType& t = p_.type(in.value);
      if (in.range && t.dtype != DType::i32)
        fail(in.loc, fmt::format("input %{}: only i32 inputs may declare a range", p_.name(in.value)));
      if (in.range && (in.range->first < INT32_MIN || in.range->second > INT32_MAX || in.range->first > in.range->second))
        fail(in.loc, fmt::format("input %{}: range [{}, {}] is not a non-empty range of i32 values", p_.name(in.value),
                                 in.range->first, in.range->second));
      if (t.dtype == DType::i1 || is_quantized(t.dtype))
        fail(in.loc, fmt::format("input %{}: inputs are f32, i32, bf16 or f16, got {}", p_.name(in.value), t.str()));
    }
    for (const WeightDecl& w : p_.weights) {
      define(w.value, w.loc);
      const DType d = p_.type(w.value).dtype;
      if (d != DType::f32 && !is_half(d) && !is_quantized(d))
        fail(w.loc, fmt::format("weight %{}: weights are f32, bf16, f16 or quantized, got {}", p_.name(w.value),
                                p_.type(w.value).str()));
      if (is_quantized(d)) {
        try {
          (void)p_.type(w.value).bytes();  // rows of whole blocks
        } catch (const FormatError& e) {
          fail(w.loc, fmt::format("weight %{}: {}", p_.name(w.value), e.what()));
        }
      }
    }
    for (const Operation& op : p_.ops) {
      std::vector<const TensorType*> operands;
      for (ValueId v : op.operands) {
        if (v < 0 || size_t(v) >= p_.values.size() || !defined_[size_t(v)])
          fail(op.loc, fmt::format("%{}: operand is used before it is defined", result_name(op)));
        operands.push_back(&p_.type(v));
      }
      check_result(op);
      try {
        result_type(op.kind, operands, op.attrs, &p_.type(op.result));
      } catch (const VerifyError& e) {
        fail(op.loc, fmt::format("%{} = {}", p_.name(op.result), e.what()));
      } catch (const LimitError& e) {  // a stated type too large to count
        throw LimitError(fmt::format("{}: %{} = {}: {}", place(op.loc), p_.name(op.result), op_info(op.kind).name, e.what()));
      }
      if (op.kind == OpKind::all_reduce || op.kind == OpKind::all_gather) check_groups(op);
      define(op.result, op.loc);
    }
    check_memory(live_peak(), fmt::format("{}: the program's values", source_));
    std::set<std::string> output_names;
    for (const OutputDecl& o : p_.outputs) {
      if (!is_valid_output_name(o.name)) fail(o.loc, fmt::format("output '{}': not a valid name", o.name));
      if (!output_names.insert(o.name).second) fail(o.loc, fmt::format("output '{}' is named twice", o.name));
      if (o.value < 0 || size_t(o.value) >= p_.values.size() || !defined_[size_t(o.value)])
        fail(o.loc, fmt::format("output '{}' names a value that is not defined", o.name));
      if (is_quantized(p_.type(o.value).dtype))
        fail(o.loc, fmt::format("output '{}': {} is quantized; outputs are f32, i32, i1, bf16 or f16", o.name,
                                p_.type(o.value).str()));
    }
    if (p_.outputs.empty()) fail({}, "the program has no outputs");
  }

 private:
  std::string result_name(const Operation& op) const {
    return op.result >= 0 && size_t(op.result) < p_.values.size() ? p_.name(op.result) : "?";
  }

  void check_result(const Operation& op) {
    if (op.result < 0 || size_t(op.result) >= p_.values.size())
      fail(op.loc, fmt::format("{} has no result value", op_info(op.kind).name));
  }

  void define(ValueId v, Location loc) {
    if (v < 0 || size_t(v) >= p_.values.size()) fail(loc, "a declaration names no value");
    const std::string& name = p_.name(v);
    if (!is_valid_value_name(name)) fail(loc, fmt::format("'%{}' is not a valid value name", name));
    if (defined_[size_t(v)]) fail(loc, fmt::format("%{} is defined twice", name));
    if (!names_.insert(name).second) fail(loc, fmt::format("two values are named %{}", name));
    if (p_.type(v).rank() > max_tensor_rank)
      fail(loc, fmt::format("%{} has rank {}, above the limit of {}", name, p_.type(v).rank(), max_tensor_rank));
    try {
      p_.type(v).elements();
    } catch (const LimitError& e) {  // a shape too large to count
      throw LimitError(fmt::format("{}: %{}: {}", place(loc), name, e.what()));
    }
    defined_[size_t(v)] = true;
  }

  // Replica groups must split the chips 0..count-1 into groups, each chip in one.
  void check_groups(const Operation& op) {
    const std::string where = fmt::format("%{} = {}", p_.name(op.result), op_info(op.kind).name);
    if (!p_.replica) fail(op.loc, fmt::format("{}: a collective needs the program's 'chip i of n' line", where));
    std::vector<bool> seen(size_t(p_.replica->count), false);
    size_t count = 0;
    for (const auto& group : op.int_lists("replica_groups")) {
      for (int64_t chip : group) {
        if (chip < 0 || chip >= p_.replica->count || seen[size_t(chip)])
          fail(op.loc, fmt::format("{}: replica_groups must name each chip 0..{} once", where, p_.replica->count - 1));
        seen[size_t(chip)] = true;
        ++count;
      }
    }
    if (count != size_t(p_.replica->count))
      fail(op.loc, fmt::format("{}: replica_groups must name each chip 0..{} once", where, p_.replica->count - 1));
  }

  // "p.txt:3:1", or "p.txt" for a statement of no known place.
  std::string place(Location loc) const {
    return loc.line > 0 ? fmt::format("{}:{}:{}", source_, loc.line, loc.column) : source_;
  }

  [[noreturn]] void fail(Location loc, const std::string& what) const {
    throw VerifyError(fmt::format("{}: {}", place(loc), what));
  }

  const Program& p_;
  const std::string& source_;
  std::vector<bool> defined_;
  // Views of the program's own names, which outlive the verifier: a hashed set of views
  // copies no name and keeps no tree (it is asked once per value of every program run).
  std::unordered_set<std::string_view> names_;
};

}  // namespace

bool is_valid_value_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return true;
}

bool is_valid_output_name(std::string_view name) {
  return is_valid_value_name(name) && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
}

void verify(const Program& program, const std::string& source) { Verifier(program, source).run(); }

}  // namespace cutcheck
