// `cutcheck export-onnx ...` runs `cutcheck-export-onnx ...` from beside the cutcheck
// executable (found through /proc/self/exe, so in the build and the install tree alike, and
// through symlinks), handing it every argument after the command's name. Only that program
// links ONNX and protobuf: every other cutcheck process starts without loading them.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "tools/commands.h"

namespace cutcheck::cli {
namespace {

[[noreturn]] void run_beside_self(const std::string& program, std::vector<std::string> args) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(fmt::format("cannot find cutcheck's own executable (/proc/self/exe: {})", ec.message()));
  const fs::path path = self.parent_path() / program;
  if (!fs::exists(path, ec))
    throw Error(fmt::format("{} is missing: the command needs it installed beside {} (build or install the "
                            "target {} with cutcheck)",
                            path.string(), self.string(), program));
  std::vector<char*> argv;
  std::string argv0 = path.string();
  argv.push_back(argv0.data());
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execv(path.c_str(), argv.data());
  throw Error(fmt::format("cannot run {}: {}", path.string(), std::strerror(errno)));
}

}  // namespace

void add_export_onnx(CLI::App& app) {
  auto* cmd = app.add_subcommand("export-onnx", export_onnx_summary);
  // Everything after the name, --help included, is the exporter's to parse.
  cmd->set_help_flag();
  cmd->prefix_command();
  cmd->callback([cmd] { run_beside_self(export_onnx_program, cmd->remaining()); });
}

}  // namespace cutcheck::cli
