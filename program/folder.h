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

// The chip folders of a split folder, in chip order; empty for a single-chip folder.
std::vector<fs::path> chip_folders(const fs::path& dir);

}  // namespace cutcheck
