// SPDX-License-Identifier: Apache-2.0
// Writes graphs as "nnergy.graph/1" documents; the layout is fixed so output is byte-stable.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/json_graph_writer.hpp>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace nnergy {
namespace {

using json = nlohmann::json;

// A JSON string literal; `what` names the element when the text is not valid UTF-8.
std::string quote(std::string_view s, const std::string& what) {
    try {
        return json(std::string(s)).dump();
    } catch (const json::exception&) {
        throw error(what + " is not valid UTF-8, which JSON cannot carry", exit_code::failure);
    }
}

// Shortest text that reads back to the same double; always has a fraction or an exponent
// ("1.0", "1e+20"), so it reads back as a float, never as an integer.
std::string number(double v) { return json(v).dump(); }

std::string special(double v) {
    if (std::isnan(v)) return "\"nan\"";
    return v > 0 ? "\"inf\"" : "\"-inf\"";
}

template <class T, class F>
std::string list(const std::vector<T>& values, F&& format) {
    std::string out = "[";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) out += ", ";
        out += format(values[i]);
    }
    return out + "]";
}

std::string attribute_text(const attribute& a, const std::string& what) {
    return std::visit(
        [&](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, int64_t>) {
                return std::to_string(v);
            } else if constexpr (std::is_same_v<T, double>) {
                return std::isfinite(v) ? number(v) : "{\"float\": " + special(v) + "}";
            } else if constexpr (std::is_same_v<T, std::string>) {
                return quote(v, what);
            } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
                // An empty list has no type of its own in JSON.
                if (v.empty()) return "{\"ints\": []}";
                return list(v, [](int64_t x) { return std::to_string(x); });
            } else if constexpr (std::is_same_v<T, std::vector<double>>) {
                bool finite = true;
                for (double x : v) finite = finite && std::isfinite(x);
                std::string items =
                    list(v, [](double x) { return std::isfinite(x) ? number(x) : special(x); });
                if (v.empty() || !finite) return "{\"floats\": " + items + "}";
                return items;
            } else {
                static_assert(std::is_same_v<T, std::vector<std::string>>);
                throw error(what + " is a list of strings, which nnergy.graph/1 cannot carry",
                            exit_code::failure);
            }
        },
        a.value);
}

class writer {
public:
    writer(const graph& g, std::ostream& out) : g_(g), out_(out) {}

    void write() {
        out_ << "{\n";
        out_ << "  \"schema\": \"nnergy.graph/1\",\n";
        out_ << "  \"name\": " << quote(g_.name, "the graph name") << ",\n";
        write_metadata();
        out_ << "  \"inputs\": "
             << list(g_.inputs, [&](uint32_t t) { return ref(t, "a graph input"); }) << ",\n";
        out_ << "  \"outputs\": "
             << list(g_.outputs, [&](uint32_t t) { return ref(t, "a graph output"); }) << ",\n";
        write_tensors();
        write_nodes();
        out_ << "}\n";
    }

private:
    const graph& g_;
    std::ostream& out_;

    std::string where() const {
        return g_.source_path.empty() ? std::string("graph '") + g_.name + "'" : g_.source_path;
    }

    std::string ref(uint32_t t, const std::string& what) const {
        if (t >= g_.tensors.size())
            throw error(where() + ": " + what + " refers to tensor index " + std::to_string(t) +
                            ", but the graph has " + std::to_string(g_.tensors.size()) + " tensors",
                        exit_code::internal);
        return quote(g_.tensors[t].name, "tensor name");
    }

    void write_metadata() {
        // The ABI names a graph through metadata "name"; here it is the top-level "name".
        std::vector<const std::pair<std::string, std::string>*> entries;
        std::set<std::string, std::less<>> keys;
        for (const auto& kv : g_.metadata) {
            if (kv.first == "name") continue;
            if (kv.first.empty())
                throw error(where() + ": metadata has an empty key", exit_code::failure);
            if (!keys.insert(kv.first).second)
                throw error(where() + ": metadata key '" + kv.first + "' appears twice",
                            exit_code::failure);
            entries.push_back(&kv);
        }
        if (entries.empty()) return;
        out_ << "  \"metadata\": {\n";
        for (size_t i = 0; i < entries.size(); ++i) {
            out_ << "    " << quote(entries[i]->first, "a metadata key") << ": "
                 << quote(entries[i]->second, "metadata '" + entries[i]->first + "'")
                 << (i + 1 < entries.size() ? ",\n" : "\n");
        }
        out_ << "  },\n";
    }

    void write_tensors() {
        if (g_.tensors.empty()) {
            out_ << "  \"tensors\": [],\n";
            return;
        }
        out_ << "  \"tensors\": [\n";
        for (size_t i = 0; i < g_.tensors.size(); ++i) {
            const tensor& t = g_.tensors[i];
            std::string line = "{\"name\": " + quote(t.name, "tensor name");
            if (t.dtype != NNERGY_DTYPE_UNDEFINED)
                line += ", \"dtype\": \"" + std::string(dtype_name(t.dtype)) + "\"";
            if (t.shape) {
                line += ", \"shape\": " + list(*t.shape, [&](const dim& d) {
                            if (d.is_symbolic()) return quote(d.symbol, "a dimension symbol");
                            if (d.value >= 0) return std::to_string(d.value);
                            return std::string("null");
                        });
            }
            if (t.is_initializer) line += ", \"initializer\": true";
            if (t.is_constant) line += ", \"constant\": true";
            if (t.int_values)
                line += ", \"values\": " +
                        list(*t.int_values, [](int64_t v) { return std::to_string(v); });
            out_ << "    " << line << "}" << (i + 1 < g_.tensors.size() ? ",\n" : "\n");
        }
        out_ << "  ],\n";
    }

    void write_nodes() {
        if (g_.nodes.empty()) {
            out_ << "  \"nodes\": []\n";
            return;
        }
        out_ << "  \"nodes\": [\n";
        for (size_t i = 0; i < g_.nodes.size(); ++i) {
            const node& n = g_.nodes[i];
            const std::string what = "node '" + n.name + "'";
            out_ << "    {\n";
            out_ << "      \"name\": " << quote(n.name, "a node name") << ",\n";
            out_ << "      \"op\": " << quote(n.op_type, what + " op type") << ",\n";
            if (!n.domain.empty()) out_ << "      \"domain\": " << quote(n.domain, what) << ",\n";
            out_ << "      \"inputs\": " << list(n.inputs, [&](uint32_t t) {
                return t == NNERGY_NO_TENSOR ? std::string("\"\"") : ref(t, what + " input");
            });
            out_ << ",\n      \"outputs\": "
                 << list(n.outputs, [&](uint32_t t) { return ref(t, what + " output"); });
            if (!n.attributes.empty()) {
                out_ << ",\n      \"attributes\": {\n";
                for (size_t a = 0; a < n.attributes.size(); ++a) {
                    const attribute& attr = n.attributes[a];
                    const std::string awhat = what + " attribute '" + attr.name + "'";
                    out_ << "        " << quote(attr.name, what + " attribute name") << ": "
                         << attribute_text(attr, awhat)
                         << (a + 1 < n.attributes.size() ? ",\n" : "\n");
                }
                out_ << "      }";
            }
            out_ << "\n    }" << (i + 1 < g_.nodes.size() ? ",\n" : "\n");
        }
        out_ << "  ]\n";
    }
};

}  // namespace

void write_json_graph(const graph& g, std::ostream& out) {
    // Render fully before writing so a graph the schema cannot express leaves `out` untouched.
    std::ostringstream buffer;
    writer(g, buffer).write();
    out << buffer.str();
}

std::string to_json_graph(const graph& g) {
    std::ostringstream buffer;
    writer(g, buffer).write();
    return buffer.str();
}

void write_json_graph_file(const graph& g, const std::filesystem::path& path) {
    const std::string text = to_json_graph(g);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw error(path.string() + ": cannot open for writing", exit_code::failure);
    f << text;
    f.flush();
    if (!f) throw error(path.string() + ": write failed", exit_code::failure);
}

}  // namespace nnergy
