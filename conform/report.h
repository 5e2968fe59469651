// Reporting a conformance campaign: a table for the terminal, JUnit XML for CI readers,
// and JSON for everything else.
#pragma once

#include <string>

#include "conform/campaign.h"

namespace cutcheck {

std::string summary_table(const ConformReport& report);  // per cut kind, then each failure
std::string junit_xml(const ConformReport& report);      // one testcase per case
Json report_json(const ConformReport& report);
Json tolerance_json(const Tolerance& tolerance);  // the policy and its figures

std::string verdict_name(Verdict v);  // "passed", "failed", "unsupported"

}  // namespace cutcheck
