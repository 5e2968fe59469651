// A conformance campaign: generated cases (spec, cut, tp, inputs) run on a backend and on
// the reference, compared within a tolerance. A failure is shrunk to the smallest case
// that still fails, a failing whole cut is bisected to its first failing piece, and a
// reproducer folder keeps everything needed to look at it again.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "conform/backend.h"
#include "harness/tolerance.h"
#include "properties/case.h"
#include "properties/shape_space.h"
#include "properties/spec_space.h"

namespace cutcheck {

struct ConformOptions {
  std::vector<CutKind> kinds = all_cut_kinds();
  std::vector<int64_t> tp{1};
  int cases = 100;
  uint64_t seed = 1;
  std::optional<ModelSpec> spec;   // a fixed spec; random specs from `specs` when unset
  SpecSpace specs{4};              // random specs: dim >= 4 (RMSNorm of one or two elements is little more than a sign), --fix; wide as often as shapes say
  ShapeSpace shapes = ShapeSpace::campaign();  // ctx, rows and positions
  fs::path weights;                // with `spec`: use these weights instead of seeded ones
  Tolerance tolerance = Tolerance::bound(Precision::f32);
  // Now and then scale the attended k rows by 1000, for scores large enough to overflow a
  // softmax that forgets its maximum. The bounds widen with the scores, so this stays on
  // under every precision; only the fixed bf16 preset turns it off (it cannot resolve
  // scores on that scale).
  bool large_keys = true;
  bool shrink = true;
  int shrink_budget = 200;         // backend runs allowed while shrinking one failure
  // Wall time allowed for shrinking and bisecting one failure; 0 means the default,
  // max(10 s, 10 x the failing case's time), so that a backend that times out is shrunk
  // for a bounded while and not for 200 timeouts.
  double shrink_seconds = 0;
  // Cases after which a backend that failed every one of them the same way (the same exit
  // code, signal or timeout) stops the campaign unshrunk.
  int same_fault_limit = 3;
  fs::path keep = "conform-failures";  // reproducer folders
  std::string replay_prefix;       // how to re-run: "cutcheck conform --backend '...'"
  std::function<void(int done, int total)> progress;
};

enum class Verdict { passed, failed, unsupported };

struct CaseResult {
  Case c;
  Verdict verdict = Verdict::passed;
  std::string failure = {};              // what went wrong
  std::vector<OutputError> errors = {};  // per output, when outputs came back
  std::string stderr_tail = {};
  // How the backend process failed, when it did ("exited with 127", "was killed by signal
  // 11", "timed out"); empty when outputs came back or cutcheck itself failed.
  std::string fault = {};
  double seconds = 0;
};

struct Failure {
  int index = 0;                 // the case that failed first
  CaseResult original, shrunk;
  int shrink_runs = 0;
  std::string piece = {};        // for whole cuts: "embed", "layer L", "head", or why bisection stopped
  std::string value = {};        // the failing piece's first failing value (conform/bisect.h), or why not found
  fs::path reproducer = {};
  std::string command = {};      // re-runs exactly the shrunk case
};

struct ConformReport {
  std::string backend;
  ConformOptions options;
  std::vector<CaseResult> results = {};
  std::vector<Failure> failures = {};  // the shrunk first failure of each cut kind
  double seconds = 0;
  std::string stopped = {};  // why the campaign stopped early (every case failed the same way)
  int interrupted = 0;       // the signal (SIGINT, SIGTERM) that stopped it; results are what finished
  int count(Verdict v) const;
  bool passed() const;  // no failure, and at least one case passed
};

ConformReport conform(Backend& backend, const ConformOptions& options);

// Runs one case, in `work` (created; left for the caller to keep or remove).
CaseResult run_case(Backend& backend, const Case& c, const ConformOptions& options, const fs::path& work);

// Re-runs the case kept in a reproducer folder (its case.json).
CaseResult replay(Backend& backend, const fs::path& reproducer, const ConformOptions& options);

}  // namespace cutcheck
