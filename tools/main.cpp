// cutcheck: author, run and check programs for the cuts of a transformer decoder.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <string_view>

#include "core/version.h"
#include "tools/commands.h"
#include "tools/run_command_line.h"

namespace {

// Each adder with the commands it defines, in the order --help lists them. Defining every
// command's options would take half of the start-up time of a command such as `generate`,
// so only the command asked for is defined (none for --version); --help, no command or an
// unknown one define them all. A name missing here costs only that saving;
// tests/cli_startup.sh runs each listed command's --help to catch a name paired with the
// wrong adder.
struct Adder {
  std::array<std::string_view, 3> commands;  // the rest empty
  void (*add)(CLI::App&);
};
constexpr Adder adders[] = {
    {{"author"}, cutcheck::cli::add_author},
    {{"weights"}, cutcheck::cli::add_weights},
    {{"shard"}, cutcheck::cli::add_shard},
    {{"inputs"}, cutcheck::cli::add_inputs},
    {{"run"}, cutcheck::cli::add_run},
    {{"generate"}, cutcheck::cli::add_generate},
    {{"spec"}, cutcheck::cli::add_spec},
    {{"import-llama2c", "import-hf", "import-gguf"}, cutcheck::cli::add_imports},
    {{"export-gguf", "export-hf"}, cutcheck::cli::add_exports},
    {{"check"}, cutcheck::cli::add_check},
    {{"conform"}, cutcheck::cli::add_conform},
    {{"conform-engine"}, cutcheck::cli::add_conform_engine},
    {{"mutate"}, cutcheck::cli::add_mutate},
    {{"merge-reports"}, cutcheck::cli::add_merge_reports},
    {{"export-mlir"}, cutcheck::cli::add_export_mlir},
    {{"export-onnx"}, cutcheck::cli::add_export_onnx},
    {{"tolerance-report"}, cutcheck::cli::add_tolerance_report},
};

void add_commands(CLI::App& app, int argc, char** argv) {
  const std::string_view asked = argc >= 2 ? argv[1] : "";
  if (asked == "--version") return;
  for (const Adder& adder : adders) {
    if (!asked.empty() && std::find(adder.commands.begin(), adder.commands.end(), asked) != adder.commands.end()) {
      adder.add(app);
      return;
    }
  }
  for (const Adder& adder : adders) adder.add(app);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cutcheck: a reference interpreter and property checker for transformer-decoder programs"};
  app.set_version_flag("--version", cutcheck::version_line());
  app.require_subcommand(1);
  add_commands(app, argc, argv);
  return cutcheck::cli::run_command_line(app, argc, argv);
}
