// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nnergy/framework/heap_pages.hpp>
#include <sstream>
#include <string>

#if defined(__linux__) && defined(__GLIBC__)
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

}  // namespace

// Where the kernel offers huge pages on request, a block the command line allocates after the
// call lies in the heap and may be backed by them: one page fault per 2 MiB, not per 4 KiB.
TEST_CASE("the heap is eligible for transparent huge pages after the call", "[heap_pages]") {
#if defined(__linux__) && defined(__GLIBC__)
    const std::string mode = huge_page_mode();
    if (!nnergy::back_heap_with_huge_pages() || (mode != "madvise" && mode != "always")) {
        WARN("no brk heap, or no transparent huge pages on request here (mode '"
             << mode << "'): nothing to check");
        return;
    }
    // Larger than glibc's default threshold for a mapping of its own, and than any block freed
    // before: it comes from the heap's top.
    void* block = std::malloc(24 << 20);
    REQUIRE(block != nullptr);
    const uintptr_t at = reinterpret_cast<uintptr_t>(block);
    CHECK(at < reinterpret_cast<uintptr_t>(sbrk(0)));  // in the heap
    // Its middle: its first page may share one with what came before it.
    const std::string eligible = mapping_field(at + (12 << 20), "THPeligible");
    std::free(block);
    if (eligible.empty()) {
        WARN("this kernel's smaps has no THPeligible field: nothing to check");
        return;
    }
    CHECK(eligible == "1");
#else
    WARN("glibc on Linux only");
#endif
}
