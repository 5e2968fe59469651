// The log-probabilities of one row of logits, and how far a correct engine's may lie from
// them. An engine computes its logits as a correct backend does (bound/error_bound.h) and
// its log-softmax in f32 or better. Its log-probabilities are bounded the way its logits
// are: the perturbed runs' logits (bound/perturbed_runs.h) go through the log-softmax,
// which carries their errors as it does the engine's (a common shift cancels, so the
// most likely token's log-probability is held as tightly as its margin allows), and the
// engine's own rounding of the log-softmax is drawn on top. docs/engines.md says why.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bound/error_bound.h"

namespace cutcheck {

struct LogProbabilities {
  std::vector<double> value;  // log softmax(z), computed in double from the f32 logits
  std::vector<double> bound;  // per token; infinity: any value passes (unbounded)
  // How far log sum_j exp(lp_j) of a correct engine's full distribution may lie from 0: its
  // log-softmax normalises in f32, so this holds whatever its logits' errors (a shift
  // common to every log-probability is caught here, far below the tokens' own bounds).
  double total_bound = 0;
};

class LogSoftmaxBound {
 public:
  LogSoftmaxBound(std::span<const float> logits, const BoundModel& model);
  // Perturbed run r: the logits' deviation in it, and a random stream of its own.
  void add_run(int r, std::span<const float> logit_deviation, uint64_t stream);
  // The log-probabilities and their bounds over every run. A bound is infinite where a
  // run's is, and where the log-probability may lie below log 2^-126 (an f32 probability
  // there is subnormal).
  LogProbabilities result() const;

 private:
  BoundModel model_;
  std::vector<float> logits_;
  std::vector<double> value_;
  double log_sum_ = 0;  // log sum_j exp(z_j - max z)
  double max_ = 0;
  Allowance allowance_;
  Allowance total_;  // of log sum_j exp(lp_j)
};

// Whether a correct backend may pick another token than the reference's arg-max: the
// reference's logit exceeds the other's by no more than `allowed`. A NaN margin or an
// infinite allowance is a tie: where the reference's own logits say nothing, no pick is wrong.
inline bool near_tie(double margin, double allowed) { return !(margin > allowed); }
// The same for an engine's pick: the margin within the sum of the two logits' bounds.
bool near_tie(std::span<const float> logits, std::span<const float> logit_bounds, int reference, int engine);

}  // namespace cutcheck
