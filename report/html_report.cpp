// The HTML report: one self-contained page (inline CSS and SVG, no network, no script
// needed to read it) made from the JSON report. A few lines of script only check, once
// the page is laid out, that every plot has a size, and say so on <body> (the test in
// tests/html_report.py reads it).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "report/report.h"

namespace cutcheck {
namespace {

std::string esc(const Json& v) { return xml_escape(v.is_string() ? v.get<std::string>() : v.dump()); }

// The tolerance a figure of an output is held to, when it has one, and how to say it.
struct Limit {
  double value;
  std::string name;
};

std::optional<Limit> limit_of(const std::string& field, const Json& tolerance) {
  // A bound policy has no atol, rtol or nmse: only headroom has a line then.
  auto limit = [&](const char* key) -> std::optional<Limit> {
    const Json v = tolerance.value(key, Json());
    if (!v.is_number()) return std::nullopt;
    return Limit{v.get<double>(), key};
  };
  if (field == "max_abs") return limit("atol");
  if (field == "max_rel") return limit("rtol");
  if (field == "nmse") return limit("nmse");
  if (field == "headroom") return Limit{1, "bound"};  // error / its element's bound: at most 1 passes
  return std::nullopt;
}

std::string figure_label(const std::string& field) {
  if (field == "max_abs") return "|got - want|, worst element";
  if (field == "max_rel") return "|got - want| / |want|, worst element";
  if (field == "nmse") return "normalised mean square error";
  if (field == "headroom") return "error / bound, worst element";
  return field;
}

// A histogram of `values` on a log scale (half-decade bins), with the bitwise-equal zeros
// in a bar of their own at the left and the limit as a dashed line. Non-finite values
// ("inf", "nan") go in a bar at the right.
std::string histogram(const std::vector<Json>& values, const std::optional<Limit>& limit, const std::string& title) {
  constexpr double width = 360, height = 150, left = 34, bottom = 28, top = 18, right = 8;
  int zeros = 0, nonfinite = 0;
  std::vector<double> logs;
  for (const Json& v : values) {
    if (!v.is_number()) ++nonfinite;
    else if (v.get<double>() <= 0) ++zeros;
    else logs.push_back(std::log10(v.get<double>()));
  }
  double lo = -8, hi = 0;
  if (!logs.empty()) {
    lo = std::floor(*std::min_element(logs.begin(), logs.end()) * 2) / 2;
    hi = std::floor(*std::max_element(logs.begin(), logs.end()) * 2) / 2 + 0.5;
  }
  const bool has_limit = limit && std::isfinite(limit->value) && limit->value > 0;
  if (has_limit) {
    lo = std::min(lo, std::floor(std::log10(limit->value) * 2) / 2 - 0.5);
    hi = std::max(hi, std::floor(std::log10(limit->value) * 2) / 2 + 1);
  }
  const int bins = std::max(1, int(std::lround((hi - lo) * 2)));
  std::vector<int> counts(size_t(bins) + 2, 0);  // [0] zeros, [1..bins], [bins+1] non-finite
  counts[0] = zeros;
  counts.back() = nonfinite;
  for (double l : logs) counts[1 + size_t(std::clamp(int((l - lo) * 2), 0, bins - 1))]++;
  const int most = std::max(1, *std::max_element(counts.begin(), counts.end()));
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  const double bar_w = plot_w / double(bins + 2);
  std::string svg = fmt::format(
      "<svg class=\"plot\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" "
      "aria-label=\"{2}\"><title>{2}</title>\n",
      width, height, xml_escape(title));
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" class=\"axis\"/>\n", left, top + plot_h,
                     width - right);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"small\" text-anchor=\"end\">{}</text>\n", left - 4, top + 8, most);
  for (size_t i = 0; i < counts.size(); ++i) {
    const double x = left + double(i) * bar_w;
    const double h = plot_h * counts[i] / most;
    // A bin is over the limit when its lower edge is.
    const bool over = i == counts.size() - 1 ||
                      (i > 0 && has_limit && lo + double(i - 1) / 2 >= std::log10(limit->value) - 1e-9);
    const std::string range = i == 0 ? "exactly 0"
                              : i == counts.size() - 1
                                  ? "not finite"
                                  : fmt::format("1e{:.1f} to 1e{:.1f}", lo + double(i - 1) / 2, lo + double(i) / 2);
    if (counts[i] > 0)
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"{}\"><title>{}: {} "
          "case(s)</title></rect>\n",
          x + 1, top + plot_h - h, std::max(1.0, bar_w - 2), h, over ? "bad" : i == 0 ? "exact" : "good", range,
          counts[i]);
  }
  // x labels: 0, every whole decade, and the non-finite bar when there is one
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"small\" text-anchor=\"middle\">0</text>\n", left + bar_w / 2,
                     height - 14);
  for (int i = 0; i <= bins; ++i) {
    const double decade = lo + double(i) / 2;
    if (decade != std::floor(decade) || (bins > 12 && int(decade) % 2 != 0)) continue;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"small\" text-anchor=\"middle\">1e{}</text>\n",
                       left + (i + 1) * bar_w, height - 14, int(decade));
  }
  if (nonfinite > 0)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"small\" text-anchor=\"middle\">inf, nan</text>\n",
                       left + (bins + 1.5) * bar_w, height - 14);
  if (has_limit) {
    const double x = left + (1 + (std::log10(limit->value) - lo) * 2) * bar_w;
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" class=\"limit\"/><text x=\"{0:.1f}\" y=\"{3}\" "
        "class=\"small limit-label\" text-anchor=\"middle\">{4} {5:.3g}</text>\n",
        x, top - 2, top + plot_h, top - 6, limit->name, limit->value);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"small\">{}</text>\n", left, height - 2, xml_escape(title));
  return svg + "</svg>\n";
}

// Stacked bars per cut kind: passed, failed (mismatch), errors, unsupported.
std::string kinds_chart(const Json& summary) {
  const double row = 22, label = 130, width = 520, bar = width - label - 60;
  int most = 1;
  for (const Json& k : summary) most = std::max(most, k.at("cases").get<int>());
  const double height = row * double(summary.size()) + 24;
  std::string svg = fmt::format(
      "<svg class=\"plot\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"cases per cut "
      "kind\"><title>cases per cut kind</title>\n",
      width, height);
  double y = 4;
  for (const Json& k : summary) {
    const int failed = k.at("failed").get<int>(), errors = k.at("errors").get<int>();
    const std::vector<std::pair<std::string, int>> parts = {{"good", k.at("passed").get<int>()},
                                                            {"bad", failed - errors},
                                                            {"error", errors},
                                                            {"skip", k.at("unsupported").get<int>()}};
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"small\" text-anchor=\"end\">{}</text>\n", label - 6,
                       y + row * 0.65, esc(k.at("cut")));
    double x = label;
    for (const auto& [cls, n] : parts) {
      if (n == 0) continue;
      const double w = bar * n / most;
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"{}\"><title>{} {}</title></rect>\n",
          x, y + 3, w, row - 6, cls, n,
          cls == "good" ? "passed" : cls == "bad" ? "failed" : cls == "error" ? "errors" : "unsupported");
      x += w;
    }
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"small\">{}/{}</text>\n", x + 4, y + row * 0.65,
                       k.at("passed").get<int>(), k.at("cases").get<int>());
    y += row;
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{:.1f}\" class=\"small\"><tspan class=\"good-text\">&#9632; passed</tspan> <tspan "
      "class=\"bad-text\">&#9632; failed</tspan> <tspan class=\"error-text\">&#9632; error (crash, timeout, "
      "protocol)</tspan> <tspan class=\"skip-text\">&#9632; unsupported</tspan></text>\n",
      label, y + 14);
  return svg + "</svg>\n";
}

std::string errors_table(const Json& errors) {
  if (errors.empty()) return "";
  std::vector<std::string> fields;
  for (const Json& e : errors)
    for (auto it = e.begin(); it != e.end(); ++it)
      if (it.key() != "output" && it.key() != "first" && std::find(fields.begin(), fields.end(), it.key()) == fields.end())
        fields.push_back(it.key());
  std::string out = "<table class=\"figures\"><tr><th>output</th>";
  for (const std::string& f : fields) out += "<th>" + xml_escape(f) + "</th>";
  out += "<th>first element outside</th></tr>\n";
  for (const Json& e : errors) {
    out += "<tr><td>" + esc(e.at("output")) + "</td>";
    for (const std::string& f : fields) {
      const Json v = e.value(f, Json());
      out += "<td class=\"num\">" +
             (v.is_number_float() ? fmt::format("{:.3g}", v.get<double>()) : v.is_null() ? "" : esc(v)) + "</td>";
    }
    out += "<td>" + esc(e.value("first", "")) + "</td></tr>\n";
  }
  return out + "</table>\n";
}

const char* style = R"(
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.verdict { font-weight: bold; padding: 0.1em 0.5em; border-radius: 3px; color: #fff; }
.verdict.pass { background: #2e7d32; } .verdict.fail { background: #c62828; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
.failure { border-left: 4px solid #c62828; padding-left: 0.8em; margin: 1em 0; }
.outputs { display: flex; flex-wrap: wrap; gap: 0.5em 1.5em; }
.output h3 { font-size: 1em; margin: 0.8em 0 0.2em; }
svg.plot { display: block; background: #fff; }
svg .axis { stroke: #888; } svg .small { font-size: 10px; fill: #444; }
svg .good { fill: #43a047; } svg .exact { fill: #1e88e5; } svg .bad { fill: #e53935; }
svg .error { fill: #8e24aa; } svg .skip { fill: #bdbdbd; }
svg .good-text { fill: #43a047; } svg .bad-text { fill: #e53935; } svg .error-text { fill: #8e24aa; } svg .skip-text { fill: #9e9e9e; }
svg .limit { stroke: #c62828; stroke-dasharray: 4 3; stroke-width: 1.5; } svg .limit-label { fill: #c62828; }
.note { color: #555; }
)";

// Marks <body> once laid out: how many plots there are and how many have a size, and any
// script error; the headless-browser test reads these from the DOM.
const char* check_script = R"(
window.addEventListener('error', function (e) { document.body.dataset.scriptError = String(e.message); });
window.addEventListener('load', function () {
  var plots = document.querySelectorAll('svg.plot'), drawn = 0;
  for (var i = 0; i < plots.length; i++) {
    var box = plots[i].getBoundingClientRect();
    if (box.width > 0 && box.height > 0 && plots[i].querySelector('rect, line')) drawn++;
  }
  document.body.dataset.plots = String(plots.length);
  document.body.dataset.plotsDrawn = String(drawn);
});
)";

}  // namespace

std::string html_report(const Json& report) {
  const Json& counts = report.at("counts");
  const Json& run = report.at("run");
  const Json& version = report.at("cutcheck");
  const bool passed = report.at("passed").get<bool>();
  std::string title = fmt::format("cutcheck conform: {} — {}", report.at("backend").get<std::string>(),
                                  passed ? "passed" : "FAILED");
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "script-src 'unsafe-inline'; img-src data:\">\n";
  out += "<title>" + xml_escape(title) + "</title>\n<style>" + style + "</style>\n</head>\n<body>\n";
  out += fmt::format("<h1>cutcheck conform <span class=\"verdict {}\">{}</span></h1>\n", passed ? "pass" : "fail",
                     passed ? "PASSED" : "FAILED");
  out += fmt::format(
      "<p>backend <code>{}</code><br>{} cases: {} passed, {} failed, {} unsupported, in {:.1f} s<br>seed {}, tolerance "
      "{}<br>cutcheck {}{}, started {} on {}, shard {}, {} job(s)</p>\n",
      esc(report.at("backend")), counts.at("cases").get<int>(), counts.at("passed").get<int>(),
      counts.at("failed").get<int>(), counts.at("unsupported").get<int>(), run.at("seconds").get<double>(),
      report.at("seed").get<uint64_t>(), xml_escape(tolerance_text(report)), esc(version.at("version")),
      version.at("commit").get<std::string>().empty() ? "" : " (git " + esc(version.at("commit")) + ")",
      esc(run.at("started")), esc(run.at("host")), esc(run.at("shard")), esc(run.at("jobs")));
  if (!report.at("stopped").get<std::string>().empty())
    out += "<p class=\"failure\"><b>Stopped:</b> " + esc(report.at("stopped")) + "</p>\n";
  if (report.at("interrupted").get<int>())
    out += fmt::format("<p class=\"failure\"><b>Interrupted</b> by signal {}: {} of {} cases finished.</p>\n",
                       report.at("interrupted").get<int>(), counts.at("cases").get<int>(), report.at("planned").get<int>());
  else if (!report.at("finished").get<bool>())
    out += "<p class=\"failure\"><b>Partial:</b> the campaign had not finished when this was written.</p>\n";

  // Per cut kind
  out += "<h2>Cut kinds</h2>\n" + kinds_chart(report.at("summary"));
  out += "<table><tr><th>cut</th><th>cases</th><th>passed</th><th>failed</th><th>of which errors</th><th>unsupported</th>"
         "<th>seconds</th></tr>\n";
  for (const Json& k : report.at("summary"))
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2f}</td></tr>\n",
        esc(k.at("cut")), k.at("cases").get<int>(), k.at("passed").get<int>(), k.at("failed").get<int>(),
        k.at("errors").get<int>(), k.at("unsupported").get<int>(), k.at("seconds").get<double>());
  out += "</table>\n";

  // Failures
  out += fmt::format("<h2>Failures ({})</h2>\n", report.at("failures").size());
  if (report.at("failures").empty()) out += "<p class=\"note\">None.</p>\n";
  for (const Json& f : report.at("failures")) {
    const Json& original = f.at("original");
    const Json& shrunk = f.at("shrunk");
    out += fmt::format("<div class=\"failure\" id=\"failure-{}\">\n<h3>case {} ({}): {}</h3>\n", f.at("index").get<int>(),
                       f.at("index").get<int>(), esc(f.at("kind")), esc(original.at("failure_type")));
    out += "<p><b>Found on</b> <code>" + esc(original.at("text")) + "</code><br>" + esc(original.at("failure")) + "</p>\n";
    if (f.at("shrink_runs").get<int>() > 0)
      out += fmt::format("<p><b>Shrunk</b> ({} runs) <b>to</b> <code>{}</code><br>{}</p>\n", f.at("shrink_runs").get<int>(),
                         esc(shrunk.at("text")), esc(shrunk.at("failure")));
    else
      out += "<p>Not shrunk.</p>\n";
    out += errors_table(shrunk.at("errors"));
    if (!f.at("piece").get<std::string>().empty())
      out += "<p><b>First failing piece:</b> " + esc(f.at("piece")) + "</p>\n";
    if (!f.at("value").get<std::string>().empty())
      out += "<p><b>First failing value:</b> " + esc(f.at("value")) + "</p>\n";
    out += "<p><b>Replay:</b></p><pre>" + esc(f.at("command")) + "</pre>\n";
    out += "<p>Reproducer folder: <code>" + esc(f.at("reproducer")) + "</code></p>\n";
    if (!shrunk.at("stderr_tail").get<std::string>().empty())
      out += "<details><summary>backend stderr (tail)</summary><pre>" + esc(shrunk.at("stderr_tail")) + "</pre></details>\n";
    out += "</div>\n";
  }

  // Per output: the distribution of each figure over the cases, against its tolerance.
  std::map<std::string, std::map<std::string, std::vector<Json>>> figures;  // output -> field -> values
  std::vector<std::string> outputs, fields;
  for (const Json& c : report.at("cases"))
    for (const Json& e : c.at("errors")) {
      const std::string output = e.at("output");
      if (std::find(outputs.begin(), outputs.end(), output) == outputs.end()) outputs.push_back(output);
      for (auto it = e.begin(); it != e.end(); ++it) {
        if (it.key() == "output" || it.key() == "first" || it.key() == "mismatches" || it.key() == "nans") continue;
        if (std::find(fields.begin(), fields.end(), it.key()) == fields.end()) fields.push_back(it.key());
        figures[output][it.key()].push_back(it.value());
      }
    }
  out += "<h2>Outputs</h2>\n<p class=\"note\">For each output, over the cases whose outputs were compared: each figure's "
         "distribution (log scale; blue: bitwise equal, green: within the tolerance's line, red: beyond it).</p>\n";
  for (const std::string& output : outputs) {
    out += "<div class=\"output\"><h3>" + xml_escape(output) + "</h3><div class=\"outputs\">\n";
    for (const std::string& field : fields) {
      auto it = figures[output].find(field);
      if (it == figures[output].end()) continue;
      out += histogram(it->second, limit_of(field, report.at("tolerance")), figure_label(field));
    }
    out += "</div></div>\n";
  }

  // Every case
  out += fmt::format("<h2>Cases</h2>\n<details><summary>all {} cases</summary>\n", counts.at("cases").get<int>());
  out += "<table><tr><th>#</th><th>cut</th><th>verdict</th><th>ctx</th><th>rows</th><th>seconds</th><th>case</th><th>failure</th></tr>\n";
  for (const Json& c : report.at("cases"))
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{:.3f}</td><td><code>{}</code></td><td>{}</td></tr>\n",
        c.at("index").get<int>(), esc(c.at("kind")), esc(c.at("verdict")), c.at("ctx").get<int64_t>(),
        c.at("rows").get<int64_t>(), c.at("seconds").get<double>(), esc(c.at("text")), esc(c.at("failure")));
  out += "</table>\n</details>\n";
  out += fmt::format("<script>{}</script>\n</body></html>\n", check_script);
  return out;
}

}  // namespace cutcheck
