#include "tools/check_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/text.h"
#include "core/version.h"

namespace cutcheck::cli {

Json check_result_json(const CheckResult& r) {
  Json out = {{"name", r.property},
              {"cases", r.cases},
              {"passed", r.passed},
              {"verdict", r.verdict()},
              {"seconds", r.seconds},
              {"failure", r.failure},
              {"counterexample", r.counterexample},
              {"reproduce", r.reproduce}};
  if (r.backend) {
    out["tolerant_comparisons"] = r.tolerant;
    out["headroom"] = r.headroom;
    out["worst"] = r.worst;
    out["unsupported_cases"] = r.unsupported;
    out["refusal"] = r.refusal;
  }
  return out;
}

CheckResult check_result_from_json(const Json& json) {
  CheckResult r;
  r.property = json.at("name");
  r.cases = json.at("cases");
  r.passed = json.at("passed");
  r.seconds = json.at("seconds");
  r.failure = json.at("failure");
  r.counterexample = json.at("counterexample");
  r.reproduce = json.at("reproduce");
  r.backend = json.contains("headroom");
  if (r.backend) {
    r.tolerant = json.at("tolerant_comparisons");
    r.headroom = json.at("headroom");
    r.worst = json.at("worst");
    r.unsupported = json.at("unsupported_cases");
    r.refusal = json.at("refusal");
  }
  return r;
}

std::string replay_command(const CheckRun& run, const CheckResult& r) {
  return r.reproduce.empty() ? "" : fmt::format("{} --filter {} --reproduce '{}'", run.replay_prefix, r.property, r.reproduce);
}

Json check_report_json(const CheckRun& run) {
  Json properties = Json::array();
  double seconds = 0;
  int failed = 0;
  for (const CheckResult& r : run.results) {
    Json p = check_result_json(r);
    p["command"] = replay_command(run, r);
    if (!r.passed && !run.reproducers.empty()) p["reproducer"] = (fs::path(run.reproducers) / r.property).string();
    properties.push_back(std::move(p));
    seconds += r.seconds;
    failed += !r.passed;
  }
  Json out = {{"format", "cutcheck-check-1"},
          {"cutcheck", {{"version", version()}, {"commit", version_commit()}}},
          {"seed", run.seed},
          {"cases", run.cases},
          {"filter", run.filter},
          {"run", {{"started", run.started}, {"host", run.host}, {"seconds", seconds}}},
          {"finished", run.finished},
          {"passed", run.finished && failed == 0},
          {"counts", {{"properties", run.results.size()}, {"failed", failed}}},
          {"properties", properties}};
  if (!run.backend.empty()) out["backend"] = run.backend;
  return out;
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
      "  <testsuite name=\"properties\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3f}\" "
      "timestamp=\"{}\" hostname=\"{}\">\n",
      props.size(), report.at("counts").at("failed").get<int>(),
      std::count_if(props.begin(), props.end(), [](const Json& p) { return p.value("verdict", "") == "unsupported"; }),
      run.at("seconds").get<double>(), xml_escape(timestamp),
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
    if (p.at("verdict") == "unsupported") {
      out += fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                         xml_escape("unsupported: " + p.at("refusal").get<std::string>()));
      continue;
    }
    if (p.at("verdict") == "within tolerance") {  // a pass, with the figure that says how close
      out += fmt::format(">\n      <system-out>{}</system-out>\n    </testcase>\n",
                         xml_escape(fmt::format("within tolerance: worst headroom {:.3g}: {}", p.at("headroom").get<double>(),
                                                p.at("worst").get<std::string>())));
      continue;
    }
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
