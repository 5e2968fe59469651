#include "report/report.h"

#include <fmt/format.h>

#include <cctype>
#include <map>

#include "core/files.h"
#include "core/text.h"
#include "core/version.h"

namespace cutcheck {
namespace {

// Of two figures, the worse (larger; "nan" and "inf" worst of all).
Json worse(const Json& a, const Json& b) {
  if (a.is_null()) return b;
  if (a.is_string()) return a;
  if (b.is_string()) return b;
  return b.get<double>() > a.get<double>() ? b : a;
}

// What the table calls a figure; other fields go by their JSON name.
std::string figure_title(const std::string& field) {
  static const std::map<std::string, std::string> titles = {
      {"max_abs", "abs"}, {"max_rel", "rel"}, {"nmse", "nmse"}, {"mismatches", "outside"}};
  auto it = titles.find(field);
  return it == titles.end() ? field : it->second;
}

std::string trimmed_tail(std::string tail) {
  while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back()))) tail.pop_back();
  if (tail.size() > 600) tail = "..." + utf8_tail(tail, 600);
  return tail;
}

Json options_json(const ConformOptions& o) {
  Json kinds = Json::array();
  for (CutKind k : o.kinds) kinds.push_back(cut_kind_name(k));
  return {{"cuts", kinds},
          {"tp", o.tp},
          {"cases", o.cases},
          {"seed", o.seed},
          {"spec", o.spec ? o.spec->to_json() : Json("random")},
          {"fixed", o.specs.fixed},
          {"head_dim_from_dim", o.specs.head_dim_from_dim},
          {"weights", o.weights.string()},
          {"ctx_max", o.shapes.ctx_max},
          {"rows_max", o.shapes.rows_max},
          {"large_share", o.shapes.large_share},
          {"large_keys", o.large_keys},
          {"shrink", o.shrink},
          {"shrink_budget", o.shrink_budget},
          {"shrink_seconds", o.shrink_seconds},
          {"same_fault_limit", o.same_failure_limit}};  // the key keeps its name for compatibility
}

Json case_json(const CaseResult& r) {
  Json errors = Json::array();
  for (const OutputError& e : r.errors) errors.push_back(output_error_json(e));
  // ctx and rows beside the cut text, for histograms of where a campaign went.
  return {{"index", r.index},           {"case", r.c.to_json()},         {"text", r.c.str()},
          {"kind", cut_kind_name(r.c.cut.kind)}, {"ctx", r.c.cut.ctx},   {"rows", r.c.cut.row_count()},
          {"verdict", verdict_name(r.verdict)},  {"failure", r.failure}, {"failure_type", r.failure_type},
          {"fault", r.process_failure},  /* the key keeps its name for compatibility */ {"stderr_tail", r.stderr_tail},  {"errors", errors},
          {"seconds", r.seconds}};
}

Json failure_json(const Failure& f) {
  return {{"index", f.index},
          {"kind", cut_kind_name(f.original.c.cut.kind)},
          {"original", case_json(f.original)},
          {"shrunk", case_json(f.shrunk)},
          {"shrink_runs", f.shrink_runs},
          {"piece", f.piece},
          {"value", f.value},
          {"reproducer", f.reproducer.string()},
          {"command", f.command}};
}

}  // namespace

Json tolerance_json(const Tolerance& t) {
  if (t.bounded())
    return {{"policy", "bound"},
            {"precision", precision_info(t.precision).name},
            {"runs", t.model().runs},
            {"amplification", t.model().amplification},
            {"spread", t.model().spread},
            {"floor", t.floor}};
  return {{"policy", "fixed"}, {"atol", figure_json(t.atol)}, {"rtol", figure_json(t.rtol)}, {"nmse", figure_json(t.nmse)}};
}

std::string tolerance_text(const Json& report) {
  const Json& t = report.at("tolerance");
  if (t.at("policy") == "bound")
    return fmt::format("bound {} ({} runs at {}x, spread {}{})", t.at("precision").get<std::string>(),
                       figure_text(t.at("runs")), figure_text(t.at("amplification")), figure_text(t.at("spread")),
                       t.at("floor") != 0 ? ", floor " + figure_text(t.at("floor")) : "");
  return fmt::format("fixed atol={} rtol={} nmse={}", figure_text(t.at("atol")), figure_text(t.at("rtol")),
                     figure_text(t.at("nmse")));
}

void complete_report(Json& report) {
  // Per cut kind, and per tp width: counts, errors, seconds, the worst of each figure.
  std::map<std::string, Json> kinds;
  std::map<int64_t, Json> widths;
  auto add = [](Json& k, const Json& c) {
    const std::string verdict = c.at("verdict");
    k["cases"] = k["cases"].get<int>() + 1;
    k[verdict] = k[verdict].get<int>() + 1;
    if (verdict == "failed" && c.at("failure_type") != "mismatch") k["errors"] = k["errors"].get<int>() + 1;
    k["seconds"] = k["seconds"].get<double>() + c.at("seconds").get<double>();
    for (const Json& e : c.at("errors")) {
      for (const std::string& field : figure_fields(e)) k["worst"][field] = worse(k["worst"].value(field, Json()), e[field]);
      k["unbounded"] = k["unbounded"].get<int64_t>() + e.value("unbounded", int64_t(0));
    }
  };
  // unbounded: elements of every output of every case whose bound is infinite (held to
  // nothing but NaN against NaN), summed, as a share of what went unchecked.
  const Json empty = {{"cases", 0}, {"passed", 0}, {"failed", 0}, {"unsupported", 0}, {"errors", 0},
                      {"seconds", 0.0}, {"unbounded", int64_t(0)}, {"worst", Json::object()}};
  int passed = 0, failed = 0, unsupported = 0;
  for (const Json& c : report.at("cases")) {
    const std::string verdict = c.at("verdict");
    Json& k = kinds[c.at("kind").get<std::string>()];
    if (k.is_null()) (k = empty)["cut"] = c.at("kind");
    add(k, c);
    const int64_t tp = c.at("case").value("tp", int64_t(1));
    Json& w = widths[tp];
    if (w.is_null()) (w = empty)["tp"] = tp;
    add(w, c);
    (verdict == "passed" ? passed : verdict == "failed" ? failed : unsupported)++;
  }
  Json summary = Json::array(), by_tp = Json::array();
  for (auto& [name, k] : kinds) summary.push_back(k);
  for (auto& [tp, w] : widths) by_tp.push_back(w);
  report["summary"] = summary;
  report["summary_by_tp"] = by_tp;
  report["counts"] = {{"cases", report.at("cases").size()}, {"passed", passed}, {"failed", failed},
                      {"unsupported", unsupported}};
  // A partial report (killed, interrupted, still running) never says passed.
  report["passed"] = failed == 0 && passed > 0 && report.at("finished").get<bool>();
}

Json report_json(const ConformReport& report) {
  const ConformOptions& o = report.options;
  Json cases = Json::array();
  for (const CaseResult& r : report.results) cases.push_back(case_json(r));
  Json failures = Json::array();
  for (const Failure& f : report.failures) failures.push_back(failure_json(f));
  Json out = {{"format", "cutcheck-conform-2"},
              {"cutcheck", {{"version", version()}, {"commit", version_commit()}}},
              {"backend", report.backend},
              {"seed", o.seed},
              {"tolerance", tolerance_json(o.tolerance)},
              {"options", options_json(o)},
              // What differs between runs of the same campaign; merged reports keep the shards'.
              {"run", {{"started", report.started}, {"host", report.host}, {"jobs", o.jobs},
                       {"shard", o.shard.str()}, {"seconds", report.seconds}}},
              {"planned", report.planned},
              {"finished", report.finished},
              {"stopped", report.stopped},
              {"interrupted", report.interrupted},
              {"failures", failures},
              {"cases", cases}};
  complete_report(out);
  return out;
}

std::string summary_table(const ConformReport& report) { return summary_table(report_json(report)); }
std::string junit_xml(const ConformReport& report) { return junit_xml(report_json(report)); }

std::string summary_table(const Json& report) {
  // The figures columns: every figure an output record carries, in the records' order.
  std::vector<std::string> fields;
  for (const Json& k : report.at("summary"))
    for (auto it = k.at("worst").begin(); it != k.at("worst").end(); ++it)
      if (std::find(fields.begin(), fields.end(), it.key()) == fields.end() && it.key() != "mismatches" &&
          it.key() != "nans" && it.key() != "unbounded")
        fields.push_back(it.key());
  std::string out = fmt::format("{:<15} {:>6} {:>7} {:>7} {:>12}", "cut", "cases", "passed", "failed", "unsupported");
  for (const std::string& f : fields) out += fmt::format(" {:>10}", "worst " + figure_title(f));
  const bool bounded = report.at("tolerance").value("policy", "") == "bound";
  if (bounded) out += fmt::format(" {:>10}", "unbounded");
  out += "\n";
  auto row = [&](const std::string& label, const Json& k) {
    out += fmt::format("{:<15} {:>6} {:>7} {:>7} {:>12}", label, k.at("cases").get<int>(), k.at("passed").get<int>(),
                       k.at("failed").get<int>(), k.at("unsupported").get<int>());
    for (const std::string& f : fields) out += fmt::format(" {:>10}", figure_text(k.at("worst").value(f, Json())));
    if (bounded) out += fmt::format(" {:>10}", k.value("unbounded", int64_t(0)));
    out += "\n";
  };
  for (const Json& k : report.at("summary")) row(k.at("cut").get<std::string>(), k);
  // And per tp width, where the campaign had more than one: a split's own figures.
  const Json by_tp = report.value("summary_by_tp", Json::array());
  if (by_tp.size() > 1)
    for (const Json& w : by_tp) row(fmt::format("all, tp {}", w.at("tp").get<int64_t>()), w);
  const Json& counts = report.at("counts");
  const Json& run = report.at("run");
  const Json& version = report.at("cutcheck");
  const std::string commit = version.at("commit");
  out += fmt::format("{} cases: {} passed, {} failed, {} unsupported, in {:.1f} s; tolerance {}; seed {}{}; cutcheck {}{}\n",
                     counts.at("cases").get<int>(), counts.at("passed").get<int>(), counts.at("failed").get<int>(),
                     counts.at("unsupported").get<int>(), run.at("seconds").get<double>(), tolerance_text(report),
                     report.at("seed").get<uint64_t>(),
                     run.at("shard") != "1/1" ? fmt::format("; shard {}", run.at("shard").get<std::string>()) : "",
                     version.at("version").get<std::string>(), commit.empty() ? "" : " (git " + commit + ")");
  for (const Json& f : report.at("failures")) {
    const Json& original = f.at("original");
    const Json& shrunk = f.at("shrunk");
    out += fmt::format("\nFAILED case {}: {}\n  {}\n", f.at("index").get<int>(), original.at("text").get<std::string>(),
                       original.at("failure").get<std::string>());
    if (f.at("shrink_runs").get<int>() > 0)
      out += fmt::format("  shrunk ({} runs) to: {}\n  {}\n", f.at("shrink_runs").get<int>(),
                         shrunk.at("text").get<std::string>(), shrunk.at("failure").get<std::string>());
    else
      out += "  not shrunk\n";
    if (!f.at("piece").get<std::string>().empty())
      out += fmt::format("  first failing piece: {}\n", f.at("piece").get<std::string>());
    if (!f.at("value").get<std::string>().empty())
      out += fmt::format("  first failing value: {}\n", f.at("value").get<std::string>());
    const std::string tail = trimmed_tail(shrunk.at("stderr_tail"));
    if (!tail.empty()) out += fmt::format("  backend stderr (tail):\n{}\n", tail);
    out += fmt::format("  reproducer: {}\n  re-run: {}\n", f.at("reproducer").get<std::string>(),
                       f.at("command").get<std::string>());
  }
  if (!report.at("stopped").get<std::string>().empty())
    out += fmt::format("\nSTOPPED: {}\n", report.at("stopped").get<std::string>());
  if (report.at("interrupted").get<int>())
    out += fmt::format("\nINTERRUPTED by signal {}: {} of {} cases finished\n", report.at("interrupted").get<int>(),
                       counts.at("cases").get<int>(), report.at("planned").get<int>());
  if (counts.at("passed").get<int>() == 0 && counts.at("failed").get<int>() == 0)
    out += "\nno case passed: a run that checks nothing does not pass\n";
  return out;
}

std::string junit_xml(const Json& report) {
  const Json& run = report.at("run");
  // JUnit's schema wants the timestamp without a zone; it is UTC.
  std::string timestamp = run.at("started");
  if (!timestamp.empty() && timestamp.back() == 'Z') timestamp.pop_back();
  const std::string host = xml_escape(run.at("host"));
  std::map<std::string, std::vector<const Json*>> kinds;
  for (const Json& c : report.at("cases")) kinds[c.at("kind").get<std::string>()].push_back(&c);
  std::map<int, const Json*> failures;  // by case index
  for (const Json& f : report.at("failures")) failures[f.at("index").get<int>()] = &f;

  // What the run was: the same properties in every suite, as JUnit readers show them per suite.
  std::string properties = "    <properties>\n";
  auto property = [&](const std::string& name, const std::string& value) {
    properties += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(name), xml_escape(value));
  };
  const Json& version = report.at("cutcheck");
  property("cutcheck.version", version.at("version").get<std::string>());
  property("cutcheck.commit", version.at("commit").get<std::string>());
  property("backend", report.at("backend"));
  property("seed", std::to_string(report.at("seed").get<uint64_t>()));
  property("tolerance", tolerance_text(report));
  property("shard", run.at("shard"));
  for (auto it = report.at("options").begin(); it != report.at("options").end(); ++it)
    property("option." + it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  properties += "    </properties>\n";

  const Json& counts = report.at("counts");
  int errors = 0;
  for (const Json& k : report.at("summary")) errors += k.at("errors").get<int>();
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"cutcheck conform\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\" "
      "timestamp=\"{}\">\n",
      counts.at("cases").get<int>(), counts.at("failed").get<int>() - errors, errors, counts.at("unsupported").get<int>(),
      run.at("seconds").get<double>(), xml_escape(timestamp));
  for (const auto& [kind, cases] : kinds) {
    int failed = 0, errored = 0, skipped = 0;
    double time = 0;
    for (const Json* c : cases) {
      const bool fail = c->at("verdict") == "failed";
      const bool error = fail && c->at("failure_type") != "mismatch";
      failed += fail && !error;
      errored += error;
      skipped += c->at("verdict") == "unsupported";
      time += c->at("seconds").get<double>();
    }
    out += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\" "
        "timestamp=\"{}\" hostname=\"{}\">\n",
        kind, cases.size(), failed, errored, skipped, time, xml_escape(timestamp), host);
    out += properties;
    for (const Json* c : cases) {
      const int index = c->at("index").get<int>();
      out += fmt::format("    <testcase classname=\"conform.{}\" name=\"{}\" time=\"{:.3f}\"", kind,
                         xml_escape(fmt::format("case {}: {}", index, c->at("text").get<std::string>())),
                         c->at("seconds").get<double>());
      const std::string verdict = c->at("verdict");
      if (verdict == "passed") {
        out += "/>\n";
        continue;
      }
      out += ">\n";
      if (verdict == "unsupported") {
        out += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(c->at("failure")));
      } else {
        std::string body;
        for (const Json& e : c->at("errors")) body += output_error_text(e) + "\n";
        if (auto it = failures.find(index); it != failures.end()) {
          const Json& f = *it->second;
          body += fmt::format("shrunk to: {}\n{}\nfirst failing piece: {}\nfirst failing value: {}\nre-run: {}\n",
                              f.at("shrunk").at("text").get<std::string>(),
                              f.at("shrunk").at("failure").get<std::string>(), f.at("piece").get<std::string>(),
                              f.at("value").get<std::string>(), f.at("command").get<std::string>());
        }
        if (!c->at("stderr_tail").get<std::string>().empty())
          body += "backend stderr (tail):\n" + c->at("stderr_tail").get<std::string>();
        const std::string type = c->at("failure_type");
        out += fmt::format("      <{} type=\"{}\" message=\"{}\">{}</{}>\n", type == "mismatch" ? "failure" : "error",
                           xml_escape(type), xml_escape(c->at("failure")), xml_escape(body),
                           type == "mismatch" ? "failure" : "error");
      }
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  return out + "</testsuites>\n";
}



void write_reports(const Json& report, const std::string& json, const std::string& junit, const std::string& html) {
  if (!json.empty()) write_file_atomic(json, json_text(report));
  if (!junit.empty()) write_file_atomic(junit, junit_xml(report));
  if (!html.empty()) write_file_atomic(html, html_report(report));
}

void LiveJsonReport::update(const ConformReport& so_far) {
  const auto start = Clock::now();
  if (last_seconds_ > 0 && std::chrono::duration<double>(start - last_).count() < 20 * last_seconds_) return;
  write_file_atomic(path_, json_text(report_json(so_far)));
  last_ = Clock::now();
  last_seconds_ = std::chrono::duration<double>(last_ - start).count();
}

void LiveJsonReport::write(const Json& report) { write_file_atomic(path_, json_text(report)); }

}  // namespace cutcheck
