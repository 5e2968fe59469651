#include <fmt/format.h>

#include "model/gguf.h"
#include "model/hf.h"
#include "model/llama2c.h"
#include "tools/commands.h"
#include "tools/destinations.h"

namespace cutcheck::cli {
namespace {

// llama2.c checkpoints are f32: nothing to widen.
void import_llama2c_any(const fs::path& from, const fs::path& out, bool) { import_llama2c(from, out); }

// One import command: a checkpoint in, OUT/spec.json and OUT/model.safetensors out.
void add_import(CLI::App& app, const std::string& name, const std::string& description, const std::string& what,
                void (*import)(const fs::path&, const fs::path&, bool)) {
  struct Args {
    std::string from, out;
    bool widen = false;
    Destinations destinations;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(name, description);
  cmd->add_option("checkpoint", args->from, what)->required();
  args->destinations.add(cmd, "--out", args->out, "the weights folder to write", Destinations::Kind::folder)->required();
  if (import != import_llama2c_any)
    cmd->add_flag("--widen", args->widen,
                  "write f32 weights; by default BF16, F16 and quantized weights keep their types (docs/checkpoints.md)");
  cmd->callback([args, import] {
    import(args->from, args->out, args->widen);
    fmt::print("wrote {0}/spec.json and {0}/model.safetensors\n", args->out);
  });
}

}  // namespace

void add_imports(CLI::App& app) {
  add_import(app, "import-llama2c", "import a llama2.c checkpoint as spec.json and model.safetensors",
             "the llama2.c .bin checkpoint", import_llama2c_any);
  add_import(app, "import-hf", "import a Hugging Face Llama or Mistral folder as spec.json and model.safetensors",
             "the folder with config.json and model.safetensors (or model.safetensors.index.json)", import_hf);
  add_import(app, "import-gguf",
             "import a GGUF file (llama architecture; F32/F16/BF16, and Q8_0/Q4_0/Q5_0/Q4_K/Q6_K kept as blocks) as "
             "spec.json and model.safetensors",
             "the .gguf file", import_gguf);
}

}  // namespace cutcheck::cli
