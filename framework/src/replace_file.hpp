// SPDX-License-Identifier: Apache-2.0
// Putting a file written beside its destination in place: reports, the plugin catalog and
// configuration cache entries, each of which concurrent runs may read while it is replaced.
#pragma once

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE (glibc, _GNU_SOURCE)
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace nnergy {

/// Moves `temporary` over `destination`; false (errno set) on failure. Readers see the old file
/// or the new one, as with a rename. An existing destination is swapped with the temporary file,
/// which is then removed: ext4 (auto_da_alloc) writes a file's data out before a rename that
/// replaces another file, which makes that rename take milliseconds, and an exchange does not.
/// The file is then as durable as any written without fsync.
inline bool replace_file(const std::string& temporary, const std::string& destination) {
#if defined(__linux__) && defined(RENAME_EXCHANGE)
    if (::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, destination.c_str(), RENAME_EXCHANGE) ==
        0) {
        // The temporary name now holds what was there: an old file, removed. Should that have
        // become a directory since the caller looked, swap back and fail as a rename would.
        if (::unlink(temporary.c_str()) == 0 || errno == ENOENT) return true;
        const int e = errno == EPERM ? EISDIR : errno;
        ::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, destination.c_str(), RENAME_EXCHANGE);
        errno = e;
        return false;
    }
    // No destination yet (ENOENT), or a file system or kernel without exchange: a rename.
#endif
    return std::rename(temporary.c_str(), destination.c_str()) == 0;
}

}  // namespace nnergy
