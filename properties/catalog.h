// The property catalog: each property is a RapidCheck body over generated cases, run
// against a Subject. The tests run it (properties/), and so does `cutcheck check`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "properties/subject.h"

namespace cutcheck {

struct Property {
  std::string name;         // "composition.decode"
  std::string description;  // one line
  std::function<void(const Subject&)> body;  // draws its values with *gen and asserts with RC_ASSERT / RC_FAIL
  // Compares runs of the subject's runner with one another, and nothing else of it: it
  // holds of a backend as of the reference (`cutcheck check --backend`).
  bool backend = false;
};

const std::vector<Property>& catalog();
const Property& find_property(const std::string& name);  // throws Error naming the known ones

}  // namespace cutcheck
