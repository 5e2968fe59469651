// Automatic mutants of the authored programs (`cutcheck mutate`): small type-preserving
// edits, each the kind of slip a backend makes in one op (a comparison's direction, add
// for subtract, max for min, a reduce's kind, swapped operands, a constant off by an ulp,
// doubled or zeroed, an index off by one, an op or a collective skipped). A mutant acts on
// every program of its cut kind that has its anchor, so the properties and a conformance
// campaign can be run against it as against a buggy backend.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/cut.h"
#include "model/spec.h"
#include "program/rewrite.h"

namespace cutcheck {

struct Mutant {
  CutKind kind;          // the cut kind whose programs it changes
  std::string anchor;    // the value it edits, layers generalised: "l*.probs"
  OpKind op;             // the kind of the op at the anchor
  std::string mutation;  // "divide -> multiply"
  std::function<void(Rewriter&, ValueId)> edit;

  std::string str() const;  // "decode %l*.probs (divide): divide -> multiply"
  // The program with the edit made at every value matching the anchor; a match where the
  // edit does not type-check in this program is left as it is.
  Program apply(const Program& program) const;
};

// Every mutant of the authored programs of `kinds` for `spec` (cuts with rows 3, ctx 20,
// layer 0; split programs at tp 2 for the kinds that split), without duplicates.
std::vector<Mutant> all_mutants(const ModelSpec& spec, const std::vector<CutKind>& kinds);

// At most `per_kind` of each kind, chosen by a hash of the mutant and `seed` (stable
// under unrelated changes to the list).
std::vector<Mutant> sample_mutants(const std::vector<Mutant>& mutants, size_t per_kind, uint64_t seed);

}  // namespace cutcheck
