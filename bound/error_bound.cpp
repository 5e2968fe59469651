#include "bound/error_bound.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "core/error.h"
#include "program/activations.h"
#include "reference/kernels.h"

namespace cutcheck {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// The reference rounds every f32 result once, to nearest: its own error, which a
// comparison with it must allow on top of the backend's.
constexpr double reference_roundoff = 0x1p-24;
constexpr double reference_underflow = 0x1p-150;

// The range a backend's operand element may take: [x - b, x + b], the whole line where
// the bound is infinite or unknown.
struct Range {
  double lo, hi;
};

Range range_of(double x, double b) {
  if (!(b < inf)) return {-inf, inf};  // also NaN
  if (b == 0) return {x, x};
  return {x - b, x + b};
}

// How far y may be from the reference value r; equal infinities are no distance apart.
double distance(double y, double r) {
  if (y == r) return 0;
  const double d = std::abs(y - r);
  return std::isnan(d) ? inf : d;
}

double spread(Range result, double r) { return std::max(distance(result.lo, r), distance(result.hi, r)); }

// A bound stored as f32, rounded up so that storing never makes it smaller; range ends
// rounded outward.
float up(double b) {
  float f = float(b);
  return double(f) < b ? std::nextafter(f, INFINITY) : f;
}
float down(double b) {
  float f = float(b);
  return double(f) > b ? std::nextafter(f, -INFINITY) : f;
}

using Bound = ErrorBounds::Bound;

// A bound per element, as an f32 tensor of the value's shape.
Tensor materialize(const Bound& b, const Tensor& value) {
  Tensor out({DType::f32, value.shape()});
  auto y = out.as_mut<float>();
  if (b.abs.elements()) std::copy(b.abs.as<float>().begin(), b.abs.as<float>().end(), y.begin());
  if (b.rel != 0 || b.floor != 0) {
    auto x = value.as<float>();
    for (size_t i = 0; i < y.size(); ++i) {
      double e = double(y[i]) + b.floor;
      if (std::isfinite(x[i])) e += b.rel * std::abs(double(x[i]));
      y[i] = up(e);
    }
  }
  return out;
}

template <class F>
Range over(Range a, Range b, F f) {  // f is monotone in each argument: its range is at the corners
  const double c[4] = {f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)};
  for (double v : c)
    if (std::isnan(v)) return {-inf, inf};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

class Pass {
 public:
  Pass(const Program& p, const std::function<const Tensor&(ValueId)>& value, const BoundModel& m)
      : p_(p), value_(value), declared_(precision_info(m.precision)), function_ulps_(m.function_ulps), sigmas_(m.sigmas) {}

  std::vector<Bound> run() {
    bounds_.resize(p_.values.size());
    def_.assign(p_.values.size(), nullptr);
    for (const Operation& op : p_.ops) def_[size_t(op.result)] = &op;
    for (const InputDecl& in : p_.inputs) bounds_[size_t(in.value)] = leaf(in.value);
    for (const WeightDecl& w : p_.weights) bounds_[size_t(w.value)] = leaf(w.value);
    const std::vector<bool> activation = activations(p_);
    for (const Operation& op : p_.ops) {
      // Activations are stored in the declared precision, tables in f32.
      s_ = activation[size_t(op.result)] ? &declared_ : &precision_info(Precision::f32);
      try {
        bounds_[size_t(op.result)] = bound(op);
      } catch (const NotYet&) {
        throw;
      } catch (const std::exception& e) {
        throw Error(fmt::format("the error bound of %{} ({}): {}", p_.name(op.result), op_info(op.kind).name, e.what()));
      }
    }
    return std::move(bounds_);
  }

  Tensor materialize(ValueId v) const { return cutcheck::materialize(bounds_[size_t(v)], value_(v)); }

 private:
  const Tensor& value(ValueId v) const { return value_(v); }
  const Bound& bound_of(ValueId v) const { return bounds_[size_t(v)]; }

  // The backend's own rounding of a result of magnitude up to `magnitude`: an elementary
  // function's error (`function_ulps` f32 ulps, 0 for the correctly rounded ops) and the
  // rounding to the declared precision as it is stored; and the reference's rounding to
  // f32, counted twice: once as its own error, once because the operand ranges are
  // centred on its values.
  double rounding(double magnitude, double function_ulps = 0) const {
    return (s_->unit_roundoff() + function_ulps * f32_ulp + 2 * reference_roundoff) * magnitude + s_->underflow() +
           reference_underflow;
  }
  static constexpr double f32_ulp = 0x1p-23;  // of 1

  // The bound of a result r whose range over the operands' ranges is `range`.
  double result_bound(double r, Range range, double ulps) const {
    const double d = spread(range, r);
    if (!std::isfinite(r)) return d == 0 ? 0 : inf;  // an exact infinity stays exact
    if (!(d < inf)) return inf;
    return d + rounding(std::abs(r) + d, ulps);
  }

  // Inputs and weights: exact in f32; rounded to the declared precision otherwise.
  Bound leaf(ValueId v) const {
    if (p_.type(v).dtype != DType::f32 || declared_.precision == Precision::f32) return {};
    return {{}, declared_.unit_roundoff(), declared_.underflow()};
  }

  // A result tensor of the op's shape, filled by f(i). Where a finite result may lie
  // beyond the storage precision's range (f16's 65504), a correct backend stores infinity
  // there, and NaN follows: no bound.
  template <class F>
  Bound each(const Operation& op, F f) const {
    Tensor out({DType::f32, p_.type(op.result).shape});
    auto y = out.as_mut<float>();
    const Tensor& r = value(op.result);
    const bool floats = r.dtype() == DType::f32;
    for (size_t i = 0; i < y.size(); ++i) {
      const double b = f(i);
      const bool overflows = floats && std::isfinite(r.as<float>()[i]) &&
                             std::abs(double(r.as<float>()[i])) + b > s_->max_finite;
      y[i] = up(overflows ? inf : b);
    }
    return {std::move(out)};
  }

  Bound bound(const Operation& op) {
    switch (op.kind) {
      case OpKind::constant:
      case OpKind::iota: return exact_or_rounded(op);
      case OpKind::convert: return convert(op);
      case OpKind::add:
      case OpKind::subtract:
      case OpKind::multiply:
      case OpKind::maximum:
      case OpKind::minimum:
      case OpKind::power: return binary(op);
      case OpKind::divide: return softmax(op);
      case OpKind::negate:
      case OpKind::exponential:
      case OpKind::log:
      case OpKind::sqrt:
      case OpKind::rsqrt:
      case OpKind::logistic:
      case OpKind::sine:
      case OpKind::cosine: return unary(op);
      case OpKind::compare: return compare(op);
      case OpKind::select: return select(op);
      case OpKind::broadcast_in_dim:
      case OpKind::reshape:
      case OpKind::transpose:
      case OpKind::slice:
      case OpKind::concatenate:
      case OpKind::dynamic_update_slice:
      case OpKind::gather: return moved(op);
      case OpKind::reduce: return reduce(op);
      case OpKind::reduce_precision: return narrowed(op);
      case OpKind::dot_general: return dot(op);
      case OpKind::all_reduce:
      case OpKind::all_gather:
        throw NotYet("error bounds of a split program: bound the unsplit program, of which a split is one more "
                     "summation order");
    }
    throw Error("unknown op");
  }

  // Values from nothing: exact where the declared precision holds them, else rounded.
  Bound exact_or_rounded(const Operation& op) const {
    const Tensor& r = value(op.result);
    if (r.dtype() != DType::f32) return {};
    auto x = r.as<float>();
    bool exact = std::all_of(x.begin(), x.end(), [&](float v) { return round_to(*s_, v) == v; });
    if (exact) return {};
    return each(op, [&](size_t i) { return distance(round_to(*s_, x[i]), x[i]); });
  }

  Bound convert(const Operation& op) const {
    const Tensor &a = value(op.operands[0]), &r = value(op.result);
    const Bound& ab = bound_of(op.operands[0]);
    if (ab.zero() && a.dtype() != DType::f32) {  // exact integers: exact unless the precision rounds them
      if (r.dtype() != DType::f32) return {};
      return exact_or_rounded(op);
    }
    const Tensor b = materialize(op.operands[0]);
    auto bv = b.as<float>();
    if (a.dtype() == r.dtype()) return {b};
    if (a.dtype() == DType::f32 && r.dtype() == DType::i32) {  // truncation: certain where the range truncates alike
      auto x = a.as<float>();
      return each(op, [&](size_t i) {
        Range g = range_of(x[i], bv[i]);
        return std::trunc(g.lo) == std::trunc(g.hi) ? 0.0 : inf;
      });
    }
    // An uncertain integer or predicate: no bound.
    return each(op, [&](size_t i) { return bv[i] == 0 ? 0.0 : inf; });
  }

  Bound binary(const Operation& op) const {
    const Tensor &a = value(op.operands[0]), &b = value(op.operands[1]), &r = value(op.result);
    const Bound &abd = bound_of(op.operands[0]), &bbd = bound_of(op.operands[1]);
    if (r.dtype() != DType::f32) return certain_if_all(op);  // i32 arithmetic is exact
    if (abd.zero() && bbd.zero() && (op.kind == OpKind::maximum || op.kind == OpKind::minimum)) return {};
    const Tensor ab = materialize(op.operands[0]), bb = materialize(op.operands[1]);
    auto x = a.as<float>(), y = b.as<float>(), z = r.as<float>(), xb = ab.as<float>(), yb = bb.as<float>();
    const OpKind kind = op.kind;
    const double ulps = kind == OpKind::power ? function_ulps_ : 0;
    const bool exact = kind == OpKind::maximum || kind == OpKind::minimum;  // they round nothing
    return each(op, [&](size_t i) -> double {
      if (xb[i] == 0 && yb[i] == 0) return exact_operands(kind, x[i], y[i], z[i]);
      const Range g = range_of(x[i], xb[i]), h = range_of(y[i], yb[i]);
      Range out;
      switch (kind) {
        case OpKind::add: out = {g.lo + h.lo, g.hi + h.hi}; break;
        case OpKind::subtract: out = {g.lo - h.hi, g.hi - h.lo}; break;
        case OpKind::multiply: out = over(g, h, [](double u, double v) { return u * v; }); break;
        case OpKind::divide:
          if (h.lo <= 0 && h.hi >= 0) return inf;
          out = over(g, h, [](double u, double v) { return u / v; });
          break;
        case OpKind::maximum: out = {std::max(g.lo, h.lo), std::max(g.hi, h.hi)}; break;
        case OpKind::minimum: out = {std::min(g.lo, h.lo), std::min(g.hi, h.hi)}; break;
        default:  // power: over a positive base, monotone in each argument
          if (!(g.lo > 0)) return inf;
          out = over(g, h, [](double u, double v) { return std::pow(u, v); });
      }
      if (std::isnan(out.lo) || std::isnan(out.hi)) return inf;
      if (exact) return std::isfinite(z[i]) || spread(out, z[i]) == 0 ? spread(out, z[i]) : inf;
      return result_bound(z[i], out, ulps);
    });
  }

  // The op defining `v` if it is of `kind` (and, for a reduce, of `reduction`).
  const Operation* defined_by(ValueId v, OpKind kind, const char* reduction = nullptr) const {
    const Operation* op = def_[size_t(v)];
    if (!op || op->kind != kind || (reduction && op->word("kind") != reduction)) return nullptr;
    return op;
  }

  // `b`, a broadcast_in_dim back over the dimensions `reduce` took away, of a value it
  // defines: the operand of that reduce.
  const Operation* reduced_back(ValueId b, const Operation& reduce, const char* reduction) const {
    const Operation* bcast = defined_by(b, OpKind::broadcast_in_dim);
    if (!bcast) return nullptr;
    const Operation* r = defined_by(bcast->operands[0], OpKind::reduce, reduction);
    if (!r || r->ints("dimensions") != reduce.ints("dimensions")) return nullptr;
    std::vector<int64_t> kept;
    for (int64_t d = 0; d < p_.type(r->operands[0]).rank(); ++d)
      if (std::find(r->ints("dimensions").begin(), r->ints("dimensions").end(), d) == r->ints("dimensions").end())
        kept.push_back(d);
    return bcast->ints("broadcast_dimensions") == kept ? r : nullptr;
  }

  // divide, where it is a softmax p = e / sum(e), e = exp(s - max(s)) over the same
  // dimensions: the chain op by op forgets that the maximum's error cancels and that p
  // sums to 1 (one visible position gives p = 1 exactly, however wrong s is), and bounds
  // p by four times the scores' bound. The softmax's own derivative does not:
  // dp_i = p_i (ds_i - sum_j p_j ds_j), so |dp_i| <= p_i ((1 - 2 p_i) b_i + sum_j p_j b_j),
  // to first order, and a factor expm1(2g) / 2g for the curvature past it. The roundings:
  // of s - max (in the storage precision), of each exp (as a perturbation of s), of the
  // sum, and of the quotient. The op-by-op bound stays where it is smaller.
  Bound softmax(const Operation& op) {
    Bound generic = binary(op);
    const Operation* sum = nullptr;
    const Operation* exp = defined_by(op.operands[0], OpKind::exponential);
    if (const Operation* bcast = defined_by(op.operands[1], OpKind::broadcast_in_dim))
      sum = defined_by(bcast->operands[0], OpKind::reduce, "add");
    if (!exp || !sum || sum->operands[0] != op.operands[0] || !reduced_back(op.operands[1], *sum, "add")) return generic;
    const Operation* shift = defined_by(exp->operands[0], OpKind::subtract);
    if (!shift || !reduced_back(shift->operands[1], *sum, "max")) return generic;
    const ValueId s = shift->operands[0];
    if (defined_by(def_[size_t(shift->operands[1])]->operands[0], OpKind::reduce, "max")->operands[0] != s)
      return generic;

    const Tensor& p = value(op.result);
    const Tensor sb = materialize(s);
    auto pv = p.as<float>(), bs = sb.as<float>(), sh = value(shift->result).as<float>();
    const double u = s_->unit_roundoff(), exp_rounding = u + function_ulps_ * f32_ulp + 2 * reference_roundoff;
    // b'_i: the score's bound, with the roundings of s - max and of exp taken as more of it.
    Tensor b({DType::f32, p.shape()}), pb({DType::f32, p.shape()});
    auto bv = b.as_mut<float>(), pbv = pb.as_mut<float>();
    for (size_t i = 0; i < bv.size(); ++i) {
      const double shifted = std::isfinite(sh[i]) ? std::abs(double(sh[i])) : 0;
      bv[i] = up(std::isfinite(sh[i]) ? bs[i] + (u + 2 * reference_roundoff) * shifted + exp_rounding : 0.0);
      pbv[i] = up(double(pv[i]) * bv[i]);
    }
    // sum_j p_j b'_j, broadcast back over the row, by the program's own reduce and broadcast.
    const Operation& back = *def_[size_t(op.operands[1])];
    auto broadcast = [&](const Tensor& per_row) {
      Tensor out({DType::f32, p.shape()});
      const Tensor* in[] = {&per_row};
      kernel_for(OpKind::broadcast_in_dim)(back, in, out);
      return out;
    };
    const Tensor spread = broadcast(reduce_as(*sum, "add", pb, value(sum->result).shape()));
    const Tensor totals = broadcast(value(sum->result));
    const double n = double(value(sum->operands[0]).elements()) / double(value(sum->result).elements());
    auto sp = spread.as<float>(), tv = totals.as<float>();
    const Tensor g = cutcheck::materialize(generic, p);
    auto gv = g.as<float>();
    Distribution d{sum->ints("dimensions"), Tensor({DType::f32, p.shape()})};
    auto saturated = d.saturated.as_mut<float>();
    Bound out = each(op, [&](size_t i) -> double {
      const double pi = pv[i], bi = bv[i], sj = sp[i];
      saturated[i] = 1;
      if (!std::isfinite(pi) || !(bi < inf) || !(sj < inf)) return gv[i];
      const double first = pi * ((1 - 2 * pi) * bi + sj);
      const double grow = bi + sj, curvature = grow > 0 ? std::expm1(2 * grow) / (2 * grow) : 1;
      const double sum_rounding = (summation(n - 1, double(tv[i]) * tv[i], tv[i]) + rounding(tv[i])) / double(tv[i]);
      const double bound = first * curvature + pi * sum_rounding + rounding(pi + first * curvature);
      const double whole = std::max(pi, 1 - pi);
      saturated[i] = bound >= whole;
      return std::min({bound, double(gv[i]), whole});
    });
    distributions_.insert_or_assign(op.result, std::move(d));
    return out;
  }

  // A result from exact operands: every correct backend gets the correctly rounded
  // result of +, -, *, / and sqrt, and exact maxima, minima and negations, so the bound is
  // how far that rounding in the storage precision lies from the reference's (0 where the
  // storage is f32). x^0 and 1^y are exactly 1.
  // Elementary functions keep their allowance.
  double exact_operands(OpKind kind, double x, double y, double r) const {
    double e;
    switch (kind) {
      case OpKind::add: e = x + y; break;
      case OpKind::subtract: e = x - y; break;
      case OpKind::multiply: e = x * y; break;
      case OpKind::divide: e = x / y; break;
      case OpKind::sqrt: e = std::sqrt(x); break;
      case OpKind::maximum:
      case OpKind::minimum:
      case OpKind::negate: return 0;
      case OpKind::power:
        if (y == 0 || x == 1) return 0;
        [[fallthrough]];
      default: return result_bound(r, {r, r}, function_ulps_);
    }
    if (std::isnan(e)) return std::isnan(r) ? 0 : inf;
    // Double (53 bits, at least 2 * 24 + 2) rounded to f32 is the correctly rounded f32
    // result for these ops (Figueroa), so this is the distance exactly.
    return distance(round_to(*s_, e), r);
  }

  Bound unary(const Operation& op) const {
    const Tensor &a = value(op.operands[0]), &r = value(op.result);
    if (r.dtype() != DType::f32) return certain_if_all(op);
    const OpKind kind = op.kind;
    const Tensor ab = materialize(op.operands[0]);
    auto x = a.as<float>(), z = r.as<float>(), xb = ab.as<float>();
    const double ulps = kind == OpKind::negate || kind == OpKind::sqrt ? 0 : function_ulps_;
    return each(op, [&](size_t i) -> double {
      if (xb[i] == 0) return exact_operands(kind, x[i], 0, z[i]);
      const Range g = range_of(x[i], xb[i]);
      Range out;
      switch (kind) {
        case OpKind::negate: return xb[i] < inf ? xb[i] : inf;  // exact
        case OpKind::exponential: out = {std::exp(g.lo), std::exp(g.hi)}; break;
        case OpKind::log: out = {std::log(g.lo), std::log(g.hi)}; break;
        case OpKind::sqrt: out = {std::sqrt(g.lo), std::sqrt(g.hi)}; break;
        case OpKind::rsqrt: out = {1 / std::sqrt(g.hi), 1 / std::sqrt(g.lo)}; break;
        case OpKind::logistic: out = {1 / (1 + std::exp(-g.lo)), 1 / (1 + std::exp(-g.hi))}; break;
        default: {  // sine, cosine: 1-Lipschitz, and never outside [-1, 1]
          if (!std::isfinite(z[i])) return inf;
          const double d = std::min(xb[i] < inf ? double(xb[i]) : inf, 1 + std::abs(double(z[i])));
          return d + rounding(std::abs(z[i]) + d, ulps);
        }
      }
      if (std::isnan(out.lo) || std::isnan(out.hi)) return inf;
      return result_bound(z[i], out, ulps);
    });
  }

  // An integer or predicate result: certain where every operand element is.
  Bound certain_if_all(const Operation& op) const {
    bool all_exact = true;
    for (ValueId v : op.operands) all_exact = all_exact && bound_of(v).zero();
    if (all_exact) return {};
    std::vector<Tensor> bs;
    for (ValueId v : op.operands) bs.push_back(materialize(v));
    return each(op, [&](size_t i) {
      for (const Tensor& b : bs)
        if (b.as<float>()[i] != 0) return inf;
      return 0.0;
    });
  }

  Bound compare(const Operation& op) const {
    const Tensor &a = value(op.operands[0]), &b = value(op.operands[1]);
    if (a.dtype() != DType::f32 || (bound_of(op.operands[0]).zero() && bound_of(op.operands[1]).zero()))
      return certain_if_all(op);
    const Tensor ab = materialize(op.operands[0]), bb = materialize(op.operands[1]);
    auto x = a.as<float>(), y = b.as<float>(), xb = ab.as<float>(), yb = bb.as<float>();
    const std::string& dir = op.word("comparison_direction");
    return each(op, [&](size_t i) {
      if (xb[i] == 0 && yb[i] == 0) return 0.0;
      if (std::isnan(x[i]) || std::isnan(y[i])) return inf;
      const Range g = range_of(x[i], xb[i]), h = range_of(y[i], yb[i]);
      bool certain;
      if (dir == "LT" || dir == "GE") certain = g.hi < h.lo || g.lo >= h.hi;
      else if (dir == "LE" || dir == "GT") certain = g.hi <= h.lo || g.lo > h.hi;
      else certain = g.hi < h.lo || h.hi < g.lo;  // EQ, NE: certain only where the ranges are apart
      return certain ? 0.0 : inf;
    });
  }

  Bound select(const Operation& op) const {
    const ValueId pred = op.operands[0], t = op.operands[1], f = op.operands[2];
    if (bound_of(pred).zero() && bound_of(t).zero() && bound_of(f).zero()) return {};
    const Tensor pb = materialize(pred), tb = materialize(t), fb = materialize(f);
    auto choose = value(pred).as<uint8_t>();
    auto pv = pb.as<float>(), tv = tb.as<float>(), fv = fb.as<float>();
    const bool floats = value(t).dtype() == DType::f32;
    return each(op, [&](size_t i) -> double {
      const double chosen = choose[i] ? tv[i] : fv[i], other = choose[i] ? fv[i] : tv[i];
      if (pv[i] == 0) return chosen;
      if (!floats) return inf;  // either integer may come out
      const double r = value(t).as<float>()[i], o = value(f).as<float>()[i];
      return std::max(chosen, distance(o, r) + other);  // the backend may take the other branch
    });
  }

  // Data movement: the bounds move with the elements. The op's own kernel moves them,
  // with f32 bound tensors in place of the data operands (index operands stay).
  Bound moved(const Operation& op) const {
    const size_t data_operands = op.kind == OpKind::dynamic_update_slice ? 2
                                 : op.kind == OpKind::gather            ? 1
                                 : op.kind == OpKind::concatenate       ? op.operands.size()
                                                                        : 1;
    bool all_zero = true, same_leaf = true;
    const Bound& first = bound_of(op.operands[0]);
    for (size_t k = 0; k < data_operands; ++k) {
      const Bound& b = bound_of(op.operands[k]);
      all_zero = all_zero && b.zero();
      same_leaf = same_leaf && b.abs.elements() == 0 && b.rel == first.rel && b.floor == first.floor;
    }
    if (all_zero) return {};
    if (same_leaf) return {{}, first.rel, first.floor};  // rel * |moved value| is the moved bound
    std::vector<Tensor> bs;
    std::vector<const Tensor*> in;
    for (size_t k = 0; k < op.operands.size(); ++k) {
      if (k < data_operands) bs.push_back(materialize(op.operands[k]));
    }
    for (size_t k = 0; k < op.operands.size(); ++k) in.push_back(k < data_operands ? &bs[k] : &value(op.operands[k]));
    Tensor out({DType::f32, p_.type(op.result).shape});
    kernel_for(op.kind)(op, in, out);
    return {std::move(out)};
  }

  // reduce_precision: monotone, so the narrowed ends of the operand's range are the
  // result's; then stored like any result.
  Bound narrowed(const Operation& op) const {
    const ValueId a = op.operands[0];
    if (bound_of(a).zero()) return {};
    const Tensor &x = value(a), xb = materialize(a);
    Tensor lo({DType::f32, x.shape()}), hi({DType::f32, x.shape()}), rlo({DType::f32, x.shape()}),
        rhi({DType::f32, x.shape()});
    auto xv = x.as<float>(), bv = xb.as<float>();
    auto l = lo.as_mut<float>(), h = hi.as_mut<float>();
    for (size_t i = 0; i < l.size(); ++i) {
      const Range g = range_of(xv[i], bv[i]);
      l[i] = down(g.lo), h[i] = up(g.hi);
    }
    const Tensor* in_lo[] = {&lo};
    const Tensor* in_hi[] = {&hi};
    kernel_for(OpKind::reduce_precision)(op, in_lo, rlo);
    kernel_for(OpKind::reduce_precision)(op, in_hi, rhi);
    auto z = value(op.result).as<float>(), zl = rlo.as<float>(), zh = rhi.as<float>();
    return each(op, [&](size_t i) { return result_bound(z[i], {zl[i], zh[i]}, 0); });
  }

  // The reduction of `t` as the op describes it, with another kind.
  static Tensor reduce_as(const Operation& op, const std::string& kind, const Tensor& t, const Shape& shape) {
    Operation o = op;
    o.attrs[0] = word(kind);  // attrs are in op_info's order: kind, dimensions
    Tensor out({DType::f32, shape});
    const Tensor* in[] = {&t};
    kernel_for(OpKind::reduce)(o, in, out);
    return out;
  }

  Bound reduce(const Operation& op) const {
    const ValueId a = op.operands[0];
    const Tensor &x = value(a), &r = value(op.result);
    const std::string& kind = op.word("kind");
    const Shape& shape = r.shape();
    if (x.dtype() != DType::f32) {  // integers: certain where every reduced element is
      if (bound_of(a).zero()) return {};
      return {reduce_as(op, "max", materialize(a), shape)};
    }
    const Tensor xb = materialize(a);
    auto xv = x.as<float>(), bv = xb.as<float>();
    auto z = r.as<float>();
    if (kind != "add") {  // max, min: the reduction of the ranges' ends; nothing rounds
      if (bound_of(a).zero()) return {};
      Tensor lo({DType::f32, x.shape()}), hi({DType::f32, x.shape()});
      auto l = lo.as_mut<float>(), h = hi.as_mut<float>();
      for (size_t i = 0; i < l.size(); ++i) {
        const Range g = range_of(xv[i], bv[i]);
        l[i] = down(g.lo), h[i] = up(g.hi);
      }
      const Tensor rl = reduce_as(op, kind, lo, shape), rh = reduce_as(op, kind, hi, shape);
      auto lv = rl.as<float>(), hv = rh.as<float>();
      return each(op, [&](size_t i) { return spread({lv[i], hv[i]}, z[i]); });
    }
    // add: the terms' bounds in quadrature, the sum's own rounding, the result's rounding.
    Tensor sq({DType::f32, x.shape()}), mag({DType::f32, x.shape()});
    auto q = sq.as_mut<float>(), m = mag.as_mut<float>();
    for (size_t i = 0; i < m.size(); ++i) {
      q[i] = up(double(bv[i]) * bv[i]);
      const double t = std::abs(double(xv[i])) + bv[i];
      m[i] = up(t * t);
    }
    const Tensor sb = reduce_as(op, "add", sq, shape), sm = reduce_as(op, "add", mag, shape);
    const double n = double(x.elements()) / double(std::max<int64_t>(r.elements(), 1));
    auto sbv = sb.as<float>(), smv = sm.as<float>();
    return each(op, [&](size_t i) -> double {
      const double prop = std::sqrt(double(sbv[i])) * (1 + 2 * reference_roundoff);
      if (!std::isfinite(z[i])) return std::isinf(z[i]) && prop == 0 ? 0 : inf;
      return prop + summation(n - 1, smv[i], std::abs(z[i]) + prop) + rounding(std::abs(z[i]) + prop);
    });
  }

  // The rounding error of a sum of n + 1 terms t (products, for a contraction) with
  // sum t^2 = `squares` and |sum t| = `result`, in an order that does not follow the
  // values. Addition j rounds partial sum S_j by a relative delta_j, |delta_j| <= u,
  // independent and of variance at most u^2 / 3; over the orders, the mean of S_j^2 is
  // (j / n) sum t^2 + (j / n)^2 (sum t)^2, so the error's variance is at most
  // u^2 / 3 (n / 2 sum t^2 + n / 3 (sum t)^2), and the products' own roundings add
  // u^2 / 3 sum t^2. `sigmas_` standard deviations bound it.
  double summation(double n, double squares, double result) const {
    if (n <= 0) return 0;
    const double variance = ((n / 2 + 1) * squares + n / 3 * result * result) / 3;
    return sigmas_ * accumulation_roundoff * std::sqrt(variance) * (1 + 2 * reference_roundoff) +
           (n + 1) * accumulation_underflow;
  }

  static constexpr double accumulation_underflow = 0x1p-150;

  // A contraction of a softmax's probabilities p over the dimensions they sum to 1 in,
  // with values v (attention's mix). Where the softmax's linearised bound reached the
  // probabilities' own range (scores uncertain by more than exp can follow), p is known only
  // to be a distribution, and its errors are not independent: they sum to 0, and a backend
  // may put the weight on another position altogether. The quadrature rule then says too
  // little (opposite values v_a and v_b: sqrt(v_a^2 + v_b^2) against |v_a - v_b|). What
  // holds for any distribution p' within the bounds:
  // |sum_j (p'_j - p_j) v_j| <= sum_j b(p_j) (|v_j| + |z|), and, p' putting its weight
  // where it may, <= max_j |v_j| + |z| <= sqrt(sum_j v_j^2) + |z| over the positions p' can
  // reach (|v_j| widened by v's bound, z the result). The smaller of the two, per element
  // of a row with a saturated probability; nullopt where no operand is such a softmax.
  template <class Contract>
  std::optional<Tensor> distribution_hull(const Operation& op, const Contract& contract) const {
    for (int side = 0; side < 2; ++side) {
      auto it = distributions_.find(op.operands[size_t(side)]);
      if (it == distributions_.end() || it->second.dims != op.ints(side ? "rhs_contracting_dimensions"
                                                                        : "lhs_contracting_dimensions"))
        continue;
      const ValueId pv = op.operands[size_t(side)], vv = op.operands[size_t(1 - side)];
      const Tensor &p = value(pv), &v = value(vv), pb = materialize(pv), vb = materialize(vv);
      // contract(probability-shaped, value-shaped), in the op's operand order.
      auto mix = [&](const Tensor& x, const Tensor& y) { return side == 0 ? contract(x, y) : contract(y, x); };
      auto filled = [](const Tensor& like, auto f) {
        Tensor out({DType::f32, like.shape()});
        auto y = out.as_mut<float>();
        for (size_t i = 0; i < y.size(); ++i) y[i] = up(f(i));
        return out;
      };
      auto vx = v.as<float>(), ve = vb.as<float>(), px = p.as<float>(), pe = pb.as<float>();
      const Tensor widened = filled(v, [&](size_t i) { return std::abs(double(vx[i])) + ve[i]; });
      const Tensor widened_square = filled(v, [&](size_t i) { return std::pow(std::abs(double(vx[i])) + ve[i], 2); });
      const Tensor ones = filled(v, [](size_t) { return 1.0; });
      const Tensor reachable = filled(p, [&](size_t i) { return px[i] != 0 || pe[i] != 0 ? 1.0 : 0.0; });
      const Tensor saturated = mix(it->second.saturated, ones), linear = mix(pb, widened), mass = mix(pb, ones),
                   spread = mix(reachable, widened_square);
      auto sat = saturated.as<float>(), lin = linear.as<float>(), ms = mass.as<float>(), sq = spread.as<float>();
      auto z = value(op.result).as<float>();
      return filled(value(op.result), [&](size_t i) -> double {
        if (!(sat[i] > 0)) return 0;
        const double zi = std::abs(double(z[i]));
        return std::min(double(lin[i]) + zi * ms[i], std::sqrt(double(sq[i])) + zi);
      });
    }
    return std::nullopt;
  }

  // dot_general: the incoming bounds through the derivative, in quadrature,
  // sqrt(sum_k (|a_k| b(b_k))^2 + (b(a_k) |b_k|)^2 + (b(a_k) b(b_k))^2), plus the products'
  // and additions' rounding, plus the result's. The contractions run on the op's kernel.
  Bound dot(const Operation& op) const {
    const ValueId lhs = op.operands[0], rhs = op.operands[1];
    const Tensor &a = value(lhs), &b = value(rhs), &r = value(op.result);
    const Shape& shape = r.shape();
    auto contract = [&](const Tensor& x, const Tensor& y) {
      Tensor out({DType::f32, shape});
      const Tensor* in[] = {&x, &y};
      kernel_for(OpKind::dot_general)(op, in, out);
      return out;
    };
    // Per element f(|value|, bound) of an operand.
    auto map = [](const Tensor& v, const Tensor& bound, auto f) {
      Tensor out({DType::f32, v.shape()});
      auto x = v.as<float>(), b = bound.as<float>();
      auto y = out.as_mut<float>();
      for (size_t i = 0; i < y.size(); ++i) y[i] = up(f(std::abs(double(x[i])), double(b[i])));
      return out;
    };
    int64_t n = 1;
    for (int64_t d : op.ints("lhs_contracting_dimensions")) n *= a.shape()[size_t(d)];
    const bool exact_a = bound_of(lhs).zero(), exact_b = bound_of(rhs).zero();
    const Tensor ab = materialize(lhs), bb = materialize(rhs);
    auto square = [](double x, double) { return x * x; };
    auto bound_square = [](double, double e) { return e * e; };
    Tensor prop2;  // sum_k a_k^2 b(b_k)^2 + b(a_k)^2 (b_k^2 + b(b_k)^2)
    auto add_into = [&](Tensor t) {
      if (prop2.elements() == 0) prop2 = std::move(t);
      else
        for (size_t i = 0; i < size_t(prop2.elements()); ++i)
          prop2.as_mut<float>()[i] = up(double(prop2.as<float>()[i]) + t.as<float>()[i]);
    };
    if (!exact_b) add_into(contract(map(a, ab, square), map(b, bb, bound_square)));
    if (!exact_a)
      add_into(contract(map(a, ab, bound_square), map(b, bb, [](double x, double e) { return x * x + e * e; })));
    auto widened_square = [](double x, double e) { return (x + e) * (x + e); };
    const Tensor squares = contract(map(a, ab, widened_square), map(b, bb, widened_square));
    auto z = r.as<float>(), m = squares.as<float>();
    const std::optional<Tensor> hull = distribution_hull(op, contract);
    return each(op, [&](size_t i) -> double {
      double pr = prop2.elements() ? std::sqrt(double(prop2.as<float>()[i])) * (1 + 2 * reference_roundoff) : 0.0;
      if (hull) pr = std::max(pr, double(hull->as<float>()[i]));
      if (!std::isfinite(z[i])) return std::isinf(z[i]) && pr == 0 ? 0 : inf;
      return pr + summation(double(n), m[i], std::abs(z[i]) + pr) + rounding(std::abs(z[i]) + pr);
    });
  }

  const Program& p_;
  const std::function<const Tensor&(ValueId)>& value_;
  const PrecisionInfo& declared_;
  const PrecisionInfo* s_ = &declared_;  // the storage precision of the op at hand
  double function_ulps_, sigmas_;
  std::vector<Bound> bounds_;
  std::vector<const Operation*> def_;  // the op defining each value; null for inputs and weights
  // The softmaxes' results: the dimensions each sums to 1 over, and per element 1 where its
  // linearised bound reached the probability's own range.
  struct Distribution {
    std::vector<int64_t> dims;
    Tensor saturated;
  };
  std::map<ValueId, Distribution> distributions_;
};

}  // namespace

ErrorBounds::ErrorBounds(const Program& program, const std::function<const Tensor&(ValueId)>& value,
                         const BoundModel& model)
    : program_(program), value_(value), bounds_(Pass(program, value_, model).run()) {}

Tensor ErrorBounds::of(ValueId v) const { return materialize(bounds_[size_t(v)], value_(v)); }

TensorMap ErrorBounds::outputs() const {
  TensorMap out;
  for (const OutputDecl& o : program_.outputs) out.emplace(o.name, of(o.value));
  return out;
}

}  // namespace cutcheck
