// SPDX-License-Identifier: Apache-2.0
// Loading plugin libraries and negotiating with them. A library that cannot be used is skipped
// with a reason naming the file; nothing a plugin does at negotiation may stop the host.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdlib>
#include <cstring>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/registry.hpp>

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

registry::registry() = default;
registry::~registry() {
    // Components drop their library references first; libraries unload last.
    components_.clear();
    libraries_.clear();
}

void registry::scan(const std::vector<std::filesystem::path>& paths) {
    for (const auto& path : paths) {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) {
            std::vector<std::filesystem::path> files;
            for (const auto& e : std::filesystem::directory_iterator(path, ec))
                if (e.is_regular_file(ec) && is_library_file(e.path())) files.push_back(e.path());
            std::sort(files.begin(), files.end());
            for (const auto& f : files) load(f);
        } else if (std::filesystem::is_regular_file(path, ec)) {
            load(path);
        } else {
            spdlog::debug("plugin path '{}' does not exist; ignored", path.string());
        }
    }
}

bool registry::load(const std::filesystem::path& file_in) {
    std::error_code ec;
    std::filesystem::path file = std::filesystem::weakly_canonical(file_in, ec);
    if (ec) file = file_in;
    for (const auto& lib : libraries_)
        if (lib->file == file) return true;  // already loaded through another search path

    auto skip = [&](std::string reason) {
        spdlog::warn("skipping plugin library {}: {}", file.string(), reason);
        skipped_.push_back({file, std::move(reason)});
        return false;
    };

    auto lib = std::make_shared<boost::dll::shared_library>();
    {
        std::error_code bec;
        lib->load(boost::dll::fs::path(file.string()),
                  boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, bec);
        if (bec) {
            const char* why = nullptr;
            why = ::dlerror();
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

    std::vector<component_entry> accepted;
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
        for (const auto& existing : components_)
            if (existing.name == name)
                return skip(fmt::format("duplicate component name '{}' (already provided by {})",
                                        name, existing.library->file.string()));
        for (const auto& mine : accepted)
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
        accepted.push_back(std::move(e));
    }
    libraries_.push_back(library);
    for (auto& e : accepted) {
        spdlog::debug("registered {} '{}' from {}", kind_name(e.kind), e.name, file.string());
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
