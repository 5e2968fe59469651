// cutcheck-mlir: a backend that lowers cutcheck programs through Debian's MLIR 22 and runs
// the compiled code, obeying the conformance protocol (docs/conformance.md):
//   cutcheck-mlir run FOLDER --inputs IN --outputs OUT
// exits 0 with OUT written, 77 for what it does not lower (tp splits), 2 on an error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/version.h"
#include "mlir/compile.h"
#include "mlir/runtime.h"
#include "program/folder.h"
#include "program/inputs.h"

namespace cutcheck {
namespace {

void run(const std::string& folder, const std::string& inputs_file, const std::string& outputs_file,
         MlirPrecision precision, const std::string& cache, bool verbose) {
  if (!chip_folders(folder).empty()) throw NotYet("tp splits are not lowered by this backend");
  ProgramFolder f = ProgramFolder::read(folder);
  MlirExport exported = export_mlir(f.program, f.manifest, precision);
  std::string why;
  std::optional<Toolchain> tools = Toolchain::find(&why);
  if (!tools) throw Error(why);
  Compiled compiled = compile(exported, *tools, cache.empty() ? mlir_cache_dir() : fs::path(cache));
  CompiledProgram program = CompiledProgram::load(compiled.library);

  const TensorMap weights = load_weights(f.manifest, folder);
  const TensorMap inputs = read_safetensors(inputs_file).tensors;
  std::vector<const Tensor*> arguments;
  for (const ManifestWeight& w : f.manifest.weights) arguments.push_back(&weights.at(w.name));
  check_inputs(f.program, inputs);  // as the reference checks them
  for (const InputDecl& in : f.program.inputs) arguments.push_back(&inputs.at(f.program.name(in.value)));
  std::vector<TensorType> result_types;
  for (const OutputDecl& o : f.program.outputs) result_types.push_back(f.program.type(o.value));

  const auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> results = program.call(arguments, result_types);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  TensorMap out;
  for (size_t i = 0; i < results.size(); ++i) out.emplace(f.program.outputs[i].name, std::move(results[i]));
  write_safetensors(outputs_file, out);
  if (verbose)
    fmt::print(stderr, "cutcheck-mlir: {} {} in {:.3f} s, ran in {:.6f} s\n", f.program.label,
               compiled.cached ? "found in the cache" : "compiled", compiled.seconds, seconds);
}

}  // namespace
}  // namespace cutcheck

int main(int argc, char** argv) {
  CLI::App app{"cutcheck-mlir: a conformance backend that compiles programs with MLIR 22 and runs them"};
  app.set_version_flag("--version", cutcheck::version_line("cutcheck-mlir"));
  app.require_subcommand(1);
  std::string folder, inputs, outputs, precision = "spec", cache;
  bool verbose = false;
  auto* run = app.add_subcommand("run", "lower, compile (cached) and run a program folder");
  run->add_option("folder", folder, "the program folder")->required();
  run->add_option("--inputs", inputs, "the inputs, safetensors")->required();
  run->add_option("--outputs", outputs, "where to write the outputs, safetensors")->required();
  run->add_option("--precision", precision, "spec: f64 sums and functions, as the language says; f32")->capture_default_str();
  run->add_option("--cache", cache, "compiled objects (default: CUTCHECK_MLIR_CACHE or ~/.cache/cutcheck-mlir)");
  run->add_flag("--verbose", verbose, "say how long compiling and running took");
  try {
    app.parse(argc, argv);
    cutcheck::run(folder, inputs, outputs, cutcheck::parse_mlir_precision(precision), cache, verbose);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const cutcheck::NotYet& e) {
    fmt::print(stderr, "cutcheck-mlir: not supported: {}\n", e.what());
    return 77;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cutcheck-mlir: error: {}\n", e.what());
    return 2;
  }
  return 0;
}
