// Judging an engine's results against the reference's expectations (docs/engines.md,
// "What cutcheck compares"): log-probabilities within their bounds at every reported
// position, greedy tokens equal up to the first near tie, top-k lists complete.
#pragma once

#include <string>
#include <vector>

#include "engine/engine_reference.h"
#include "harness/tolerance.h"

namespace cutcheck {

// The worst element of one reported position, for the reports' per-position figures.
struct PositionFigure {
  int64_t request = 0, position = 0;
  double worst_abs = 0;  // the largest |log p - log p_ref| over the bounded tokens
  double bound = 0;      // the bound of the token with the largest headroom
  double headroom = 0;   // the largest |log p - log p_ref| / bound (<= 1 passes)
  double top_bound = 0;  // the bound of the reference's most likely token
  bool exact = false;    // every log-probability rounds to the reference's f32 value
};

struct EngineVerdict {
  bool passed = true;
  std::string failure;      // the first failure, described
  OutputError logprobs{};  // named "logprobs"
  std::vector<std::string> ties;  // near ties where the engine's tokens parted from the reference's
  std::vector<PositionFigure> positions;
};

// Each log-probability is held to its bound by the element rule every judge applies
// (harness/tolerance.h's ErrorTally, under `tolerance`: the bound policy of the run's precision).
EngineVerdict judge_engine(const std::vector<EngineRequest>& requests, const std::vector<RequestExpectation>& expected,
                           const std::vector<EngineResult>& results, int64_t top_k,
                           const Tolerance& tolerance = Tolerance::bound(Precision::f32));

}  // namespace cutcheck
