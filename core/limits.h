// The memory limit: every size is checked against it before anything is allocated,
// so a crafted shape or file fails with a LimitError instead of exhausting memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace cutcheck {

// Bytes one run may allocate for tensors: CUTCHECK_MEMORY_LIMIT (bytes, or with a K/M/G
// suffix) when that is set, otherwise what the machine has (machine_memory_limit()).
uint64_t memory_limit();
void set_memory_limit(uint64_t bytes);

// Where Linux says how much memory this process may have. A test points these at files
// of its own.
struct MemoryFiles {
  std::filesystem::path meminfo = "/proc/meminfo";       // MemAvailable
  std::filesystem::path cgroups = "/proc/self/cgroup";   // the process's cgroup in each hierarchy
  std::filesystem::path cgroup_root = "/sys/fs/cgroup";  // where the hierarchies are mounted
};

// The default limit: the memory available (MemAvailable: free memory and what the kernel
// can reclaim, such as clean file pages), or less where the process's cgroup, or one above
// it, sets a lower limit (cgroup v2 memory.max under the root, v1 memory.limit_in_bytes
// under root/memory). 16 GiB where none of these can be read.
uint64_t machine_memory_limit(const MemoryFiles& files = {});

// Parses "4096", "512M", "16G"; throws Error on anything else.
uint64_t parse_byte_size(const std::string& text);

// Throws LimitError naming `what` when `bytes` exceeds the limit.
void check_memory(uint64_t bytes, const std::string& what);

}  // namespace cutcheck
