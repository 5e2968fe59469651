// cutcheck-mlir: a backend that lowers cutcheck programs through Debian's MLIR 22 and runs
// the compiled code, obeying the conformance protocol (docs/conformance.md):
//   cutcheck-mlir run FOLDER --inputs IN --outputs OUT
//   cutcheck-mlir run --serve   (the persistent protocol)
// exits 0 with OUT written, 77 for what it does not lower (tp splits), 2 on an error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <list>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/serve_protocol.h"
#include "core/version.h"
#include "mlir/compile.h"
#include "mlir/runtime.h"
#include "program/fingerprint.h"
#include "program/folder.h"
#include "program/inputs.h"

namespace cutcheck {
namespace {

// A program lowered, compiled and loaded, with its weights: what a server keeps.
struct Loaded {
  ProgramFolder folder;
  Compiled compiled;
  CompiledProgram program;
  TensorMap weights;
};

Loaded load(const std::string& folder, MlirPrecision precision, const std::string& cache) {
  if (!chip_folders(folder).empty()) throw NotYet("tp splits are not lowered by this backend");
  ProgramFolder f = ProgramFolder::read(folder);
  MlirExport exported = export_mlir(f.program, f.manifest, precision);
  std::string why;
  std::optional<Toolchain> tools = Toolchain::find(&why);
  if (!tools) throw Error(why);
  Compiled compiled = compile(exported, *tools, cache.empty() ? mlir_cache_dir() : fs::path(cache));
  CompiledProgram program = CompiledProgram::load(compiled.library);
  TensorMap weights = load_weights(f.manifest, folder);
  return Loaded{std::move(f), std::move(compiled), std::move(program), std::move(weights)};
}

// `kept`: by a server, from an earlier request.
void run(const Loaded& loaded, const std::string& inputs_file, const std::string& outputs_file, bool verbose,
         bool kept = false) {
  const Program& p = loaded.folder.program;
  const TensorMap inputs = read_safetensors(inputs_file).tensors;
  std::vector<const Tensor*> arguments;
  for (const ManifestWeight& w : loaded.folder.manifest.weights) arguments.push_back(&loaded.weights.at(w.name));
  check_inputs(p, inputs);  // as the reference checks them
  for (const InputDecl& in : p.inputs) arguments.push_back(&inputs.at(p.name(in.value)));
  std::vector<TensorType> result_types;
  for (const OutputDecl& o : p.outputs) result_types.push_back(p.type(o.value));

  const auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> results = loaded.program.call(arguments, result_types);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  TensorMap out;
  for (size_t i = 0; i < results.size(); ++i) out.emplace(p.outputs[i].name, std::move(results[i]));
  write_safetensors(outputs_file, out);
  if (verbose)
    fmt::print(stderr, "cutcheck-mlir: {} {}, ran in {:.6f} s\n", p.label,
               kept ? "kept from an earlier request"
                    : fmt::format("{} in {:.3f} s", loaded.compiled.cached ? "found in the cache" : "compiled",
                                  loaded.compiled.seconds),
               seconds);
}

// The persistent protocol: requests from stdin until it ends. The programs loaded for the
// last few folders are kept, keyed by the folder's fingerprint, so that a generation (the
// same few cuts, step after step) lowers each cut once.
void serve(MlirPrecision precision, const std::string& cache, bool verbose) {
  constexpr size_t programs_kept = 8;
  std::list<std::pair<std::string, Loaded>> recent;  // most recently used first
  serve_requests([&](const ServeRequest& request) {
    const std::string key = program_fingerprint(request.folder);
    auto it = std::find_if(recent.begin(), recent.end(), [&](const auto& entry) { return entry.first == key; });
    const bool kept = it != recent.end();
    if (!kept) {
      recent.emplace_front(key, load(request.folder, precision, cache));
      if (recent.size() > programs_kept) recent.pop_back();
    } else {
      recent.splice(recent.begin(), recent, it);
    }
    run(recent.front().second, request.inputs, request.outputs, verbose, kept);
  });
}

}  // namespace
}  // namespace cutcheck

int main(int argc, char** argv) {
  CLI::App app{"cutcheck-mlir: a conformance backend that compiles programs with MLIR 22 and runs them"};
  app.set_version_flag("--version", cutcheck::version_line("cutcheck-mlir"));
  app.require_subcommand(1);
  std::string folder, inputs, outputs, precision = "spec", cache;
  bool verbose = false, serve = false;
  auto* run = app.add_subcommand("run", "lower, compile (cached) and run a program folder");
  run->add_option("folder", folder, "the program folder");
  run->add_option("--inputs", inputs, "the inputs, safetensors");
  run->add_option("--outputs", outputs, "where to write the outputs, safetensors");
  run->add_flag("--serve", serve,
                "instead of FOLDER --inputs --outputs, answer requests from stdin (the persistent protocol, "
                "docs/conformance.md), keeping compiled programs between them");
  run->add_option("--precision", precision, "spec: f64 sums and functions, as the language says; f32")->capture_default_str();
  run->add_option("--cache", cache, "compiled objects (default: CUTCHECK_MLIR_CACHE or ~/.cache/cutcheck-mlir)");
  run->add_flag("--verbose", verbose, "say how long compiling and running took");
  try {
    app.parse(argc, argv);
    const cutcheck::MlirPrecision p = cutcheck::parse_mlir_precision(precision);
    if (serve) {
      if (!folder.empty() || !inputs.empty() || !outputs.empty())
        throw cutcheck::Error("--serve takes its folders from stdin: give no FOLDER, --inputs or --outputs with it");
      cutcheck::serve(p, cache, verbose);
    } else {
      if (folder.empty() || inputs.empty() || outputs.empty())
        throw cutcheck::Error("run needs FOLDER, --inputs and --outputs (or --serve)");
      cutcheck::run(cutcheck::load(folder, p, cache), inputs, outputs, verbose);
    }
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
