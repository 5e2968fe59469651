#include "backend/process_failure_stop.h"

#include <fmt/format.h>

#include "backend/backend.h"
#include "core/text.h"

namespace cutcheck {
namespace {

// The gate's reason ends with this, so a failure can be told to be the gate's wherever it is
// reported (the message is all that crosses `check --jobs`' worker processes).
constexpr const char* skipped_runs = "every later run is skipped";

}  // namespace

std::string backend_named(const std::string& command) { return fmt::format("the backend '{}'", command); }

std::string same_process_failure(const std::vector<RunFailure>& first, int limit, const std::string& who,
                                 const std::string& unit, const std::string& consequence) {
  if (limit < 1 || first.size() != size_t(limit)) return "";
  for (const RunFailure& r : first)
    if (r.process_failure.empty() || r.process_failure != first.front().process_failure) return "";
  const RunFailure& r = first.front();
  std::string why = fmt::format("{} {} on each of the first {} {}; {}", who, r.process_failure, limit, unit,
                                consequence);
  if (r.process_failure == "exited with 127") why += " (127: the shell did not find the command?)";
  if (const std::string tail = last_line(r.stderr_tail); !tail.empty()) why += fmt::format("; its stderr ends: {}", tail);
  return why;
}

TensorMap ProcessFailureGate::run(const std::function<TensorMap()>& backend_run) {
  {
    std::lock_guard lock(mutex_);
    if (!stopped_.empty()) throw BackendFailed(stopped_, "");
  }
  try {
    TensorMap out = backend_run();
    record({});
    return out;
  } catch (const BackendFailed& e) {
    record({e.process_failure, e.stderr_tail});
    throw;
  } catch (const NotYet&) {  // a refusal: the backend runs
    record({});
    throw;
  }
}

std::string ProcessFailureGate::stopped() const {
  std::lock_guard lock(mutex_);
  return stopped_;
}

void ProcessFailureGate::record(RunFailure f) {
  std::lock_guard lock(mutex_);
  if (judged_) return;
  if (f.process_failure.empty()) {
    judged_ = true;
    return;
  }
  first_.push_back(std::move(f));
  if (first_.size() < size_t(limit_)) return;
  judged_ = true;
  stopped_ = same_process_failure(first_, limit_, backend_named(backend_), "runs", skipped_runs);
}

bool skipped_by_failure_gate(const std::string& failure) { return failure.find(skipped_runs) != std::string::npos; }

std::string failure_stop_reason(const std::string& failure) {
  const size_t at = failure.find("the backend '");
  return at == std::string::npos ? failure : failure.substr(at);
}

}  // namespace cutcheck
