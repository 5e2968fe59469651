#include "bound/error_bound.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace cutcheck {

void Allowance::add(const Tensor& deviation) {
  if (runs_ == 0) {
    squares_ = Tensor(deviation.type());
    largest_ = Tensor(deviation.type());
  } else if (deviation.type() != squares_.type()) {
    throw Error("the runs' deviations differ in shape");
  }
  auto d = deviation.as<float>();
  auto s = squares_.as_mut<float>(), m = largest_.as_mut<float>();
  for (size_t i = 0; i < d.size(); ++i) {
    const double e = std::abs(double(d[i]));  // NaN stays NaN: the bound is then infinite
    s[i] = float(double(s[i]) + e * e);
    m[i] = std::isnan(e) || std::isnan(m[i]) ? NAN : std::max(m[i], float(e));
  }
  ++runs_;
}

Tensor Allowance::bound(const BoundModel& model) const {
  if (runs_ == 0) throw Error("an allowance of no runs");
  Tensor out(squares_.type());
  auto s = squares_.as<float>(), m = largest_.as<float>();
  auto b = out.as_mut<float>();
  for (size_t i = 0; i < b.size(); ++i) {
    const double largest = m[i], rms = std::sqrt(double(s[i]) / runs_);
    const double bound = std::max(model.spread * rms, largest);
    // Rounded up as it is stored, so that storing never makes it smaller.
    float f = float(bound);
    if (double(f) < bound) f = std::nextafter(f, INFINITY);
    b[i] = std::isfinite(bound) ? f : INFINITY;
  }
  return out;
}

ErrorBounds::ErrorBounds(const Program& program, const std::function<const Tensor&(ValueId)>& value,
                         const BoundModel& model) {
  PerturbedRuns runs(program, value, model);
  std::map<std::string, Allowance> allowances;
  for (int r = 0; r < model.runs; ++r)
    for (const auto& [name, deviation] : runs.run(r)) allowances[name].add(deviation);
  for (const auto& [name, allowance] : allowances) outputs_.insert_or_assign(name, allowance.bound(model));
}

}  // namespace cutcheck
