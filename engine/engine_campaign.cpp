#include "engine/engine_campaign.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "backend/backend.h"
#include "campaign/campaign_engine.h"
#include "campaign/record_json.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "core/provenance.h"
#include "core/temp_folder.h"
#include "core/text.h"
#include "core/version.h"
#include "engine/engine_model.h"
#include "model/weights.h"

namespace cutcheck {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The most a results file may take: 64 bytes per value asked for (a log-probability with
// all its digits, or a [token, logprob] pair) and 1 MiB besides, so that an engine writing
// without end costs neither memory nor time. A larger file is the engine's failure.
uint64_t results_cap(const EngineCase& c, int64_t top_k) {
  uint64_t values = 0;
  for (const EngineRequest& r : c.requests)
    values += uint64_t(r.steps) + r.positions.size() * uint64_t(top_k > 0 ? top_k + 1 : c.spec.vocab);
  return (uint64_t{1} << 20) + 64 * values;
}

// Runs the shrunk case once more inside the reproducer folder, so that it holds the model,
// the requests and the engine's results of a failing run, and writes case.json and
// report.txt. With `run_again` false (a campaign the stop rule ended: another run would only
// repeat the process failure) the folder the case ran in (`work`) is copied instead.
EngineCaseResult write_reproducer(const EngineCommand& engine, const EngineFailure& f, const EngineRunOptions& o,
                                  const std::string& command, const fs::path& work, bool run_again) {
  fs::remove_all(f.reproducer);
  EngineCaseResult again = f.shrunk;
  if (run_again) {
    again = run_engine_case(engine, f.shrunk.c, o, f.reproducer);
    again.index = f.shrunk.index;
  } else {
    fs::create_directories(f.reproducer);
    fs::copy(work, f.reproducer, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  Json record = {{"format", "cutcheck-engine-reproducer-1"}, {"case", f.shrunk.c.to_json()}, {"run", o.to_json()}};
  write_file_atomic(f.reproducer / "case.json", record.dump(2) + "\n");
  const fs::path folder = fs::absolute(f.reproducer);
  const std::string model = engine_model_path(o.format, folder / "model").string();
  std::string report = fmt::format("{}\nengine: {}\ncase: {}\nfailure: {}\n", version_line(), engine.command,
                                   f.shrunk.c.str(), again.failure);
  for (const OutputError& e : again.errors) report += "  " + output_error_text(e) + "\n";
  report += fmt::format("re-run: {}\nor by hand: {} run --model {} --format {} --precision {} --requests {} --out results.json\n",
                        command, engine.command, shell_quote(model), model_format_name(o.format),
                        o.precision.name(), shell_quote((folder / "requests.json").string()));
  if (!again.stderr_tail.empty()) report += "engine stderr (tail):\n" + again.stderr_tail + "\n";
  write_file_atomic(f.reproducer / "report.txt", report);
  return again;
}

}  // namespace

Json EngineRunOptions::to_json() const {
  return {{"precision", precision.name()},
          {"format", model_format_name(format)},
          {"top_k", top_k},
          {"weights", weights.empty() ? "" : fs::absolute(weights).string()}};
}

EngineRunOptions EngineRunOptions::from_json(const Json& json, const std::string& source) {
  EngineRunOptions o;
  try {
    o.precision = EnginePrecision::parse(json_string(json, "precision", source));
    o.format = parse_model_format(json_string(json, "format", source));
  } catch (const FormatError&) {
    throw;
  } catch (const Error& e) {
    throw FormatError(fmt::format("{}: {}", source, e.what()));
  }
  o.top_k = json_int(json, "top_k", source);
  o.weights = json_string(json, "weights", source);
  return o;
}

EngineDescription EngineCommand::describe() const {
  const ProcessResult r = run_process(command + " describe", timeout, size_t{1} << 20);
  if (!r.ok()) throw process_failed(r, fmt::format("the engine's describe ({} describe) failed", command));
  try {
    return EngineDescription::from_json(parse_json(r.stdout_tail, "the engine's describe"), "the engine's describe");
  } catch (const FormatError& e) {
    throw BackendFailed(e.what(), r.stderr_tail, "", "protocol");
  }
}

EngineCaseResult run_engine_case(const EngineCommand& engine, const EngineCase& c, const EngineRunOptions& o,
                                 const fs::path& work) {
  const auto start = Clock::now();
  EngineCaseResult r;
  r.c = c;
  // cutcheck's part: the weights, the reference's expectations, the model file.
  const TensorMap weights = o.weights.empty() ? synthetic_weights(c.spec, c.weight_seed) : read_weights(o.weights, c.spec);
  // A quantized model's reference runs on the weights as the file stores them, read back to
  // f32 (given weights of any types are quantized again by the file's recipe).
  ModelSpec stored_spec = c.spec;
  if (o.precision.quantized()) stored_spec.store_every_weight_as(DType::f32);
  ReferenceRunner reference(stored_spec,
                            o.precision.quantized() ? gguf_stored_weights(c.spec, weights, o.precision.file) : weights);
  const Tolerance tolerance = Tolerance::bound(o.precision.compute());
  BoundModel bound = tolerance.model();
  bound.weight_meets = o.precision.weight_meets(c.spec);
  std::vector<RequestExpectation> expected;
  std::vector<std::vector<std::vector<int32_t>>> include;
  for (const EngineRequest& request : c.requests) {
    expected.push_back(expect_request(reference, request, bound));
    auto& mine = include.emplace_back();
    for (int64_t p : request.positions) mine.push_back({expected.back().at.at(p).next});
  }
  fs::create_directories(work);
  fs::path model;
  try {
    model = write_engine_model(o.format, work / "model", c.spec, weights, o.precision);
  } catch (const NotYet& e) {
    r.verdict = Verdict::unsupported;
    r.failure = fmt::format("the {} format cannot carry this model: {}", model_format_name(o.format), e.what());
    r.seconds = since(start);
    return r;
  }
  const fs::path requests = work / "requests.json", out = work / "results.json";
  write_file_atomic(requests, requests_json(c.spec.vocab, o.top_k, c.requests, include).dump() + "\n");
  fs::remove(out);

  // The engine's part: whatever goes wrong here is the engine's.
  const std::string command =
      fmt::format("{} run --model {} --format {} --precision {} --requests {} --out {}", engine.command,
                  shell_quote(fs::absolute(model).string()), model_format_name(o.format), o.precision.name(),
                  shell_quote(fs::absolute(requests).string()), shell_quote(fs::absolute(out).string()));
  const ProcessResult p = run_process(command, engine.timeout, 8192);
  r.stderr_tail = p.stderr_tail;
  if (!p.timed_out && p.exit_code == 77) {
    r.verdict = Verdict::unsupported;
    r.failure = "the engine does not run this model (exit 77)" + (p.stderr_tail.empty() ? "" : ": " + last_line(p.stderr_tail));
  } else if (!p.ok()) {
    const BackendFailed f = process_failed(p, "");
    r.verdict = Verdict::failed;
    r.process_failure = f.process_failure;
    r.failure_type = f.type;
    r.failure = "the engine " + f.process_failure;
  } else {
    std::vector<EngineResult> results;
    try {
      if (!fs::exists(fs::symlink_status(out)))
        throw FormatError(fmt::format("{}: the engine exited 0 without writing its results", out.string()));
      if (!fs::is_regular_file(fs::symlink_status(out)))  // a link is not followed: the engine's own file is read
        throw FormatError(fmt::format("{}: the engine's results are not a regular file{}", out.string(),
                                      fs::is_symlink(fs::symlink_status(out)) ? " (a symbolic link)" : ""));
      results = parse_results(parse_json(read_file(out, results_cap(c, o.top_k), Links::refuse), "results.json"), c.requests,
                              c.spec.vocab, o.top_k, "results.json");
    } catch (const Error& e) {
      r.verdict = Verdict::failed;
      r.failure_type = "protocol";
      r.failure = e.what();
    }
    if (r.failure_type.empty()) {
      EngineVerdict v = judge_engine(c.requests, expected, results, o.top_k, tolerance);
      r.verdict = v.passed ? Verdict::passed : Verdict::failed;
      if (!v.passed) {
        r.failure = v.failure;
        r.failure_type = "mismatch";
      }
      r.errors.push_back(v.logprobs);
      r.ties = std::move(v.ties);
      r.positions = std::move(v.positions);
    }
  }
  r.seconds = since(start);
  return r;
}

bool EngineReport::passed() const {
  int passed = 0;
  for (const EngineCaseResult& r : results) {
    if (r.verdict == Verdict::failed) return false;
    passed += r.verdict == Verdict::passed;
  }
  return passed > 0 && finished && !interrupted;
}

EngineReport conform_engine(const EngineCommand& engine, const EngineDescription& description,
                            const EngineCampaignOptions& o) {
  EngineReport report;
  report.engine = engine.command;
  report.description = description;
  report.options = o;
  report.started = utc_now();
  report.host = host_name();
  const auto start = Clock::now();
  TempFolder root("engine");
  CampaignPlan<EngineCase, EngineCaseResult> plan(gen_engine_case(description, o.space));
  plan.seed = o.seed;
  for (int i = 0; i < o.cases; ++i) plan.cases.push_back(i);
  plan.jobs = o.jobs;
  plan.run = [&](const EngineCase& c, const fs::path& work) { return run_engine_case(engine, c, o.run, work); };
  plan.same_failure_limit = o.same_failure_limit;
  plan.who = fmt::format("the engine '{}'", engine.command);
  plan.shrink = o.shrink;
  plan.shrink_budget = o.shrink_budget;
  plan.shrink_seconds = [&](const EngineCaseResult& first) {
    return o.shrink_seconds > 0 ? o.shrink_seconds : std::max(30.0, 20 * first.seconds);
  };
  // A smaller case replaces the failure only when it fails the same way.
  plan.still_fails = [](const EngineCaseResult& original, const EngineCaseResult& r) {
    return r.verdict == Verdict::failed && r.failure_type == original.failure_type;
  };
  // The first failure is kept; later ones are reported as found, unshrunk.
  plan.keep = [&](EngineFailure& f, const fs::path& work, bool) {
    f.reproducer = o.keep / fmt::format("case-{}-seed-{}", f.index, o.seed);
    f.command = fmt::format("{} --replay {}", o.replay_prefix, shell_quote(fs::absolute(f.reproducer).string()));
    const EngineCaseResult again = write_reproducer(engine, f, o.run, f.command, work, report.stopped.empty());
    if (again.verdict != Verdict::failed)
      f.shrunk.failure += fmt::format(" (NOT failing again when re-run for the reproducer: {})", verdict_name(again.verdict));
  };
  if (o.on_case) plan.on_case = [&] { o.on_case(report); };
  run_campaign(plan, root.path(), report);
  report.seconds = since(start);
  return report;
}

EngineCaseResult replay_engine_case(const EngineCommand& engine, const fs::path& reproducer) {
  const fs::path file = reproducer / "case.json";
  const std::string where = file.string();
  const Json record = parse_json(read_file(file, max_bytes::engine_case_record), where);
  if (json_string(record, "format", where) != "cutcheck-engine-reproducer-1")
    throw FormatError(fmt::format("{}: format is not cutcheck-engine-reproducer-1 (a conform-engine reproducer)", where));
  const EngineCase c = EngineCase::from_json(json_field(record, "case", where), where + ": case");
  const EngineRunOptions o = EngineRunOptions::from_json(json_field(record, "run", where), where + ": run");
  TempFolder work("engine-replay");
  return run_engine_case(engine, c, o, work.path() / "case");
}

}  // namespace cutcheck
