#include "reference/parallel.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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
// Chunks a job is cut into per thread taking part: enough that a slower thread's share
// can shrink, few enough that taking one (an atomic add) costs nothing beside it. A chunk
// carries at least min_work_per_chunk multiply-adds: a decode kernel prefetches the
// columns that follow its own, which go to waste where the next chunk starts, and chunks
// of 16K multiply-adds (bench512's projections) made two threads slower than one.
constexpr int64_t chunks_per_thread = 8;
constexpr double min_work_per_chunk = 1e6;

// How long a worker that has finished its piece, or a caller waiting for the workers,
// keeps polling before it sleeps. Consecutive contractions (a layer's projections, a
// decode step's ops) follow each other within microseconds; a thread that slept has to
// be woken by the kernel first, which on a virtual machine can take longer than a small
// contraction's whole piece.
constexpr auto spin_time = std::chrono::microseconds(200);

// Polls `ready` until it holds or spin_time has passed; true if it holds.
template <class Ready>
bool spin_until(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + spin_time;
  for (int polls = 0;; ++polls) {
    if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (polls % 64 == 63 && std::chrono::steady_clock::now() > until) return false;
  }
}

// Workers started on first use and kept for the life of the process; each parallel_for
// hands its chunks to them and waits. One parallel_for at a time uses the pool: a caller
// that finds it busy (another thread's run, or a kernel called from inside a piece) runs
// its pieces itself, which gives the same bits.
//
// The range is cut into more chunks than threads, and each thread, the caller among
// them, takes the next chunk left until none is: a thread that runs slower (on a virtual
// machine one vCPU streamed weights 1.6x slower than the other, its core shared with
// another guest) takes fewer chunks instead of holding up the rest with an equal share.
class Pool {
 public:
  // Runs fn over `chunks` chunks of [0, count) on up to `threads` threads unless the pool
  // is busy; false then.
  bool run(int64_t count, int64_t threads, int64_t chunks, const std::function<void(int64_t, int64_t)>& fn) {
    // A child forked after the workers started has none of them.
    if (getpid() != owner_) return false;
    std::unique_lock busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard lock(m_);
      while (int64_t(workers_.size()) < threads - 1) workers_.emplace_back([this, i = workers_.size()] { work(i); });
      fn_ = &fn;
      count_ = count;
      chunks_ = chunks;
      threads_ = threads;
      next_.store(0);
      pending_.store(threads - 1);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    take_chunks();
    if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock lock(m_);
      done_.wait(lock, [&] { return pending_.load() == 0; });
    }
    std::lock_guard lock(m_);
    fn_ = nullptr;
    if (std::exception_ptr failed = std::exchange(failed_, nullptr)) std::rethrow_exception(failed);
    return true;
  }

 private:
  // Runs chunks until none is left. After a chunk throws, the chunks not yet taken are
  // skipped; the first exception is kept for the caller to rethrow.
  void take_chunks() {
    for (int64_t c = next_.fetch_add(1); c < chunks_; c = next_.fetch_add(1)) {
      try {
        (*fn_)(count_ * c / chunks_, count_ * (c + 1) / chunks_);
      } catch (...) {
        next_.store(chunks_);
        std::lock_guard lock(m_);
        if (!failed_) failed_ = std::current_exception();
      }
    }
  }

  // Worker i joins every job run on more than i + 1 threads.
  void work(size_t i) {
    uint64_t seen = 0;
    for (;;) {
      const auto next = [&] { return generation_.load(std::memory_order_acquire) != seen; };
      if (!spin_until(next)) {
        std::unique_lock lock(m_);
        wake_.wait(lock, next);
      }
      int64_t threads;
      {
        std::lock_guard lock(m_);
        seen = generation_.load();
        threads = threads_;
      }
      if (int64_t(i) + 1 >= threads) continue;
      take_chunks();
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard lock(m_);  // the caller is polling, or waiting with m_ released
        done_.notify_one();
      }
    }
  }

  const pid_t owner_ = getpid();
  std::mutex busy_;  // held by the parallel_for using the pool
  std::mutex m_;     // guards failed_, the job's fields as they are set, and the waits
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  // fn_, count_, chunks_ and threads_ are written under m_ before a job's generation is
  // published and read after it is seen; they stay put until every worker is done.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t count_ = 0, chunks_ = 0, threads_ = 0;
  std::atomic<int64_t> next_ = 0;         // the next chunk to take
  std::atomic<int64_t> pending_ = 0;      // workers still taking chunks
  std::exception_ptr failed_;             // the first exception a chunk threw
  std::atomic<uint64_t> generation_ = 0;  // one more for every job handed out
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

// How many shares of `share` multiply-adds the work (count * cost_each) holds, at most
// `most`: taken in double and capped before the conversion, as the product can pass
// int64_t's range.
int64_t shares_of(int64_t count, double cost_each, double share, int64_t most) {
  return int64_t(std::min(double(count) * cost_each / share, double(most)));
}

int64_t pieces_for(int64_t count, double cost_each) {
  const int64_t pieces = std::min<int64_t>(current_threads, count);
  return std::min<int64_t>(pieces, std::max<int64_t>(1, shares_of(count, cost_each, min_work_per_thread, pieces)));
}

}  // namespace

void parallel_for(int64_t count, double cost_each, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t pieces = pieces_for(count, cost_each);
  if (pieces <= 1) return fn(0, count);
  const int64_t chunks =
      std::max(pieces, shares_of(count, cost_each, min_work_per_chunk, std::min(count, chunks_per_thread * pieces)));
  if (pool().run(count, pieces, chunks, fn)) return;
  // The pool is taken: the same pieces in turn on this thread.
  for (int64_t p = 0; p < pieces; ++p) fn(count * p / pieces, count * (p + 1) / pieces);
}

}  // namespace cutcheck
