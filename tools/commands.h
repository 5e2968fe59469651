// The subcommands of the cutcheck command line, one file each.
#pragma once

#include <CLI/CLI.hpp>

namespace cutcheck::cli {

void add_author(CLI::App& app);
void add_weights(CLI::App& app);
void add_inputs(CLI::App& app);
void add_run(CLI::App& app);
void add_generate(CLI::App& app);
void add_spec(CLI::App& app);
void add_import_llama2c(CLI::App& app);

}  // namespace cutcheck::cli
