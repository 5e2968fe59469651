#include "conform/case_pool.h"

#include "core/interrupt.h"

namespace cutcheck {

CasePool::CasePool(Backend& backend, const ConformOptions& o, int jobs) : backend_(backend), o_(o) {
  for (int i = 0; i < std::max(1, jobs); ++i) threads_.emplace_back([this] { work_loop(); });
}

CasePool::~CasePool() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    tasks_.clear();
  }
  task_ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void CasePool::submit(int ticket, const Case& c, const fs::path& work) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back({ticket, c, work});
    ++pending_;
  }
  task_ready_.notify_one();
}

CasePool::Done CasePool::next() {
  std::unique_lock lock(mutex_);
  done_ready_.wait(lock, [this] { return !done_.empty(); });
  Done d = std::move(done_.front());
  done_.pop_front();
  --pending_;
  return d;
}

int CasePool::pending() const {
  std::lock_guard lock(mutex_);
  return pending_;
}

void CasePool::cancel() {
  std::lock_guard lock(mutex_);
  pending_ -= int(tasks_.size());
  tasks_.clear();
}

void CasePool::work_loop() {
  while (true) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      task_ready_.wait(lock, [this] { return closing_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // closing
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    Done d{task.ticket, CaseResult{task.c}, task.work};
    try {
      d.result = run_case(backend_, task.c, o_, task.work);
    } catch (const Interrupted& e) {
      d.interrupted = e.signal;
    } catch (...) {
      d.error = std::current_exception();
    }
    if (d.interrupted || d.error || d.result.verdict != Verdict::failed) {
      std::error_code ec;
      fs::remove_all(task.work, ec);
    }
    {
      std::lock_guard lock(mutex_);
      done_.push_back(std::move(d));
    }
    done_ready_.notify_one();
  }
}

}  // namespace cutcheck
