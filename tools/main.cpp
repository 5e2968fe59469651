// cutcheck: author, run and check programs for the cuts of a transformer decoder.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/limits.h"
#include "core/version.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"cutcheck: a reference interpreter and property checker for transformer-decoder programs"};
  app.set_version_flag("--version", cutcheck::version_line());
  app.require_subcommand(1);
  cutcheck::cli::add_author(app);
  cutcheck::cli::add_weights(app);
  cutcheck::cli::add_shard(app);
  cutcheck::cli::add_inputs(app);
  cutcheck::cli::add_run(app);
  cutcheck::cli::add_generate(app);
  cutcheck::cli::add_spec(app);
  cutcheck::cli::add_import_llama2c(app);
  cutcheck::cli::add_check(app);
  cutcheck::cli::add_conform(app);
  cutcheck::cli::add_mutate(app);
  cutcheck::cli::add_merge_reports(app);
  cutcheck::cli::add_export_mlir(app);
  cutcheck::cli::add_export_onnx(app);
  cutcheck::cli::add_tolerance_report(app);
  try {
    // A malformed CUTCHECK_MEMORY_LIMIT is refused before any command starts, not at the
    // first allocation in the middle of one.
    cutcheck::memory_limit();
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; every usage error is exit 2, whatever code
    // CLI11 gives it (docs/exit-codes.md).
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const cutcheck::Interrupted& e) {  // SIGINT, SIGTERM: the clean-up is done by now
    fmt::print(stderr, "cutcheck: stopped by signal {} ({})\n", e.signal, strsignal(e.signal));
    return 128 + e.signal;
  } catch (const cutcheck::cli::CheckFailed& e) {
    fmt::print(stderr, "cutcheck: {}\n", e.what());
    return 1;
  } catch (const cutcheck::NotYet& e) {  // the conformance protocol's "not supported"
    fmt::print(stderr, "cutcheck: not supported: {}\n", e.what());
    return 77;
  } catch (const cutcheck::Error& e) {
    fmt::print(stderr, "cutcheck: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cutcheck: internal error: {}\n", e.what());
    return 70;
  }
  return 0;
}
