// Which cutcheck this is: the CMake project version and, when the build knew it, the git
// commit it was built from. Printed by --version and recorded in every report.
#pragma once

#include <string>

namespace cutcheck {

std::string version();         // "0.1.0"
std::string version_commit();  // "3ccf2db1a2b3", with "-dirty" for edited sources; "" when unknown
// "cutcheck 0.1.0 (git 3ccf2db1a2b3)", or "cutcheck 0.1.0" when the commit is unknown.
std::string version_line(const std::string& program = "cutcheck");

}  // namespace cutcheck
