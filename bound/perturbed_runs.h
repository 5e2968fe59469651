// Perturbed runs: the program run again with every rounding a correct backend makes drawn
// at random, so that how far such a backend may land from the reference is measured on
// the values at hand rather than bounded op by op. A run computes, beside each value of a
// reference run, its deviation: what the value becomes when each op's result is perturbed
// by a random rounding error of the size a correct backend's has (its storage precision,
// its order of summation, its elementary functions, and the reference's own rounding),
// with the effect of every earlier perturbation carried through the real computation,
// nonlinearities and all: a softmax that saturates, an attention that flips to another
// key, a mask that moves. `Allowance` (bound/error_bound.h) turns the runs into a tolerance;
// docs/numerics.md derives the model and why it holds.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bound/precision.h"
#include "core/tensor.h"
#include "program/program.h"

namespace cutcheck {

// How a backend rounds the activation it multiplies by a weight stored in a type of its own
// (llama.cpp's CPU matrix products convert it to the weight's companion type first): to f16,
// or to 8-bit blocks of `block` consecutive values along the contracted dimension, each block
// scaled by max |x| / 127 (q = round(x / d), so each value is off by at most d / 2) with the
// scale stored in f16 (ggml's Q8_0, beside Q8_0, Q4_0 and Q5_0 weights) or f32 (Q8_K, beside
// the K-quants).
struct ActivationRounding {
  enum class Kind { f16, int8_blocks };
  Kind kind = Kind::f16;
  int64_t block = 0;       // int8_blocks: values per block
  bool f16_scale = false;  // int8_blocks: the scale stored in f16
};

// What a correct backend is, and how hard the runs look for its worst case.
struct BoundModel {
  // The precision the backend stores its activations in (program/activations.h); its sums
  // accumulate in f32 or better, in any order.
  Precision precision = Precision::f32;
  // An elementary function (exp, log, rsqrt, logistic, power, sine, cosine) may be off by
  // this many f32 units in the last place before its result is stored.
  double function_ulps = 2;
  // How many perturbed runs, and the factor their rounding errors are drawn at: a run at
  // 4 times a backend's errors reaches, with fair probability, a discontinuity (a near tie
  // between two keys) that a backend reaches only rarely (bound/error_bound.h).
  int runs = 16;
  double amplification = 4;
  // The bound is at least this many root-mean-square deviations of the runs.
  double spread = 3;
  // Probes: runs that draw the same errors as the first `probes` runs at half their size.
  // Where the computation is smooth, a probe's deviation is half its twin's; where it is
  // not (attention flipping between keys whose scores a correct backend cannot tell
  // apart), the two differ by more than `nonlinearity` of the twin's, and the element is
  // held to `chaos_margin` times the largest deviation of any such element of its tensor
  // (and every element of that tensor to `chaos_margin` times its own largest).
  int probes = 4;
  double nonlinearity = 0.25;
  double chaos_margin = 2;
  // Explorers: where the probes find an output element that does not follow its errors
  // smoothly, this many more runs, each with draws of its own at the full amplification,
  // look for flips the first runs missed; they add to the largest deviation (and so to
  // what chaos_margin multiplies), not to the root-mean-square. A single program's bound
  // only (ErrorBounds); a chain of cuts runs the first runs alone.
  int explorers = 16;
  // The chips the backend splits the program over (tp): a contraction split over them is
  // summed as partial sums, each stored in the precision before they are added.
  int64_t chips = 1;
  // The random stream; the same seed draws the same errors for the same program.
  uint64_t seed = 0x6375746368656b;
  // Weights the backend multiplies as stored in a type of their own, by weight name, and how
  // it rounds the activation each meets in a contraction (x W^T, x's last dimension
  // contracted); empty for a backend that multiplies in its storage precision.
  std::map<std::string, ActivationRounding> weight_meets = {};

  int total_runs() const { return runs + probes; }
  bool is_probe(int r) const { return r >= runs && r < total_runs(); }
  // Run r's amplification, and the run whose draws it repeats (itself, or its twin).
  double amplification_of(int r) const { return is_probe(r) ? amplification / 2 : amplification; }
  int draws_of(int r) const { return is_probe(r) ? r - runs : r; }
};

class PerturbedRuns {
 public:
  // `value` gives every value of `program` as one reference run (keep_values) computed it.
  // Throws NotYet for programs with collectives: perturb the unsplit program (a split is
  // one more summation order of the same sums).
  PerturbedRuns(const Program& program, std::function<const Tensor&(ValueId)> value, const BoundModel& model);
  ~PerturbedRuns();

  // Run `r` (0 <= r < model.total_runs() + model.explorers): the deviation of every f32 output from the reference,
  // by output name (+-infinity or NaN where the run left the value's range or became
  // NaN). `inputs` holds, by input name, deviations an earlier program's run r left in
  // the values it hands over (a chain of cuts: the layers of a generation); the other f32
  // inputs and weights are rounded to the precision at random, as a backend storing them
  // in it does.
  TensorMap run(int r, const TensorMap& inputs = {});

 private:
  struct SumTerms;  // per reduce(add) or dot_general: its terms' squares and how many are nonzero
  struct Result;    // one result's deviations being written
  bool perturbed(ValueId v) const;
  Tensor moved(ValueId v) const;  // v + dv, of a perturbed f32 value
  const Tensor& perturbation(ValueId v);  // the shadow of v, materialised (zeros) where it is none
  void leaf(ValueId v, uint64_t stream);
  void step(size_t index, const Operation& op, uint64_t stream);
  Tensor sum(size_t index, const Operation& op, Result w);
  Tensor met_rounding(const ActivationRounding& how, ValueId activation, uint64_t stream);
  Tensor extreme(const Operation& op, Result w);

  const Program& program_;
  std::function<const Tensor&(ValueId)> value_;
  BoundModel model_;
  double amplification_ = 0;  // of the run at hand
  std::vector<bool> activation_;
  std::vector<size_t> last_use_;  // per value: the index of the last op that reads it (outputs: past the end)
  std::vector<std::unique_ptr<SumTerms>> sums_;  // per op, computed at its first run
  std::vector<std::optional<ActivationRounding>> meets_;  // per op: a contraction's x rounded to meet its weight
  // Per value, in the run at hand: for f32 values the deviation, for the others the
  // perturbed value; empty where the value is the reference's.
  std::vector<Tensor> shadow_;
  std::vector<Tensor> zeros_;  // per value, a tensor of zero deviations when one is needed
};

}  // namespace cutcheck
