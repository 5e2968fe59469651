#include "backend/backend.h"

#include <fmt/format.h>
#include "core/process.h"
#include "core/safetensors.h"
#include "core/temp_folder.h"
#include "core/text.h"
#include "harness/folder.h"
#include "harness/variants.h"

namespace cutcheck {
namespace {

class ReferenceLowered : public Lowered {
 public:
  explicit ReferenceLowered(FolderRun run) : run_(std::move(run)) {}
  TensorMap run(const TensorMap& inputs) override { return run_.run(inputs); }

 private:
  FolderRun run_;
};

class CommandLowered : public Lowered {
 public:
  CommandLowered(std::string command, fs::path folder, double timeout)
      : command_(std::move(command)), folder_(std::move(folder)), timeout_(timeout) {}

  TensorMap run(const TensorMap& inputs) override {
    RunFiles files(folder_, inputs);
    std::string line = fmt::format("{} {} --inputs {} --outputs {}", command_, shell_quote(folder_.string()),
                                   shell_quote(files.inputs().string()), shell_quote(files.outputs().string()));
    ProcessResult r = run_process(line, timeout_);
    if (r.exit_code == exit_unsupported)
      throw NotYet(r.stderr_tail.empty() ? std::string("the backend does not support this program (exit 77)")
                                         : fmt::format("the backend does not support this program: {}",
                                                       last_line(r.stderr_tail)));
    if (!r.ok()) throw process_failed(r, fmt::format("the backend {}", r.describe()));
    return files.read_outputs("exited 0", r.stderr_tail);
  }

 private:
  std::string command_;
  fs::path folder_;
  double timeout_;
};

}  // namespace

BackendFailed process_failed(const ProcessResult& r, const std::string& what) {
  const std::string how = r.timed_out ? "timed out"
                            : r.signal  ? fmt::format("was killed by signal {}", r.signal)
                                        : fmt::format("exited with {}", r.exit_code);
  return BackendFailed(what, r.stderr_tail, how, r.timed_out ? "timeout" : r.signal ? "crash" : "exit");
}

RunFiles::RunFiles(const fs::path& program_folder, const TensorMap& inputs)
    // mkdtemp: unique among runs of every worker and process sharing the folder.
    : scratch_(unique_folder(program_folder.has_parent_path() ? program_folder.parent_path() : ".", "run.")),
      inputs_(scratch_ / "inputs.safetensors"),
      outputs_(scratch_ / "outputs.safetensors") {
  try {
    write_safetensors(inputs_, inputs);
  } catch (...) {
    fs::remove_all(scratch_);
    throw;
  }
}

RunFiles::~RunFiles() {
  std::error_code ec;
  fs::remove_all(scratch_, ec);
}

TensorMap RunFiles::read_outputs(const std::string& claim, const std::string& stderr_tail) const {
  try {
    TensorMap outputs;
    // The backend's own file: a link to elsewhere is not followed.
    for (auto& [name, t] : read_safetensors(outputs_, Links::refuse).tensors)
      outputs.emplace(name, t.clone());  // before removing the file
    return outputs;
  } catch (const Error& e) {
    throw BackendFailed(
        fmt::format("the backend {} but the outputs it was to write (--outputs) cannot be read: {}", claim, e.what()),
        stderr_tail);
  }
}

std::unique_ptr<Lowered> ReferenceBackend::lower(const fs::path& folder) {
  return std::make_unique<ReferenceLowered>(FolderRun::open(folder));
}

VariantBackend::VariantBackend(std::string variant) : variant_(std::move(variant)) { find_variant(variant_); }

std::unique_ptr<Lowered> VariantBackend::lower(const fs::path& folder) {
  return std::make_unique<ReferenceLowered>(FolderRun::open_as(folder, find_variant(variant_)));
}

CommandBackend::CommandBackend(std::string command, double timeout_seconds)
    : command_(std::move(command)), timeout_(timeout_seconds) {}

std::unique_ptr<Lowered> CommandBackend::lower(const fs::path& folder) {
  return std::make_unique<CommandLowered>(command_, folder, timeout_);
}

}  // namespace cutcheck
