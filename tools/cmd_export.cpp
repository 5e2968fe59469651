#include <fmt/format.h>

#include <optional>

#include "core/error.h"
#include "model/checkpoint_export.h"
#include "model/gguf_export.h"
#include "model/hf_export.h"
#include "model/weights.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {
namespace {

using Writer = void (*)(const fs::path&, const ModelSpec&, const TensorMap&, DType);

// One export command: a spec and its weights in, a checkpoint another engine loads out
// (the reverse of the imports, docs/checkpoints.md).
void add_export(CLI::App& app, const std::string& name, const std::string& description, const std::string& out_what,
                Destinations::Kind out_kind, Writer write) {
  struct Args {
    std::string spec, weights, out, dtype;
    std::optional<uint64_t> seed;
    Destinations destinations;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(name, description);
  cmd->add_option("--spec", args->spec, "a built-in spec or a spec file (default: the spec.json beside --weights)");
  auto* weights = cmd->add_option("--weights", args->weights, "the weights folder to export");
  auto* seed = add_number(cmd, "--seed", args->seed, "export seeded synthetic weights instead of --weights", seeds);
  weights->excludes(seed);
  args->destinations.add(cmd, "--out", args->out, out_what, out_kind)->required();
  cmd->add_option("--dtype", args->dtype, "f32, f16 or bf16 (default: the spec's dtype)");
  cmd->callback([args, write] {
    if (args->weights.empty() && !args->seed) throw Error("give --weights (a weights folder) or --seed (synthetic weights)");
    const ModelSpec spec = resolve_spec(args->spec, args->weights);
    const DType dtype = args->dtype.empty() ? spec.dtype : checkpoint_dtype(args->dtype, "--dtype");
    const TensorMap weights = args->seed ? synthetic_weights(spec, *args->seed) : read_weights(args->weights, spec);
    write(args->out, spec, weights, dtype);
    fmt::print("wrote {} ({}, {})\n", args->out, spec.name, dtype_name(dtype));
  });
}

}  // namespace

void add_exports(CLI::App& app) {
  add_export(app, "export-gguf",
             "export a model as a GGUF file llama.cpp runs (llama architecture, F32/F16/BF16; docs/checkpoints.md)",
             "the .gguf file to write", Destinations::Kind::file, write_gguf);
  add_export(app, "export-hf",
             "export a model as a Hugging Face folder (config.json + model.safetensors; docs/checkpoints.md)",
             "the folder to write (new, or an earlier export)", Destinations::Kind::folder, write_hf);
}

}  // namespace cutcheck::cli
