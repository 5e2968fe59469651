// One case of engine conformance: a model (spec and weight seed) and the requests run on
// it, drawn from RapidCheck generators within what the engine declared, so that a failure
// shrinks (fewer layers, smaller dims, fewer and shorter requests, fewer steps). The case
// lists its requests in full, so a kept case replays exactly.
#pragma once

#include <rapidcheck.h>

#include <optional>
#include <string>
#include <vector>

#include "core/files.h"
#include "engine/engine_protocol.h"

namespace cutcheck {

struct EngineCase {
  ModelSpec spec;
  uint64_t weight_seed = 0;  // 0 with given weights
  std::vector<EngineRequest> requests;

  Json to_json() const;
  static EngineCase from_json(const Json& json, const std::string& source);
  // "random v32 d16 L2 h4/2 e4 f24 seed 99: 3 requests (prompt+steps 17+4, 1+3, 64+0)"
  std::string str() const;
  int64_t longest() const;  // the longest request's prompt + steps
};

// The positions a request reports: every one for a short sequence; for a long one the
// first 8, those around each power-of-two tile boundary, and the last 8 (the prompt's end
// and the generated tokens').
std::vector<int64_t> reported_positions(int64_t prompt, int64_t steps);

struct EngineCaseSpace {
  std::optional<ModelSpec> spec;  // fixed; random within the description when unset
  bool given_weights = false;
  DType dtype = DType::f32;       // random specs' weights: the run's precision
  // Random specs' dim and ffn rounded up to a multiple of this: a quantized model's rows
  // then hold whole blocks of its type (EnginePrecision::block_values).
  int64_t row_multiple = 1;
  int64_t ctx_max = 256;          // longest prompt + steps, further bounded by the engine's max_context
  int requests = 3;               // at most this many requests per case
  int steps_max = 4;
};

// Throws Error when the fixed spec is one the engine does not take by its description.
rc::Gen<EngineCase> gen_engine_case(const EngineDescription& engine, const EngineCaseSpace& space);

}  // namespace cutcheck
