// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <cstdlib>  // defines __GLIBC__ where the C library is glibc
#include <nnergy/framework/heap_pages.hpp>
#include <nnergy/framework/sanitizers.hpp>
#include <thread>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace nnergy {

// A sanitizer's allocator keeps no brk heap: nothing to do under one.
#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_HUGEPAGE) && !NNERGY_UNDER_SANITIZER
namespace {
// The first caller's thread, main() in the command-line tool: its allocations come from the heap
// that brk grows; other threads have arenas of their own, left as they are.
const std::thread::id heap_thread = std::this_thread::get_id();
}  // namespace

bool back_heap_with_huge_pages() noexcept {
    static const bool set_up = [] {
        // A page fault costs microseconds, far more under a hypervisor: a model of 10,000 nodes
        // touches some 20,000 fresh 4 KiB pages on its way to a report. Blocks up to 32 MiB
        // stay in the heap (not a mapping each), which grows 256 MiB at a time (address space,
        // not memory: a page is backed only once touched) and keeps what it frees.
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TOP_PAD, 256 << 20);
        mallopt(M_TRIM_THRESHOLD, 512 << 20);
        return true;
    }();
    (void)set_up;
    if (std::this_thread::get_id() != heap_thread) return false;
    // A block larger than the heap's free blocks usually are comes from its top and grows it
    // now, by the pad too, before the new pages are touched: from it to the heap's end is what
    // no one has used yet.
    void* probe = std::malloc(16 << 20);
    if (!probe) return true;
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t from = (reinterpret_cast<uintptr_t>(probe) + page - 1) & ~(page - 1);
    std::free(probe);
    const uintptr_t end = reinterpret_cast<uintptr_t>(sbrk(0));
    // A block from elsewhere (an allocator of its own, as under a sanitizer, lives far above the
    // heap) is left alone; a failure (no huge pages in this kernel) leaves ordinary pages.
    if (end > from && end - from <= (uintptr_t{1} << 32))
        (void)madvise(reinterpret_cast<void*>(from), end - from, MADV_HUGEPAGE);
    return true;
}
#else
bool back_heap_with_huge_pages() noexcept { return false; }
#endif

}  // namespace nnergy
