// Splitting a kernel's independent output elements between threads. Each element is
// still computed by one thread in the order the op prescribes, so the bits do not depend
// on the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>

namespace cutcheck {

// The thread count kernels may use on this thread (RunOptions::threads while a run is on).
int kernel_threads();

class KernelThreads {  // sets kernel_threads() for a scope
 public:
  explicit KernelThreads(int threads);
  ~KernelThreads();

 private:
  int saved_;
};

// Calls fn(begin, end) over consecutive pieces of [0, count), together covering it once,
// on up to kernel_threads() threads; on this thread alone when the work (count *
// cost_each) is too small to be worth a thread. The pieces run on this thread and on
// workers started once and kept (a process-wide pool), each thread taking the next piece
// left, so a slower thread runs fewer; when another parallel_for holds the pool (a second
// thread's run, or a call from inside a piece) the pieces run in turn on the calling
// thread. Where each piece runs never changes what it computes. An exception from a piece
// is rethrown here once the pieces under way have finished; the pieces no thread had taken
// yet are skipped.
void parallel_for(int64_t count, double cost_each, const std::function<void(int64_t, int64_t)>& fn);

// The same for any callable, held by reference: a std::function made from a lambda with
// many captures would allocate a copy of it on every call (a decode step makes dozens).
template <class F>
  requires(!std::is_same_v<F, std::function<void(int64_t, int64_t)>>)
void parallel_for(int64_t count, double cost_each, const F& fn) {
  parallel_for(count, cost_each, std::function<void(int64_t, int64_t)>(std::cref(fn)));
}

}  // namespace cutcheck
