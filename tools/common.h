// Small pieces the commands share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/files.h"
#include "harness/tolerance.h"
#include "model/spec.h"
#include "tools/destinations.h"
#include "tools/number_options.h"

namespace cutcheck::cli {

// The spec named by --spec, or else the spec.json beside the weights.
ModelSpec resolve_spec(const std::string& spec, const std::string& weights_dir);

// "a,b,,c" -> {"a", "b", "", "c"}: the items of a comma-separated option, empty ones kept.
std::vector<std::string> split_list(const std::string& text);

// "1,2,3" -> {1, 2, 3}; throws Error on anything else.
std::vector<int32_t> parse_token_list(const std::string& text);

// --tolerance and --precision: "bound" with a precision, or a fixed preset. The old
// names f32 and bf16 are refused with the new ones named.
Tolerance tolerance_option(const std::string& tolerance, const std::string& precision);

}  // namespace cutcheck::cli
