// Fresh memory about to be written whole gets its pages in one call rather than a fault
// per page as it is first touched: on a virtual machine such a fault is dear (about
// 10 us on the one this project is measured on, where 1 MiB touched page by page cost
// 2.6 to 3.0 ms, asked for at once 1.4 to 1.8 ms, and in one huge page 0.2 ms). The
// memory holds the same bytes either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace cutcheck {

// Asks the kernel for the whole pages inside [data, data + bytes), writable, where it
// can (MADV_POPULATE_WRITE, Linux 5.14 and later); does nothing for fewer than a few
// pages, or where the call is not known or fails (the pages then come as touched).
void populate_pages(std::byte* data, uint64_t bytes);

// Fresh memory of `bytes` on a 2 MiB boundary, in transparent huge pages where the kernel
// gives them (MADV_HUGEPAGE; ordinary pages where THP is off), its pages asked for at
// once. A huge page is resident whole, so this is for memory written whole at once and
// kept (a small model's transposed weights), and only from huge_page_min_bytes, a quarter
// of a huge page, up (stories260K's copies are 0.99 MiB): less would leave most of its
// page unused. Null below that, or when the mapping fails.
constexpr uint64_t huge_page_min_bytes = uint64_t(512) << 10;
std::shared_ptr<std::byte> huge_page_memory(uint64_t bytes);

}  // namespace cutcheck
