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

TempFolder::TempFolder(const std::string& purpose) {
  std::string pattern = (temp_root() / fmt::format("cutcheck-{}-XXXXXX", purpose)).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data()))
    throw IoError(fmt::format("cannot create a temporary folder '{}': {}", pattern, std::strerror(errno)));
  path_ = buffer.data();
}

TempFolder::~TempFolder() {
  std::error_code ec;  // a destructor must not throw; a folder that will not go is left
  fs::remove_all(path_, ec);
}

}  // namespace cutcheck
