#include <fmt/format.h>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/serve_protocol.h"
#include "harness/folder.h"
#include "harness/variants.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {

void add_run(CLI::App& app) {
  struct Args {
    std::string folder, inputs, outputs, fault, variant;
    int threads = 1;
    bool serve = false;
    Destinations destinations;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("run", "run an authored program (or the chips of a split) on the reference interpreter");
  cmd->add_option("folder", args->folder, "the program folder (program.txt, manifest.json), or a split's folder");
  cmd->add_option("--inputs", args->inputs, "a safetensors file of the program's inputs");
  args->destinations.add(cmd, "--outputs", args->outputs, "the safetensors file to write the outputs to",
                         Destinations::Kind::file);
  cmd->add_flag("--serve", args->serve,
                "instead of FOLDER --inputs --outputs, answer requests from stdin, one per line (the persistent "
                "protocol, docs/conformance.md)");
  std::string faults;
  for (const Fault& f : fault_catalog()) faults += "\n  " + f.name + ": " + f.description;
  cmd->add_option("--fault", args->fault,
                  "misbehave as a buggy backend would, to test a harness (a rewrite of the program, docs/faults.md):" + faults);
  std::string names;
  for (const Variant& v : variants())
    names += "\n  " + v.name + " (correct under " + std::string(precision_info(v.precision).name) + "): " + v.description;
  cmd->add_option("--variant", args->variant, "compute as a legitimate variant does (other sums, other precisions):" + names)
      ->excludes("--fault");
  add_number(cmd, "--threads", args->threads, "threads for large contractions (the same bits whatever the count)",
             threads)
      ->capture_default_str();
  cmd->callback([args] {
    RunOptions options = args->variant.empty() ? RunOptions{} : find_variant(args->variant).run;
    options.threads = args->threads;
    options.keep_values = false;  // only the outputs are wanted: memory holds the live values alone
    auto run = [&](const std::string& folder, const std::string& inputs, const std::string& outputs) {
      FolderRun program = args->fault.empty() ? FolderRun::open(folder, options)
                                              : FolderRun::open_with_fault(folder, find_fault(args->fault), options);
      write_safetensors(outputs, program.run(read_safetensors(inputs).tensors));
    };
    if (args->serve) {
      if (!args->folder.empty() || !args->inputs.empty() || !args->outputs.empty())
        throw Error("--serve takes its folders from stdin: give no FOLDER, --inputs or --outputs with it");
      // Each request reads its folder afresh: what a server saves here is cutcheck's start-up.
      serve_requests([&](const ServeRequest& r) { run(r.folder, r.inputs, r.outputs); });
      return;
    }
    if (args->folder.empty() || args->inputs.empty() || args->outputs.empty())
      throw Error("run needs FOLDER, --inputs and --outputs (or --serve)");
    run(args->folder, args->inputs, args->outputs);
  });
}

}  // namespace cutcheck::cli
