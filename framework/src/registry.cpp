// SPDX-License-Identifier: Apache-2.0
// Loading plugin libraries and negotiating with them. A library that cannot be used is skipped
// with a reason naming the file; nothing a plugin does at negotiation may stop the host.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/registry.hpp>
#include <utility>

#include "replace_file.hpp"
#include "user_cache.hpp"

namespace nnergy {
namespace {

std::string to_string(nnergy_string_view s) {
    return s.data ? std::string(s.data, s.size) : std::string();
}

// Host-side statuses: the host allocates and frees them (see host_api.cpp).
std::string take_status_message(nnergy_status* s) {
    const nnergy_host_api* api = host_api();
    std::string msg = to_string(api->status_message(s));
    api->status_release(s);
    return msg;
}

// Copies the first min(declared, sizeof(T)) bytes of a plugin struct; the rest stays zero.
template <class T>
T read_prefix(const T* src) {
    T out{};
    if (!src) return out;
    size_t n = std::min(src->struct_size, sizeof(T));
    std::memcpy(static_cast<void*>(&out), src, n);
    out.struct_size = n;
    return out;
}

size_t vtbl_size(nnergy_component_kind kind) {
    switch (kind) {
        case NNERGY_KIND_FRONTEND:
            return NNERGY_STRUCT_SIZE(nnergy_frontend_vtbl, load);
        case NNERGY_KIND_PARTITIONER:
            return NNERGY_STRUCT_SIZE(nnergy_partitioner_vtbl, partition);
        case NNERGY_KIND_ARCHITECTURE:
            return NNERGY_STRUCT_SIZE(nnergy_architecture_vtbl, map_kernel);
        case NNERGY_KIND_ESTIMATOR:
            return NNERGY_STRUCT_SIZE(nnergy_estimator_vtbl, estimate);
        case NNERGY_KIND_REPORTER:
            return NNERGY_STRUCT_SIZE(nnergy_reporter_vtbl, report);
    }
    return 0;
}

// The required function of each vtbl (its first member after struct_size).
bool vtbl_function_present(nnergy_component_kind kind, const void* vtbl) {
    switch (kind) {
        case NNERGY_KIND_FRONTEND:
            return static_cast<const nnergy_frontend_vtbl*>(vtbl)->load != nullptr;
        case NNERGY_KIND_PARTITIONER:
            return static_cast<const nnergy_partitioner_vtbl*>(vtbl)->partition != nullptr;
        case NNERGY_KIND_ARCHITECTURE:
            return static_cast<const nnergy_architecture_vtbl*>(vtbl)->map_kernel != nullptr;
        case NNERGY_KIND_ESTIMATOR:
            return static_cast<const nnergy_estimator_vtbl*>(vtbl)->estimate != nullptr;
        case NNERGY_KIND_REPORTER:
            return static_cast<const nnergy_reporter_vtbl*>(vtbl)->report != nullptr;
    }
    return false;
}

bool valid_kind(int kind) { return kind >= NNERGY_KIND_FRONTEND && kind <= NNERGY_KIND_REPORTER; }

bool is_library_file(const std::filesystem::path& p) {
    std::string name = p.filename().string();
    return name.size() > 3 && (name.ends_with(".so") || name.find(".so.") != std::string::npos);
}

}  // namespace

std::string_view kind_name(nnergy_component_kind kind) noexcept {
    switch (kind) {
        case NNERGY_KIND_FRONTEND:
            return "frontend";
        case NNERGY_KIND_PARTITIONER:
            return "partitioner";
        case NNERGY_KIND_ARCHITECTURE:
            return "architecture";
        case NNERGY_KIND_ESTIMATOR:
            return "estimator";
        case NNERGY_KIND_REPORTER:
            return "reporter";
    }
    return "unknown";
}

std::string kind_with_article(nnergy_component_kind kind) {
    const std::string_view name = kind_name(kind);
    return (std::string_view("aeiou").find(name.front()) != std::string_view::npos ? "an " : "a ") +
           std::string(name);
}

namespace {

// What negotiating with one library gave: the library and its components, or why it is skipped.
struct negotiation {
    std::shared_ptr<plugin_library> library;
    std::vector<component_entry> components;
    std::string failure;
};

negotiation negotiate_library(const std::filesystem::path& file) {
    negotiation out;
    auto skip = [&](std::string reason) {
        out.failure = std::move(reason);
        out.library.reset();
        out.components.clear();
        return std::move(out);
    };

    auto lib = std::make_shared<boost::dll::shared_library>();
    {
        std::error_code bec;
        lib->load(boost::dll::fs::path(file.string()),
                  boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, bec);
        if (bec) {
            const char* why = ::dlerror();
            return skip(fmt::format("cannot load: {}", why ? why : bec.message()));
        }
    }
    if (!lib->has(NNERGY_PLUGIN_ENTRY_SYMBOL))
        return skip(fmt::format("no entry symbol '{}'", NNERGY_PLUGIN_ENTRY_SYMBOL));
    auto negotiate = lib->get<nnergy_status*(const nnergy_host_info*, nnergy_plugin_info*)>(
        NNERGY_PLUGIN_ENTRY_SYMBOL);

    static const std::string host_version = NNERGY_VERSION;
    nnergy_host_info host{};
    host.struct_size = sizeof host;
    host.abi_major = NNERGY_ABI_MAJOR;
    host.abi_minor = NNERGY_ABI_MINOR;
    host.api = host_api();
    host.host_version = {host_version.data(), host_version.size()};
    nnergy_plugin_info raw{};
    raw.struct_size = sizeof raw;

    nnergy_status* status = nullptr;
    try {
        status = negotiate(&host, &raw);
    } catch (...) {
        return skip("negotiation threw an exception (plugins must not let exceptions escape)");
    }
    if (status) return skip("negotiation failed: " + take_status_message(status));
    if (raw.abi_major != NNERGY_ABI_MAJOR)
        return skip(fmt::format("incompatible ABI major: plugin {}.{}, host {}.{}", raw.abi_major,
                                raw.abi_minor, NNERGY_ABI_MAJOR, NNERGY_ABI_MINOR));
    if (raw.abi_minor > NNERGY_ABI_MINOR)
        return skip(fmt::format("plugin ABI {}.{} is newer than the host's {}.{}", raw.abi_major,
                                raw.abi_minor, NNERGY_ABI_MAJOR, NNERGY_ABI_MINOR));
    if (raw.struct_size < NNERGY_STRUCT_SIZE(nnergy_plugin_info, component_count))
        return skip(fmt::format("plugin info struct_size {} is smaller than the ABI 1.0 minimum {}",
                                raw.struct_size,
                                NNERGY_STRUCT_SIZE(nnergy_plugin_info, component_count)));
    nnergy_plugin_info info = read_prefix(&raw);

    auto library = std::make_shared<plugin_library>();
    library->file = file;
    library->name = to_string(info.name);
    library->version = to_string(info.version);
    library->vendor = to_string(info.vendor);
    library->license = to_string(info.license);
    library->description = to_string(info.description);
    library->abi_major = info.abi_major;
    library->abi_minor = info.abi_minor;
    library->handle = lib;
    if (library->name.empty()) return skip("plugin has no name");
    if (library->license.empty())
        return skip("plugin declares no license (an SPDX identifier is required)");
    if (info.component_count > 0 && !info.components)
        return skip("component_count is not zero but components is NULL");

    for (size_t i = 0; i < info.component_count; ++i) {
        // Plugins of another minor have another sizeof: step by the plugin's struct_size.
        const nnergy_component* c = NNERGY_ARRAY_AT(nnergy_component, info.components, i);
        if (c->struct_size < NNERGY_STRUCT_SIZE(nnergy_component, vtbl))
            return skip(
                fmt::format("component #{} struct_size {} is smaller than the ABI 1.0 "
                            "minimum {}",
                            i, c->struct_size, NNERGY_STRUCT_SIZE(nnergy_component, vtbl)));
        nnergy_component d = read_prefix(c);
        std::string name = to_string(d.name);
        if (name.empty()) return skip(fmt::format("component #{} has no name", i));
        if (!valid_kind(d.kind))
            return skip(
                fmt::format("component '{}' has unknown kind {}", name, static_cast<int>(d.kind)));
        if (!d.create || !d.destroy || !d.vtbl)
            return skip(
                fmt::format("component '{}' has a NULL required member (create, destroy "
                            "or vtbl)",
                            name));
        size_t declared = *static_cast<const size_t*>(d.vtbl);
        if (declared < vtbl_size(d.kind) || !vtbl_function_present(d.kind, d.vtbl))
            return skip(fmt::format("component '{}' has a NULL required member in its {} table",
                                    name, kind_name(d.kind)));
        for (const auto& mine : out.components)
            if (mine.name == name)
                return skip(fmt::format("duplicate component name '{}' within the library", name));
        component_entry e;
        e.name = name;
        e.kind = d.kind;
        e.description = to_string(d.description);
        e.descriptor = d;
        e.vtbl = d.vtbl;
        e.library = library;
        if (d.kind == NNERGY_KIND_FRONTEND) {
            nnergy_frontend_vtbl v = read_prefix(static_cast<const nnergy_frontend_vtbl*>(d.vtbl));
            e.file_extensions = to_string(v.file_extensions);
        }
        out.components.push_back(std::move(e));
    }
    out.library = std::move(library);
    return out;
}

// ---- the catalog file ----
// A line-based text file, fields separated by tabs, with \t, \n and \\ escaped:
//   nnergy-plugin-catalog <format> <host version> <ABI major>.<ABI minor>
//   library <file> <size> <mtime ns> <name> <version> <vendor> <license> <description> <major>
//   <minor> component <name> <kind> <description> <file extensions>      (after its library)
// Anything unexpected discards the whole catalog: it is only ever a cache.

constexpr std::string_view k_catalog_magic = "nnergy-plugin-catalog";
constexpr int k_catalog_format = 1;

std::string catalog_header() {
    return fmt::format("{}\t{}\t{}\t{}.{}", k_catalog_magic, k_catalog_format, NNERGY_VERSION,
                       NNERGY_ABI_MAJOR, NNERGY_ABI_MINOR);
}

std::string escape_field(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string unescape_field(std::string_view s) {
    // Nearly every field has no escape: one copy, not a byte at a time.
    size_t i = s.find('\\');
    if (i == std::string_view::npos) return std::string(s);
    std::string out(s.substr(0, i));
    out.reserve(s.size());
    for (; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        char n = s[++i];
        out += n == 't' ? '\t' : n == 'n' ? '\n' : n;
    }
    return out;
}

std::vector<std::string_view> split_tabs(std::string_view line) {
    std::vector<std::string_view> out;
    while (true) {
        size_t tab = line.find('\t');
        out.push_back(line.substr(0, tab));
        if (tab == std::string_view::npos) break;
        line = line.substr(tab + 1);
    }
    return out;
}

bool parse_u64(std::string_view s, uint64_t& v) {
    if (s.empty()) return false;
    v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return true;
}

struct file_stamp {
    uint64_t size = 0;
    uint64_t mtime_ns = 0;
    bool operator==(const file_stamp&) const = default;
};

bool stamp_of(const std::filesystem::path& file, file_stamp& out) {
    struct ::stat st {};
    if (::stat(file.c_str(), &st) != 0) return false;
    out.size = static_cast<uint64_t>(st.st_size);
    out.mtime_ns = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull +
                   static_cast<uint64_t>(st.st_mtim.tv_nsec);
    return true;
}

struct catalog_component {
    std::string name;
    nnergy_component_kind kind{};
    std::string description;
    std::string file_extensions;
};

struct catalog_library {
    file_stamp stamp;
    std::string name, version, vendor, license, description;
    uint32_t abi_major = 0, abi_minor = 0;
    std::vector<catalog_component> components;
};

using catalog_map = std::map<std::string, catalog_library>;

catalog_map read_catalog(const std::filesystem::path& path) {
    catalog_map out;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return out;
    std::string text;
    char buf[16384];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);

    auto discard = [&](std::string_view why) {
        spdlog::debug("plugin catalog {}: {}; every library is loaded afresh", path.string(), why);
        return catalog_map{};
    };
    std::string_view rest = text;
    auto next_line = [&](std::string_view& line) {
        if (rest.empty()) return false;
        size_t nl = rest.find('\n');
        line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        return true;
    };
    std::string_view line;
    if (!next_line(line) || line != catalog_header())
        return discard("written by another version of nnergy");
    catalog_library* current = nullptr;
    while (next_line(line)) {
        auto f = split_tabs(line);
        if (f[0] == "library" && f.size() == 11) {
            catalog_library lib;
            uint64_t major = 0, minor = 0;
            if (!parse_u64(f[2], lib.stamp.size) || !parse_u64(f[3], lib.stamp.mtime_ns) ||
                !parse_u64(f[9], major) || !parse_u64(f[10], minor))
                return discard("a malformed library line");
            lib.name = unescape_field(f[4]);
            lib.version = unescape_field(f[5]);
            lib.vendor = unescape_field(f[6]);
            lib.license = unescape_field(f[7]);
            lib.description = unescape_field(f[8]);
            lib.abi_major = static_cast<uint32_t>(major);
            lib.abi_minor = static_cast<uint32_t>(minor);
            current = &(out[unescape_field(f[1])] = std::move(lib));
        } else if (f[0] == "component" && f.size() == 5 && current) {
            uint64_t kind = 0;
            if (!parse_u64(f[2], kind) || !valid_kind(static_cast<int>(kind)))
                return discard("a malformed component line");
            current->components.push_back({unescape_field(f[1]),
                                           static_cast<nnergy_component_kind>(kind),
                                           unescape_field(f[3]), unescape_field(f[4])});
        } else if (!line.empty()) {
            return discard("an unexpected line");
        }
    }
    return out;
}

void write_catalog(const std::filesystem::path& path, const catalog_map& catalog) {
    std::string text = catalog_header() + "\n";
    for (const auto& [file, lib] : catalog) {
        text += fmt::format("library\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", escape_field(file),
                            lib.stamp.size, lib.stamp.mtime_ns, escape_field(lib.name),
                            escape_field(lib.version), escape_field(lib.vendor),
                            escape_field(lib.license), escape_field(lib.description), lib.abi_major,
                            lib.abi_minor);
        for (const auto& c : lib.components)
            text += fmt::format("component\t{}\t{}\t{}\t{}\n", escape_field(c.name),
                                static_cast<int>(c.kind), escape_field(c.description),
                                escape_field(c.file_extensions));
    }
    // Written beside and put in place: concurrent runs see the old catalog or the new, whole.
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    const std::filesystem::path tmp =
        path.string() + fmt::format(".{}.tmp", static_cast<long>(::getpid()));
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) {
        spdlog::debug("plugin catalog {}: cannot write ({})", path.string(), std::strerror(errno));
        return;
    }
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = std::fclose(f) == 0 && ok;
    if (!ok || !replace_file(tmp.string(), path.string())) {
        spdlog::debug("plugin catalog {}: cannot write ({})", path.string(), std::strerror(errno));
        std::remove(tmp.c_str());
    }
}

/// Drops the entries whose library no longer exists, wherever it was (a deleted build tree, a
/// temporary install): checked only when the catalog is written anyway, since every run reads
/// the whole catalog and would otherwise read such entries for good.
void drop_vanished_libraries(catalog_map& catalog) {
    for (auto it = catalog.begin(); it != catalog.end();) {
        file_stamp stamp;
        if (!stamp_of(it->first, stamp) && (errno == ENOENT || errno == ENOTDIR)) {
            spdlog::debug("plugin catalog: {} no longer exists; its entry is dropped", it->first);
            it = catalog.erase(it);
        } else {
            ++it;
        }
    }
}

std::filesystem::path& process_catalog_path() {
    static std::filesystem::path path;
    return path;
}

std::mutex& resolve_mutex() {
    static std::mutex m;
    return m;
}

}  // namespace

struct registry::catalog_state {
    catalog_map entries;
    bool dirty = false;
};

component_entry resolve_component(const component_entry& entry) {
    if (entry.vtbl || !entry.library) return entry;
    plugin_library& lib = *entry.library;
    std::lock_guard lock(resolve_mutex());
    if (!lib.handle && lib.open_failure.empty()) {
        spdlog::debug("opening catalogued plugin library {} for {} '{}'", lib.file.string(),
                      kind_name(entry.kind), entry.name);
        negotiation n = negotiate_library(lib.file);
        if (!n.failure.empty()) {
            lib.open_failure = std::move(n.failure);
        } else {
            for (const auto& c : n.components)
                lib.opened_descriptors.emplace_back(c.name, c.descriptor);
            lib.handle = n.library->handle;
        }
    }
    if (!lib.open_failure.empty())
        throw error(fmt::format("plugin library {}: {} (`nnergy plugins` checks every library)",
                                lib.file.string(), lib.open_failure),
                    exit_code::failure);
    for (const auto& [name, descriptor] : lib.opened_descriptors) {
        if (name != entry.name || descriptor.kind != entry.kind) continue;
        component_entry out = entry;
        out.descriptor = descriptor;
        out.vtbl = descriptor.vtbl;
        return out;
    }
    throw error(fmt::format("plugin library {} no longer offers {} '{}' (`nnergy plugins` checks "
                            "every library)",
                            lib.file.string(), kind_name(entry.kind), entry.name),
                exit_code::failure);
}

std::filesystem::path default_catalog_path() {
    return user_cache_path("NNERGY_PLUGIN_CACHE", "plugin-catalog");
}

void registry::set_process_catalog(std::filesystem::path catalog) {
    process_catalog_path() = std::move(catalog);
}
const std::filesystem::path& registry::process_catalog() noexcept { return process_catalog_path(); }

registry::registry() : catalog_path_(process_catalog_path()) {}
registry::registry(std::filesystem::path catalog) : catalog_path_(std::move(catalog)) {}
registry::~registry() {
    // Components drop their library references first; libraries unload last.
    components_.clear();
    libraries_.clear();
}

void registry::scan(const std::vector<std::filesystem::path>& paths, scan_mode mode) {
    if (!catalog_path_.empty() && !catalog_) {
        catalog_ = std::make_unique<catalog_state>();
        catalog_->entries = read_catalog(catalog_path_);
    }
    for (const auto& path : paths) {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) {
            // The directory is made canonical once; only links among its files need resolving.
            std::filesystem::path dir = std::filesystem::weakly_canonical(path, ec);
            if (ec) dir = path;
            std::vector<std::filesystem::path> files;
            // The directory's libraries by the names it lists, and a link's by its target too
            // (the name the catalog keeps).
            std::vector<std::string> listed;
            for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
                if (!e.is_regular_file(ec) || !is_library_file(e.path())) continue;
                std::error_code lec;
                files.push_back(e.is_symlink(lec) ? std::filesystem::weakly_canonical(e.path(), lec)
                                                  : e.path());
                listed.push_back(e.path().string());
                if (files.back() != e.path()) listed.push_back(files.back().string());
            }
            std::sort(files.begin(), files.end());
            if (catalog_ && !ec) forget_missing_libraries(dir, std::move(listed));
            for (const auto& f : files) add_library(f, mode);
        } else if (std::filesystem::is_regular_file(path, ec)) {
            std::filesystem::path file = std::filesystem::weakly_canonical(path, ec);
            add_library(ec ? path : file, mode);
        } else {
            spdlog::debug("plugin path '{}' does not exist; ignored", path.string());
        }
    }
    if (catalog_ && catalog_->dirty) {
        drop_vanished_libraries(catalog_->entries);
        write_catalog(catalog_path_, catalog_->entries);
        catalog_->dirty = false;
    }
}

void registry::forget_missing_libraries(const std::filesystem::path& dir,
                                        std::vector<std::string> listed) {
    // The catalog is keyed by path: without this, every library a directory ever held (each
    // build's, each test's) would stay in it, and be read by every run, for good.
    std::sort(listed.begin(), listed.end());
    const std::string prefix = (dir / "").string();
    auto& entries = catalog_->entries;
    for (auto it = entries.lower_bound(prefix); it != entries.end();) {
        const std::string& file = it->first;
        if (file.compare(0, prefix.size(), prefix) != 0) break;  // past the directory's entries
        const bool directly_inside = file.find('/', prefix.size()) == std::string::npos;
        if (directly_inside && !std::binary_search(listed.begin(), listed.end(), file)) {
            spdlog::debug("plugin catalog: {} is gone; its entry is dropped", file);
            it = entries.erase(it);
            catalog_->dirty = true;
        } else {
            ++it;
        }
    }
}

bool registry::load(const std::filesystem::path& file_in) {
    std::error_code ec;
    std::filesystem::path file = std::filesystem::weakly_canonical(file_in, ec);
    return add_library(ec ? file_in : file, scan_mode::load_all);
}

bool registry::add_library(const std::filesystem::path& file, scan_mode mode) {
    for (const auto& lib : libraries_)
        if (lib->file == file) return true;  // already loaded through another search path

    file_stamp stamp;
    const bool stamped = catalog_ && stamp_of(file, stamp);
    if (stamped && mode == scan_mode::use_catalog) {
        auto it = catalog_->entries.find(file.string());
        if (it != catalog_->entries.end() && it->second.stamp == stamp) {
            const catalog_library& c = it->second;
            auto library = std::make_shared<plugin_library>();
            library->file = file;
            library->name = c.name;
            library->version = c.version;
            library->vendor = c.vendor;
            library->license = c.license;
            library->description = c.description;
            library->abi_major = c.abi_major;
            library->abi_minor = c.abi_minor;
            std::vector<component_entry> accepted;
            for (const auto& cc : c.components) {
                component_entry e;
                e.name = cc.name;
                e.kind = cc.kind;
                e.description = cc.description;
                e.file_extensions = cc.file_extensions;
                e.library = library;
                accepted.push_back(std::move(e));
            }
            return register_library(std::move(library), std::move(accepted));
        }
    }

    negotiation n = negotiate_library(file);
    if (!n.failure.empty()) {
        spdlog::warn("skipping plugin library {}: {}", file.string(), n.failure);
        skipped_.push_back({file, std::move(n.failure)});
        // A library that no longer loads is not offered from the catalog either.
        if (catalog_ && catalog_->entries.erase(file.string())) catalog_->dirty = true;
        return false;
    }
    if (stamped) {
        catalog_library c;
        c.stamp = stamp;
        c.name = n.library->name;
        c.version = n.library->version;
        c.vendor = n.library->vendor;
        c.license = n.library->license;
        c.description = n.library->description;
        c.abi_major = n.library->abi_major;
        c.abi_minor = n.library->abi_minor;
        for (const auto& e : n.components)
            c.components.push_back({e.name, e.kind, e.description, e.file_extensions});
        catalog_->entries[file.string()] = std::move(c);
        catalog_->dirty = true;
    }
    return register_library(std::move(n.library), std::move(n.components));
}

bool registry::register_library(std::shared_ptr<plugin_library> library,
                                std::vector<component_entry> accepted) {
    for (const auto& mine : accepted)
        for (const auto& existing : components_)
            if (existing.name == mine.name) {
                std::string reason =
                    fmt::format("duplicate component name '{}' (already provided by {})", mine.name,
                                existing.library->file.string());
                spdlog::warn("skipping plugin library {}: {}", library->file.string(), reason);
                skipped_.push_back({library->file, std::move(reason)});
                return false;
            }
    libraries_.push_back(library);
    for (auto& e : accepted) {
        spdlog::debug("registered {} '{}' from {}{}", kind_name(e.kind), e.name,
                      library->file.string(), e.vtbl ? "" : " (catalogued; opened when used)");
        components_.push_back(std::move(e));
    }
    return true;
}

const component_entry* registry::find(std::string_view name) const noexcept {
    for (const auto& c : components_)
        if (c.name == name) return &c;
    return nullptr;
}

const component_entry* registry::find(nnergy_component_kind kind,
                                      std::string_view name) const noexcept {
    for (const auto& c : components_)
        if (c.kind == kind && c.name == name) return &c;
    return nullptr;
}

std::string registry::architecture_for_class(std::string_view hw_class) const {
    std::string name = "nnergy.architecture." + std::string(hw_class);
    if (!hw_class.empty() && find(NNERGY_KIND_ARCHITECTURE, name)) return name;
    return "nnergy.architecture.reference";
}

std::vector<const component_entry*> registry::of_kind(nnergy_component_kind kind) const {
    std::vector<const component_entry*> out;
    for (const auto& c : components_)
        if (c.kind == kind) out.push_back(&c);
    return out;
}

const component_entry* registry::frontend_for(const std::filesystem::path& path) const noexcept {
    const std::string name = path.filename().string();
    const component_entry* best = nullptr;
    size_t best_len = 0;
    for (const auto& c : components_) {
        if (c.kind != NNERGY_KIND_FRONTEND) continue;
        std::string_view exts = c.file_extensions;
        while (!exts.empty()) {
            size_t semi = exts.find(';');
            std::string_view ext = exts.substr(0, semi);
            exts = semi == std::string_view::npos ? std::string_view() : exts.substr(semi + 1);
            if (!ext.empty() && name.size() > ext.size() && name.ends_with(ext) &&
                ext.size() > best_len) {
                best = &c;
                best_len = ext.size();
            }
        }
    }
    return best;
}

std::string registry::names_of(nnergy_component_kind kind) const {
    std::string out;
    for (const auto& c : components_) {
        if (c.kind != kind) continue;
        if (!out.empty()) out += ", ";
        out += c.name;
    }
    return out.empty() ? std::string("(none)") : out;
}

namespace {
void append_path_list(const char* env, std::vector<std::filesystem::path>& out) {
    if (!env) return;
    std::string_view s(env);
    while (!s.empty()) {
        size_t colon = s.find(':');
        std::string_view part = s.substr(0, colon);
        if (!part.empty()) out.emplace_back(part);
        if (colon == std::string_view::npos) break;
        s = s.substr(colon + 1);
    }
}
}  // namespace

std::vector<std::filesystem::path> default_plugin_paths() {
    std::vector<std::filesystem::path> out;
    append_path_list(std::getenv("NNERGY_PLUGIN_PATH"), out);
    if (const char* system = std::getenv("NNERGY_PLUGIN_SYSTEM_PATH")) {
        append_path_list(system, out);
        return out;
    }
    std::error_code ec;
    auto exe = boost::dll::program_location(ec);
    if (!ec) {
        std::filesystem::path dir = std::filesystem::path(exe.string()).parent_path();
        for (auto p : {dir.parent_path() / NNERGY_PLUGIN_INSTALL_SUFFIX,
                       dir.parent_path() / "lib" / "nnergy" / "plugins"})
            if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
    return out;
}

}  // namespace nnergy
