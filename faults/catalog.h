// The fault catalog: deliberate bugs, each the way real backends get a cut wrong, written
// as rewrites of the program a backend is given (program/rewrite.h). They prove that the
// properties and conformance catch such bugs, and `cutcheck run --fault NAME` runs any
// program folder with one of them. The golden code (author/, reference/) knows nothing
// of them; docs/faults.md lists each fault's anchors, the author's value names it edits.
#pragma once

#include <string>
#include <vector>

#include "model/cut.h"
#include "model/spec.h"
#include "program/program.h"
#include "program/rewrite.h"

namespace cutcheck {

struct Fault {
  std::string name;
  std::string description;
  // Wrong only where a tolerance for f32 applies; under bf16's it passes.
  bool precision_only = false;
  // The cut kinds whose authored programs it changes (for some shapes: rows-past-eight
  // needs more than 8 rows), and whether only the chips of a tp split.
  std::vector<CutKind> kinds;
  bool split_only = false;
  void (*rewrite)(Rewriter&) = nullptr;
  // The spec knob the fault breaks (its anchors exist only where a spec has it), or none.
  bool (*needs)(const ModelSpec&) = nullptr;

  // The faulty form of `program`. Throws AnchorMissing, naming the value it looked for,
  // when the program has none of the fault's anchors.
  Program apply(const Program& program) const;
  // Whether the authored program of `cut` of `spec`, split `tp` ways, is one the fault
  // changes.
  bool acts_on(const Cut& cut, int64_t tp, const ModelSpec& spec) const;
};

const std::vector<Fault>& fault_catalog();
// Throws Error listing the known names.
const Fault& find_fault(const std::string& name);

}  // namespace cutcheck
