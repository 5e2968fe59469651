// The cases a conformance campaign draws: a cut kind and tp width from the options, a spec
// (the fixed one or a random small one) and the case's inputs, from RapidCheck generators
// so that a failure shrinks.
#pragma once

#include <rapidcheck.h>

#include <vector>

#include "campaign/campaign.h"

namespace cutcheck {

// The tp widths a case of `kind` may use under the options.
std::vector<int64_t> widths_for(CutKind kind, const ConformOptions& o);

// Throws Error when no cut kind fits the options.
rc::Gen<Case> gen_conform_case(const ConformOptions& o);

}  // namespace cutcheck
