// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>

#include <nnergy/framework/error.hpp>
#include <nnergy/framework/hardware_catalog.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <string>
#include <vector>

namespace nnergy {
namespace {

std::string text_of(const config_values& v, std::string_view key) {
    const config_value* x = find_value(v, key);
    return x && x->kind == NNERGY_VALUE_STRING ? x->string_value : std::string("-");
}

/// A value in the given SI scale ("1e12" for TFLOP/s), or "-" when the file lacks it.
std::string scaled(const config_values& v, std::string_view key, double scale) {
    const config_value* x = find_value(v, key);
    if (!x || x->kind != NNERGY_VALUE_FLOAT) return "-";
    return fmt::format("{:.4g}", x->float_value / scale);
}

/// The better of two precisions' peaks (float16 and bfloat16 share a column).
std::string best_of(const config_values& v, std::string_view a, std::string_view b, double scale) {
    const config_value* x = find_value(v, a);
    const config_value* y = find_value(v, b);
    double best = 0;
    for (const config_value* p : {x, y})
        if (p && p->kind == NNERGY_VALUE_FLOAT) best = std::max(best, p->float_value);
    return best > 0 ? fmt::format("{:.4g}", best / scale) : std::string("-");
}

}  // namespace

int print_hardware_list(std::FILE* out) {
    const source_location nowhere{"hardware list", 0};
    int rc = 0;
    fmt::print(out, "{:<22} {:<5} {:>9} {:>11} {:>9} {:>9} {:>6}  {}\n", "name", "class",
               "fp32 TF/s", "16-bit TF/s", "int8 TO/s", "DRAM GB/s", "TDP W", "description");
    for (const std::string& name : hardware_catalog()) {
        try {
            const config_values v = read_hardware_file(
                resolve_hardware(name, std::filesystem::current_path(), nowhere));
            fmt::print(out, "{:<22} {:<5} {:>9} {:>11} {:>9} {:>9} {:>6}  {}\n", name,
                       text_of(v, "class"), scaled(v, "compute.float32.peak", 1e12),
                       best_of(v, "compute.float16.peak", "compute.bfloat16.peak", 1e12),
                       scaled(v, "compute.int8.peak", 1e12),
                       scaled(v, "memory.dram.bandwidth", 1e9), scaled(v, "power.tdp", 1),
                       text_of(v, "description"));
        } catch (const error& e) {
            fmt::print(out, "{:<22} (invalid: {})\n", name, e.what());
            rc = static_cast<int>(exit_code::invalid_input);
        }
    }
    fmt::print(out,
               "\nPeaks are dense (no sparsity); '-' where the device has no such unit. "
               "`nnergy hardware show NAME` lists every value with its source.\n");
    return rc;
}

int print_hardware_show(const std::string& ref, std::FILE* out) {
    const source_location nowhere{"hardware show", 0};
    const std::filesystem::path file =
        resolve_hardware(ref, std::filesystem::current_path(), nowhere);
    const config_values v = read_hardware_file(file);
    fmt::print(out, "{} ({}, {}): {}\nfile: {}\n\n", text_of(v, "name"), text_of(v, "class"),
               text_of(v, "vendor"), text_of(v, "description"), file.string());
    // Each [[borrow]] once, with its reason; its values below cite only where they came from.
    struct borrow_line {
        std::string from, reason;
        size_t values = 0;
    };
    std::vector<borrow_line> borrows;
    const auto borrow_of = [&](const config_value& x) -> size_t {  // 1-based, as printed
        for (size_t i = 0; i < borrows.size(); ++i)
            if (borrows[i].from == x.borrowed_from && borrows[i].reason == x.borrow_reason)
                return i + 1;
        borrows.push_back({x.borrowed_from, x.borrow_reason, 0});
        return borrows.size();
    };
    for (const config_value& x : v)
        if (!x.borrowed_from.empty()) ++borrows[borrow_of(x) - 1].values;
    for (size_t i = 0; i < borrows.size(); ++i)
        fmt::print(out, "borrowed from {} ({} values, marked [{}] below): {}\n", borrows[i].from,
                   borrows[i].values, i + 1, borrows[i].reason);
    if (!borrows.empty()) fmt::print(out, "\n");
    for (const config_value& x : v) {
        if (x.name == "name" || x.name == "class" || x.name == "vendor" ||
            x.name == "description" || x.name == "schema")
            continue;
        if (!x.unit.empty() && !x.borrowed_from.empty()) {
            fmt::print(out, "{} = {:g} {}\n    source: [{}] {}: {}\n", x.name, x.written_value,
                       x.unit, borrow_of(x), x.borrowed_from, x.source);
        } else if (!x.unit.empty()) {
            fmt::print(out, "{} = {:g} {}\n    source: {}\n", x.name, x.written_value, x.unit,
                       x.source);
        } else if (x.kind == NNERGY_VALUE_STRING) {
            fmt::print(out, "{} = \"{}\"\n", x.name, x.string_value);
        } else if (x.kind == NNERGY_VALUE_BOOL) {
            fmt::print(out, "{} = {}\n", x.name, x.bool_value ? "true" : "false");
        }
    }
    return 0;
}

}  // namespace nnergy
