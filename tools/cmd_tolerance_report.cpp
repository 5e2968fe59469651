#include <fmt/format.h>

#include "campaign/tolerance_report.h"
#include "core/error.h"
#include "core/files.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {

void add_tolerance_report(CLI::App& app) {
  struct Args {
    std::string spec = "random", weights, json, shard = "1/1";
    std::vector<std::string> precisions{"f32", "bf16", "f16"}, faults;
    std::vector<int64_t> tp{1, 2, 4};
    int cases = 200, layer_cases = 40, fault_cases = 1 << 30;
    uint64_t seed = 1;
    Destinations destinations;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "tolerance-report",
      "judge the tolerances as classifiers: false failures of correct variants, detections of the fault catalog, the "
      "smallest perturbation each policy catches (docs/numerics.md)");
  add_number(cmd, "--cases", a->cases, "cases to generate", case_counts)->capture_default_str();
  add_number(cmd, "--seed", a->seed, "the seed: the same seed generates the same cases", seeds)->capture_default_str();
  add_number(cmd, "--tp", a->tp, "tp widths to generate", tp_widths)->capture_default_str();
  cmd->add_option("--spec", a->spec, "a spec name or file, or 'random' for random specs")->capture_default_str();
  cmd->add_option("--weights", a->weights, "with --spec: a weights folder to use instead of seeded weights");
  cmd->add_option("--precision", a->precisions, "precisions whose policies are judged: f32, bf16, f16")->capture_default_str();
  add_number(cmd, "--layer-cases", a->layer_cases, "cases whose layer-0 perturbation threshold is measured",
             {0, 100000000})
      ->capture_default_str();
  add_number(cmd, "--fault-cases", a->fault_cases, "run the fault catalog on the first N cases only (default: all)",
             {0, 1 << 30});
  cmd->add_option("--fault", a->faults, "run only these faults of the catalog (default: all; `cutcheck run --help` lists them)");
  cmd->add_option("--shard", a->shard,
                  "I/N: judge only the cases whose index is I-1 modulo N (cases are numbered from 0, so "
                  "--shard 1682/5000 judges case 1681 alone); shards of one seed cover its cases once")
      ->capture_default_str();
  a->destinations.add(cmd, "--json", a->json, "write the figures as JSON here", Destinations::Kind::file);
  cmd->callback([a] {
    ToleranceReportOptions o;
    o.campaign.cases = a->cases;
    o.campaign.seed = a->seed;
    o.campaign.shard = Shard::parse(a->shard);
    o.campaign.tp = a->tp;
    if (a->spec != "random") o.campaign.spec = load_spec(a->spec);
    if (!a->weights.empty() && !o.campaign.spec) throw Error("--weights needs --spec");
    o.campaign.weights = a->weights;
    o.precisions.clear();
    for (const std::string& p : a->precisions) o.precisions.push_back(parse_precision(p));
    o.layer_cases = a->layer_cases;
    o.fault_cases = a->fault_cases;
    o.faults = a->faults;
    o.progress = [](int done, int total) {
      if (done % std::max(1, total / 10) == 0 || done == total) fmt::print(stderr, "[{}/{}]\n", done, total);
    };
    const ToleranceReport r = tolerance_report(o);
    fmt::print("{}", tolerance_report_text(r));
    if (!a->json.empty()) write_file_atomic(a->json, tolerance_report_json(r).dump(2) + "\n");
  });
}

}  // namespace cutcheck::cli
