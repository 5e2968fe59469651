// A program folder: program.txt and manifest.json side by side, the unit that the
// author writes, backends read, and reproducers keep. A tp split is a folder of chip
// folders (chip0/, chip1/, ...), each a program folder of its own.
#pragma once

#include <vector>

#include "core/files.h"
#include "program/manifest.h"
#include "program/program.h"

namespace cutcheck {

struct ProgramFolder {
  Program program;
  Manifest manifest;
  std::string text;

  // Parses, verifies and checks the manifest against the program.
  static ProgramFolder read(const fs::path& dir);
  // Writes program.txt and manifest.json atomically.
  void write(const fs::path& dir) const;
};

// Authors `dir` as exactly this program (one folder) or split (chip0/, chip1/, ...),
// replacing what was there in one step: everything is written to a sibling temporary
// folder, which then takes the place of `dir` (an atomic exchange where the filesystem
// has one), so no stale chip folder or program survives beside the new one. A `dir`
// that exists and is not a program folder (anything but program.txt, manifest.json and
// chipN/ program folders) is refused with an IoError and left untouched.
void publish_program(const fs::path& dir, const std::vector<ProgramFolder>& chips, bool split);

// The chip folders of a split folder, in chip order; empty for a single-chip folder.
std::vector<fs::path> chip_folders(const fs::path& dir);

}  // namespace cutcheck
