#include "campaign/reproducer.h"

#include <fmt/format.h>

#include "author/author.h"
#include "campaign/case_files.h"
#include "campaign/record_json.h"
#include "core/error.h"
#include "core/files.h"
#include "core/json.h"
#include "core/process.h"
#include "core/sha256.h"
#include "core/temp_folder.h"
#include "core/version.h"
#include "model/sharding.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

// Given weights up to this size travel with the reproducer; larger ones are referred to
// by absolute path.
constexpr uint64_t weights_copy_cap = uint64_t{256} << 20;

// What a reproducer needs of weights given with --weights (seeded weights are made again
// from the case's seed): a copy when small, else the absolute path; either way the
// sha256 of model.safetensors, which replay checks. The kept program folder is written
// again to read them from where they now are.
void keep_given_weights(const Failure& f, const ConformOptions& o) {
  const Case& c = f.shrunk.c;
  const fs::path source = fs::absolute(o.weights);
  const fs::path file = weights_file(source);
  Json record = {{"format", "cutcheck-reproducer-weights-1"}, {"sha256", sha256_file(file)}, {"path", source.string()}};
  fs::path dir = source;
  const fs::path kept = f.reproducer / "weights";
  fs::remove_all(kept);
  record["copied"] = fs::file_size(file) <= weights_copy_cap;
  if (record["copied"]) {
    fs::create_directories(kept);
    fs::copy_file(file, weights_file(kept));
    dir = fs::absolute(kept);
    if (c.tp > 1) write_shards(dir, read_weights(dir, c.spec), c.spec, c.tp);
  }
  write_file_atomic(f.reproducer / "weights.json", record.dump(2) + "\n");
  if (c.tp == 1 || fs::exists(dir / shard_file(c.tp, 0))) {
    // A copy moves with the folder, so the manifest names it relatively; weights left where
    // they are, by their absolute path, so that the folder still runs once moved.
    write_cut_folder(c.cut, c.spec, c.tp, dir, f.reproducer / "program", record["copied"].get<bool>());
  } else {
    // A split of weights too large to copy, whose folder has no shards: the program would
    // read shards that are nowhere. Replay makes them again; no stale folder is kept.
    fs::remove_all(f.reproducer / "program");
  }
}

}  // namespace

void write_reproducer(const Failure& f, const ConformOptions& o, const fs::path& work, const std::string& command) {
  fs::remove_all(f.reproducer);
  fs::create_directories(f.reproducer);
  for (const char* item :
       {"program", "weights", "inputs.safetensors", "expected.safetensors", "bounds.safetensors", "actual.safetensors"})
    if (fs::exists(work / item)) fs::copy(work / item, f.reproducer / item, fs::copy_options::recursive);
  write_file_atomic(f.reproducer / "case.json", f.shrunk.c.to_json().dump(2) + "\n");
  if (!o.weights.empty()) keep_given_weights(f, o);
  std::string report =
      fmt::format("{}\ncase: {}\nfailure: {}\n", version_line(), f.shrunk.c.str(), f.shrunk.failure);
  if (!f.piece.empty()) report += fmt::format("first failing piece: {}\n", f.piece);
  if (!f.value.empty()) report += fmt::format("first failing value: {}\n", f.value);
  for (const OutputError& e : f.shrunk.errors) report += "  " + output_error_text(e) + "\n";
  report += fmt::format("tolerance: {}\nre-run: {}\n", o.tolerance.str(), f.command);
  if (!command.empty())
    report += fmt::format("or by hand: {} {} --inputs {} --outputs actual.safetensors\n", command,
                          shell_quote((f.reproducer / "program").string()),
                          shell_quote((f.reproducer / "inputs.safetensors").string()));
  if (!f.shrunk.stderr_tail.empty()) report += "backend stderr (tail):\n" + f.shrunk.stderr_tail + "\n";
  write_file_atomic(f.reproducer / "report.txt", report);
}

CaseResult replay(Backend& backend, const fs::path& reproducer, const ConformOptions& options) {
  fs::path file = reproducer / "case.json";
  Case c = Case::from_json(parse_json(read_file(file, max_bytes::case_record), file.string()), file.string());
  ConformOptions o = options;
  o.weights.clear();  // seeded, unless the reproducer says which weights it ran on
  const fs::path record_file = reproducer / "weights.json";
  if (fs::exists(record_file)) {
    const std::string where = record_file.string();
    const Json record = parse_json(read_file(record_file, max_bytes::case_record), where);
    const fs::path dir = json_bool(record, "copied", where) ? fs::absolute(reproducer / "weights")
                                                            : fs::path(json_string(record, "path", where));
    const std::string want = json_string(record, "sha256", where), got = sha256_file(weights_file(dir));
    if (got != want)
      throw Error(fmt::format("{}: the weights in '{}' are not the ones this failure was found with (sha256 {}, "
                              "recorded {}); refusing to replay on other weights",
                              where, dir.string(), got, want));
    o.weights = dir;
  }
  TempFolder work("replay");
  return run_case(backend, c, o, work.path() / "case");
}

}  // namespace cutcheck
