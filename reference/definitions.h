// The reference's definitions: per op, the plain loop nest that says what the op computes
// (docs/language.md), with nothing done for speed. The interpreter runs the fast kernels
// of kernels.h (kernel_for: the tiled, vectorised and threaded contraction, the
// polynomial exp and logistic) over planned, in-place steps; the property `definitions`
// (properties/catalog.h) holds every cut run that way to these, bit for bit.
#pragma once

#include "reference/kernels.h"

namespace cutcheck {

// The definition of an op, the one table every op must be in (-Werror=switch); kernel_for
// adds the fast kernels. Collectives have none (the multi-chip runner carries them out).
// An interpreter given this table (RunOptions::kernels) runs each op as its definition
// alone: no planned contraction, no operand written over, no weight read as stored.
Kernel definition_for(OpKind kind);

}  // namespace cutcheck
