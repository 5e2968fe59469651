#include "harness/tolerance.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace cutcheck {

bool Tolerance::close(float want, float got) const {
  if (std::memcmp(&want, &got, 4) == 0 || (std::isnan(want) && std::isnan(got))) return true;
  if (!std::isfinite(want) || !std::isfinite(got)) return false;
  return std::abs(double(got) - double(want)) <= atol + rtol * std::abs(double(want));
}

std::string Tolerance::str() const { return fmt::format("atol={} rtol={} nmse={}", atol, rtol, nmse); }

namespace {

OutputError compare_floats(const std::string& name, const Tensor& want, const Tensor& got, const Tolerance& tol) {
  OutputError e;
  e.name = name;
  auto w = want.as<float>(), g = got.as<float>();
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (!tol.close(w[i], g[i])) {
      if (e.mismatches++ == 0)
        e.first = fmt::format("'{}' element {} is {}, expected {} ({})", name, i, g[i], w[i], tol.str());
    }
    if (std::isfinite(w[i]) && std::isfinite(g[i])) {
      double d = std::abs(double(g[i]) - double(w[i]));
      e.max_abs = std::max(e.max_abs, d);
      e.max_rel = std::max(e.max_rel, d / std::max(std::abs(double(w[i])), tol.atol));
      err2 += d * d;
      ref2 += double(w[i]) * double(w[i]);
    }
  }
  e.nmse = ref2 > 0 ? err2 / ref2 : err2;
  if (e.nmse > tol.nmse && e.mismatches++ == 0)
    e.first = fmt::format("'{}' has NMSE {:.3g}, over {}", name, e.nmse, tol.nmse);
  return e;
}

// `next` may differ where the expected logits rate the other pick within the tolerance.
OutputError compare_next(const Tensor& want, const Tensor& got, const Tensor* logits, const Tolerance& tol) {
  OutputError e;
  e.name = "next";
  auto w = want.as<int32_t>(), g = got.as<int32_t>();
  const size_t vocab = logits && !w.empty() ? size_t(logits->elements()) / w.size() : 0;
  for (size_t r = 0; r < w.size(); ++r) {
    if (w[r] == g[r]) continue;
    bool near_tie = false;
    if (logits && g[r] >= 0 && size_t(g[r]) < vocab) {
      auto row = logits->as<float>().subspan(r * vocab, vocab);
      near_tie = tol.close(row[size_t(w[r])], row[size_t(g[r])]);
    }
    if (!near_tie && e.mismatches++ == 0)
      e.first = fmt::format("'next' element {} is {}, expected {} (not a near tie under {})", r, g[r], w[r], tol.str());
  }
  return e;
}

}  // namespace

Comparison compare(const TensorMap& want, const TensorMap& got, const Tolerance& tolerance) {
  Comparison c;
  auto fail = [&](const std::string& why) {
    if (c.ok) c.failure = why;
    c.ok = false;
  };
  for (const auto& [name, g] : got)
    if (!want.count(name)) fail(fmt::format("'{}' is not an expected output", name));
  for (const auto& [name, w] : want) {
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
      e = compare_floats(name, w, g, tolerance);
    } else if (name == "next") {
      auto logits = want.find("logits");
      e = compare_next(w, g, logits == want.end() ? nullptr : &logits->second, tolerance);
    } else {
      e.name = name;
      if (!w.same_bits(g)) {
        e.mismatches = 1;
        e.first = fmt::format("'{}' differs (integers must match exactly)", name);
      }
    }
    if (e.mismatches) fail(fmt::format("{}{}", e.first, e.mismatches > 1 ? fmt::format(", and {} more", e.mismatches - 1) : ""));
    c.outputs.push_back(std::move(e));
  }
  return c;
}

}  // namespace cutcheck
