// The per-op conformance suite (`cutcheck conform --ops`): one-op programs over every op
// of the language, every dtype it takes, at the shapes and values where kernels break
// (0-size, rank 0, rank 8, size-1 broadcasts, strided slices, clamped indices, NaN, Inf,
// signed zeros, i32 wrap-around), each run on the backend and on the reference and
// compared op by op. Every case is a value with a printable name; a backend's "not
// supported" is reported as such, never counted as a pass.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "harness/tolerance.h"
#include "program/program.h"

namespace cutcheck {

struct OpCase {
  std::string name;            // "maximum f32[2,3] signed zeros": the op first, for filtering
  OpKind kind;
  std::vector<Program> chips;  // one program, or one per chip (collectives)
  TensorMap inputs;            // the unsplit inputs
  TensorMap weights;           // quantized operands, which only weights may be (the case folder holds them)
};

// The suite; values come from `seed`.
std::vector<OpCase> op_cases(uint64_t seed = 1);

enum class OpVerdict { bitwise, close, failed, unsupported };
std::string op_verdict_name(OpVerdict v);  // "bitwise", "within tolerance", "FAILED", "unsupported"

struct OpResult {
  std::string name;
  OpVerdict verdict = OpVerdict::failed;
  std::string detail;  // what differed, or why it is unsupported or failed
};

struct OpReport {
  std::vector<OpResult> results;
  int count(OpVerdict v) const;
  bool passed() const;  // nothing failed and something ran
  std::string table() const;
  Json json() const;
};

// Runs the cases whose name matches one of `filters` (globs over the whole name, "max*";
// all when empty) on the backend, in `work`. Bitwise means equal bits (any NaN matching
// any NaN, the language leaves payloads open); otherwise within `tolerance`, or failed.
OpReport conform_ops(Backend& backend, const std::vector<OpCase>& cases, const std::vector<std::string>& filters,
                     const Tolerance& tolerance, const fs::path& work);

}  // namespace cutcheck
