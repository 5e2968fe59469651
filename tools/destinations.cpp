#include "tools/destinations.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/error.h"

namespace cutcheck::cli {
namespace {

namespace fs = std::filesystem;

// Why no new file can be made in the folder `dir`, or nothing when one can. One is made and
// removed (an unnamed one where the filesystem allows), as permissions alone do not say:
// root passes every permission check, and /proc refuses new files even to root.
std::optional<std::string> cannot_create_in(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {  // no O_TMPFILE here
    std::string name = (dir / ".cutcheck-probe-XXXXXX").string();
    fd = ::mkstemp(name.data());
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0) return std::string(std::strerror(errno));
  ::close(fd);
  return std::nullopt;
}

// After a failed stat: the path is not there (ENOTDIR: a file stands where a folder would).
bool missing() { return errno == ENOENT || errno == ENOTDIR; }

// Why `path` cannot be written as a `kind`, or nothing when it can.
std::optional<std::string> cannot_write(fs::path path, Destinations::Kind kind) {
  path = fs::absolute(path);
  if (!path.has_filename()) path = path.parent_path();  // "out/" is "out"
  struct stat info {};
  const bool exists = ::stat(path.c_str(), &info) == 0;
  if (!exists && !missing()) return fmt::format("cannot reach it ({})", std::strerror(errno));
  if (exists && kind == Destinations::Kind::file && !S_ISREG(info.st_mode))
    return "exists and is not a regular file; refusing to replace it";
  if (exists && kind == Destinations::Kind::folder && !S_ISDIR(info.st_mode)) return "exists and is not a folder";
  // Where the first new file goes: into the folder itself when it exists; else beside the
  // file, or into the nearest folder that exists, where the missing ones will be made.
  fs::path dir = exists && kind == Destinations::Kind::folder ? path : path.parent_path();
  while (::stat(dir.c_str(), &info) != 0) {
    if (!missing() || dir == dir.parent_path())
      return fmt::format("cannot reach '{}' ({})", dir.string(), std::strerror(errno));
    dir = dir.parent_path();
  }
  if (!S_ISDIR(info.st_mode)) return fmt::format("'{}' is not a folder", dir.string());
  if (auto why = cannot_create_in(dir)) return fmt::format("cannot create files in '{}' ({})", dir.string(), *why);
  return std::nullopt;
}

}  // namespace

CLI::Option* Destinations::add(CLI::App* cmd, const std::string& name, std::string& path, const std::string& help,
                               Kind kind) {
  CLI::Option* option =
      cmd->add_option(name, path, help)
          ->type_name(kind == Kind::file ? "FILE" : "FOLDER")
          ->check(CLI::Validator(
              [kind](std::string& text) {
                const auto why = cannot_write(text, kind);
                return why ? fmt::format("'{}': {}", text, *why) : std::string();
              },
              ""));
  entries_.push_back({option, &path, kind});
  return option;
}

void Destinations::check() const {
  for (const Entry& e : entries_)
    if (e.option->count() == 0 && !e.path->empty())  // a default: given paths were checked while parsing
      if (auto why = cannot_write(*e.path, e.kind))
        throw IoError(fmt::format("{} '{}' (the default): {}", e.option->get_name(), *e.path, *why));
}

}  // namespace cutcheck::cli
