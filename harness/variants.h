// Legitimate variants: the reference's semantics computed the ways correct backends
// compute them — f32 sums in other orders, fused multiply-adds, elementary functions in
// f32, values stored in bf16 or f16. Each is correct under its declared precision, so a
// tolerance that fails one of them fails a correct backend: they are the instrument that
// measures a tolerance's false failures (`cutcheck tolerance-report`, docs/numerics.md),
// as the fault catalog measures its detection.
#pragma once

#include <string>
#include <vector>

#include "bound/precision.h"
#include "reference/interpreter.h"

namespace cutcheck {

struct Variant {
  std::string name;
  std::string description;
  Precision precision;  // the declared precision it is a correct backend of
  RunOptions run;       // its kernels and storage
  // A change to each program and its weights before it is planned (empty: none): how the
  // variant computes what the program computes in another way than op by op.
  std::function<void(Program& program, TensorMap& weights)> prepare = {};

  // The variant's executable of a program.
  Executable executable(Program program, TensorMap weights) const;
};

const std::vector<Variant>& variants();
// Throws Error listing the known names.
const Variant& find_variant(const std::string& name);

}  // namespace cutcheck
