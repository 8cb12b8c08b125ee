// SPDX-License-Identifier: Apache-2.0
/// \file file_bytes.hpp
/// \brief For frontends: the bytes of a model file in memory, mapped from the system's file
/// cache where it can be, read otherwise. Header-only C++17 over sdk.hpp (POSIX).
///
/// Reading a file copies it into fresh memory, and on a virtual machine the first touch of each
/// fresh page is a fault that costs microseconds: a 3.6 MB graph took 16 ms to read and 1.2 ms
/// to map. A mapping shares the pages the system already holds.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace nnergy::reading {

/// A whole file's bytes, followed by a readable NUL byte (as a std::string's are), so that a
/// parser may look one byte past the end. Moves, does not copy.
///
/// A mapped file that another process cuts short while it is mapped loses the pages beyond its
/// new end, and touching one of them stops the process (SIGBUS); a model is mapped only for the
/// milliseconds its frontend reads it.
class file_bytes {
public:
    /// Reads `path`; throws sdk::error naming it: NNERGY_CODE_NOT_FOUND when it does not exist,
    /// NNERGY_CODE_INVALID_ARGUMENT for a directory ("is a directory, not `kind`"),
    /// NNERGY_CODE_IO_ERROR when it cannot be read.
    explicit file_bytes(const std::string& path, std::string_view kind = "a model file") {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            const int e = errno;
            if (e == ENOENT || e == ENOTDIR)
                throw sdk::error(path + ": no such file", NNERGY_CODE_NOT_FOUND);
            throw sdk::error(path + ": cannot open: " + std::strerror(e), NNERGY_CODE_IO_ERROR);
        }
        const fd_closer closer{fd};
        load(fd, path, kind);
    }
    /// Reads the file open as `fd` (which stays open, the caller's); `path` names it in messages.
    file_bytes(int fd, const std::string& path, std::string_view kind = "a model file") {
        load(fd, path, kind);
    }

    file_bytes(file_bytes&& other) noexcept
        : map_(std::exchange(other.map_, nullptr)),
          map_size_(std::exchange(other.map_size_, 0)),
          read_(std::move(other.read_)),
          size_(std::exchange(other.size_, 0)) {}
    file_bytes& operator=(file_bytes&& other) noexcept {
        if (this != &other) {
            release();
            map_ = std::exchange(other.map_, nullptr);
            map_size_ = std::exchange(other.map_size_, 0);
            read_ = std::move(other.read_);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    file_bytes(const file_bytes&) = delete;
    file_bytes& operator=(const file_bytes&) = delete;
    ~file_bytes() { release(); }

    std::string_view view() const noexcept {
        return map_ ? std::string_view(static_cast<const char*>(map_), size_)
                    : std::string_view(read_);
    }
    bool mapped() const noexcept { return map_ != nullptr; }

private:
    struct fd_closer {
        int fd;
        ~fd_closer() { ::close(fd); }
    };

    void load(int fd, const std::string& path, std::string_view kind) {
        struct stat info {};
        if (::fstat(fd, &info) != 0)
            throw sdk::error(path + ": cannot read: " + std::strerror(errno), NNERGY_CODE_IO_ERROR);
        if (S_ISDIR(info.st_mode))
            throw sdk::error(path + ": is a directory, not " + std::string(kind),
                             NNERGY_CODE_INVALID_ARGUMENT);
        if (S_ISREG(info.st_mode) && info.st_size > 0 &&
            map(fd, static_cast<std::size_t>(info.st_size)))
            return;
        read_all(fd, path, S_ISREG(info.st_mode) ? static_cast<std::size_t>(info.st_size) : 0);
    }

    /// Maps the file's `size` bytes and one anonymous page after them (zeros: the NUL after the
    /// end, whatever the size); false where the system will not map it (the caller reads it).
    bool map(int fd, std::size_t size) {
        const long page_size = ::sysconf(_SC_PAGESIZE);
        const std::size_t page = page_size > 0 ? static_cast<std::size_t>(page_size) : 4096;
        const std::size_t rounded = (size + page - 1) / page * page;
        if (rounded < size || rounded + page < rounded) return false;
        void* area = ::mmap(nullptr, rounded + page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (area == MAP_FAILED) return false;
        int flags = MAP_PRIVATE | MAP_FIXED;
#if defined(MAP_POPULATE)
        flags |= MAP_POPULATE;  // one call maps every page the cache holds, not a fault per few
#endif
        if (::mmap(area, size, PROT_READ, flags, fd, 0) == MAP_FAILED) {
            ::munmap(area, rounded + page);
            return false;
        }
        map_ = area;
        map_size_ = rounded + page;
        size_ = size;
        return true;
    }

    /// The file's bytes by read(): `expected` of a regular file at once, then whatever follows
    /// (a file that grew, or a pipe or device whose size is not known in advance).
    void read_all(int fd, const std::string& path, std::size_t expected) {
        try {
            read_.resize(expected);
        } catch (const std::bad_alloc&) {
            throw sdk::error(path + ": not enough memory to read it", NNERGY_CODE_IO_ERROR);
        }
        read_.resize(read_up_to(fd, read_.data(), expected, path));
        char chunk[65536];
        while (const std::size_t got = read_up_to(fd, chunk, sizeof chunk, path)) {
            read_.append(chunk, got);
            if (got < sizeof chunk) break;
        }
        size_ = read_.size();
    }

    static std::size_t read_up_to(int fd, char* to, std::size_t n, const std::string& path) {
        std::size_t done = 0;
        while (done < n) {
            const ssize_t got = ::read(fd, to + done, n - done);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0)
                throw sdk::error(path + ": read error: " + std::strerror(errno),
                                 NNERGY_CODE_IO_ERROR);
            if (got == 0) break;
            done += static_cast<std::size_t>(got);
        }
        return done;
    }

    void release() noexcept {
        if (map_) ::munmap(map_, map_size_);
        map_ = nullptr;
        map_size_ = 0;
    }

    void* map_ = nullptr;
    std::size_t map_size_ = 0;
    std::string read_;
    std::size_t size_ = 0;
};

}  // namespace nnergy::reading
