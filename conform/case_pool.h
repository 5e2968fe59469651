// Running cases on several threads: each case runs the backend and the reference in a
// folder of its own, and the caller takes the results as they finish, in any order. The
// campaign puts them back in case order, so that its report does not depend on how many
// ran at once.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "conform/campaign.h"

namespace cutcheck {

class CasePool {
 public:
  CasePool(Backend& backend, const ConformOptions& o, int jobs);
  ~CasePool();  // drops what has not started, and waits for what has
  CasePool(const CasePool&) = delete;
  CasePool& operator=(const CasePool&) = delete;

  struct Done {
    int ticket;
    CaseResult result;
    fs::path work;        // kept when the case failed, removed otherwise
    int interrupted = 0;  // the signal that stopped the run; the result is then empty
    std::exception_ptr error = {};  // cutcheck's own error preparing the case; the result is then empty
  };

  // Runs `c` in `work` (created) once a thread is free.
  void submit(int ticket, const Case& c, const fs::path& work);
  // Blocks until a submitted case finishes; call only while pending() > 0.
  Done next();
  // Submitted and not yet taken by next().
  int pending() const;
  // Drops the cases not started yet; they are no longer pending.
  void cancel();

 private:
  struct Task {
    int ticket;
    Case c;
    fs::path work;
  };
  void work_loop();

  Backend& backend_;
  const ConformOptions& o_;
  mutable std::mutex mutex_;
  std::condition_variable task_ready_, done_ready_;
  std::deque<Task> tasks_;
  std::deque<Done> done_;
  int pending_ = 0;
  bool closing_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace cutcheck
