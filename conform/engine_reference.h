// What the reference expects of an engine for one request: the distribution at each
// position it needs, computed through the Prefill cut (position p is the last row of
// Prefill{rows = p + 1} over the sequence's first p + 1 tokens, so that the bounds follow
// the earlier positions' keys and values into p), and its greedy tokens.
#pragma once

#include <map>
#include <vector>

#include "bound/log_softmax.h"
#include "conform/engine_protocol.h"
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

RequestExpectation expect_request(ReferenceRunner& reference, const EngineRequest& request, const Tolerance& tolerance);

}  // namespace cutcheck
