#include "conform/backend.h"

#include <fmt/format.h>
#include "core/process.h"
#include "core/safetensors.h"
#include "core/temp_folder.h"
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
    // mkdtemp: unique among runs of every worker and process sharing the folder.
    const fs::path scratch = unique_folder(folder_.has_parent_path() ? folder_.parent_path() : ".", "run.");
    fs::path in = scratch / "inputs.safetensors", out = scratch / "outputs.safetensors";
    write_safetensors(in, inputs);
    std::string line = fmt::format("{} {} --inputs {} --outputs {}", command_, shell_quote(folder_.string()),
                                   shell_quote(in.string()), shell_quote(out.string()));
    ProcessResult r = run_process(line, timeout_);
    if (r.exit_code == exit_unsupported) {
      fs::remove_all(scratch);
      throw NotYet(r.stderr_tail.empty() ? std::string("the backend does not support this program (exit 77)")
                                         : fmt::format("the backend does not support this program: {}",
                                                       last_line(r.stderr_tail)));
    }
    if (!r.ok()) {
      fs::remove_all(scratch);
      const std::string fault = r.timed_out ? "timed out"
                                : r.signal  ? fmt::format("was killed by signal {}", r.signal)
                                            : fmt::format("exited with {}", r.exit_code);
      throw BackendFailed(fmt::format("the backend {}", r.describe()), r.stderr_tail, fault,
                          r.timed_out ? "timeout" : r.signal ? "crash" : "exit");
    }
    try {
      TensorMap outputs;
      for (auto& [name, t] : read_safetensors(out).tensors) outputs.emplace(name, t.clone());  // before removing the file
      fs::remove_all(scratch);
      return outputs;
    } catch (const Error& e) {
      fs::remove_all(scratch);
      throw BackendFailed(fmt::format("the backend exited 0 but the outputs it was to write (--outputs) cannot be read: {}",
                                      e.what()),
                          r.stderr_tail);
    }
  }

 private:
  static std::string last_line(const std::string& text) {
    std::string t = text;
    while (!t.empty() && t.back() == '\n') t.pop_back();
    size_t at = t.rfind('\n');
    return at == std::string::npos ? t : t.substr(at + 1);
  }

  std::string command_;
  fs::path folder_;
  double timeout_;
};

}  // namespace

std::unique_ptr<Lowered> ReferenceBackend::lower(const fs::path& folder) {
  return std::make_unique<ReferenceLowered>(FolderRun::open(folder));
}

VariantBackend::VariantBackend(std::string variant) : variant_(std::move(variant)) { find_variant(variant_); }

std::unique_ptr<Lowered> VariantBackend::lower(const fs::path& folder) {
  return std::make_unique<ReferenceLowered>(FolderRun::open(folder, find_variant(variant_).run));
}

CommandBackend::CommandBackend(std::string command, double timeout_seconds)
    : command_(std::move(command)), timeout_(timeout_seconds) {}

std::unique_ptr<Lowered> CommandBackend::lower(const fs::path& folder) {
  return std::make_unique<CommandLowered>(command_, folder, timeout_);
}

}  // namespace cutcheck
