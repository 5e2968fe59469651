// A campaign record's pieces as every report and reproducer writes them: a verdict's name,
// and the per-output figures of a comparison (OutputError) as JSON and as one line of text.
// The one place that lists OutputError's fields: the table, JUnit and HTML show every
// number found here.
#pragma once

#include <string>
#include <vector>

#include "campaign/campaign_record.h"
#include "core/json.h"
#include "harness/tolerance.h"

namespace cutcheck {

std::string verdict_name(Verdict v);  // "passed", "failed", "unsupported"

// A figure as JSON: a number, or "inf", "-inf", "nan", which JSON numbers cannot hold.
Json figure_json(double v);
// A figure as the reports print it: an integer whole, another number to 3 significant
// digits, a string ("inf", "nan") as is, "-" for none.
std::string figure_text(const Json& v);

Json output_error_json(const OutputError& e);
// The figures (numeric fields) of an output's error record, in the record's order.
std::vector<std::string> figure_fields(const Json& error);
// One line of the same: "k.0: max_abs 1.04, max_rel 3.82, nmse 8.75, mismatches 3".
std::string output_error_text(const Json& error);
inline std::string output_error_text(const OutputError& e) { return output_error_text(output_error_json(e)); }

}  // namespace cutcheck
