#include <fmt/format.h>
#include <fnmatch.h>

#include "core/error.h"
#include "properties/check.h"
#include "conform/report.h"
#include "core/files.h"
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

}  // namespace

void add_check(CLI::App& app) {
  struct Args {
    int cases = 100;
    uint64_t seed = 1;
    std::string filter, reproduce, junit, json;
    bool no_shrink = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("check", "run the property catalog on the reference interpreter");
  cmd->add_option("--cases", args->cases, "cases per property")->capture_default_str();
  cmd->add_option("--seed", args->seed, "RapidCheck's seed (the same seed checks the same cases)")->capture_default_str()->check(seed_number);
  cmd->add_option("--filter", args->filter, "properties to run: names, prefixes or globs, comma-separated");
  cmd->add_option("--reproduce", args->reproduce, "replay a failure: the reproduce string a failed check printed");
  cmd->add_flag("--no-shrink", args->no_shrink, "report the first failing case without shrinking it");
  cmd->add_option("--junit", args->junit, "write a JUnit XML report here (a testcase per property)");
  cmd->add_option("--json", args->json, "write a JSON report here, rewritten after each property");
  cmd->callback([args] {
    if (args->cases < 1) throw Error("--cases must be at least 1");
    check_report_path("--json", args->json);
    check_report_path("--junit", args->junit);
    std::vector<const Property*> chosen;
    for (const Property& p : catalog())
      if (selected(p.name, args->filter)) chosen.push_back(&p);
    if (chosen.empty()) throw Error(fmt::format("--filter '{}' selects no property", args->filter));

    CheckOptions options{args->cases, args->seed, !args->no_shrink, args->reproduce};
    Subject subject = Subject::reference();
    std::vector<CheckResult> failures;
    int total = 0;
    double seconds = 0;
    CheckRun run{args->seed, args->cases, args->filter, utc_now(), host_name()};
    auto write = [&] {
      const Json report = check_report_json(run);
      if (!args->json.empty()) write_file_atomic(args->json, json_text(report));
      if (!args->junit.empty() && run.finished) write_file_atomic(args->junit, check_junit_xml(report));
    };
    fmt::print("{:<26} {:>6}  {:<6} {:>8}\n", "property", "cases", "result", "seconds");
    for (const Property* p : chosen) {
      CheckResult r = check(*p, subject, options);
      run.results.push_back(r);
      write();
      fmt::print("{:<26} {:>6}  {:<6} {:>8.2f}\n", r.property, r.cases, r.passed ? "ok" : "FAIL", r.seconds);
      std::fflush(stdout);
      total += r.cases;
      seconds += r.seconds;
      if (!r.passed) failures.push_back(std::move(r));
    }
    run.finished = true;
    write();
    fmt::print("{} properties, {} cases in {:.2f} s ({:.0f} cases/s), seed {}\n", chosen.size(), total, seconds,
               seconds > 0 ? total / seconds : 0.0, args->seed);
    for (const CheckResult& r : failures) {
      fmt::print("\n{} failed after {} passing cases:\n  {}\n", r.property, r.cases, r.failure);
      if (!r.counterexample.empty()) fmt::print("  counterexample: {}", r.counterexample);
      if (!r.reproduce.empty())
        fmt::print("  reproduce: cutcheck check --filter {} --reproduce '{}'\n", r.property, r.reproduce);
    }
    if (!failures.empty()) throw CheckFailed(fmt::format("{} of {} properties failed", failures.size(), chosen.size()));
  });
}

}  // namespace cutcheck::cli
