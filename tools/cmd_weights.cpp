#include <fmt/format.h>

#include "core/files.h"
#include "model/weights.h"
#include "tools/commands.h"

namespace cutcheck::cli {

void add_weights(CLI::App& app) {
  struct Args {
    std::string spec, dir;
    uint64_t seed = 0;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("weights", "write seeded synthetic weights for a spec");
  cmd->add_option("--spec", args->spec, "a built-in spec or a spec JSON file")->required();
  cmd->add_option("--seed", args->seed, "the generator's seed")->capture_default_str();
  cmd->add_option("--dir", args->dir, "the folder to write model.safetensors and spec.json to")->required();
  cmd->callback([args] {
    ModelSpec spec = load_spec(args->spec);
    write_weights(args->dir, synthetic_weights(spec, args->seed), spec);
    write_file_atomic(fs::path(args->dir) / "spec.json", spec.to_json().dump(2) + "\n");
    fmt::print("wrote {} and spec.json for {}\n", weights_file(args->dir).string(), spec.summary());
  });
}

}  // namespace cutcheck::cli
