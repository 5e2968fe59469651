// The files of a case: its program folder (split into chip folders when tp > 1) and the
// weights folder it reads.
#pragma once

#include <utility>

#include "campaign/campaign.h"

namespace cutcheck {

// Writes the program folder of `cut` (split when tp > 1) reading weights from `weights`.
void write_program(const Cut& cut, const ModelSpec& spec, int64_t tp, const fs::path& weights, const fs::path& folder);

// The case's weights, and the folder they are in (written under `work` unless given).
std::pair<TensorMap, fs::path> case_weights(const Case& c, const ConformOptions& o, const fs::path& work);

}  // namespace cutcheck
