// The subcommands of the cutcheck command line, one file each.
#pragma once

#include <CLI/CLI.hpp>
#include <stdexcept>

namespace cutcheck::cli {

void add_author(CLI::App& app);
void add_weights(CLI::App& app);
void add_shard(CLI::App& app);
void add_inputs(CLI::App& app);
void add_run(CLI::App& app);
void add_generate(CLI::App& app);
void add_spec(CLI::App& app);
void add_imports(CLI::App& app);  // import-llama2c, import-hf, import-gguf
void add_exports(CLI::App& app);  // export-gguf, export-hf
void add_check(CLI::App& app);
void add_conform(CLI::App& app);
void add_conform_engine(CLI::App& app);
void add_mutate(CLI::App& app);
void add_merge_reports(CLI::App& app);
void add_export_mlir(CLI::App& app);
void add_export_onnx(CLI::App& app);  // runs export_onnx_program (tools/cmd_export_onnx.cpp)
void add_tolerance_report(CLI::App& app);

// The ONNX exporter is a program of its own beside cutcheck (tools/export_onnx_main.cpp).
inline constexpr const char* export_onnx_program = "cutcheck-export-onnx";
inline constexpr const char* export_onnx_summary = "export a program (or a tp split) to ONNX, opset 17 (docs/onnx.md)";

// Thrown when a check or conformance run finds failures: exit code 1, not 2.
class CheckFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace cutcheck::cli
