// cutcheck conform-engine: a whole inference engine checked against the reference at the
// level of next-token distributions and greedy tokens (docs/engines.md).
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "engine/engine_campaign.h"
#include "report/engine_report.h"
#include "report/report.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {
namespace {

// Per position over the campaign: the worst |log p - log p_ref|, and the element that came
// closest to its bound.
std::string position_table(const Json& report) {
  std::string out = fmt::format("{:>9} {:>9} {:>15} {:>12} {:>9} {:>12} {:>6}\n", "position", "compared",
                                "worst |dlogp|", "its bound", "headroom", "top's bound", "exact");
  for (const Json& p : report.at("by_position"))
    out += fmt::format("{:>9} {:>9} {:>15.3g} {:>12.3g} {:>9.3g} {:>12.3g} {:>6}\n", p.at("position").get<int64_t>(),
                       p.at("compared").get<int>(), p.at("worst_abs").get<double>(), p.at("bound").get<double>(),
                       p.at("headroom").get<double>(), p.at("top_bound").get<double>(), p.at("exact").get<int>());
  return out;
}

void print_case(const EngineCaseResult& r) {
  fmt::print("{}: {}\n", verdict_name(r.verdict), r.c.str());
  if (!r.failure.empty()) fmt::print("{}\n", r.failure);
  for (const OutputError& e : r.errors) fmt::print("  {}\n", output_error_text(e));
  for (const std::string& t : r.ties) fmt::print("  near tie: {}\n", t);
  if (!r.stderr_tail.empty()) fmt::print("engine stderr (tail):\n{}\n", r.stderr_tail);
}

}  // namespace

void add_conform_engine(CLI::App& app) {
  struct Args {
    std::string engine, spec = "random", weights, junit, json, html, keep = "engine-failures", replay, precision, format;
    int cases = 20, jobs = 1, requests = 3, steps = 4;
    int64_t ctx_max = 256;
    std::optional<int64_t> top_k;
    uint64_t seed = 1;
    double timeout = 120;
    std::optional<double> shrink_time;
    bool no_shrink = false, positions = false;
    Destinations destinations;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("conform-engine",
                                 "check a whole inference engine's next-token distributions against the reference "
                                 "(docs/engines.md)");
  cmd->add_option("--engine", a->engine, "the engine command; cutcheck appends 'describe' or 'run ...' (docs/engines.md)")
      ->required();
  add_number(cmd, "--cases", a->cases, "cases (models) to generate", {1, 1 << 20})->capture_default_str();
  add_number(cmd, "--seed", a->seed, "the seed: the same seed generates the same cases", seeds)->capture_default_str();
  cmd->add_option("--spec", a->spec, "a spec name or file, or 'random' for random specs within what the engine declares")
      ->capture_default_str();
  cmd->add_option("--weights", a->weights, "with --spec: a weights folder to use instead of seeded weights");
  cmd->add_option("--precision", a->precision, "the precision the engine is held to (default: the first it declares)");
  cmd->add_option("--format", a->format, "the model format to hand it (default: the first it declares)");
  add_number(cmd, "--top-k", a->top_k,
             "with an engine that returns top-k log-probabilities: k, at most its max_top_k (default: its max_top_k)",
             {1, INT32_MAX});
  add_number(cmd, "--ctx-max", a->ctx_max, "longest prompt + steps (further bounded by the engine's max_context)",
             {2, 1 << 20})
      ->capture_default_str();
  add_number(cmd, "--requests", a->requests, "requests (prompts) per case, at most", {1, 64})->capture_default_str();
  add_number(cmd, "--steps", a->steps, "greedy steps per request, at most", {0, 1024})->capture_default_str();
  add_number(cmd, "--timeout", a->timeout, "seconds the engine may take per run (model load included)", seconds)
      ->capture_default_str();
  add_number(cmd, "--shrink-time", a->shrink_time,
             "seconds allowed for shrinking a failure (default: max(30, 20 x the case's time))", seconds);
  add_number(cmd, "--jobs", a->jobs, "cases at once (0: one per core); the report is the same for any number", jobs)
      ->capture_default_str();
  a->destinations.add(cmd, "--junit", a->junit, "write a JUnit XML report here", Destinations::Kind::file);
  a->destinations.add(cmd, "--json", a->json, "write a JSON report here", Destinations::Kind::file);
  a->destinations.add(cmd, "--html", a->html, "write a self-contained HTML report here", Destinations::Kind::file);
  a->destinations.add(cmd, "--keep", a->keep, "folder for the reproducer of a failure", Destinations::Kind::folder)
      ->capture_default_str();
  cmd->add_flag("--no-shrink", a->no_shrink, "report a failure as found, unshrunk");
  cmd->add_flag("--positions", a->positions, "print the per-position figures (worst |d log p| against its bound)");
  cmd->add_option("--replay", a->replay, "re-run the case kept in a reproducer folder, and nothing else");
  cmd->callback([a] {
    // The defaults: only --keep has one, written by a campaign (not --replay).
    if (a->replay.empty()) a->destinations.check();
    EngineCommand engine{a->engine, a->timeout};
    InterruptScope interrupts;  // SIGINT, SIGTERM: stop the engine, report what finished
    if (!a->replay.empty()) {
      const EngineCaseResult r = replay_engine_case(engine, a->replay);
      print_case(r);
      if (r.verdict != Verdict::passed) throw CheckFailed("the replayed case did not pass");
      return;
    }
    EngineCampaignOptions o;
    std::optional<ModelSpec> spec;
    if (a->spec != "random") spec = load_spec(a->spec);
    if (!a->weights.empty() && !spec) throw Error("--weights needs --spec");
    std::optional<EnginePrecision> precision;
    if (!a->precision.empty()) precision = EnginePrecision::parse(a->precision);
    std::optional<ModelFormat> format;
    if (!a->format.empty()) format = parse_model_format(a->format);

    // The engine's own failure to describe itself is the engine's: exit 1, with its stderr.
    EngineDescription d;
    try {
      d = engine.describe();
    } catch (const BackendFailed& e) {
      fmt::print(stderr, "{}{}{}\n", e.what(), e.process_failure.empty() ? "" : ": the engine " + e.process_failure,
                 e.stderr_tail.empty() ? "" : "\nengine stderr (tail):\n" + e.stderr_tail);
      throw CheckFailed("the engine did not describe itself");
    }
    o.run.precision = precision.value_or(d.precisions.front());
    if (std::find(d.precisions.begin(), d.precisions.end(), o.run.precision) == d.precisions.end())
      throw NotYet(fmt::format("the engine does not declare the precision {}", a->precision));
    o.run.format = format.value_or(d.formats.front());
    if (std::find(d.formats.begin(), d.formats.end(), o.run.format) == d.formats.end())
      throw NotYet(fmt::format("the engine does not declare the model format {}", a->format));
    o.run.top_k = d.max_top_k == 0 ? 0 : std::min(a->top_k.value_or(d.max_top_k), d.max_top_k);
    o.run.weights = a->weights;
    o.space.spec = spec;
    o.space.given_weights = !a->weights.empty();
    o.space.dtype = o.run.precision.spec_dtype();
    o.space.row_multiple = o.run.precision.block_values();
    o.space.ctx_max = a->ctx_max;
    o.space.requests = a->requests;
    o.space.steps_max = a->steps;
    o.cases = a->cases;
    o.seed = a->seed;
    o.jobs = a->jobs > 0 ? a->jobs : int(std::max(1u, std::thread::hardware_concurrency()));
    o.shrink = !a->no_shrink;
    if (a->shrink_time) o.shrink_seconds = *a->shrink_time;
    o.keep = a->keep;
    o.replay_prefix = fmt::format("cutcheck conform-engine --engine {} --timeout {}", shell_quote(a->engine), a->timeout);
    o.on_case = [](const EngineReport& so_far) {
      const int done = int(so_far.results.size()), planned = so_far.options.cases;
      const auto failed = std::count_if(so_far.results.begin(), so_far.results.end(),
                                        [](const EngineCaseResult& r) { return r.verdict == Verdict::failed; });
      fmt::print(stderr, "\r{}/{} cases{}", done, planned, failed ? fmt::format(" ({} failed)", failed) : "");
      if (done == planned) fmt::print(stderr, "\n");
    };
    fmt::print(stderr, "engine: {} ({} model, {}{})\n", d.name, model_format_name(o.run.format),
               o.run.precision.name(), o.run.top_k ? fmt::format(", top {}", o.run.top_k) : "");
    const EngineReport report = conform_engine(engine, d, o);
    const Json json = engine_report_json(report);
    fmt::print("{}", summary_table(json));
    if (json.at("ties").get<int>() > 0) {
      fmt::print("\nnear ties (not failures):\n");
      for (const EngineCaseResult& r : report.results)
        for (const std::string& t : r.ties) fmt::print("  case {}: {}\n", r.index, t);
    }
    if (a->positions) fmt::print("\n{}", position_table(json));
    write_reports(json, a->json, a->junit, a->html);
    if (report.interrupted) throw Interrupted{report.interrupted};
    if (!report.passed()) throw CheckFailed("engine conformance failed");
  });
}

}  // namespace cutcheck::cli
