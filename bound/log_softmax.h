// The log-probabilities of one row of logits, and how far a correct engine's may lie from
// them. An engine computes its logits within their error bounds (bound/error_bound.h) and
// its log-softmax in f32 or better; docs/engines.md derives the bound term by term.
#pragma once

#include <span>
#include <vector>

namespace cutcheck {

struct LogProbabilities {
  std::vector<double> value;  // log softmax(z), computed in double from the f32 logits
  std::vector<double> bound;  // per token; infinity: any value passes (unbounded)
  // The log-softmax's own rounding allowance per token (already in `bound`): what a near
  // tie between two tokens adds beyond their logits' bounds.
  std::vector<double> rounding;
};

// `logits` and `logit_bounds` of one position, `sigmas` as in BoundModel. A bound is
// infinite where any logit's is (the normaliser is then unknown), and where the
// log-probability may lie below log 2^-126 (an f32 probability there is subnormal).
LogProbabilities log_probabilities(std::span<const float> logits, std::span<const float> logit_bounds, double sigmas);

// Whether a correct engine may pick token `engine` where the reference picks `reference`
// (its arg-max): their logits are within the sum of their bounds and roundings.
bool near_tie(std::span<const float> logits, std::span<const float> logit_bounds, const LogProbabilities& lp,
              int reference, int engine);

}  // namespace cutcheck
