#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"
#include "model/sharding.h"
#include "model/weights.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {

void add_weights(CLI::App& app) {
  struct Args {
    std::string spec, dir, dtype;
    uint64_t seed = 0;
    std::vector<int64_t> tp;
    Destinations destinations;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("weights", "write seeded synthetic weights for a spec");
  cmd->add_option("--spec", args->spec, "a built-in spec or a spec JSON file")->required();
  add_number(cmd, "--seed", args->seed, "the generator's seed", seeds)->capture_default_str();
  args->destinations.add(cmd, "--dir", args->dir, "the folder to write model.safetensors and spec.json to",
                         Destinations::Kind::folder)
      ->required();
  add_number(cmd, "--tp", args->tp, "also write the shards of these tp splits (DIR/tpN/chipC.safetensors)", tp_widths);
  cmd->add_option("--dtype", args->dtype,
                   "q8_0, q4_0, q5_0, q4_K or q6_K: f32 weights whose matrices are quantized by ggml's reference quantizer "
                   "and dequantized again (default: the spec's dtype; a quantized spec writes its blocks)");
  cmd->callback([args] {
    ModelSpec spec = load_spec(args->spec);
    std::optional<QuantFormat> through;
    if (!args->dtype.empty()) {
      QuantFormat format;
      if (!parse_quant_format(args->dtype, format) || !ggml_type(format))
        throw Error(fmt::format("--dtype '{}': choose q8_0, q4_0, q5_0, q4_K or q6_K", args->dtype));
      through = format;
      spec.store_every_weight_as(DType::f32);
    }
    for (int64_t tp : args->tp)  // refused before any file is written
      if (auto why = widths_unsplittable(spec, tp)) throw Error(fmt::format("--tp {}: {}", tp, *why));
    write_synthetic_weights(args->dir, spec, args->seed, through);  // streamed: no tensor whole in memory
    write_file_atomic(fs::path(args->dir) / "spec.json", spec.to_json().dump(2) + "\n");
    if (!args->tp.empty()) {
      const TensorMap weights = read_weights(args->dir, spec);  // mapped, not copied
      for (int64_t tp : args->tp) write_shards(args->dir, weights, spec, tp);
    }
    fmt::print("wrote {} and spec.json for {}\n", weights_file(args->dir).string(), spec.summary());
  });
}

void add_shard(CLI::App& app) {
  struct Args {
    std::string dir;
    std::vector<int64_t> tp;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("shard", "write the tp shards of a weights folder (DIR/tpN/chipC.safetensors)");
  cmd->add_option("--dir", args->dir, "a weights folder with model.safetensors and spec.json")->required();
  add_number(cmd, "--tp", args->tp, "the splits to write", tp_widths)->required();
  cmd->callback([args] {
    ModelSpec spec = load_spec((fs::path(args->dir) / "spec.json").string());
    TensorMap weights = read_weights(args->dir, spec);
    for (int64_t tp : args->tp) {
      write_shards(args->dir, weights, spec, tp);
      fmt::print("wrote {}/tp{}/chip0 .. chip{}.safetensors\n", args->dir, tp, tp - 1);
    }
  });
}

}  // namespace cutcheck::cli
