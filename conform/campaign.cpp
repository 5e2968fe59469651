#include "conform/campaign.h"

#include <fmt/format.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <map>
#include <set>
#include <utility>

#include "conform/bisect.h"
#include "conform/case_files.h"
#include "conform/case_generation.h"
#include "conform/judge.h"
#include "conform/reproducer.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/temp_folder.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "harness/runner.h"
#include "model/weights.h"
#include "properties/rc_engine.h"

namespace cutcheck {

int ConformReport::count(Verdict v) const {
  int n = 0;
  for (const CaseResult& r : results) n += r.verdict == v;
  return n;
}

bool ConformReport::passed() const { return count(Verdict::failed) == 0 && count(Verdict::passed) > 0; }

CaseResult run_case(Backend& backend, const Case& c, const ConformOptions& o, const fs::path& work) {
  const auto start = std::chrono::steady_clock::now();
  CaseResult r{c};
  // Preparing the case is cutcheck's work: an error there (weights that cannot be read, a
  // full disk) is the user's or cutcheck's and propagates; only the backend is judged.
  fs::create_directories(work);
  auto [weights, dir] = case_weights(c, o, work);
  write_program(c.cut, c.spec, c.tp, dir, work / "program");
  const TensorMap in = case_inputs(c);
  const TensorMap want = ReferenceRunner(c.spec, weights).run(c.cut, in);
  write_safetensors(work / "inputs.safetensors", in);
  write_safetensors(work / "expected.safetensors", want);
  judge(backend, c, c.cut, c.tp, work / "program", in, want, o.tolerance, r, work / "actual.safetensors");
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

  // Keeps the evaluation of `work` through clear(): a failure waiting to be shrunk.
  void pin(const fs::path& work) { pinned_.insert(work); }

  // Forgets the evaluations not pinned and removes their folders.
  void clear() {
    for (auto it = memo_.begin(); it != memo_.end();) {
      if (pinned_.count(it->second.second)) {
        ++it;
        continue;
      }
      fs::remove_all(it->second.second);
      it = memo_.erase(it);
    }
  }
  int runs() const { return runs_; }

 private:
  Backend& backend_;
  const ConformOptions& o_;
  fs::path root_;
  int count_ = 0, runs_ = 0;
  std::map<std::string, std::pair<CaseResult, fs::path>> memo_;
  std::set<fs::path> pinned_;
};

// When the first `limit` cases all failed, with the backend process failing the same way
// each time, the reason to stop; otherwise empty. Shrinking such failures would only repeat
// the fault (a missing command, a hang, a crash at start-up) once per cut kind.
std::string same_fault(const std::vector<CaseResult>& results, int limit, const std::string& backend) {
  if (limit < 1 || results.size() != size_t(limit)) return "";
  for (const CaseResult& r : results)
    if (r.verdict != Verdict::failed || r.fault.empty() || r.fault != results.front().fault) return "";
  const CaseResult& r = results.front();
  std::string why = fmt::format("the backend '{}' {} on each of the first {} cases; stopped without shrinking",
                                backend, r.fault, limit);
  if (r.fault == "exited with 127") why += " (127: the shell did not find the command?)";
  std::string tail = r.stderr_tail;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  if (size_t at = tail.rfind('\n'); at != std::string::npos) tail = tail.substr(at + 1);
  if (!tail.empty()) why += fmt::format("; its stderr ends: {}", tail);
  return why;
}

using Clock = std::chrono::steady_clock;

// Case i as a RapidCheck run of one case, drawn from its own seed; shrinking it is the
// same run with shrinking on.
RcRun case_run(const ConformOptions& o, int i) {
  return {fmt::format("case {}", i), "conformance", 1, mix64(o.seed, uint64_t(i)), false};
}

}  // namespace

ConformReport conform(Backend& backend, const ConformOptions& o) {
  const auto start = Clock::now();
  ConformReport report{backend.name(), o};
  TempFolder temp("conform");
  const fs::path& root = temp.path();
  const rc::Gen<Case> gen = gen_conform_case(o);
  Evaluator evaluate(backend, o, root);
  // The first failure of each cut kind, shrunk once every case has run (so that a backend
  // that fails everything is found out before any shrinking).
  struct Pending {
    int index;
    std::pair<CaseResult, fs::path> first;
  };
  std::vector<Pending> pending;
  std::set<CutKind> kinds_failed;

  // Weights given with --weights are read once before any backend runs: a file cutcheck
  // cannot read (a dtype other than f32, a shape the spec does not have) is the user's error.
  if (!o.weights.empty()) {
    if (!o.spec) throw Error("--weights needs --spec");
    read_weights(fs::absolute(o.weights), *o.spec);
  }
  // RapidCheck takes any exception in a property for a failing case: an error of cutcheck's
  // own (or an interrupt) is kept here and thrown again once RapidCheck has returned.
  std::exception_ptr error;
  auto rethrow = [&error] {
    if (error) std::rethrow_exception(std::exchange(error, nullptr));
    throw_if_interrupted();
  };

  try {
    for (int i = 0; i < o.cases; ++i) {
      std::pair<CaseResult, fs::path> first;
      bool ran = false;
      run_property(case_run(o, i), [&] {
        try {
          first = evaluate(*gen);
          ran = true;
        } catch (...) {
          error = std::current_exception();
          return;
        }
        if (first.first.verdict == Verdict::failed) RC_FAIL(first.first.failure);
      });
      rethrow();
      if (!ran) throw Error(fmt::format("case {} could not be generated", i));
      report.results.push_back(first.first);
      if (o.progress) o.progress(i + 1, o.cases);
      if (first.first.verdict == Verdict::failed && kinds_failed.insert(first.first.c.cut.kind).second) {
        evaluate.pin(first.second);
        pending.push_back({i, first});
      }
      evaluate.clear();
      report.stopped = same_fault(report.results, o.same_fault_limit, backend.name());
      if (!report.stopped.empty()) break;
    }

    for (Pending& p : pending) {
      Failure f{p.index, p.first.first, p.first.first};
      fs::path kept = p.first.second;
      const double budget =
          o.shrink_seconds > 0 ? o.shrink_seconds : std::max(10.0, 10 * p.first.first.seconds);
      const auto deadline = Clock::now() + std::chrono::duration<double>(budget);
      if (o.shrink && report.stopped.empty()) {
        // Shrink (every new evaluation is a backend run) within the run and time budgets.
        RcRun run = case_run(o, p.index);
        run.shrink = true;
        const int before = evaluate.runs();
        run_property(run, [&] {
          const Case c = *gen;
          if (evaluate.runs() - before >= o.shrink_budget || Clock::now() >= deadline ||
              interrupt_signal() || error)
            return;  // no budget left: accept no more
          std::pair<CaseResult, fs::path> e;
          try {
            e = evaluate(c);
          } catch (...) {
            error = std::current_exception();
            return;
          }
          if (e.first.verdict != Verdict::failed) return;
          f.shrunk = e.first;
          kept = e.second;
          RC_FAIL(e.first.failure);
        });
        rethrow();
        f.shrink_runs = evaluate.runs() - before;
      }
      if (!report.stopped.empty()) f.piece = "";  // not bisected either: it would only repeat the fault
      else if (Clock::now() >= deadline) f.piece = "not bisected: the shrink time (--shrink-time) ran out";
      else {
        Bisection b = bisect(backend, f.shrunk.c, o, root / "bisect");
        f.piece = b.piece;
        f.value = b.value;
      }
      f.reproducer = fs::absolute(o.keep) / fmt::format("case-{}", p.index);  // the printed command works from anywhere
      f.command = fmt::format("{} --replay {}", o.replay_prefix, f.reproducer.string());
      write_reproducer(f, o, kept, backend.name());
      report.failures.push_back(std::move(f));
      evaluate.clear();
    }
  } catch (const Interrupted& e) {
    report.interrupted = e.signal;  // the report keeps the cases that finished
  }
  evaluate.clear();
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace cutcheck
