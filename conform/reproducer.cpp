#include "conform/reproducer.h"

#include <fmt/format.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/files.h"
#include "core/json.h"

namespace cutcheck {

void write_reproducer(const Failure& f, const ConformOptions& o, const fs::path& work, const std::string& backend) {
  fs::remove_all(f.reproducer);
  fs::create_directories(f.reproducer);
  for (const char* item : {"program", "weights", "inputs.safetensors", "expected.safetensors", "actual.safetensors"})
    if (fs::exists(work / item)) fs::copy(work / item, f.reproducer / item, fs::copy_options::recursive);
  write_file_atomic(f.reproducer / "case.json", f.shrunk.c.to_json().dump(2) + "\n");
  std::string report = fmt::format("case: {}\nfailure: {}\n", f.shrunk.c.str(), f.shrunk.failure);
  if (!f.piece.empty()) report += fmt::format("first failing piece: {}\n", f.piece);
  for (const OutputError& e : f.shrunk.errors)
    report += fmt::format("  {}: max abs {:.3g}, max rel {:.3g}, nmse {:.3g}, {} elements outside\n", e.name, e.max_abs,
                          e.max_rel, e.nmse, e.mismatches);
  report += fmt::format("tolerance: {}\nre-run: {}\nor by hand: {} {} --inputs {} --outputs actual.safetensors\n",
                        o.tolerance.str(), f.command, backend, (f.reproducer / "program").string(),
                        (f.reproducer / "inputs.safetensors").string());
  if (!f.shrunk.stderr_tail.empty()) report += "backend stderr (tail):\n" + f.shrunk.stderr_tail + "\n";
  write_file_atomic(f.reproducer / "report.txt", report);
}

CaseResult replay(Backend& backend, const fs::path& reproducer, const ConformOptions& options) {
  fs::path file = reproducer / "case.json";
  Case c = Case::from_json(parse_json(read_file(file), file.string()), file.string());
  char pattern[] = "/tmp/cutcheck-replay-XXXXXX";
  fs::path work = mkdtemp(pattern);
  CaseResult r = run_case(backend, c, options, work / "case");
  fs::remove_all(work);
  return r;
}

}  // namespace cutcheck
