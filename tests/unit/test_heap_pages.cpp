// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nnergy/framework/heap_pages.hpp>
#include <sstream>
#include <string>
#include <vector>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

namespace {

/// The kernel's transparent huge page mode: "always", "madvise", "never", or "" if it has none.
std::string huge_page_mode() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    if (!std::getline(f, line)) return "";
    const size_t open = line.find('['), close = line.find(']');
    if (open == std::string::npos || close == std::string::npos) return "";
    return line.substr(open + 1, close - open - 1);
}

/// The smaps field `key` of the mapping that holds `address`, or "" if it has none.
std::string mapping_field(uintptr_t address, const std::string& key) {
    std::ifstream f("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(f, line)) {
        uintptr_t lo = 0, hi = 0;
        char dash = 0;
        std::istringstream range(line);
        if (range >> std::hex >> lo >> dash >> hi && dash == '-') {
            inside = lo <= address && address < hi;
            continue;
        }
        if (inside && line.rfind(key + ":", 0) == 0) {
            std::istringstream rest(line.substr(key.size() + 1));
            std::string value;
            rest >> value;
            return value;
        }
    }
    return "";
}

/// Calls back_heap_with_huge_pages(); false (with a warning: nothing to check) where it does not
/// apply or the kernel offers no huge pages on request.
bool huge_pages_on_request() {
    const std::string mode = huge_page_mode();
    if (!nnergy::back_heap_with_huge_pages() || (mode != "madvise" && mode != "always")) {
        WARN("no brk heap, or no transparent huge pages on request here (mode '"
             << mode << "'): nothing to check");
        return false;
    }
    return true;
}

/// Checks a mapping's THPeligible field, where the kernel's smaps has one.
void check_eligible(const std::string& eligible) {
    if (eligible.empty()) {
        WARN("this kernel's smaps has no THPeligible field: nothing to check");
        return;
    }
    CHECK(eligible == "1");
}

}  // namespace

// Where the kernel offers huge pages on request, a block the command line allocates after the
// call lies in the heap and may be backed by them: one page fault per 2 MiB, not per 4 KiB.
TEST_CASE("the heap is eligible for transparent huge pages after the call", "[heap_pages]") {
#if defined(__linux__) && defined(__GLIBC__)
    if (!huge_pages_on_request()) return;
    // Larger than glibc's default threshold for a mapping of its own, and than any block freed
    // before: it comes from the heap's top.
    void* block = std::malloc(24 << 20);
    REQUIRE(block != nullptr);
    const uintptr_t at = reinterpret_cast<uintptr_t>(block);
    CHECK(at < reinterpret_cast<uintptr_t>(sbrk(0)));  // in the heap
    // Its middle: its first page may share one with what came before it.
    const std::string eligible = mapping_field(at + (12 << 20), "THPeligible");
    std::free(block);
    check_eligible(eligible);
#else
    WARN("glibc on Linux only");
#endif
}

// A stage that grows the heap beyond what was covered gets the new part covered at its end,
// without the large block back_heap_with_huge_pages() allocates (which sorts every free block
// of a heap that holds many).
TEST_CASE("the heap's growth is covered by huge pages after the stage's call", "[heap_pages]") {
#if defined(__linux__) && defined(__GLIBC__)
    if (!huge_pages_on_request()) return;
    // Blocks kept in the heap (below the allocator's 32 MiB threshold for a mapping), never
    // touched, until the heap has grown past its end at the call: address space, not memory.
    const uintptr_t covered_end = reinterpret_cast<uintptr_t>(sbrk(0));
    std::vector<void*> blocks;
    while (blocks.size() < 64 &&
           (blocks.empty() || reinterpret_cast<uintptr_t>(blocks.back()) < covered_end)) {
        blocks.push_back(std::malloc(16 << 20));
        REQUIRE(blocks.back() != nullptr);
    }
    const uintptr_t last = reinterpret_cast<uintptr_t>(blocks.back());
    REQUIRE(last >= covered_end);                          // beyond the covered part
    REQUIRE(last < reinterpret_cast<uintptr_t>(sbrk(0)));  // in the heap
    CHECK(nnergy::cover_heap_growth_with_huge_pages());
    const std::string eligible = mapping_field(last + (8 << 20), "THPeligible");
    for (void* b : blocks) std::free(b);
    check_eligible(eligible);
#else
    WARN("glibc on Linux only");
#endif
}

// The first call parks the heap's top so that the ordinary pages it leaves end at a 2 MiB
// boundary: the huge pages then start there, wherever randomization put the heap.
TEST_CASE("the first call leaves its ordinary pages just below a 2 MiB boundary", "[heap_pages]") {
#if defined(__linux__) && defined(__GLIBC__)
    if (!nnergy::back_heap_with_huge_pages()) {
        WARN("no brk heap here: nothing to check");
        return;
    }
    void* const parked = nnergy::detail::heap_parked_block;
    if (parked == nullptr) {
        WARN("the heap's top was at the place already: nothing parked");
        return;
    }
    // glibc: the block after one in use starts one word beyond the end of its usable size
    // (the word holds the next block's size).
    const uintptr_t next =
        reinterpret_cast<uintptr_t>(parked) + malloc_usable_size(parked) + sizeof(size_t);
    CHECK((next + nnergy::detail::heap_ordinary_bytes) % (uintptr_t{2} << 20) == 0);
    // Parked, not given back: a later call parks nothing more.
    CHECK(nnergy::back_heap_with_huge_pages());
    CHECK(nnergy::detail::heap_parked_block == parked);
#else
    WARN("glibc on Linux only");
#endif
}
