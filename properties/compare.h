// Bitwise comparison of named tensors, with a message that points at the first
// difference: which output, which element, both values.
#pragma once

#include <optional>
#include <string>

#include "core/tensor.h"

namespace cutcheck {

// nullopt when `got` has exactly the names, types and bits of `want`.
std::optional<std::string> bitwise_difference(const TensorMap& want, const TensorMap& got);

// nullopt when the texts are equal; else where they first differ, with some context.
std::optional<std::string> text_difference(const std::string& want, const std::string& got);

// Row r of a tensor whose first dimension holds rows: shape[1:], copied.
Tensor row_of(const Tensor& t, int64_t r);

}  // namespace cutcheck
