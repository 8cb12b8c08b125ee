// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/model_zoo.hpp>
#include <nnergy/framework/suggest.hpp>

#include "toml_util.hpp"

namespace nnergy {

std::vector<zoo_model> model_zoo() {
    std::map<std::string, zoo_model, std::less<>> found;
    for (const std::filesystem::path& dir : config_dirs()) {
        std::error_code ec;
        const std::filesystem::path zoo = dir / "models" / "zoo";
        const std::filesystem::path index = zoo / "index.toml";
        if (std::filesystem::is_regular_file(index, ec)) {
            const toml::table t = detail::parse_toml_file(index);
            for (auto&& [key, value] : t) {
                const std::string name(key.str());
                const auto where = [&, line = detail::line_of(value)] {
                    return fmt::format("{}:{}: [{}]", index.string(), line, name);
                };
                const toml::table* entry = value.as_table();
                if (!entry) throw error(where() + " must be a table");
                zoo_model m;
                m.name = name;
                m.file = zoo / (name + ".json");
                for (auto&& [k, v] : *entry) {
                    const auto s = v.value_exact<std::string>();
                    if (!s || (k.str() != "description" && k.str() != "source"))
                        throw error(
                            fmt::format("{}: '{}' is not a string key of an entry "
                                        "(description, source)",
                                        where(), k.str()));
                    (k.str() == "description" ? m.description : m.source) = *s;
                }
                if (!std::filesystem::is_regular_file(m.file, ec))
                    throw error(
                        fmt::format("{}: the graph {} does not exist (regenerate the zoo "
                                    "with tools/make_model_zoo.py)",
                                    where(), m.file.string()));
                found.try_emplace(name, std::move(m));
            }
        }
        // The example graphs; also zoo graphs the index does not describe.
        for (const std::filesystem::path& folder : {dir / "models", zoo})
            for (const auto& e : std::filesystem::directory_iterator(folder, ec))
                if (e.path().extension() == ".json" && e.is_regular_file(ec))
                    found.try_emplace(e.path().stem().string(),
                                      zoo_model{e.path().stem().string(), e.path(), {}, {}});
    }
    std::vector<zoo_model> out;
    for (auto& [name, m] : found) out.push_back(std::move(m));
    return out;
}

std::optional<zoo_model> find_zoo_model(std::string_view name) {
    for (zoo_model& m : model_zoo())
        if (m.name == name) return std::move(m);
    return std::nullopt;
}

std::filesystem::path resolve_model(const std::string& ref, const std::filesystem::path& base_dir,
                                    const source_location& where) {
    constexpr std::string_view prefix = "zoo:";
    const bool explicit_zoo = ref.compare(0, prefix.size(), prefix) == 0;
    std::filesystem::path p(ref);
    if (!explicit_zoo) {
        if (p.is_relative() && !base_dir.empty()) p = (base_dir / p).lexically_normal();
        std::error_code ec;
        if (std::filesystem::exists(p, ec)) return p;
        if (ref.find('/') != std::string::npos || std::filesystem::path(ref).has_extension())
            return p;
    }
    const std::string name = explicit_zoo ? ref.substr(prefix.size()) : ref;
    // The file a bundled name stands for, found without reading the index: the index decides
    // only between an example graph and a zoo graph of the same name (model_zoo()'s order).
    if (!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
        name.find('\\') == std::string::npos) {
        for (const std::filesystem::path& dir : config_dirs()) {
            std::error_code ec;
            const std::filesystem::path example = dir / "models" / (name + ".json");
            const std::filesystem::path zoo_graph = dir / "models" / "zoo" / (name + ".json");
            const bool is_example = std::filesystem::is_regular_file(example, ec);
            const bool is_zoo = std::filesystem::is_regular_file(zoo_graph, ec);
            if (is_example && is_zoo) break;
            if (is_zoo) return zoo_graph;
            if (is_example) return example;
        }
    }
    const std::vector<zoo_model> zoo = model_zoo();
    std::vector<std::string> names;
    for (const zoo_model& m : zoo) {
        if (m.name == name) return m.file;
        names.push_back(m.name);
    }
    throw error(fmt::format("{}: '{}' is {}a bundled model{} (nnergy models lists them)",
                            where.str(), ref, explicit_zoo ? "not " : "neither a model file nor ",
                            did_you_mean(name, names)));
}

namespace {

/// 25.6M, 874, 3.45k: three significant digits.
std::string short_count(double v) {
    if (v < 1e3) return fmt::format("{:.0f}", v);
    const char* suffix = v < 1e6 ? "k" : v < 1e9 ? "M" : "G";
    const double scaled = v < 1e6 ? v / 1e3 : v < 1e9 ? v / 1e6 : v / 1e9;
    return fmt::format("{:.{}f}{}", scaled, scaled < 10 ? 2 : scaled < 100 ? 1 : 0, suffix);
}

/// "ids int64[batch, seq]"
std::string describe_input(const tensor& t) {
    std::string dims;
    if (t.shape)
        for (const dim& d : *t.shape)
            dims += (dims.empty() ? "" : ", ") + (d.is_symbolic()   ? std::string(d.symbol.view())
                                                  : d.is_concrete() ? std::to_string(d.value)
                                                                    : std::string("?"));
    return fmt::format("{} {}[{}]", t.name, dtype_name(t.dtype), t.shape ? dims : "?");
}

}  // namespace

int print_model_list(registry& reg, std::FILE* out) {
    struct row {
        std::string name, params, inputs, description;
        size_t nodes = 0;
    };
    std::vector<row> rows;
    size_t width = 4;  // "name"
    for (const zoo_model& m : model_zoo()) {
        const component_entry* fe = reg.frontend_for(m.file);
        if (!fe)
            throw error(fmt::format("{}: no frontend reads it (frontends: {})", m.file.string(),
                                    reg.names_of(NNERGY_KIND_FRONTEND)),
                        exit_code::plugin_missing);
        component_instance frontend(*fe, {}, {}, m.file.parent_path());
        const graph g = load_model(frontend, m.file);
        // Parameters do not depend on the symbols; 1 binds them all.
        dim_bindings ones;
        for (const std::string& s : symbols_of(g)) ones[s] = 1;
        const bound_graph b = bind(g, ones);
        row r{m.name, short_count(b.total_params), {}, m.description, g.nodes.size()};
        for (uint32_t t : g.inputs)
            r.inputs += (r.inputs.empty() ? "" : "; ") + describe_input(g.tensors[t]);
        for (const auto& [k, v] : g.metadata)
            if (r.description.empty() && k == "description") r.description = v;
        width = std::max(width, r.name.size());
        rows.push_back(std::move(r));
    }
    const int w = static_cast<int>(width);
    std::fprintf(out, "%-*s %8s %6s  %s\n", w, "name", "params", "nodes", "inputs");
    for (const row& r : rows) {
        std::fprintf(out, "%-*s %8s %6zu  %s\n", w, r.name.c_str(), r.params.c_str(), r.nodes,
                     r.inputs.c_str());
        if (!r.description.empty()) std::fprintf(out, "%-*s   %s\n", w, "", r.description.c_str());
    }
    std::fprintf(out,
                 "\n%zu models. A name goes wherever a model file does (nnergy analyze resnet50 "
                 "--hw h100-sxm5; zoo:NAME in a pipeline's [model] path).\n",
                 rows.size());
    return 0;
}

}  // namespace nnergy
