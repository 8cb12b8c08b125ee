// SPDX-License-Identifier: Apache-2.0
/// \file validation.hpp
/// \brief A validation document (schema nnergy.validation/1, docs/validate.md) read into the
/// tables and lines a page shows, as text cells: a reporter adds only its markup (the Markdown
/// and HTML reporters use it; a vendor's reporter can too). Header-only C++17 over sdk.hpp.
#pragma once

#include <cmath>
#include <cstdio>
#include <nnergy/modeling/text.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nnergy::reporting {

/// A table as text: a heading per column, whether the column holds figures (right-aligned), and
/// the rows' cells.
struct table {
    std::vector<std::string> head;
    std::vector<bool> numeric;
    std::vector<std::vector<std::string>> rows;
};

struct threshold_line {
    std::string text;  ///< "latency MAPE of eager at most 15%: 11.9%, ok"
    bool passed = false;
};

/// Everything a validation page shows, in reading order.
struct validation_page {
    std::string hardware;
    std::string hw_class;
    std::vector<std::string> measurements;  ///< the measurement files
    size_t configurations = 0;
    table summary;  ///< per metric and mode: MAPE and worst case
    /// Op runs per mode and op class: latency MAPE and worst case, energy MAPE; no rows unless
    /// the op runs span more than one class.
    table op_classes;
    bool has_leave_out = false;
    std::string leave_out_unit;   ///< "model", "family" or "source"
    std::string leave_out_intro;  ///< what was refitted and held out, as a sentence
    table leave_out;              ///< per metric and mode: entry, in sample, held out, ratio
    table leave_out_groups;       ///< held-out latency (and energy) MAPE per group and mode
    std::vector<threshold_line> thresholds;
    table configurations_table;        ///< every configuration, measured vs predicted
    std::vector<std::string> skipped;  ///< "model (mode), N configurations: reason"
    size_t other_runs = 0;             ///< runs of kind op or command not compared
};

namespace detail {

using modeling::format;

inline std::string signed_pct(const std::optional<double>& x) {
    return x ? format("%+.1f%%", *x) : std::string("-");
}
inline std::string pct(const std::optional<double>& x) {
    return x ? format("%.1f%%", *x) : std::string("-");
}
inline std::string plural(size_t n) { return n == 1 ? "" : "s"; }
inline size_t count(const sdk::value_view& v) {
    const std::optional<double> x = v.number();
    return x && *x > 0 ? static_cast<size_t>(*x) : 0;
}

/// "resnet50 float16 batch 8"
inline std::string config_name(const sdk::value_view& c) {
    return c["model"].text() + " " + c["precision"].text() + " batch " + c["batch"].text();
}

/// The configuration a summary's `worst` names, or "-".
inline std::string worst_name(const sdk::value_view& worst, const sdk::value_view& configs) {
    const size_t at = count(worst["configuration"]);
    return at < configs.size() ? config_name(configs.at(at)) : std::string("-");
}

inline std::string threshold_text(const sdk::value_view& t) {
    const std::string head = t["metric"].text() + " MAPE of " + t["mode"].text() + " at most " +
                             format("%.4g", t["max_mape_pct"].number().value_or(0)) + "%";
    const std::optional<double> mape = t["mape_pct"].number();
    if (!mape) return head + ": FAILED, no configuration to compare";
    return head + ": " + pct(mape) + ", " + (t["passed"].as_bool() ? "ok" : "FAILED");
}

inline std::string leave_out_intro(const sdk::value_view& lo) {
    const std::string unit = lo["unit"].text();
    const sdk::value_view params = lo["parameters"];
    std::string list;
    for (size_t i = 0; i < params.size(); ++i) list += (i ? ", " : "") + params.at(i).text();
    const size_t groups = lo["groups"].size();
    return "Leave one " + unit + " out: the entry's " + std::to_string(params.size()) +
           " fitted constant" + plural(params.size()) + " (" + list +
           ") refitted on every configuration (in sample), then once without each of the " +
           std::to_string(groups) + " " + (unit == "family" ? "families" : unit + "s") +
           ", predicting the one left out.";
}

}  // namespace detail

/// Whether `doc` is a validation document rather than an estimate's report.
inline bool is_validation(const sdk::value_view& doc) {
    return doc["schema"].text() == "nnergy.validation/1";
}

/// Reads a validation document; absent parts give empty tables, never an error, so that a
/// page can always be written.
inline validation_page read_validation(const sdk::value_view& doc) {
    using detail::format;
    using detail::pct;
    using detail::signed_pct;
    validation_page page;
    page.hardware = doc["hardware"].text();
    page.hw_class = doc["class"].text();
    const sdk::value_view files = doc["measurements"];
    for (size_t i = 0; i < files.size(); ++i) page.measurements.push_back(files.at(i).text());
    const sdk::value_view configs = doc["configurations"];
    page.configurations = configs.size();

    page.summary.head = {"metric",
                         "mode",
                         "runtime",
                         "configurations",
                         "MAPE",
                         "worst error",
                         "worst configuration"};
    page.summary.numeric = {false, false, false, true, true, true, false};
    const sdk::value_view modes = doc["modes"];
    for (const char* metric : {"latency", "energy"})
        for (size_t i = 0; i < modes.size(); ++i) {
            const sdk::value_view m = modes.at(i);
            const sdk::value_view s = m[metric];
            if (s.kind() != NNERGY_VALUE_OBJECT) continue;
            page.summary.rows.push_back({metric, m["mode"].text(), m["runtime"].text(),
                                         std::to_string(detail::count(s["configurations"])),
                                         pct(s["mape_pct"].number()),
                                         signed_pct(s["worst"]["error_pct"].number()),
                                         detail::worst_name(s["worst"], configs)});
        }

    page.op_classes.head = {"mode",         "op class",    "configurations",
                            "latency MAPE", "worst error", "worst configuration",
                            "energy MAPE"};
    page.op_classes.numeric = {false, false, true, true, true, false, true};
    // One class alone would repeat its mode's row.
    const sdk::value_view classes = doc["op_classes"];
    if (classes.size() > 1)
        for (size_t i = 0; i < classes.size(); ++i) {
            const sdk::value_view c = classes.at(i);
            const sdk::value_view s = c["latency"], energy = c["energy"];
            page.op_classes.rows.push_back(
                {c["mode"].text(), c["op_class"].text(),
                 std::to_string(detail::count(s["configurations"])), pct(s["mape_pct"].number()),
                 signed_pct(s["worst"]["error_pct"].number()),
                 detail::worst_name(s["worst"], configs),
                 energy.kind() == NNERGY_VALUE_OBJECT ? pct(energy["mape_pct"].number())
                                                      : std::string("-")});
        }

    if (const sdk::value_view lo = doc["leave_out"]; lo.kind() == NNERGY_VALUE_OBJECT) {
        page.has_leave_out = true;
        page.leave_out_unit = lo["unit"].text();
        page.leave_out_intro = detail::leave_out_intro(lo);
        page.leave_out.head = {"metric",    "mode",     "configurations", "entry MAPE",
                               "in sample", "held out", "ratio"};
        page.leave_out.numeric = {false, false, true, true, true, true, true};
        const sdk::value_view rows = lo["modes"];
        for (size_t i = 0; i < rows.size(); ++i) {
            const sdk::value_view r = rows.at(i);
            const std::optional<double> ratio = r["ratio"].number();
            page.leave_out.rows.push_back({r["metric"].text(), r["mode"].text(),
                                           std::to_string(detail::count(r["configurations"])),
                                           pct(r["entry_mape_pct"].number()),
                                           pct(r["in_sample_mape_pct"].number()),
                                           pct(r["held_out_mape_pct"].number()),
                                           ratio ? format("%.2fx", *ratio) : std::string("-")});
        }
        // An energy column where some group has an energy (a document without the key has
        // none).
        const sdk::value_view groups = lo["per_group"];
        bool group_energy = false;
        for (size_t i = 0; i < groups.size(); ++i)
            group_energy = group_energy || groups.at(i)["energy_mape_pct"].number().has_value();
        page.leave_out_groups.head = {"held out", "mode", "configurations", "latency MAPE"};
        page.leave_out_groups.numeric = {false, false, true, true};
        if (group_energy) {
            page.leave_out_groups.head.push_back("energy MAPE");
            page.leave_out_groups.numeric.push_back(true);
        }
        for (size_t i = 0; i < groups.size(); ++i) {
            const sdk::value_view g = groups.at(i);
            std::vector<std::string> row = {g["group"].text(), g["mode"].text(),
                                            std::to_string(detail::count(g["configurations"])),
                                            pct(g["latency_mape_pct"].number())};
            if (group_energy) row.push_back(pct(g["energy_mape_pct"].number()));
            page.leave_out_groups.rows.push_back(std::move(row));
        }
    }

    const sdk::value_view thresholds = doc["thresholds"];
    for (size_t i = 0; i < thresholds.size(); ++i)
        page.thresholds.push_back(
            {detail::threshold_text(thresholds.at(i)), thresholds.at(i)["passed"].as_bool()});

    // Energy columns only where a configuration has a measured energy.
    bool any_energy = false;
    for (size_t i = 0; i < configs.size(); ++i)
        if (configs.at(i)["energy_j"]["measured"].number()) any_energy = true;
    table& t = page.configurations_table;
    t.head = {"model",          "precision", "batch", "mode", "runtime", "latency measured (ms)",
              "predicted (ms)", "error"};
    t.numeric = {false, false, true, false, false, true, true, true};
    if (any_energy) {
        t.head.insert(t.head.end(), {"energy measured (J)", "predicted (J)", "error"});
        t.numeric.insert(t.numeric.end(), {true, true, true});
    }
    const auto ms = [](const std::optional<double>& s) {
        return s ? format("%.3f", 1e3 * *s) : std::string("-");
    };
    const auto joules = [](const std::optional<double>& j) {
        return j ? format("%.4g", *j) : std::string("-");
    };
    for (size_t i = 0; i < configs.size(); ++i) {
        const sdk::value_view c = configs.at(i);
        const sdk::value_view lat = c["latency_s"], en = c["energy_j"];
        // Predicted at the run's timing floor: the estimate was below it (docs/validate.md).
        const std::optional<double> floor = lat["floor"].number(),
                                    estimate = lat["estimate"].number();
        const bool at_floor = floor && estimate && *estimate < *floor;
        std::vector<std::string> row{c["model"].text(),
                                     c["precision"].text(),
                                     c["batch"].text(),
                                     c["mode"].text(),
                                     c["runtime"].text(),
                                     ms(lat["measured"].number()),
                                     ms(lat["predicted"].number()) + (at_floor ? " (floor)" : ""),
                                     signed_pct(lat["error_pct"].number())};
        if (any_energy)
            row.insert(row.end(),
                       {joules(en["measured"].number()), joules(en["predicted"].number()),
                        signed_pct(en["error_pct"].number())});
        t.rows.push_back(std::move(row));
    }

    const sdk::value_view skipped = doc["skipped"];
    for (size_t i = 0; i < skipped.size(); ++i) {
        const sdk::value_view s = skipped.at(i);
        const size_t n = detail::count(s["configurations"]);
        page.skipped.push_back(s["model"].text() + " (" + s["mode"].text() + "), " +
                               std::to_string(n) + " configuration" + detail::plural(n) + ": " +
                               s["reason"].text());
    }
    page.other_runs = detail::count(doc["other_runs"]);
    return page;
}

}  // namespace nnergy::reporting
