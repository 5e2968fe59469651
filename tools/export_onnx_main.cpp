// cutcheck-export-onnx: the ONNX exporter's command line, which `cutcheck export-onnx` runs
// (tools/cmd_export_onnx.cpp). A program of its own so that only it links ONNX and protobuf,
// whose loading and static initialisation would otherwise slow every cutcheck process.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "onnx/export.h"
#include "tools/commands.h"
#include "tools/destinations.h"
#include "tools/number_options.h"
#include "tools/run_command_line.h"

int main(int argc, char** argv) {
  using namespace cutcheck;
  CLI::App app{cli::export_onnx_summary, "cutcheck export-onnx"};
  std::string folder, out, cache_dir, precision = "spec";
  uint64_t external_from = uint64_t(1) << 20;
  cli::Destinations destinations;
  app.add_option("folder", folder, "the program folder, or a folder of chipN/ program folders")->required();
  auto* out_option = destinations.add(&app, "--out", out, "the .onnx file to write (and its .plan.json beside it)",
                                      cli::Destinations::Kind::file);
  auto* cache = destinations.add(&app, "--cache", cache_dir,
                                 "export into CACHE/<hash>/ unless done already; print the plan's path",
                                 cli::Destinations::Kind::folder);
  out_option->excludes(cache);
  app.add_option("--precision", precision, "spec: sums and functions in f64, as the language says; f32")
      ->capture_default_str();
  cli::add_number(&app, "--external-from", external_from, "weights of at least this many bytes go to external data",
                  {0, UINT64_MAX})
      ->capture_default_str();
  app.callback([&] {
    OnnxOptions o;
    if (precision == "spec") o.precision = OnnxPrecision::spec;
    else if (precision == "f32") o.precision = OnnxPrecision::f32;
    else throw Error(fmt::format("--precision '{}': choose spec (f64 sums, as the language says) or f32", precision));
    o.external_from_bytes = external_from;
    if (out.empty() && cache_dir.empty()) throw Error("export-onnx: give --out FILE.onnx or --cache DIR");
    if (!cache_dir.empty()) {
      fmt::print("{}\n", export_onnx_cached(folder, cache_dir, o).string());
      return;
    }
    fs::path plan = export_onnx_folder(folder, out, o);
    fmt::print("wrote {} (plan {})\n", out, plan.string());
  });
  return cli::run_command_line(app, argc, argv);
}
