// The author: program text and a weight manifest for any cut of a model spec.
#pragma once

#include <string>

#include "author/faults.h"
#include "model/cut.h"
#include "model/spec.h"
#include "program/manifest.h"
#include "program/program.h"

namespace cutcheck {

struct AuthorOptions {
  Fault fault = Fault::none;  // a deliberate bug, for testing the harness
};

struct Authored {
  Program program;
  std::string text;  // print(program); independent of the weights folder
  Manifest manifest;
};

// The program of a cut; throws Refused when the cut cannot exist for the spec and
// SpecError when the spec itself is impossible.
Program author_program(const Cut& cut, const ModelSpec& spec, const AuthorOptions& options = {});

// The program's text and a manifest naming weights under `dir` (see model/weights.h).
Authored write(const Cut& cut, const ModelSpec& spec, const std::string& dir, const AuthorOptions& options = {});

// The manifest of any program whose weights are the unsplit model's: each weight from
// `file` under `dir`, by its own name.
Manifest unsplit_manifest(const Program& program, const std::string& dir, Json about,
                          const std::string& file = "model.safetensors");

// What the manifest records about a cut: its text, the spec and the chip layout.
Json about_cut(const Cut& cut, const ModelSpec& spec, int64_t tp = 1, int64_t chip = 0);

}  // namespace cutcheck
