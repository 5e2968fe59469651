// A fixed-function backend, as a vendor kernel library or llama2.c would be one: it never
// reads program.txt. It learns what to run from the folder contract alone
// (docs/formats.md): manifest.json's `cut`, `tp` and `chip`, the spec.json beside it, and
// the weights the manifest lists. Its engine is the oracle (oracle/, Eigen in double),
// which computes the model directly, so it shares no code with the author or the
// reference interpreter.
//
// Like a real fixed-function engine it covers one family and says so for the rest
// (exit 77): Decode and Forward, unsplit, interleaved rope, head_dim = dim / heads
// (llama2.c's models). It obeys the conformance protocol:
//   cutcheck-fixed-function FOLDER --inputs IN --outputs OUT
#include <fmt/format.h>

#include <string>

#include "core/error.h"
#include "core/files.h"
#include "core/safetensors.h"
#include "model/cut.h"
#include "model/spec.h"
#include "oracle/oracle.h"
#include "program/manifest.h"

namespace cutcheck {
namespace {

// Throws NotYet when the folder asks for what this engine does not have.
void check_family(const Cut& cut, int64_t tp, const ModelSpec& spec) {
  if (cut.kind != CutKind::decode && cut.kind != CutKind::forward)
    throw NotYet(fmt::format("{}: this engine runs decode and forward only", cut.str()));
  if (tp != 1) throw NotYet(fmt::format("tp {}: this engine runs on one chip", tp));
  if (spec.rope_style != RopeStyle::interleaved) throw NotYet("rope_style half: this engine rotates interleaved pairs");
  if (spec.heads * spec.head_dim != spec.dim)
    throw NotYet(fmt::format("head_dim {} with dim {} and {} heads: this engine needs head_dim = dim / heads",
                             spec.head_dim, spec.dim, spec.heads));
}

void run(const fs::path& folder, const fs::path& inputs, const fs::path& outputs) {
  const fs::path manifest_file = folder / "manifest.json";
  if (!fs::exists(manifest_file) && fs::exists(folder / "chip0")) throw NotYet("tp splits: this engine runs on one chip");
  // Only the contract's fields: the format, cut, tp and chip, spec.json and the weights.
  const Json json = parse_json(read_file(manifest_file, max_bytes::manifest), manifest_file.string());
  if (json_string(json, "format", manifest_file.string()) != manifest_format)
    throw FormatError(fmt::format("{}: not a {} manifest", manifest_file.string(), manifest_format));
  const Cut cut = Cut::parse(json_string(json, "cut", manifest_file.string()), manifest_file.string());
  const int64_t tp = json_int(json, "tp", manifest_file.string());
  const ModelSpec spec = load_spec((folder / json_string(json, "spec", manifest_file.string())).string());
  check_family(cut, tp, spec);

  const Manifest manifest = Manifest::read(manifest_file);
  Oracle engine(spec, load_weights(manifest, folder));
  write_safetensors(outputs, engine.run(cut, read_safetensors(inputs).tensors));
}

}  // namespace
}  // namespace cutcheck

int main(int argc, char** argv) {
  const std::string usage = "usage: cutcheck-fixed-function FOLDER --inputs IN --outputs OUT";
  if (argc != 6 || std::string(argv[2]) != "--inputs" || std::string(argv[4]) != "--outputs") {
    fmt::print(stderr, "{}\n", usage);
    return 2;
  }
  try {
    cutcheck::run(argv[1], argv[3], argv[5]);
  } catch (const std::exception& e) {  // 77 for what it does not run, as the protocol says
    const int code = cutcheck::exit_code_of(e);
    fmt::print(stderr, "cutcheck-fixed-function: {}: {}\n", code == 77 ? "not supported" : "error", e.what());
    return code;
  }
  return 0;
}
