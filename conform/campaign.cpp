#include "conform/campaign.h"

#include <fmt/format.h>
#include <rapidcheck.h>
#include <rapidcheck/detail/TestListener.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>

#include "author/author.h"
#include "core/error.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "harness/compose.h"
#include "harness/runner.h"
#include "model/sharding.h"
#include "model/signature.h"
#include "model/weights.h"
#include "program/folder.h"
#include "properties/generators.h"

namespace cutcheck {
namespace {

bool splittable(CutKind k) {
  return k == CutKind::decode || k == CutKind::batch || k == CutKind::decode_layer || k == CutKind::batch_layer;
}

// The tp widths a case of `kind` may use.
std::vector<int64_t> widths_for(CutKind kind, const ConformOptions& o) {
  std::vector<int64_t> out;
  for (int64_t tp : o.tp) {
    if (tp > 1 && !splittable(kind)) continue;
    if (o.spec && widths_unsplittable(*o.spec, tp)) continue;
    out.push_back(tp);
  }
  return out;
}

rc::Gen<Case> gen_conform_case(const ConformOptions& o) {
  std::vector<CutKind> kinds;
  for (CutKind k : o.kinds)
    if (!widths_for(k, o).empty()) kinds.push_back(k);
  if (kinds.empty()) throw Error("no cut kind fits the --cuts and --tp given (and the spec's widths)");
  // Full size: each case is a check of its own, and RapidCheck would start it at size 0.
  return rc::gen::resize(100, rc::gen::exec([o, kinds] {
    const CutKind kind = *rc::gen::elementOf(kinds);
    const int64_t tp = *rc::gen::elementOf(widths_for(kind, o));
    ModelSpec spec = o.spec ? *o.spec : *gen_spec(4);
    if (!o.spec) widen_for_tp(spec, tp);
    Case c = *gen_case_for(spec, {kind});
    c.tp = tp;
    if (!o.large_keys) c.k_scale = 1;
    if (!o.weights.empty()) c.weight_seed = 0;  // the weights are given
    return c;
  }));
}

class Silent : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// Writes the program folder of `cut` (split when tp > 1) reading weights from `weights`.
void write_program(const Cut& cut, const ModelSpec& spec, int64_t tp, const fs::path& weights, const fs::path& folder) {
  fs::remove_all(folder);
  if (tp == 1) {
    Authored a = write(cut, spec, weights.lexically_relative(folder).string());
    ProgramFolder{a.program, a.manifest, a.text}.write(folder);
    return;
  }
  std::vector<Authored> chips = write_split(cut, spec, weights.lexically_relative(folder / "chip0").string(), tp);
  for (size_t c = 0; c < chips.size(); ++c)
    ProgramFolder{chips[c].program, chips[c].manifest, chips[c].text}.write(folder / fmt::format("chip{}", c));
}

// The case's weights, and the folder they are in (written under `work` unless given).
std::pair<TensorMap, fs::path> case_weights(const Case& c, const ConformOptions& o, const fs::path& work) {
  if (!o.weights.empty()) {
    fs::path dir = fs::absolute(o.weights);
    TensorMap w = read_weights(dir, c.spec);
    if (c.tp > 1 && !fs::exists(dir / shard_file(c.tp, 0))) write_shards(dir, w, c.spec, c.tp);
    return {std::move(w), dir};
  }
  fs::path dir = work / "weights";
  TensorMap w = synthetic_weights(c.spec, c.weight_seed);
  write_weights(dir, w, c.spec);
  if (c.tp > 1) write_shards(dir, w, c.spec, c.tp);
  return {std::move(w), dir};
}

// Runs `cut` on the backend; fills `r` with the verdict against `want`. Cache rows past
// what the case reads are left out of the comparison (blank_unattended).
void judge(Backend& backend, const Case& c, const Cut& cut, int64_t tp, const fs::path& folder, const TensorMap& in,
           const TensorMap& want, const Tolerance& tol, CaseResult& r, const fs::path& actual) {
  if (!backend.supports(cut, tp)) {
    r.verdict = Verdict::unsupported;
    r.failure = "the backend does not support this cut";
    return;
  }
  try {
    TensorMap got = backend.lower(folder)->run(in);
    if (!actual.empty()) write_safetensors(actual, got);
    Comparison cmp = compare(blank_unattended(want, c), blank_unattended(got, c), tol);
    r.errors = cmp.outputs;
    if (!cmp.ok) {
      r.verdict = Verdict::failed;
      r.failure = cmp.failure;
    }
  } catch (const NotYet& e) {
    r.verdict = Verdict::unsupported;
    r.failure = e.what();
  } catch (const BackendFailed& e) {
    r.verdict = Verdict::failed;
    r.failure = e.what();
    r.stderr_tail = e.stderr_tail;
  } catch (const std::exception& e) {
    r.verdict = Verdict::failed;
    r.failure = e.what();
  }
}

std::string piece_label(const Cut& piece) {
  switch (piece.part()) {
    case Part::embed: return "embed";
    case Part::layer: return fmt::format("layer {}", piece.layer);
    case Part::head: return "head";
    default: return piece.str();
  }
}

// The first piece of a failing whole cut that fails on its own, fed the reference's
// values for everything before it.
std::string bisect(Backend& backend, const Case& c, const ConformOptions& o, const fs::path& work) {
  if (c.cut.part() != Part::whole) return "";
  auto [weights, dir] = case_weights(c, o, work);
  ReferenceRunner reference(c.spec, weights);
  TensorMap known = case_inputs(c);
  for (const Cut& piece : pieces_of(c.cut, c.spec)) {
    TensorMap in;
    for (const Port& port : signature(piece, c.spec).inputs) in.emplace(port.name, known.at(port.name));
    TensorMap want = reference.run(piece, in);
    const int64_t tp = splittable(piece.kind) ? c.tp : 1;
    fs::path folder = work / "piece";
    write_program(piece, c.spec, tp, dir, folder);
    CaseResult r;
    Case piece_case = c;
    piece_case.cut = piece;
    judge(backend, piece_case, piece, tp, folder, in, want, o.tolerance, r, {});
    if (r.verdict == Verdict::unsupported)
      return fmt::format("not bisected: the backend does not support the piece {} ({})", piece.str(), r.failure);
    if (r.verdict == Verdict::failed) return fmt::format("{} ({}): {}", piece_label(piece), piece.str(), r.failure);
    for (auto& [name, t] : want) known[name] = t;
  }
  return "every piece passes alone: the pieces disagree only when composed";
}

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

}  // namespace

int ConformReport::count(Verdict v) const {
  int n = 0;
  for (const CaseResult& r : results) n += r.verdict == v;
  return n;
}

bool ConformReport::passed() const { return count(Verdict::failed) == 0 && count(Verdict::passed) > 0; }

CaseResult run_case(Backend& backend, const Case& c, const ConformOptions& o, const fs::path& work) {
  const auto start = std::chrono::steady_clock::now();
  CaseResult r{c};
  try {
    fs::create_directories(work);
    auto [weights, dir] = case_weights(c, o, work);
    write_program(c.cut, c.spec, c.tp, dir, work / "program");
    const TensorMap in = case_inputs(c);
    const TensorMap want = ReferenceRunner(c.spec, weights).run(c.cut, in);
    write_safetensors(work / "inputs.safetensors", in);
    write_safetensors(work / "expected.safetensors", want);
    judge(backend, c, c.cut, c.tp, work / "program", in, want, o.tolerance, r, work / "actual.safetensors");
  } catch (const std::exception& e) {  // writing the case failed: a cutcheck problem, reported as such
    r.verdict = Verdict::failed;
    r.failure = fmt::format("cutcheck could not prepare the case: {}", e.what());
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
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

namespace {

// Runs cases, each at most once: RapidCheck evaluates a failing case again when it
// reports it, and a case's result depends on nothing but the case. Failing evaluations
// keep their folder (the reproducer is made from one of them).
class Evaluator {
 public:
  Evaluator(Backend& backend, const ConformOptions& o, fs::path root) : backend_(backend), o_(o), root_(std::move(root)) {}

  std::pair<CaseResult, fs::path> operator()(const Case& c) {
    const std::string key = c.to_json().dump();
    auto it = memo_.find(key);
    if (it != memo_.end() && (it->second.first.verdict != Verdict::failed || fs::exists(it->second.second)))
      return it->second;
    ++runs_;
    fs::path work = root_ / fmt::format("eval-{}", count_++);
    CaseResult r = run_case(backend_, c, o_, work);
    if (r.verdict != Verdict::failed) fs::remove_all(work);
    return memo_[key] = {r, work};
  }

  // Forgets the cases of one campaign case and removes their folders.
  void clear() {
    for (auto& [key, entry] : memo_) fs::remove_all(entry.second);
    memo_.clear();
  }
  int runs() const { return runs_; }

 private:
  Backend& backend_;
  const ConformOptions& o_;
  fs::path root_;
  int count_ = 0, runs_ = 0;
  std::map<std::string, std::pair<CaseResult, fs::path>> memo_;
};

}  // namespace

ConformReport conform(Backend& backend, const ConformOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  ConformReport report{backend.name(), o};
  char pattern[] = "/tmp/cutcheck-conform-XXXXXX";
  if (!mkdtemp(pattern)) throw IoError("cannot create a temporary folder for the campaign");
  const fs::path root = pattern;
  const rc::Gen<Case> gen = gen_conform_case(o);
  std::set<CutKind> shrunk;
  Evaluator evaluate(backend, o, root);

  for (int i = 0; i < o.cases; ++i) {
    rc::detail::TestMetadata metadata{fmt::format("case {}", i), "conformance"};
    rc::detail::TestParams params;
    params.seed = mix64(o.seed, uint64_t(i));
    params.maxSuccess = 1;
    params.disableShrinking = true;
    Silent listener;

    // The case itself.
    std::pair<CaseResult, fs::path> first;
    rc::detail::checkProperty(rc::detail::toProperty([&] {
                                first = evaluate(*gen);
                                if (first.first.verdict == Verdict::failed) RC_FAIL(first.first.failure);
                              }),
                              metadata, params, listener, {});
    report.results.push_back(first.first);
    if (o.progress) o.progress(i + 1, o.cases);
    if (first.first.verdict != Verdict::failed || shrunk.count(first.first.c.cut.kind)) {
      evaluate.clear();
      continue;
    }

    // The first failure of this cut kind: shrink it (every new evaluation is a backend
    // run), bisect it, keep it.
    shrunk.insert(first.first.c.cut.kind);
    Failure f{i, first.first, first.first};
    fs::path kept = first.second;
    if (o.shrink) {
      params.disableShrinking = false;
      const int before = evaluate.runs();
      rc::detail::checkProperty(rc::detail::toProperty([&] {
                                  const Case c = *gen;
                                  if (evaluate.runs() - before >= o.shrink_budget) return;  // no budget: accept no more
                                  auto [r, work] = evaluate(c);
                                  if (r.verdict != Verdict::failed) return;
                                  f.shrunk = r;
                                  kept = work;
                                  RC_FAIL(r.failure);
                                }),
                                metadata, params, listener, {});
      f.shrink_runs = evaluate.runs() - before;
    }
    f.piece = bisect(backend, f.shrunk.c, o, root / "bisect");
    f.reproducer = o.keep / fmt::format("case-{}", i);
    f.command = fmt::format("{} --replay {}", o.replay_prefix, f.reproducer.string());
    write_reproducer(f, o, kept, backend.name());
    evaluate.clear();
    report.failures.push_back(std::move(f));
  }
  fs::remove_all(root);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace cutcheck
