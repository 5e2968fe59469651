// The reports of `cutcheck check`: JSON (format cutcheck-check-1) and JUnit XML, one
// testcase per property. The JSON is rewritten after each property, so an interrupted
// run leaves a valid report of the properties checked so far.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "properties/check.h"

namespace cutcheck::cli {

struct CheckRun {
  uint64_t seed = 0;
  int cases = 0;            // per property
  std::string filter;
  std::string started, host;
  std::vector<CheckResult> results = {};  // in the order run
  bool finished = false;
  std::string backend = {};  // the subject when not the reference (check --backend)
  // How to re-run a property's failure: this, then --filter NAME --reproduce '...'.
  std::string replay_prefix = "cutcheck check";
  std::string reproducers = {};  // check --backend: the folder its failures' reproducers are kept in
};

// One property's result, and back (check's workers pass results to the campaign so).
Json check_result_json(const CheckResult& r);
CheckResult check_result_from_json(const Json& json);
// The command that replays a failure, or "" when it has no reproduce string.
std::string replay_command(const CheckRun& run, const CheckResult& r);

Json check_report_json(const CheckRun& run);
std::string check_junit_xml(const Json& report);

}  // namespace cutcheck::cli
