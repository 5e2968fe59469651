#include "core/version.h"

#include <fmt/format.h>

// Defined in the file cmake/version.cmake writes at build time, so that a new commit
// recompiles that file alone.
extern const char* const cutcheck_build_commit;

namespace cutcheck {

std::string version() { return CUTCHECK_VERSION; }

std::string version_commit() { return cutcheck_build_commit; }

std::string version_line(const std::string& program) {
  const std::string commit = version_commit();
  return commit.empty() ? fmt::format("{} {}", program, version())
                        : fmt::format("{} {} (git {})", program, version(), commit);
}

}  // namespace cutcheck
