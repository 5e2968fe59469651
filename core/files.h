// File handling with the guarantees cutcheck promises: bounded reads, atomic writes,
// mapped (never copied) weights, and paths that cannot leave their folder.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace cutcheck {

namespace fs = std::filesystem;

// Whether the last component of a path to read may be a symbolic link. A file another
// program wrote for cutcheck (a backend's outputs, an engine's results) must be that file:
// through a link, cutcheck would read, and judge, a file of the link's choosing.
enum class Links { follow, refuse };

// The largest file of each kind that cutcheck reads: generous for what it writes itself,
// and what a wrong or hostile file may cost at most (a JSON file takes about 8 times its
// size once parsed). One place, so that each limit is stated once.
namespace max_bytes {
inline constexpr uint64_t spec = uint64_t{1} << 20;            // spec.json, a checkpoint's config.json
inline constexpr uint64_t manifest = uint64_t{64} << 20;       // manifest.json, a checkpoint's index
inline constexpr uint64_t program_text = uint64_t{256} << 20;  // program.txt
inline constexpr uint64_t case_record = uint64_t{16} << 20;    // a reproducer's case.json (rows <= 4096)
inline constexpr uint64_t engine_case_record = uint64_t{1} << 30;  // up to 64 prompts of up to 2^20 tokens
inline constexpr uint64_t shard_report = uint64_t{128} << 20;      // a conform --json report: ~50,000 cases
}  // namespace max_bytes

// Reads a whole regular file; refuses one larger than `limit` before reading (each kind
// of input has its limit, above), and with Links::refuse a symbolic link, unopened.
std::string read_file(const fs::path& path, uint64_t limit, Links links = Links::follow);

// Writes through a temporary file beside `path` and renames it into place, so a
// reader never sees a half-written file. Creates missing parent folders.
void write_file_atomic(const fs::path& path, std::span<const std::byte> bytes);
void write_file_atomic(const fs::path& path, const std::string& text);
// The same for a file too large to hold in memory: `produce` hands its bytes to the sink
// piece by piece (it may be called a second time if the first way of writing fails).
using FileSink = std::function<void(std::span<const std::byte>)>;
using FileProducer = std::function<void(const FileSink&)>;
void write_file_atomic(const fs::path& path, const FileProducer& produce);

// Makes folder `dir` hold exactly what `fill` writes into the empty folder it is handed:
// a sibling temporary folder, which then takes the place of `dir` in one step (an atomic
// exchange where the filesystem has one; else the old folder is set aside first). On any
// failure the temporary folder is removed and `dir` is left as it was. Callers check
// first that `dir`, if it exists, is theirs to replace.
void publish_folder(const fs::path& dir, const std::function<void(const fs::path&)>& fill);

// A read-only memory mapping of a whole file.
class MappedFile {
 public:
  static std::shared_ptr<const MappedFile> open(const fs::path& path, Links links = Links::follow);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  MappedFile() = default;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Resolves `relative` inside `dir`. Refuses absolute paths, "..", and symlinks that
// lead outside `dir`, with an IoError naming `what` (for example a manifest entry).
fs::path resolve_under(const fs::path& dir, const std::string& relative, const std::string& what);

}  // namespace cutcheck
