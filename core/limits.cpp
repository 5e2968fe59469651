#include "core/limits.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/error.h"

namespace cutcheck {
namespace {

namespace fs = std::filesystem;

// `lowest` becomes `other` where that is known and lower.
void lower_to(std::optional<uint64_t>& lowest, std::optional<uint64_t> other) {
  if (other && (!lowest || *other < *lowest)) lowest = other;
}

// The first line of `file` as a number of bytes; nullopt where it cannot be read or says
// anything else ("max": no limit).
std::optional<uint64_t> bytes_in(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line) || line.empty() || line.find_first_not_of("0123456789") != std::string::npos ||
      line.size() > 19)
    return std::nullopt;
  return std::stoull(line);
}

// MemAvailable of /proc/meminfo, in bytes.
std::optional<uint64_t> mem_available(const fs::path& meminfo) {
  std::ifstream in(meminfo);
  std::string key, unit;
  uint64_t kib = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    if (fields >> key >> kib >> unit && key == "MemAvailable:" && unit == "kB" && kib < (uint64_t{1} << 53)) return kib << 10;
  }
  return std::nullopt;
}

// The lowest limit `file_name` sets in `hierarchy`, from the process's cgroup `path` up to
// the hierarchy's root (a limit applies to every cgroup below it). Folders missing on the
// way (a container's view, where its own cgroup is the root) are skipped.
std::optional<uint64_t> cgroup_limit(const fs::path& hierarchy, const fs::path& path, const std::string& file_name) {
  std::optional<uint64_t> lowest;
  for (fs::path p = path.lexically_normal();; p = p.parent_path()) {
    lower_to(lowest, bytes_in(hierarchy / p.relative_path() / file_name));
    if (!p.has_relative_path()) return lowest;  // the root: nothing above it
  }
}

uint64_t initial_limit() {
  if (const char* env = std::getenv("CUTCHECK_MEMORY_LIMIT")) {
    try {
      return parse_byte_size(env);
    } catch (const Error& e) {
      throw InputError(fmt::format("CUTCHECK_MEMORY_LIMIT: {}", e.what()));
    }
  }
  return machine_memory_limit();
}

std::atomic<uint64_t>& limit_slot() {
  static std::atomic<uint64_t> slot{initial_limit()};
  return slot;
}

}  // namespace

uint64_t memory_limit() { return limit_slot().load(); }
void set_memory_limit(uint64_t bytes) { limit_slot().store(bytes); }

uint64_t machine_memory_limit(const MemoryFiles& files) {
  std::optional<uint64_t> limit = mem_available(files.meminfo);
  // Lines "ID:CONTROLLERS:PATH": "0::PATH" is the v2 hierarchy; v1's memory controller
  // has a line of its own, mounted as root/memory.
  std::ifstream in(files.cgroups);
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string id = line.substr(0, first), controllers = line.substr(first + 1, second - first - 1);
    const fs::path path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) lower_to(limit, cgroup_limit(files.cgroup_root, path, "memory.max"));
    std::istringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');)
      if (c == "memory") lower_to(limit, cgroup_limit(files.cgroup_root / "memory", path, "memory.limit_in_bytes"));
  }
  return limit.value_or(uint64_t{16} << 30);
}

uint64_t parse_byte_size(const std::string& text) {
  // Digits only: stoull alone would take " 5", "+5" and wrap "-5" to 2^64 - 5.
  size_t used = 0;
  while (used < text.size() && text[used] >= '0' && text[used] <= '9') ++used;
  unsigned long long value = 0;
  try {
    if (used == 0 || used > 20) throw std::out_of_range("digits");
    value = std::stoull(text.substr(0, used));
  } catch (const std::exception&) {
    throw Error(fmt::format("'{}' is not a byte size (expected a number with an optional K, M or G)", text));
  }
  std::string suffix = text.substr(used);
  int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
  if (shift < 0 || (shift > 0 && value > (~0ULL >> shift)))
    throw Error(fmt::format("'{}' is not a byte size (expected a number with an optional K, M or G)", text));
  return uint64_t(value) << shift;
}

void check_memory(uint64_t bytes, const std::string& what) {
  if (bytes > memory_limit())
    throw LimitError(fmt::format("{} needs {} bytes, over the memory limit of {} bytes "
                                 "(raise it with CUTCHECK_MEMORY_LIMIT)",
                                 what, bytes, memory_limit()));
}

}  // namespace cutcheck
