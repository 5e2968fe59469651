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

}  // namespace cutcheck
