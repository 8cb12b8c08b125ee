// SPDX-License-Identifier: Apache-2.0
/// \file registry.hpp
/// \brief Finding, loading and negotiating with plugin libraries.
///
/// Search order (first match of a component name wins): --plugin-path, the pipeline's
/// [plugins] search_paths, NNERGY_PLUGIN_PATH, then the defaults (<exe>/../lib/nnergy/plugins,
/// replaced by NNERGY_PLUGIN_SYSTEM_PATH when set). A library that cannot be used is skipped with
/// a reason naming the file; the host keeps running.
#pragma once

#include <nnergy/plugin.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy {

/// A loaded plugin library. Kept alive by every component and instance made from it.
struct plugin_library {
    std::filesystem::path file;
    std::string name;
    std::string version;
    std::string vendor;
    std::string license;
    std::string description;
    uint32_t abi_major = 0;
    uint32_t abi_minor = 0;
    std::shared_ptr<void> handle;  ///< the boost::dll::shared_library, type-erased
};

struct component_entry {
    std::string name;
    nnergy_component_kind kind{};
    std::string description;
    std::string file_extensions;    ///< frontends only
    nnergy_component descriptor{};  ///< the plugin's descriptor, read up to its struct_size
    const void* vtbl = nullptr;
    std::shared_ptr<plugin_library> library;
};

struct skipped_library {
    std::filesystem::path file;
    std::string reason;
};

std::string_view kind_name(nnergy_component_kind kind) noexcept;

class registry {
public:
    registry();
    ~registry();
    registry(const registry&) = delete;
    registry& operator=(const registry&) = delete;

    /// Loads every plugin library in each path: a directory (its *.so files, sorted, not
    /// recursive) or a library file. Missing directories are ignored; unusable libraries are
    /// recorded in skipped() and logged as warnings.
    void scan(const std::vector<std::filesystem::path>& paths);
    /// Loads one library; returns false (and records the reason) when it is skipped.
    bool load(const std::filesystem::path& file);

    const std::vector<std::shared_ptr<plugin_library>>& libraries() const noexcept {
        return libraries_;
    }
    const std::vector<component_entry>& components() const noexcept { return components_; }
    const std::vector<skipped_library>& skipped() const noexcept { return skipped_; }

    const component_entry* find(std::string_view name) const noexcept;
    const component_entry* find(nnergy_component_kind kind, std::string_view name) const noexcept;
    std::vector<const component_entry*> of_kind(nnergy_component_kind kind) const;
    /// The frontend whose file_extensions match the end of `path` (longest match), or null.
    const component_entry* frontend_for(const std::filesystem::path& path) const noexcept;

    /// Comma-separated names of the components of a kind, for "available: ..." errors.
    std::string names_of(nnergy_component_kind kind) const;

    /// The architecture plugin for a hardware class ("gpu"): nnergy.architecture.<class> when
    /// one is registered, else nnergy.architecture.reference.
    std::string architecture_for_class(std::string_view hw_class) const;

private:
    std::vector<std::shared_ptr<plugin_library>> libraries_;
    std::vector<component_entry> components_;
    std::vector<skipped_library> skipped_;
};

/// NNERGY_PLUGIN_PATH entries followed by the default directories (or NNERGY_PLUGIN_SYSTEM_PATH).
std::vector<std::filesystem::path> default_plugin_paths();

}  // namespace nnergy
