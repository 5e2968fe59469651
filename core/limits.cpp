#include "core/limits.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>

#include "core/error.h"

namespace cutcheck {
namespace {

uint64_t initial_limit() {
  if (const char* env = std::getenv("CUTCHECK_MEMORY_LIMIT")) {
    try {
      return parse_byte_size(env);
    } catch (const Error& e) {
      throw InputError(fmt::format("CUTCHECK_MEMORY_LIMIT: {}", e.what()));
    }
  }
  return uint64_t{16} << 30;
}

std::atomic<uint64_t>& limit_slot() {
  static std::atomic<uint64_t> slot{initial_limit()};
  return slot;
}

}  // namespace

uint64_t memory_limit() { return limit_slot().load(); }
void set_memory_limit(uint64_t bytes) { limit_slot().store(bytes); }

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
