#include "harness/variants.h"

#include <algorithm>
#include <cmath>

#include "core/named.h"
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
// 1 / sqrtf and the logistic as 1 / (1 + expf(-x)), as a plain C backend writes them.
void eval_unary_f32(const Operation& op, Operands in, Tensor& out) {
  auto x = in[0]->as<float>();
  auto y = out.as_mut<float>();
  for (size_t i = 0; i < y.size(); ++i) {
    const float v = x[i];
    switch (op.kind) {
      case OpKind::exponential: y[i] = std::exp(v); break;
      case OpKind::log: y[i] = std::log(v); break;
      case OpKind::rsqrt: y[i] = 1.0f / std::sqrt(v); break;
      case OpKind::logistic: y[i] = 1.0f / (1.0f + std::exp(-v)); break;
      case OpKind::sine: y[i] = std::sin(v); break;
      case OpKind::cosine: y[i] = std::cos(v); break;
      default: y[i] = std::sqrt(v);  // sqrt; negate never reaches here
    }
  }
}

void eval_power_f32(const Operation&, Operands in, Tensor& out) {
  auto x = in[0]->as<float>(), e = in[1]->as<float>();
  auto y = out.as_mut<float>();
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::pow(x[i], e[i]);
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
    if (!f32_functions) return reference;
    switch (kind) {
      case OpKind::exponential:
      case OpKind::log:
      case OpKind::sqrt:
      case OpKind::rsqrt:
      case OpKind::logistic:
      case OpKind::sine:
      case OpKind::cosine:
        return [reference](const Operation& op, Operands in, Tensor& out) {
          in[0]->dtype() == DType::f32 ? eval_unary_f32(op, in, out) : reference(op, in, out);
        };
      case OpKind::power: return eval_power_f32;
      default: return reference;
    }
  };
}

// Every f32 value rounded to the precision's format as it is stored.
std::function<void(Tensor&)> storage(Precision p) {
  return [&info = precision_info(p)](Tensor& t) {
    for (float& v : t.as_mut<float>()) v = float(round_to(info, v));
  };
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
  };
  return list;
}

const Variant& find_variant(const std::string& name) { return find_named(variants(), name, "variant"); }

}  // namespace cutcheck
