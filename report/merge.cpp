#include "report/merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "campaign/campaign.h"
#include "core/error.h"
#include "report/report.h"

namespace cutcheck {
namespace {

// "I/N" of a report's run, checked.
std::pair<int, int> shard_of(const ShardReport& s) {
  const std::string text = json_string(json_field(s.report, "run", s.source), "shard", s.source + ": run");
  try {
    Shard shard = Shard::parse(text);
    return {shard.index, shard.count};
  } catch (const Error&) {
    throw FormatError(fmt::format("{}: run.shard '{}' is not I/N", s.source, text));
  }
}

// What must agree between shards of one campaign. The weights path may differ between CI
// machines (the weights' sha256 is in each reproducer); the rest may not.
Json campaign_identity(const Json& report) {
  Json options = report.at("options");
  options.erase("weights");
  return {{"cutcheck", report.at("cutcheck")}, {"backend", report.at("backend")}, {"seed", report.at("seed")},
          {"tolerance", report.at("tolerance")}, {"options", options}};
}

// The campaign's stop rule (same_process_failure) on the merged cases, read back from their JSON.
std::string stop_reason(const Json& cases, int limit, const std::string& backend) {
  std::vector<CaseResult> first;
  for (const Json& c : cases) {
    if (int(first.size()) == limit || c.at("index").get<int>() != int(first.size())) break;
    CaseResult r;
    r.verdict = c.at("verdict") == "failed" ? Verdict::failed : c.at("verdict") == "passed" ? Verdict::passed
                                                                                            : Verdict::unsupported;
    r.process_failure = c.at("fault");
    r.stderr_tail = c.at("stderr_tail");
    first.push_back(r);
  }
  return same_process_failure(first, limit, backend_named(backend));
}

// Refuses a report that is not a whole cutcheck-conform-2 document: each renderer reads it
// once, so that a field missing or of the wrong kind is named with its file here, not met
// half-way through the merge.
void check_readable(const ShardReport& s) {
  const Json& format = json_field(s.report, "format", s.source);
  if (format != "cutcheck-conform-2")
    throw FormatError(
        fmt::format("{}: format {} is not cutcheck-conform-2 (a conform --json report)", s.source, format.dump()));
  try {
    Json copy = s.report;
    complete_report(copy);
    summary_table(copy);
    junit_xml(copy);
    html_report(copy);
    for (const Json& c : copy.at("cases")) c.at("index").get<int>();
    for (const char* key : {"planned", "interrupted"}) copy.at(key).get<int>();
    copy.at("finished").get<bool>();
    copy.at("options").at("same_fault_limit").get<int>();
  } catch (const Json::exception& e) {
    throw FormatError(fmt::format("{}: not a readable conform report: {}", s.source, e.what()));
  }
}

Json merge(const std::vector<ShardReport>& shards) {
  const ShardReport& first = shards.front();
  const Json identity = campaign_identity(first.report);
  std::map<int, const ShardReport*> by_index;
  const int count = shard_of(first).second;
  for (const ShardReport& s : shards) {
    if (campaign_identity(s.report) != identity)
      throw Error(fmt::format("{} and {} are not shards of one campaign: their backend, seed, tolerance, options or "
                              "cutcheck version differ",
                              first.source, s.source));
    auto [index, n] = shard_of(s);
    if (n != count)
      throw Error(fmt::format("{} is shard {}/{}, {} is of {} shards", s.source, index, n, first.source, count));
    if (!by_index.emplace(index, &s).second)
      throw Error(fmt::format("shard {}/{} is given twice: {} and {}", index, n, by_index[index]->source, s.source));
  }
  for (int i = 1; i <= count; ++i)
    if (!by_index.count(i)) throw Error(fmt::format("shard {}/{} is missing: merging needs all {} shards", i, count, count));

  Json merged = first.report;
  Json cases = Json::array(), failures = Json::array(), runs = Json::array();
  std::set<int> seen;
  int planned = 0, interrupted = 0;
  bool finished = true;
  std::string started = first.report.at("run").at("started"), stopped;
  double seconds = 0;
  std::set<std::string> hosts;
  std::map<std::string, Json> first_failure;  // by cut kind: the earliest case
  for (const auto& [index, s] : by_index) {
    const Json& r = s->report;
    for (const Json& c : r.at("cases")) {
      if (!seen.insert(c.at("index").get<int>()).second)
        throw Error(fmt::format("{}: case {} is in another shard as well", s->source, c.at("index").get<int>()));
      cases.push_back(c);
    }
    for (const Json& f : r.at("failures")) {
      Json& kept = first_failure[f.at("kind").get<std::string>()];
      if (kept.is_null() || f.at("index").get<int>() < kept.at("index").get<int>()) kept = f;
    }
    planned += r.at("planned").get<int>();
    finished = finished && r.at("finished").get<bool>();
    if (!interrupted) interrupted = r.at("interrupted").get<int>();
    if (stopped.empty() && !r.at("stopped").get<std::string>().empty())
      stopped = fmt::format("shard {}/{}: {}", index, count, r.at("stopped").get<std::string>());
    const Json& run = r.at("run");
    started = std::min(started, run.at("started").get<std::string>());
    seconds = std::max(seconds, run.at("seconds").get<double>());
    hosts.insert(run.at("host").get<std::string>());
    runs.push_back(run);
  }
  std::sort(cases.begin(), cases.end(),
            [](const Json& a, const Json& b) { return a.at("index").get<int>() < b.at("index").get<int>(); });
  for (auto& [kind, f] : first_failure) failures.push_back(f);
  std::sort(failures.begin(), failures.end(),
            [](const Json& a, const Json& b) { return a.at("index").get<int>() < b.at("index").get<int>(); });

  // The unsharded campaign stops after its first cases when they all failed the same way:
  // so does the merge, keeping only those (each shard stopped on its own first cases).
  const int limit = merged.at("options").at("same_fault_limit").get<int>();
  if (std::string why = stop_reason(cases, limit, merged.at("backend")); !why.empty()) {
    cases.erase(cases.begin() + limit, cases.end());
    Json kept = Json::array();
    for (const Json& f : failures)
      if (f.at("index").get<int>() < limit) kept.push_back(f);
    failures = kept;
    stopped = why;
  }
  merged["cases"] = cases;
  merged["failures"] = failures;
  merged["planned"] = planned;
  merged["finished"] = finished && interrupted == 0;
  merged["interrupted"] = interrupted;
  merged["stopped"] = stopped;
  std::string host_list;
  for (const std::string& h : hosts) host_list += (host_list.empty() ? "" : ", ") + h;
  merged["run"] = {{"started", started}, {"host", host_list}, {"jobs", first.report.at("run").at("jobs")},
                   {"shard", "1/1"}, {"seconds", seconds}, {"merged", runs}};
  complete_report(merged);
  return merged;
}

}  // namespace

Json merge_reports(const std::vector<ShardReport>& shards) {
  if (shards.empty()) throw Error("no reports to merge");
  for (const ShardReport& s : shards) check_readable(s);
  try {
    return merge(shards);
  } catch (const Json::exception& e) {
    throw FormatError(fmt::format("the reports cannot be merged: {}", e.what()));
  }
}

}  // namespace cutcheck
