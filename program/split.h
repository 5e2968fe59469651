// The programs of a tp split belong together: chip i of n for i = 0..n-1, and the same
// collectives (op, attributes, operand and result types) in the same order on every chip,
// so that running them together can never leave a chip waiting for another.
#pragma once

#include <string>
#include <vector>

#include "program/program.h"

namespace cutcheck {

// Throws VerifyError naming the chip and the first collective that does not match.
void verify_split(const std::vector<const Program*>& chips, const std::string& source = "split");

}  // namespace cutcheck
