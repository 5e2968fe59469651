// Comparing outputs within a tolerance: the rule the oracle property, the tp property
// and conformance all apply (docs/numerics.md says why the default is what it is).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace cutcheck {

struct Tolerance {
  double atol = 1e-4;  // absolute
  double rtol = 1e-4;  // relative to the expected value
  double nmse = 1e-8;  // largest normalised mean square error of one output: sum (got - want)^2 / sum want^2
  // Equal bits, or both NaN, or finite and |got - want| <= atol + rtol * |want|.
  bool close(float want, float got) const;
  std::string str() const;  // "atol=0.0001 rtol=0.0001 nmse=1e-08"

  static Tolerance f32() { return {1e-4, 1e-4, 1e-8}; }
  static Tolerance bf16() { return {0.25, 0.25, 1e-2}; }
};

struct OutputError {
  std::string name;
  double max_abs = 0;  // largest |got - want| over finite elements
  double max_rel = 0;  // largest |got - want| / max(|want|, atol)
  double nmse = 0;     // sum (got - want)^2 / sum want^2
  size_t mismatches = 0;
  std::string first;   // the first element outside the tolerance, described
};

struct Comparison {
  bool ok = true;
  std::vector<OutputError> outputs;
  std::string failure;  // the first failure, described; empty when ok
};

// f32 outputs within the tolerance, element by element and in NMSE; integer outputs exactly, except that `next` may pick
// another token when the expected logits rate it within the tolerance of the expected
// pick (a near tie). Names and types must match exactly.
Comparison compare(const TensorMap& want, const TensorMap& got, const Tolerance& tolerance);

}  // namespace cutcheck
