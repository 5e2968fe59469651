// The terms of a reduction or a contraction, as offsets: for every result element, where
// its operands' terms start, and for every term, how far it lies from that start. Code
// that sums the terms in its own order (harness/variants.h) or follows them one by one
// (bound/perturbed_runs.h) walks these instead of the index space.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "program/program.h"

namespace cutcheck {

struct Terms {
  std::vector<int64_t> base_l, base_r;  // per result element, row-major
  std::vector<int64_t> step_l, step_r;  // per term, in ascending row-major order
};

// A dot_general's result is [batch..., lhs free..., rhs free...]: each operand's offset for
// each result element, and the contracting dimensions' offsets.
Terms dot_terms(const Operation& op, const Shape& lhs, const Shape& rhs);
// A reduce's result elements and reduced dimensions, in its operand (base_r, step_r empty).
Terms reduce_terms(const Operation& op, const Shape& operand);

}  // namespace cutcheck
