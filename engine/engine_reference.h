// What the reference expects of an engine for one request: the distribution at each
// position it needs and its greedy tokens. The tokens come from decode steps; the
// distributions from one pass over the whole sequence, piece by piece (BatchEmbed, a
// PrefillLayer per layer, BatchHead: row p's logits are position p's, bit for bit what a
// Prefill of the first p + 1 tokens gives), and their bounds from perturbed runs of that
// pass (bound/perturbed_runs.h): each run carries its errors from one piece into the next,
// so every position's bound follows the errors of the positions before it, as an engine's
// caches carry them.
#pragma once

#include <map>
#include <vector>

#include "bound/log_softmax.h"
#include "engine/engine_protocol.h"
#include "harness/runner.h"

namespace cutcheck {

struct PositionExpectation {
  std::vector<float> logits, bounds;  // the reference's logits and their error bounds
  LogProbabilities lp;
  int32_t next = 0;  // the arg-max (lowest index on ties)
};

struct RequestExpectation {
  std::vector<int32_t> tokens;                // the reference's greedy tokens, steps of them
  std::map<int64_t, PositionExpectation> at;  // the reported positions and those that generate
};

// `model` is the bound's: the run's precision, and how the engine rounds what meets its weights.
RequestExpectation expect_request(ReferenceRunner& reference, const EngineRequest& request, const BoundModel& model);

}  // namespace cutcheck
