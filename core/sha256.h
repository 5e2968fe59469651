// SHA-256 (FIPS 180-4), to pin the weights a reproducer refers to: a replay on another
// machine refuses weights whose bytes differ from those the failure was found with.
#pragma once

#include <span>
#include <string>

#include "core/files.h"

namespace cutcheck {

// Lower-case hex digest of the bytes.
std::string sha256_hex(std::span<const std::byte> bytes);
// Of a whole file (mapped, not copied).
std::string sha256_file(const fs::path& path);

}  // namespace cutcheck
