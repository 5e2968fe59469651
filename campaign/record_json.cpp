#include "campaign/record_json.h"

#include <fmt/format.h>

#include <cmath>

namespace cutcheck {

std::string verdict_name(Verdict v) {
  return v == Verdict::passed ? "passed" : v == Verdict::failed ? "failed" : "unsupported";
}

Json figure_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::string figure_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return fmt::format("{}", v.get<int64_t>());
  if (v.is_number()) return fmt::format("{:.3g}", v.get<double>());
  return "-";
}

Json output_error_json(const OutputError& e) {
  // headroom: the worst |got - want| / allowed of the output's elements (1 is the limit;
  // "nan" when an element is NaN where the reference has a number, counted in nans);
  // unbounded: elements whose bound is infinite, compared for NaN and infinity only.
  return {{"output", e.name},              {"max_abs", figure_json(e.max_abs)},   {"max_rel", figure_json(e.max_rel)},
          {"nmse", figure_json(e.nmse)},   {"headroom", figure_json(e.headroom)}, {"mismatches", e.mismatches},
          {"nans", e.nans},                {"unbounded", e.unbounded},            {"first", e.first}};
}

std::vector<std::string> figure_fields(const Json& error) {
  std::vector<std::string> out;
  for (auto it = error.begin(); it != error.end(); ++it)
    if (it.value().is_number() || (it.value().is_string() && it.key() != "output" && it.key() != "first"))
      out.push_back(it.key());
  return out;
}

std::string output_error_text(const Json& error) {
  std::string out = error.at("output").get<std::string>() + ":";
  const std::vector<std::string> fields = figure_fields(error);
  for (size_t i = 0; i < fields.size(); ++i)
    out += fmt::format("{} {} {}", i ? "," : "", fields[i], figure_text(error.at(fields[i])));
  return out;
}

}  // namespace cutcheck
