// Running mutants against the harness: each mutant is a backend (the reference with the
// mutant's edit made to every program of its cut kind) put through a short conformance
// campaign of its cut kind and then the property catalog; the mutation score is
// killed / (total - equivalent). A mutant that changes no output of its cut on random
// inputs of several specs is "not distinguished": a candidate equivalent, listed for a
// reader to show equivalent or file as a hole (docs/conformance.md, Mutation score).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/json.h"
#include "mutate/mutants.h"

namespace cutcheck {

struct MutateOptions {
  int conform_cases = 24;   // per mutant, of its cut kind (tp 1 and 2 where the kind splits)
  int property_cases = 30;  // per property, for the mutants conformance did not kill
  int probe_inputs = 24;    // random input sets per spec for the equivalence screen
  uint64_t seed = 1;
  std::function<void(size_t done, size_t total)> progress;
};

enum class MutantVerdict { killed, survived, equivalent };

struct MutantResult {
  std::string mutant;   // Mutant::str()
  std::string kind;     // cut kind
  MutantVerdict verdict = MutantVerdict::survived;
  std::string by;       // what killed it: "conform", "property composition.decode"; or why it survived
  double seconds = 0;
};

struct MutationReport {
  std::vector<MutantResult> results;
  size_t population = 0;  // all mutants before sampling
  int count(MutantVerdict v) const;
  double score() const;   // killed / (total - equivalent)
  std::string table() const;
  Json json() const;
};

// `equivalent(mutant)`, when it gives a reason, marks a mutant proven equivalent (the
// documented arguments); the others that survive are listed with what the screen found.
MutationReport run_mutants(const std::vector<Mutant>& mutants, const MutateOptions& options);

}  // namespace cutcheck
