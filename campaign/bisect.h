// Bisecting a failure: which piece of a failing whole cut (embed, layer i, head) is the
// first to fail on its own, and then which value inside that piece is the first to go
// wrong. For the second, the piece's program is run again with its intermediate values
// added as outputs (docs/conformance.md, "Bisection"); a backend that does not run such a
// program keeps the piece-level answer.
#pragma once

#include <functional>
#include <string>

#include "campaign/campaign.h"
#include "program/program.h"

namespace cutcheck {

struct Bisection {
  // For a whole cut: "layer 1 (decode_layer{layer=1,ctx=16}): ...", or why bisection
  // stopped ("inconclusive: every piece fails alone ..." when no piece is to blame);
  // empty for a cut that is already a piece.
  std::string piece;
  // The first value of the failing piece outside its tolerance, "%l1.probs (layer 1:
  // softmax over the cache rows): ...", or why it was not found; empty when the failure
  // was not narrowed to one piece.
  std::string value;
};

Bisection bisect(Backend& backend, const Case& c, const ConformOptions& o, const fs::path& work);

// The first value of `piece` (whose case is `c`) outside the tolerance (under the bound
// policy, outside its own bound) when the backend runs the piece on `in` with its
// program's values added as outputs; tp > 1 is not looked at (the chips' values differ in
// shape). Uses `work`/probe.
std::string first_failing_value(Backend& backend, const Case& c, const Cut& piece, int64_t tp, const TensorMap& weights,
                                const fs::path& weights_dir, const TensorMap& in, const fs::path& work,
                                const Tolerance& tolerance);

}  // namespace cutcheck
