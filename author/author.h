// The author: program text and a weight manifest for any cut of a model spec.
#pragma once

#include <string>
#include <vector>

#include "core/files.h"
#include "model/cut.h"
#include "model/spec.h"
#include "program/manifest.h"
#include "program/program.h"

namespace cutcheck {

struct Authored {
  Program program;
  std::string text;  // print(program); independent of the weights folder
  Manifest manifest;
};

// The program of a cut; throws Refused when the cut cannot exist for the spec and
// SpecError when the spec itself is impossible.
Program author_program(const Cut& cut, const ModelSpec& spec);

// The program's text and a manifest naming weights under `dir` (see model/weights.h).
Authored write(const Cut& cut, const ModelSpec& spec, const std::string& dir);

// Chip `chip` of the `tp`-way split of a cut. Throws Refused for an impossible cut and
// NotYet for one that does not split (model/sharding.h says which do).
Program author_chip_program(const Cut& cut, const ModelSpec& spec, int64_t tp, int64_t chip);

// The programs and manifests of every chip: split weights from DIR/tp{tp}/chip{c}.safetensors,
// replicated ones from DIR/model.safetensors (write them with write_shards).
std::vector<Authored> write_split(const Cut& cut, const ModelSpec& spec, const std::string& dir, int64_t tp);

// Writes the program folder of `cut` to `folder` (chip0/, chip1/, ... when tp > 1), in
// one step and only over a program folder (publish_program). The manifests name the
// weights folder `weights` relative to each program folder when `relative`, so that the
// folders and their weights can move together, and as an absolute path otherwise.
void write_cut_folder(const Cut& cut, const ModelSpec& spec, int64_t tp, const fs::path& weights, const fs::path& folder,
                      bool relative = true);

// The manifest of any program whose weights are the unsplit model's: each weight from
// `file` under `dir`, by its own name.
Manifest unsplit_manifest(const Program& program, const std::string& dir, Json about,
                          const std::string& file = "model.safetensors");

// What the manifest records about a cut: its text, the spec and the chip layout.
Json about_cut(const Cut& cut, const ModelSpec& spec, int64_t tp = 1, int64_t chip = 0);

struct About {
  Cut cut;
  ModelSpec spec;
  int64_t tp = 1, chip = 0;
};
// Reads what about_cut wrote; throws FormatError naming `source` when it is not there.
About read_about(const Json& about, const std::string& source);

}  // namespace cutcheck
