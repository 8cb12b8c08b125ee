// SPDX-License-Identifier: Apache-2.0
/// \file host_objects.hpp
/// \brief The host's definitions of the ABI's opaque types. Plugins never see these layouts;
/// they reach them only through the functions of nnergy_host_api.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/report.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

struct nnergy_status {
    nnergy_status_code code = NNERGY_CODE_OK;
    std::string message;
};

struct nnergy_host_context {
    std::string component_name;
    std::filesystem::path base_dir;  ///< relative paths in config_file_read resolve here
};

struct nnergy_config_file {
    nnergy::config_values values;
    std::vector<nnergy_named_value> views;  ///< point into `values`
};

struct nnergy_graph_builder {
    nnergy::graph* target = nullptr;
    std::string file;  ///< for error messages
};

struct nnergy_graph {
    const nnergy::graph* source = nullptr;
    const nnergy::bound_graph* bound = nullptr;
};

struct nnergy_partition_builder {
    const nnergy::bound_graph* graph = nullptr;
    std::vector<nnergy::kernel> kernels;
};

struct nnergy_partition {
    const nnergy::partition* source = nullptr;
};

struct nnergy_mapping {
    struct level {
        std::string name;
        double bytes = 0;
        double bandwidth_bytes_per_s = 0;
    };
    std::vector<std::pair<std::string, double>> numbers;
    std::vector<std::pair<std::string, std::string>> texts;
    std::vector<level> levels;
    struct event {
        std::string category;
        std::string name;
        double count = 0;
    };
    std::vector<event> events;
};

struct nnergy_results {
    /// Names of kernel number keys, each stored once: every kernel of a run writes the same
    /// keys, so a kernel keeps (key id, value) pairs and no string of its own.
    class key_table {
    public:
        uint32_t intern(std::string_view key) {
            if (auto it = ids_.find(key); it != ids_.end()) return it->second;
            const uint32_t id = static_cast<uint32_t>(names_.size());
            names_.emplace_back(key);
            ids_.emplace(names_.back(), id);
            return id;
        }
        std::optional<uint32_t> find(std::string_view key) const {
            if (auto it = ids_.find(key); it != ids_.end()) return it->second;
            return std::nullopt;
        }
        const std::string& name(uint32_t id) const { return names_[id]; }

    private:
        struct hash {
            using is_transparent = void;
            size_t operator()(std::string_view s) const noexcept {
                return std::hash<std::string_view>{}(s);
            }
        };
        std::deque<std::string> names_;  // a deque never moves its strings
        std::unordered_map<std::string_view, uint32_t, hash, std::equal_to<>> ids_;
    };
    key_table kernel_keys;
    /// The ids of the keys the last kernel set, in the order it set them: the next kernel
    /// usually sets the same keys in the same order, so a key is first checked against its
    /// predicted id (one comparison) before it is looked up (a hash).
    std::vector<uint32_t> key_sequence;
    /// Per key id, a bit per kernel: the kernels that have set it.
    std::vector<std::vector<uint64_t>> key_kernels;
    std::vector<std::vector<std::pair<uint32_t, double>>> kernel_numbers;
    std::vector<std::vector<std::pair<std::string, std::string>>> kernel_texts;
    std::vector<std::pair<std::string, double>> totals;
    std::vector<std::pair<std::string, std::string>> total_texts;
};

struct nnergy_output {
    std::string bytes;
    std::string path;           ///< empty: standard output
    bool allows_color = false;  ///< standard output on a colour terminal, NO_COLOR unset
    /// Companion outputs (since ABI 1.4) by suffix, in the order they were opened.
    std::vector<std::pair<std::string, std::unique_ptr<nnergy_output>>> companions;
};

namespace nnergy {

/// Turns a status returned by a plugin into its message, and frees it.
std::string consume_status(nnergy_status* status);

/// Wraps a config_values list as the ABI's named-value array (views into `values`).
std::vector<nnergy_named_value> named_value_views(const config_values& values);

}  // namespace nnergy
