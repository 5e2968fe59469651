// Which values of a program are activations: the f32 inputs and weights, and every f32
// value computed from a float (f32, bf16, f16) input or weight. The rest are tables computed from integers and constants
// alone (rotary angles, masks, positions), which backends compute in f32 whatever the
// precision of their activations (docs/numerics.md). A declared precision applies to the
// activations.
#pragma once

#include <vector>

#include "program/program.h"

namespace cutcheck {

// Indexed by ValueId.
std::vector<bool> activations(const Program& program);

}  // namespace cutcheck
