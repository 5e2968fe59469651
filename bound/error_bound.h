// Error bounds: for every element of every value of a program, how far the value a
// correct backend computes may lie from the reference's. "Correct" means: the program's
// semantics, every value stored in the declared precision (rounded once per op), sums
// accumulated in f32 or better in any order, with or without fused multiply-adds, and
// elementary functions (exp, log, rsqrt, ...) within a few units in the last place.
//
// The bound is a running error bound: each op passes on the bounds of its operands and
// adds its own rounding. Element-wise ops pass them on exactly (interval arithmetic over
// the operands' ranges); sums add the errors of their terms, and their own roundings, in
// quadrature, as independent errors add up: a bound there is `sigmas` standard deviations.
// Summing the worst cases instead compounds by about
// sqrt(n) per contraction, and after a layer or two says nothing (docs/numerics.md has the
// measurement and derives the rule of every op). The pass reads the values a reference run left behind; it
// never runs unless asked for, so the interpreter's hot path does not pay for it.
#pragma once

#include <functional>
#include <vector>

#include "bound/precision.h"
#include "core/tensor.h"
#include "program/program.h"

namespace cutcheck {

struct BoundModel {
  Precision precision = Precision::f32;
  // How many f32 units in the last place an elementary function may be off before its
  // result is stored in the declared precision: exp, log, rsqrt, logistic, power, sine,
  // cosine.
  double function_ulps = 4;
  // Independent errors (the roundings of a sum, the errors of the terms summed) add up in
  // quadrature; a bound is this many of their standard deviations.
  double sigmas = 5;
};

class ErrorBounds {
 public:
  // `value` gives every value of `program` as one run of the reference computed it.
  // Throws NotYet for programs with collectives: bound the unsplit program instead (a
  // split is one more summation order of the same sums).
  ErrorBounds(const Program& program, const std::function<const Tensor&(ValueId)>& value, const BoundModel& model);

  // The bound of a value, an f32 tensor of its shape. f32 values: the largest
  // |backend - reference| a correct backend may show, per element (infinity: no bound).
  // i32 and i1 values: 0 where every correct backend computes the reference's value,
  // infinity where it may not (a comparison of values within each other's bounds).
  Tensor of(ValueId v) const;
  // The bounds of the program's outputs, by output name.
  TensorMap outputs() const;

  // Per element: abs + rel * |value| + floor (rel only at finite values). Leaves carry
  // their bound this way, so that weights are never copied to say "u times the weight".
  struct Bound {
    Tensor abs;  // empty: 0 everywhere
    double rel = 0, floor = 0;
    bool zero() const { return abs.elements() == 0 && rel == 0 && floor == 0; }
  };

 private:
  const Program& program_;
  std::function<const Tensor&(ValueId)> value_;
  std::vector<Bound> bounds_;
};

}  // namespace cutcheck
