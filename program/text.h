// The text form of a program. print() is canonical, and parse(print(p)) prints back
// to the same text; parse() reports errors as "source:line:column: what".
#pragma once

#include <string>

#include "program/program.h"

namespace cutcheck {

std::string print(const Program& program);

// Parses the syntax and resolves names (each value defined once, before its use).
// Types and shapes are checked by verify() (verifier.h), which parse_and_verify() adds.
Program parse(const std::string& text, const std::string& source = "program");
Program parse_and_verify(const std::string& text, const std::string& source = "program");

// How numbers are written: the shortest text that reads back to the same value.
std::string format_number(double value, DType dtype);

}  // namespace cutcheck
