#include "conform/campaign.h"

#include <fmt/format.h>
#include <rapidcheck.h>
#include <rapidcheck/detail/TestListener.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>

#include "conform/bisect.h"
#include "conform/case_files.h"
#include "conform/case_generation.h"
#include "conform/judge.h"
#include "conform/reproducer.h"
#include "core/error.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "harness/runner.h"

namespace cutcheck {
namespace {

// Quiet: the campaign reports its cases itself.
class Silent : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

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
    f.reproducer = fs::absolute(o.keep) / fmt::format("case-{}", i);  // the printed command works from anywhere
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
