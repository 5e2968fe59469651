// Small pieces the commands share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/files.h"
#include "model/spec.h"

namespace cutcheck::cli {

// The spec named by --spec, or else the spec.json beside the weights.
ModelSpec resolve_spec(const std::string& spec, const std::string& weights_dir);

// "1,2,3" -> {1, 2, 3}; throws Error on anything else.
std::vector<int32_t> parse_token_list(const std::string& text);

// How `target` reads from inside `from`: relative when both are, absolute otherwise.
std::string path_from(const fs::path& from, const std::string& target);

}  // namespace cutcheck::cli
