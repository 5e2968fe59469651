#include <fmt/format.h>

#include "core/error.h"
#include "onnx/export.h"
#include "tools/commands.h"

namespace cutcheck::cli {

void add_export_onnx(CLI::App& app) {
  struct Args {
    std::string folder, out, cache, precision = "spec";
    uint64_t external_from = uint64_t(1) << 20;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("export-onnx", "export a program (or a tp split) to ONNX, opset 17 (docs/onnx.md)");
  cmd->add_option("folder", args->folder, "the program folder, or a folder of chipN/ program folders")->required();
  auto* out = cmd->add_option("--out", args->out, "the .onnx file to write (and its .plan.json beside it)");
  auto* cache = cmd->add_option("--cache", args->cache, "export into CACHE/<hash>/ unless done already; print the plan's path");
  out->excludes(cache);
  cmd->add_option("--precision", args->precision, "spec: sums and functions in f64, as the language says; f32")
      ->capture_default_str();
  cmd->add_option("--external-from", args->external_from, "weights of at least this many bytes go to external data")
      ->capture_default_str();
  cmd->callback([args] {
    OnnxOptions o;
    if (args->precision == "spec") o.precision = OnnxPrecision::spec;
    else if (args->precision == "f32") o.precision = OnnxPrecision::f32;
    else throw Error(fmt::format("--precision '{}': choose spec (f64 sums, as the language says) or f32", args->precision));
    o.external_from_bytes = args->external_from;
    if (args->out.empty() && args->cache.empty()) throw Error("export-onnx: give --out FILE.onnx or --cache DIR");
    if (!args->cache.empty()) {
      fmt::print("{}\n", export_onnx_cached(args->folder, args->cache, o).string());
      return;
    }
    fs::path plan = export_onnx_folder(args->folder, args->out, o);
    fmt::print("wrote {} (plan {})\n", args->out, plan.string());
  });
}

}  // namespace cutcheck::cli
