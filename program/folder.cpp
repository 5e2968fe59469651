#include "program/folder.h"

#include <fmt/format.h>

#include "core/error.h"
#include "program/text.h"
#include "program/verifier.h"

namespace cutcheck {

ProgramFolder ProgramFolder::read(const fs::path& dir) {
  fs::path text_path = dir / "program.txt", manifest_path = dir / "manifest.json";
  if (!fs::exists(text_path)) throw IoError(fmt::format("'{}' holds no program.txt", dir.string()));
  ProgramFolder f;
  f.text = read_file(text_path, 256 << 20);
  f.program = parse_and_verify(f.text, text_path.string());
  f.manifest = Manifest::read(manifest_path);
  verify_manifest(f.program, f.manifest, manifest_path.string());
  return f;
}

void ProgramFolder::write(const fs::path& dir) const {
  write_file_atomic(dir / "program.txt", text);
  if (manifest.about.contains("spec")) write_file_atomic(dir / "spec.json", manifest.about["spec"].dump(2) + "\n");
  write_file_atomic(dir / "manifest.json", manifest.to_json().dump(2) + "\n");
}

std::vector<fs::path> chip_folders(const fs::path& dir) {
  std::vector<fs::path> out;
  for (int c = 0; fs::exists(dir / fmt::format("chip{}", c) / "program.txt"); ++c) out.push_back(dir / fmt::format("chip{}", c));
  return out;
}

}  // namespace cutcheck
