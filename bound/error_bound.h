// Error bounds: for every f32 output element of a program, how far the value a correct
// backend computes may lie from the reference's. "Correct" means: the program's
// semantics, every activation stored in the declared precision (rounded once per op), sums
// accumulated in f32 or better in any order, with or without fused multiply-adds, and
// elementary functions (exp, log, rsqrt, ...) within a few units in the last place.
//
// The bound of an element comes from perturbed runs (bound/perturbed_runs.h): the program
// run again with every such rounding drawn at random, at `amplification` times its size.
// It is the largest deviation any run shows, and at least `spread` root-mean-square
// deviations of the runs. The runs follow the real computation, so the bound follows each
// element's own conditioning on the weights at hand: tight where errors cancel (a softmax,
// a norm), wide where they do not, and wide where an amplified run crossed a
// discontinuity a backend may cross too. docs/numerics.md derives it and measures how
// sound and how sharp it is.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "bound/off_span.h"
#include "bound/perturbed_runs.h"
#include "core/tensor.h"
#include "program/program.h"

namespace cutcheck {

// The runs' deviations of one tensor, gathered run by run, and the bound they give.
class Allowance {
 public:
  explicit Allowance(const BoundModel& model) : model_(model) {}
  // Run r's deviations (f32, the same shape every run), in any order of the runs; an
  // explorer's (r >= model.total_runs()) once the others are in.
  void add(int r, const Tensor& deviation);
  // Whether an element does not follow its errors smoothly (the probes disagree with
  // their twins): explorers are then worth running. Once complete().
  bool chaotic() const;
  // Per element: max(spread * rms, max |deviation|) over the runs; where the probes show
  // the element does not follow its errors smoothly, at least chaos_margin times the
  // largest deviation of any such element of the tensor, and in a tensor with such an
  // element, every element at least chaos_margin times its own largest deviation;
  // infinity where a run's deviation was not finite (it left the precision's range, or
  // became NaN).
  Tensor bound() const;
  bool complete() const { return added_ >= model_.total_runs(); }

 private:
  BoundModel model_;
  Tensor squares_, largest_;          // over the runs
  Tensor twin_squares_, mismatch_;    // over the probes: sum d^2 of their twins, sum (d - 2 p)^2
  std::vector<Tensor> twins_, probes_;  // the first runs' deviations and the probes', until paired
  int added_ = 0;
  void pair(size_t k);
  bool chaotic(size_t i) const;
};

class ErrorBounds {
 public:
  // `value` gives every value of `program` as one run of the reference computed it.
  // Throws NotYet for programs with collectives: bound the unsplit program instead, with
  // the model's chips (a split is one more summation order of the same sums, and in a
  // precision below f32 the chips' partial sums are stored in it).
  ErrorBounds(const Program& program, const std::function<const Tensor&(ValueId)>& value, const BoundModel& model);

  // The bounds of the program's f32 outputs, by output name: f32 tensors of their shapes,
  // the largest |backend - reference| a correct backend may show (infinity: no bound).
  const TensorMap& outputs() const { return outputs_; }
  // The outputs that are products with a weight of more rows than columns (the logits), by
  // name: their part off the weight's span, bounded from the same runs (bound/off_span.h).
  const std::map<std::string, SpanCheck>& spans() const { return spans_; }

 private:
  TensorMap outputs_;
  std::map<std::string, SpanCheck> spans_;
};

}  // namespace cutcheck
