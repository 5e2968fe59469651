#include "campaign/bisect.h"

#include <fmt/format.h>

#include <optional>

#include "author/author.h"
#include "campaign/case_files.h"
#include "campaign/judge.h"
#include "core/text.h"
#include "harness/compose.h"
#include "harness/runner.h"
#include "model/sharding.h"
#include "model/signature.h"
#include "program/folder.h"
#include "program/text.h"
#include "reference/interpreter.h"

namespace cutcheck {
namespace {

// The intermediate values a probe returns at most, in bytes (they are written to disk
// twice, by the backend and by cutcheck).
constexpr uint64_t probe_budget = uint64_t(256) << 20;

// Intermediate values are returned as outputs named "at." + the value's name.
std::string probe_name(const std::string& value) { return "at." + value; }

std::string piece_label(const Cut& piece) {
  switch (piece.part()) {
    case Part::embed: return "embed";
    case Part::layer: return fmt::format("layer {}", piece.layer);
    case Part::head: return "head";
    default: return piece.str();
  }
}

// The note of the group `op` belongs to: the nearest one above it ("layer 0: softmax over
// the cache rows").
std::string group_note(const Program& p, size_t op) {
  for (size_t i = op + 1; i-- > 0;)
    if (!p.ops[i].note.empty()) return p.ops[i].note;
  return "";
}

}  // namespace

std::string first_failing_value(Backend& backend, const Case& c, const Cut& piece, int64_t tp, const TensorMap& weights,
                                const fs::path& weights_dir, const TensorMap& in, const fs::path& work,
                                const Tolerance& tolerance) {
  if (tp > 1) return "not looked for: the piece is split over chips, whose values differ in shape";
  // The piece's program with every value that can be an output (not i1, not quantized rows
  // gathered from a weight: the value after their convert is probed) added as one,
  // in program order, as far as the budget goes.
  const Program program = authored_program(piece, c.spec);
  Program probed = program;
  std::vector<size_t> probes;  // op indices
  uint64_t bytes = 0;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const TensorType& t = program.type(program.ops[i].result);
    if (t.dtype == DType::i1 || is_quantized(t.dtype)) continue;
    if ((bytes += t.bytes()) > probe_budget) break;
    probes.push_back(i);
    probed.outputs.push_back({probe_name(program.name(program.ops[i].result)), program.ops[i].result, {}});
  }
  // A folder that records no cut: a backend that runs cuts rather than programs says no.
  const fs::path folder = work / "probe";
  fs::remove_all(folder);
  Manifest manifest = unsplit_manifest(probed, weights_dir.lexically_relative(folder).string(), Json::object());
  ProgramFolder{probed, manifest, print(probed)}.write(folder);
  // The don't-care cache rows zeroed: their garbage would make every value that reads
  // them differ in ways the outputs never show.
  const TensorMap clean_in = blank_unattended(in, c);
  TensorMap got;
  try {
    got = backend.lower(folder)->run(clean_in);
  } catch (const NotYet& e) {
    return fmt::format("not looked for: the backend does not run the piece with its values as outputs ({})",
                       clean_text(e.what()));
  } catch (const std::exception& e) {
    return fmt::format("not looked for: the backend failed the piece with its values as outputs: {}", clean_text(e.what()));
  }
  Executable reference(probed, weights);
  const Expected want = expect(reference, clean_in, tolerance);
  for (size_t i : probes) {
    const ValueId v = program.ops[i].result;
    const std::string name = probe_name(program.name(v));
    auto g = got.find(name);
    if (g == got.end()) return fmt::format("not looked for: the backend did not return '{}'", name);
    const std::string& value_name = program.name(v);  // messages name the value, not its probe
    Expected one{{{value_name, want.values.at(name)}}, {}};
    if (auto b = want.bounds.find(name); b != want.bounds.end()) one.bounds.emplace(value_name, b->second);  // f32 values
    const Comparison cmp = compare(one, {{value_name, g->second}}, tolerance);
    const std::string why = cmp.ok ? std::string() : cmp.failure;
    if (!why.empty()) {
      const std::string note = group_note(program, i);
      return fmt::format("%{}{}: {}", value_name, note.empty() ? "" : " (" + note + ")", why);
    }
  }
  return "not found: with every value of the piece an output (and its don't-care cache rows zero), each is within "
         "the tolerance; the failure shows only in the outputs as the backend writes them, or not on this run";
}

Bisection bisect(Backend& backend, const Case& c, const ConformOptions& o, const fs::path& work) {
  auto [weights, dir] = case_weights(c, o, work);
  TensorMap known = case_inputs(c);
  if (c.cut.part() != Part::whole)
    return {"", first_failing_value(backend, c, c.cut, c.tp, weights, dir, known, work, o.tolerance)};
  ReferenceRunner reference(c.spec, weights);
  // When the first piece fails, the later ones run too: a backend that fails whatever it
  // runs (or rounds everything) has no piece to blame, and saying "the embed" would mislead.
  std::optional<Bisection> first;
  const std::vector<Cut> pieces = pieces_of(c.cut, c.spec);
  for (const Cut& piece : pieces) {
    TensorMap in;
    for (const Port& port : signature(piece, c.spec).inputs) in.emplace(port.name, known.at(port.name));
    const int64_t tp = kind_splits(piece.kind) ? c.tp : 1;
    Expected want = reference.expect(piece, in, o.tolerance, tp);
    fs::path folder = work / "piece";
    write_program(piece, c.spec, tp, dir, folder);
    CaseResult r;
    Case piece_case = c;
    piece_case.cut = piece;
    judge(backend, piece_case, piece, tp, folder, in, want, o.tolerance, r, {});
    if (r.verdict == Verdict::unsupported)
      return {fmt::format("not bisected: the backend does not support the piece {} ({})", piece.str(), r.failure), ""};
    if (r.verdict == Verdict::failed && !first) {
      Bisection here{fmt::format("{} ({}): {}", piece_label(piece), piece.str(), r.failure),
                     first_failing_value(backend, piece_case, piece, tp, weights, dir, in, work, o.tolerance)};
      if (&piece != &pieces.front()) return here;
      first = here;  // the first piece: go on, does every piece fail?
    } else if (r.verdict != Verdict::failed && first) {
      return *first;  // the first piece fails and a later one does not: the first is to blame
    }
    for (auto& [name, t] : want.values) known[name] = t;
  }
  if (first)
    return {fmt::format("inconclusive: every piece fails alone ({} pieces), so none is to blame; the first: {}",
                        pieces.size(), first->piece),
            ""};
  return {"every piece passes alone: the pieces disagree only when composed", ""};
}

}  // namespace cutcheck
