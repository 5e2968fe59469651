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

// Writes a model as one format: `dtype` is --dtype ("" for the spec's dtype); returns the
// name of the type written.
using Writer = std::string (*)(const fs::path& out, const ModelSpec&, const TensorMap&, const std::string& dtype);

std::string export_gguf(const fs::path& out, const ModelSpec& spec, const TensorMap& weights,
                        const std::string& dtype) {
  const GgufFileType type = dtype.empty() ? gguf_file_type(spec.dtype) : parse_gguf_file_type(dtype, "--dtype");
  write_gguf(out, spec, weights, type);
  return gguf_file_type_name(type);
}

std::string export_hf(const fs::path& out, const ModelSpec& spec, const TensorMap& weights, const std::string& dtype) {
  const DType type = dtype.empty() ? spec.dtype : checkpoint_dtype(dtype, "--dtype");
  write_hf(out, spec, weights, type);
  return std::string(dtype_name(type));
}

// One export command: a spec and its weights in, a checkpoint another engine loads out
// (the reverse of the imports, docs/checkpoints.md).
void add_export(CLI::App& app, const std::string& name, const std::string& description, const std::string& out_what,
                Destinations::Kind out_kind, const std::string& dtype_help, Writer write) {
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
  cmd->add_option("--dtype", args->dtype, dtype_help);
  cmd->callback([args, write] {
    if (args->weights.empty() && !args->seed) throw Error("give --weights (a weights folder) or --seed (synthetic weights)");
    ModelSpec spec = resolve_spec(args->spec, args->weights);
    TensorMap weights = args->seed ? synthetic_weights(spec, *args->seed) : read_weights(args->weights, spec);
    if (is_quantized(spec.dtype) || !spec.weight_dtypes.empty()) {  // exported from its exact f32 values
      weights = f32_weights(weights);                                  // (--dtype quantizes again)
      spec.store_every_weight_as(DType::f32);
    }
    const std::string type = write(args->out, spec, weights, args->dtype);
    fmt::print("wrote {} ({}, {})\n", args->out, spec.name, type);
  });
}

}  // namespace

void add_exports(CLI::App& app) {
  add_export(app, "export-gguf",
             "export a model as a GGUF file llama.cpp runs (llama architecture, F32/F16/BF16 or quantized as "
             "llama-quantize does; docs/checkpoints.md)",
             "the .gguf file to write", Destinations::Kind::file,
             "f32, f16, bf16, or q8_0, q4_0, q4_k_m (llama-quantize's file types; default: the spec's dtype)",
             export_gguf);
  add_export(app, "export-hf",
             "export a model as a Hugging Face folder (config.json + model.safetensors; docs/checkpoints.md)",
             "the folder to write (new, or an earlier export)", Destinations::Kind::folder,
             "f32, f16 or bf16 (default: the spec's dtype)", export_hf);
}

}  // namespace cutcheck::cli
