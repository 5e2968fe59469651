// The memory limit: every size is checked against it before anything is allocated,
// so a crafted shape or file fails with a LimitError instead of exhausting memory.
#pragma once

#include <cstdint>
#include <string>

namespace cutcheck {

// Bytes one run may allocate for tensors. Starts at 16 GiB, or at
// CUTCHECK_MEMORY_LIMIT (bytes, or with a K/M/G suffix) when that is set.
uint64_t memory_limit();
void set_memory_limit(uint64_t bytes);

// Parses "4096", "512M", "16G"; throws Error on anything else.
uint64_t parse_byte_size(const std::string& text);

// Throws LimitError naming `what` when `bytes` exceeds the limit.
void check_memory(uint64_t bytes, const std::string& what);

}  // namespace cutcheck
