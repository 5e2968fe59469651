#include "tools/check_report.h"

#include <fmt/format.h>

#include "conform/report.h"
#include "core/version.h"

namespace cutcheck::cli {

Json check_report_json(const CheckRun& run) {
  Json properties = Json::array();
  double seconds = 0;
  int failed = 0;
  for (const CheckResult& r : run.results) {
    properties.push_back({{"name", r.property},
                          {"cases", r.cases},
                          {"passed", r.passed},
                          {"seconds", r.seconds},
                          {"failure", r.failure},
                          {"counterexample", r.counterexample},
                          {"reproduce", r.reproduce},
                          {"command", r.reproduce.empty() ? ""
                                                          : fmt::format("cutcheck check --filter {} --reproduce '{}'",
                                                                        r.property, r.reproduce)}});
    seconds += r.seconds;
    failed += !r.passed;
  }
  return {{"format", "cutcheck-check-1"},
          {"cutcheck", {{"version", version()}, {"commit", version_commit()}}},
          {"seed", run.seed},
          {"cases", run.cases},
          {"filter", run.filter},
          {"run", {{"started", run.started}, {"host", run.host}, {"seconds", seconds}}},
          {"finished", run.finished},
          {"passed", run.finished && failed == 0},
          {"counts", {{"properties", run.results.size()}, {"failed", failed}}},
          {"properties", properties}};
}

std::string check_junit_xml(const Json& report) {
  const Json& run = report.at("run");
  std::string timestamp = run.at("started");
  if (!timestamp.empty() && timestamp.back() == 'Z') timestamp.pop_back();
  const Json& props = report.at("properties");
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"cutcheck check\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{:.3f}\">\n",
                     props.size(), report.at("counts").at("failed").get<int>(), run.at("seconds").get<double>());
  out += fmt::format(
      "  <testsuite name=\"properties\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"{:.3f}\" "
      "timestamp=\"{}\" hostname=\"{}\">\n",
      props.size(), report.at("counts").at("failed").get<int>(), run.at("seconds").get<double>(), xml_escape(timestamp),
      xml_escape(run.at("host")));
  out += "    <properties>\n";
  auto property = [&](const std::string& name, const std::string& value) {
    out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(name), xml_escape(value));
  };
  property("cutcheck.version", report.at("cutcheck").at("version"));
  property("cutcheck.commit", report.at("cutcheck").at("commit"));
  property("seed", std::to_string(report.at("seed").get<uint64_t>()));
  property("cases", std::to_string(report.at("cases").get<int>()));
  property("filter", report.at("filter"));
  out += "    </properties>\n";
  for (const Json& p : props) {
    const std::string name = p.at("name");
    const size_t dot = name.find('.');
    out += fmt::format("    <testcase classname=\"check.{}\" name=\"{}\" time=\"{:.3f}\"",
                       xml_escape(dot == std::string::npos ? name : name.substr(0, dot)), xml_escape(name),
                       p.at("seconds").get<double>());
    if (p.at("passed").get<bool>()) {
      out += "/>\n";
      continue;
    }
    std::string body = fmt::format("{} passing cases, then:\n{}\n", p.at("cases").get<int>(), p.at("failure").get<std::string>());
    if (!p.at("counterexample").get<std::string>().empty()) body += "counterexample: " + p.at("counterexample").get<std::string>();
    if (!p.at("command").get<std::string>().empty()) body += "\nreproduce: " + p.at("command").get<std::string>() + "\n";
    out += fmt::format(">\n      <failure type=\"property\" message=\"{}\">{}</failure>\n    </testcase>\n",
                       xml_escape(p.at("failure")), xml_escape(body));
  }
  return out + "  </testsuite>\n</testsuites>\n";
}

}  // namespace cutcheck::cli
