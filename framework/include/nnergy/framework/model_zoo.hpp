// SPDX-License-Identifier: Apache-2.0
/// \file model_zoo.hpp
/// \brief The bundled models, by name: JSON graphs converted from the ONNX fixtures
/// (configs/models/zoo/, listed in its index.toml) and the example graphs in configs/models/.
#pragma once

#include <cstdio>
#include <filesystem>
#include <nnergy/framework/pipeline.hpp>
#include <nnergy/framework/registry.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy {

struct zoo_model {
    std::string name;
    std::filesystem::path file;  ///< the JSON graph
    std::string description;     ///< from the zoo's index; empty for an example graph
    std::string source;          ///< the file it was converted from, as the index says
};

/// Every bundled model, sorted by name; where two config directories (config_dirs()) hold one
/// name, the first wins. Throws nnergy::error naming the index file and entry when the index
/// is malformed or names a graph that is not there.
std::vector<zoo_model> model_zoo();

/// The bundled model of that name, or nullopt.
std::optional<zoo_model> find_zoo_model(std::string_view name);

/// Resolves a model reference: `zoo:NAME` is a bundled model; otherwise an existing file
/// (relative to base_dir; an empty base_dir leaves a relative path as it is), else a bare NAME
/// (no '/', no extension) is looked up among the bundled models. An unknown name throws,
/// suggesting the closest names; anything else is returned as a path for the frontend to open
/// (and report missing).
std::filesystem::path resolve_model(const std::string& ref, const std::filesystem::path& base_dir,
                                    const source_location& where);

/// `nnergy models`: each bundled model with what it is, its parameters (symbols bound to 1),
/// nodes and inputs with their symbolic dims. Loads each graph with `reg`'s frontend for it.
/// Returns the exit code.
int print_model_list(registry& reg, std::FILE* out);

}  // namespace nnergy
