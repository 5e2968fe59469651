// The files and folders a command writes, declared with their options and checked before any
// work: a report that cannot be written would otherwise be found out only once the campaign
// is over, and a reproducer folder only once a failure has been shrunk. A path given on the
// command line is checked while it is parsed (exit 2, naming the option, whatever else is
// wrong with the command line); a default, when the command starts (check()).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cutcheck::cli {

class Destinations {
 public:
  // A file the command writes or replaces (--help shows FILE), or a folder it creates or
  // writes into (FOLDER).
  enum class Kind { file, folder };

  // Declares the option `name` of `cmd`, stored in `path`, which must outlive the
  // Destinations. A destination cannot be written when it exists and is not a regular file
  // (a file) or not a folder (a folder), or when its nearest existing folder is not a folder
  // or refuses a new file (tried by making one, removed at once).
  CLI::Option* add(CLI::App* cmd, const std::string& name, std::string& path, const std::string& help, Kind kind);

  // Throws IoError (exit 2) naming the option for the first default that cannot be written;
  // empty defaults (nothing to write unless the option is given) are skipped. A command
  // whose destinations have defaults calls it before any work that writes to them.
  void check() const;

 private:
  struct Entry {
    const CLI::Option* option;
    const std::string* path;
    Kind kind;
  };
  std::vector<Entry> entries_;
};

}  // namespace cutcheck::cli
