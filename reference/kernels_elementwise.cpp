// Values from nothing, and element-wise ops. A unary or binary op's semantics is its
// scalar in the op table (program/ops.h); f32 math happens in double and is rounded to
// f32 when stored.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/half.h"
#include "core/ieee.h"
#include "quant/block_fields.h"
#include "quant/dequantize.h"
#include "reference/exp_f32.h"
#include "reference/kernels.h"
#include "reference/vector_clones.h"

namespace cutcheck {
namespace {

// Inlined into the clones of the ops that run them (vector_clones.h).
template <class T, class F>
[[gnu::always_inline]] inline void map1(const Tensor& a, Tensor& out, F f) {
  auto x = a.as<T>();
  auto y = out.as_mut<T>();
  for (size_t i = 0; i < y.size(); ++i) y[i] = T(f(x[i]));
}

template <class T, class R, class F>
[[gnu::always_inline]] inline void map2(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  auto x = a.as<T>();
  auto y = b.as<T>();
  auto z = out.as_mut<R>();
  for (size_t i = 0; i < z.size(); ++i) z[i] = R(f(x[i], y[i]));
}

// i32 arithmetic wraps around, as two's complement does.
int32_t wrap(int64_t v) { return int32_t(uint32_t(uint64_t(v))); }

// f32 -> i32 truncates toward zero, saturates, and maps NaN to 0.
int32_t to_i32(float v) {
  if (std::isnan(v)) return 0;
  if (v >= 2147483648.0f) return std::numeric_limits<int32_t>::max();
  if (v < -2147483648.0f) return std::numeric_limits<int32_t>::min();
  return int32_t(v);
}


}  // namespace

void eval_constant(const Operation& op, Operands, Tensor& out) {
  double v = op.number("value");
  if (out.dtype() == DType::f32)
    for (float& y : out.as_mut<float>()) y = float(v);
  else
    for (int32_t& y : out.as_mut<int32_t>()) y = int32_t(v);
}

void eval_iota(const Operation& op, Operands, Tensor& out) {
  const Shape& shape = out.shape();
  const int64_t d = op.integer("iota_dimension");
  int64_t inner = 1;
  for (size_t i = size_t(d) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t n = shape[size_t(d)];
  // Element i holds its own index along the iota dimension.
  if (out.dtype() == DType::f32) {
    auto y = out.as_mut<float>();
    for (size_t i = 0; i < y.size(); ++i) y[i] = float((int64_t(i) / inner) % n);
  } else {
    auto y = out.as_mut<int32_t>();
    for (size_t i = 0; i < y.size(); ++i) y[i] = int32_t((int64_t(i) / inner) % n);
  }
}

void eval_convert(const Operation&, Operands in, Tensor& out) {
  const Tensor& a = *in[0];
  const DType from = a.dtype(), to = out.dtype();
  if (from == to) {
    if (out.raw().data() != a.raw().data()) std::copy(a.raw().begin(), a.raw().end(), out.raw_mut().begin());
  } else if (from == DType::f32 && to == DType::i32) {
    auto x = a.as<float>();
    auto y = out.as_mut<int32_t>();
    for (size_t i = 0; i < y.size(); ++i) y[i] = to_i32(x[i]);
  } else if (from == DType::i32 && to == DType::f32) {
    auto x = a.as<int32_t>();
    auto y = out.as_mut<float>();
    for (size_t i = 0; i < y.size(); ++i) y[i] = float(x[i]);  // round to nearest
  } else if (is_quantized(from)) {  // exact: quant/dequantize.h, row by row
    dequantize_tensor(a, out.as_mut<float>().data());
  } else if (is_half(from)) {  // exact: every bf16 and f16 value is an f32
    auto y = out.as_mut<float>();
    const auto* x = reinterpret_cast<const uint16_t*>(a.raw().data());
    for (size_t i = 0; i < y.size(); ++i) y[i] = half_to_f32(from, x[i]);
  } else if (is_half(to)) {  // rounds to nearest, ties to even
    auto x = a.as<float>();
    auto* y = reinterpret_cast<uint16_t*>(out.raw_mut().data());
    for (size_t i = 0; i < x.size(); ++i) y[i] = f32_to_half(to, x[i]);
  } else if (from == DType::i1) {
    auto x = a.as<uint8_t>();
    if (to == DType::f32)
      for (size_t i = 0; i < x.size(); ++i) out.as_mut<float>()[i] = x[i] ? 1.0f : 0.0f;
    else
      for (size_t i = 0; i < x.size(); ++i) out.as_mut<int32_t>()[i] = x[i] ? 1 : 0;
  } else {
    throw Error("convert: unsupported dtypes");
  }
}

// Row by row: quant/block_fields.h takes each row apart.
void eval_block_field(const Operation& op, Operands in, Tensor& out) {
  const Tensor& a = *in[0];
  const QuantFormat format = *quant_format(a.dtype());
  const std::string& field = op.word("field");
  void (*part)(QuantFormat, const std::byte*, int64_t, float*) =
      field == "codes" ? row_codes : field == "scales" ? row_scales : row_mins;
  const int64_t cols = a.shape().back(), rows = cols == 0 ? 0 : a.elements() / cols;
  const int64_t per_row = field == "codes" ? cols : cols / values_per_scale(format, cols);
  const size_t stride = rows == 0 ? 0 : size_t(a.bytes() / uint64_t(rows));
  float* y = out.as_mut<float>().data();
  for (int64_t r = 0; r < rows; ++r) part(format, a.raw().data() + size_t(r) * stride, cols, y + r * per_row);
}

// The op's scalar semantics from its row of the op table (program/ops.h).
CUTCHECK_CLONES void eval_binary(const Operation& op, Operands in, Tensor& out) {
  const Tensor &a = *in[0], &b = *in[1];
  const Scalar& s = op_info(op.kind).scalar;
  if (!s.f64) throw Error("not a binary op");
  if (a.dtype() == DType::i32) {
    using I = int32_t;
    if (!s.i32) throw Error("binary op not defined on i32");
    return map2<I, I>(a, b, out, [f = s.i32](int64_t x, int64_t y) { return wrap(f(x, y)); });
  }
  using F = float;
  return map2<F, F>(a, b, out, [f = s.f64](double x, double y) { return f(x, y); });
}

void eval_unary(const Operation& op, Operands in, Tensor& out) {
  const Tensor& a = *in[0];
  const Scalar& s = op_info(op.kind).scalar;
  if (!s.f64) throw Error("not a unary op");
  if (a.dtype() == DType::i32) {
    if (!s.i32) throw Error("unary op not defined on i32");
    return map1<int32_t>(a, out, [f = s.i32](int64_t x) { return wrap(f(x, 0)); });
  }
  using F = float;
  return map1<F>(a, out, [f = s.f64](double x) { return f(x, 0); });
}

// exp and logistic run as their definitions, with the same bits, but most elements by a
// polynomial (exp_f32.h).
void eval_exponential(const Operation& op, Operands in, Tensor& out) {
  if (in[0]->dtype() != DType::f32) return eval_unary(op, in, out);
  exp_elements(in[0]->as<float>(), out.as_mut<float>(), [](double x) { return op_info(OpKind::exponential).scalar.f64(x, 0); });
}

void eval_logistic(const Operation& op, Operands in, Tensor& out) {
  if (in[0]->dtype() != DType::f32) return eval_unary(op, in, out);
  logistic_elements(in[0]->as<float>(), out.as_mut<float>(), [](double x) { return op_info(OpKind::logistic).scalar.f64(x, 0); });
}

// The f32 nearest to x in a format with `exponent_bits` and `mantissa_bits`, on x's bits:
// the mantissa rounded to nearest, ties to even (a carry may raise the exponent, up to
// infinity); then magnitudes above the format's largest exponent become infinity and
// those below its smallest normal exponent zero, keeping the sign. NaN stays as it is.
// Widths at or above f32's (8, 23) leave that part unchanged.
float reduce_precision(float x, int64_t exponent_bits, int64_t mantissa_bits) {
  if (std::isnan(x)) return x;
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (mantissa_bits < 23) {
    const int drop = int(23 - mantissa_bits);               // low mantissa bits to remove
    const uint32_t kept_lsb = (bits >> drop) & 1u;          // ties go to an even kept mantissa
    const uint32_t half_minus_one = (1u << (drop - 1)) - 1u;
    bits = (bits + half_minus_one + kept_lsb) & ~((1u << drop) - 1u);
  }
  if (exponent_bits < 8) {
    const uint32_t sign = bits & 0x80000000u, exponent = (bits >> 23) & 0xffu;
    const uint32_t reach = (1u << (exponent_bits - 1)) - 1u;  // the narrow format's exponent bias
    if (exponent > 127u + reach) bits = sign | 0x7f800000u;     // beyond its largest exponent
    else if (exponent <= 127u - reach) bits = sign;             // below its smallest normal one
  }
  std::memcpy(&x, &bits, 4);
  return x;
}


void eval_reduce_precision(const Operation& op, Operands in, Tensor& out) {
  const int64_t e = op.integer("exponent_bits"), m = op.integer("mantissa_bits");
  map1<float>(*in[0], out, [&](float x) { return reduce_precision(x, e, m); });
}

void eval_compare(const Operation& op, Operands in, Tensor& out) {
  const std::string& dir = op.word("comparison_direction");
  // IEEE comparisons: anything compared with NaN is false, except NE.
  auto run = [&](auto tag) {
    using T = decltype(tag);
    if (dir == "EQ") return map2<T, uint8_t>(*in[0], *in[1], out, [](T x, T y) { return x == y; });
    if (dir == "NE") return map2<T, uint8_t>(*in[0], *in[1], out, [](T x, T y) { return x != y; });
    if (dir == "LT") return map2<T, uint8_t>(*in[0], *in[1], out, [](T x, T y) { return x < y; });
    if (dir == "LE") return map2<T, uint8_t>(*in[0], *in[1], out, [](T x, T y) { return x <= y; });
    if (dir == "GT") return map2<T, uint8_t>(*in[0], *in[1], out, [](T x, T y) { return x > y; });
    return map2<T, uint8_t>(*in[0], *in[1], out, [](T x, T y) { return x >= y; });
  };
  if (in[0]->dtype() == DType::f32) run(float{});
  else run(int32_t{});
}

namespace {

// Elements are moved as unsigned integers of their width: select never looks at values.
template <class Bits>
[[gnu::always_inline]] inline void select_bits(std::span<const uint8_t> pred, const Tensor& on_true, const Tensor& on_false, Tensor& out) {
  const Bits* t = reinterpret_cast<const Bits*>(on_true.raw().data());
  const Bits* f = reinterpret_cast<const Bits*>(on_false.raw().data());
  Bits* y = reinterpret_cast<Bits*>(out.raw_mut().data());
  for (size_t i = 0; i < pred.size(); ++i) {
    const Bits a = t[i], b = f[i];  // both read, so the loop needs no branch
    y[i] = pred[i] ? a : b;
  }
}

}  // namespace

CUTCHECK_CLONES void eval_select(const Operation&, Operands in, Tensor& out) {
  // result[i] = pred[i] ? on_true[i] : on_false[i]
  if (dtype_size(out.dtype()) == 4) select_bits<uint32_t>(in[0]->as<uint8_t>(), *in[1], *in[2], out);
  else if (dtype_size(out.dtype()) == 2) select_bits<uint16_t>(in[0]->as<uint8_t>(), *in[1], *in[2], out);
  else select_bits<uint8_t>(in[0]->as<uint8_t>(), *in[1], *in[2], out);
}

}  // namespace cutcheck
