#include "reference/parallel.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace cutcheck {
namespace {

thread_local int current_threads = 1;
// Multiply-adds: below this, handing a piece to a worker costs more than it saves.
constexpr double min_work_per_thread = 5e4;

// Workers started on first use and kept for the life of the process; each parallel_for
// hands its pieces to them and waits. One parallel_for at a time uses the pool: a caller
// that finds it busy (another thread's run, or a kernel called from inside a piece) runs
// its pieces itself, which gives the same bits.
class Pool {
 public:
  // Runs fn over `pieces` pieces of [0, count) unless the pool is busy; false then.
  bool run(int64_t count, int64_t pieces, const std::function<void(int64_t, int64_t)>& fn) {
    // A child forked after the workers started has none of them.
    if (getpid() != owner_) return false;
    std::unique_lock busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard lock(m_);
      while (int64_t(workers_.size()) < pieces - 1) workers_.emplace_back([this, i = workers_.size()] { work(i); });
      fn_ = &fn;
      count_ = count;
      pieces_ = pieces;
      pending_ = pieces - 1;
      ++generation_;
    }
    wake_.notify_all();
    std::exception_ptr failed;
    try {
      fn(0, count / pieces);
    } catch (...) {
      failed = std::current_exception();  // rethrown once the workers are done with fn
    }
    std::unique_lock lock(m_);
    done_.wait(lock, [&] { return pending_ == 0; });
    fn_ = nullptr;
    if (!failed) failed = std::exchange(failed_, nullptr);
    failed_ = nullptr;
    if (failed) std::rethrow_exception(failed);
    return true;
  }

 private:
  // Worker i takes piece i + 1 of every job with that many pieces.
  void work(size_t i) {
    const int64_t piece = int64_t(i) + 1;
    uint64_t seen = 0;
    std::unique_lock lock(m_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (piece >= pieces_) continue;
      const std::function<void(int64_t, int64_t)>& fn = *fn_;
      const int64_t count = count_, pieces = pieces_;
      lock.unlock();
      std::exception_ptr failed;
      try {
        fn(count * piece / pieces, count * (piece + 1) / pieces);
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      if (failed && !failed_) failed_ = failed;
      if (--pending_ == 0) done_.notify_one();
    }
  }

  const pid_t owner_ = getpid();
  std::mutex busy_;  // held by the parallel_for using the pool
  std::mutex m_;     // guards everything below
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t count_ = 0, pieces_ = 0, pending_ = 0;
  std::exception_ptr failed_;  // the first a worker's piece threw
  uint64_t generation_ = 0;
};

// Never destroyed: the workers wait until the process ends. (Joining them at exit would
// hang in a child forked after they started, which has none of them.)
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

int kernel_threads() { return current_threads; }

KernelThreads::KernelThreads(int threads) : saved_(current_threads) { current_threads = std::max(threads, 1); }
KernelThreads::~KernelThreads() { current_threads = saved_; }

namespace {

int64_t pieces_for(int64_t count, double cost_each) {
  const int64_t pieces = std::min<int64_t>(current_threads, count);
  return std::min<int64_t>(pieces, std::max<int64_t>(1, int64_t(double(count) * cost_each / min_work_per_thread)));
}

}  // namespace

void parallel_for(int64_t count, double cost_each, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t pieces = pieces_for(count, cost_each);
  if (pieces <= 1) return fn(0, count);
  if (pool().run(count, pieces, fn)) return;
  // The pool is taken: the same pieces in turn on this thread.
  for (int64_t p = 0; p < pieces; ++p) fn(count * p / pieces, count * (p + 1) / pieces);
}

}  // namespace cutcheck
