#include <fmt/format.h>

#include "core/safetensors.h"
#include "harness/folder.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {

void add_inputs(CLI::App& app) {
  struct Args {
    std::string folder, out;
    uint64_t seed = 0;
    Destinations destinations;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("inputs", "write valid random inputs for an authored program");
  cmd->add_option("folder", args->folder, "the program folder (program.txt, manifest.json), or a split's folder")
      ->required();
  add_number(cmd, "--seed", args->seed, "the generator's seed", seeds)->capture_default_str();
  args->destinations.add(cmd, "--out", args->out, "the safetensors file to write", Destinations::Kind::file)->required();
  cmd->callback([args] {
    TensorMap inputs = folder_inputs(args->folder, args->seed);
    write_safetensors(args->out, inputs);
    fmt::print("wrote {} inputs to {}\n", inputs.size(), args->out);
  });
}

}  // namespace cutcheck::cli
