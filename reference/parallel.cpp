#include "reference/parallel.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace cutcheck {
namespace {

thread_local int current_threads = 1;
constexpr double min_work_per_thread = 2e5;  // multiply-adds: below this, starting a thread costs more

}  // namespace

int kernel_threads() { return current_threads; }

KernelThreads::KernelThreads(int threads) : saved_(current_threads) { current_threads = std::max(threads, 1); }
KernelThreads::~KernelThreads() { current_threads = saved_; }

void parallel_for(int64_t count, double cost_each, const std::function<void(int64_t, int64_t)>& fn) {
  int64_t pieces = std::min<int64_t>(current_threads, count);
  pieces = std::min<int64_t>(pieces, std::max<int64_t>(1, int64_t(double(count) * cost_each / min_work_per_thread)));
  if (pieces <= 1) {
    fn(0, count);
    return;
  }
  std::vector<std::thread> workers;
  for (int64_t p = 1; p < pieces; ++p)
    workers.emplace_back([&, p] { fn(count * p / pieces, count * (p + 1) / pieces); });
  fn(0, count / pieces);
  for (std::thread& w : workers) w.join();
}

}  // namespace cutcheck
