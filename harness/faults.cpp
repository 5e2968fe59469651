#include "harness/faults.h"

#include <fmt/format.h>

#include "core/named.h"

namespace cutcheck {

const std::vector<FaultSpec>& fault_catalog() {
  static const std::vector<FaultSpec> catalog = [] {
    std::vector<FaultSpec> out;
    for (const FaultInfo& f : author_faults()) out.push_back({f.name, f.description, f.fault, {}, false});
    RunOptions bf16;
    bf16.round_to_bf16 = true;
    out.push_back({"bf16-activations", "every f32 result rounded to bf16, as a bf16 backend computes", Fault::none, bf16, true});
    return out;
  }();
  return catalog;
}

const FaultSpec& find_fault_spec(const std::string& name) { return find_named(fault_catalog(), name, "fault"); }

}  // namespace cutcheck
