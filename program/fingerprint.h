// What identifies a program folder's content, for a backend server that keeps lowered
// programs between requests (docs/conformance.md, "Persistent backends"): a request for a
// folder with the same fingerprint may reuse what was lowered for it.
#pragma once

#include <string>

#include "core/files.h"

namespace cutcheck {

// SHA-256 over program.txt and manifest.json byte for byte, and each weights file the
// manifest names by its resolved path, size and modification time (not its bytes:
// reading gigabytes per request would cost more than lowering saves); for a split, over
// each chip folder. Throws as reading the folder does.
std::string program_fingerprint(const fs::path& folder);

}  // namespace cutcheck
