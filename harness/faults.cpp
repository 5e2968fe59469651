#include "harness/faults.h"

#include <fmt/format.h>

#include "core/named.h"
#include "harness/variants.h"

namespace cutcheck {

const std::vector<FaultSpec>& fault_catalog() {
  static const std::vector<FaultSpec> catalog = [] {
    std::vector<FaultSpec> out;
    for (const FaultInfo& f : author_faults()) out.push_back({f.name, f.description, f.fault, {}, false});
    // A bf16 backend: wrong against f32's bounds, correct against bf16's.
    out.push_back({"bf16-activations", "every activation stored in bf16, as a bf16 backend computes", Fault::none,
                   find_variant("bf16").run, true});
    return out;
  }();
  return catalog;
}

const FaultSpec& find_fault_spec(const std::string& name) { return find_named(fault_catalog(), name, "fault"); }

}  // namespace cutcheck
