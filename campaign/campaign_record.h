// What a campaign finds, whatever its case (a cut on a backend: campaign/campaign.h; a model
// on an engine: engine/engine_campaign.h): each case's result, the shrunk failures, and why
// it stopped. The campaign engine (campaign/campaign_engine.h) fills it in; the reports
// (report/report.h) render it.
#pragma once

#include <string>
#include <vector>

#include "backend/process_failure_stop.h"
#include "core/files.h"
#include "harness/tolerance.h"

namespace cutcheck {

enum class Verdict { passed, failed, unsupported };

// One case run, judged.
template <class C>
struct CaseRun {
  C c;
  int index = -1;                        // the case's number in the campaign (for a shrunk case, the original's)
  Verdict verdict = Verdict::passed;
  std::string failure = {};              // what went wrong
  // Of a failed case: "mismatch" when outputs came back and differ (a JUnit <failure>), or
  // what kept them from being compared (a JUnit <error>): "timeout", "crash" (a signal),
  // "exit" (a failing exit code), "protocol" (outputs missing, unreadable, misnamed or
  // mistyped; an exception from an in-process backend). cutcheck's own errors are no
  // case's: they stop the campaign (exit 2).
  std::string failure_type = {};
  std::vector<OutputError> errors = {};  // per output, when outputs came back
  std::string stderr_tail = {};
  // How the process under test failed, when it did ("exited with 127", "was killed by
  // signal 11", "timed out"); empty when outputs came back or cutcheck itself failed.
  std::string process_failure = {};
  double seconds = 0;
};

// A failure as kept: the case that failed first, shrunk to the smallest that still fails.
template <class R>
struct CampaignFailure {
  int index = 0;                 // the case that failed first
  R original, shrunk;
  int shrink_runs = 0;
  std::string piece = {};        // for whole cuts: "embed", "layer L", "head", or why bisection stopped
  std::string value = {};        // the failing piece's first failing value (campaign/bisect.h), or why not found
  fs::path reproducer = {};
  std::string command = {};      // re-runs exactly the shrunk case
};

template <class R>
struct CampaignRecord {
  std::vector<R> results = {};                     // the finished cases, in case order
  std::vector<CampaignFailure<R>> failures = {};   // the shrunk first failure of each group
  std::string stopped = {};  // why the campaign stopped early (every case failed the same way)
  int interrupted = 0;       // the signal (SIGINT, SIGTERM) that stopped it; results are what finished
  bool finished = false;     // ran to its end (shrinking included); false in the reports written as it goes
};

// The shrinking of one failure as it goes, for a progress line.
template <class C>
struct ShrinkStep {
  int index;             // the failing case
  int runs, budget;      // runs made so far, and allowed
  const C& smallest;     // the smallest failing case so far
};

// The stop rule (backend/process_failure_stop.h) on a campaign's first cases: when
// `results` are the first `limit` cases and all failed with the process under test
// failing the same way each time, why the campaign stops there; otherwise empty.
// Shrinking such failures would only repeat the process failure (a missing command, a
// hang, a crash at start-up) once per group. `who`: "the backend 'CMD'".
template <class R>
std::string same_process_failure(const std::vector<R>& results, int limit, const std::string& who) {
  std::vector<RunFailure> first;
  for (const R& r : results) first.push_back({r.verdict == Verdict::failed ? r.process_failure : "", r.stderr_tail});
  return same_process_failure(first, limit, who, "cases", "stopped without shrinking");
}

}  // namespace cutcheck
