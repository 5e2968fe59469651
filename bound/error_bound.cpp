#include "bound/error_bound.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace cutcheck {

void Allowance::add(int r, const Tensor& deviation) {
  if (added_ == 0) {
    for (Tensor* t : {&squares_, &largest_, &twin_squares_, &mismatch_}) *t = Tensor(deviation.type());
    twins_.resize(size_t(model_.probes));
    probes_.resize(size_t(model_.probes));
  } else if (deviation.type() != squares_.type()) {
    throw Error("the runs' deviations differ in shape");
  }
  ++added_;
  const bool explorer = r >= model_.total_runs();  // only its largest deviation counts
  if (explorer && added_ <= model_.total_runs()) throw Error("an explorer's deviations came before the first runs'");
  if (model_.is_probe(r)) {  // paired with its twin once both are here
    const size_t k = size_t(r - model_.runs);
    probes_[k] = deviation;
    if (twins_[k].elements()) pair(k);
    return;
  }
  auto d = deviation.as<float>();
  auto s = squares_.as_mut<float>(), m = largest_.as_mut<float>();
  for (size_t i = 0; i < d.size(); ++i) {
    const double e = std::abs(double(d[i]));  // NaN stays NaN: the bound is then infinite
    if (!explorer) s[i] = float(double(s[i]) + e * e);
    m[i] = std::isnan(e) || std::isnan(m[i]) ? NAN : std::max(m[i], float(e));
  }
  if (r < model_.probes) {
    twins_[size_t(r)] = deviation;
    if (probes_[size_t(r)].elements()) pair(size_t(r));
  }
}

void Allowance::pair(size_t k) {
  auto d = twins_[k].as<float>(), p = probes_[k].as<float>();
  auto ts = twin_squares_.as_mut<float>(), mm = mismatch_.as_mut<float>();
  for (size_t i = 0; i < d.size(); ++i) {
    const double gap = double(d[i]) - 2 * double(p[i]);
    ts[i] = float(double(ts[i]) + double(d[i]) * d[i]);
    mm[i] = float(double(mm[i]) + gap * gap);
  }
  twins_[k] = probes_[k] = Tensor();
}

bool Allowance::chaotic(size_t i) const {
  const double mismatch = mismatch_.as<float>()[i], twins = twin_squares_.as<float>()[i];
  return mismatch > model_.nonlinearity * model_.nonlinearity * twins;
}

bool Allowance::chaotic() const {
  if (!complete()) throw Error("an allowance needs every run");
  for (size_t i = 0; i < size_t(squares_.elements()); ++i)
    if (chaotic(i)) return true;
  return false;
}

Tensor Allowance::bound() const {
  if (!complete()) throw Error("an allowance needs every run");
  Tensor out(squares_.type());
  auto s = squares_.as<float>(), m = largest_.as<float>();
  auto b = out.as_mut<float>();
  // The largest deviation among the elements that do not follow their errors smoothly.
  double pooled = 0;
  for (size_t i = 0; i < b.size(); ++i)
    if (chaotic(i)) pooled = std::max(pooled, double(m[i]));
  for (size_t i = 0; i < b.size(); ++i) {
    double bound = std::max(model_.spread * std::sqrt(double(s[i]) / model_.runs), double(m[i]));
    if (chaotic(i)) bound = std::max(bound, model_.chaos_margin * pooled);
    // A tensor with a chaotic element is computed through a flip (an attention choosing
    // between keys); a correct backend may make another flip than the runs found, which
    // moves the elements that looked smooth by more than their own runs did.
    if (pooled > 0) bound = std::max(bound, model_.chaos_margin * double(m[i]));
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
  std::map<std::string, Allowance> allowances, off_span;
  for (const OutputDecl& o : program.outputs)
    if (auto w = span_weight(program, o.name)) {
      spans_[o.name].span = std::make_shared<const OffSpan>(value(w->value), w->contracting);
      off_span.try_emplace(o.name, model);
    }
  auto add = [&](int r) {
    for (const auto& [name, deviation] : runs.run(r)) {
      allowances.try_emplace(name, model).first->second.add(r, deviation);
      if (auto s = spans_.find(name); s != spans_.end()) off_span.at(name).add(r, s->second.span->project(deviation));
    }
  };
  for (int r = 0; r < model.total_runs(); ++r) add(r);
  auto chaotic = [](const auto& a) { return a.second.chaotic(); };
  if (std::any_of(allowances.begin(), allowances.end(), chaotic) || std::any_of(off_span.begin(), off_span.end(), chaotic))
    for (int r = model.total_runs(); r < model.total_runs() + model.explorers; ++r) add(r);
  for (const auto& [name, allowance] : allowances) outputs_.insert_or_assign(name, allowance.bound());
  for (auto& [name, check] : spans_) check.bound = off_span.at(name).bound();
}

}  // namespace cutcheck
