#include "harness/tolerance.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

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

namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0 || (std::isnan(a) && std::isnan(b)); }

// An element's value in a message: NaN spelt as such, whatever its sign and payload.
std::string nan_text(float v) { return std::isnan(v) ? "NaN" : fmt::format("{}", v); }

OutputError compare_floats(const std::string& name, const Tensor& want, const Tensor* bound, const Tensor& got,
                           const Tolerance& tol) {
  OutputError e;
  e.name = name;
  auto w = want.as<float>(), g = got.as<float>();
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double b = bound ? double(bound->as<float>()[i]) : 0;
    const double allowed = tol.allowed(w[i], b);
    if (!(allowed < INFINITY)) ++e.unbounded;
    if (same_bits(w[i], g[i])) continue;
    const double d = std::abs(double(g[i]) - double(w[i]));
    bool ok = std::isfinite(w[i]) && std::isfinite(g[i]) && d <= allowed;
    if (!(allowed < INFINITY)) ok = true;  // no bound: nothing to hold the element to
    if (std::isfinite(d)) {
      e.max_abs = std::max(e.max_abs, d);
      e.max_rel = std::max(e.max_rel, d / std::max(std::abs(double(w[i])), tol.bounded() ? 1e-30 : tol.atol));
      err2 += d * d;
      ref2 += double(w[i]) * double(w[i]);
      if (allowed < INFINITY) e.headroom = std::max(e.headroom, allowed > 0 ? d / allowed : INFINITY);
    } else if (!ok) {
      e.headroom = INFINITY;
    }
    if (!ok) e.nans += std::isnan(g[i]);
    if (!ok && e.mismatches++ == 0) {
      const std::string is = fmt::format("'{}' element {} is {}, expected {}", name, i, nan_text(g[i]), nan_text(w[i]));
      if (!tol.bounded()) e.first = fmt::format("{} ({})", is, tol.str());
      else if (std::isnan(d)) e.first = fmt::format("{} within its bound {:.3g}", is, allowed);  // no "x over" to say
      else e.first = fmt::format("{} within its bound {:.3g} ({:.4g} x over)", is, allowed, d / allowed);
    }
  }
  if (e.nans) e.headroom = NAN;
  e.nmse = ref2 > 0 ? err2 / ref2 : err2;
  if (!tol.bounded() && e.nmse > tol.nmse && e.mismatches++ == 0)
    e.first = fmt::format("'{}' has NMSE {:.3g}, over {}", name, e.nmse, tol.nmse);
  return e;
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
        near_tie = tol.bounded() ? double(row[a]) - double(row[b]) <= allowed(a) + allowed(b)
                                 : std::abs(double(row[b]) - double(row[a])) <= allowed(a);
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
