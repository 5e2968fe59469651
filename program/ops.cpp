#include "program/ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "core/error.h"
#include "core/ieee.h"

namespace cutcheck {
namespace {

const std::vector<std::string_view> directions = {"EQ", "NE", "LT", "LE", "GT", "GE"};
const std::vector<std::string_view> reductions = {"add", "max", "min"};
const std::vector<std::string_view> sum_only = {"add"};

using K = OpKind;
using A = AttrKind;

using C = OpClass;
using R = Rounding;
using W = InPlace;

// The element-wise ops' scalar semantics: f32 in double (rounded once by the kernel), i32
// exactly (wrapped by the kernel), the C library's float form, and the change of the
// result for changes of its operands, each term of which stays accurate where the change
// is small against the value.
double expm1_small(double d) { return std::abs(d) < 0x1p-12 ? d * (1 + d * (0.5 + d / 6)) : std::expm1(d); }
// exp(-inf) is +0 exactly (C Annex F): a masked attention score takes no library call.
double exp_f64(double x, double) { return x == -INFINITY ? 0.0 : std::exp(x); }
double logistic_f64(double x, double) { return 1.0 / (1.0 + std::exp(-x)); }

const Scalar add_scalar{
    [](double x, double y) { return x + y; }, [](int64_t x, int64_t y) { return x + y; }, nullptr,
    [](double, double dx, double, double dy, double) { return dx + dy; }};
const Scalar subtract_scalar{
    [](double x, double y) { return x - y; }, [](int64_t x, int64_t y) { return x - y; }, nullptr,
    [](double, double dx, double, double dy, double) { return dx - dy; }};
const Scalar multiply_scalar{
    [](double x, double y) { return x * y; }, [](int64_t x, int64_t y) { return x * y; }, nullptr,
    [](double x, double dx, double y, double dy, double) { return x * dy + dx * y + dx * dy; }};
const Scalar divide_scalar{
    [](double x, double y) { return x / y; }, nullptr, nullptr,
    [](double x, double dx, double y, double dy, double) { return (dx * y - x * dy) / (y * (y + dy)); }};
const Scalar maximum_scalar{ieee_maximum, [](int64_t x, int64_t y) { return x > y ? x : y; }, nullptr, nullptr};
const Scalar minimum_scalar{ieee_minimum, [](int64_t x, int64_t y) { return x < y ? x : y; }, nullptr, nullptr};
const Scalar power_scalar{[](double x, double y) { return std::pow(x, y); }, nullptr,
                          [](float x, float y) { return std::pow(x, y); }, nullptr};
const Scalar negate_scalar{[](double x, double) { return -x; }, [](int64_t x, int64_t) { return -x; }, nullptr,
                           [](double, double dx, double, double, double) { return -dx; }};
const Scalar exponential_scalar{
    exp_f64, nullptr, [](float x, float) { return std::exp(x); },
    [](double x, double d, double, double, double r) {
      return std::abs(d) < 1 && r != 0 ? r * expm1_small(d) : std::exp(x + d) - r;
    }};
const Scalar log_scalar{[](double x, double) { return std::log(x); }, nullptr,
                        [](float x, float) { return std::log(x); },
                        [](double x, double d, double, double, double) { return std::log1p(d / x); }};
const Scalar sqrt_scalar{[](double x, double) { return std::sqrt(x); }, nullptr,
                         [](float x, float) { return std::sqrt(x); },
                         [](double x, double d, double, double, double r) {
                           const double t = d / x;
                           return t > -1 ? r * t / (std::sqrt(1 + t) + 1) : NAN;
                         }};
const Scalar rsqrt_scalar{[](double x, double) { return 1.0 / std::sqrt(x); }, nullptr,
                          [](float x, float) { return 1.0f / std::sqrt(x); },
                          [](double x, double d, double, double, double r) {
                            const double t = d / x;
                            if (!(t > -1)) return double(NAN);
                            const double s = std::sqrt(1 + t);
                            return -r * t / ((1 + s) * s);
                          }};
const Scalar logistic_scalar{logistic_f64, nullptr, [](float x, float) { return 1.0f / (1.0f + std::exp(-x)); },
                             [](double x, double d, double, double, double) {
                               return logistic_f64(x + d, 0) - logistic_f64(x, 0);
                             }};
const Scalar sine_scalar{[](double x, double) { return std::sin(x); }, nullptr,
                         [](float x, float) { return std::sin(x); },
                         [](double x, double d, double, double, double) { return 2 * std::cos(x + d / 2) * std::sin(d / 2); }};
const Scalar cosine_scalar{
    [](double x, double) { return std::cos(x); }, nullptr, [](float x, float) { return std::cos(x); },
    [](double x, double d, double, double, double) { return -2 * std::sin(x + d / 2) * std::sin(d / 2); }};

// The parts of a quantized value block_field reads (quant/block_fields.h).
const std::vector<std::string_view> block_fields = {"codes", "scales", "mins"};

// Columns after the type rule's: class, takes i32, rounding, in place, commutes, scalar.
std::vector<OpInfo> rows() {
  return {
      {K::constant, "constant", 0, 0, {{"value", A::number, {}}}, true, C::value, true, R::exact, W::none, false, {}},
      {K::iota, "iota", 0, 0, {{"iota_dimension", A::integer, {}}}, true, C::value, true, R::exact, W::none, false, {}},
      {K::convert, "convert", 1, 1, {}, true, C::convert, true, R::correctly_rounded, W::any, false, {}},
      {K::add, "add", 2, 2, {}, false, C::binary, true, R::correctly_rounded, W::any, true, add_scalar},
      {K::subtract, "subtract", 2, 2, {}, false, C::binary, true, R::correctly_rounded, W::any, false, subtract_scalar},
      {K::multiply, "multiply", 2, 2, {}, false, C::binary, true, R::correctly_rounded, W::any, true, multiply_scalar},
      {K::divide, "divide", 2, 2, {}, false, C::binary, false, R::correctly_rounded, W::any, false, divide_scalar},
      {K::maximum, "maximum", 2, 2, {}, false, C::binary, true, R::exact, W::any, true, maximum_scalar},
      {K::minimum, "minimum", 2, 2, {}, false, C::binary, true, R::exact, W::any, true, minimum_scalar},
      {K::power, "power", 2, 2, {}, false, C::binary, false, R::function, W::any, false, power_scalar},
      {K::negate, "negate", 1, 1, {}, false, C::unary, true, R::exact, W::any, false, negate_scalar},
      {K::exponential, "exponential", 1, 1, {}, false, C::unary, false, R::function, W::any, false, exponential_scalar},
      {K::log, "log", 1, 1, {}, false, C::unary, false, R::function, W::any, false, log_scalar},
      {K::sqrt, "sqrt", 1, 1, {}, false, C::unary, false, R::correctly_rounded, W::any, false, sqrt_scalar},
      {K::rsqrt, "rsqrt", 1, 1, {}, false, C::unary, false, R::function, W::any, false, rsqrt_scalar},
      {K::logistic, "logistic", 1, 1, {}, false, C::unary, false, R::function, W::any, false, logistic_scalar},
      {K::sine, "sine", 1, 1, {}, false, C::unary, false, R::function, W::any, false, sine_scalar},
      {K::cosine, "cosine", 1, 1, {}, false, C::unary, false, R::function, W::any, false, cosine_scalar},
      {K::reduce_precision, "reduce_precision", 1, 1,
       {{"exponent_bits", A::integer, {}}, {"mantissa_bits", A::integer, {}}}, false, C::reduce_precision, false,
       R::exact, W::any, false, {}},
      {K::compare, "compare", 2, 2, {{"comparison_direction", A::word, directions}}, false, C::compare, true, R::exact,
       W::any, false, {}},
      {K::select, "select", 3, 3, {}, false, C::select, true, R::exact, W::any, false, {}},
      {K::broadcast_in_dim, "broadcast_in_dim", 1, 1, {{"broadcast_dimensions", A::ints, {}}}, true, C::movement, true,
       R::exact, W::none, false, {}},
      {K::reshape, "reshape", 1, 1, {}, true, C::movement, true, R::exact, W::any, false, {}},
      {K::transpose, "transpose", 1, 1, {{"permutation", A::ints, {}}}, false, C::movement, true, R::exact, W::none,
       false, {}},
      {K::slice, "slice", 1, 1,
       {{"start_indices", A::ints, {}}, {"limit_indices", A::ints, {}}, {"strides", A::ints, {}}}, false, C::movement,
       true, R::exact, W::none, false, {}},
      {K::concatenate, "concatenate", 1, -1, {{"dimension", A::integer, {}}}, false, C::movement, true, R::exact,
       W::none, false, {}},
      {K::dynamic_update_slice, "dynamic_update_slice", 2, -1, {}, false, C::movement, true, R::exact, W::first, false,
       {}},
      {K::gather, "gather", 2, 2, {}, false, C::movement, true, R::exact, W::none, false, {}},
      {K::block_field, "block_field", 1, 1, {{"field", A::word, block_fields}}, false, C::convert, false, R::exact,
       W::none, false, {}},
      {K::reduce, "reduce", 1, 1, {{"kind", A::word, reductions}, {"dimensions", A::ints, {}}}, false, C::reduction,
       true, R::sum, W::none, false, {}},
      {K::dot_general, "dot_general", 2, 2,
       {{"lhs_batching_dimensions", A::ints, {}},
        {"rhs_batching_dimensions", A::ints, {}},
        {"lhs_contracting_dimensions", A::ints, {}},
        {"rhs_contracting_dimensions", A::ints, {}}},
       false, C::contraction, false, R::sum, W::none, false, {}},
      {K::all_reduce, "all_reduce", 1, 1, {{"kind", A::word, sum_only}, {"replica_groups", A::int_lists, {}}}, false,
       C::collective, true, R::sum, W::none, false, {}},
      {K::all_gather, "all_gather", 1, 1,
       {{"all_gather_dim", A::integer, {}}, {"replica_groups", A::int_lists, {}}}, false, C::collective, true,
       R::exact, W::none, false, {}},
  };
}

// Each row at its kind's index, whatever the order rows() lists them in; a kind with no
// row, or with two, stops the program at its first op lookup (tests/test_ops.cpp reads
// every row).
const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> ops = [] {
    std::vector<OpInfo> listed = rows();
    std::vector<std::optional<OpInfo>> at(op_count);
    for (OpInfo& row : listed) {
      const size_t i = size_t(row.kind);
      if (i >= op_count || at[i]) throw std::logic_error(fmt::format("op table: a second row for {}, or op_count too small", row.name));
      at[i] = std::move(row);
    }
    std::vector<OpInfo> out;
    for (size_t i = 0; i < op_count; ++i) {
      if (!at[i]) throw std::logic_error(fmt::format("op table: no row for OpKind {}", i));
      const OpInfo& row = *at[i];
      const bool elementwise = row.op_class == C::unary || row.op_class == C::binary;
      if (elementwise != bool(row.scalar.f64) || (elementwise && row.i32) != bool(row.scalar.i32))
        throw std::logic_error(fmt::format("op table: {} has the scalar semantics of the wrong class", row.name));
      out.push_back(std::move(*at[i]));
    }
    return out;
  }();
  return ops;
}

[[noreturn]] void fail(std::string_view op, const std::string& what) {
  throw VerifyError(fmt::format("{}: {}", op, what));
}

// Reads attributes by position; the parser and builder have already checked their kinds.
struct Attrs {
  std::span<const Attr> attrs;
  int64_t integer(size_t i) const { return std::get<int64_t>(attrs[i]); }
  double number(size_t i) const { return std::get<double>(attrs[i]); }
  const std::vector<int64_t>& ints(size_t i) const { return std::get<std::vector<int64_t>>(attrs[i]); }
  const std::vector<std::vector<int64_t>>& int_lists(size_t i) const {
    return std::get<std::vector<std::vector<int64_t>>>(attrs[i]);
  }
};

bool is_numeric(DType d) { return d == DType::f32 || d == DType::i32; }

// Distinct dimensions of a rank-`rank` operand.
void check_dims(std::string_view op, const char* what, const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<bool> seen(size_t(std::max<int64_t>(rank, 0)), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) fail(op, fmt::format("{} {} is not a dimension of a rank-{} operand", what, d, rank));
    if (seen[size_t(d)]) fail(op, fmt::format("{} names dimension {} twice", what, d));
    seen[size_t(d)] = true;
  }
}

TensorType elementwise(const OpInfo& info, std::span<const TensorType* const> in) {
  const bool ints_allowed = info.i32;
  for (const TensorType* t : in) {
    if (t->dtype != DType::f32 && !(ints_allowed && t->dtype == DType::i32))
      fail(info.name, fmt::format("operands must be {}, got {}", ints_allowed ? "f32 or i32" : "f32", t->str()));
    if (*t != *in[0]) fail(info.name, fmt::format("operands differ in type: {} and {}", in[0]->str(), t->str()));
  }
  return *in[0];
}

TensorType infer(const OpInfo& info, std::span<const TensorType* const> in, Attrs a, const TensorType* stated) {
  const std::string_view op = info.name;
  switch (info.kind) {
    case K::constant: {
      if (!is_numeric(stated->dtype)) fail(op, fmt::format("result must be f32 or i32, got {}", stated->str()));
      double v = a.number(0);
      if (stated->dtype == DType::i32 && (v != std::floor(v) || v < INT32_MIN || v > INT32_MAX))
        fail(op, fmt::format("value {} is not an i32", v));
      if (stated->dtype == DType::f32 && std::isfinite(v) && double(float(v)) != v)
        fail(op, fmt::format("value {} is not exactly an f32", v));
      return *stated;
    }
    case K::iota: {
      if (!is_numeric(stated->dtype)) fail(op, fmt::format("result must be f32 or i32, got {}", stated->str()));
      int64_t d = a.integer(0);
      if (d < 0 || d >= stated->rank())
        fail(op, fmt::format("iota_dimension {} is not a dimension of {}", d, stated->str()));
      return *stated;
    }
    case K::convert:
      // bf16 and f16 convert to and from f32 only: f32 is where every computation happens.
      // A quantized weight converts to f32 only (quantizing is a checkpoint's business).
      if (is_quantized(in[0]->dtype) || is_quantized(stated->dtype)) {
        if (!is_quantized(in[0]->dtype) || stated->dtype != DType::f32)
          fail(op, fmt::format("a quantized value converts to f32 only, not {} to {}", in[0]->str(), stated->str()));
      } else if (is_half(in[0]->dtype) || is_half(stated->dtype)) {
        const DType other = is_half(in[0]->dtype) ? stated->dtype : in[0]->dtype;
        if (other != DType::f32 && other != in[0]->dtype)
          fail(op, fmt::format("bf16 and f16 convert to and from f32 only, not {} to {}", in[0]->str(), stated->str()));
      } else if (!is_numeric(stated->dtype)) {
        fail(op, fmt::format("result must be f32, i32, bf16 or f16, got {}", stated->str()));
      }
      if (in[0]->shape != stated->shape)
        fail(op, fmt::format("result {} must have the operand's shape {}", stated->str(), shape_str(in[0]->shape)));
      return *stated;
    case K::add:
    case K::subtract:
    case K::multiply:
    case K::divide:
    case K::maximum:
    case K::minimum:
    case K::power:
    case K::negate:
    case K::exponential:
    case K::log:
    case K::sqrt:
    case K::rsqrt:
    case K::logistic:
    case K::sine:
    case K::cosine:
      return elementwise(info, in);
    case K::reduce_precision:
      if (a.integer(0) < 1) fail(op, fmt::format("exponent_bits must be at least 1, got {}", a.integer(0)));
      if (a.integer(1) < 0) fail(op, fmt::format("mantissa_bits must be at least 0, got {}", a.integer(1)));
      return elementwise(info, in);
    case K::compare: {
      TensorType t = elementwise(info, in);
      return {DType::i1, t.shape};
    }
    case K::select:
      if (in[0]->dtype != DType::i1) fail(op, fmt::format("the predicate must be i1, got {}", in[0]->str()));
      if (*in[1] != *in[2]) fail(op, fmt::format("branches differ in type: {} and {}", in[1]->str(), in[2]->str()));
      if (in[0]->shape != in[1]->shape)
        fail(op, fmt::format("predicate {} and branches {} differ in shape", in[0]->str(), in[1]->str()));
      return *in[1];
    case K::broadcast_in_dim: {
      const auto& dims = a.ints(0);
      if (stated->dtype != in[0]->dtype)
        fail(op, fmt::format("result {} must keep the operand's dtype ({})", stated->str(), in[0]->str()));
      if (int64_t(dims.size()) != in[0]->rank())
        fail(op, fmt::format("broadcast_dimensions has {} entries for a rank-{} operand", dims.size(), in[0]->rank()));
      check_dims(op, "broadcast_dimensions", dims, stated->rank());
      for (size_t i = 0; i < dims.size(); ++i) {
        int64_t from = in[0]->shape[i], to = stated->shape[size_t(dims[i])];
        if (from != 1 && from != to)
          fail(op, fmt::format("operand dimension {} (size {}) cannot broadcast to result dimension {} (size {})", i,
                               from, dims[i], to));
      }
      return *stated;
    }
    case K::reshape:
      if (stated->dtype != in[0]->dtype || stated->elements() != in[0]->elements())
        fail(op, fmt::format("cannot reshape {} to {}", in[0]->str(), stated->str()));
      return *stated;
    case K::transpose: {
      const auto& perm = a.ints(0);
      if (int64_t(perm.size()) != in[0]->rank())
        fail(op, fmt::format("permutation has {} entries for a rank-{} operand", perm.size(), in[0]->rank()));
      check_dims(op, "permutation", perm, in[0]->rank());
      TensorType t{in[0]->dtype, {}};
      for (int64_t p : perm) t.shape.push_back(in[0]->shape[size_t(p)]);
      return t;
    }
    case K::slice: {
      const auto &start = a.ints(0), &limit = a.ints(1), &strides = a.ints(2);
      size_t rank = size_t(in[0]->rank());
      if (start.size() != rank || limit.size() != rank || strides.size() != rank)
        fail(op, fmt::format("start_indices, limit_indices and strides need {} entries each", rank));
      TensorType t{in[0]->dtype, {}};
      for (size_t i = 0; i < rank; ++i) {
        if (start[i] < 0 || start[i] > limit[i] || limit[i] > in[0]->shape[i] || strides[i] < 1)
          fail(op, fmt::format("dimension {}: need 0 <= start ({}) <= limit ({}) <= size ({}) and stride ({}) >= 1",
                               i, start[i], limit[i], in[0]->shape[i], strides[i]));
        // ceil(extent / stride) without forming extent + stride - 1, which overflows for huge strides.
        const int64_t extent = limit[i] - start[i];  // 0 <= extent <= size, checked above
        t.shape.push_back(extent == 0 ? 0 : 1 + (extent - 1) / strides[i]);
      }
      return t;
    }
    case K::concatenate: {
      int64_t d = a.integer(0);
      if (d < 0 || d >= in[0]->rank()) fail(op, fmt::format("dimension {} is not a dimension of {}", d, in[0]->str()));
      TensorType t = *in[0];
      t.shape[size_t(d)] = 0;
      for (const TensorType* x : in) {
        bool fits = x->dtype == t.dtype && x->rank() == t.rank();
        for (size_t i = 0; fits && i < t.shape.size(); ++i) fits = int64_t(i) == d || x->shape[i] == in[0]->shape[i];
        if (!fits) fail(op, fmt::format("{} does not fit beside {} along dimension {}", x->str(), in[0]->str(), d));
        int64_t& total = t.shape[size_t(d)];
        if (__builtin_add_overflow(total, x->shape[size_t(d)], &total))
          fail(op, fmt::format("the sizes along dimension {} add up to more than 2^63", d));
      }
      return t;
    }
    case K::dynamic_update_slice: {
      const TensorType &base = *in[0], &update = *in[1];
      if (update.dtype != base.dtype || update.rank() != base.rank())
        fail(op, fmt::format("update {} must have the dtype and rank of the operand {}", update.str(), base.str()));
      for (size_t i = 0; i < base.shape.size(); ++i)
        if (update.shape[i] > base.shape[i])
          fail(op, fmt::format("update {} is larger than the operand {}", update.str(), base.str()));
      if (int64_t(in.size()) != 2 + base.rank())
        fail(op, fmt::format("needs {} start indices for a rank-{} operand, got {}", base.rank(), base.rank(),
                             in.size() - 2));
      for (size_t i = 2; i < in.size(); ++i)
        if (*in[i] != TensorType{DType::i32, {}})
          fail(op, fmt::format("start indices must be i32[] scalars, got {}", in[i]->str()));
      return base;
    }
    case K::gather: {
      if (in[0]->rank() < 1) fail(op, "the operand must have at least one dimension");
      if (in[1]->dtype != DType::i32) fail(op, fmt::format("indices must be i32, got {}", in[1]->str()));
      TensorType t{in[0]->dtype, in[1]->shape};
      t.shape.insert(t.shape.end(), in[0]->shape.begin() + 1, in[0]->shape.end());
      return t;
    }
    case K::block_field: {
      const auto format = quant_format(in[0]->dtype);
      if (!format) fail(op, fmt::format("the operand must be quantized, got {}", in[0]->str()));
      const std::string& field = std::get<std::string>(a.attrs[0]);
      if (field == "codes") return {DType::f32, in[0]->shape};
      if (field == "mins" && !has_mins(*format)) fail(op, fmt::format("{} has no mins", in[0]->str()));
      TensorType t{DType::f32, in[0]->shape};
      t.shape.back() /= values_per_scale(*format, t.shape.back());  // whole blocks: the verifier checked the operand
      return t;
    }
    case K::reduce: {
      if (!is_numeric(in[0]->dtype)) fail(op, fmt::format("operand must be f32 or i32, got {}", in[0]->str()));
      const auto& dims = a.ints(1);
      check_dims(op, "dimensions", dims, in[0]->rank());
      TensorType t{in[0]->dtype, {}};
      for (int64_t i = 0; i < in[0]->rank(); ++i)
        if (std::find(dims.begin(), dims.end(), i) == dims.end()) t.shape.push_back(in[0]->shape[size_t(i)]);
      return t;
    }
    case K::dot_general: {
      const TensorType &lhs = *in[0], &rhs = *in[1];
      if (lhs.dtype != DType::f32 || rhs.dtype != DType::f32)
        fail(op, fmt::format("operands must be f32, got {} and {}", lhs.str(), rhs.str()));
      const auto &lb = a.ints(0), &rb = a.ints(1), &lc = a.ints(2), &rc = a.ints(3);
      if (lb.size() != rb.size()) fail(op, "lhs and rhs need as many batching dimensions");
      if (lc.size() != rc.size()) fail(op, "lhs and rhs need as many contracting dimensions");
      std::vector<int64_t> lhs_used = lb, rhs_used = rb;
      lhs_used.insert(lhs_used.end(), lc.begin(), lc.end());
      rhs_used.insert(rhs_used.end(), rc.begin(), rc.end());
      check_dims(op, "lhs batching and contracting dimensions", lhs_used, lhs.rank());
      check_dims(op, "rhs batching and contracting dimensions", rhs_used, rhs.rank());
      TensorType t{DType::f32, {}};
      for (size_t i = 0; i < lb.size(); ++i) {
        if (lhs.shape[size_t(lb[i])] != rhs.shape[size_t(rb[i])])
          fail(op, fmt::format("batching dimensions {} of {} and {} of {} differ in size", lb[i], lhs.str(), rb[i],
                               rhs.str()));
        t.shape.push_back(lhs.shape[size_t(lb[i])]);
      }
      for (size_t i = 0; i < lc.size(); ++i)
        if (lhs.shape[size_t(lc[i])] != rhs.shape[size_t(rc[i])])
          fail(op, fmt::format("contracting dimensions {} of {} and {} of {} differ in size", lc[i], lhs.str(),
                               rc[i], rhs.str()));
      for (int64_t i = 0; i < lhs.rank(); ++i)
        if (std::find(lhs_used.begin(), lhs_used.end(), i) == lhs_used.end()) t.shape.push_back(lhs.shape[size_t(i)]);
      for (int64_t i = 0; i < rhs.rank(); ++i)
        if (std::find(rhs_used.begin(), rhs_used.end(), i) == rhs_used.end()) t.shape.push_back(rhs.shape[size_t(i)]);
      return t;
    }
    case K::all_reduce:
    case K::all_gather: {
      if (!is_numeric(in[0]->dtype)) fail(op, fmt::format("operand must be f32 or i32, got {}", in[0]->str()));
      const auto& groups = a.int_lists(1);  // replica_groups follows kind or all_gather_dim
      if (groups.empty() || groups[0].empty()) fail(op, "replica_groups must hold at least one non-empty group");
      for (const auto& g : groups)
        if (g.size() != groups[0].size()) fail(op, "replica groups must all have the same size");
      if (info.kind == K::all_reduce) return *in[0];
      int64_t d = a.integer(0);
      if (d < 0 || d >= in[0]->rank())
        fail(op, fmt::format("all_gather_dim {} is not a dimension of {}", d, in[0]->str()));
      TensorType t = *in[0];
      int64_t& size = t.shape[size_t(d)];
      if (__builtin_mul_overflow(size, int64_t(groups[0].size()), &size))
        fail(op, fmt::format("gathering {} along dimension {} {} times overflows", in[0]->str(), d, groups[0].size()));
      return t;
    }
  }
  fail(op, "unknown op");
}

}  // namespace

const OpInfo& op_info(OpKind kind) { return table()[size_t(kind)]; }

bool find_op(std::string_view name, OpKind& out) {
  for (const OpInfo& info : table()) {
    if (info.name == name) {
      out = info.kind;
      return true;
    }
  }
  return false;
}

std::vector<OpKind> all_op_kinds() {
  std::vector<OpKind> out;
  for (const OpInfo& info : table()) out.push_back(info.kind);
  return out;
}

std::vector<OpKind> op_kinds(OpClass op_class) {
  std::vector<OpKind> out;
  for (const OpInfo& info : table())
    if (info.op_class == op_class) out.push_back(info.kind);
  return out;
}

TensorType result_type(OpKind kind, std::span<const TensorType* const> operands, std::span<const Attr> attrs,
                       const TensorType* stated) {
  const OpInfo& info = op_info(kind);
  int n = int(operands.size());
  if (n < info.min_operands || (info.max_operands >= 0 && n > info.max_operands)) {
    std::string want = info.max_operands < 0 ? fmt::format("at least {}", info.min_operands)
                       : info.min_operands == info.max_operands ? fmt::format("{}", info.min_operands)
                                                                : fmt::format("{} to {}", info.min_operands, info.max_operands);
    fail(info.name, fmt::format("takes {} operands, got {}", want, n));
  }
  if (attrs.size() != info.attrs.size())
    fail(info.name, fmt::format("takes {} attributes, got {}", info.attrs.size(), attrs.size()));
  for (size_t i = 0; i < attrs.size(); ++i) {
    const AttrSpec& spec = info.attrs[i];
    if (attrs[i].index() != size_t(spec.kind))
      fail(info.name, fmt::format("attribute {} has the wrong kind of value", spec.name));
    if (spec.kind == AttrKind::word &&
        std::find(spec.words.begin(), spec.words.end(), std::get<std::string>(attrs[i])) == spec.words.end())
      fail(info.name, fmt::format("{} must be one of {}, got {}", spec.name, fmt::join(spec.words, ", "),
                                  std::get<std::string>(attrs[i])));
  }
  if (info.stated_type && !stated) fail(info.name, "needs its result type stated");
  // Quantized values are weights, stored in blocks along their last dimension: they are
  // converted to f32, or gathered by rows of a table (a row keeps its blocks), nothing else.
  for (size_t i = 0; i < operands.size(); ++i) {
    const bool row_gather = kind == OpKind::gather && i == 0 && operands[i]->rank() >= 2;
    if (is_quantized(operands[i]->dtype) && kind != OpKind::convert && kind != OpKind::block_field && !row_gather)
      fail(info.name, fmt::format("{} is quantized: it is only converted to f32, taken apart by block_field or "
                                  "gathered by rows of a table of rank 2 or more",
                                  operands[i]->str()));
  }
  TensorType t = infer(info, operands, Attrs{attrs}, stated);
  if (stated && *stated != t)
    fail(info.name, fmt::format("result type is {}, but the program states {}", t.str(), stated->str()));
  return t;
}

}  // namespace cutcheck
