#include "bound/perturbed_runs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/half.h"
#include "core/ieee.h"
#include "core/random.h"
#include "program/activations.h"
#include "reference/kernels.h"
#include "reference/terms.h"

namespace cutcheck {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// Half the spacing of a precision's numbers around |x|: the largest error of rounding x to
// it (to nearest). Looked up by x's f32 exponent.
class HalfSpacing {
 public:
  explicit HalfSpacing(const PrecisionInfo& p) {
    for (int field = 0; field < 256; ++field) {
      const int exponent = std::max(field == 0 ? -127 : field - 127, p.min_exponent);
      table_[size_t(field)] = std::ldexp(1.0, exponent - p.mantissa_bits);
    }
  }
  double operator()(double x) const { return table_[(std::bit_cast<uint32_t>(float(x)) >> 23) & 0xff]; }

 private:
  std::array<double, 256> table_;
};

// Whether a precision holds the f32 value x exactly: then a backend that stores it there
// stores x, and rounds nothing.
bool holds(Precision p, float x) {
  if (p == Precision::f32 || !std::isfinite(x)) return true;
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if (p == Precision::bf16) return (bits & 0xffff) == 0;
  return f16_to_f32(f32_to_half(DType::f16, x)) == x;
}


// The deviation of a perturbed value p from the reference's r: 0 where they are the same
// (the same infinity; NaN and NaN), NaN where one is finite and the other not.
double deviation(double p, double r) {
  if (p == r || (std::isnan(p) && std::isnan(r))) return 0;
  return p - r;
}

// The op's value at x and y, and its change f(x + dx, y + dy) - r for finite operands
// (r the reference's f(x, y)), by the op table's scalar semantics (program/ops.h).
double value_of(OpKind kind, double x, double y) { return op_info(kind).scalar.f64(x, y); }

double change_of(OpKind kind, double x, double dx, double y, double dy, double r) {
  const Scalar& s = op_info(kind).scalar;
  if (s.change) return s.change(x, dx, y, dy, r);
  return deviation(s.f64(x + dx, y + dy), r);
}

bool compares(const std::string& dir, double x, double y) {
  if (dir == "EQ") return x == y;
  if (dir == "NE") return x != y;
  if (dir == "LT") return x < y;
  if (dir == "LE") return x <= y;
  if (dir == "GT") return x > y;
  return x >= y;
}

Tensor run_kernel(const Operation& op, std::vector<const Tensor*> in, const TensorType& type) {
  Tensor out = Tensor::uninitialized(type);
  kernel_for(op.kind)(op, in, out);
  return out;
}



}  // namespace

// The terms of a sum, from the reference's values, once per op: per result element the sum
// of the squared terms, how many terms are nonzero (adding a zero rounds nothing), and the
// total of the terms an order may lose whole (absorbed_terms).
struct PerturbedRuns::SumTerms {
  Tensor squares, count, absorbed;
  Tensor chip_partials;  // split contractions: the sum of the chips' partial sums squared (else empty)
};

// The deviations of one f32 result being written: each element's carried change plus a
// draw of the result's own errors (a correct backend's rounding to its storage precision
// and the reference's to f32, each uniform within half a spacing, and an elementary
// function's own error), drawn at the model's amplification; infinite where the value
// leaves the storage precision's range (a correct backend overflows there).
struct PerturbedRuns::Result {
  Result(const Tensor& reference, const PrecisionInfo& storage, bool function, const BoundModel& model,
         double run_amplification, bool table, uint64_t stream)
      : d(Tensor::uninitialized(reference.type())),
        dv(d.as_mut<float>()),
        rv(reference.as<float>()),
        store(storage),
        half_store(storage),
        half_f32(precision_info(Precision::f32)),
        function_spread(function ? 2 * model.function_ulps : 0),
        amplification(table ? run_amplification / model.amplification : run_amplification),
        relative(run_amplification / model.amplification),
        g{stream} {}

  // The variance of the roundings of a result (uniform errors within h: h^2 / 3): the
  // reference rounds its own value to f32, a backend rounds the value it has, the perturbed
  // one, to its storage (a difference of two near-equal large scores is small in a backend
  // and rounds as small, however large the reference's is), and an elementary function errs
  // in both, held at the larger.
  double rounding_variance(double reference, double perturbed) const {
    const double hs = half_store(perturbed), hr = half_f32(reference),
                 hf = function_spread * half_f32(std::max(std::abs(reference), std::abs(perturbed)));
    return (hs * hs + hr * hr + hf * hf) / 3;
  }
  // `bounded`: the variance of an error the model bounds rather than estimates (the terms a
  // sum may lose), drawn at its size: at the run's amplification over the model's (1, and
  // 1/2 in a probe, so that a probe still halves every draw of its twin).
  void put(size_t i, double change, double variance, double bounded = 0) {
    double e = change;
    if (variance > 0 || bounded > 0)
      e += std::sqrt(amplification * amplification * variance + relative * relative * bounded) * g.normal();
    const double reference = rv[i];
    if (std::isfinite(reference) && std::abs(reference + e) > store.max_finite) e = inf;
    dv[i] = float(e);
  }

  Tensor d;
  std::span<float> dv;
  std::span<const float> rv;
  const PrecisionInfo& store;
  const HalfSpacing half_store, half_f32;
  const double function_spread, amplification, relative;
  SplitMix64 g;
};

PerturbedRuns::PerturbedRuns(const Program& program, std::function<const Tensor&(ValueId)> value,
                             const BoundModel& model)
    : program_(program), value_(std::move(value)), model_(model), activation_(activations(program)) {
  for (const Operation& op : program.ops)
    if (op_info(op.kind).op_class == OpClass::collective)
      throw NotYet("error bounds of a split program: bound the unsplit program, of which a split is one more "
                   "summation order");
  if (model.runs < 1 || model.probes < 0 || model.probes > model.runs)
    throw Error("a bound needs at least one perturbed run, and no more probes than runs");
  last_use_.assign(program.values.size(), 0);
  for (size_t i = 0; i < program.ops.size(); ++i)
    for (ValueId v : program.ops[i].operands) last_use_[size_t(v)] = i;
  for (const OutputDecl& o : program.outputs) last_use_[size_t(o.value)] = std::numeric_limits<size_t>::max();
  sums_.resize(program.ops.size());
  zeros_.resize(program.values.size());
  meets_.resize(program.ops.size());
  if (model.weight_meets.empty()) return;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Operation& op = program.ops[i];
    if (op.kind != OpKind::dot_general) continue;
    const std::optional<ValueId> weight = program.weight_behind(op.operands[1]);
    if (!weight) continue;
    const ValueId w = *weight;
    auto it = model.weight_meets.find(program.name(w));
    if (it == model.weight_meets.end()) continue;
    const int64_t rank = int64_t(program.type(op.operands[0]).shape.size());
    if (op.ints("lhs_contracting_dimensions") != std::vector<int64_t>{rank - 1} ||
        !op.ints("lhs_batching_dimensions").empty())
      throw Error(fmt::format("%{} multiplies weight '{}' other than as x W^T over x's last dimension: its "
                              "activation's rounding is not modelled",
                              program.name(op.result), program.name(w)));
    meets_[i] = it->second;
  }
}

PerturbedRuns::~PerturbedRuns() = default;

bool PerturbedRuns::perturbed(ValueId v) const { return shadow_[size_t(v)].elements() != 0; }

Tensor PerturbedRuns::moved(ValueId v) const {
  Tensor t = value_(v).clone();
  auto m = t.as_mut<float>();
  auto d = shadow_[size_t(v)].as<float>();
  for (size_t i = 0; i < m.size(); ++i) m[i] = float(double(m[i]) + d[i]);
  return t;
}

const Tensor& PerturbedRuns::perturbation(ValueId v) {
  if (perturbed(v)) return shadow_[size_t(v)];
  if (program_.type(v).dtype != DType::f32) return value_(v);  // the reference's value, unperturbed
  Tensor& z = zeros_[size_t(v)];
  // An empty Tensor() is f32[] by type with no storage: a rank-0 value's zeros are made too.
  if (z.type() != program_.type(v) || z.elements() != z.type().elements()) z = Tensor(program_.type(v));
  return z;
}

void PerturbedRuns::leaf(ValueId v, uint64_t stream) {
  const Precision p = model_.precision;
  if (p == Precision::f32 || program_.type(v).dtype != DType::f32) return;
  const HalfSpacing half(precision_info(p));
  auto x = value_(v).as<float>();
  Tensor d = Tensor::uninitialized(program_.type(v));
  auto dv = d.as_mut<float>();
  SplitMix64 g{stream};
  const double scale = amplification_ / std::sqrt(3.0);  // uniform within h: h / sqrt(3)
  bool any = false;
  for (size_t i = 0; i < dv.size(); ++i) {
    const bool exact = holds(p, x[i]);
    dv[i] = exact ? 0.0f : float(scale * half(x[i]) * g.normal());
    any = any || !exact;
  }
  if (any) shadow_[size_t(v)] = std::move(d);
}

TensorMap PerturbedRuns::run(int r, const TensorMap& inputs) {
  const int last = model_.total_runs() + model_.explorers;
  if (r < 0 || r >= last) throw Error(fmt::format("perturbed run {} of {}", r, last));
  shadow_.assign(program_.values.size(), Tensor());
  amplification_ = model_.amplification_of(r);
  const uint64_t run_seed = mix64(model_.seed, uint64_t(model_.draws_of(r)));
  uint64_t leaf_index = uint64_t(1) << 40;  // the ops' streams are their indices
  for (const InputDecl& in : program_.inputs) {
    auto it = inputs.find(program_.name(in.value));
    if (it == inputs.end()) {
      leaf(in.value, mix64(run_seed, leaf_index++));
      continue;
    }
    if (it->second.type() != TensorType{DType::f32, program_.type(in.value).shape})
      throw Error(fmt::format("the deviation of input '{}' is {}, expected f32 of its shape", it->first,
                              it->second.type().str()));
    shadow_[size_t(in.value)] = it->second;
  }
  for (const WeightDecl& w : program_.weights) leaf(w.value, mix64(run_seed, leaf_index++));
  for (size_t i = 0; i < program_.ops.size(); ++i) {
    const Operation& op = program_.ops[i];
    try {
      step(i, op, mix64(run_seed, i));
    } catch (const NotYet&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(fmt::format("the perturbed run of %{} ({}): {}", program_.name(op.result), op_info(op.kind).name,
                              e.what()));
    }
    for (ValueId v : op.operands)
      if (last_use_[size_t(v)] == i) shadow_[size_t(v)] = Tensor();
  }
  TensorMap out;
  for (const OutputDecl& o : program_.outputs)
    if (program_.type(o.value).dtype == DType::f32) out.insert_or_assign(o.name, perturbation(o.value).clone());
  return out;
}

void PerturbedRuns::step(size_t index, const Operation& op, uint64_t stream) {
  const ValueId result = op.result;
  const TensorType& type = program_.type(result);
  const Tensor& r = value_(result);
  bool any = false;
  for (ValueId v : op.operands) any = any || perturbed(v);
  Tensor& out = shadow_[size_t(result)];
  const bool floats = type.dtype == DType::f32;
  const bool float_operands = !op.operands.empty() && program_.type(op.operands[0]).dtype == DType::f32;
  // Values from nothing are the program's own, exact wherever they are stored (tables in
  // f32); integer and predicate results from integers are the reference's kernel on the
  // perturbed operands.
  if (!floats && !float_operands) {
    if (!any) return;
    std::vector<const Tensor*> in;
    for (ValueId v : op.operands) in.push_back(&perturbation(v));
    Tensor t = run_kernel(op, in, type);
    if (!t.same_bits(r)) out = std::move(t);
    return;
  }
  auto keep_if_changed = [&](Tensor t) {
    if (!t.same_bits(r)) out = std::move(t);
  };
  const bool activation = activation_[size_t(result)];
  const PrecisionInfo& store = precision_info(activation ? model_.precision : Precision::f32);
  // A table (computed from constants alone: the rotary frequencies) rounds the same way
  // whatever the inputs, and a correct backend's table differs from the reference's by
  // those roundings alone: they are drawn at their own size. Amplified, a frequency's
  // rounding, multiplied by the position, made up most of a late position's allowance.
  const OpInfo& info = op_info(op.kind);
  auto writer = [&] {
    return Result(r, store, info.rounding == Rounding::function, model_, amplification_, !activation, stream);
  };

  switch (info.op_class) {
    case OpClass::value: return;
    case OpClass::convert: {
      const ValueId a = op.operands[0];
      const DType from = program_.type(a).dtype;
      if (floats && from == DType::f32) {  // the identity
        if (any) out = shadow_[size_t(a)];
        return;
      }
      if (floats && (is_half(from) || is_quantized(from))) return;  // exact: a bf16, f16 or quantized weight widened
      if (floats) {  // integers or predicates: exact where the storage holds them
        const Tensor& x = perturbation(a);
        Result w = writer();
        for (size_t i = 0; i < w.dv.size(); ++i) {
          const double p = from == DType::i32 ? double(x.as<int32_t>()[i]) : double(x.as<uint8_t>()[i]);
          const bool exact = double(float(p)) == p && holds(store.precision, float(p));
          w.put(i, deviation(double(float(p)), w.rv[i]), exact ? 0 : w.rounding_variance(p, p));
        }
        out = std::move(w.d);
        return;
      }
      if (!any) return;  // f32 to an integer: the truncation of the perturbed value
      const Tensor x = moved(a);
      keep_if_changed(run_kernel(op, {&x}, type));
      return;
    }
    case OpClass::compare: {
      if (!any) return;
      const std::string& dir = op.word("comparison_direction");
      auto x = value_(op.operands[0]).as<float>(), y = value_(op.operands[1]).as<float>();
      auto dx = perturbation(op.operands[0]).as<float>(), dy = perturbation(op.operands[1]).as<float>();
      Tensor t = Tensor::uninitialized(type);
      auto tv = t.as_mut<uint8_t>();
      for (size_t i = 0; i < tv.size(); ++i)
        tv[i] = compares(dir, double(x[i]) + double(dx[i]), double(y[i]) + double(dy[i]));
      keep_if_changed(std::move(t));
      return;
    }
    case OpClass::select: {  // f32 branches: the chosen one's deviation, or the other's value
      if (!any) return;
      const ValueId pred = op.operands[0], t = op.operands[1], f = op.operands[2];
      auto choose = value_(pred).as<uint8_t>(), chosen = perturbation(pred).as<uint8_t>();
      auto tr = value_(t).as<float>(), fr = value_(f).as<float>();
      auto td = perturbation(t).as<float>(), fd = perturbation(f).as<float>();
      Result w = writer();
      for (size_t i = 0; i < w.dv.size(); ++i) {
        if (bool(chosen[i]) == bool(choose[i])) w.dv[i] = chosen[i] ? td[i] : fd[i];
        else w.dv[i] = float(deviation(chosen[i] ? double(tr[i]) + td[i] : double(fr[i]) + fd[i], w.rv[i]));
      }
      out = std::move(w.d);
      return;
    }
    case OpClass::binary: {
      const bool rounds = info.rounding != Rounding::exact;
      if (!any && !rounds) return;
      auto x = value_(op.operands[0]).as<float>(), y = value_(op.operands[1]).as<float>();
      auto dx = perturbation(op.operands[0]).as<float>(), dy = perturbation(op.operands[1]).as<float>();
      Result w = writer();
      for (size_t i = 0; i < w.dv.size(); ++i) {
        const double xi = x[i], yi = y[i], ri = w.rv[i];
        if (!std::isfinite(xi) || !std::isfinite(yi) || !std::isfinite(ri)) {
          w.dv[i] = float(deviation(value_of(op.kind, xi + dx[i], yi + dy[i]), ri));
          continue;
        }
        // Exact operands whose exact result the storage holds: every correct backend has it.
        const bool exact = !rounds || (dx[i] == 0 && dy[i] == 0 && info.rounding == Rounding::correctly_rounded &&
                                       value_of(op.kind, xi, yi) == ri && holds(store.precision, float(ri)));
        const double change = change_of(op.kind, xi, dx[i], yi, dy[i], ri);
        w.put(i, change, exact ? 0 : w.rounding_variance(ri, ri + change));
      }
      out = std::move(w.d);
      return;
    }
    case OpClass::unary: {
      if (op.kind == OpKind::negate) {  // exact, and its deviation that of its operand negated
        if (!any) return;
        Tensor n = shadow_[size_t(op.operands[0])].clone();
        for (float& e : n.as_mut<float>()) e = -e;
        out = std::move(n);
        return;
      }
      auto x = value_(op.operands[0]).as<float>();
      auto dx = perturbation(op.operands[0]).as<float>();
      Result w = writer();
      for (size_t i = 0; i < w.dv.size(); ++i) {
        const double xi = x[i], ri = w.rv[i];
        if (!std::isfinite(xi) || !std::isfinite(ri)) {  // exp(-inf) = 0 in every backend
          w.dv[i] = float(deviation(value_of(op.kind, xi + dx[i], 0), ri));
          continue;
        }
        const double change = dx[i] == 0 ? 0 : change_of(op.kind, xi, dx[i], 0, 0, ri);
        const bool exact = dx[i] == 0 && info.rounding == Rounding::correctly_rounded && value_of(op.kind, xi, 0) == ri &&
                           holds(store.precision, float(ri));
        w.put(i, change, exact ? 0 : w.rounding_variance(ri, ri + change));
      }
      out = std::move(w.d);
      return;
    }
    case OpClass::reduce_precision: {  // exact, given its operand
      if (!any) return;
      auto x = value_(op.operands[0]).as<float>();
      auto dx = shadow_[size_t(op.operands[0])].as<float>();
      const int64_t e = op.integer("exponent_bits"), m = op.integer("mantissa_bits");
      Result w = writer();
      for (size_t i = 0; i < w.dv.size(); ++i)
        w.dv[i] = float(deviation(reduce_precision(float(double(x[i]) + dx[i]), e, m), w.rv[i]));
      out = std::move(w.d);
      return;
    }
    case OpClass::movement: {
      // The deviations move with the elements, by the op's own kernel. An index that moves
      // (never, in an authored program: its indices are positions and tokens) leaves the
      // result without a bound.
      if (!any) return;
      const size_t data = op.kind == OpKind::dynamic_update_slice ? 2
                          : op.kind == OpKind::concatenate       ? op.operands.size()
                                                                 : 1;
      std::vector<const Tensor*> in;
      for (size_t k = 0; k < op.operands.size(); ++k) {
        if (k >= data && perturbed(op.operands[k])) {
          Tensor unknown(type);
          for (float& e : unknown.as_mut<float>()) e = NAN;
          out = std::move(unknown);
          return;
        }
        in.push_back(k < data ? &perturbation(op.operands[k]) : &value_(op.operands[k]));
      }
      out = run_kernel(op, in, type);
      return;
    }
    case OpClass::reduction:
      if (op.word("kind") == "add") {
        out = sum(index, op, writer());
        return;
      }
      if (any) out = extreme(op, writer());
      return;
    case OpClass::contraction: out = sum(index, op, writer()); return;
    case OpClass::collective: break;
  }
  throw Error("no perturbed run of this op");
}

// reduce max or min: nothing rounds; the extreme of the perturbed terms.
Tensor PerturbedRuns::extreme(const Operation& op, Result w) {
  const ValueId a = op.operands[0];
  const Terms t = reduce_terms(op, program_.type(a).shape);
  auto x = value_(a).as<float>(), dx = shadow_[size_t(a)].as<float>();
  const bool max = op.word("kind") == "max";
  for (size_t i = 0; i < w.dv.size(); ++i) {
    double best = max ? -inf : inf;
    for (int64_t step : t.step_l) {
      const size_t at = size_t(t.base_l[i] + step);
      const double v = double(x[at]) + dx[at];
      best = max ? ieee_maximum(best, v) : ieee_minimum(best, v);
    }
    w.dv[i] = float(deviation(best, w.rv[i]));
  }
  return std::move(w.d);
}

namespace {

// Per result element of a reduce(add) or a contraction (`rhs` null for a reduce): the total
// of the terms smaller than u_a times the sum of all terms' magnitudes. The order model
// draws each addition's rounding afresh, but a term below half a spacing of the partial sum
// it meets is lost whole, with the sign of the term, and every such term the same way: an
// order that adds the large terms first (a loop from the latest key down to the first, over
// a softmax's denominator or an attention's p v, the few attended keys first) loses up to
// this total, which no fresh draw per addition reaches. u_a Σ|t| is at least half a spacing
// of any partial sum, in any order.
Tensor absorbed_terms(const Operation& op, const Tensor& lhs, const Tensor* rhs, const TensorType& type) {
  const Terms t = rhs ? dot_terms(op, lhs.shape(), rhs->shape()) : reduce_terms(op, lhs.shape());
  const auto x = lhs.as<float>();
  const std::span<const float> y = rhs ? rhs->as<float>() : std::span<const float>();
  const size_t n = t.step_l.size();
  std::vector<double> magnitude(n);
  Tensor out = Tensor::uninitialized(type);
  auto o = out.as_mut<float>();
  for (size_t i = 0; i < o.size(); ++i) {
    double all = 0;
    for (size_t k = 0; k < n; ++k) {
      const double term = double(x[size_t(t.base_l[i] + t.step_l[k])]) * (rhs ? y[size_t(t.base_r[i] + t.step_r[k])] : 1.0f);
      magnitude[k] = std::abs(term);
      all += magnitude[k];
    }
    double lost = 0;
    for (size_t k = 0; k < n; ++k)
      if (magnitude[k] < accumulation_roundoff * all) lost += magnitude[k];
    o[i] = float(lost);
  }
  return out;
}

// Per result element of a contraction split over `chips`: the sum over chips of its partial
// sum squared, each chip taking a contiguous slice of the terms in row-major order.
Tensor chip_partial_squares(const Operation& op, const Tensor& lhs, const Tensor& rhs, const TensorType& type,
                            int64_t chips) {
  const Terms t = dot_terms(op, lhs.shape(), rhs.shape());
  const auto x = lhs.as<float>(), y = rhs.as<float>();
  const int64_t n = int64_t(t.step_l.size()), slice = (n + chips - 1) / chips;
  Tensor out = Tensor::uninitialized(type);
  auto o = out.as_mut<float>();
  for (size_t i = 0; i < o.size(); ++i) {
    double total = 0;
    for (int64_t begin = 0; begin < n; begin += slice) {
      double partial = 0;
      for (int64_t k = begin; k < std::min(n, begin + slice); ++k)
        partial += double(x[size_t(t.base_l[i] + t.step_l[size_t(k)])]) * y[size_t(t.base_r[i] + t.step_r[size_t(k)])];
      total += partial * partial;
    }
    o[i] = float(total);
  }
  return out;
}

}  // namespace

// reduce add and dot_general: a sum. The terms' changes summed by the reference's own
// kernel (in double): (a + da)(b + db) - ab = a db + da (b + db). And the sum's rounding,
// in an order that does not follow the values: addition j rounds partial sum S_j by up to
// u_a |S_j|, variance u_a^2 / 3 S_j^2, and over orders the mean of S_j^2 is
// (j / n) sum t^2 + (j / n)^2 (sum t)^2 for n nonzero terms; a contraction's products
// add their own roundings, u_a^2 / 3 sum t^2. Split over c chips, a contraction is c
// partial sums, each stored in the precision (u_s) before they are added: u_s^2 / 3 times
// the sum of the partials squared. Which terms a chip takes is the backend's choice, so
// that sum is the larger of the reference's own partials over contiguous slices (a chip's
// heads, or its part of the feed-forward: a trained model's heads can cancel, which no
// average holds) and their mean over orders, sum t^2 + (sum t)^2 / c.
Tensor PerturbedRuns::sum(size_t index, const Operation& op, Result w) {
  const bool dot = op.kind == OpKind::dot_general;
  const TensorType& type = program_.type(op.result);
  if (!sums_[index]) {
    auto term_sums = [&](bool count) {
      std::vector<Tensor> parts;
      for (size_t k = 0; k < (dot ? 2u : 1u); ++k) {
        const Tensor& v = value_(op.operands[k]);
        Tensor s = Tensor::uninitialized(v.type());
        auto x = v.as<float>();
        auto sv = s.as_mut<float>();
        for (size_t i = 0; i < sv.size(); ++i) sv[i] = count ? float(x[i] != 0) : float(double(x[i]) * x[i]);
        parts.push_back(std::move(s));
      }
      std::vector<const Tensor*> in;
      for (const Tensor& part : parts) in.push_back(&part);
      return run_kernel(op, in, type);
    };
    const Tensor* rhs = dot ? &value_(op.operands[1]) : nullptr;
    sums_[index] = std::make_unique<SumTerms>(
        SumTerms{term_sums(false), term_sums(true), absorbed_terms(op, value_(op.operands[0]), rhs, type), {}});
    if (dot && model_.chips > 1 && w.store.unit_roundoff() > accumulation_roundoff)
      sums_[index]->chip_partials = chip_partial_squares(op, value_(op.operands[0]), value_(op.operands[1]), type, model_.chips);
  }
  Tensor change;
  // Adds a part of the terms' change; the first part is the change.
  auto add = [&](Tensor more) {
    if (change.elements() == 0) {
      change = std::move(more);
      return;
    }
    auto c = change.as_mut<float>();
    auto m = more.as<float>();
    for (size_t i = 0; i < c.size(); ++i) c[i] = float(double(c[i]) + m[i]);
  };
  const ValueId a = op.operands[0];
  if (dot) {
    const ValueId b = op.operands[1];
    if (perturbed(b)) add(run_kernel(op, {&value_(a), &shadow_[size_t(b)]}, type));
    const Tensor b_moved = perturbed(b) && (perturbed(a) || meets_[index]) ? moved(b) : Tensor();
    const Tensor& b_now = perturbed(b) ? b_moved : value_(b);  // the weight as the backend has it
    if (perturbed(a)) add(run_kernel(op, {&shadow_[size_t(a)], &b_now}, type));
    if (meets_[index]) {  // the activation's rounding where it meets the weight
      const Tensor noise = met_rounding(*meets_[index], a, mix64(w.g.state, 0x6d656574));
      add(run_kernel(op, {&noise, &b_now}, type));
    }
  } else if (perturbed(a)) {
    add(run_kernel(op, {&shadow_[size_t(a)]}, type));
  }
  auto squares = sums_[index]->squares.as<float>(), count = sums_[index]->count.as<float>(),
       absorbed = sums_[index]->absorbed.as<float>();
  const double u = accumulation_roundoff;
  auto partials = sums_[index]->chip_partials.as<float>();
  const double us = w.store.unit_roundoff();
  for (size_t i = 0; i < w.dv.size(); ++i) {
    const double c = change.elements() ? double(change.as<float>()[i]) : 0.0, ri = w.rv[i];
    if (!std::isfinite(ri)) {
      w.dv[i] = c == 0 ? 0.0f : NAN;
      continue;
    }
    const double n = std::max(double(count[i]) - 1, 0.0), s2 = squares[i];
    const double order = u * u / 3 * (n / 2 * s2 + n / 3 * ri * ri + (dot ? s2 : 0));
    const double split =
        partials.empty() ? 0 : us * us / 3 * std::max(double(partials[i]), s2 + ri * ri / double(model_.chips));
    const double lost = absorbed[i];  // uniform within the terms an order may lose
    w.put(i, c, order + split + w.rounding_variance(ri, ri + c), lost * lost / 3);
  }
  return std::move(w.d);
}

// The rounding of a contraction's activation as the backend converts it to meet a stored
// weight, drawn at the run's amplification around the value the backend has (x + dx): an
// f16 rounding per element, or per block of 8-bit values an error within half the block's
// scale d = max |x| / 127 per element, and, with the scale stored in f16, the scale's own
// rounding (relative, up to 2^-11) common to the block.
Tensor PerturbedRuns::met_rounding(const ActivationRounding& how, ValueId activation, uint64_t stream) {
  const TensorType& type = program_.type(activation);
  auto x = value_(activation).as<float>();
  const bool deviates = perturbed(activation);
  auto dx = deviates ? shadow_[size_t(activation)].as<float>() : std::span<const float>();
  Tensor noise = Tensor::uninitialized(type);
  auto n = noise.as_mut<float>();
  SplitMix64 g{stream};
  const double scale = amplification_ / std::sqrt(3.0);  // uniform within h: h / sqrt(3)
  auto at = [&](size_t i) { return double(x[i]) + (deviates ? double(dx[i]) : 0.0); };
  if (how.kind == ActivationRounding::Kind::f16) {
    const HalfSpacing half(precision_info(Precision::f16));
    for (size_t i = 0; i < n.size(); ++i) {
      const double p = at(i);
      n[i] = holds(Precision::f16, float(p)) ? 0.0f : float(scale * half(p) * g.normal());
    }
    return noise;
  }
  const int64_t row = type.shape.empty() ? 1 : type.shape.back(), block = how.block;
  if (block <= 0 || row % block != 0)
    throw Error(fmt::format("%{}: rows of {} values are not whole blocks of {}", program_.name(activation), row, block));
  for (size_t begin = 0; begin < n.size(); begin += size_t(block)) {
    double amax = 0;
    for (size_t i = begin; i < begin + size_t(block); ++i) amax = std::max(amax, std::abs(at(i)));
    const double half_step = amax / 127 / 2;
    const double common = how.f16_scale ? scale * 0x1p-11 * g.normal() : 0.0;  // the scale's relative rounding
    for (size_t i = begin; i < begin + size_t(block); ++i)
      n[i] = float(scale * half_step * g.normal() + common * at(i));
  }
  return noise;
}

}  // namespace cutcheck
