#include "core/temp_folder.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace cutcheck {

fs::path temp_root() {
  const char* dir = std::getenv("TMPDIR");
  std::error_code ec;
  if (dir && *dir && fs::is_directory(dir, ec)) return dir;
  return "/tmp";
}

fs::path unique_folder(const fs::path& parent, const std::string& prefix) {
  std::string pattern = (parent / (prefix + "XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data()))
    throw IoError(fmt::format("cannot create a temporary folder '{}': {}", pattern, std::strerror(errno)));
  return buffer.data();
}

TempFolder::TempFolder(const std::string& purpose) : path_(unique_folder(temp_root(), fmt::format("cutcheck-{}-", purpose))) {}

TempFolder::~TempFolder() {
  std::error_code ec;  // a destructor must not throw; a folder that will not go is left
  fs::remove_all(path_, ec);
}

}  // namespace cutcheck
