// The part of a command's main() every cutcheck executable shares: refuse an unknown
// command by name, parse, run, and map what was thrown to an exit code (docs/exit-codes.md),
// with messages that start "cutcheck: ".
#pragma once

#include <CLI/CLI.hpp>

namespace cutcheck::cli {

int run_command_line(CLI::App& app, int argc, char** argv);

}  // namespace cutcheck::cli
