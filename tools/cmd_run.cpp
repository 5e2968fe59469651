#include <fmt/format.h>

#include "core/safetensors.h"
#include "program/folder.h"
#include "reference/interpreter.h"
#include "tools/commands.h"

namespace cutcheck::cli {

void add_run(CLI::App& app) {
  struct Args {
    std::string folder, inputs, outputs;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("run", "run an authored program on the reference interpreter");
  cmd->add_option("folder", args->folder, "the program folder (program.txt, manifest.json)")->required();
  cmd->add_option("--inputs", args->inputs, "a safetensors file of the program's inputs")->required();
  cmd->add_option("--outputs", args->outputs, "the safetensors file to write the outputs to")->required();
  cmd->callback([args] {
    ProgramFolder f = ProgramFolder::read(args->folder);
    TensorMap weights = load_weights(f.manifest, args->folder);
    Executable exe(std::move(f.program), std::move(weights));
    TensorMap outputs = exe.run(read_safetensors(args->inputs).tensors);
    write_safetensors(args->outputs, outputs);
  });
}

}  // namespace cutcheck::cli
