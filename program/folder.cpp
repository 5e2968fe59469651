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
  f.text = read_file(text_path, max_bytes::program_text);
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

namespace {

// spec.json too: program folders describe themselves (the brief), so authors write it.
bool is_program_file(const fs::path& name) {
  return name == "program.txt" || name == "manifest.json" || name == "spec.json";
}

bool is_chip_name(const std::string& name) {
  if (name.size() < 5 || name.rfind("chip", 0) != 0) return false;
  for (size_t i = 4; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

// Only what the author itself writes may be replaced: a mistyped --out must never wipe a
// folder of the user's.
void check_replaceable(const fs::path& dir) {
  auto refuse = [&](const fs::path& what) {
    throw IoError(fmt::format("'{}' exists and is not a cutcheck program folder ('{}' is not cutcheck's); "
                              "refusing to replace it",
                              dir.string(), what.string()));
  };
  std::error_code ec;
  fs::file_status st = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(st)) return;
  if (!fs::is_directory(st)) refuse(dir.filename());
  for (const auto& entry : fs::directory_iterator(dir)) {
    const fs::path name = entry.path().filename();
    if (entry.is_regular_file() && !entry.is_symlink() && is_program_file(name)) continue;
    if (!entry.is_symlink() && entry.is_directory() && is_chip_name(name.string())) {
      for (const auto& inner : fs::directory_iterator(entry.path()))
        if (inner.is_symlink() || !inner.is_regular_file() || !is_program_file(inner.path().filename()))
          refuse(name / inner.path().filename());
      continue;
    }
    refuse(name);
  }
}

}  // namespace

void publish_program(const fs::path& dir, const std::vector<ProgramFolder>& chips, bool split) {
  check_replaceable(dir);
  publish_folder(dir, [&](const fs::path& temp) {
    if (split)
      for (size_t c = 0; c < chips.size(); ++c) chips[c].write(temp / fmt::format("chip{}", c));
    else
      chips.at(0).write(temp);
  });
}

std::vector<fs::path> chip_folders(const fs::path& dir) {
  std::vector<fs::path> out;
  for (int c = 0; fs::exists(dir / fmt::format("chip{}", c) / "program.txt"); ++c) out.push_back(dir / fmt::format("chip{}", c));
  return out;
}

}  // namespace cutcheck
