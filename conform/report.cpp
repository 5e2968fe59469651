#include "conform/report.h"

#include <fmt/format.h>

#include "core/text.h"

#include <cctype>
#include <map>

namespace cutcheck {
namespace {

struct KindSummary {
  int cases = 0, passed = 0, failed = 0, unsupported = 0;
  double max_abs = 0, max_rel = 0, nmse = 0, headroom = 0;
  double seconds = 0;
};

std::map<std::string, KindSummary> by_kind(const ConformReport& report) {
  std::map<std::string, KindSummary> out;
  for (const CaseResult& r : report.results) {
    KindSummary& k = out[cut_kind_name(r.c.cut.kind)];
    ++k.cases;
    k.seconds += r.seconds;
    (r.verdict == Verdict::passed ? k.passed : r.verdict == Verdict::failed ? k.failed : k.unsupported)++;
    for (const OutputError& e : r.errors) {
      k.max_abs = std::max(k.max_abs, e.max_abs);
      k.max_rel = std::max(k.max_rel, e.max_rel);
      k.nmse = std::max(k.nmse, e.nmse);
      k.headroom = std::max(k.headroom, e.headroom);
    }
  }
  return out;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += '?';
        else out += c;
    }
  }
  return out;
}

std::string errors_text(const CaseResult& r) {
  std::string out;
  for (const OutputError& e : r.errors)
    out += fmt::format("{}: max abs {:.3g}, max rel {:.3g}, nmse {:.3g}\n", e.name, e.max_abs, e.max_rel, e.nmse);
  return out;
}

}  // namespace

std::string verdict_name(Verdict v) {
  return v == Verdict::passed ? "passed" : v == Verdict::failed ? "failed" : "unsupported";
}

std::string summary_table(const ConformReport& report) {
  // headroom: the worst |got - want| / allowed of the cut's elements; 1 is the limit.
  std::string out = fmt::format("{:<15} {:>6} {:>7} {:>7} {:>12} {:>10} {:>10} {:>10} {:>10}\n", "cut", "cases", "passed",
                                "failed", "unsupported", "worst abs", "worst rel", "worst nmse", "headroom");
  for (const auto& [kind, k] : by_kind(report))
    out += fmt::format("{:<15} {:>6} {:>7} {:>7} {:>12} {:>10.3g} {:>10.3g} {:>10.3g} {:>10.3g}\n", kind, k.cases,
                       k.passed, k.failed, k.unsupported, k.max_abs, k.max_rel, k.nmse, k.headroom);
  out += fmt::format("{} cases: {} passed, {} failed, {} unsupported, in {:.1f} s; tolerance {}\n", report.results.size(),
                     report.count(Verdict::passed), report.count(Verdict::failed), report.count(Verdict::unsupported),
                     report.seconds, report.options.tolerance.str());
  for (const Failure& f : report.failures) {
    out += fmt::format("\nFAILED case {}: {}\n  {}\n", f.index, f.original.c.str(), f.original.failure);
    if (f.shrink_runs > 0)
      out += fmt::format("  shrunk ({} runs) to: {}\n  {}\n", f.shrink_runs, f.shrunk.c.str(), f.shrunk.failure);
    else
      out += "  not shrunk\n";
    if (!f.piece.empty()) out += fmt::format("  first failing piece: {}\n", f.piece);
    if (!f.value.empty()) out += fmt::format("  first failing value: {}\n", f.value);
    std::string tail = f.shrunk.stderr_tail;
    while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back()))) tail.pop_back();
    if (!tail.empty()) {
      if (tail.size() > 600) tail = "..." + utf8_tail(tail, 600);
      out += fmt::format("  backend stderr (tail):\n{}\n", tail);
    }
    out += fmt::format("  reproducer: {}\n  re-run: {}\n", f.reproducer.string(), f.command);
  }
  if (!report.stopped.empty()) out += fmt::format("\nSTOPPED: {}\n", report.stopped);
  if (report.interrupted)
    out += fmt::format("\nINTERRUPTED by signal {}: {} of {} cases finished\n", report.interrupted, report.results.size(),
                       report.options.cases);
  if (report.count(Verdict::passed) == 0) out += "\nno case passed: a run that checks nothing does not pass\n";
  return out;
}

std::string junit_xml(const ConformReport& report) {
  std::map<std::string, std::vector<const CaseResult*>> kinds;
  for (const CaseResult& r : report.results) kinds[cut_kind_name(r.c.cut.kind)].push_back(&r);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"cutcheck conform\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
                     report.results.size(), report.count(Verdict::failed), report.count(Verdict::unsupported),
                     report.seconds);
  for (const auto& [kind, cases] : kinds) {
    int failed = 0, skipped = 0;
    double time = 0;
    for (const CaseResult* r : cases) {
      failed += r->verdict == Verdict::failed;
      skipped += r->verdict == Verdict::unsupported;
      time += r->seconds;
    }
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3f}\">\n",
                       kind, cases.size(), failed, skipped, time);
    for (const CaseResult* r : cases) {
      size_t index = size_t(r - report.results.data());
      out += fmt::format("    <testcase classname=\"conform.{}\" name=\"{}\" time=\"{:.3f}\"", kind,
                         xml_escape(fmt::format("case {}: {}", index, r->c.str())), r->seconds);
      if (r->verdict == Verdict::passed) {
        out += "/>\n";
        continue;
      }
      out += ">\n";
      if (r->verdict == Verdict::unsupported) {
        out += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(r->failure));
      } else {
        std::string body = errors_text(*r);
        for (const Failure& f : report.failures)
          if (size_t(f.index) == index)
            body += fmt::format("shrunk to: {}\n{}\nfirst failing piece: {}\nfirst failing value: {}\nre-run: {}\n",
                                f.shrunk.c.str(), f.shrunk.failure, f.piece, f.value, f.command);
        if (!r->stderr_tail.empty()) body += "backend stderr (tail):\n" + r->stderr_tail;
        out += fmt::format("      <failure type=\"mismatch\" message=\"{}\">{}</failure>\n", xml_escape(r->failure),
                           xml_escape(body));
      }
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  return out + "</testsuites>\n";
}

Json tolerance_json(const Tolerance& t) {
  if (t.bounded())
    return {{"policy", "bound"}, {"precision", precision_info(t.precision).name}, {"k", t.k}, {"floor", t.floor}};
  return {{"policy", "fixed"}, {"atol", t.atol}, {"rtol", t.rtol}, {"nmse", t.nmse}};
}

Json report_json(const ConformReport& report) {
  Json summary = Json::array();
  for (const auto& [kind, k] : by_kind(report))
    summary.push_back({{"cut", kind}, {"cases", k.cases}, {"passed", k.passed}, {"failed", k.failed},
                       {"unsupported", k.unsupported}, {"worst_abs", k.max_abs}, {"worst_rel", k.max_rel},
                       {"worst_nmse", k.nmse}, {"headroom", k.headroom}, {"seconds", k.seconds}});
  Json cases = Json::array();
  for (const CaseResult& r : report.results) {
    Json errors = Json::array();
    for (const OutputError& e : r.errors)
      errors.push_back({{"output", e.name}, {"max_abs", e.max_abs}, {"max_rel", e.max_rel}, {"nmse", e.nmse},
                        {"headroom", e.headroom}, {"unbounded", e.unbounded}, {"mismatches", e.mismatches}});
    // ctx and rows beside the cut text, for histograms of where a campaign went.
    cases.push_back({{"case", r.c.to_json()}, {"ctx", r.c.cut.ctx}, {"rows", r.c.cut.row_count()},
                     {"verdict", verdict_name(r.verdict)}, {"failure", r.failure},
                     {"errors", errors}, {"seconds", r.seconds}});
  }
  Json failures = Json::array();
  for (const Failure& f : report.failures)
    failures.push_back({{"index", f.index}, {"failure", f.original.failure}, {"shrunk", f.shrunk.c.to_json()},
                        {"shrunk_failure", f.shrunk.failure}, {"shrink_runs", f.shrink_runs}, {"piece", f.piece}, {"value", f.value},
                        {"reproducer", f.reproducer.string()}, {"command", f.command},
                        {"stderr_tail", f.shrunk.stderr_tail}});
  return {{"format", "cutcheck-conform-1"},
          {"backend", report.backend},
          {"passed", report.passed()},
          {"seed", report.options.seed},
          {"tolerance", tolerance_json(report.options.tolerance)},
          {"counts",
           {{"cases", report.results.size()},
            {"passed", report.count(Verdict::passed)},
            {"failed", report.count(Verdict::failed)},
            {"unsupported", report.count(Verdict::unsupported)}}},
          {"seconds", report.seconds},
          {"stopped", report.stopped},
          {"interrupted", report.interrupted},
          {"summary", summary},
          {"failures", failures},
          {"cases", cases}};
}

}  // namespace cutcheck
