#include "conform/bisect.h"

#include <fmt/format.h>

#include "conform/case_files.h"
#include "conform/judge.h"
#include "harness/compose.h"
#include "harness/runner.h"
#include "model/sharding.h"
#include "model/signature.h"

namespace cutcheck {
namespace {

std::string piece_label(const Cut& piece) {
  switch (piece.part()) {
    case Part::embed: return "embed";
    case Part::layer: return fmt::format("layer {}", piece.layer);
    case Part::head: return "head";
    default: return piece.str();
  }
}

}  // namespace

std::string bisect(Backend& backend, const Case& c, const ConformOptions& o, const fs::path& work) {
  if (c.cut.part() != Part::whole) return "";
  auto [weights, dir] = case_weights(c, o, work);
  ReferenceRunner reference(c.spec, weights);
  TensorMap known = case_inputs(c);
  for (const Cut& piece : pieces_of(c.cut, c.spec)) {
    TensorMap in;
    for (const Port& port : signature(piece, c.spec).inputs) in.emplace(port.name, known.at(port.name));
    Expected want = reference.expect(piece, in, o.tolerance);
    const int64_t tp = kind_splits(piece.kind) ? c.tp : 1;
    fs::path folder = work / "piece";
    write_program(piece, c.spec, tp, dir, folder);
    CaseResult r;
    Case piece_case = c;
    piece_case.cut = piece;
    judge(backend, piece_case, piece, tp, folder, in, want, o.tolerance, r, {});
    if (r.verdict == Verdict::unsupported)
      return fmt::format("not bisected: the backend does not support the piece {} ({})", piece.str(), r.failure);
    if (r.verdict == Verdict::failed) return fmt::format("{} ({}): {}", piece_label(piece), piece.str(), r.failure);
    for (auto& [name, t] : want.values) known[name] = t;
  }
  return "every piece passes alone: the pieces disagree only when composed";
}

}  // namespace cutcheck
