#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"
#include "mlir/export.h"
#include "program/folder.h"
#include "tools/commands.h"
#include "tools/destinations.h"

namespace cutcheck::cli {

void add_export_mlir(CLI::App& app) {
  struct Args {
    std::string folder, out, precision = "spec";
    Destinations destinations;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("export-mlir", "export a program to MLIR (func, linalg on tensors, tensor, arith, math)");
  cmd->add_option("folder", args->folder, "the program folder (program.txt, manifest.json)")->required();
  args->destinations.add(cmd, "--out", args->out, "the .mlir file to write", Destinations::Kind::file)->required();
  cmd->add_option("--precision", args->precision, "spec: sums and functions in f64, as the language says; f32")
      ->capture_default_str();
  cmd->callback([args] {
    if (!chip_folders(args->folder).empty()) throw NotYet("tp splits are not exported: export one program folder");
    ProgramFolder f = ProgramFolder::read(args->folder);
    MlirExport e = export_mlir(f.program, f.manifest, parse_mlir_precision(args->precision));
    write_file_atomic(args->out, e.text);
    fmt::print("wrote {} (@{}: {} arguments, {} results)\n", args->out, e.function, e.arguments, e.results);
  });
}

}  // namespace cutcheck::cli
