#include <fmt/format.h>

#include "author/author.h"
#include "core/error.h"
#include "model/weights.h"
#include "model/sharding.h"
#include "program/folder.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {
namespace {

// A --dir that already holds weights must hold this spec's: a mismatch found now, not at
// the first run. A folder not there yet (weights written later) is fine.
void check_weights_fit(const fs::path& dir, const ModelSpec& spec) {
  const fs::path spec_file = dir / "spec.json";
  if (fs::exists(spec_file)) {
    const ModelSpec theirs = load_spec(spec_file.string());
    ModelSpec renamed = theirs;
    renamed.name = spec.name;  // the name is a label: the fields must agree
    if (!(renamed == spec))
      throw InputError(fmt::format("--dir '{}' holds the weights of another spec ({}: {}), not of {}", dir.string(),
                                   spec_file.string(), theirs.summary(), spec.summary()));
  }
  if (fs::exists(weights_file(dir))) {
    try {
      read_weights(dir, spec);
    } catch (const FormatError& e) {
      throw InputError(fmt::format("--dir '{}' does not hold weights of {}: {}", dir.string(), spec.summary(), e.what()));
    }
  }
}

}  // namespace

void add_author(CLI::App& app) {
  struct Args {
    std::string spec, cut, dir, out;
    int64_t tp = 1;
    Destinations destinations;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("author", "write the program and weight manifest of a cut");
  cmd->add_option("--spec", args->spec, "a built-in spec (tiny, stories260K, ...) or a spec JSON file")->required();
  cmd->add_option("--cut", args->cut, "the cut, e.g. decode{ctx=16} or batch_layer{layer=0,rows=4,ctx=32}")->required();
  cmd->add_option("--dir", args->dir, "the weights folder the manifest names")->required();
  args->destinations.add(cmd, "--out", args->out, "the folder to write program.txt and manifest.json to",
                         Destinations::Kind::folder)
      ->required();
  add_number(cmd, "--tp", args->tp, "split over this many chips: writes OUT/chip0, OUT/chip1, ...", tp_widths)
      ->capture_default_str();
  cmd->callback([args] {
    ModelSpec spec = load_spec(args->spec);
    Cut cut = Cut::parse(args->cut, "--cut");
    check_weights_fit(args->dir, spec);
    // A relative --dir is kept relative (to each program folder); an absolute one, absolute.
    write_cut_folder(cut, spec, args->tp, args->dir, args->out, !fs::path(args->dir).is_absolute());
    if (args->tp == 1) {
      const ProgramFolder written = ProgramFolder::read(args->out);
      fmt::print("wrote {}/program.txt ({} ops) and {}/manifest.json ({} weights)\n", args->out,
                 written.program.ops.size(), args->out, written.manifest.weights.size());
      return;
    }
    fmt::print("wrote {} chip programs to {}/chip0 .. chip{} (their weights: {}/{})\n", args->tp, args->out, args->tp - 1,
               args->dir, shard_file(args->tp, 0).substr(0, shard_file(args->tp, 0).find('/')));
  });
}

}  // namespace cutcheck::cli
