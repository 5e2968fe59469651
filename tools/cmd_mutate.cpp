#include <fmt/format.h>
#include <unistd.h>

#include "core/files.h"
#include "core/interrupt.h"
#include "mutate/score.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {

void add_mutate(CLI::App& app) {
  struct Args {
    size_t per_kind = 48;
    MutateOptions options;
    std::string json, filter;
    bool list = false;
    Destinations destinations;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("mutate",
                                 "measure the harness: type-preserving mutants of the authored programs, each put through "
                                 "a short conformance campaign and the property catalog (docs/conformance.md)");
  add_number(cmd, "--per-kind", a->per_kind, "mutants drawn per cut kind (14 kinds)", {1, 1 << 20})->capture_default_str();
  add_number(cmd, "--conform-cases", a->options.conform_cases, "conformance cases per mutant", case_counts)
      ->capture_default_str();
  add_number(cmd, "--property-cases", a->options.property_cases, "cases per property, for mutants conformance missed",
             case_counts)
      ->capture_default_str();
  add_number(cmd, "--seed", a->options.seed, "which mutants are drawn, and the cases", seeds)->capture_default_str();
  cmd->add_option("--only", a->filter, "only the mutants whose description contains this text");
  cmd->add_flag("--list", a->list, "list the drawn mutants and stop");
  a->destinations.add(cmd, "--json", a->json, "write a JSON report here", Destinations::Kind::file);
  cmd->callback([a] {
    const std::vector<Mutant> population = all_mutants(builtin_spec("tiny"), all_cut_kinds());
    std::vector<Mutant> drawn;
    for (Mutant& m : sample_mutants(population, a->per_kind, a->options.seed))
      if (m.str().find(a->filter) != std::string::npos) drawn.push_back(std::move(m));
    if (drawn.empty()) throw Error(fmt::format("--only '{}' matches no mutant", a->filter));
    if (a->list) {
      for (const Mutant& m : drawn) fmt::print("{}\n", m.str());
      fmt::print("{} mutants drawn of {}\n", drawn.size(), population.size());
      return;
    }
    const bool tty = isatty(2);
    a->options.progress = [tty](size_t done, size_t total) {
      if (tty) fmt::print(stderr, "\r[{}/{}]", done, total);
      else if (done % std::max<size_t>(1, total / 20) == 0 || done == total) fmt::print(stderr, "[{}/{}]\n", done, total);
      if (tty && done == total) fmt::print(stderr, "\n");
    };
    InterruptScope interrupts;  // SIGINT, SIGTERM: stop after the mutant at hand, remove the scratch folder, 128 + signal
    MutationReport report = run_mutants(drawn, a->options);
    report.population = population.size();
    fmt::print("{}", report.table());
    if (!a->json.empty()) write_file_atomic(a->json, report.json().dump(2) + "\n");
    if (report.count(MutantVerdict::survived) > 0) throw CheckFailed("mutants survived that change the outputs");
  });
}

}  // namespace cutcheck::cli
