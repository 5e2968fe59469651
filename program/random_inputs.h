// Valid random inputs for a program, from a seed: i32 inputs uniform over their declared
// range, f32 inputs uniform in [-1, 1]. The same seed gives the same inputs everywhere.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "program/program.h"

namespace cutcheck {

// Throws InputError when an i32 input's range is empty (no valid value exists).
TensorMap random_inputs(const Program& program, uint64_t seed);

}  // namespace cutcheck
