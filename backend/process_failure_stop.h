// The stop rule for a backend that cannot run at all. When its first few runs all fail
// with one and the same process failure (a missing command: exit 127, a hang past the
// timeout, a crash by one signal at start-up), every later run would only repeat it, each
// after its own timeout: a campaign stops there, and `check --backend` skips the runs it
// has left, and either says why once. A run that succeeds, is refused (exit 77) or fails
// another way before then keeps the rule from applying for the rest of the run.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace cutcheck {

// One of the first runs: how the backend's process failed, empty when it did not (it
// succeeded, was refused, or its outputs were what failed).
struct RunFailure {
  std::string process_failure;  // "exited with 127", "timed out", "was killed by signal 11"
  std::string stderr_tail;
};

// When `first` holds `limit` runs and each failed with the same process failure, why the rest is not
// run: "WHO exited with 127 on each of the first 3 UNIT; CONSEQUENCE" (WHO: "the backend
// 'CMD'"), with a hint for 127 and the last line of the process's stderr. Otherwise empty.
std::string same_process_failure(const std::vector<RunFailure>& first, int limit, const std::string& who,
                                 const std::string& unit, const std::string& consequence);

// "the backend 'CMD'", as the stop rule names a backend.
std::string backend_named(const std::string& command);

// Applies the rule to the runs of a `check --backend` subject (shared by its runners, from
// any thread): once it applies, every run throws BackendFailed with the reason at once.
class ProcessFailureGate {
 public:
  ProcessFailureGate(std::string backend, int limit) : backend_(std::move(backend)), limit_(limit) {}
  TensorMap run(const std::function<TensorMap()>& backend_run);
  // Why the later runs are skipped ("" while they are not): same_process_failure's sentence.
  std::string stopped() const;

 private:
  void record(RunFailure f);

  mutable std::mutex mutex_;
  std::string backend_;
  int limit_;
  std::vector<RunFailure> first_;
  bool judged_ = false;
  std::string stopped_;
};

// Whether a failure message is the gate's (its runs were skipped, not failed anew).
bool skipped_by_failure_gate(const std::string& failure);
// The gate's reason within such a failure message (without what the property added).
std::string failure_stop_reason(const std::string& failure);

}  // namespace cutcheck
