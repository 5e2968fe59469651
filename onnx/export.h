// Exporting a program (or the chips of a tp split) to ONNX: opset 17, IR version 8, built
// with the ONNX protobuf classes and checked in-process (onnx::checker and strict shape
// inference) before anything is written. A program is cut at its collectives into
// segments, one ONNX graph each; a plan (JSON) says how a runner feeds the segments, carries
// out the collectives between them and names the outputs. docs/onnx.md gives each op's form.
#pragma once

#include <string>
#include <vector>

#include "core/files.h"
#include "program/manifest.h"
#include "program/program.h"

namespace cutcheck {

// How the exported graphs do arithmetic.
enum class OnnxPrecision {
  // As the language specifies: sums (dot_general, reduce add) and functions (exp, sine,
  // ...) computed in double (f64 tensors) and cast to f32 once.
  spec,
  // Everything in f32, as a model exported for deployment is.
  f32,
};

struct OnnxOptions {
  OnnxPrecision precision = OnnxPrecision::spec;
  // Weights of at least this many bytes go to external data beside the model.
  uint64_t external_from_bytes = uint64_t(1) << 20;
};

// One program of a split (or the only one), exported.
struct ChipProgram {
  const Program* program;
  const Manifest* manifest;
  fs::path folder;  // where the manifest's dir is relative to
};

// Exports every chip's segments and the plan. `out` names the model: a single program
// without collectives is written to exactly `out`; otherwise each segment goes to
// `<stem>.chipC.segS.onnx` beside it. The plan is `<stem>.plan.json`. Returns the plan's
// path. Throws NotYet for what has no faithful ONNX form.
fs::path export_onnx(const std::vector<ChipProgram>& chips, const fs::path& out, const OnnxOptions& options);

// Exports a program folder (or a folder of chipN/ folders) into `cache/<hash>/`, unless
// that export exists already; the hash covers the program text, the manifest, every
// weight's bytes, the options and the exporter's version. Returns the plan's path.
fs::path export_onnx_cached(const fs::path& folder, const fs::path& cache, const OnnxOptions& options);

// Exports a program folder (or a folder of chipN/ folders) to `out`.
fs::path export_onnx_folder(const fs::path& folder, const fs::path& out, const OnnxOptions& options);

}  // namespace cutcheck
