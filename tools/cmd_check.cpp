#include <fmt/format.h>
#include <fnmatch.h>

#include <thread>

#include "backend/backend_subject.h"
#include "backend/process_failure_stop.h"
#include "backend/serve_backend.h"
#include "campaign/campaign_engine.h"
#include "core/error.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/json.h"
#include "core/provenance.h"
#include "core/temp_folder.h"
#include "core/version.h"
#include "core/process.h"
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
  // A worker of `check` (hidden): checks this one property and writes its result here.
  std::string property, result;
};

// The case of `check`'s campaign: one property, checked in a process of its own (a worker:
// `check` run again with --property), because RapidCheck keeps its generation context in
// statics and so runs one property at a time per process.
struct PropertyCase {
  int index = 0;
  std::string name;
  Json to_json() const { return {{"property", name}}; }
};

struct PropertyRun : CaseRun<PropertyCase> {
  CheckResult result;
};

// A backend as the subject, working in a folder; the options every worker builds it from.
struct BackendSetup {
  BackendSubjectOptions options;
  std::string command;
  bool serve = false;
  double timeout = 60;

  // `gate`, when given, receives the subject's process-failure gate.
  Subject subject_in(const fs::path& folder, std::shared_ptr<ProcessFailureGate>* gate = nullptr) const {
    // The backend lives as long as the subject's runners: shared by them.
    std::shared_ptr<Backend> backend;
    if (serve) backend = std::make_shared<ServeBackend>(command, timeout);
    else backend = std::make_shared<CommandBackend>(command, timeout);
    BackendSubjectOptions o = options;
    o.work = folder;
    o.keep = folder != options.work;
    Subject s = backend_subject(*backend, o, gate);
    auto runner = s.runner;
    auto split_runner = s.split_runner;
    s.runner = [backend, runner](const ModelSpec& spec, const TensorMap& w) { return runner(spec, w); };
    s.split_runner = [backend, split_runner](const ModelSpec& spec, const TensorMap& w, int64_t tp) {
      return split_runner(spec, w, tp);
    };
    return s;
  }
};

BackendSetup backend_setup(const Args& a, const fs::path& work) {
  BackendSetup b{{}, a.backend, a.serve, a.timeout};
  if (a.spec != "random") b.options.spec = load_spec(a.spec);
  if (!a.weights.empty() && !b.options.spec) throw Error("--weights needs --spec");
  b.options.weights = a.weights;
  b.options.tp = a.tp;
  b.options.tolerance = tolerance_option("bound", a.precision);
  b.options.work = work;
  return b;
}

// The worker's side: checks a.property and writes its result, with the reason its
// backend's later runs were skipped when the process-failure gate stopped them.
void check_one_property(const Args& a) {
  const Property& p = find_property(a.property);
  InterruptScope interrupts;
  const CheckOptions options{a.cases, a.seed, !a.no_shrink, a.reproduce};
  Json out;
  if (a.backend.empty()) {
    out["result"] = check_result_json(check(p, Subject::reference(), options));
  } else {
    const BackendSetup b = backend_setup(a, fs::path(a.result).parent_path());
    std::shared_ptr<ProcessFailureGate> gate;
    out["result"] = check_result_json(check(p, b.subject_in(b.options.work, &gate), options));
    out["stopped"] = gate->stopped();
  }
  write_file_atomic(a.result, json_text(out));
}

// The command that runs the worker for `property`, with every option that shapes its cases.
std::string worker_command(const Args& a, const std::string& property, const fs::path& result) {
  std::vector<std::string> words{fs::read_symlink("/proc/self/exe").string(), "check", "--cases", std::to_string(a.cases),
                                 "--seed", std::to_string(a.seed), "--property", property, "--result", result.string()};
  auto add = [&](std::initializer_list<std::string> more) { words.insert(words.end(), more); };
  if (a.no_shrink) add({"--no-shrink"});
  if (!a.reproduce.empty()) add({"--reproduce", a.reproduce});
  if (!a.backend.empty()) {
    add({"--backend", a.backend, "--spec", a.spec, "--precision", a.precision, "--timeout", fmt::format("{}", a.timeout),
         "--tp", fmt::format("{}", fmt::join(a.tp, ","))});
    if (a.serve) add({"--serve"});
    if (!a.weights.empty()) add({"--weights", a.weights});
  }
  std::string command;
  for (const std::string& w : words) command += (command.empty() ? "" : " ") + shell_quote(w);
  return command;
}

// The parent's side of one case: runs the worker in `work` and reads what it found. A
// worker that fails is cutcheck's own error (the backend runs in processes of its own).
PropertyRun run_worker(const Args& a, const PropertyCase& c, const fs::path& work) {
  fs::create_directories(work);
  const fs::path result = work / "result.json";
  // No time limit of its own: the backend's runs have theirs, and a property's length is its cases'.
  const ProcessResult p = run_process(worker_command(a, c.name, result), 1e7, 16384);
  throw_if_interrupted();  // a worker that ended with cutcheck's own interruption is part of it
  if (!p.ok() || !fs::exists(result)) {
    std::string tail = p.stderr_tail;
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    throw Error(fmt::format("check: the process checking {} {}{}", c.name, p.describe(),
                            tail.empty() ? "" : ": " + tail));
  }
  const Json out = parse_json(read_file(result, 1 << 24), result.string());
  PropertyRun r;
  r.c = c;
  r.result = check_result_from_json(out.at("result"));
  r.verdict = r.result.verdict() == "unsupported" ? Verdict::unsupported
              : r.result.passed                   ? Verdict::passed
                                                  : Verdict::failed;
  r.process_failure = out.value("stopped", "");
  r.seconds = r.result.seconds;
  return r;
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
                     const BackendSetup& backend) {
  fs::remove_all(folder);
  fs::create_directories(folder);
  std::string replayed = "not replayed (no reproduce string)";
  if (!r.reproduce.empty()) {
    const CheckResult again = check(p, backend.subject_in(folder / "runs"), {1, run.seed, false, r.reproduce});
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
  if (!a.property.empty()) return check_one_property(a);
  const bool on_backend = !a.backend.empty();
  // The defaults: only --keep has one, and only a backend's failures are kept there.
  if (on_backend) a.destinations.check();
  std::vector<const Property*> chosen;
  for (const Property& p : catalog())
    if (selected(p.name, a.filter) && (!on_backend || p.backend)) chosen.push_back(&p);
  if (chosen.empty())
    throw Error(fmt::format("--filter '{}' selects no property{}", a.filter, on_backend ? " that applies to a backend" : ""));

  CheckRun run{a.seed, a.cases, a.filter, utc_now(), host_name()};
  InterruptScope interrupts;
  TempFolder root("check");
  std::optional<BackendSetup> backend;
  if (on_backend) {
    backend = backend_setup(a, root.path());
    if (std::none_of(a.tp.begin(), a.tp.end(), [](int64_t tp) { return tp > 1; }))
      std::erase_if(chosen, [](const Property* p) { return p->name.starts_with("tp."); });
    run.backend = a.backend + (a.serve ? " --serve" : "");
    std::string prefix = fmt::format("cutcheck check --backend '{}'{} --precision {} --seed {} --tp {}", a.backend,
                                     a.serve ? " --serve" : "", a.precision, a.seed, fmt::join(a.tp, ","));
    if (a.timeout != Args{}.timeout) prefix += fmt::format(" --timeout {}", a.timeout);
    if (backend->options.spec)
      prefix += fmt::format(" --spec '{}'", fs::exists(a.spec) ? fs::absolute(a.spec).string() : a.spec);
    if (!a.weights.empty()) prefix += fmt::format(" --weights '{}'", fs::absolute(a.weights).string());
    run.replay_prefix = prefix;
    run.reproducers = fs::absolute(a.keep).string();
    backend->subject_in(root.path());  // refuses a spec no --tp splits, or unreadable weights, before any property runs
  } else {
    for (const auto& [set, option] : std::initializer_list<std::pair<bool, const char*>>{
             {a.serve, "--serve"}, {a.spec != "random", "--spec"}, {!a.weights.empty(), "--weights"},
             {a.precision != "f32", "--precision"}, {a.tp != std::vector<int64_t>{2}, "--tp"}})
      if (set) throw Error(fmt::format("{} goes with --backend: the reference's properties take none", option));
  }

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
  // A property's line and report entry, in the catalog's order whatever the order they finish in.
  auto report = [&](CheckResult r) {
    const std::string verdict = on_backend ? r.verdict() : r.passed ? "ok" : "FAIL";
    fmt::print("{:<{}} {:>6}  {:<16} {:>8.2f}  {}\n", r.property, width, r.cases, verdict, r.seconds, figure(r));
    std::fflush(stdout);
    total += r.cases;
    seconds += r.seconds;
    run.results.push_back(std::move(r));
    write();
  };

  auto plan = CampaignPlan<PropertyCase, PropertyRun>::given([&](int i) { return PropertyCase{i, chosen[size_t(i)]->name}; });
  plan.seed = a.seed;
  for (size_t i = 0; i < chosen.size(); ++i) plan.cases.push_back(int(i));
  plan.jobs = a.jobs > 0 ? a.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  plan.run = [&](const PropertyCase& c, const fs::path& work) { return run_worker(a, c, work); };
  // The stop rule: the first property's own runs decide. When its backend's first runs all
  // failed the same way (its worker's gate), every other property would only repeat that.
  plan.same_failure_limit = 1;
  plan.stop_rule = [](const std::vector<PropertyRun>& first) { return first.front().process_failure; };
  plan.group = [](const PropertyRun& r) { return r.c.name; };
  // Failures the process-failure gate cut short get no reproducer: replaying would only repeat the failure.
  plan.keep = [&](CampaignFailure<PropertyRun>& f, const fs::path&, bool) {
    const CheckResult& r = f.original.result;
    if (!on_backend || skipped_by_failure_gate(r.failure)) return;
    f.reproducer = fs::path(run.reproducers) / r.property;
    try {
      keep_reproducer(f.reproducer, find_property(r.property), r, run, *backend);
    } catch (const fs::filesystem_error& e) {  // the user's --keep, not a bug: exit 2
      throw IoError(fmt::format("--keep: cannot write the reproducer of {} to '{}': {}", r.property,
                                f.reproducer.string(), e.code().message()));
    }
  };
  CampaignRecord<PropertyRun> record;
  plan.on_case = [&] {
    while (run.results.size() < record.results.size() && record.results[run.results.size()].index == int(run.results.size()))
      report(record.results[run.results.size()].result);
  };
  run_campaign(plan, root.path(), record);
  if (record.interrupted) {  // the report keeps the properties checked so far ("finished": false)
    write();
    throw Interrupted{record.interrupted};
  }
  // After a stop, the properties not run fail with its reason, as their runs would have.
  for (size_t i = run.results.size(); !record.stopped.empty() && i < chosen.size(); ++i) {
    CheckResult skipped;
    skipped.property = chosen[i]->name;
    skipped.failure = record.stopped;
    skipped.backend = true;
    report(std::move(skipped));
  }

  std::vector<const CheckResult*> failures, skipped;
  for (const CheckResult& r : run.results)
    if (!r.passed) (skipped_by_failure_gate(r.failure) ? skipped : failures).push_back(&r);
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
  // A worker's options (the campaign runs each property so): not for users.
  cmd->add_option("--property", args->property)->group("");
  cmd->add_option("--result", args->result)->group("");
  cmd->callback([args] { run_checks(*args); });
}

}  // namespace cutcheck::cli
