// SPDX-License-Identifier: Apache-2.0
/// \file html_validation.hpp
/// \brief A validation document (nnergy.validation/1, from `nnergy validate`) as a
/// self-contained HTML page in the report's style: the summary per mode and per op class, the
/// leave-out error, the thresholds, every configuration and the skipped ones.
#pragma once

#include <nnergy/reporting/validation.hpp>
#include <nnergy/sdk.hpp>
#include <string>

#include "html_assets.hpp"
#include "html_format.hpp"

namespace nnergy::html {

namespace detail {

inline std::string validation_table(const reporting::table& t) {
    std::string s = "<table>\n<thead><tr>";
    for (size_t k = 0; k < t.head.size(); ++k)
        s += std::string(k < t.numeric.size() && t.numeric[k] ? "<th class=\"num\">" : "<th>") +
             escape(t.head[k]) + "</th>";
    s += "</tr></thead>\n<tbody>\n";
    for (const auto& row : t.rows) {
        s += "<tr>";
        for (size_t k = 0; k < row.size(); ++k)
            s += std::string(k < t.numeric.size() && t.numeric[k] ? "<td class=\"num\">" : "<td>") +
                 escape(row[k]) + "</td>";
        s += "</tr>\n";
    }
    return s + "</tbody>\n</table>\n";
}

}  // namespace detail

inline std::string render_validation(const sdk::value_view& doc) {
    const reporting::validation_page p = reporting::read_validation(doc);
    const std::string title = "Validation on " + p.hardware + " (" + p.hw_class + ")";
    std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    s += "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
         std::string(content_security_policy) + "\">\n";
    s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    s += "<title>" + escape(title) + "</title>\n<style>" + std::string(style_sheet) +
         ".fail{color:#b00;font-weight:600}td.num,th.num{text-align:right;"
         "font-variant-numeric:tabular-nums}</style>\n</head>\n<body>\n";
    s += "<header class=\"page\"><h1>" + escape(title) + "</h1>\n<p>Measurements: ";
    for (size_t i = 0; i < p.measurements.size(); ++i)
        s += (i ? ", <code>" : "<code>") + escape(p.measurements[i]) + "</code>";
    s += ". " + std::to_string(p.configurations) + " configuration" +
         (p.configurations == 1 ? "" : "s") +
         " validated. Error: (predicted &minus; measured) / measured.</p>\n</header>\n<main>\n";
    s += "<section><h2>Summary per mode</h2>\n" + detail::validation_table(p.summary) +
         "</section>\n";
    if (!p.op_classes.rows.empty())
        s += "<section><h2>Op runs by class</h2>\n" + detail::validation_table(p.op_classes) +
             "</section>\n";
    if (p.has_leave_out)
        s += "<section><h2>Leave one " + escape(p.leave_out_unit) + " out</h2>\n<p>" +
             escape(p.leave_out_intro) + "</p>\n" + detail::validation_table(p.leave_out) +
             detail::validation_table(p.leave_out_groups) + "</section>\n";
    if (!p.thresholds.empty()) {
        s += "<section><h2>Thresholds</h2>\n<ul>\n";
        for (const reporting::threshold_line& t : p.thresholds)
            s +=
                std::string(t.passed ? "<li>" : "<li class=\"fail\">") + escape(t.text) + "</li>\n";
        s += "</ul>\n</section>\n";
    }
    s += "<section><h2>Configurations</h2>\n" + detail::validation_table(p.configurations_table) +
         "</section>\n";
    if (!p.skipped.empty()) {
        s += "<section><h2>Skipped</h2>\n<ul>\n";
        for (const std::string& k : p.skipped) s += "<li>" + escape(k) + "</li>\n";
        s += "</ul>\n</section>\n";
    }
    if (p.other_runs)
        s += "<p>" + std::to_string(p.other_runs) + " run" + (p.other_runs == 1 ? "" : "s") +
             " of kind op or command not compared.</p>\n";
    return s + "</main>\n</body>\n</html>\n";
}

}  // namespace nnergy::html
