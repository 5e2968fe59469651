#include "bound/log_softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cutcheck {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double u = 0x1p-24;              // the engine's log-softmax runs in f32 or better
constexpr double function_error = 0x1p-21;  // exp and log within 4 f32 ulps (4 * 2^-23)
const double smallest_normal_log = std::log(0x1p-126);

}  // namespace

LogProbabilities log_probabilities(std::span<const float> logits, std::span<const float> logit_bounds, double sigmas) {
  const size_t V = logits.size();
  LogProbabilities out{std::vector<double>(V), std::vector<double>(V, inf), std::vector<double>(V, inf)};
  double m = -inf;
  for (float z : logits) m = std::max(m, double(z));
  double S = 0;
  for (float z : logits) S += std::exp(double(z) - m);
  const double log_S = std::log(S);
  bool finite = std::isfinite(m) && std::isfinite(log_S);
  double max_b = 0;
  for (size_t j = 0; j < V; ++j) {
    out.value[j] = double(logits[j]) - m - log_S;
    finite = finite && std::isfinite(double(logits[j])) && std::isfinite(double(logit_bounds[j]));
    max_b = std::max(max_b, double(logit_bounds[j]));
  }
  if (!finite) return out;  // NaN, infinite logits or an unbounded logit: no bound anywhere

  // The normaliser: LSE(z + d) - LSE(z) = log sum_j p_j exp(d_j), |d_j| <= b_j, lies within
  // +-log sum_j p_j exp(b_j) (Jensen for the lower side), never more than max_j b_j.
  double weighted = 0, sum_p2 = 0, spread = 0;
  for (size_t j = 0; j < V; ++j) {
    const double p = std::exp(out.value[j]);
    weighted += p * std::exp(double(logit_bounds[j]) - max_b);
    sum_p2 += p * p;
    spread += p * std::abs(double(logits[j]) - m);
  }
  const double b_lse = std::min(max_b, max_b + std::log(weighted));
  // The sum of V positive terms in any order, k standard deviations of its independent
  // roundings (docs/numerics.md, reduce add), relative to the sum.
  const double n = double(V);
  const double sum_error = sigmas * u * std::sqrt(((n / 2 + 1) * sum_p2 + n / 3) / 3);
  for (size_t i = 0; i < V; ++i) {
    const double s = double(logits[i]) - m;
    const double rounding = u * (std::abs(s) + std::abs(out.value[i]) + 2) + function_error * (1 + std::abs(log_S)) +
                            u * spread + sum_error;
    const double b = double(logit_bounds[i]) + b_lse + rounding;
    out.rounding[i] = rounding;
    if (out.value[i] - b >= smallest_normal_log) out.bound[i] = b;
  }
  return out;
}

bool near_tie(std::span<const float> logits, std::span<const float> logit_bounds, const LogProbabilities& lp,
              int reference, int engine) {
  const double margin = double(logits[size_t(reference)]) - double(logits[size_t(engine)]);
  const double allowed = double(logit_bounds[size_t(reference)]) + double(logit_bounds[size_t(engine)]) +
                         lp.rounding[size_t(reference)] + lp.rounding[size_t(engine)];
  return !(margin > allowed);  // NaN and infinite allowances: a tie
}

}  // namespace cutcheck
