#include "bound/log_softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/random.h"

namespace cutcheck {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double u = 0x1p-24;  // the engine's log-softmax runs in f32 or better
const double smallest_normal_log = std::log(0x1p-126);

// log softmax(z) in double: z_j - max z - log sum_j exp(z_j - max z).
struct LogSoftmax {
  double max = -inf, log_sum = 0;
  explicit LogSoftmax(std::span<const float> z, std::span<const float> dz = {}) {
    auto at = [&](size_t j) { return double(z[j]) + (dz.empty() ? 0.0 : double(dz[j])); };
    for (size_t j = 0; j < z.size(); ++j) max = std::max(max, at(j));
    double sum = 0;
    for (size_t j = 0; j < z.size(); ++j) sum += std::exp(at(j) - max);
    log_sum = std::log(sum);
  }
};


}  // namespace

LogSoftmaxBound::LogSoftmaxBound(std::span<const float> logits, const BoundModel& model)
    : model_(model), logits_(logits.begin(), logits.end()), allowance_(model), total_(model) {
  const LogSoftmax l(logits);
  max_ = l.max;
  log_sum_ = l.log_sum;
  value_.resize(logits.size());
  for (size_t j = 0; j < logits.size(); ++j) value_[j] = double(logits[j]) - max_ - log_sum_;
}

void LogSoftmaxBound::add_run(int r, std::span<const float> logit_deviation, uint64_t stream) {
  const BoundModel& model = model_;
  const double amplification = model.amplification_of(r);
  const size_t V = logits_.size();
  const LogSoftmax l(logits_, logit_deviation);
  // The engine's own rounding, in f32: per token, of z_i - max and of the log-probability;
  // common to every token, of the normaliser: its sum of V terms in any order (as a sum
  // in perturbed_runs.cpp), its exp and log (function_ulps each) and its own rounding.
  double sum_p2 = 0;
  for (size_t j = 0; j < V; ++j) sum_p2 += std::exp(2 * value_[j]);
  const double n = double(V);
  const double common = u * std::sqrt(((n / 2 + 1) * sum_p2 + n / 3) / 3) +
                        u * (1 + 4 * model.function_ulps) * (1 + std::abs(log_sum_)) / std::sqrt(3.0);
  SplitMix64 g{stream};
  const double shared = amplification * common * g.normal();
  Tensor d({DType::f32, {int64_t(V)}});
  auto dv = d.as_mut<float>();
  double moved = 0;  // sum_j p_j expm1(e_j): the run's distribution sums to 1 + moved
  for (size_t i = 0; i < V; ++i) {
    const double changed = double(logits_[i]) + double(logit_deviation[i]) - l.max - l.log_sum;
    const double own = u * (std::abs(double(logits_[i]) - max_) + std::abs(value_[i])) / std::sqrt(3.0);
    const double e = changed - value_[i] + shared + amplification * own * g.normal();
    dv[i] = std::isfinite(changed) ? float(e) : NAN;
    moved += std::isfinite(changed) ? std::exp(value_[i]) * std::expm1(e) : NAN;
  }
  allowance_.add(r, d);
  total_.add(r, Tensor::of_f32({1}, {float(std::log1p(moved))}));
}

LogProbabilities LogSoftmaxBound::result() const {
  LogProbabilities out{value_, std::vector<double>(value_.size(), inf)};
  const Tensor b = allowance_.bound();
  auto bv = b.as<float>();
  for (size_t i = 0; i < value_.size(); ++i)
    if (std::isfinite(value_[i]) && value_[i] - bv[i] >= smallest_normal_log) out.bound[i] = bv[i];
  out.total_bound = total_.bound().as<float>()[0];
  return out;
}

bool near_tie(std::span<const float> logits, std::span<const float> logit_bounds, int reference, int engine) {
  const double margin = double(logits[size_t(reference)]) - double(logits[size_t(engine)]);
  const double allowed = double(logit_bounds[size_t(reference)]) + double(logit_bounds[size_t(engine)]);
  return near_tie(margin, allowed);
}

}  // namespace cutcheck
