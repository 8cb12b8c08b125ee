// SPDX-License-Identifier: Apache-2.0
/// \file heap_pages.hpp
/// \brief The process heap on transparent huge pages, where the kernel offers them on request.
#pragma once

#include <cstddef>

namespace nnergy {

/// Asks the kernel to back the heap with transparent huge pages (one page fault per 2 MiB
/// instead of per 4 KiB) and keeps large blocks in it. The first call also sets the allocator up
/// for it: the heap grows in large steps, keeps what it freed, and holds blocks that would
/// otherwise each be a mapping of their own. Each call grows the heap ahead of use (a large
/// block allocated and freed) and covers it: cheap on a heap with few free blocks (a new
/// process's, one just trimmed), not on one with many, which the large block first sorts; there,
/// cover_heap_growth_with_huge_pages(). The first call leaves the heap's next
/// `detail::heap_ordinary_bytes` on ordinary pages (a short command's start-up needs no more) and
/// starts the huge pages at the 2 MiB boundary after them. Without transparent huge pages, or with
/// them set to "never", it changes nothing. The heap of the thread that started the process
/// (main()), where the command line does its work; worker threads' arenas are left as they are.
/// Returns whether it applies here: false on other threads, other C libraries and under a
/// sanitizer's allocator (no brk heap).
bool back_heap_with_huge_pages() noexcept;

/// Covers what the heap has grown by since the last of these calls, without allocating (a system
/// call or two, whatever the heap holds): for the end of each stage of a run.
bool cover_heap_growth_with_huge_pages() noexcept;

namespace detail {
/// The heap's ordinary (4 KiB) pages that the first back_heap_with_huge_pages() leaves before
/// its huge pages: enough for a command's start-up.
inline constexpr std::size_t heap_ordinary_bytes = std::size_t{256} << 10;
/// The block that call parks up to them (from the heap's top then), kept for the process's
/// life; nullptr: none parked.
extern void* heap_parked_block;
}  // namespace detail

}  // namespace nnergy
