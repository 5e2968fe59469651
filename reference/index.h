// Index arithmetic for the kernels: row-major strides and an odometer over a shape.
// Fixed-size arrays, so no kernel allocates while it runs.
#pragma once

#include <array>
#include <cstdint>

#include "core/tensor.h"
#include "program/ops.h"

namespace cutcheck {

constexpr int max_rank = max_tensor_rank;
using Index = std::array<int64_t, max_rank>;

// Row-major strides, in elements.
inline Index strides_of(const Shape& shape) {
  Index s{};
  int64_t stride = 1;
  for (int i = int(shape.size()) - 1; i >= 0; --i) {
    s[size_t(i)] = stride;
    stride *= shape[size_t(i)];
  }
  return s;
}

// Walks every multi-index of a shape in row-major order.
struct Odometer {
  int rank;
  Index dims{}, at{};
  explicit Odometer(const Shape& shape) : Odometer(shape.data(), int(shape.size())) {}
  Odometer(const int64_t* sizes, int n) : rank(n) {
    for (int i = 0; i < rank; ++i) dims[size_t(i)] = sizes[i];
  }
  // Advances to the next index; false after the last one.
  bool next() {
    for (int i = rank - 1; i >= 0; --i) {
      if (++at[size_t(i)] < dims[size_t(i)]) return true;
      at[size_t(i)] = 0;
    }
    return false;
  }
};

}  // namespace cutcheck
