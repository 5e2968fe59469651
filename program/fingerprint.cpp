#include "program/fingerprint.h"

#include <fmt/format.h>

#include <set>

#include "core/sha256.h"
#include "program/folder.h"
#include "program/manifest.h"

namespace cutcheck {
namespace {

void add_folder(const fs::path& folder, std::string& summary) {
  for (const auto& [name, limit] :
       {std::pair{"program.txt", max_bytes::program_text}, std::pair{"manifest.json", max_bytes::manifest}}) {
    const std::string text = read_file(folder / name, limit);
    summary += fmt::format("{} {}\n", name, text.size()) + text;
  }
  const Manifest manifest = Manifest::read(folder / "manifest.json");
  std::set<std::string> files;
  for (const ManifestWeight& w : manifest.weights) files.insert(w.file);
  for (const std::string& file : files) {
    const fs::path path = fs::weakly_canonical(manifest.weights_dir(folder) / file);
    const auto mtime = fs::last_write_time(path).time_since_epoch().count();
    summary += fmt::format("weights {} {} {}\n", path.string(), fs::file_size(path), mtime);
  }
}

}  // namespace

std::string program_fingerprint(const fs::path& folder) {
  std::string summary;
  const std::vector<fs::path> chips = chip_folders(folder);
  if (chips.empty()) add_folder(folder, summary);
  for (const fs::path& chip : chips) add_folder(chip, summary);
  return sha256_hex(std::as_bytes(std::span(summary.data(), summary.size())));
}

}  // namespace cutcheck
