// SPDX-License-Identifier: Apache-2.0
// Reading pipeline files strictly: every key is known, every type checked, every path resolved,
// and every error names the file, line and key.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <cctype>
#include <cstdlib>
#include <initializer_list>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/model_zoo.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <nnergy/framework/suggest.hpp>
#include <set>

#include "toml_util.hpp"

namespace nnergy {

namespace {

using detail::line_of;

struct reader {
    std::string file;

    source_location at(const toml::node& n) const { return {file, line_of(n)}; }

    [[noreturn]] void fail(const toml::node& n, const std::string& msg) const {
        throw error(fmt::format("{}: {}", at(n).str(), msg));
    }

    void only_keys(const toml::table& t, std::string_view table_name,
                   std::initializer_list<std::string_view> allowed) const {
        for (auto&& [k, v] : t) {
            if (std::find(allowed.begin(), allowed.end(), k.str()) != allowed.end()) continue;
            std::string list;
            for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
            fail(v, fmt::format("unknown key '{}' in [{}] (expected one of: {})", k.str(),
                                table_name, list));
        }
    }

    const toml::table& table(const toml::node& n, std::string_view name) const {
        const toml::table* t = n.as_table();
        if (!t) fail(n, fmt::format("'{}' must be a table", name));
        return *t;
    }

    std::string string(const toml::table& t, std::string_view key, std::string_view table_name,
                       bool required, const toml::node& owner) const {
        const toml::node* n = t.get(key);
        if (!n) {
            if (required)
                fail(owner, fmt::format("[{}] is missing the required key '{}'", table_name, key));
            return {};
        }
        auto s = n->value_exact<std::string>();
        if (!s) fail(*n, fmt::format("'{}.{}' must be a string", table_name, key));
        if (required && s->empty())
            fail(*n, fmt::format("'{}.{}' must not be empty", table_name, key));
        return *s;
    }

    std::filesystem::path path(const std::filesystem::path& base, const std::string& p) const {
        std::filesystem::path x(p);
        return x.is_relative() ? (base / x).lexically_normal() : x;
    }

    // Every key except the ones the host consumes goes to the plugin, flattened.
    config_values plugin_config(const toml::table& t,
                                std::initializer_list<std::string_view> host_keys) const {
        config_values out;
        for (auto&& [k, v] : t) {
            if (std::find(host_keys.begin(), host_keys.end(), k.str()) != host_keys.end()) continue;
            detail::flatten_toml(v, std::string(k.str()), file, out);
        }
        return out;
    }

    template <class Spec>
    void component(const toml::table& t, std::string_view name, Spec& spec) const {
        spec.plugin = string(t, "plugin", name, true, t);
        spec.where = at(t);
    }
};

std::vector<std::filesystem::path> string_paths(const reader& r, const toml::table& t,
                                                std::string_view key,
                                                const std::filesystem::path& base) {
    std::vector<std::filesystem::path> out;
    const toml::node* n = t.get(key);
    if (!n) return out;
    const toml::array* a = n->as_array();
    if (!a) r.fail(*n, fmt::format("'plugins.{}' must be an array of strings", key));
    for (const toml::node& e : *a) {
        auto s = e.value_exact<std::string>();
        if (!s) r.fail(e, fmt::format("'plugins.{}' must contain only strings", key));
        out.push_back(r.path(base, *s));
    }
    return out;
}

// A string, or an array of strings (at least one): each with its node, for error messages.
// `key` is the qualified key ("sweep.models"); `empty` says what an empty array lacks.
std::vector<std::pair<std::string, const toml::node*>> string_list(
    const reader& r, const toml::node& n, std::string_view key,
    std::string_view empty = "sweeps over no values") {
    std::vector<std::pair<std::string, const toml::node*>> out;
    const std::string what = fmt::format("'{}' must be a string or an array of strings", key);
    if (const toml::array* a = n.as_array()) {
        if (a->empty()) r.fail(n, fmt::format("'{}' {}", key, empty));
        for (const toml::node& e : *a) {
            auto v = e.value_exact<std::string>();
            if (!v || v->empty()) r.fail(e, what);
            out.emplace_back(*v, &e);
        }
        return out;
    }
    auto v = n.value_exact<std::string>();
    if (!v || v->empty()) r.fail(n, what);
    out.emplace_back(*v, &n);
    return out;
}

// A positive integer, or an array of them (at least one).
std::vector<int64_t> int_list(const reader& r, const toml::node& n, const std::string& name) {
    const std::string what =
        fmt::format("'sweep.{}' must be a positive integer or an array of them", name);
    auto positive = [&](const toml::node& x) {
        auto v = x.value_exact<int64_t>();
        if (!v || *v <= 0) r.fail(x, what);
        return *v;
    };
    std::vector<int64_t> out;
    if (const toml::array* a = n.as_array()) {
        if (a->empty()) r.fail(n, fmt::format("'sweep.{}' sweeps over no values", name));
        for (const toml::node& e : *a) {
            const int64_t v = positive(e);
            if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
        }
        return out;
    }
    out.push_back(positive(n));
    return out;
}

std::string class_of(const std::filesystem::path& hardware_file) {
    const config_values v = read_hardware_file(hardware_file);
    const config_value* c = find_value(v, "class");
    return c && c->kind == NNERGY_VALUE_STRING ? c->string_value : std::string();
}

sweep_spec parse_sweep(const reader& r, const toml::table& t, const std::filesystem::path& base) {
    r.only_keys(t, "sweep",
                {"models", "hardware", "batch", "dims", "precision", "runtime", "output"});
    sweep_spec s;
    s.where = r.at(t);
    if (const toml::node* n = t.get("models"))
        for (const auto& [p, node] : string_list(r, *n, "sweep.models")) {
            std::filesystem::path file = p.compare(0, 4, "zoo:") == 0
                                             ? resolve_model(p, base, r.at(*node))
                                             : r.path(base, p);
            std::error_code ec;
            if (!std::filesystem::is_regular_file(file, ec))
                r.fail(*node, fmt::format("model file '{}' does not exist", file.string()));
            if (std::find(s.models.begin(), s.models.end(), file) == s.models.end())
                s.models.push_back(std::move(file));
        }
    if (const toml::node* n = t.get("hardware")) {
        auto add = [&](std::string name, std::filesystem::path file, const toml::node& node) {
            // A device named twice (a name, a path, or through "*" and a class) runs once.
            std::error_code ec;
            const auto canonical = std::filesystem::weakly_canonical(file, ec);
            for (const sweep_hardware& h : s.hardware)
                if (std::filesystem::weakly_canonical(h.file, ec) == canonical) return;
            s.hardware.push_back({std::move(name), std::move(file), r.at(node)});
        };
        for (const auto& [ref, node] : string_list(r, *n, "sweep.hardware")) {
            const source_location where = r.at(*node);
            if (ref == "*" || ref == "catalog") {
                for (const std::string& name : hardware_catalog())
                    add(name, resolve_hardware(name, base, where), *node);
            } else if (ref.rfind("class:", 0) == 0) {
                const std::string wanted = ref.substr(6);
                std::set<std::string> classes;
                size_t found = 0;
                for (const std::string& name : hardware_catalog()) {
                    std::filesystem::path file = resolve_hardware(name, base, where);
                    const std::string c = class_of(file);
                    classes.insert(c);
                    if (c != wanted) continue;
                    ++found;
                    add(name, std::move(file), *node);
                }
                if (!found) {
                    std::string list;
                    for (const std::string& c : classes) list += (list.empty() ? "" : ", ") + c;
                    r.fail(*node, fmt::format("no catalog entry of class '{}' (classes: {})",
                                              wanted, list));
                }
            } else {
                add(ref, resolve_hardware(ref, base, where), *node);
            }
        }
    }
    if (const toml::node* n = t.get("batch")) s.dims["batch"] = int_list(r, *n, "batch");
    if (const toml::node* n = t.get("dims")) {
        const toml::table& dims = r.table(*n, "sweep.dims");
        for (auto&& [k, v] : dims) {
            const std::string name(k.str());
            if (s.dims.count(name))
                r.fail(v, fmt::format("'sweep.dims.{}' repeats 'sweep.{}'", name, name));
            s.dims[name] = int_list(r, v, "dims." + name);
        }
    }
    if (const toml::node* n = t.get("precision"))
        for (const auto& [p, node] : string_list(r, *n, "sweep.precision")) {
            std::string name = p;
            if (p != "all") {
                const auto dt = dtype_from_name(p);
                if (!dt)
                    r.fail(*node, fmt::format("unknown precision '{}' (expected float32, tfloat32, "
                                              "float16, bfloat16, float8_e4m3, float8_e5m2, "
                                              "int8, int4, float64, or \"all\")",
                                              p));
                name = std::string(dtype_name(*dt));
            }
            if (std::find(s.precisions.begin(), s.precisions.end(), name) == s.precisions.end())
                s.precisions.push_back(std::move(name));
        }
    if (const toml::node* n = t.get("runtime"))
        for (const auto& [p, node] : string_list(r, *n, "sweep.runtime")) {
            runtime_spec rt;
            rt.profile = p;
            rt.where = r.at(*node);
            if (p != "none") rt.file = resolve_runtime(p, base, rt.where);
            for (const runtime_spec& other : s.runtimes)
                if (other.profile == p)
                    r.fail(*node, fmt::format("runtime '{}' is named twice", p));
            s.runtimes.push_back(std::move(rt));
        }
    if (const toml::node* n = t.get("output")) {
        auto v = n->value_exact<std::string>();
        if (!v || v->empty()) r.fail(*n, "'sweep.output' must be a file name (a string)");
        const std::string ext = std::filesystem::path(*v).extension().string();
        if (*v != "-" && ext != ".csv" && ext != ".jsonl")
            r.fail(*n, fmt::format("'sweep.output' = \"{}\": the format comes from the extension, "
                                   "which must be .csv or .jsonl (or \"-\" for standard output)",
                                   *v));
        s.output = *v == "-" ? *v : r.path(base, *v).string();
    }
    return s;
}

}  // namespace

std::vector<std::string> report_formats() {
    return {"text", "json", "csv", "markdown", "html", "trace"};
}

std::string reporter_component(std::string_view format, std::string_view output) {
    if (format == "md") format = "markdown";
    if (!format.empty() && format != "auto") {
        for (const std::string& f : report_formats())
            if (format == f) return "nnergy.reporter." + f;
        return std::string(format);  // a component name
    }
    if (output.empty() || output == "-") return format.empty() ? "" : "nnergy.reporter.text";
    std::string name = std::filesystem::path(output).filename().string();
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const auto ends_with = [&](std::string_view suffix) {
        return name.size() >= suffix.size() &&
               std::string_view(name).substr(name.size() - suffix.size()) == suffix;
    };
    // Longest suffixes first: a trace is JSON too.
    static constexpr std::pair<std::string_view, std::string_view> by_suffix[] = {
        {".trace.json", "trace"}, {".perfetto.json", "trace"}, {".json", "json"}, {".csv", "csv"},
        {".md", "markdown"},      {".markdown", "markdown"},   {".html", "html"}, {".htm", "html"},
        {".txt", "text"}};
    for (const auto& [suffix, f] : by_suffix)
        if (ends_with(suffix)) return "nnergy.reporter." + std::string(f);
    return "";
}

pipeline_spec parse_pipeline(const std::filesystem::path& file, pipeline_use use) {
    const bool validating = use == pipeline_use::validate;
    toml::table root = detail::parse_toml_file(file);
    reader r{file.string()};
    pipeline_spec spec;
    spec.file = file;
    spec.base_dir = std::filesystem::absolute(file).parent_path();

    r.only_keys(root, "pipeline",
                {"plugins", "model", "partitioner", "architecture", "estimator", "reporter",
                 "runtime", "sweep"});

    if (const toml::node* n = root.get("plugins")) {
        const toml::table& t = r.table(*n, "plugins");
        r.only_keys(t, "plugins", {"search_paths", "load"});
        spec.search_paths = string_paths(r, t, "search_paths", spec.base_dir);
        spec.load = string_paths(r, t, "load", spec.base_dir);
        std::error_code ec;
        for (size_t i = 0; i < spec.load.size(); ++i)
            if (!std::filesystem::is_regular_file(spec.load[i], ec))
                r.fail(*t.get("load")->as_array()->get(i),
                       fmt::format("plugin library '{}' does not exist", spec.load[i].string()));
    }

    // A sweep supplies what it sweeps over, and defaults for the partitioner and estimators.
    if (const toml::node* n = root.get("sweep"))
        spec.sweep = parse_sweep(r, r.table(*n, "sweep"), spec.base_dir);
    const bool sweep_models = spec.sweep && !spec.sweep->models.empty();
    const bool sweep_hardware = spec.sweep && !spec.sweep->hardware.empty();

    const toml::node* model = root.get("model");
    if (!model && !sweep_models && !validating)
        throw error(fmt::format("{}: missing required table [model]", file.string()));
    if (model) {
        const toml::table& t = r.table(*model, "model");
        r.only_keys(t, "model", {"frontend", "path", "dims", "options", "input_shapes"});
        spec.model.where = r.at(t);
        spec.model.frontend = r.string(t, "frontend", "model", false, t);
        const std::string p = r.string(t, "path", "model", true, t);
        // "zoo:resnet50" names a bundled model (nnergy models).
        spec.model.path = p.compare(0, 4, "zoo:") == 0
                              ? resolve_model(p, spec.base_dir, r.at(*t.get("path")))
                              : r.path(spec.base_dir, p);
        std::error_code ec;
        if (!std::filesystem::is_regular_file(spec.model.path, ec))
            r.fail(*t.get("path"),
                   fmt::format("model file '{}' does not exist", spec.model.path.string()));
        if (const toml::node* d = t.get("dims")) {
            const toml::table& dims = r.table(*d, "model.dims");
            for (auto&& [k, v] : dims) {
                const std::string name(k.str());
                auto positive = [&](const toml::node& n) {
                    auto value = n.value_exact<int64_t>();
                    if (!value || *value <= 0)
                        r.fail(n, fmt::format("'model.dims.{}' must be a positive integer or an "
                                              "array of them (a sweep)",
                                              name));
                    return *value;
                };
                if (const toml::array* values = v.as_array()) {
                    if (values->empty())
                        r.fail(v, fmt::format("'model.dims.{}' sweeps over no values", name));
                    std::vector<int64_t>& sweep = spec.model.sweeps[name];
                    for (const toml::node& x : *values) sweep.push_back(positive(x));
                } else {
                    spec.model.dims[name] = positive(v);
                }
            }
        }
        if (const toml::node* o = t.get("options")) {
            const toml::table& opts = r.table(*o, "model.options");
            for (auto&& [k, v] : opts)
                detail::flatten_toml(v, std::string(k.str()), r.file, spec.model.options);
        }
        if (const toml::node* s = t.get("input_shapes")) {
            std::vector<std::string> shapes;
            for (auto& [shape, node] : string_list(r, *s, "model.input_shapes", "lists no shapes"))
                shapes.push_back(std::move(shape));
            add_input_shapes(spec.model, shapes, r.at(*s), spec.model.dims, spec.model.sweeps);
        }
    }

    const toml::node* part = root.get("partitioner");
    if (!part && !spec.sweep && !validating)
        throw error(fmt::format("{}: missing required table [partitioner]", file.string()));
    if (part) {
        const toml::table& t = r.table(*part, "partitioner");
        r.component(t, "partitioner", spec.partitioner);
        spec.partitioner.config = r.plugin_config(t, {"plugin"});
    }

    auto tables = [&](std::string_view key, bool required) {
        std::vector<const toml::table*> out;
        const toml::node* n = root.get(key);
        if (!n) {
            if (required)
                throw error(fmt::format("{}: missing required [[{}]] table (at least one)",
                                        file.string(), key));
            return out;
        }
        const toml::array* a = n->as_array();
        if (!a || !a->is_array_of_tables())
            r.fail(*n, fmt::format("'{}' must be written as [[{}]] tables", key, key));
        for (const toml::node& e : *a) out.push_back(e.as_table());
        return out;
    };

    for (const toml::table* t : tables("architecture", !sweep_hardware)) {
        architecture_spec a;
        r.component(*t, "architecture", a);
        a.hardware = r.string(*t, "hardware", "architecture", true, *t);
        // A precision, or an array of them: one run per precision (a sweep).
        std::vector<std::string> precisions;
        const toml::node* all_precisions = nullptr;
        auto check_precision = [&](const toml::node& n) {
            auto p = n.value<std::string>();
            if (!p) r.fail(n, "'architecture.precision' must be a string or an array of strings");
            if (*p == "all") {
                all_precisions = &n;  // every precision the hardware file offers
                return;
            }
            if (!dtype_from_name(*p)) {
                std::string expected;
                for (const std::string& name : precision_names()) expected += name + ", ";
                r.fail(n, fmt::format("unknown precision '{}'{} (expected {}or \"all\")", *p,
                                      did_you_mean(*p, precision_names()), expected));
            }
            precisions.push_back(std::string(dtype_name(*dtype_from_name(*p))));
        };
        if (const toml::node* p = t->get("precision")) {
            if (const toml::array* list = p->as_array()) {
                if (list->empty()) r.fail(*p, "'architecture.precision' sweeps over no values");
                for (const toml::node& x : *list) check_precision(x);
            } else {
                check_precision(*p);
            }
        } else {
            precisions.push_back(a.precision);
        }
        a.hardware_file = resolve_hardware(a.hardware, spec.base_dir, r.at(*t->get("hardware")));
        if (all_precisions) {
            for (std::string& p : hardware_precisions(read_hardware_file(a.hardware_file)))
                if (std::find(precisions.begin(), precisions.end(), p) == precisions.end())
                    precisions.push_back(std::move(p));
            if (precisions.empty())
                r.fail(*all_precisions, fmt::format("precision \"all\": hardware '{}' lists no "
                                                    "compute.<precision>.peak",
                                                    a.hardware_file.string()));
        }
        a.config = r.plugin_config(*t, {"plugin", "hardware", "precision"});
        for (const std::string& p : precisions) {
            architecture_spec one = a;
            one.precision = p;
            spec.architectures.push_back(std::move(one));
        }
    }
    for (const toml::table* t : tables("estimator", !spec.sweep && !validating)) {
        component_spec e;
        r.component(*t, "estimator", e);
        e.config = r.plugin_config(*t, {"plugin"});
        spec.estimators.push_back(std::move(e));
    }
    if (const toml::node* n = root.get("runtime")) {
        const toml::table& t = r.table(*n, "runtime");
        r.only_keys(t, "runtime", {"profile"});
        runtime_spec rt;
        rt.where = r.at(t);
        rt.profile = r.string(t, "profile", "runtime", true, t);
        rt.file = resolve_runtime(rt.profile, spec.base_dir, r.at(*t.get("profile")));
        spec.runtime = std::move(rt);
    }
    for (const toml::table* t : tables("reporter", false)) {
        reporter_spec rep;
        // `plugin` may be a short format name ("html") or be left out when the output's
        // extension says which format to write ("report.html").
        const std::string plugin = r.string(*t, "plugin", "reporter", false, *t);
        rep.where = r.at(*t);
        std::string out = r.string(*t, "output", "reporter", false, *t);
        rep.plugin = reporter_component(plugin, out);
        if (rep.plugin.empty())
            r.fail(t->get("output") ? *t->get("output") : static_cast<const toml::node&>(*t),
                   fmt::format("[[reporter]] needs 'plugin' (a component or one of {}) or an "
                               "'output' whose extension names a format ({})",
                               fmt::join(report_formats(), ", "),
                               "report.html, report.csv, report.md, report.json, "
                               "report.trace.json"));
        if (!out.empty()) rep.output = out == "-" ? out : r.path(spec.base_dir, out).string();
        rep.config = r.plugin_config(*t, {"plugin", "output"});
        spec.reporters.push_back(std::move(rep));
    }
    return spec;
}

std::filesystem::path default_fusion_rules() {
    std::filesystem::path p = find_config("fusion/default.toml");
    if (p.empty())
        throw error("cannot find the bundled fusion rules (configs/fusion/default.toml)");
    return p;
}

std::filesystem::path find_config(const std::filesystem::path& relative) {
    for (const auto& dir : config_dirs()) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(dir / relative, ec)) return dir / relative;
    }
    return {};
}

std::vector<std::filesystem::path> config_dirs() {
    std::vector<std::filesystem::path> out;
    if (const char* env = std::getenv("NNERGY_CONFIG_DIR")) out.emplace_back(env);
    std::error_code ec;
    auto exe = boost::dll::program_location(ec);
    if (!ec) {
        std::filesystem::path prefix =
            std::filesystem::path(exe.string()).parent_path().parent_path();
        out.push_back(prefix / NNERGY_DATA_INSTALL_SUFFIX / "configs");
    }
    out.emplace_back(NNERGY_SOURCE_CONFIG_DIR);
    std::error_code fec;
    std::erase_if(out, [&](const auto& p) { return !std::filesystem::is_directory(p, fec); });
    return out;
}

namespace {

std::vector<std::string> catalog(std::string_view folder) {
    std::set<std::string> names;
    for (const auto& dir : config_dirs()) {
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(dir / folder, ec))
            if (e.path().extension() == ".toml") names.insert(e.path().stem().string());
    }
    return {names.begin(), names.end()};
}

// A path (it has a '/' or ends in .toml) relative to base_dir, or a name in configs/<folder>/.
std::filesystem::path resolve_in_catalog(std::string_view folder, std::string_view what,
                                         const std::string& ref,
                                         const std::filesystem::path& base_dir,
                                         const source_location& where) {
    std::error_code ec;
    const bool looks_like_path =
        ref.find('/') != std::string::npos || std::filesystem::path(ref).extension() == ".toml";
    if (looks_like_path) {
        std::filesystem::path p(ref);
        if (p.is_relative()) p = (base_dir / p).lexically_normal();
        if (!std::filesystem::is_regular_file(p, ec))
            throw error(
                fmt::format("{}: {} file '{}' does not exist", where.str(), what, p.string()));
        return p;
    }
    for (const auto& dir : config_dirs()) {
        std::filesystem::path p = dir / folder / (ref + ".toml");
        if (std::filesystem::is_regular_file(p, ec)) return p;
    }
    const std::vector<std::string> known = catalog(folder);
    std::string names;
    for (const auto& n : known) names += (names.empty() ? "" : ", ") + n;
    throw error(fmt::format("{}: unknown {} '{}'{} (catalog: {})", where.str(), what, ref,
                            did_you_mean(ref, known), names.empty() ? "(empty)" : names));
}

}  // namespace

std::vector<std::string> hardware_catalog() { return catalog("hardware"); }

std::vector<std::string> runtime_catalog() { return catalog("runtimes"); }

std::optional<std::string> hardware_overlay_part(const std::string& ref,
                                                 const std::filesystem::path& base_dir) {
    const size_t plus = ref.find('+');
    std::error_code ec;
    if (plus == std::string::npos || std::filesystem::is_regular_file(base_dir / ref, ec))
        return std::nullopt;
    return ref.substr(plus + 1);
}

std::filesystem::path resolve_hardware(const std::string& ref,
                                       const std::filesystem::path& base_dir,
                                       const source_location& where) {
    // BASE+OVERLAY: the overlay file, once its `base` is checked to be that entry.
    const std::optional<std::string> overlay_part = hardware_overlay_part(ref, base_dir);
    if (!overlay_part) return resolve_in_catalog("hardware", "hardware", ref, base_dir, where);
    const std::string& overlay_ref = *overlay_part;
    const std::string base_ref = ref.substr(0, ref.size() - overlay_ref.size() - 1);
    std::error_code ec;
    if (overlay_ref.find('+') != std::string::npos)
        throw error(
            fmt::format("{}: hardware '{}': one overlay per reference (BASE+OVERLAY); "
                        "stack more with `base` keys in the overlays",
                        where.str(), ref));
    const std::filesystem::path base =
        resolve_in_catalog("hardware", "hardware", base_ref, base_dir, where);
    std::filesystem::path overlay(overlay_ref);
    if (overlay.is_relative()) overlay = (base_dir / overlay).lexically_normal();
    if (!std::filesystem::is_regular_file(overlay, ec))
        throw error(fmt::format("{}: hardware overlay file '{}' does not exist", where.str(),
                                overlay.string()));
    const config_values own = read_toml_file(overlay);
    const config_value* named = find_value(own, "base");
    if (!named || named->kind != NNERGY_VALUE_STRING)
        throw error(
            fmt::format("{}: '{}' is not an overlay: it has no `base` naming the entry "
                        "it overlays",
                        where.str(), overlay.string()));
    const std::filesystem::path declared =
        resolve_in_catalog("hardware", "hardware", named->string_value, overlay.parent_path(),
                           {overlay.string(), named->line});
    if (std::filesystem::weakly_canonical(declared, ec) !=
        std::filesystem::weakly_canonical(base, ec))
        throw error(fmt::format("{}: overlay '{}' was made for '{}', not '{}'", where.str(),
                                overlay.string(), named->string_value, base_ref));
    return overlay;
}

std::filesystem::path resolve_runtime(const std::string& ref, const std::filesystem::path& base_dir,
                                      const source_location& where) {
    return resolve_in_catalog("runtimes", "runtime profile", ref, base_dir, where);
}

void add_input_shapes(model_spec& model, const std::vector<std::string>& shapes,
                      const source_location& where, dim_bindings& dims, const dim_sweeps& sweeps) {
    std::optional<int64_t> batch;
    for (size_t i = 0; i < shapes.size(); ++i) {
        std::string shape = shapes[i];
        const size_t eq = shape.find('=');
        const size_t start = eq == std::string::npos ? 0 : eq + 1;
        size_t end = start;
        while (end < shape.size() && std::isdigit(static_cast<unsigned char>(shape[end]))) ++end;
        if (end > start && end - start <= 12 &&
            (end == shape.size() || shape[end] == 'x' || shape[end] == ',')) {
            const int64_t n = std::stoll(shape.substr(start, end - start));
            if (n <= 0)
                throw error(fmt::format("{}: input shape '{}': the batch dim must be positive",
                                        where.str(), shapes[i]),
                            exit_code::usage);
            if (batch && *batch != n)
                throw error(fmt::format("{}: input shapes disagree on the batch: {} and {} (write "
                                        "the symbol batch, or one number)",
                                        where.str(), *batch, n),
                            exit_code::usage);
            batch = n;
            shape.replace(start, end - start, "batch");
        }
        config_value v;
        v.name = fmt::format("input_shapes[{}]", i);
        v.kind = NNERGY_VALUE_STRING;
        v.string_value = shape;
        v.file = where.file;
        v.line = where.line;
        model.options.push_back(std::move(v));
    }
    if (batch && !dims.count("batch") && !sweeps.count("batch")) dims["batch"] = *batch;
}

}  // namespace nnergy
