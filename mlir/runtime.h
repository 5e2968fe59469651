// Calling a compiled program through MLIR's C interface: each argument and result is a
// memref descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}; cutcheck owns
// every buffer (results are out-parameters).
#pragma once

#include <memory>
#include <vector>

#include "core/files.h"
#include "core/tensor.h"

namespace cutcheck {

class CompiledProgram {
 public:
  static CompiledProgram load(const fs::path& library);
  ~CompiledProgram();
  CompiledProgram(CompiledProgram&&) noexcept;
  CompiledProgram(const CompiledProgram&) = delete;

  // `arguments` in the function's order; returns results of the given types.
  std::vector<Tensor> call(const std::vector<const Tensor*>& arguments, const std::vector<TensorType>& results) const;

 private:
  CompiledProgram() = default;
  void* handle_ = nullptr;
  void (*entry_)(void**) = nullptr;
};

}  // namespace cutcheck
