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
};

Json check_report_json(const CheckRun& run);
std::string check_junit_xml(const Json& report);

}  // namespace cutcheck::cli
