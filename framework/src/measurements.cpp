// SPDX-License-Identifier: Apache-2.0
// Measurement files: the checks of docs/measurements.schema.json that a reader can make without
// a schema validator, with messages that name the file, the run and the key.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/measurements.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

namespace nnergy {
namespace {

using json = nlohmann::json;

enum class type { string, integer, number, object, array };

// The lowest value a number may take, and whether the bound itself is allowed.
struct bound {
    double value = 0;
    bool exclusive = false;
};

/// The magnitudes a non-zero measured number may have: far wider than any real run on both
/// sides, so that only a slipped exponent or unit (a latency of 1e300 ms) is refused, before it
/// turns an error into -100% or 1e300%.
struct magnitude {
    double low, high;
};

struct key_rule {
    std::string_view key;
    type t;
    std::optional<bound> min;
    std::vector<std::string_view> allowed = {};  ///< for strings: the only values, when given
    std::optional<magnitude> range = {};
};

const bound at_least_0{0, false}, at_least_1{1, false}, above_0{0, true};
// In each key's own unit (docs/measurements.md, "Plausible values").
const magnitude latency_ms{1e-6, 1e8};  // 1 ns to about 28 hours
const magnitude seconds{1e-9, 1e7};     // 1 ns to about 116 days
const magnitude joules{1e-18, 1e10};
const magnitude watts{1e-9, 1e8};
const magnitude work{1e-3, 1e24};  // FLOPs or bytes of one call
const magnitude items{1e-6, 1e12};

// A run's keys with the types docs/measurements.md gives them.
const std::vector<key_rule>& run_rules() {
    static const std::vector<key_rule> rules = {
        {"kind", type::string, {}, {"model", "op", "command"}},
        {"name", type::string, {}},
        {"op_class", type::string, {}},
        {"params", type::object, {}},
        {"device", type::string, {}},
        {"precision", type::string, {}, {"fp32", "tf32", "fp16", "bf16", "int8", "fp8"}},
        {"batch", type::integer, at_least_1},
        {"mode", type::string, {}},
        {"threads", type::integer, at_least_1},
        {"latency_ms_median", type::number, above_0, {}, latency_ms},
        {"latency_ms_min", type::number, above_0, {}, latency_ms},
        {"latency_ms_max", type::number, above_0, {}, latency_ms},
        {"latency_floor_ms", type::number, above_0, {}, latency_ms},
        {"iters", type::integer, at_least_1},
        {"wall_s", type::number, at_least_0, {}, seconds},
        {"flops", type::number, at_least_0, {}, work},
        {"bytes", type::number, at_least_0, {}, work},
        {"items", type::number, above_0, {}, items},
        {"energy", type::object, {}},
        {"exit_status", type::integer, {}},
        {"duration_s", type::number, at_least_0, {}, seconds},
        {"note", type::string, {}},
        {"samples", type::integer, at_least_1},
        {"calls_per_sample", type::integer, at_least_1},
        {"load_average", type::number, at_least_0},
        {"cpu_share", type::number, at_least_0},
        {"tflops", type::number, at_least_0},
        {"gbps", type::number, at_least_0},
        {"throughput_inf_per_s", type::number, at_least_0},
    };
    return rules;
}

const std::vector<key_rule>& energy_rules() {
    static const std::vector<key_rule> rules = {
        {"meter", type::string, {}},
        {"energy_j", type::number, at_least_0, {}, joules},
        {"mean_power_w", type::number, at_least_0, {}, watts},
        {"peak_power_w", type::number, at_least_0, {}, watts},
        {"idle_power_w", type::number, at_least_0, {}, watts},
        {"window_s", type::number, at_least_0, {}, seconds},
        {"method", type::string, {}, {"counter", "sampled"}},
    };
    return rules;
}

const char* type_text(type t) {
    switch (t) {
        case type::string:
            return "a string";
        case type::integer:
            return "an integer";
        case type::number:
            return "a number";
        case type::object:
            return "an object";
        case type::array:
            return "an array";
    }
    return "?";
}

bool has_type(const json& v, type t) {
    switch (t) {
        case type::string:
            return v.is_string();
        case type::integer:
            return v.is_number_integer();
        case type::number:
            return v.is_number();
        case type::object:
            return v.is_object();
        case type::array:
            return v.is_array();
    }
    return false;
}

// The value as it is in the file, shortened: enough to find it.
std::string shown(const json& v) {
    std::string s = v.dump();
    if (s.size() > 40) s = s.substr(0, 37) + "...";
    return s;
}

// Checks the rules' keys of `obj`; `where` is "run 3" or "run 3: energy 'gpu0'".
void check_keys(const json& obj, const std::vector<key_rule>& rules, const std::string& file,
                const std::string& where) {
    for (const key_rule& r : rules) {
        const auto it = obj.find(std::string(r.key));
        if (it == obj.end()) continue;
        const json& v = *it;
        std::string wanted = type_text(r.t);
        if (r.min) wanted += fmt::format(" {} {}", r.min->exclusive ? ">" : ">=", r.min->value);
        bool ok = has_type(v, r.t);
        if (ok && r.min) {
            const double x = v.get<double>();
            ok = r.min->exclusive ? x > r.min->value : x >= r.min->value;
        }
        if (ok && r.t == type::string && !r.allowed.empty()) {
            ok = false;
            for (std::string_view a : r.allowed) ok = ok || v.get<std::string>() == a;
            if (!ok) {
                std::string list;
                for (std::string_view a : r.allowed)
                    list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
                wanted = "one of " + list;
            }
        }
        if (r.t == type::string && r.key == "name" && ok && v.get<std::string>().empty()) {
            ok = false;
            wanted = "a non-empty string";
        }
        if (!ok)
            throw error(fmt::format("{}: {}: '{}' must be {}, got {}", file, where, r.key, wanted,
                                    shown(v)));
        if (r.range) {
            const double x = std::fabs(v.get<double>());
            if (x != 0 && (x < r.range->low || x > r.range->high))
                throw error(fmt::format(
                    "{}: {}: '{}' is {:g}, beyond the range of any measurement ({:g} to {:g}{}); "
                    "check the exponent and the unit",
                    file, where, r.key, v.get<double>(), r.range->low, r.range->high,
                    r.min && !r.min->exclusive && r.min->value == 0 ? ", or 0" : ""));
        }
    }
}

}  // namespace

measurement_file parse_measurements(const std::string& text, const std::filesystem::path& file) {
    const std::string name = file.string();
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::parse_error& e) {
        // nlohmann's message says where ("parse error at line 3, column 7: ..."); its id prefix
        // ("[json.exception.parse_error.101] ") is noise to a user.
        std::string what = e.what();
        if (const size_t p = what.find("] ");
            what.rfind("[json.exception", 0) == 0 && p != std::string::npos)
            what = what.substr(p + 2);
        throw error(fmt::format("{}: not a JSON document: {}", name, what));
    }
    if (!doc.is_object())
        throw error(
            fmt::format("{}: a measurement file is a JSON object, got {}", name, doc.type_name()));
    const auto schema = doc.find("schema");
    if (schema == doc.end())
        throw error(
            fmt::format("{}: no 'schema' key; a measurement file has \"schema\": "
                        "\"nnergy.measurements/1\" (docs/measurements.md)",
                        name));
    if (!schema->is_string() || schema->get<std::string>() != "nnergy.measurements/1")
        throw error(fmt::format("{}: 'schema' is {}, expected \"nnergy.measurements/1\"", name,
                                shown(*schema)));
    measurement_file out;
    out.path = file;
    const auto machine = doc.find("machine");
    if (machine == doc.end() || !machine->is_object())
        throw error(fmt::format("{}: 'machine' must be an object with a 'name'", name));
    const auto machine_name = machine->find("name");
    if (machine_name == machine->end() || !machine_name->is_string() ||
        machine_name->get<std::string>().empty())
        throw error(fmt::format("{}: 'machine.name' must be a non-empty string", name));
    out.machine = machine_name->get<std::string>();
    if (doc.contains("description") && !doc["description"].is_string())
        throw error(fmt::format("{}: 'description' must be a string, got {}", name,
                                shown(doc["description"])));
    if (doc.contains("env") && !doc["env"].is_object())
        throw error(fmt::format("{}: 'env' must be an object, got {}", name, shown(doc["env"])));
    if (doc.contains("idle")) {
        if (!doc["idle"].is_array())
            throw error(
                fmt::format("{}: 'idle' must be an array, got {}", name, shown(doc["idle"])));
        static const std::vector<key_rule> idle_rules = {
            {"device", type::string, {}},
            {"meter", type::string, {}},
            {"power_w", type::number, at_least_0, {}, watts},
            {"window_s", type::number, at_least_0, {}, seconds}};
        size_t i = 0;
        for (const json& entry : doc["idle"]) {
            const std::string where = fmt::format("idle {}", i++);
            if (!entry.is_object())
                throw error(
                    fmt::format("{}: {}: must be an object, got {}", name, where, shown(entry)));
            check_keys(entry, idle_rules, name, where);
        }
    }
    const auto runs = doc.find("runs");
    if (runs == doc.end() || !runs->is_array())
        throw error(fmt::format("{}: 'runs' must be an array of runs", name));
    for (size_t i = 0; i < runs->size(); ++i) {
        const json& r = (*runs)[i];
        const std::string where = fmt::format("run {}", i);
        if (!r.is_object())
            throw error(fmt::format("{}: {}: a run is an object, got {}", name, where, shown(r)));
        for (const char* key : {"kind", "name"})
            if (!r.contains(key))
                throw error(fmt::format("{}: {}: missing '{}'", name, where, key));
        check_keys(r, run_rules(), name, where);
        measured_run run;
        run.index = i;
        run.kind = r["kind"].get<std::string>();
        run.name = r["name"].get<std::string>();
        const auto text = [&](const char* key) {
            return r.contains(key) ? r[key].get<std::string>() : std::string();
        };
        // A kind's own required keys (the schema's allOf).
        const std::vector<const char*> required =
            run.kind == "op"        ? std::vector<const char*>{"op_class", "params"}
            : run.kind == "command" ? std::vector<const char*>{"exit_status", "duration_s"}
                                    : std::vector<const char*>{};
        for (const char* key : required)
            if (!r.contains(key))
                throw error(fmt::format("{}: {} ({} '{}'): missing '{}'", name, where, run.kind,
                                        run.name, key));
        run.device = text("device");
        run.precision = text("precision");
        run.mode = text("mode");
        if (r.contains("batch")) run.batch = r["batch"].get<int64_t>();
        if (r.contains("threads")) run.threads = r["threads"].get<int64_t>();
        if (r.contains("flops")) run.flops = r["flops"].get<double>();
        if (r.contains("bytes")) run.bytes = r["bytes"].get<double>();
        run.op_class = text("op_class");
        if (r.contains("params")) run.params_json = r["params"].dump();
        if (r.contains("latency_ms_median"))
            run.latency_ms_median = r["latency_ms_median"].get<double>();
        if (r.contains("latency_floor_ms"))
            run.latency_floor_ms = r["latency_floor_ms"].get<double>();
        if (r.contains("energy"))
            for (const auto& [domain, e] : r["energy"].items()) {
                const std::string ewhere = fmt::format("{}: energy '{}'", where, domain);
                if (!e.is_object())
                    throw error(
                        fmt::format("{}: {}: must be an object, got {}", name, ewhere, shown(e)));
                for (const char* key : {"meter", "energy_j"})
                    if (!e.contains(key))
                        throw error(fmt::format("{}: {}: missing '{}'", name, ewhere, key));
                check_keys(e, energy_rules(), name, ewhere);
                run.energy_j.emplace_back(domain, e["energy_j"].get<double>());
                if (e.contains("mean_power_w") && e["mean_power_w"].get<double>() > 0)
                    run.call_period_s.emplace_back(
                        domain, e["energy_j"].get<double>() / e["mean_power_w"].get<double>());
            }
        out.runs.push_back(std::move(run));
    }
    return out;
}

measurement_file read_measurements(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw error(fmt::format("{}: cannot read the measurement file", file.string()));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw error(fmt::format("{}: error reading the file", file.string()));
    return parse_measurements(text.str(), file);
}

}  // namespace nnergy
