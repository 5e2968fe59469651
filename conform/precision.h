// The precision a backend declares, as one policy (docs/conformance.md, "Tolerance
// policy"): the tolerance its outputs are held to, and whether cases may scale the keys
// by 1000 (bf16 cannot resolve scores on that scale, so such a case would say nothing).
#pragma once

#include <string>
#include <vector>

#include "conform/campaign.h"

namespace cutcheck {

struct Precision {
  std::string name;  // "f32", "bf16"
  Tolerance tolerance;
  bool large_keys;
};

const std::vector<Precision>& precisions();
// Throws Error listing the known names.
const Precision& find_precision(const std::string& name);
// Sets the options' tolerance and large keys to the precision's.
void declare_precision(ConformOptions& o, const Precision& precision);

}  // namespace cutcheck
