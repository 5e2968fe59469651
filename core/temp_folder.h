// Temporary folders: one place that makes them (under $TMPDIR, else /tmp) and removes
// them on every way out of their scope, an exception or an interrupt included.
#pragma once

#include <filesystem>
#include <string>

namespace cutcheck {

namespace fs = std::filesystem;

class TempFolder {
 public:
  // Makes $TMPDIR/cutcheck-<purpose>-XXXXXX (mkdtemp); throws IoError when it cannot.
  explicit TempFolder(const std::string& purpose);
  ~TempFolder();  // removes the folder and everything in it
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;

  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Makes a new folder PARENT/<prefix>XXXXXX (mkdtemp) and returns it: unique among every
// process sharing PARENT, threads and other machines' containers included, where a pid
// and a counter are not. Throws IoError when it cannot.
fs::path unique_folder(const fs::path& parent, const std::string& prefix);

// The folder temporary folders go under: $TMPDIR when it names a folder, else /tmp.
fs::path temp_root();

}  // namespace cutcheck
