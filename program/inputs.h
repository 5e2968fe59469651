// A program's inputs: checking given ones against its declarations, and making valid
// random ones from a seed.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "program/program.h"

namespace cutcheck {

// Every declared input given, of its declared type and within its declared range, and no
// other; throws InputError naming the first that is not.
void check_inputs(const Program& program, const TensorMap& inputs);

// i32 inputs uniform over their declared range, f32 inputs uniform in [-1, 1]; the same
// seed gives the same inputs everywhere. Throws InputError when a range is empty.
TensorMap random_inputs(const Program& program, uint64_t seed);

}  // namespace cutcheck
