// SPDX-License-Identifier: Apache-2.0
#include "config_cache.hpp"

#include <elf.h>
#include <fmt/format.h>
#include <link.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "replace_file.hpp"
#include "user_cache.hpp"

namespace nnergy::config_cache {
namespace {

// An entry: the header line, then length-prefixed fields in native byte order (an entry is
// only ever read by the executable that wrote it, on the same machine).
constexpr std::string_view k_magic = "nnergy-config-cache 1\n";

/// The GNU build ID of the object this code is linked into (a hash of its contents: any
/// rebuild that changes the code changes it), or "" without one.
std::string own_build_id() {
    struct search {
        uintptr_t address;
        std::string id;
    } s{reinterpret_cast<uintptr_t>(&own_build_id), {}};
    ::dl_iterate_phdr(
        [](struct dl_phdr_info* info, size_t, void* data) -> int {
            auto& s = *static_cast<search*>(data);
            bool mine = false;
            for (int i = 0; i < info->dlpi_phnum && !mine; ++i) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[i];
                const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
                mine = ph.p_type == PT_LOAD && s.address >= begin && s.address < begin + ph.p_memsz;
            }
            if (!mine) return 0;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_NOTE) continue;
                const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
                const char* end = p + ph.p_memsz;
                while (p + sizeof(ElfW(Nhdr)) <= end) {
                    const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
                    const char* name = p + sizeof(ElfW(Nhdr));
                    const char* desc = name + ((note->n_namesz + 3) & ~3u);
                    if (desc + note->n_descsz > end) break;
                    if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
                        std::memcmp(name, "GNU", 4) == 0) {
                        for (uint32_t k = 0; k < note->n_descsz; ++k)
                            s.id += fmt::format("{:02x}", static_cast<unsigned char>(desc[k]));
                        return 1;
                    }
                    p = desc + ((note->n_descsz + 3) & ~3u);
                }
            }
            return 1;
        },
        &s);
    return s.id;
}

/// What made this code: its build ID, else the running executable's size, modification time
/// and inode (a rebuild changes them).
const std::string& executable_stamp() {
    static const std::string stamp = [] {
        if (std::string id = own_build_id(); !id.empty())
            return fmt::format("{} build-id {}", NNERGY_VERSION, id);
        struct ::stat st {};
        if (::stat("/proc/self/exe", &st) != 0) return std::string();
        return fmt::format(
            "{} {} {} {}.{} {}", NNERGY_VERSION, static_cast<uint64_t>(st.st_size),
            static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_mtim.tv_sec),
            static_cast<int64_t>(st.st_mtim.tv_nsec), static_cast<uint64_t>(st.st_dev));
    }();
    return stamp;
}

uint64_t fnv1a(std::initializer_list<std::string_view> parts) noexcept {
    uint64_t h = 14695981039346656037ull;
    for (std::string_view part : parts) {
        for (unsigned char c : part) {
            h ^= c;
            h *= 1099511628211ull;
        }
        h *= 1099511628211ull;  // a NUL after each part: ("ab", "c") and ("a", "bc") differ
    }
    return h;
}

void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
void put_f64(std::string& out, double v) { out.append(reinterpret_cast<const char*>(&v), 8); }
void put_text(std::string& out, std::string_view s) {
    put_u64(out, s.size());
    out.append(s);
}

/// Reads fields back; any overrun marks the entry bad.
struct reader {
    std::string_view in;
    bool ok = true;

    bool take(void* to, size_t n) {
        if (!ok || in.size() < n) return ok = false;
        std::memcpy(to, in.data(), n);
        in.remove_prefix(n);
        return true;
    }
    uint64_t u64() {
        uint64_t v = 0;
        take(&v, 8);
        return v;
    }
    double f64() {
        double v = 0;
        take(&v, 8);
        return v;
    }
    std::string_view text() {
        const uint64_t n = u64();
        if (!ok || in.size() < n) {
            ok = false;
            return {};
        }
        std::string_view s = in.substr(0, n);
        in.remove_prefix(n);
        return s;
    }
};

std::filesystem::path entry_path(std::string_view schema, const std::filesystem::path& file) {
    const std::filesystem::path dir = directory();
    if (dir.empty() || executable_stamp().empty()) return {};
    // The build is part of the name: two builds on one machine (an installed one and a
    // development tree) keep their own entries instead of rewriting each other's on every run.
    return dir / fmt::format("{:016x}", fnv1a({executable_stamp(), schema, file.native()}));
}

bool read_whole(const std::filesystem::path& path, std::string& out) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    struct ::stat st {};
    bool ok = ::fstat(::fileno(f), &st) == 0 && st.st_size > 0;
    if (ok) {
        out.resize(static_cast<size_t>(st.st_size));
        ok = std::fread(out.data(), 1, out.size(), f) == out.size();
    }
    std::fclose(f);
    return ok;
}

bool is_entry_name(const std::string& name) noexcept {
    return name.size() == 16 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

/// Keeps the directory at `max_entries` or fewer: past that, the oldest entries (by the time
/// they were written) go, down to three quarters of it, so that most stores list nothing
/// twice. `kept` (the entry just written) stays. An entry is only ever a parse saved: losing
/// one costs one parse.
void evict_oldest(const std::filesystem::path& dir, const std::filesystem::path& kept) {
    std::error_code ec;
    std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> entries;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        std::error_code fec;
        if (!is_entry_name(e.path().filename().string()) || !e.is_regular_file(fec)) continue;
        if (e.path() == kept) continue;
        entries.emplace_back(e.last_write_time(fec), e.path());
    }
    if (ec || entries.size() + 1 <= max_entries) return;
    std::sort(entries.begin(), entries.end());
    const size_t keep = max_entries * 3 / 4 - 1;  // besides `kept`
    for (size_t i = 0; i + keep < entries.size(); ++i) {
        std::error_code rec;
        std::filesystem::remove(entries[i].second, rec);
    }
}

}  // namespace

std::filesystem::path directory() { return user_cache_path("NNERGY_CONFIG_CACHE", "config"); }

std::optional<config_values> load(std::string_view schema, const std::filesystem::path& file,
                                  std::string_view bytes) {
    const std::filesystem::path path = entry_path(schema, file);
    std::string entry;
    if (path.empty() || !read_whole(path, entry)) return std::nullopt;
    reader r{entry};
    if (entry.compare(0, k_magic.size(), k_magic) != 0) return std::nullopt;
    r.in.remove_prefix(k_magic.size());
    if (r.text() != executable_stamp() || r.text() != schema || r.text() != file.native() ||
        r.text() != bytes || !r.ok)
        return std::nullopt;
    const uint64_t count = r.u64();
    if (!r.ok || count > r.in.size()) return std::nullopt;
    config_values values(static_cast<size_t>(count));
    for (config_value& v : values) {
        v.name = r.text();
        v.kind = static_cast<nnergy_value_kind>(r.u64());
        v.bool_value = r.u64() != 0;
        v.int_value = static_cast<int64_t>(r.u64());
        v.float_value = r.f64();
        v.string_value = r.text();
        v.file = r.text();
        v.line = static_cast<uint32_t>(r.u64());
        v.source = r.text();
        v.unit = r.text();
        v.written_value = r.f64();
    }
    if (!r.ok || !r.in.empty()) return std::nullopt;
    return values;
}

void store(std::string_view schema, const std::filesystem::path& file, std::string_view bytes,
           const config_values& values) noexcept {
    try {
        const std::filesystem::path path = entry_path(schema, file);
        if (path.empty()) return;
        std::string out(k_magic);
        put_text(out, executable_stamp());
        put_text(out, schema);
        put_text(out, file.native());
        put_text(out, bytes);
        put_u64(out, values.size());
        for (const config_value& v : values) {
            put_text(out, v.name);
            put_u64(out, static_cast<uint64_t>(v.kind));
            put_u64(out, v.bool_value ? 1 : 0);
            put_u64(out, static_cast<uint64_t>(v.int_value));
            put_f64(out, v.float_value);
            put_text(out, v.string_value);
            put_text(out, v.file);
            put_u64(out, v.line);
            put_text(out, v.source);
            put_text(out, v.unit);
            put_f64(out, v.written_value);
        }
        // Written beside and put in place: a concurrent run reads the old entry or the new.
        std::error_code ec;
        std::filesystem::create_directories(path.parent_path(), ec);
        const std::string tmp =
            path.native() + fmt::format(".{}.tmp", static_cast<long>(::getpid()));
        std::FILE* f = std::fopen(tmp.c_str(), "wb");
        if (!f) return;
        const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
        if (std::fclose(f) != 0 || !ok || !replace_file(tmp, path.native())) {
            std::remove(tmp.c_str());
            spdlog::debug("could not write the configuration cache entry {}", path.string());
            return;
        }
        evict_oldest(path.parent_path(), path);
    } catch (...) {
    }
}

}  // namespace nnergy::config_cache
