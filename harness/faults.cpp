#include "harness/faults.h"

#include <fmt/format.h>

#include "core/error.h"

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

const FaultSpec& find_fault_spec(const std::string& name) {
  std::vector<std::string> names;
  for (const FaultSpec& f : fault_catalog()) {
    if (f.name == name) return f;
    names.push_back(f.name);
  }
  throw Error(fmt::format("unknown fault '{}' (known: {})", name, fmt::join(names, ", ")));
}

}  // namespace cutcheck
