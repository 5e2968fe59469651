// Reporting a conformance campaign. The JSON document (format cutcheck-conform-2,
// docs/conformance.md) is the report: the terminal table, JUnit XML and the HTML page are
// all made from it, so a report merged from shards (merge_reports) renders exactly as
// the report of one run would.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "campaign/campaign.h"
#include "campaign/record_json.h"  // a verdict's name, an output's figures: what each case of a report carries
#include "core/json.h"
#include "core/provenance.h"
#include "core/text.h"

namespace cutcheck {

Json report_json(const ConformReport& report);
Json tolerance_json(const Tolerance& tolerance);  // the policy and its figures
// The report's tolerance in words: "bound f32 (16 runs at 4x, spread 3)", "fixed atol=... rtol=... nmse=...".
std::string tolerance_text(const Json& report);

std::string summary_table(const Json& report);  // per cut kind, then each failure
std::string junit_xml(const Json& report);      // one testsuite per cut kind, one testcase per case
std::string html_report(const Json& report);    // one self-contained page (report/html_report.cpp)

std::string summary_table(const ConformReport& report);
std::string junit_xml(const ConformReport& report);

// Sets what follows from the cases and failures: counts, the per-kind summary, and passed
// (no case failed, one passed, and the run finished).
void complete_report(Json& report);

// A JSON report file kept up to date while a campaign runs: rewritten whole, atomically,
// after each finished case, so that a run killed at any point leaves a valid report of
// the cases finished so far ("finished": false). Writing is skipped while the last write
// took more than a twentieth of the time since it (a long campaign of quick cases), so
// that writing never costs more than about 5% of a run.
class LiveJsonReport {
 public:
  explicit LiveJsonReport(fs::path path) : path_(std::move(path)) {}
  void update(const ConformReport& so_far);
  void write(const Json& report);  // now, whatever the time

 private:
  using Clock = std::chrono::steady_clock;
  fs::path path_;
  Clock::time_point last_{};
  double last_seconds_ = 0;
};

// Writes the report to each path not empty: JSON, JUnit XML, HTML (each atomically).
void write_reports(const Json& report, const std::string& json, const std::string& junit, const std::string& html);

}  // namespace cutcheck
