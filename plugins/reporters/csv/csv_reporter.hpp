// SPDX-License-Identifier: Apache-2.0
/// \file csv_reporter.hpp
/// \brief nnergy.reporter.csv: the report document (docs/report.md) as spreadsheet tables:
/// one row per kernel per run, and a companion file with one row of totals per run.
#pragma once

#include <algorithm>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "csv_format.hpp"

namespace nnergy::csv {

struct render_options {
    bool op_metrics = false;                    ///< keep the per-op `op.<node>.*` metric columns
    std::string totals_suffix = "-totals.csv";  ///< companion output; empty: none
    std::string eol = "\n";
};

/// The columns that name a run, first in both tables.
inline const std::vector<std::string>& run_columns() {
    static const std::vector<std::string> columns = {"run", "hardware", "precision", "dims"};
    return columns;
}

/// The kernel fields of the document that precede the metrics in the kernel table.
inline const std::vector<std::string>& kernel_columns() {
    static const std::vector<std::string> columns = {
        "kernel", "name",        "pattern",      "ops",          "macs",
        "flops",  "input_bytes", "output_bytes", "weight_bytes", "arithmetic_intensity"};
    return columns;
}

namespace detail {

/// A value as a field: numbers read back exactly, integers as integers, text as is.
inline std::string value_field(const sdk::value_view& v) {
    switch (v.kind()) {
        case NNERGY_VALUE_INT:
            return integer(v.as_int());
        case NNERGY_VALUE_FLOAT:
            return number(v.as_number());
        case NNERGY_VALUE_STRING:
            return std::string(v.as_string());
        case NNERGY_VALUE_BOOL:
            return v.as_bool() ? "true" : "false";
        default:
            return {};
    }
}

/// "batch=1 seq=128": the run's own bindings, else the model's.
inline std::string dims_field(const sdk::value_view& run, const sdk::value_view& model) {
    const sdk::value_view dims = run["dims"] ? run["dims"] : model["dims"];
    std::string s;
    for (size_t i = 0; i < dims.size(); ++i)
        s += (s.empty() ? "" : " ") + std::string(dims.key(i)) + "=" + value_field(dims.at(i));
    return s;
}

inline std::vector<std::string> run_fields(const sdk::value_view& run, size_t index,
                                           const sdk::value_view& model) {
    const sdk::value_view arch = run["architecture"];
    return {std::to_string(index + 1), value_field(arch["hardware"]),
            value_field(arch["precision"]), dims_field(run, model)};
}

/// Keys in first-seen order, each once.
class key_union {
public:
    void add(std::string_view key) {
        if (seen_.insert(std::string(key)).second) keys_.emplace_back(key);
    }
    const std::vector<std::string>& keys() const noexcept { return keys_; }

private:
    std::vector<std::string> keys_;
    std::unordered_set<std::string> seen_;
};

}  // namespace detail

/// The kernel table: one row per kernel per run.
inline std::string render_kernels(const sdk::value_view& doc, const render_options& opt = {}) {
    using namespace detail;
    const sdk::value_view model = doc["model"];
    const sdk::value_view runs = doc["runs"];
    // Metric keys over every run; one that repeats a fixed column's name gets a prefix.
    key_union metrics;
    for (size_t r = 0; r < runs.size(); ++r) {
        const sdk::value_view kernels = runs.at(r)["kernels"];
        for (size_t k = 0; k < kernels.size(); ++k) {
            const sdk::value_view m = kernels.at(k)["metrics"];
            for (size_t i = 0; i < m.size(); ++i) {
                const std::string_view key = m.key(i);
                if (!opt.op_metrics && key.substr(0, 3) == "op.") continue;
                metrics.add(key);
            }
        }
    }
    std::vector<std::string> header = run_columns();
    for (const std::string& c : kernel_columns()) header.push_back(c);
    for (const std::string& key : metrics.keys()) {
        const bool clash = std::find(header.begin(), header.end(), key) != header.end();
        header.push_back(clash ? "metrics." + key : key);
    }
    std::string s = record(header, opt.eol);
    for (size_t r = 0; r < runs.size(); ++r) {
        const sdk::value_view run = runs.at(r);
        const std::vector<std::string> who = run_fields(run, r, model);
        const sdk::value_view kernels = run["kernels"];
        for (size_t k = 0; k < kernels.size(); ++k) {
            const sdk::value_view kernel = kernels.at(k);
            std::vector<std::string> row = who;
            std::string ops;
            const sdk::value_view op_list = kernel["ops"];
            for (size_t j = 0; j < op_list.size(); ++j)
                ops += (j ? "+" : "") + value_field(op_list.at(j));
            row.push_back(value_field(kernel["index"]));
            row.push_back(value_field(kernel["name"]));
            row.push_back(value_field(kernel["pattern"]));
            row.push_back(ops);
            for (size_t c = 4; c < kernel_columns().size(); ++c)
                row.push_back(value_field(kernel[kernel_columns()[c]]));
            const sdk::value_view m = kernel["metrics"];
            for (const std::string& key : metrics.keys()) row.push_back(value_field(m[key]));
            s += record(row, opt.eol);
        }
    }
    return s;
}

/// The totals table: one row per run, every total key over the runs in first-seen order.
inline std::string render_totals(const sdk::value_view& doc, const render_options& opt = {}) {
    using namespace detail;
    const sdk::value_view model = doc["model"];
    const sdk::value_view runs = doc["runs"];
    key_union keys;
    for (size_t r = 0; r < runs.size(); ++r) {
        const sdk::value_view totals = runs.at(r)["totals"];
        for (size_t i = 0; i < totals.size(); ++i) keys.add(totals.key(i));
    }
    std::vector<std::string> header = run_columns();
    for (const std::string& key : keys.keys()) {
        const bool clash = std::find(header.begin(), header.end(), key) != header.end();
        header.push_back(clash ? "totals." + key : key);
    }
    std::string s = record(header, opt.eol);
    for (size_t r = 0; r < runs.size(); ++r) {
        const sdk::value_view run = runs.at(r);
        std::vector<std::string> row = run_fields(run, r, model);
        const sdk::value_view totals = run["totals"];
        for (const std::string& key : keys.keys()) row.push_back(value_field(totals[key]));
        s += record(row, opt.eol);
    }
    return s;
}

/// Reads the reporter's keys, naming the file and line of a bad one.
inline render_options parse_options(const sdk::config_view& config) {
    config.expect_only({"op_metrics", "totals", "line_ending"}, "nnergy.reporter.csv");
    render_options opt;
    opt.op_metrics = config.boolean("op_metrics").value_or(false);
    if (const auto suffix = config.string("totals")) {
        if (suffix->find_first_of("/\\") != std::string::npos)
            throw sdk::error(sdk::config_view::where(*config.find("totals")) +
                             ": 'totals' is a file name suffix (\"-totals.csv\"), without a "
                             "path separator; \"\" writes no totals file");
        opt.totals_suffix = *suffix;
    }
    if (const auto eol = config.string("line_ending")) {
        if (*eol == "lf")
            opt.eol = "\n";
        else if (*eol == "crlf")
            opt.eol = "\r\n";
        else
            throw sdk::error(sdk::config_view::where(*config.find("line_ending")) +
                             ": 'line_ending' must be \"lf\" or \"crlf\", not \"" + *eol + "\"");
    }
    return opt;
}

class csv_reporter : public sdk::reporter {
public:
    explicit csv_reporter(const sdk::context& ctx)
        : sdk::reporter(ctx), options_(parse_options(ctx.config())) {}

    void report(const sdk::value_view& doc, sdk::output_writer& out) override {
        out.write(render_kernels(doc, options_));
        if (!options_.totals_suffix.empty()) write_totals(doc, out);
    }

private:
    /// The totals go to a companion output beside the kernel table (report-totals.csv). On
    /// standard output they follow the kernel table; an empty line tells the two apart.
    void write_totals(const sdk::value_view& doc, sdk::output_writer& out) const {
        sdk::output_writer totals = out.companion(options_.totals_suffix);
        if (out.path().empty()) totals.write(options_.eol);
        totals.write(render_totals(doc, options_));
    }

    render_options options_;
};

}  // namespace nnergy::csv
