// Small pieces the commands share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/files.h"
#include "harness/tolerance.h"
#include "model/spec.h"

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

// Refuses, before any work, a report destination that exists and is not a regular file
// (a folder, FIFO or device), naming the option: write_file_atomic would refuse it only
// once the run is over.
void check_report_path(const std::string& option, const std::string& path);

// For seed options: a decimal number in [0, 2^64), refused (not clamped or wrapped) otherwise.
extern const CLI::Validator seed_number;

// For time limits in seconds (--timeout): a finite number above 0 (not nan, inf, 0 or
// negative, which would never expire or always have).
extern const CLI::Validator positive_seconds;

// For --tp options: a width in [1, 4096].
extern const CLI::Validator tp_width;

}  // namespace cutcheck::cli
