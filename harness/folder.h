// A program folder ready to run: one program, or the chip folders of a tp split, with
// their weights loaded through their manifests. Inputs and outputs use the unsplit
// layout either way.
#pragma once

#include <memory>
#include <vector>

#include "core/files.h"
#include "faults/catalog.h"
#include "harness/variants.h"
#include "reference/interpreter.h"

namespace cutcheck {

class FolderRun {
 public:
  static FolderRun open(const fs::path& dir, RunOptions options = {});
  // The folder's programs with `fault` written into them: a backend with a bug. Where the
  // manifest records a cut the fault does not act on (Fault::acts_on) the programs run as
  // they are; otherwise they must hold the fault's anchors (AnchorMissing names them).
  static FolderRun open_with_fault(const fs::path& dir, const Fault& fault, RunOptions options = {});
  // The folder's programs as a legitimate variant computes them (harness/variants.h).
  static FolderRun open_as(const fs::path& dir, const Variant& variant);
  TensorMap run(const TensorMap& inputs);
  bool split() const { return chips_.size() > 1 || chips_[0]->program().replica.has_value(); }
  const Executable& chip(size_t c) const { return *chips_.at(c); }
  size_t chips() const { return chips_.size(); }

 private:
  static FolderRun open(const fs::path& dir, const Variant& as, const Fault* fault);
  std::vector<std::unique_ptr<Executable>> chips_;
};

// Valid random inputs for the folder's program, in the unsplit layout (for a split, from
// the cut and spec its manifests record).
TensorMap folder_inputs(const fs::path& dir, uint64_t seed);

}  // namespace cutcheck
