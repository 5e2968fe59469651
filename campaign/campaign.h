// A conformance campaign: generated cases (spec, cut, tp, inputs) run on a backend and on
// the reference, compared within a tolerance. A failure is shrunk to the smallest case
// that still fails, a failing whole cut is bisected to its first failing piece, and a
// reproducer folder keeps everything needed to look at it again.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "campaign/campaign_record.h"
#include "harness/tolerance.h"
#include "properties/case.h"
#include "properties/shape_space.h"
#include "properties/spec_space.h"

namespace cutcheck {

struct ConformReport;

// Which slice of the case list a run takes: case i belongs to shard (i mod count) + 1, so
// that every shard draws every cut kind alike. Shards are numbered from 1, as CI systems
// number their parallel jobs (GitLab's CI_NODE_INDEX); {1, 1} is the whole list.
struct Shard {
  int index = 1, count = 1;
  bool takes(int case_index) const { return case_index % count == index - 1; }
  bool whole() const { return count == 1; }
  std::string str() const;                      // "2/4"
  static Shard parse(const std::string& text);  // "I/N" with 1 <= I <= N; throws Error
};

// The shrinking of one failure as it goes, for a progress line.
using ShrinkProgress = ShrinkStep<Case>;

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
  bool shrink = true;              // false: failures are reported as found, neither shrunk nor bisected
  int shrink_budget = 200;         // backend runs allowed while shrinking one failure
  // Wall time allowed for shrinking and bisecting one failure; 0 means the default,
  // max(10 s, 10 x the failing case's time), so that a backend that times out is shrunk
  // for a bounded while and not for 200 timeouts.
  double shrink_seconds = 0;
  // Cases after which a backend that failed every one of them the same way (the same exit
  // code, signal or timeout) stops the campaign unshrunk.
  int same_failure_limit = 3;
  fs::path keep = "conform-failures";  // reproducer folders
  std::string replay_prefix;       // how to re-run: "cutcheck conform --backend '...'"
  // Backend runs at once (cases, and candidates while shrinking). The report does not
  // depend on it: results come back in case order, and a shrink counts its runs as if
  // they ran one at a time. An in-process Backend is then called from several threads.
  int jobs = 1;
  Shard shard;  // the slice of the cases this run takes
  // Called as the campaign goes, on the thread that called conform() and never two at
  // once: after each finished case with the report so far (the finished cases in case
  // order), and before each round of backend runs while shrinking a failure.
  std::function<void(const ConformReport& so_far)> on_case;
  std::function<void(const ShrinkProgress&)> on_shrink;
};

using CaseResult = CaseRun<Case>;
using Failure = CampaignFailure<CaseResult>;

// The record's failures: the shrunk first failure of each cut kind.
struct ConformReport : CampaignRecord<CaseResult> {
  std::string backend;
  ConformOptions options;
  std::string started;  // when, in UTC (ISO 8601)
  std::string host;     // the machine it ran on
  double seconds = 0;
  int planned = 0;      // the cases this run (this shard) takes
  int count(Verdict v) const;
  bool passed() const;  // no failure, and at least one case passed
};

ConformReport conform(Backend& backend, const ConformOptions& options);

// The reproducer folder of the failure of case `index`: named by case and seed, so that
// shards and workers writing into one --keep folder never collide.
fs::path reproducer_folder(const ConformOptions& o, int index);

// Runs one case, in `work` (created; left for the caller to keep or remove).
CaseResult run_case(Backend& backend, const Case& c, const ConformOptions& options, const fs::path& work);

// Re-runs the case kept in a reproducer folder (its case.json).
CaseResult replay(Backend& backend, const fs::path& reproducer, const ConformOptions& options);

}  // namespace cutcheck
