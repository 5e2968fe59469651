// The fault catalog: the ways `cutcheck run --fault NAME` can misbehave, each the way real
// backends do. All but one are bugs the author writes into the program (author/faults.h);
// bf16-activations rounds every f32 result in the interpreter.
#pragma once

#include <string>
#include <vector>

#include "author/faults.h"
#include "reference/interpreter.h"

namespace cutcheck {

struct FaultSpec {
  std::string name;
  std::string description;
  Fault author = Fault::none;
  RunOptions run;
  // The backend is wrong only where a tolerance for f32 applies; under bf16's it passes.
  bool precision_only = false;
};

const std::vector<FaultSpec>& fault_catalog();
// Throws Error listing the known names.
const FaultSpec& find_fault_spec(const std::string& name);

}  // namespace cutcheck
