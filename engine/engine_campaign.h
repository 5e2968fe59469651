// Engine conformance (docs/engines.md): an engine command asked what it runs
// (`describe`), then generated cases run on it (`run`) and judged against the reference;
// a failure shrinks to the smallest case that still fails and is kept as a reproducer
// folder with the command that re-runs it. The report is a conform report
// (report/engine_report.h), one case per model.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "campaign/campaign_record.h"
#include "engine/engine_case.h"
#include "engine/engine_judge.h"

namespace cutcheck {

// The engine command, run under the time limit (backend/backend.h's process rules).
struct EngineCommand {
  std::string command;
  double timeout = 120;
  // Runs `COMMAND describe`; throws BackendFailed (the engine's failure) when it fails or
  // prints something other than a description.
  EngineDescription describe() const;
};

struct EngineRunOptions {
  EnginePrecision precision;
  ModelFormat format = ModelFormat::cutcheck;
  int64_t top_k = 0;
  fs::path weights;  // with a fixed spec: given weights instead of seeded ones

  Json to_json() const;  // as a reproducer's case.json and the report's options hold them
  static EngineRunOptions from_json(const Json& json, const std::string& source);
};

struct EngineCaseResult : CaseRun<EngineCase> {
  std::vector<std::string> ties = {};
  std::vector<PositionFigure> positions = {};
};

// Writes the model in the run's format under `work`, runs the engine on the case's
// requests, judges its results. The engine's failures are the case's; cutcheck's own
// errors (writing the model, the reference) are thrown.
EngineCaseResult run_engine_case(const EngineCommand& engine, const EngineCase& c, const EngineRunOptions& o,
                                 const fs::path& work);

struct EngineReport;

struct EngineCampaignOptions {
  EngineRunOptions run;
  EngineCaseSpace space;
  int cases = 20;
  uint64_t seed = 1;
  int jobs = 1;
  bool shrink = true;
  int shrink_budget = 100;   // engine runs allowed while shrinking one failure
  double shrink_seconds = 0;  // 0: max(30 s, 20 x the failing case's time)
  // Cases after which an engine that failed every one of them the same way (the same exit
  // code, signal or timeout) stops the campaign unshrunk (backend/process_failure_stop.h).
  int same_failure_limit = 3;
  fs::path keep = "engine-failures";
  std::string replay_prefix;  // "cutcheck conform-engine --engine '...'"
  // Called after each finished case with the report so far (the finished cases in case
  // order), on the thread that called conform_engine().
  std::function<void(const EngineReport& so_far)> on_case;
};

using EngineFailure = CampaignFailure<EngineCaseResult>;

// The record's failures: the first failure, shrunk.
struct EngineReport : CampaignRecord<EngineCaseResult> {
  std::string engine;  // the command
  EngineDescription description;
  EngineCampaignOptions options;
  std::string started, host;
  double seconds = 0;
  bool passed() const;
};

EngineReport conform_engine(const EngineCommand& engine, const EngineDescription& description,
                            const EngineCampaignOptions& options);

// Re-runs the case kept in a reproducer folder.
EngineCaseResult replay_engine_case(const EngineCommand& engine, const fs::path& reproducer);

}  // namespace cutcheck
