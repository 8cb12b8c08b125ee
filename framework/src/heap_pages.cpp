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

namespace detail {
// Defined outside the condition below and with external linkage, so that storing the parked
// block here keeps its allocation (a block whose address no one could read may be dropped).
void* heap_parked_block = nullptr;
}  // namespace detail

// A sanitizer's allocator keeps no brk heap: nothing to do under one.
#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_HUGEPAGE) && !NNERGY_UNDER_SANITIZER
namespace {
// The first caller's thread, main() in the command-line tool: its allocations come from the heap
// that brk grows; other threads have arenas of their own, left as they are.
const std::thread::id heap_thread = std::this_thread::get_id();

// Where the heap was last asked for huge pages up to (its end then); the heap thread's only.
uintptr_t advised_end = 0;

// Asks for huge pages on [from, end), the heap's unused top among it.
void advise(uintptr_t from, uintptr_t end) noexcept {
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    from = (from + page - 1) & ~(page - 1);
    // A block from elsewhere (an allocator of its own, as under a sanitizer, lives far above the
    // heap) is left alone; a failure (no huge pages in this kernel) leaves ordinary pages.
    if (end > from && end - from <= (uintptr_t{1} << 32))
        (void)madvise(reinterpret_cast<void*>(from), end - from, MADV_HUGEPAGE);
    advised_end = end;
}

// Where the heap's huge pages begin. A huge page backs only a whole aligned 2 MiB of the advised
// range, and the heap's top lies wherever address-space randomization put the heap, so what a
// run allocated below the next 2 MiB boundary was paged 4 KiB at a time: between 230 and 630
// page faults for a ResNet-50 analysis, by where its heap began. Yet a fresh huge page is not
// free either (the kernel clears all 2 MiB of it): a command that touches a few pages of heap
// (`--version`) is faster without one. So the first call parks the stretch up to a
// boundary in one block, never freed nor written (address space, not memory: only its header's
// page is touched, and was already), leaving `detail::heap_ordinary_bytes` of ordinary pages
// for the start-up's allocations before it; huge pages are asked for from the boundary on.
// `top` is where the heap's top began, as the block just freed there showed; returns the
// boundary.
uintptr_t park_heap_below_huge_page(uintptr_t top) noexcept {
    constexpr uintptr_t huge_page = uintptr_t{2} << 20;
    const uintptr_t boundary =
        (top + detail::heap_ordinary_bytes + huge_page - 1) & ~(huge_page - 1);
    // glibc's chunk layout: a block's header (two words) lies just below its start, and a
    // block of n bytes spans n plus one word, rounded up to 16 bytes. A block of `gap` minus
    // one word ends where the next block's header begins, so the next block starts `gap`
    // above this one.
    constexpr uintptr_t word = sizeof(size_t);
    const uintptr_t gap = boundary - detail::heap_ordinary_bytes - top;
    if (gap < 4 * word) return boundary;
    void* const block = std::malloc(gap - word);
    // Only a block from the heap's top moves it; one served from a free block elsewhere (a
    // heap that has freed blocks of that size) would hold memory for nothing: given back.
    if (reinterpret_cast<uintptr_t>(block) == top)
        detail::heap_parked_block = block;
    else
        std::free(block);
    return boundary;
}

void set_up_allocator() noexcept {
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
}
}  // namespace

bool back_heap_with_huge_pages() noexcept {
    set_up_allocator();
    if (std::this_thread::get_id() != heap_thread) return false;
    // A block larger than the heap's free blocks usually are comes from its top and grows it
    // now, by the pad too, before the new pages are touched: from it to the heap's end is what
    // no one has used yet. Cheap on a heap with few free blocks (a new process's, a trimmed
    // one); on one with many, a block this large first sorts them all.
    void* probe = std::malloc(16 << 20);
    if (!probe) return true;
    const uintptr_t from = reinterpret_cast<uintptr_t>(probe);
    std::free(probe);
    const uintptr_t huge_from = advised_end == 0 ? park_heap_below_huge_page(from) : from;
    advise(huge_from, reinterpret_cast<uintptr_t>(sbrk(0)));
    return true;
}

bool cover_heap_growth_with_huge_pages() noexcept {
    if (std::this_thread::get_id() != heap_thread) return false;
    if (advised_end == 0) return back_heap_with_huge_pages();
    // Only the end of the heap is read: no allocation, so no sorting of the free blocks.
    const uintptr_t end = reinterpret_cast<uintptr_t>(sbrk(0));
    if (end > advised_end) advise(advised_end, end);
    // A heap trimmed below what was advised grows back without the advice: cover it then.
    if (end < advised_end) advised_end = end;
    return true;
}
#else
bool back_heap_with_huge_pages() noexcept { return false; }
bool cover_heap_growth_with_huge_pages() noexcept { return false; }
#endif

}  // namespace nnergy
