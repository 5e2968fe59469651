// Greedy generation through any cut path: each step feeds one token at its position and
// takes the arg-max of the logits as the next token.
#pragma once

#include <string>
#include <vector>

#include "harness/runner.h"

namespace cutcheck {

enum class Via {
  automatic,  // Prefill for the prompt, then Decode steps
  decode,     // Decode{ctx} for every token
  prefill,    // Prefill for the prompt, then Prefill{rows=1} steps
  batch,      // Batch{rows=1} for every token
  pieces,     // DecodeEmbed, DecodeLayer for each layer, DecodeHead: separate programs
};

std::string via_name(Via via);
Via parse_via(const std::string& name);  // throws Error listing the choices

struct GenerateOptions {
  std::vector<int32_t> prompt{1};
  int64_t steps = 16;
  // Cache capacity. 0: the caches grow through capacities 64, 128, 256, ... up to
  // prompt + steps, a program per capacity; otherwise this one capacity throughout.
  int64_t ctx = 0;
  Via via = Via::automatic;
  // Whether Generation::logits keeps every step's logits (a comparison reads them); a
  // generation that only prints its tokens need not hold steps x vocab floats.
  bool keep_logits = true;
};

struct Generation {
  std::vector<int32_t> tokens;             // the generated tokens, steps of them
  std::vector<std::vector<float>> logits;  // logits[k]: what produced tokens[k] (keep_logits)
};

// Throws InputError when the prompt is empty or a token is outside the vocabulary.
Generation generate(CutRunner& runner, const ModelSpec& spec, const GenerateOptions& options);

}  // namespace cutcheck
