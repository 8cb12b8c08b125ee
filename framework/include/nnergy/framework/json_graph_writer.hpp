// SPDX-License-Identifier: Apache-2.0
/// \file json_graph_writer.hpp
/// \brief Writes a graph as a "nnergy.graph/1" JSON document (docs/json-graph.md).
///
/// The output is deterministic (same graph, same bytes) and reads back into an equal graph
/// through the JSON-graph frontend: every tensor is declared, in index order, so tensor indices
/// survive; attribute types are kept, with the typed form ({"ints": []}, {"float": "inf"})
/// wherever a plain JSON value would be ambiguous.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <nnergy/framework/graph.hpp>
#include <string>

namespace nnergy {

/// Writes `g` to `out` as pretty-printed JSON (2-space indent, one tensor per line).
/// Throws nnergy::error when the graph holds something the schema cannot express (a list of
/// strings as an attribute, a dangling tensor index, a name that is not valid UTF-8).
void write_json_graph(const graph& g, std::ostream& out);

/// The same document as a string.
std::string to_json_graph(const graph& g);

/// Writes the document to a file (replacing it). Throws nnergy::error naming the file when it
/// cannot be written.
void write_json_graph_file(const graph& g, const std::filesystem::path& path);

}  // namespace nnergy
