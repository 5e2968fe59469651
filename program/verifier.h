// The verifier: a program is well formed when every value is defined once before its
// uses, every op obeys its type rule (ops.h), inputs and weights are declared sensibly,
// outputs are named uniquely, collectives fit the program's chip count, and its values
// fit the memory limit. Errors are VerifyError "source:line:column: what".
#pragma once

#include <string>

#include "program/program.h"

namespace cutcheck {

void verify(const Program& program, const std::string& source = "program");

// Value names are letters, digits, '_' and '.'; output names also start with a letter or '_'.
bool is_valid_value_name(std::string_view name);
bool is_valid_output_name(std::string_view name);

}  // namespace cutcheck
