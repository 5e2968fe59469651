#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"
#include "report/merge.h"
#include "report/report.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace cutcheck::cli {

void add_merge_reports(CLI::App& app) {
  struct Args {
    std::vector<std::string> inputs;
    std::string json, junit, html;
    Destinations destinations;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "merge-reports", "merge the JSON reports of conform --shard 1/N ... N/N into the report of the whole campaign");
  cmd->add_option("reports", a->inputs, "the shards' conform --json reports, one per shard")->required();
  a->destinations.add(cmd, "--json", a->json, "write the merged JSON report here", Destinations::Kind::file);
  a->destinations.add(cmd, "--junit", a->junit, "write the merged JUnit XML report here", Destinations::Kind::file);
  a->destinations.add(cmd, "--html", a->html, "write the merged HTML report here", Destinations::Kind::file);
  cmd->callback([a] {
    std::vector<ShardReport> shards;
    for (const std::string& file : a->inputs) shards.push_back({parse_json(read_file(file, max_bytes::shard_report), file), file});
    const Json merged = merge_reports(shards);
    fmt::print("{}", summary_table(merged));
    write_reports(merged, a->json, a->junit, a->html);
    if (merged.at("interrupted").get<int>() || !merged.at("finished").get<bool>())
      throw CheckFailed("a shard did not finish (interrupted or killed): the merged report is partial");
    if (!merged.at("stopped").get<std::string>().empty()) throw CheckFailed(merged.at("stopped").get<std::string>());
    if (!merged.at("passed").get<bool>()) throw CheckFailed("conformance failed");
  });
}

}  // namespace cutcheck::cli
