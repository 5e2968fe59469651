#include "engine/engine_judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace cutcheck {
namespace {

// Folds one compared element into the tally (the element rule of harness/tolerance.h) and
// the position's figures; returns whether it passed.
bool compare(ErrorTally& tally, PositionFigure& fig, double got, double want, double bound, size_t request,
             int64_t position, int32_t token) {
  const ElementCheck k = tally.add(want, got, bound);
  if (!(k.allowed < std::numeric_limits<double>::infinity())) return true;  // no bound: no figure either
  const double headroom = k.allowed > 0 ? k.diff / k.allowed : (k.diff > 0 ? std::numeric_limits<double>::infinity() : 0);
  fig.worst_abs = std::max(fig.worst_abs, k.diff);  // infinite for a null (-infinity) where a bound holds
  if (headroom >= fig.headroom) {
    fig.headroom = headroom;
    fig.bound = k.allowed;
  }
  fig.exact = fig.exact && float(got) == float(want);
  if (k.ok) return true;
  if (tally.error().first.empty())
    tally.error().first =
        fmt::format("request {}, position {}, token {}: log p {} against the reference's {:.9g}, {:.3g} apart, bound {:.3g}",
                    request, position, token, std::isinf(got) ? "null (-inf)" : fmt::format("{:.9g}", got), want, k.diff,
                    k.allowed);
  return false;
}

// A full distribution sums to 1: log sum_j exp(lp_j) of the engine's log-probabilities,
// over the tokens that have a bound (the others carry less than 2^-126 each and may be
// anything), lies within the allowance of the reference's over the same tokens.
bool normalised(ErrorTally& tally, double floor, const LogProbabilities& want, const std::vector<double>& got,
                size_t request, int64_t position) {
  if (!std::isfinite(want.total_bound)) return true;
  double top = -std::numeric_limits<double>::infinity();
  for (size_t t = 0; t < got.size(); ++t)
    if (std::isfinite(want.bound[t])) top = std::max(top, got[t]);
  if (!std::isfinite(top)) return true;  // every bounded token already failed, or none has a bound
  double engine = 0, reference = 0;
  for (size_t t = 0; t < got.size(); ++t) {
    if (!std::isfinite(want.bound[t])) continue;
    engine += std::exp(got[t] - top);  // a null (-infinity) adds nothing
    reference += std::exp(want.value[t]);
  }
  const double got_total = top + std::log(engine), want_total = std::log(reference);
  const double gap = std::abs(got_total - want_total);
  if (gap <= want.total_bound + floor) return true;
  ++tally.error().mismatches;
  if (tally.error().first.empty())
    tally.error().first = fmt::format("request {}, position {}: the log-probabilities do not normalise: log sum exp(log p) "
                                   "is {:.6g} against the reference's {:.6g}, {:.3g} apart, beyond the {:.3g} a correct "
                                   "engine's f32 log-softmax allows",
                                   request, position, got_total, want_total, gap, want.total_bound);
  return false;
}

void fail(EngineVerdict& v, const std::string& why) {
  if (v.passed) v.failure = why;
  v.passed = false;
}

}  // namespace

EngineVerdict judge_engine(const std::vector<EngineRequest>& requests, const std::vector<RequestExpectation>& expected,
                           const std::vector<EngineResult>& results, int64_t top_k, const Tolerance& tolerance) {
  EngineVerdict v;
  ErrorTally tally("logprobs", tolerance);
  for (size_t i = 0; i < requests.size(); ++i) {
    const EngineRequest& request = requests[i];
    const RequestExpectation& want = expected[i];
    const EngineResult& got = results[i];
    const int64_t n = int64_t(request.prompt.size());
    // Greedy tokens, up to the first that differs: a near tie ends the comparison there,
    // anything else fails.
    int64_t comparable_end = request.positions_end();  // positions below it condition on the same tokens
    for (int64_t k = 0; k < request.steps; ++k) {
      const int32_t e = got.tokens[size_t(k)], r = want.tokens[size_t(k)];
      if (e == r) continue;
      const int64_t p = n - 1 + k;
      const PositionExpectation& x = want.at.at(p);
      const double margin = double(x.logits[size_t(r)]) - double(x.logits[size_t(e)]);
      if (near_tie(x.logits, x.bounds, r, e)) {
        v.ties.push_back(fmt::format("request {}, step {} (position {}): the engine chose {}, the reference {}, "
                                     "logits {:.3g} apart within their bounds {:.3g} + {:.3g}",
                                     i, k, p, e, r, margin, x.bounds[size_t(r)], x.bounds[size_t(e)]));
      } else {
        fail(v, fmt::format("request {}, step {} (position {}): the engine chose token {}, the reference {}; their "
                            "logits are {:.3g} apart, beyond their bounds {:.3g} + {:.3g}",
                            i, k, p, e, r, margin, x.bounds[size_t(r)], x.bounds[size_t(e)]));
      }
      comparable_end = p + 1;
      break;
    }
    for (size_t j = 0; j < request.positions.size(); ++j) {
      const int64_t p = request.positions[j];
      if (p >= comparable_end) break;
      const PositionExpectation& x = want.at.at(p);
      const PositionLogprobs& lp = got.logprobs[j];
      PositionFigure fig{int64_t(i), p, 0, 0, 0, x.lp.bound[size_t(x.next)], true};
      bool ok = true;
      auto one = [&](int32_t t, double value) {
        ok = compare(tally, fig, value, x.lp.value[size_t(t)], x.lp.bound[size_t(t)], i, p, t) && ok;
      };
      if (top_k == 0) {
        for (size_t t = 0; t < lp.full.size(); ++t) one(int32_t(t), lp.full[t]);
        ok = normalised(tally, tolerance.floor, x.lp, lp.full, i, p) && ok;
      } else {
        double lowest = std::numeric_limits<double>::infinity();
        std::vector<bool> reported(x.logits.size());
        for (const auto& [t, value] : lp.top) {
          one(t, value);
          lowest = std::min(lowest, value);
          reported[size_t(t)] = true;
        }
        // A token left out is at most the lowest reported: fail where the reference puts it
        // clearly above that.
        for (size_t t = 0; t < reported.size(); ++t) {
          if (reported[t] || !(x.lp.value[t] - x.lp.bound[t] > lowest)) continue;
          ok = false;
          ++tally.error().mismatches;
          if (tally.error().first.empty())
            tally.error().first = fmt::format("request {}, position {}: token {} (reference log p {:.6g}, bound {:.3g}) is "
                                           "missing from the engine's top-k, whose lowest is {:.6g}",
                                           i, p, t, x.lp.value[t], x.lp.bound[t], lowest);
        }
      }
      v.positions.push_back(fig);
      if (!ok) fail(v, tally.error().first);
    }
  }
  v.logprobs = tally.finish();
  return v;
}

}  // namespace cutcheck
