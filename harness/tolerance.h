// Comparing outputs with what the reference expects: the one rule that the oracle and tp
// properties and conformance all apply. docs/numerics.md explains both policies.
//
// The default policy follows each element: the reference computes, beside every output
// element, how far a correct backend computing in the declared precision may land from
// it, from runs of the program with every rounding drawn at random (bound/error_bound.h),
// and an element passes when |got - want| <= bound + floor.
// The fixed policies (one atol and rtol for every element) stay for comparison.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bound/error_bound.h"
#include "core/tensor.h"

namespace cutcheck {

struct Tolerance {
  enum class Policy { bound, fixed };
  Policy policy = Policy::bound;
  // bound: what the backend computes in, and |got - want| <= bound + floor.
  Precision precision = Precision::f32;
  double floor = 0;
  // fixed: |got - want| <= atol + rtol * |want|, and per output sum (got - want)^2 / sum want^2 <= nmse.
  double atol = 0, rtol = 0, nmse = 0;

  static Tolerance bound(Precision precision);
  static Tolerance fixed_f32() { return {Policy::fixed, Precision::f32, 0, 1e-4, 1e-4, 1e-8}; }
  static Tolerance fixed_bf16() { return {Policy::fixed, Precision::bf16, 0, 0.25, 0.25, 1e-2}; }
  // "bound" (with `precision`), "fixed-f32" or "fixed-bf16"; throws Error naming them.
  static Tolerance parse(const std::string& policy, Precision precision);

  bool bounded() const { return policy == Policy::bound; }
  // The model of a correct backend in the declared precision (runs, amplification, spread:
  // bound/perturbed_runs.h).
  BoundModel model() const {
    BoundModel m;
    m.precision = precision;
    return m;
  }
  // How far `got` may be from `want` where the reference's bound is `bound` (ignored by
  // the fixed policies).
  double allowed(double want, double bound) const;
  std::string str() const;  // "bound f32 (16 runs at 4x, spread 3)", "fixed atol=0.0001 rtol=0.0001 nmse=1e-08"
};

// What the reference expects of a backend: its outputs and, for the bound policy, the
// bound of every f32 output element (bound/error_bound.h) and, for the outputs that are
// products with a weight of more rows than columns (the logits), the bound of their
// deviation's part off that weight's span (bound/off_span.h).
struct Expected {
  TensorMap values;
  TensorMap bounds;
  std::map<std::string, SpanCheck> spans = {};
};

struct OutputError {
  std::string name;
  double max_abs = 0;   // largest |got - want| over finite elements
  double max_rel = 0;   // largest |got - want| / max(|want|, 1e-30)
  double nmse = 0;      // sum (got - want)^2 / sum want^2
  // The largest |got - want| / allowed over the elements: <= 1 passes. How close the
  // output came to failing, or how far past it went; NaN when an element is NaN where
  // the reference has a number (no distance says how far off that is).
  double headroom = 0;
  double off_span_headroom = 0;  // of the part off the span of its weight (the logits'), where checked
  size_t unbounded = 0;  // elements whose bound is infinite: any value passes there
  size_t mismatches = 0;
  size_t nans = 0;       // of the mismatches, elements that are NaN where the reference has a number
  std::string first;     // the first element outside the tolerance, described
};

// One element compared.
struct ElementCheck {
  bool same = false;   // equal bits, or NaN against NaN: passes, and counts in no figure
  bool ok = true;      // within the tolerance
  double diff = 0;     // |got - want|
  double allowed = 0;  // Tolerance::allowed(want, bound); infinite: any value passes
};

// Folds compared elements into an OutputError, one at a time: the one element rule every
// judge applies (f32 outputs in compare(), an engine's log-probabilities in
// engine/engine_judge.cpp). A failing element counts as a mismatch; describing it (the
// OutputError's `first`) is the caller's, who knows where the element sits.
class ErrorTally {
 public:
  ErrorTally(std::string name, const Tolerance& tolerance) : tolerance_(tolerance) { e_.name = std::move(name); }
  // `bound`: the reference's bound of the element (ignored by the fixed policies).
  ElementCheck add(double want, double got, double bound);
  OutputError& error() { return e_; }
  // The figures with NMSE, and under a fixed policy its limit (a mismatch past it).
  OutputError finish();

 private:
  const Tolerance& tolerance_;
  OutputError e_;
  double err2_ = 0, ref2_ = 0;
};

struct Comparison {
  bool ok = true;
  std::vector<OutputError> outputs;
  std::string failure;  // the first failure, described; empty when ok
};

// f32 outputs within the tolerance element by element (and in NMSE for the fixed
// policies), and under the bound policy the outputs with a span check off the span too,
// element by element of the projected difference; equal bits and NaN against NaN always pass. Integer outputs exactly, except
// that `next` may pick another token where the expected logits rate it within the
// tolerance of the expected pick (a near tie). Names and types must match exactly. The
// bound policy needs `want.bounds` for every f32 output.
Comparison compare(const Expected& want, const TensorMap& got, const Tolerance& tolerance);

}  // namespace cutcheck
