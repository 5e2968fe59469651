// Running the chips of a tp split together. Each chip runs to its next collective; when
// all have arrived, the collective is carried out and they go on. Collectives that do
// not match, or a chip that finishes while others wait, are errors, never a hang.
//
// Semantics, per replica group (chips listed in the group's order):
//   all_reduce(add): every chip receives the element-wise sum of the group's operands,
//     accumulated in double in group order and rounded once;
//   all_gather(d):   every chip receives the group's operands concatenated along d.
#pragma once

#include <vector>

#include "reference/interpreter.h"

namespace cutcheck {

// One inputs map per chip; returns one outputs map per chip.
std::vector<TensorMap> run_chips(const std::vector<Executable*>& chips, const std::vector<TensorMap>& inputs);

}  // namespace cutcheck
