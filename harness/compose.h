// A whole cut as its pieces: embed, each layer, head. The pieces pass x and the caches
// along by name, so running them gives what the whole cut gives.
#pragma once

#include <vector>

#include "harness/runner.h"

namespace cutcheck {

// The pieces of Decode, Batch, Prefill or Forward, in order; throws Error for other cuts.
std::vector<Cut> pieces_of(const Cut& whole, const ModelSpec& spec);

// Runs `pieces` in order, each on the values named by its signature: first from
// `inputs`, then from what earlier pieces returned. Returns every output of every piece
// except the intermediate x (for a whole cut: logits, next and the updated caches).
TensorMap run_pieces(CutRunner& runner, const ModelSpec& spec, const std::vector<Cut>& pieces, const TensorMap& inputs);

}  // namespace cutcheck
