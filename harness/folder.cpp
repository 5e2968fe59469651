#include "harness/folder.h"

#include <fmt/format.h>

#include "author/author.h"
#include "core/error.h"
#include "harness/split.h"
#include "program/folder.h"
#include "program/inputs.h"
#include "program/split.h"

namespace cutcheck {

FolderRun FolderRun::open(const fs::path& dir, RunOptions options) {
  return open(dir, Variant{"", "", Precision::f32, std::move(options)}, nullptr);
}

FolderRun FolderRun::open_with_fault(const fs::path& dir, const Fault& fault, RunOptions options) {
  return open(dir, Variant{"", "", Precision::f32, std::move(options)}, &fault);
}

FolderRun FolderRun::open_as(const fs::path& dir, const Variant& variant) { return open(dir, variant, nullptr); }

FolderRun FolderRun::open(const fs::path& dir, const Variant& as, const Fault* fault) {
  std::vector<fs::path> folders = chip_folders(dir);
  if (folders.empty()) folders.push_back(dir);
  FolderRun r;
  std::vector<const Program*> programs;
  for (const fs::path& f : folders) {
    ProgramFolder folder = ProgramFolder::read(f);
    if (fault) {
      const bool recorded = folder.manifest.about.contains("cut");
      bool acts = true;
      if (recorded) {
        const About about = read_about(folder.manifest.about, (f / "manifest.json").string());
        acts = fault->acts_on(about.cut, folder.program.replica ? folder.program.replica->count : 1, about.spec);
      }
      try {
        if (acts) folder.program = fault->apply(folder.program);
      } catch (const AnchorMissing& e) {
        throw AnchorMissing(fmt::format("{}: the fault '{}' has nothing to act on: {}", (f / "program.txt").string(),
                                        fault->name, e.what()));
      }
    }
    TensorMap weights = load_weights(folder.manifest, f);
    r.chips_.push_back(std::make_unique<Executable>(as.executable(std::move(folder.program), std::move(weights))));
    programs.push_back(&r.chips_.back()->program());
  }
  if (r.split()) verify_split(programs, dir.string());
  return r;
}

TensorMap FolderRun::run(const TensorMap& inputs) {
  if (!split()) return chips_[0]->run(inputs);
  std::vector<Executable*> chips;
  for (auto& c : chips_) chips.push_back(c.get());
  return run_split(chips, inputs);
}

TensorMap folder_inputs(const fs::path& dir, uint64_t seed) {
  std::vector<fs::path> chips = chip_folders(dir);
  if (chips.empty()) return random_inputs(ProgramFolder::read(dir).program, seed);
  fs::path manifest = chips[0] / "manifest.json";
  About about = read_about(Manifest::read(manifest).about, manifest.string());
  return random_inputs(author_program(about.cut, about.spec), seed);
}

}  // namespace cutcheck
