#include <fmt/format.h>

#include "model/llama2c.h"
#include "tools/commands.h"

namespace cutcheck::cli {

void add_import_llama2c(CLI::App& app) {
  struct Args {
    std::string file, out;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("import-llama2c", "import a llama2.c checkpoint as spec.json and model.safetensors");
  cmd->add_option("file", args->file, "the llama2.c .bin checkpoint")->required();
  cmd->add_option("--out", args->out, "the weights folder to write")->required();
  cmd->callback([args] {
    import_llama2c(args->file, args->out);
    fmt::print("wrote {0}/spec.json and {0}/model.safetensors\n", args->out);
  });
}

}  // namespace cutcheck::cli
