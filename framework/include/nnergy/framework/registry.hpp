// SPDX-License-Identifier: Apache-2.0
/// \file registry.hpp
/// \brief Finding, loading and negotiating with plugin libraries.
///
/// Search order (first match of a component name wins): --plugin-path, the pipeline's
/// [plugins] search_paths, NNERGY_PLUGIN_PATH, then the defaults (<exe>/../lib/nnergy/plugins,
/// replaced by NNERGY_PLUGIN_SYSTEM_PATH when set). A library that cannot be used is skipped with
/// a reason naming the file; the host keeps running.
///
/// A run loads only the libraries whose components it uses. What each library offers is kept in
/// a catalog file (see default_catalog_path()) keyed by the library's path, size and modification
/// time; a library that is new or changed is loaded and negotiated during the scan and its entry
/// rewritten, one that matches its entry is opened only when a component of it is instantiated.
/// `scan(paths, scan_mode::load_all)` (`nnergy plugins`) loads and checks every library.
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
    /// The boost::dll::shared_library, type-erased; null while the library is known only from
    /// the catalog (it is opened by resolve_component()).
    std::shared_ptr<void> handle;
    /// Filled when a catalogued library is opened: its descriptors by component name, or why it
    /// could not be used.
    std::vector<std::pair<std::string, nnergy_component>> opened_descriptors;
    std::string open_failure;
};

struct component_entry {
    std::string name;
    nnergy_component_kind kind{};
    std::string description;
    std::string file_extensions;    ///< frontends only
    nnergy_component descriptor{};  ///< the plugin's descriptor, read up to its struct_size
    const void* vtbl = nullptr;     ///< null while the library is known only from the catalog
    std::shared_ptr<plugin_library> library;
};

struct skipped_library {
    std::filesystem::path file;
    std::string reason;
};

std::string_view kind_name(nnergy_component_kind kind) noexcept;
/// The kind with its article, for messages: "an architecture", "a reporter".
std::string kind_with_article(nnergy_component_kind kind);

/// The entry with its descriptor and vtbl: `entry` itself when its library is open, else a copy
/// made after opening the library (once per library, thread-safe). Throws nnergy::error naming
/// the file when the library no longer loads or no longer offers the component.
component_entry resolve_component(const component_entry& entry);

/// The catalog file: $NNERGY_PLUGIN_CACHE when set ("off" or empty: no catalog), else
/// $XDG_CACHE_HOME/nnergy/plugin-catalog, else $HOME/.cache/nnergy/plugin-catalog; empty when
/// none applies.
std::filesystem::path default_catalog_path();

enum class scan_mode {
    use_catalog,  ///< open only new or changed libraries (when a catalog path is set)
    load_all,     ///< open and negotiate every library, and refresh the catalog
};

class registry {
public:
    /// A registry with the process's catalog (set_process_catalog(); none unless set, so every
    /// scanned library is loaded).
    registry();
    /// A registry that keeps what libraries offer in `catalog` (none when empty).
    explicit registry(std::filesystem::path catalog);
    ~registry();
    registry(const registry&) = delete;
    registry& operator=(const registry&) = delete;

    /// Loads every plugin library in each path: a directory (its *.so files, sorted, not
    /// recursive) or a library file. Missing directories are ignored; unusable libraries are
    /// recorded in skipped() and logged as warnings.
    void scan(const std::vector<std::filesystem::path>& paths,
              scan_mode mode = scan_mode::use_catalog);
    /// Loads one library; returns false (and records the reason) when it is skipped.
    bool load(const std::filesystem::path& file);

    /// The catalog file this registry reads and writes (empty: none).
    const std::filesystem::path& catalog_path() const noexcept { return catalog_path_; }

    /// The catalog path registries made by the command line use (set once, at start-up).
    static void set_process_catalog(std::filesystem::path catalog);
    static const std::filesystem::path& process_catalog() noexcept;

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
    struct catalog_state;
    bool add_library(const std::filesystem::path& file, scan_mode mode);
    /// Drops the catalog entries of libraries directly inside `dir` that its listing (`listed`,
    /// full paths) no longer holds.
    void forget_missing_libraries(const std::filesystem::path& dir,
                                  std::vector<std::string> listed);
    bool register_library(std::shared_ptr<plugin_library> library,
                          std::vector<component_entry> accepted);

    std::vector<std::shared_ptr<plugin_library>> libraries_;
    std::vector<component_entry> components_;
    std::vector<skipped_library> skipped_;
    std::filesystem::path catalog_path_;
    std::unique_ptr<catalog_state> catalog_;
};

/// NNERGY_PLUGIN_PATH entries followed by the default directories (or NNERGY_PLUGIN_SYSTEM_PATH).
std::vector<std::filesystem::path> default_plugin_paths();

}  // namespace nnergy
