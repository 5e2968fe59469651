#include "mutate/mutants.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "author/author.h"
#include "core/random.h"
#include "model/sharding.h"

namespace cutcheck {
namespace {

using K = OpKind;
using Edit = std::function<void(Rewriter&, ValueId)>;

struct Mutation {
  std::string what;
  Edit edit;
};

// "l3.probs" -> "l*.probs": the same op in every layer.
std::string anchor_of(const std::string& name) {
  size_t i = 1;
  if (name.size() < 3 || name[0] != 'l' || !std::isdigit(static_cast<unsigned char>(name[1]))) return name;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  return i < name.size() && name[i] == '.' ? "l*" + name.substr(i) : name;
}

bool commutes(const Operation& op) {
  if (op_info(op.kind).commutes) return true;
  return op.kind == K::compare && (op.word("comparison_direction") == "EQ" || op.word("comparison_direction") == "NE");
}

// The binary op a slip of the pen writes instead, if any.
std::optional<K> slip(K kind) {
  static const std::vector<std::pair<K, K>> slips = {{K::add, K::subtract}, {K::subtract, K::add},
                                                     {K::multiply, K::divide}, {K::divide, K::multiply},
                                                     {K::maximum, K::minimum}, {K::minimum, K::maximum},
                                                     {K::power, K::multiply}};
  for (auto [from, to] : slips)
    if (from == kind) return to;
  return std::nullopt;
}

// x + 1 (in x's type), computed just before `at`, standing for x there.
ValueId plus_one(Rewriter& r, ValueId at, ValueId x) {
  ValueId one = r.constant_before(at, 1, r.type(x), r.name(at) + ".mut_one");
  return r.insert_before(at, K::add, {x, one}, {}, r.name(at) + ".mut_plus");
}

std::vector<Mutation> mutations_of(const Program& p, const Operation& op) {
  std::vector<Mutation> out;
  const TensorType& t = p.type(op.result);
  const bool f32 = t.dtype == DType::f32;
  auto kind_to = [&](K to) {
    out.push_back({fmt::format("{} -> {}", op_info(op.kind).name, op_info(to).name), [to](Rewriter& r, ValueId v) { r.set_kind(v, to); }});
  };
  auto attr_to = [&](const std::string& attr, Attr value, const std::string& what) {
    out.push_back({what, [attr, value](Rewriter& r, ValueId v) { r.set_attr(v, attr, value); }});
  };
  switch (op_info(op.kind).op_class) {
    case OpClass::binary:  // to an op defined on the result's type
      if (std::optional<K> to = slip(op.kind); to && (f32 || op_info(*to).i32)) kind_to(*to);
      break;
    case OpClass::compare:
      for (const char* d : {"EQ", "NE", "LT", "LE", "GT", "GE"})
        if (op.word("comparison_direction") != d)
          attr_to("comparison_direction", word(d), fmt::format("{} -> {}", op.word("comparison_direction"), d));
      break;
    case OpClass::reduction:
      for (const char* k : {"add", "max", "min"})
        if (op.word("kind") != k) attr_to("kind", word(k), fmt::format("reduce {} -> {}", op.word("kind"), k));
      break;
    case OpClass::value:
      if (op.kind == K::iota)
        for (int64_t d = 0; d < t.rank(); ++d)
          if (d != op.integer("iota_dimension")) attr_to("iota_dimension", integer(d), fmt::format("iota along dimension {}", d));
      if (op.kind == K::constant) {  // relative to the value in the program at hand (it follows the spec)
        const double v = op.number("value");
        const bool i32 = t.dtype == DType::i32;
        auto changed = [i32](const std::string& what) -> std::function<double(double)> {
          if (what == "one ulp up") return [](double x) { return double(std::nextafter(float(x), INFINITY)); };
          if (what == "+1") return [](double x) { return x + 1; };
          if (what == "x2") return [i32](double x) { return i32 ? x * 2 : double(float(x * 2)); };
          return [](double) { return 0.0; };
        };
        for (const char* what : {i32 ? "+1" : "one ulp up", "x2", "to 0"}) {
          std::function<double(double)> f = changed(what);
          const double to = f(v);
          if (to == v || !std::isfinite(to) || !std::isfinite(v) || std::abs(to) >= 2147483647.0) continue;
          out.push_back({fmt::format("constant {}", what), [f](Rewriter& r, ValueId x) {
                           r.set_attr(x, "value", number(f(r.op(x).number("value"))));
                         }});
        }
      }
      break;
    case OpClass::movement:
      if (op.kind == K::slice) {  // the window moved by one along one dimension, in the program at hand
        const auto &start = op.ints("start_indices"), &limit = op.ints("limit_indices");
        const Shape& in = p.type(op.operands[0]).shape;
        for (size_t d = 0; d < start.size(); ++d)
          for (int64_t step : {-1, 1})
            if (start[d] + step >= 0 && limit[d] + step <= in[d])
              out.push_back({fmt::format("slice window {:+} along dimension {}", step, d), [d, step](Rewriter& r, ValueId v) {
                             std::vector<int64_t> s = r.op(v).ints("start_indices"), l = r.op(v).ints("limit_indices");
                             s[d] += step, l[d] += step;
                             r.set_attrs(v, {{"start_indices", ints(s)}, {"limit_indices", ints(l)}});
                           }});
      }
      if (op.kind == K::dynamic_update_slice)
        for (size_t i = 2; i < op.operands.size(); ++i)
          out.push_back({fmt::format("start index {} + 1", i - 2),
                         [i](Rewriter& r, ValueId v) { r.set_operand(v, i, plus_one(r, v, r.operand(v, i))); }});
      if (op.kind == K::gather)
        out.push_back({"indices + 1", [](Rewriter& r, ValueId v) { r.set_operand(v, 1, plus_one(r, v, r.operand(v, 1))); }});
      break;
    case OpClass::convert:
    case OpClass::unary:
    case OpClass::reduce_precision:
    case OpClass::select:
    case OpClass::contraction:
    case OpClass::collective: break;
  }
  // Swapped operands, where the order matters and the types allow.
  if (!commutes(op) && op.operands.size() >= 2) {
    const size_t i = op.kind == K::select ? 1 : 0;
    if (i + 1 < op.operands.size() && p.type(op.operands[i]) == p.type(op.operands[i + 1]) &&
        op.operands[i] != op.operands[i + 1] && op.kind != K::dynamic_update_slice && op.kind != K::gather)
      out.push_back({fmt::format("operands {} and {} swapped", i, i + 1), [i](Rewriter& r, ValueId v) { r.swap_operands(v, i, i + 1); }});
  }
  // The op skipped: its first operand of the result's type stands for it.
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (p.type(op.operands[i]) == t) {
      const std::string what = op_info(op.kind).op_class == OpClass::collective ? "collective dropped" : "op bypassed";
      out.push_back({fmt::format("{} (operand {})", what, i), [i](Rewriter& r, ValueId v) { r.bypass(v, i); }});
      break;
    }
  return out;
}

}  // namespace

std::string Mutant::str() const {
  return fmt::format("{} %{} ({}): {}", cut_kind_name(kind), anchor, op_info(op).name, mutation);
}

Program Mutant::apply(const Program& program) const {
  Rewriter r(program);
  for (ValueId v : r.find(anchor, op)) {
    Rewriter attempt = r;
    try {
      edit(attempt, v);
      r = std::move(attempt);
    } catch (const VerifyError&) {  // ill-typed in this program: this match stays as it is
    } catch (const Error&) {
    }
  }
  return r.finish();
}

std::vector<Mutant> all_mutants(const ModelSpec& spec, const std::vector<CutKind>& kinds) {
  std::vector<Mutant> out;
  for (CutKind kind : kinds) {
    const Cut cut{kind, 0, 3, 20};
    std::vector<Program> programs{author_program(cut, spec)};
    if (!split_unsupported(cut, spec, 2)) programs.push_back(author_chip_program(cut, spec, 2, 0));
    std::set<std::string> seen;
    for (const Program& p : programs)
      for (const Operation& op : p.ops) {
        const std::string anchor = anchor_of(p.name(op.result));
        for (Mutation& m : mutations_of(p, op)) {
          Mutant mutant{kind, anchor, op.kind, m.what, std::move(m.edit)};
          if (seen.insert(mutant.str()).second) out.push_back(std::move(mutant));
        }
      }
  }
  return out;
}

std::vector<Mutant> sample_mutants(const std::vector<Mutant>& mutants, size_t per_kind, uint64_t seed) {
  std::map<CutKind, std::vector<std::pair<uint64_t, size_t>>> by_kind;
  for (size_t i = 0; i < mutants.size(); ++i)
    by_kind[mutants[i].kind].push_back({mix64(seed, fnv1a(mutants[i].str())), i});
  std::vector<size_t> chosen;
  for (auto& [kind, list] : by_kind) {
    std::sort(list.begin(), list.end());
    for (size_t j = 0; j < list.size() && j < per_kind; ++j) chosen.push_back(list[j].second);
  }
  std::sort(chosen.begin(), chosen.end());
  std::vector<Mutant> out;
  for (size_t i : chosen) out.push_back(mutants[i]);
  return out;
}

}  // namespace cutcheck
