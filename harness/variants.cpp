#include "harness/variants.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/named.h"
#include "reference/kernels.h"
#include "reference/terms.h"

namespace cutcheck {
namespace {

// How a variant adds up the terms of one sum (a reduce(add) element, or a dot_general
// element's products x[k] * w[k]; a reduction's terms come with w[k] = 1).
enum class Order {
  sequential,   // acc = fl(acc + fl(x w)), k ascending: a plain C loop
  reversed,     // the same, k descending
  pairwise,     // halves summed recursively, then added
  blocked_fma,  // eight lanes acc[k % 8] = fma(x, w, acc[k % 8]), then the lanes pairwise: SIMD code
};

float sum_range(Order order, const float* x, const float* w, int64_t begin, int64_t end) {
  switch (order) {
    case Order::sequential: {
      float acc = 0;
      for (int64_t k = begin; k < end; ++k) acc += x[k] * w[k];
      return acc;
    }
    case Order::reversed: {
      float acc = 0;
      for (int64_t k = end - 1; k >= begin; --k) acc += x[k] * w[k];
      return acc;
    }
    case Order::pairwise: {
      if (end - begin <= 2) return sum_range(Order::sequential, x, w, begin, end);
      const int64_t mid = begin + (end - begin) / 2;
      return sum_range(order, x, w, begin, mid) + sum_range(order, x, w, mid, end);
    }
    case Order::blocked_fma: {
      float lane[8] = {};
      for (int64_t k = begin; k < end; ++k) lane[(k - begin) % 8] = std::fma(x[k], w[k], lane[(k - begin) % 8]);
      return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
    }
  }
  return 0;
}

Kernel summing(Order order) {
  return [order](const Operation& op, Operands in, Tensor& out) {
    const bool dot = op.kind == OpKind::dot_general;
    const Terms t = dot ? dot_terms(op, in[0]->shape(), in[1]->shape()) : reduce_terms(op, in[0]->shape());
    const Tensor* rhs = dot ? in[1] : nullptr;
    const float* x = in[0]->as<float>().data();
    const float* w = rhs ? rhs->as<float>().data() : nullptr;
    auto y = out.as_mut<float>();
    const int64_t n = int64_t(t.step_l.size());
    std::vector<float> xs(static_cast<size_t>(n)), ws(static_cast<size_t>(n), 1.0f);
    for (size_t i = 0; i < y.size(); ++i) {
      for (int64_t k = 0; k < n; ++k) {
        xs[size_t(k)] = x[t.base_l[i] + t.step_l[size_t(k)]];
        if (w) ws[size_t(k)] = w[t.base_r[i] + t.step_r[size_t(k)]];
      }
      y[i] = sum_range(order, xs.data(), ws.data(), 0, n);
    }
  };
}

// Element-wise ops in f32 arithmetic: the float functions of the C library, rsqrt as
// 1 / sqrtf and the logistic as 1 / (1 + expf(-x)), as a plain C backend writes them
// (OpInfo::scalar.f32).
Kernel in_f32(float (*f)(float, float), Kernel reference) {
  return [f, reference](const Operation& op, Operands in, Tensor& out) {
    if (in[0]->dtype() != DType::f32) return reference(op, in, out);
    auto x = in[0]->as<float>();
    auto e = in.size() > 1 ? in[1]->as<float>() : std::span<const float>();
    auto y = out.as_mut<float>();
    for (size_t i = 0; i < y.size(); ++i) y[i] = f(x[i], e.empty() ? 0.0f : e[i]);
  };
}

bool f32_sum(const Operation& op, Operands in) {
  return in[0]->dtype() == DType::f32 && (op.kind == OpKind::dot_general || op.word("kind") == "add");
}

// The reference's kernels with f32 sums in `order`, and optionally f32 element-wise math.
KernelTable kernels(Order order, bool f32_functions) {
  return [order, f32_functions](OpKind kind) -> Kernel {
    Kernel reference = kernel_for(kind);
    if (kind == OpKind::dot_general || kind == OpKind::reduce)
      return [reference, sum = summing(order)](const Operation& op, Operands in, Tensor& out) {
        f32_sum(op, in) ? sum(op, in, out) : reference(op, in, out);
      };
    const auto f32 = op_info(kind).scalar.f32;
    return f32_functions && f32 ? in_f32(f32, reference) : reference;
  };
}

// Every f32 value rounded to the precision's format as it is stored.
std::function<void(Tensor&)> storage(Precision p) {
  return [&info = precision_info(p)](Tensor& t) {
    for (float& v : t.as_mut<float>()) v = float(round_to(info, v));
  };
}

// Tables in double: every f32 value computed from constants and iota alone (the rotary
// frequencies, under any rope scaling) evaluated in double from the program's constants
// and rounded to f32 once, as a backend that computes its tables ahead in double does,
// rather than rounded op by op. Each table an op reads that is not itself a table becomes
// a weight holding those values. A value in double is carried as two f32 tensors, hi + lo
// (48 bits), so that data movement is the reference's kernels on each.
void exact_tables(Program& p, TensorMap& weights) {
  std::vector<bool> table(p.values.size(), false);
  for (const Operation& op : p.ops)
    table[size_t(op.result)] = std::all_of(op.operands.begin(), op.operands.end(), [&](ValueId v) { return table[size_t(v)]; });
  struct Wide {
    Tensor hi, lo;
  };
  std::vector<Wide> wide(p.values.size());
  auto split = [](const TensorType& t, auto value) {  // hi + lo from per-element doubles
    Wide w{Tensor(t), Tensor(t)};
    auto h = w.hi.as_mut<float>(), l = w.lo.as_mut<float>();
    for (size_t i = 0; i < h.size(); ++i) {
      const double v = value(i);
      h[i] = float(v);
      l[i] = std::isfinite(v) ? float(v - double(h[i])) : 0.0f;
    }
    return w;
  };
  auto at = [&](ValueId v, size_t i) { return double(wide[size_t(v)].hi.as<float>()[i]) + wide[size_t(v)].lo.as<float>()[i]; };
  for (const Operation& op : p.ops) {
    if (!table[size_t(op.result)]) continue;
    const TensorType& t = p.type(op.result);
    auto kernel = [&](std::vector<const Tensor*> in) {
      Tensor out(t);
      kernel_for(op.kind)(op, in, out);
      return out;
    };
    const bool floats = t.dtype == DType::f32;
    const bool float_operands = !op.operands.empty() && p.type(op.operands[0]).dtype == DType::f32;
    Wide& w = wide[size_t(op.result)];
    const OpInfo& info = op_info(op.kind);
    switch (info.op_class) {
      case OpClass::unary:
      case OpClass::binary:  // the op's scalar semantics in double
        if (!floats) break;
        w = split(t, [&](size_t i) {
          const bool binary = info.op_class == OpClass::binary;
          return info.scalar.f64(at(op.operands[0], i), binary ? at(op.operands[1], i) : 0.0);
        });
        continue;
      case OpClass::compare:
        if (!float_operands) break;
        w.hi = Tensor(t);
        for (size_t i = 0; i < size_t(t.elements()); ++i) {
          const double x = at(op.operands[0], i), y = at(op.operands[1], i);
          const std::string& d = op.word("comparison_direction");
          w.hi.as_mut<uint8_t>()[i] = d == "LT" ? x < y : d == "LE" ? x <= y : d == "GT" ? x > y : d == "GE" ? x >= y
                                                              : d == "EQ" ? x == y : x != y;
        }
        continue;
      case OpClass::select:
        if (!floats) break;
        w = split(t, [&](size_t i) {
          return at(wide[size_t(op.operands[0])].hi.as<uint8_t>()[i] ? op.operands[1] : op.operands[2], i);
        });
        continue;
      case OpClass::movement:  // of one operand (broadcast_in_dim, reshape, transpose, slice): on hi and lo each
        if (!floats || info.max_operands != 1) break;
        w.hi = kernel({&wide[size_t(op.operands[0])].hi});
        w.lo = kernel({&wide[size_t(op.operands[0])].lo});
        continue;
      case OpClass::value:
      case OpClass::convert:
      case OpClass::reduce_precision:
      case OpClass::reduction:
      case OpClass::contraction:
      case OpClass::collective: break;
    }
    // Integers, predicates and conversions from them: exact; anything else as the reference.
    std::vector<const Tensor*> in;
    for (ValueId v : op.operands) in.push_back(&wide[size_t(v)].hi);
    w.hi = kernel(in);
    if (floats) w.lo = Tensor(t);
  }
  // Each f32 table read by an op that is not a table: a weight of its values, rounded once.
  for (Operation& op : p.ops) {
    if (table[size_t(op.result)]) continue;
    for (ValueId& v : op.operands) {
      if (!table[size_t(v)] || p.type(v).dtype != DType::f32) continue;
      const std::string name = "exact_table." + p.name(v);
      std::optional<ValueId> held = p.find(name);
      if (!held) {
        held = ValueId(p.values.size());
        p.values.push_back({name, p.type(v)});
        p.weights.push_back({*held, {}});
        weights.insert_or_assign(name, split(p.type(v), [&](size_t i) { return double(float(at(v, i))); }).hi);
      }
      v = *held;
    }
  }
}

RunOptions options(KernelTable k, std::function<void(Tensor&)> store = {}) {
  RunOptions o;
  o.kernels = std::move(k);
  o.store = std::move(store);
  return o;
}

}  // namespace

const std::vector<Variant>& variants() {
  static const std::vector<Variant> list = {
      {"f32-sequential", "f32 sums, terms in ascending order, each product rounded (a plain C loop)", Precision::f32,
       options(kernels(Order::sequential, false))},
      {"f32-reversed", "f32 sums, terms in descending order", Precision::f32, options(kernels(Order::reversed, false))},
      {"f32-pairwise", "f32 sums, halves summed recursively", Precision::f32, options(kernels(Order::pairwise, false))},
      {"f32-blocked-fma", "f32 sums in eight lanes of fused multiply-adds, lanes added pairwise (SIMD code)",
       Precision::f32, options(kernels(Order::blocked_fma, false))},
      {"f32-functions", "f32 sums in order and exp, log, rsqrt, sine, ... from the C library's float functions",
       Precision::f32, options(kernels(Order::sequential, true))},
      {"bf16", "every value stored in bf16 (inputs, weights, each op's result); sums in double within an op",
       Precision::bf16, options({}, storage(Precision::bf16))},
      {"bf16-f32-sums", "every value stored in bf16; f32 sums in order and f32 functions", Precision::bf16,
       options(kernels(Order::sequential, true), storage(Precision::bf16))},
      {"f16", "every value stored in f16; sums in double within an op", Precision::f16,
       options({}, storage(Precision::f16))},
      {"f16-f32-sums", "every value stored in f16; f32 sums in order and f32 functions", Precision::f16,
       options(kernels(Order::sequential, true), storage(Precision::f16))},
      {"f32-exact-tables", "tables from constants alone (rotary frequencies, any rope scaling) in double, rounded once",
       Precision::f32, {}, exact_tables},
  };
  return list;
}

const Variant& find_variant(const std::string& name) { return find_named(variants(), name, "variant"); }

Executable Variant::executable(Program program, TensorMap weights) const {
  if (prepare) prepare(program, weights);
  return Executable(std::move(program), std::move(weights), run);
}

}  // namespace cutcheck
