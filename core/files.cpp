#include "core/files.h"

#include <fcntl.h>
#include <stdio.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace cutcheck {
namespace {

[[noreturn]] void fail_io(const std::string& action, const fs::path& path) {
  throw IoError(fmt::format("cannot {} '{}': {}", action, path.string(), std::strerror(errno)));
}

// Closes a descriptor on every path out of a function.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens a file to read only if it is a regular file. O_NONBLOCK makes opening a FIFO
// return at once (instead of waiting for a writer forever), and fstat then refuses it;
// O_NOFOLLOW refuses a symbolic link without opening what it points to.
int open_regular(const fs::path& path, struct stat& info, Links links) {
  Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (links == Links::refuse ? O_NOFOLLOW : 0))};
  if (file.fd < 0 && errno == ELOOP && links == Links::refuse)
    throw IoError(fmt::format("'{}' is a symbolic link, not the file itself; it is not followed", path.string()));
  if (file.fd < 0) fail_io("open", path);
  if (::fstat(file.fd, &info) != 0) fail_io("stat", path);
  if (!S_ISREG(info.st_mode))
    throw IoError(fmt::format("'{}' is not a regular file (a FIFO, device or folder cannot be read as one)", path.string()));
  const int fd = file.fd;
  file.fd = -1;  // the caller owns it now
  return fd;
}

}  // namespace

std::string read_file(const fs::path& path, uint64_t limit, Links links) {
  struct stat info {};
  Descriptor file{open_regular(path, info, links)};
  if (uint64_t(info.st_size) > limit)
    throw FormatError(fmt::format("'{}' is {} bytes, more than the {} bytes allowed for it", path.string(),
                                  info.st_size, limit));
  std::string text(size_t(info.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(file.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_io("read", path);
    if (n == 0) break;  // the file shrank while we read it
    done += size_t(n);
  }
  text.resize(done);
  return text;
}

namespace {

void write_all(int fd, std::span<const std::byte> bytes, const fs::path& what) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_io("write", what);
    done += size_t(n);
  }
}

// The preferred way: an unnamed file (O_TMPFILE) in the destination's folder, given a name
// only once it is complete, so a kill -9 while writing leaves nothing behind. False when
// the filesystem has no O_TMPFILE; then the caller writes a named temporary file.
bool write_unnamed(const fs::path& path, const FileProducer& produce) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  Descriptor file{::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644)};
  if (file.fd < 0) {
    if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL || errno == ENOENT) return false;
    fail_io("create a file in", dir);
  }
  produce([&](std::span<const std::byte> bytes) { write_all(file.fd, bytes, path); });
  const std::string proc = fmt::format("/proc/self/fd/{}", file.fd);
  // A new destination is linked in place at once; an existing one is replaced by linking
  // beside it and renaming over it (linkat cannot replace), a window of two system calls.
  if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0) return true;
  if (errno != EEXIST) return false;  // /proc unavailable, say: the named way still works
  static std::atomic<unsigned> counter{0};
  fs::path temp = path;
  temp += fmt::format(".tmp.{}.{}", ::getpid(), counter++);
  if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) != 0) fail_io("link", temp);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    fail_io("rename into", path);
  }
  return true;
}

}  // namespace

void write_file_atomic(const fs::path& path, std::span<const std::byte> bytes) {
  write_file_atomic(path, [&](const FileSink& write) { write(bytes); });
}

void write_file_atomic(const fs::path& path, const FileProducer& produce) {
  // Renaming over a device, FIFO or folder would replace it (as root, /dev/null becomes a
  // regular file); a destination that exists must be a regular file.
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode))
    throw IoError(fmt::format("'{}' exists and is not a regular file ({}); refusing to replace it", path.string(),
                              S_ISDIR(existing.st_mode)    ? "a folder"
                              : S_ISFIFO(existing.st_mode) ? "a FIFO"
                              : S_ISCHR(existing.st_mode) || S_ISBLK(existing.st_mode) ? "a device"
                                                                                        : "not a file"));
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (write_unnamed(path, produce)) return;
  static std::atomic<unsigned> counter{0};
  fs::path temp = path;
  temp += fmt::format(".tmp.{}.{}", ::getpid(), counter++);
  {
    Descriptor file{::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (file.fd < 0) fail_io("create", temp);
    try {
      produce([&](std::span<const std::byte> bytes) { write_all(file.fd, bytes, temp); });
    } catch (...) {
      ::unlink(temp.c_str());
      throw;
    }
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    fail_io("rename into", path);
  }
}

void write_file_atomic(const fs::path& path, const std::string& text) {
  write_file_atomic(path, std::as_bytes(std::span(text.data(), text.size())));
}

void publish_folder(const fs::path& dir, const std::function<void(const fs::path&)>& fill) {
  const fs::path target = fs::absolute(dir).lexically_normal();
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  static std::atomic<unsigned> counter{0};
  const fs::path temp = parent / fmt::format(".{}.tmp.{}.{}", target.filename().string(), ::getpid(), counter++);
  try {
    fs::create_directories(parent);
    fs::create_directories(temp);
    fill(temp);
    if (!fs::exists(fs::symlink_status(target))) {
      fs::rename(temp, target);
      return;
    }
    // Swap the new folder in: the old one ends up at `temp`, and is removed.
    if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
      // No exchange on this filesystem: set the old folder aside, then move the new one in.
      const fs::path old = parent / fmt::format(".{}.old.{}.{}", target.filename().string(), ::getpid(), counter++);
      fs::rename(target, old);
      fs::rename(temp, target);
      fs::remove_all(old);
      return;
    }
    fs::remove_all(temp);
  } catch (const fs::filesystem_error& e) {
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    throw IoError(fmt::format("cannot write the folder '{}': {}", dir.string(), e.code().message()));
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    throw;
  }
}

std::shared_ptr<const MappedFile> MappedFile::open(const fs::path& path, Links links) {
  struct stat info {};
  Descriptor file{open_regular(path, info, links)};
  auto mapped = std::shared_ptr<MappedFile>(new MappedFile());
  mapped->size_ = size_t(info.st_size);
  if (mapped->size_ == 0) return mapped;
  void* data = ::mmap(nullptr, mapped->size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (data == MAP_FAILED) fail_io("map", path);
  mapped->data_ = static_cast<const std::byte*>(data);
  return mapped;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

fs::path resolve_under(const fs::path& dir, const std::string& relative, const std::string& what) {
  fs::path rel(relative);
  if (relative.empty()) throw IoError(fmt::format("{}: the path is empty", what));
  if (rel.is_absolute())
    throw IoError(fmt::format("{}: '{}' is absolute; paths must be relative to '{}'", what, relative, dir.string()));
  for (const auto& part : rel) {
    if (part == "..")
      throw IoError(fmt::format("{}: '{}' climbs out of '{}' with '..'", what, relative, dir.string()));
  }
  fs::path joined = dir / rel;
  // A symlink may still lead out: compare the resolved locations.
  std::error_code ec;
  fs::path real_dir = fs::weakly_canonical(dir, ec);
  fs::path real = fs::weakly_canonical(joined, ec);
  if (!ec) {
    auto [dir_end, real_it] = std::mismatch(real_dir.begin(), real_dir.end(), real.begin(), real.end());
    if (dir_end != real_dir.end())
      throw IoError(fmt::format("{}: '{}' leads outside '{}' (to '{}')", what, relative, dir.string(),
                                real.string()));
  }
  return joined;
}

}  // namespace cutcheck
