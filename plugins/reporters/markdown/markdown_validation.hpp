// SPDX-License-Identifier: Apache-2.0
/// \file markdown_validation.hpp
/// \brief A validation document (nnergy.validation/1, from `nnergy validate`) as a Markdown
/// page: the summary per mode and per op class, the leave-out error, the thresholds, every
/// configuration and the skipped ones.
#pragma once

#include <nnergy/reporting/validation.hpp>
#include <nnergy/sdk.hpp>
#include <string>

#include "markdown_format.hpp"

namespace nnergy::markdown {

namespace detail {

inline std::string validation_table(const reporting::table& t) {
    std::string s = "|";
    for (const std::string& h : t.head) s += " " + escape(h) + " |";
    s += "\n|";
    for (size_t k = 0; k < t.head.size(); ++k)
        s += k < t.numeric.size() && t.numeric[k] ? "--:|" : "---|";
    s += "\n";
    for (const auto& row : t.rows) {
        s += "|";
        for (const std::string& cell : row) s += " " + escape(cell) + " |";
        s += "\n";
    }
    return s;
}

}  // namespace detail

inline std::string render_validation(const sdk::value_view& doc) {
    const reporting::validation_page p = reporting::read_validation(doc);
    std::string s = "# Validation on " + escape(p.hardware) + " (" + escape(p.hw_class) + ")\n\n";
    s += "Measurements: ";
    for (size_t i = 0; i < p.measurements.size(); ++i)
        s += (i ? ", `" : "`") + p.measurements[i] + "`";
    s += ". " + std::to_string(p.configurations) + " configuration" +
         (p.configurations == 1 ? "" : "s") +
         " validated. Error: (predicted - measured) / measured.\n\n";
    s += "## Summary per mode\n\n" + detail::validation_table(p.summary);
    if (!p.op_classes.rows.empty())
        s += "\n## Op runs by class\n\n" + detail::validation_table(p.op_classes);
    if (p.has_leave_out) {
        s += "\n## Leave one " + escape(p.leave_out_unit) + " out\n\n" + escape(p.leave_out_intro) +
             "\n\n" + detail::validation_table(p.leave_out) + "\n" +
             detail::validation_table(p.leave_out_groups);
    }
    if (!p.thresholds.empty()) {
        s += "\n## Thresholds\n\n";
        for (const reporting::threshold_line& t : p.thresholds)
            s += "- " + (t.passed ? escape(t.text) : "**" + escape(t.text) + "**") + "\n";
    }
    s += "\n## Configurations\n\n" + detail::validation_table(p.configurations_table);
    if (!p.skipped.empty()) {
        s += "\n## Skipped\n\n";
        for (const std::string& k : p.skipped) s += "- " + escape(k) + "\n";
    }
    if (p.other_runs)
        s += "\n" + std::to_string(p.other_runs) + " run" + (p.other_runs == 1 ? "" : "s") +
             " of kind op or command not compared.\n";
    return s;
}

}  // namespace nnergy::markdown
