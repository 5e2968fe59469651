// A backend under test. A C++ backend implements Backend and links against cutcheck;
// any other backend is a command, run through CommandBackend and the protocol of
// docs/conformance.md. Either way a backend lowers a program folder and runs it on
// inputs; what it returns is compared with the reference.
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "core/files.h"
#include "core/process.h"
#include "core/tensor.h"
#include "model/cut.h"

namespace cutcheck {

// A lowered program: run it as many times as wanted.
class Lowered {
 public:
  virtual ~Lowered() = default;
  // Throws on failure; NotYet means "this program is not supported".
  virtual TensorMap run(const TensorMap& inputs) = 0;
};

// With `conform --jobs N` (ConformOptions::jobs) lower() and run() are called from N
// threads at once, on different folders: an in-process backend that cannot take that runs
// with jobs = 1.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // The cuts and tp widths it takes; conformance counts others as unsupported.
  virtual bool supports(const Cut& cut, int64_t tp) const = 0;
  // Lowers the program in `folder` (program.txt and manifest.json, or chip0/, chip1/, ...
  // for a split). Throws on failure, NotYet when the program is not supported.
  virtual std::unique_ptr<Lowered> lower(const fs::path& folder) = 0;
  // The command that runs one program by hand, process per run: `COMMAND FOLDER --inputs
  // IN --outputs OUT` (docs/conformance.md). Empty for a backend that runs in process.
  virtual std::string command() const { return {}; }
};

// The reference interpreter, in process (FolderRun).
class ReferenceBackend : public Backend {
 public:
  std::string name() const override { return "reference"; }
  bool supports(const Cut&, int64_t) const override { return true; }
  std::unique_ptr<Lowered> lower(const fs::path& folder) override;
};

// A legitimate variant of the reference (harness/variants.h), in process: a correct
// backend under its declared precision, for measuring tolerances.
class VariantBackend : public Backend {
 public:
  explicit VariantBackend(std::string variant);
  std::string name() const override { return "variant " + variant_; }
  bool supports(const Cut&, int64_t) const override { return true; }
  std::unique_ptr<Lowered> lower(const fs::path& folder) override;

 private:
  std::string variant_;
};

// Exit code by which a command says "this cut is not supported".
constexpr int exit_unsupported = 77;

// A command that obeys the protocol: cutcheck appends `FOLDER --inputs IN --outputs OUT`
// to it and runs it under the time limit. Exit 0 with OUT written is success; exit 77 is
// "not supported"; anything else, a crash, a hang past the limit, or an OUT that is
// missing or malformed is a failure, reported with the command's stderr tail.
class CommandBackend : public Backend {
 public:
  CommandBackend(std::string command, double timeout_seconds);
  std::string name() const override { return command_; }
  bool supports(const Cut&, int64_t) const override { return true; }  // it says so by exit code
  std::unique_ptr<Lowered> lower(const fs::path& folder) override;
  std::string command() const override { return command_; }

 private:
  std::string command_;
  double timeout_;
};

// A failure of the backend itself (as against wrong outputs): crash, timeout, bad exit,
// unreadable outputs. Carries the tail of what the backend printed.
class BackendFailed : public Error {
 public:
  BackendFailed(const std::string& what, std::string stderr_tail, std::string process_failure = {}, std::string type = "protocol")
      : Error(what), stderr_tail(std::move(stderr_tail)), process_failure(std::move(process_failure)), type(std::move(type)) {}
  std::string stderr_tail;
  std::string process_failure;  // the process's own failure (exit code, signal, timeout); empty for bad outputs
  std::string type;   // "timeout", "crash", "exit" or "protocol" (CaseResult::failure_type)
};

// What a command backend's failed process (`r` not ok()) is reported as: `what`, with the
// process failure ("timed out", "was killed by signal 9", "exited with 3") and the failure type
// campaigns classify runs by.
BackendFailed process_failed(const ProcessResult& r, const std::string& what);

// The files of one run of a command backend: a scratch folder beside the program folder,
// the inputs written into it, and where the backend is to write its outputs. Removed
// with the object.
class RunFiles {
 public:
  RunFiles(const fs::path& program_folder, const TensorMap& inputs);
  ~RunFiles();
  RunFiles(const RunFiles&) = delete;
  RunFiles& operator=(const RunFiles&) = delete;
  const fs::path& inputs() const { return inputs_; }
  const fs::path& outputs() const { return outputs_; }
  // The outputs the backend says it wrote; BackendFailed ("protocol") when they cannot be
  // read. `claim` is what the backend said ("exited 0").
  TensorMap read_outputs(const std::string& claim, const std::string& stderr_tail) const;

 private:
  fs::path scratch_, inputs_, outputs_;
};

}  // namespace cutcheck
