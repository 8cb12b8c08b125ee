// SPDX-License-Identifier: Apache-2.0
/// \file host_objects.hpp
/// \brief The host's definitions of the ABI's opaque types. Plugins never see these layouts;
/// they reach them only through the functions of nnergy_host_api.
#pragma once

#include <filesystem>
#include <memory>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/report.hpp>
#include <string>
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
    std::vector<std::vector<std::pair<std::string, double>>> kernel_numbers;
    std::vector<std::vector<std::pair<std::string, std::string>>> kernel_texts;
    std::vector<std::pair<std::string, double>> totals;
    std::vector<std::pair<std::string, std::string>> total_texts;
};

struct nnergy_output {
    std::string bytes;
};

namespace nnergy {

/// Turns a status returned by a plugin into its message, and frees it.
std::string consume_status(nnergy_status* status);

/// Wraps a config_values list as the ABI's named-value array (views into `values`).
std::vector<nnergy_named_value> named_value_views(const config_values& values);

}  // namespace nnergy
