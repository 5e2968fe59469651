#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>

#include "backend/serve_backend.h"
#include "campaign/op_suite.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/temp_folder.h"
#include "report/report.h"
#include "tools/commands.h"
#include "tools/common.h"
#include "tools/progress.h"

#include <optional>
#include <thread>

namespace cutcheck::cli {
namespace {

std::vector<CutKind> kinds_matching(const std::string& patterns) {
  std::vector<CutKind> out;
  const std::vector<std::string> items = split_list(patterns);
  for (CutKind k : all_cut_kinds())
    if (std::any_of(items.begin(), items.end(), [&](const std::string& p) {
          return !p.empty() && fnmatch(p.c_str(), cut_kind_name(k).c_str(), 0) == 0;
        }))
      out.push_back(k);
  if (out.empty()) throw Error(fmt::format("--cuts '{}' matches no cut kind", patterns));
  return out;
}

}  // namespace

void add_conform(CLI::App& app) {
  struct Args {
    std::string backend, cuts = "*", spec = "random", weights, junit, json, html, keep = "conform-failures", replay,
                         tolerance = "bound", precision = "f32", shard = "1/1";
    int jobs = 1;
    std::vector<int64_t> tp{1};
    int cases = 100;
    uint64_t seed = 1;
    double timeout = 60;
    std::optional<double> shrink_time;
    std::optional<double> atol, rtol, nmse;
    bool no_shrink = false, ops = false, serve = false;
    std::vector<std::string> ops_filter;
    std::vector<std::string> fix;
    ShapeSpace shapes = ShapeSpace::campaign();
    Destinations destinations;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("conform", "check a backend against the reference on generated cases");
  cmd->add_option("--backend", a->backend,
                  "the backend's command up to its run verb; cutcheck appends FOLDER --inputs IN --outputs OUT")
      ->required();
  cmd->add_flag("--serve", a->serve,
                "start the backend once as `BACKEND --serve` and send it one request per run (the persistent protocol, "
                "docs/conformance.md); with --jobs N, N servers");
  cmd->add_option("--cuts", a->cuts, "cut kinds to generate: globs, comma-separated (decode,batch_*)")->capture_default_str();
  add_number(cmd, "--tp", a->tp, "tp widths to generate (cuts that split: decode, batch, decode_layer, batch_layer)",
             tp_widths)
      ->capture_default_str();
  add_number(cmd, "--cases", a->cases, "cases to generate", case_counts)->capture_default_str();
  add_number(cmd, "--seed", a->seed, "the seed: the same seed generates the same cases", seeds)->capture_default_str();
  cmd->add_option("--spec", a->spec, "a spec name or file, or 'random' for random specs (from tiny to wide, docs/conformance.md)")->capture_default_str();
  cmd->add_option("--weights", a->weights, "with --spec: a weights folder to use instead of seeded weights");
  cmd->add_option("--fix", a->fix,
                  "with --spec random: hold a spec field at a value (FIELD=VALUE, or head_dim=dim/heads); repeatable");
  add_number(cmd, "--ctx-max", a->shapes.ctx_max, "largest ctx a case may have", {1, 1 << 20})->capture_default_str();
  add_number(cmd, "--rows-max", a->shapes.rows_max, "largest rows a batch or prefill case may have", {1, 4096})
      ->capture_default_str();
  add_number(cmd, "--large-share", a->shapes.large_share,
             "the chance that an extent (ctx, rows, a random spec's widths) is drawn large", {0, 1})
      ->capture_default_str();
  add_number(cmd, "--timeout", a->timeout, "seconds the backend may take per run", seconds)->capture_default_str();
  add_number(cmd, "--shrink-time", a->shrink_time,
             "seconds allowed for shrinking and bisecting each failure (default: 10 x the failing case's time, "
             "at least 10)",
             seconds);
  cmd->add_option("--precision", a->precision,
                  "what the backend computes in: f32, bf16 or f16 (values stored in it, sums in f32 or better)")
      ->capture_default_str();
  cmd->add_option("--tolerance", a->tolerance,
                  "bound (each element within the error bound of --precision; docs/numerics.md), or the fixed presets "
                  "fixed-f32 (atol = rtol = 1e-4, nmse 1e-8) and fixed-bf16 (atol = rtol = 0.25, nmse 0.01, no large keys)")
      ->capture_default_str();
  add_number(cmd, "--atol", a->atol, "with a fixed tolerance: the absolute tolerance", tolerances);
  add_number(cmd, "--rtol", a->rtol, "with a fixed tolerance: the relative tolerance", tolerances);
  add_number(cmd, "--nmse", a->nmse, "with a fixed tolerance: the largest NMSE of an output", tolerances);
  add_number(cmd, "--jobs", a->jobs, "backend runs at once (0: one per core); the report is the same for any number", jobs)
      ->capture_default_str();
  cmd->add_option("--shard", a->shard,
                  "run the I-th of N slices of the cases (1/4 ... 4/4), for a CI matrix; merge-reports joins them")
      ->capture_default_str();
  a->destinations.add(cmd, "--junit", a->junit, "write a JUnit XML report here", Destinations::Kind::file);
  a->destinations.add(cmd, "--json", a->json, "write a JSON report here, kept up to date as cases finish",
                      Destinations::Kind::file);
  a->destinations.add(cmd, "--html", a->html, "write a self-contained HTML report here", Destinations::Kind::file);
  a->destinations.add(cmd, "--keep", a->keep, "folder for the reproducers of failures", Destinations::Kind::folder)
      ->capture_default_str();
  cmd->add_flag("--no-shrink", a->no_shrink, "report failures as found, unshrunk");
  cmd->add_option("--replay", a->replay, "re-run the case kept in a reproducer folder, and nothing else");
  cmd->add_flag("--ops", a->ops,
                "instead of cuts, one-op programs over every op, dtype and edge shape (docs/conformance.md, Per-op suite)");
  cmd->add_option("--ops-filter", a->ops_filter, "with --ops: only the cases whose name matches a glob ('max*'); repeatable");
  cmd->callback([a] {
    // The defaults: only --keep has one, written by a campaign (not --ops or --replay).
    if (!a->ops && a->replay.empty()) a->destinations.check();
    ConformOptions o;
    o.kinds = kinds_matching(a->cuts);
    o.tp = a->tp;
    o.cases = a->cases;
    o.seed = a->seed;
    if (a->spec != "random") o.spec = load_spec(a->spec);
    if (!a->weights.empty() && !o.spec) throw Error("--weights needs --spec");
    if (!a->fix.empty() && o.spec) throw Error("--fix constrains random specs: it needs --spec random");
    for (const std::string& f : a->fix) o.specs.fix(f);
    o.shapes = a->shapes;
    o.weights = a->weights;
    o.tolerance = tolerance_option(a->tolerance, a->precision);
    o.large_keys = a->tolerance != "fixed-bf16";
    if ((a->atol || a->rtol || a->nmse) && o.tolerance.bounded())
      throw Error("--atol, --rtol and --nmse set a fixed tolerance: give --tolerance fixed-f32 or fixed-bf16 with them");
    if (a->atol) o.tolerance.atol = *a->atol;
    if (a->rtol) o.tolerance.rtol = *a->rtol;
    if (a->nmse) o.tolerance.nmse = *a->nmse;
    o.shrink = !a->no_shrink;
    if (a->shrink_time) o.shrink_seconds = *a->shrink_time;
    o.keep = a->keep;
    const std::string serve = a->serve ? " --serve" : "";
    o.replay_prefix = o.tolerance.bounded()
                          ? fmt::format("cutcheck conform --backend '{}'{} --tolerance bound --precision {}", a->backend,
                                        serve, a->precision)
                          : fmt::format("cutcheck conform --backend '{}'{} --tolerance {} --atol {} --rtol {} --nmse {}",
                                        a->backend, serve, a->tolerance, o.tolerance.atol, o.tolerance.rtol,
                                        o.tolerance.nmse);
    o.jobs = a->jobs > 0 ? a->jobs : int(std::max(1u, std::thread::hardware_concurrency()));
    o.shard = Shard::parse(a->shard);
    InterruptScope interrupts;  // SIGINT, SIGTERM: stop the backend, report what finished, exit 128 + signal
    // After `interrupts`, so that the servers' shutdown runs under it.
    std::unique_ptr<Backend> backend_owner;
    if (a->serve) backend_owner = std::make_unique<ServeBackend>(a->backend, a->timeout);
    else backend_owner = std::make_unique<CommandBackend>(a->backend, a->timeout);
    Backend& backend = *backend_owner;

    if (!a->ops_filter.empty() && !a->ops) throw Error("--ops-filter chooses op cases: it needs --ops");
    if (a->ops) {
      if (!a->replay.empty()) throw Error("--ops and --replay do not go together");
      TempFolder work("ops");
      OpReport report = conform_ops(backend, op_cases(a->seed), a->ops_filter, o.tolerance, work.path());
      fmt::print("{}", report.table());
      if (!a->json.empty())
        write_file_atomic(a->json, report.json().dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
      if (report.results.empty()) throw Error("--ops-filter matches no op case");
      if (!report.passed()) throw CheckFailed("op conformance failed");
      return;
    }
    if (!a->replay.empty()) {
      CaseResult r = replay(backend, a->replay, o);
      fmt::print("{}: {}\n{}\n", verdict_name(r.verdict), r.c.str(), r.failure);
      for (const OutputError& e : r.errors) fmt::print("  {}\n", output_error_text(e));
      if (!r.stderr_tail.empty()) fmt::print("backend stderr (tail):\n{}\n", r.stderr_tail);
      if (r.verdict != Verdict::passed) throw CheckFailed("the replayed case did not pass");
      return;
    }
    Progress progress(stderr);
    std::optional<LiveJsonReport> live;
    if (!a->json.empty()) live.emplace(a->json);
    o.on_case = [&](const ConformReport& so_far) {
      progress.on_case(so_far);
      if (live) live->update(so_far);
    };
    o.on_shrink = [&](const ShrinkProgress& p) { progress.on_shrink(p); };
    ConformReport report = conform(backend, o);
    progress.done();
    const Json json = report_json(report);
    fmt::print("{}", summary_table(json));
    write_reports(json, a->json, a->junit, a->html);
    if (report.interrupted) throw Interrupted{report.interrupted};
    if (!report.stopped.empty()) throw CheckFailed(report.stopped);
    if (!report.passed()) throw CheckFailed("conformance failed");
  });
}

}  // namespace cutcheck::cli
