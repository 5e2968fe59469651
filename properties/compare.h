// Bitwise comparison of named tensors, with a message that points at the first
// difference: which output, which element, both values.
#pragma once

#include <optional>
#include <string>

#include "core/tensor.h"
#include "harness/tolerance.h"
#include "model/cut.h"

namespace cutcheck {

// nullopt when `got` has exactly the names, types and bits of `want`.
std::optional<std::string> bitwise_difference(const TensorMap& want, const TensorMap& got);

// nullopt when the texts are equal; else where they first differ, with some context.
std::optional<std::string> text_difference(const std::string& want, const std::string& got);

// How a split cut's outputs differ from the unsplit ones, if they do more than they may:
// the new k, v rows of the cut's first layer come from the replicated x and the chip's
// rows of wk, wv, so they must be the unsplit bits; everything else must be within the
// tolerance (docs/tp.md says why).
std::optional<std::string> split_difference(const Cut& cut, Expected unsplit, TensorMap split,
                                            const Tolerance& tolerance);

// Row r of a tensor whose first dimension holds rows: shape[1:], copied.
Tensor row_of(const Tensor& t, int64_t r);

}  // namespace cutcheck
