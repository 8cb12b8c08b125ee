// SPDX-License-Identifier: Apache-2.0
// Reading TOML files into flattened configuration values, and hardware descriptions whose every
// number carries a unit and a source.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <map>
#include <mutex>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "config_cache.hpp"
#include "toml_util.hpp"

namespace nnergy {
namespace detail {
std::string join_key(const std::string& prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

void flatten_toml(const toml::node& n, const std::string& name, const std::string& file,
                  config_values& out) {
    if (const toml::table* t = n.as_table()) {
        for (auto&& [k, v] : *t) flatten_toml(v, join_key(name, k.str()), file, out);
        return;
    }
    if (const toml::array* a = n.as_array()) {
        for (size_t i = 0; i < a->size(); ++i)
            flatten_toml(*a->get(i), fmt::format("{}[{}]", name, i), file, out);
        return;
    }
    config_value v;
    v.name = name;
    v.file = file;
    v.line = line_of(n);
    if (auto b = n.value_exact<bool>()) {
        v.kind = NNERGY_VALUE_BOOL;
        v.bool_value = *b;
    } else if (auto i = n.value_exact<int64_t>()) {
        v.kind = NNERGY_VALUE_INT;
        v.int_value = *i;
        v.float_value = static_cast<double>(*i);
    } else if (auto d = n.value_exact<double>()) {
        v.kind = NNERGY_VALUE_FLOAT;
        v.float_value = *d;
    } else if (auto s = n.value_exact<std::string>()) {
        v.kind = NNERGY_VALUE_STRING;
        v.string_value = *s;
    } else {
        throw error(
            fmt::format("{}:{}: '{}': dates and times are not supported here", file, v.line, name));
    }
    out.push_back(std::move(v));
}

toml::table parse_toml_file(const std::filesystem::path& file) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
        throw error(fmt::format("{}: no such file", file.string()));
    try {
        return toml::parse_file(file.string());
    } catch (const toml::parse_error& e) {
        throw error(fmt::format("{}:{}:{}: invalid TOML: {}", file.string(), e.source().begin.line,
                                e.source().begin.column, e.description()));
    }
}

toml::table parse_toml_text(std::string_view text, const std::filesystem::path& file) {
    try {
        return toml::parse(text, file.string());
    } catch (const toml::parse_error& e) {
        throw error(fmt::format("{}:{}:{}: invalid TOML: {}", file.string(), e.source().begin.line,
                                e.source().begin.column, e.description()));
    }
}

}  // namespace detail

namespace {
using detail::join_key;
using detail::line_of;

/// What a unit measures, for the range of values a device can have (plausible_range()).
enum class quantity_kind {
    count,   ///< of units, lanes, tiles; fitted counts may be fractional
    factor,  ///< fractions, ratios and percentages
    compute_rate,
    bandwidth,
    size,
    time,
    frequency,
    power,
    energy,
    energy_per_work,  ///< per byte, FLOP or operation
    per_cycle,
};

struct unit_factor {
    std::string_view unit;
    double factor;
    quantity_kind kind;
};

// Every unit a hardware file may use, and its factor to SI base units (bytes, seconds, FLOP,
// hertz, watts, joules). Decimal prefixes for rates and sizes follow datasheets (1 TB/s = 1e12
// B/s).
constexpr std::array k_units{
    unit_factor{"1", 1, quantity_kind::factor},
    unit_factor{"count", 1, quantity_kind::count},
    unit_factor{"%", 0.01, quantity_kind::factor},
    unit_factor{"FLOP/s", 1, quantity_kind::compute_rate},
    unit_factor{"kFLOP/s", 1e3, quantity_kind::compute_rate},
    unit_factor{"MFLOP/s", 1e6, quantity_kind::compute_rate},
    unit_factor{"GFLOP/s", 1e9, quantity_kind::compute_rate},
    unit_factor{"TFLOP/s", 1e12, quantity_kind::compute_rate},
    unit_factor{"PFLOP/s", 1e15, quantity_kind::compute_rate},
    unit_factor{"OP/s", 1, quantity_kind::compute_rate},
    unit_factor{"kOP/s", 1e3, quantity_kind::compute_rate},
    unit_factor{"MOP/s", 1e6, quantity_kind::compute_rate},
    unit_factor{"GOP/s", 1e9, quantity_kind::compute_rate},
    unit_factor{"TOP/s", 1e12, quantity_kind::compute_rate},
    unit_factor{"POP/s", 1e15, quantity_kind::compute_rate},
    unit_factor{"B/s", 1, quantity_kind::bandwidth},
    unit_factor{"KB/s", 1e3, quantity_kind::bandwidth},
    unit_factor{"MB/s", 1e6, quantity_kind::bandwidth},
    unit_factor{"GB/s", 1e9, quantity_kind::bandwidth},
    unit_factor{"TB/s", 1e12, quantity_kind::bandwidth},
    unit_factor{"KiB/s", 1024.0, quantity_kind::bandwidth},
    unit_factor{"MiB/s", 1048576.0, quantity_kind::bandwidth},
    unit_factor{"GiB/s", 1073741824.0, quantity_kind::bandwidth},
    unit_factor{"TiB/s", 1099511627776.0, quantity_kind::bandwidth},
    unit_factor{"B", 1, quantity_kind::size},
    unit_factor{"KB", 1e3, quantity_kind::size},
    unit_factor{"MB", 1e6, quantity_kind::size},
    unit_factor{"GB", 1e9, quantity_kind::size},
    unit_factor{"TB", 1e12, quantity_kind::size},
    unit_factor{"KiB", 1024.0, quantity_kind::size},
    unit_factor{"MiB", 1048576.0, quantity_kind::size},
    unit_factor{"GiB", 1073741824.0, quantity_kind::size},
    unit_factor{"TiB", 1099511627776.0, quantity_kind::size},
    unit_factor{"s", 1, quantity_kind::time},
    unit_factor{"ms", 1e-3, quantity_kind::time},
    unit_factor{"us", 1e-6, quantity_kind::time},
    unit_factor{"ns", 1e-9, quantity_kind::time},
    unit_factor{"Hz", 1, quantity_kind::frequency},
    unit_factor{"kHz", 1e3, quantity_kind::frequency},
    unit_factor{"MHz", 1e6, quantity_kind::frequency},
    unit_factor{"GHz", 1e9, quantity_kind::frequency},
    unit_factor{"W", 1, quantity_kind::power},
    unit_factor{"mW", 1e-3, quantity_kind::power},
    unit_factor{"kW", 1e3, quantity_kind::power},
    unit_factor{"J", 1, quantity_kind::energy},
    unit_factor{"mJ", 1e-3, quantity_kind::energy},
    unit_factor{"uJ", 1e-6, quantity_kind::energy},
    unit_factor{"nJ", 1e-9, quantity_kind::energy},
    unit_factor{"pJ", 1e-12, quantity_kind::energy},
    unit_factor{"pJ/B", 1e-12, quantity_kind::energy_per_work},
    unit_factor{"pJ/FLOP", 1e-12, quantity_kind::energy_per_work},
    unit_factor{"pJ/op", 1e-12, quantity_kind::energy_per_work},
    unit_factor{"FLOP/cycle", 1, quantity_kind::per_cycle},
    unit_factor{"B/cycle", 1, quantity_kind::per_cycle},
};

const unit_factor* find_unit(std::string_view unit) {
    for (const unit_factor& u : k_units)
        if (u.unit == unit) return &u;
    return nullptr;
}

/// The magnitudes, in SI units, that a value of each kind may have: several orders of magnitude
/// beyond any device built or proposed on both sides, so that a design study is never refused,
/// but a slipped exponent or unit (a peak of 1e-300 TFLOP/s, 1e9 GB of cache) is caught where
/// it is written instead of turning every estimate into a meaningless number.
struct plausible_range {
    std::string_view what;
    double low, high;
};

std::optional<plausible_range> plausible_range_of(quantity_kind kind) {
    switch (kind) {
        // Dimensionless values are bounded tighter by the keys that read them (an efficiency
        // in (0, 1]); these ranges only keep a count or a factor from overflowing the products
        // and quotients a model forms with it (1e308 lanes make every rate zero).
        case quantity_kind::count:  // a fitted count may be a fraction (a half-tile point)
            return plausible_range{"a count", 1e-6, 1e12};
        case quantity_kind::factor:
            return plausible_range{"a fraction or factor", 1e-12, 1e12};
        case quantity_kind::compute_rate:  // 1 kFLOP/s to 100 EFLOP/s
            return plausible_range{"a rate of work", 1e3, 1e20};
        case quantity_kind::bandwidth:  // 1 KB/s to 1 EB/s
            return plausible_range{"a bandwidth", 1e3, 1e18};
        case quantity_kind::size:  // 1 byte to 10 PB
            return plausible_range{"a size", 1, 1e16};
        case quantity_kind::time:  // 1 fs to about three hours
            return plausible_range{"a time", 1e-15, 1e4};
        case quantity_kind::frequency:  // 1 kHz to 10 THz
            return plausible_range{"a frequency", 1e3, 1e13};
        case quantity_kind::power:  // 1 nW to 10 MW
            return plausible_range{"a power", 1e-9, 1e7};
        case quantity_kind::energy:  // below the Landauer limit's 3e-21 J per bit, to 1 kJ
            return plausible_range{"an energy per event", 1e-21, 1e3};
        case quantity_kind::energy_per_work:  // 1e-21 J to 1 uJ per byte or operation
            return plausible_range{"an energy per byte or operation", 1e-21, 1e-6};
        case quantity_kind::per_cycle:
            return plausible_range{"an amount per cycle", 1e-6, 1e9};
    }
    return std::nullopt;
}

std::string known_units() {
    std::string s;
    for (const unit_factor& u : k_units) {
        if (!s.empty()) s += ", ";
        s += u.unit;
    }
    return s;
}

bool is_quantity_table(const toml::table& t) { return t.contains("value"); }

/// The units an energy quantity may have (docs/hardware.md, "Energy"): energy per FLOP or
/// operation for compute, per byte for memory, per event for control and vendor categories,
/// power or a fraction for the static table. Empty when the key is not an energy quantity.
std::string_view energy_units_for(std::string_view name, std::string_view unit) {
    if (name.substr(0, 7) != "energy.") return {};
    const std::string_view rest = name.substr(7);
    auto one_of = [&](std::initializer_list<std::string_view> units,
                      std::string_view what) -> std::string_view {
        for (std::string_view u : units)
            if (u == unit) return {};
        return what;
    };
    if (rest.substr(0, 6) == "fused.") return one_of({"%", "1"}, "a fraction: \"%\" or \"1\"");
    if (rest.substr(0, 7) == "static.") {
        if (rest == "static.power_gating") return one_of({"%", "1"}, "a fraction: \"%\" or \"1\"");
        return one_of({"W", "mW", "kW"}, "a power: \"W\", \"mW\" or \"kW\"");
    }
    if (rest.substr(0, 8) == "compute.")
        return one_of({"pJ/FLOP", "pJ/op"}, "an energy per operation: \"pJ/FLOP\" or \"pJ/op\"");
    if (rest.substr(0, 7) == "memory.") return one_of({"pJ/B"}, "an energy per byte: \"pJ/B\"");
    return one_of({"pJ", "nJ", "uJ", "mJ", "J"},
                  "an energy per event: \"pJ\", \"nJ\", \"uJ\", \"mJ\" or \"J\"");
}

void flatten_hardware(const toml::node& n, const std::string& name, const std::string& file,
                      config_values& out) {
    if (const toml::table* t = n.as_table()) {
        if (!is_quantity_table(*t)) {
            for (auto&& [k, v] : *t) flatten_hardware(v, join_key(name, k.str()), file, out);
            return;
        }
        const uint32_t line = line_of(n);
        for (auto&& [k, v] : *t) {
            if (k != "value" && k != "unit" && k != "source" && k != "note")
                throw error(
                    fmt::format("{}:{}: '{}': unknown key '{}' in a quantity (expected "
                                "value, unit, source and optionally note)",
                                file, line_of(v), name, k.str()));
        }
        auto value = (*t)["value"].value<double>();
        auto unit = (*t)["unit"].value<std::string>();
        auto source = (*t)["source"].value<std::string>();
        if (!value)
            throw error(fmt::format("{}:{}: '{}': 'value' must be a number", file, line, name));
        // TOML reads nan and inf as numbers; no quantity of a part is either.
        if (!std::isfinite(*value))
            throw error(fmt::format("{}:{}: '{}': 'value' must be a finite number, got {}", file,
                                    line, name, *value));
        if (!unit)
            throw error(fmt::format("{}:{}: '{}': a quantity needs a 'unit' (one of: {})", file,
                                    line, name, known_units()));
        if (!source || source->empty())
            throw error(
                fmt::format("{}:{}: '{}': a quantity needs a non-empty 'source' "
                            "(datasheet, paper or measurement)",
                            file, line, name));
        if (const std::string_view expected = energy_units_for(name, *unit); !expected.empty())
            throw error(
                fmt::format("{}:{}: '{}': unit '{}' is not {}", file, line, name, *unit, expected));
        const unit_factor* known = find_unit(*unit);
        if (!known)
            throw error(fmt::format("{}:{}: '{}': unknown unit '{}' (known: {})", file, line, name,
                                    *unit, known_units()));
        config_value v;
        v.name = name;
        v.kind = NNERGY_VALUE_FLOAT;
        v.float_value = *value * known->factor;
        if (!std::isfinite(v.float_value))
            throw error(fmt::format("{}:{}: '{}': {} {} is out of range (beyond {:g} in SI units)",
                                    file, line, name, *value, *unit,
                                    std::numeric_limits<double>::max()));
        // Zero and the sign are left to the checks of the key's reader (a peak must be
        // positive, an idle power may be zero): only a magnitude no device has is refused here.
        if (const std::optional<plausible_range> range = plausible_range_of(known->kind);
            range && v.float_value != 0 &&
            (std::fabs(v.float_value) < range->low || std::fabs(v.float_value) > range->high))
            throw error(fmt::format(
                "{}:{}: '{}': {} {} is beyond any device's range for {} (expected {:g} to {:g} "
                "{}, or 0 where the key allows it); check the exponent and the unit",
                file, line, name, *value, *unit, range->what, range->low / known->factor,
                range->high / known->factor, *unit));
        v.file = file;
        v.line = line;
        v.unit = *unit;
        v.written_value = *value;
        v.source = *source;
        out.push_back(std::move(v));
        return;
    }
    if (n.is_number())
        throw error(
            fmt::format("{}:{}: '{}': a bare number is not allowed in a hardware or runtime file; "
                        "write {{ value = ..., unit = \"...\", source = \"...\" }}",
                        file, line_of(n), name));
    if (const toml::array* a = n.as_array()) {
        for (size_t i = 0; i < a->size(); ++i)
            flatten_hardware(*a->get(i), fmt::format("{}[{}]", name, i), file, out);
        return;
    }
    detail::flatten_toml(n, name, file, out);
}

}  // namespace

std::optional<std::pair<double, double>> plausible_si_range(std::string_view unit) {
    const unit_factor* known = find_unit(unit);
    if (!known) return std::nullopt;
    const std::optional<plausible_range> range = plausible_range_of(known->kind);
    if (!range) return std::nullopt;
    return std::pair{range->low, range->high};
}

namespace {

std::string read_file_bytes(const std::filesystem::path& file) {
    std::string bytes;
    std::error_code ec;
    std::FILE* f =
        std::filesystem::is_regular_file(file, ec) ? std::fopen(file.c_str(), "rb") : nullptr;
    if (!f) throw error(fmt::format("{}: no such file", file.string()));
    char buf[16384];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
    std::fclose(f);
    return bytes;
}

}  // namespace

config_values read_toml_file(const std::filesystem::path& file) {
    const std::string bytes = read_file_bytes(file);
    if (std::optional<config_values> cached = config_cache::load("", file, bytes))
        return std::move(*cached);
    toml::table root = detail::parse_toml_text(bytes, file);
    config_values out;
    detail::flatten_toml(root, "", file.string(), out);
    config_cache::store("", file, bytes, out);
    return out;
}

namespace {

// Hardware and runtime files: every number a quantity with a source, a schema and a name.
config_values parse_described_file(const std::filesystem::path& file, std::string_view text,
                                   std::string_view schema_name) {
    toml::table root = detail::parse_toml_text(text, file);
    config_values out;
    flatten_hardware(root, "", file.string(), out);
    const config_value* schema = find_value(out, "schema");
    if (!schema || schema->string_value != schema_name)
        throw error(fmt::format("{}:{}: expected schema = \"{}\"", file.string(),
                                schema ? schema->line : 1, schema_name));
    // An overlay (a hardware file with `base`) inherits its base's name.
    if (!find_value(out, "name") && !find_value(out, "base"))
        throw error(fmt::format("{}: missing required key 'name'", file.string()));
    return out;
}

// One run reads the same hardware or runtime file at several steps (choosing the architecture
// plugin, listing precisions, running): it is parsed once and reused while its bytes stay the
// same (reading them costs a hundredth of parsing them).
config_values read_described_file(const std::filesystem::path& file, std::string_view schema_name) {
    struct parsed {
        std::string bytes;
        config_values values;
    };
    static std::mutex mutex;
    static std::map<std::string, parsed, std::less<>> files;

    std::string bytes = read_file_bytes(file);
    std::string key = std::string(schema_name) + '\n' + file.string();
    {
        std::lock_guard lock(mutex);
        if (auto it = files.find(key); it != files.end() && it->second.bytes == bytes)
            return it->second.values;
    }
    // Then what an earlier process parsed (an entry is only made from a file that parsed).
    std::optional<config_values> cached = config_cache::load(schema_name, file, bytes);
    const bool parsed_here = !cached;
    config_values values =
        parsed_here ? parse_described_file(file, bytes, schema_name) : std::move(*cached);
    if (parsed_here) config_cache::store(schema_name, file, bytes, values);
    std::lock_guard lock(mutex);
    files[std::move(key)] = parsed{std::move(bytes), values};
    return values;
}

}  // namespace

std::vector<std::string> hardware_precisions(const config_values& hardware) {
    std::vector<std::string> out;
    for (std::string_view p : {"float64", "float32", "tfloat32", "bfloat16", "float16",
                               "float8_e4m3", "float8_e5m2", "int8", "int4"}) {
        std::string key = "compute.";
        key += p;
        key += ".peak";
        if (find_value(hardware, key)) out.emplace_back(p);
    }
    return out;
}

namespace {

config_values read_hardware_stack(const std::filesystem::path& file,
                                  std::vector<std::filesystem::path>& stack);

// Keys an entry cannot borrow: what names and classifies the entry itself.
bool identity_key(std::string_view key) {
    for (std::string_view k : {"schema", "name", "base", "class", "vendor", "description"})
        if (key == k) return true;
    return key == "borrow" || key.substr(0, 7) == "borrow[" || key.substr(0, 7) == "borrow.";
}

bool under_prefix(std::string_view key, std::string_view prefix) {
    return key == prefix || (key.size() > prefix.size() && key.substr(0, prefix.size()) == prefix &&
                             (key[prefix.size()] == '.' || key[prefix.size()] == '['));
}

// `[[borrow]]` tables (docs/hardware.md, "Borrowed tables"): keys under the listed prefixes
// taken from another entry, where the file does not give them itself. A borrowed number keeps
// its file, line and source (where it is written, and how it was had there) and carries the
// borrowing file's reason; a borrowed provenance becomes "theoretical": it was measured or
// fitted on the other device.
void apply_borrows(const std::filesystem::path& file, config_values& own,
                   std::vector<std::filesystem::path>& stack) {
    struct borrow_spec {
        const config_value* from = nullptr;
        const config_value* source = nullptr;
        std::vector<const config_value*> keys;
        uint32_t line = 0;
    };
    std::map<size_t, borrow_spec> specs;
    for (const config_value& v : own) {
        const std::string_view name = v.name;
        if (name == "borrow" || name.substr(0, 7) == "borrow.")
            throw error(fmt::format("{}:{}: 'borrow' is an array of tables: write [[borrow]]",
                                    file.string(), v.line));
        if (name.substr(0, 7) != "borrow[") continue;
        const size_t close = name.find(']');
        size_t index = 0;
        const std::string_view digits =
            name.substr(7, close == std::string_view::npos ? 0 : close - 7);
        for (char c : digits) index = index * 10 + static_cast<size_t>(c - '0');
        const std::string_view field = close == std::string_view::npos || close + 1 >= name.size()
                                           ? std::string_view{}
                                           : name.substr(close + 2);
        borrow_spec& spec = specs[index];
        if (spec.line == 0 || v.line < spec.line) spec.line = v.line;
        if (field == "from")
            spec.from = &v;
        else if (field == "source")
            spec.source = &v;
        else if (field.substr(0, 5) == "keys[")
            spec.keys.push_back(&v);
        else
            throw error(
                fmt::format("{}:{}: unknown key '{}' in [[borrow]] (expected from, keys, "
                            "source)",
                            file.string(), v.line, v.name));
    }
    if (specs.empty()) return;
    config_values borrowed;
    std::unordered_set<std::string> given;  // the file's own keys, then those borrowed
    for (const config_value& v : own) given.insert(v.name);
    for (const auto& [index, spec] : specs) {
        const source_location where{file.string(), spec.line};
        const auto text = [](const config_value* v) {
            return v && v->kind == NNERGY_VALUE_STRING && !v->string_value.empty();
        };
        if (!text(spec.from) || !text(spec.source) || spec.keys.empty())
            throw error(fmt::format(
                "{}: [[borrow]] needs from = \"<catalog name or path>\", keys = [\"<key "
                "prefix>\", ...] and source = \"<why the values hold for this device>\"",
                where.str()));
        const std::filesystem::path lender_file =
            resolve_hardware(spec.from->string_value, file.parent_path(), where);
        const size_t depth = stack.size();
        stack.push_back(std::filesystem::weakly_canonical(file));
        if (std::find(stack.begin(), stack.end(), std::filesystem::weakly_canonical(lender_file)) !=
            stack.end())
            throw error(
                fmt::format("{}: borrows from '{}', which reads this file again (a cycle "
                            "of base or borrow keys)",
                            where.str(), spec.from->string_value));
        if (stack.size() > 8)
            throw error(
                fmt::format("{}: more than 8 files stacked by base and borrow keys", where.str()));
        const config_values lender = read_hardware_stack(lender_file, stack);
        stack.resize(depth);  // what the lender's own base keys stacked is done with too
        for (const config_value* key : spec.keys) {
            if (key->kind != NNERGY_VALUE_STRING || key->string_value.empty() ||
                identity_key(key->string_value))
                throw error(
                    fmt::format("{}:{}: [[borrow]] keys: '{}' is not a key prefix that "
                                "can be borrowed (a table such as \"gpu.kernels\" or a "
                                "key; not name, class or base)",
                                file.string(), key->line, key->string_value));
            size_t matched = 0;
            for (const config_value& v : lender) {
                if (!under_prefix(v.name, key->string_value) || identity_key(v.name)) continue;
                ++matched;
                if (!given.insert(v.name).second) continue;
                config_value copy = v;
                const std::string_view last = std::string_view(copy.name).substr(
                    copy.name.rfind('.') == std::string::npos ? 0 : copy.name.rfind('.') + 1);
                if (copy.kind == NNERGY_VALUE_STRING &&
                    (last == "provenance" ||
                     (last.size() > 11 && last.substr(last.size() - 11) == "_provenance")))
                    copy.string_value = "theoretical";
                copy.borrowed_from = spec.from->string_value;
                copy.borrow_reason = spec.source->string_value;
                borrowed.push_back(std::move(copy));
            }
            if (matched == 0)
                throw error(fmt::format(
                    "{}:{}: [[borrow]] from '{}': it has no key '{}' or "
                    "under it",
                    file.string(), key->line, spec.from->string_value, key->string_value));
        }
    }
    std::erase_if(own, [](const config_value& v) { return v.name.substr(0, 7) == "borrow["; });
    for (config_value& v : borrowed) own.push_back(std::move(v));
}

// A hardware file with `base` is an overlay (docs/hardware.md, "Overlays"): the base entry's
// values with the overlay's replacing those of the same name and its new ones added. Its own
// values include what it borrows.
config_values read_hardware_stack(const std::filesystem::path& file,
                                  std::vector<std::filesystem::path>& stack) {
    config_values own = read_described_file(file, "nnergy.hardware/1");
    apply_borrows(file, own, stack);
    const config_value* base = find_value(own, "base");
    if (!base) return own;
    const source_location where{file.string(), base->line};
    if (base->kind != NNERGY_VALUE_STRING || base->string_value.empty())
        throw error(
            fmt::format("{}: 'base' must name the hardware entry the file overlays (a "
                        "catalog name or a path relative to the file)",
                        where.str()));
    const std::filesystem::path base_file =
        resolve_hardware(base->string_value, file.parent_path(), where);
    stack.push_back(std::filesystem::weakly_canonical(file));
    if (std::find(stack.begin(), stack.end(), std::filesystem::weakly_canonical(base_file)) !=
        stack.end())
        throw error(fmt::format("{}: base '{}' overlays itself (a cycle of base keys)", where.str(),
                                base->string_value));
    if (stack.size() > 8) throw error(fmt::format("{}: more than 8 overlays stacked", where.str()));
    config_values merged = read_hardware_stack(base_file, stack);
    for (config_value& v : own) {
        if (v.name == "base" || v.name == "schema") continue;
        bool replaced = false;
        for (config_value& b : merged)
            if (b.name == v.name) {
                b = std::move(v);
                replaced = true;
                break;
            }
        if (!replaced) merged.push_back(std::move(v));
    }
    return merged;
}

}  // namespace

config_values read_hardware_file(const std::filesystem::path& file) {
    std::vector<std::filesystem::path> stack;
    return read_hardware_stack(file, stack);
}

config_values read_calibration_template(const std::filesystem::path& file) {
    return read_described_file(file, "nnergy.calibration/1");
}

config_values read_runtime_file(const std::filesystem::path& file) {
    return read_described_file(file, "nnergy.runtime/1");
}

const config_value* find_value(const config_values& values, std::string_view name) noexcept {
    for (const config_value& v : values)
        if (v.name == name) return &v;
    return nullptr;
}

}  // namespace nnergy
