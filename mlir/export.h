// Exporting a program to MLIR: one func.func in upstream dialects only (func, linalg on
// tensors, tensor, arith, math), its arguments the weights (in the manifest's order) and
// the inputs (in the program's), its results the outputs. docs/mlir.md gives each op's form.
#pragma once

#include <string>

#include "program/manifest.h"
#include "program/program.h"

namespace cutcheck {

// How the exported function does arithmetic.
enum class MlirPrecision {
  // As the language specifies: sums accumulate in f64, functions (exp, sine, ...) are
  // evaluated in f64, each result rounded once to f32. Compiled, it matches the
  // reference bit for bit.
  spec,
  // As a typical backend lowers: everything in f32. Within the tolerance, not bitwise.
  f32,
};

// "spec" or "f32", as --precision takes them; throws Error naming the choices otherwise.
MlirPrecision parse_mlir_precision(const std::string& name);

struct MlirExport {
  std::string text;      // the module
  std::string function;  // the func.func's name
  size_t arguments = 0;  // weights + inputs
  size_t results = 0;
};

// Throws NotYet naming the op for what has no MLIR form here (the collectives of a tp split).
MlirExport export_mlir(const Program& program, const Manifest& manifest, MlirPrecision precision);

}  // namespace cutcheck
