#include "conform/precision.h"

#include "core/named.h"

namespace cutcheck {

const std::vector<Precision>& precisions() {
  static const std::vector<Precision> all = {{"f32", Tolerance::f32(), true}, {"bf16", Tolerance::bf16(), false}};
  return all;
}

const Precision& find_precision(const std::string& name) { return find_named(precisions(), name, "--tolerance"); }

void declare_precision(ConformOptions& o, const Precision& precision) {
  o.tolerance = precision.tolerance;
  o.large_keys = precision.large_keys;
}

}  // namespace cutcheck
