#include "core/pages.h"

#include <sys/mman.h>
#include <unistd.h>

namespace cutcheck {

void populate_pages(std::byte* data, uint64_t bytes) {
#ifdef MADV_POPULATE_WRITE
  static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(data) + page - 1) / page * page, end = (uintptr_t(data) + bytes) / page * page;
  if (end >= begin + 4 * page) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)data, (void)bytes;
#endif
}

std::shared_ptr<std::byte> huge_page_memory(uint64_t bytes) {
  if (bytes < huge_page_min_bytes) return nullptr;
  constexpr uint64_t huge = uint64_t(2) << 20;
  const uint64_t rounded = (bytes + huge - 1) / huge * huge, mapped = rounded + huge;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* aligned = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(p) + huge - 1) / huge * huge);
#ifdef MADV_HUGEPAGE
  madvise(aligned, rounded, MADV_HUGEPAGE);  // refused where THP is off: ordinary pages then
#endif
  populate_pages(aligned, bytes);
  return std::shared_ptr<std::byte>(aligned, [p, mapped](std::byte*) { munmap(p, mapped); });
}

}  // namespace cutcheck
