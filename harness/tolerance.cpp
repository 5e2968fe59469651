#include "harness/tolerance.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "bound/log_softmax.h"
#include "core/error.h"

namespace cutcheck {

Tolerance Tolerance::bound(Precision precision) {
  Tolerance t;
  t.policy = Policy::bound;
  t.precision = precision;
  // docs/numerics.md: the runs carry their own underflow; no floor beyond it.
  t.floor = 0;
  return t;
}

Tolerance Tolerance::parse(const std::string& policy, Precision precision) {
  if (policy == "bound") return bound(precision);
  if (policy == "fixed-f32") return fixed_f32();
  if (policy == "fixed-bf16") return fixed_bf16();
  throw Error(fmt::format("unknown tolerance '{}'; the tolerances are bound, fixed-f32 and fixed-bf16", policy));
}

double Tolerance::allowed(double want, double bound) const {
  if (policy == Policy::fixed) return atol + rtol * std::abs(want);
  return bound + floor;
}

std::string Tolerance::str() const {
  if (policy == Policy::fixed) return fmt::format("fixed atol={} rtol={} nmse={}", atol, rtol, nmse);
  const BoundModel m = model();
  return fmt::format("bound {} ({} runs at {}x, spread {}{})", precision_info(precision).name, m.runs, m.amplification,
                     m.spread, floor ? fmt::format(", floor {}", floor) : "");
}

ElementCheck ErrorTally::add(double want, double got, double bound) {
  ElementCheck k;
  k.allowed = tolerance_.allowed(want, bound);
  const bool bounded = k.allowed < INFINITY;
  if (!bounded) ++e_.unbounded;
  if (std::isfinite(want)) ref2_ += want * want;  // NMSE's denominator: the whole output
  // Equal bits: for f32 values widened to double, equal values of one sign, or two NaNs.
  k.same = (got == want && std::signbit(got) == std::signbit(want)) || (std::isnan(got) && std::isnan(want));
  if (k.same) return k;
  k.diff = std::abs(got - want);
  k.ok = !bounded || (std::isfinite(want) && std::isfinite(got) && k.diff <= k.allowed);  // no bound: nothing to hold it to
  if (std::isfinite(k.diff)) {
    e_.max_abs = std::max(e_.max_abs, k.diff);
    e_.max_rel = std::max(e_.max_rel, k.diff / std::max(std::abs(want), tolerance_.bounded() ? 1e-30 : tolerance_.atol));
    err2_ += k.diff * k.diff;
    if (bounded) e_.headroom = std::max(e_.headroom, k.allowed > 0 ? k.diff / k.allowed : INFINITY);
  } else if (!k.ok) {
    e_.headroom = INFINITY;
  }
  if (!k.ok) {
    e_.nans += std::isnan(got);
    ++e_.mismatches;
  }
  return k;
}

OutputError ErrorTally::finish() {
  if (e_.nans) e_.headroom = NAN;
  e_.nmse = ref2_ > 0 ? err2_ / ref2_ : err2_;
  if (!tolerance_.bounded() && e_.nmse > tolerance_.nmse && e_.mismatches++ == 0)
    e_.first = fmt::format("'{}' has NMSE {:.3g}, over {}", e_.name, e_.nmse, tolerance_.nmse);
  return e_;
}

namespace {

// An element's value in a message: NaN spelt as such, whatever its sign and payload.
std::string nan_text(float v) { return std::isnan(v) ? "NaN" : fmt::format("{}", v); }

OutputError compare_floats(const std::string& name, const Tensor& want, const Tensor* bound, const Tensor& got,
                           const Tolerance& tol) {
  ErrorTally tally(name, tol);
  auto w = want.as<float>(), g = got.as<float>();
  for (size_t i = 0; i < w.size(); ++i) {
    const ElementCheck k = tally.add(w[i], g[i], bound ? double(bound->as<float>()[i]) : 0);
    if (k.ok || tally.error().mismatches > 1) continue;
    const std::string is = fmt::format("'{}' element {} is {}, expected {}", name, i, nan_text(g[i]), nan_text(w[i]));
    std::string& first = tally.error().first;
    if (!tol.bounded()) first = fmt::format("{} ({})", is, tol.str());
    else if (std::isnan(k.diff)) first = fmt::format("{} within its bound {:.3g}", is, k.allowed);  // no "x over" to say
    else first = fmt::format("{} within its bound {:.3g} ({:.4g} x over)", is, k.allowed, k.diff / k.allowed);
  }
  return tally.finish();
}

// The part of got - want off the span of the product's weight, element by element against
// its bound; its failures and headroom count as the output's.
void compare_off_span(OutputError& e, const SpanCheck& check, const Tensor& want, const Tensor& got,
                      const Tolerance& tol) {
  ErrorTally tally(e.name, tol);
  const Tensor off = check.span->project_difference(got, want);
  auto d = off.as<float>(), b = check.bound.as<float>();
  const size_t width = size_t(check.span->width());
  for (size_t i = 0; i < d.size(); ++i) {
    const ElementCheck k = tally.add(0, d[i], b[i]);
    if (k.ok || tally.error().mismatches > 1) continue;
    tally.error().first = fmt::format(
        "'{}' row {} is off the span of the weight it is a product with: element {} by {:.3g}, over its bound {:.3g} "
        "({:.4g} x over; a logit wrong alone, not through the layers)",
        e.name, i / width, i % width, double(d[i]), k.allowed, k.diff / k.allowed);
  }
  const OutputError& o = tally.error();
  if (o.mismatches && !e.mismatches) e.first = o.first;
  e.mismatches += o.mismatches;
  e.nans += o.nans;
  e.off_span_headroom = o.headroom;
  e.headroom = std::isnan(e.headroom) || std::isnan(o.headroom) ? NAN : std::max(e.headroom, o.headroom);
}

// `next` may differ where the expected logits rate the other pick within the tolerance:
// the two logits may swap order in a correct backend.
OutputError compare_next(const Tensor& want, const Tensor& got, const Tensor* logits, const Tensor* bounds,
                         const Tolerance& tol) {
  OutputError e;
  e.name = "next";
  auto w = want.as<int32_t>(), g = got.as<int32_t>();
  const size_t vocab = logits && !w.empty() ? size_t(logits->elements()) / w.size() : 0;
  for (size_t r = 0; r < w.size(); ++r) {
    if (w[r] == g[r]) continue;
    bool near_tie = false;
    if (logits) {
      auto row = logits->as<float>().subspan(r * vocab, vocab);
      auto allowed = [&](size_t j) {
        return tol.allowed(row[j], tol.bounded() ? bounds->as<float>()[r * vocab + j] : 0);
      };
      // A row with a logit that has no bound (a correct f16 backend may overflow there, and
      // its NaNs make the program's arg-max the vocabulary size) holds no pick.
      bool unbounded = false;
      for (size_t j = 0; tol.bounded() && j < vocab && !unbounded; ++j) unbounded = !(allowed(j) < INFINITY);
      const size_t a = size_t(w[r]), b = size_t(g[r]);
      if (unbounded) {
        near_tie = g[r] >= 0 && b <= vocab;
      } else if (g[r] >= 0 && b < vocab && w[r] >= 0 && a < vocab) {
        // Both picks must be tokens (an all-NaN row makes the reference's pick the vocabulary size).
        near_tie = tol.bounded() ? cutcheck::near_tie(double(row[a]) - double(row[b]), allowed(a) + allowed(b))
                                 : cutcheck::near_tie(std::abs(double(row[b]) - double(row[a])), allowed(a));
      }
    }
    if (!near_tie && e.mismatches++ == 0)
      e.first = fmt::format("'next' element {} is {}, expected {} (not a near tie under {})", r, g[r], w[r], tol.str());
  }
  return e;
}

}  // namespace

Comparison compare(const Expected& want, const TensorMap& got, const Tolerance& tolerance) {
  Comparison c;
  auto fail = [&](const std::string& why) {
    if (c.ok) c.failure = why;
    c.ok = false;
  };
  auto bound_of = [&](const std::string& name) -> const Tensor* {
    if (!tolerance.bounded()) return nullptr;
    auto it = want.bounds.find(name);
    if (it == want.bounds.end() || it->second.type() != TensorType{DType::f32, want.values.at(name).shape()})
      throw Error(fmt::format("no error bound for output '{}': the bound tolerance needs one per element", name));
    return &it->second;
  };
  for (const auto& [name, g] : got)
    if (!want.values.count(name)) fail(fmt::format("'{}' is not an expected output", name));
  for (const auto& [name, w] : want.values) {
    auto it = got.find(name);
    if (it == got.end()) {
      fail(fmt::format("'{}' is missing", name));
      continue;
    }
    const Tensor& g = it->second;
    if (g.type() != w.type()) {
      fail(fmt::format("'{}' is {}, expected {}", name, g.type().str(), w.type().str()));
      continue;
    }
    OutputError e;
    if (w.dtype() == DType::f32) {
      e = compare_floats(name, w, bound_of(name), g, tolerance);
      if (auto s = want.spans.find(name); tolerance.bounded() && s != want.spans.end())
        compare_off_span(e, s->second, w, g, tolerance);
    } else if (name == "next") {
      auto logits = want.values.find("logits");
      const bool have = logits != want.values.end();
      e = compare_next(w, g, have ? &logits->second : nullptr, have ? bound_of("logits") : nullptr, tolerance);
    } else {
      e.name = name;
      if (!w.same_bits(g)) {
        e.mismatches = 1;
        e.first = fmt::format("'{}' differs (integers must match exactly)", name);
      }
    }
    if (e.mismatches)
      fail(fmt::format("{}{}{}", e.first, e.mismatches > 1 ? fmt::format(", and {} more", e.mismatches - 1) : "",
                       e.nans && e.mismatches > 1 ? fmt::format(" ({} of them NaN)", e.nans) : ""));
    c.outputs.push_back(std::move(e));
  }
  return c;
}

}  // namespace cutcheck
