#include <fmt/format.h>
#include <fnmatch.h>

#include <thread>

#include "backend/backend_subject.h"
#include "backend/process_failure_stop.h"
#include "backend/serve_backend.h"
#include "core/error.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/json.h"
#include "core/provenance.h"
#include "core/temp_folder.h"
#include "core/version.h"
#include "core/worker_processes.h"
#include "properties/check.h"
#include "tools/check_report.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {
namespace {

// A property is selected by its name, by a prefix ending at a dot ("composition"), or
// by a glob ("round*"); several filters separate with commas.
bool selected(const std::string& name, const std::string& filters) {
  if (filters.empty()) return true;
  for (const std::string& f : split_list(filters))
    if (!f.empty() && (name == f || name.starts_with(f + ".") || fnmatch(f.c_str(), name.c_str(), 0) == 0)) return true;
  return false;
}

struct Args {
  int cases = 100;
  uint64_t seed = 1;
  std::string filter, reproduce, junit, json;
  bool no_shrink = false;
  // check --backend
  std::string backend, spec = "random", weights, precision = "f32", keep = "check-failures";
  std::vector<int64_t> tp{2};
  double timeout = 60;
  int jobs = 1;
  bool serve = false;
  Destinations destinations;
};

// Runs one property on the subject `make` builds (once per process that checks).
using Checker = std::function<CheckResult(const Property&)>;

// Runs `chosen`, calling `done` with each result in the catalog's order. With jobs > 1
// the properties run in that many worker processes (core/worker_processes.h: RapidCheck
// keeps its state in statics), each building its own subject (and backend servers) with
// `make`.
void check_all(const std::vector<const Property*>& chosen, const std::function<Checker()>& make, int jobs,
               const std::function<void(CheckResult)>& done) {
  run_in_worker_processes(
      chosen.size(), jobs,
      [&]() -> std::function<Json(size_t)> {
        const Checker check_one = make();
        return [&chosen, check_one](size_t i) { return check_result_json(check_one(*chosen[i])); };
      },
      [&](size_t, const Json& result) { done(check_result_from_json(result)); }, {"check --jobs", "check", "properties"});
}

std::string figure(const CheckResult& r) {
  const std::string verdict = r.verdict();
  if (verdict == "within tolerance") return fmt::format("worst headroom {:.3g}: {}", r.headroom, r.worst);
  if (verdict == "unsupported") return r.refusal;
  if (r.unsupported > 0) return fmt::format("{} of {} cases unsupported", r.unsupported, r.cases);
  return "";
}

// The reproducer of a backend property's failure: the failing case replayed once with its
// runners' folders (programs and weights) kept, and report.txt saying how to re-run it.
void keep_reproducer(const fs::path& folder, const Property& p, const CheckResult& r, const CheckRun& run,
                     const std::function<Subject(const fs::path&)>& subject_in) {
  fs::remove_all(folder);
  fs::create_directories(folder);
  std::string replayed = "not replayed (no reproduce string)";
  if (!r.reproduce.empty()) {
    const CheckResult again = check(p, subject_in(folder / "runs"), {1, run.seed, false, r.reproduce});
    replayed = again.passed ? "the replay passed: this failure did not repeat (a nondeterministic backend?)"
                            : "the replay failed again; runs/ holds a folder per runner: its program folders "
                                      "(cut0, ...), weights, and each run's cut, inputs and outputs (run-N.*)";
  }
  write_file_atomic(folder / "report.txt",
                    fmt::format("{}\nbackend: {}\nproperty: {}\nfailure: {}\ncounterexample: {}re-run: {}\nkept: {}\n",
                                version_line(), run.backend, r.property, r.failure, r.counterexample,
                                replay_command(run, r), replayed));
}

void run_checks(const Args& a) {
  const bool on_backend = !a.backend.empty();
  // The defaults: only --keep has one, and only a backend's failures are kept there.
  if (on_backend) a.destinations.check();
  std::vector<const Property*> chosen;
  for (const Property& p : catalog())
    if (selected(p.name, a.filter) && (!on_backend || p.backend)) chosen.push_back(&p);
  if (chosen.empty())
    throw Error(fmt::format("--filter '{}' selects no property{}", a.filter, on_backend ? " that applies to a backend" : ""));

  CheckRun run{a.seed, a.cases, a.filter, utc_now(), host_name()};
  BackendSubjectOptions bo;
  std::function<Subject(const fs::path&)> subject_in;  // a backend subject working in a folder
  std::optional<TempFolder> work;
  std::unique_ptr<InterruptScope> interrupts;
  if (on_backend) {
    if (a.spec != "random") bo.spec = load_spec(a.spec);
    if (!a.weights.empty() && !bo.spec) throw Error("--weights needs --spec");
    bo.weights = a.weights;
    bo.tp = a.tp;
    bo.tolerance = tolerance_option("bound", a.precision);
    if (std::none_of(a.tp.begin(), a.tp.end(), [](int64_t tp) { return tp > 1; }))
      std::erase_if(chosen, [](const Property* p) { return p->name.starts_with("tp."); });
    run.backend = a.backend + (a.serve ? " --serve" : "");
    std::string prefix = fmt::format("cutcheck check --backend '{}'{} --precision {} --seed {} --tp {}", a.backend,
                                     a.serve ? " --serve" : "", a.precision, a.seed, fmt::join(a.tp, ","));
    if (a.timeout != Args{}.timeout) prefix += fmt::format(" --timeout {}", a.timeout);
    if (bo.spec) prefix += fmt::format(" --spec '{}'", fs::exists(a.spec) ? fs::absolute(a.spec).string() : a.spec);
    if (!a.weights.empty()) prefix += fmt::format(" --weights '{}'", fs::absolute(a.weights).string());
    run.replay_prefix = prefix;
    run.reproducers = fs::absolute(a.keep).string();
    interrupts = std::make_unique<InterruptScope>();
    work.emplace("check");
    bo.work = work->path();
    subject_in = [a, bo](const fs::path& folder) {
      // The backend lives as long as the subject's runners: shared by them.
      std::shared_ptr<Backend> backend;
      if (a.serve) backend = std::make_shared<ServeBackend>(a.backend, a.timeout);
      else backend = std::make_shared<CommandBackend>(a.backend, a.timeout);
      BackendSubjectOptions o = bo;
      o.work = folder;
      o.keep = folder != bo.work;
      Subject s = backend_subject(*backend, o);
      auto runner = s.runner;
      auto split_runner = s.split_runner;
      s.runner = [backend, runner](const ModelSpec& spec, const TensorMap& w) { return runner(spec, w); };
      s.split_runner = [backend, split_runner](const ModelSpec& spec, const TensorMap& w, int64_t tp) {
        return split_runner(spec, w, tp);
      };
      return s;
    };
    subject_in(bo.work);  // refuses a spec no --tp splits, or unreadable weights, before any property runs
  } else {
    for (const auto& [set, option] : std::initializer_list<std::pair<bool, const char*>>{
             {a.serve, "--serve"}, {a.spec != "random", "--spec"}, {!a.weights.empty(), "--weights"},
             {a.precision != "f32", "--precision"}, {a.tp != std::vector<int64_t>{2}, "--tp"}})
      if (set) throw Error(fmt::format("{} goes with --backend: the reference's properties take none", option));
  }

  const CheckOptions options{a.cases, a.seed, !a.no_shrink, a.reproduce};
  auto write = [&] {
    const Json report = check_report_json(run);
    if (!a.json.empty()) write_file_atomic(a.json, json_text(report));
    if (!a.junit.empty() && run.finished) write_file_atomic(a.junit, check_junit_xml(report));
  };
  const int width = 26;
  fmt::print("{:<{}} {:>6}  {:<16} {:>8}\n", "property", width, "cases", "result", "seconds");
  std::fflush(stdout);
  int total = 0;
  double seconds = 0;
  auto make = [&]() -> Checker {
    auto subject = std::make_shared<Subject>(on_backend ? subject_in(bo.work) : Subject::reference());
    return [subject, options](const Property& p) { return check(p, *subject, options); };
  };
  try {
    check_all(chosen, make, a.jobs > 0 ? a.jobs : int(std::max(1u, std::thread::hardware_concurrency())),
              [&](CheckResult r) {
                const std::string verdict = on_backend ? r.verdict() : r.passed ? "ok" : "FAIL";
                fmt::print("{:<{}} {:>6}  {:<16} {:>8.2f}  {}\n", r.property, width, r.cases, verdict, r.seconds,
                           figure(r));
                std::fflush(stdout);
                total += r.cases;
                seconds += r.seconds;
                run.results.push_back(std::move(r));
                write();
              });
  } catch (const Interrupted&) {  // the report keeps the properties checked so far ("finished": false)
    write();
    throw;
  }
  // The failures' reproducers, once every property is in.
  std::vector<const CheckResult*> failures;
  for (const CheckResult& r : run.results)
    if (!r.passed) failures.push_back(&r);
  // Failures the process-failure gate cut short get no reproducer: replaying would only repeat the failure.
  std::vector<const CheckResult*> skipped;
  std::erase_if(failures, [&](const CheckResult* r) {
    if (!skipped_by_failure_gate(r->failure)) return false;
    skipped.push_back(r);
    return true;
  });
  if (on_backend)
    for (const CheckResult* r : failures) {
      const fs::path folder = fs::path(run.reproducers) / r->property;
      try {
        keep_reproducer(folder, find_property(r->property), *r, run, subject_in);
      } catch (const fs::filesystem_error& e) {  // the user's --keep, not a bug: exit 2
        throw IoError(fmt::format("--keep: cannot write the reproducer of {} to '{}': {}", r->property,
                                  folder.string(), e.code().message()));
      }
    }
  run.finished = true;
  write();
  fmt::print("{} properties, {} cases in {:.2f} s ({:.0f} cases/s), seed {}\n", chosen.size(), total, seconds,
             seconds > 0 ? total / seconds : 0.0, a.seed);
  for (const CheckResult* r : failures) {
    fmt::print("\n{} failed after {} passing cases:\n  {}\n", r->property, r->cases, r->failure);
    if (!r->counterexample.empty()) fmt::print("  counterexample: {}", r->counterexample);
    if (!r->reproduce.empty()) fmt::print("  reproduce: {}\n", replay_command(run, *r));
    if (on_backend) fmt::print("  reproducer: {}\n", (fs::path(run.reproducers) / r->property).string());
  }
  if (!skipped.empty())
    fmt::print("\nSTOPPED: {} ({} {} not checked)\n", failure_stop_reason(skipped.front()->failure), skipped.size(),
               skipped.size() == 1 ? "property" : "properties");
  if (!failures.empty() || !skipped.empty())
    throw CheckFailed(fmt::format("{} of {} properties failed{}", failures.size() + skipped.size(), chosen.size(),
                                  skipped.empty() ? "" : fmt::format(", {} of them skipped by the process-failure stop", skipped.size())));
  if (on_backend && std::none_of(run.results.begin(), run.results.end(),
                                 [](const CheckResult& r) { return r.verdict() != "unsupported"; }))
    throw CheckFailed("the backend refused every property's cuts: nothing was checked");
}

}  // namespace

void add_check(CLI::App& app) {
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "check", "run the property catalog on the reference interpreter, or with --backend the properties a backend must hold");
  add_number(cmd, "--cases", args->cases, "cases per property", case_counts)->capture_default_str();
  add_number(cmd, "--seed", args->seed, "RapidCheck's seed (the same seed checks the same cases)", seeds)
      ->capture_default_str();
  cmd->add_option("--filter", args->filter, "properties to run: names, prefixes or globs, comma-separated");
  cmd->add_option("--reproduce", args->reproduce, "replay a failure: the reproduce string a failed check printed");
  cmd->add_flag("--no-shrink", args->no_shrink, "report the first failing case without shrinking it");
  args->destinations.add(cmd, "--junit", args->junit, "write a JUnit XML report here (a testcase per property)",
                         Destinations::Kind::file);
  args->destinations.add(cmd, "--json", args->json, "write a JSON report here, rewritten after each property",
                         Destinations::Kind::file);
  cmd->add_option("--backend", args->backend,
                  "check a backend's own invariances instead (composition, batch invariance, chunking, forward, "
                  "don't-care rows, determinism, tp): the command up to its run verb, as for conform");
  cmd->add_flag("--serve", args->serve, "with --backend: start it once as `BACKEND --serve` (docs/conformance.md)");
  cmd->add_option("--spec", args->spec, "with --backend: a spec name or file, or 'random' for small random specs")
      ->capture_default_str();
  cmd->add_option("--weights", args->weights, "with --backend and --spec: a weights folder instead of seeded weights");
  add_number(cmd, "--tp", args->tp, "with --backend: the widths tp.split_equals_unsplit splits over (1 alone: none)",
             tp_widths)
      ->capture_default_str();
  cmd->add_option("--precision", args->precision,
                  "with --backend: what it computes in (f32, bf16, f16); runs that differ agree within the sum of "
                  "their error bounds in it")
      ->capture_default_str();
  add_number(cmd, "--timeout", args->timeout, "with --backend: seconds it may take per run", seconds)
      ->capture_default_str();
  add_number(cmd, "--jobs", args->jobs,
             "properties checked at once, each in a process of its own (0: one per core); the report is the same for "
             "any number",
             jobs)
      ->capture_default_str();
  args->destinations.add(cmd, "--keep", args->keep, "with --backend: folder for the reproducers of failures",
                         Destinations::Kind::folder)
      ->capture_default_str();
  cmd->callback([args] { run_checks(*args); });
}

}  // namespace cutcheck::cli
