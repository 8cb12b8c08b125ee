// SPDX-License-Identifier: Apache-2.0
/// \file compare.hpp
/// \brief `nnergy compare`: one model on several hardware descriptions side by side, ranked per
/// metric (docs/cli.md).
#pragma once

#include <nnergy/framework/report.hpp>
#include <optional>
#include <string>
#include <vector>

namespace nnergy {

/// One device's figures, read from its run of the report document. A metric an estimator did
/// not write is empty.
struct compared_device {
    std::string hardware;
    std::string hw_class;
    std::string precision;
    std::string requested_precision;  ///< when it differs, the device lacks it
    std::optional<double> latency_s, energy_j, average_power_w, edp_j_s, peak_memory_bytes;
    /// Share of the summed kernel latency per bottleneck kind (compute, memory, overhead).
    double compute_share = 0, memory_share = 0, overhead_share = 0;
};

/// The metrics compare ranks, lower is better for each: key, label, unit.
struct compare_metric {
    const char* key;
    const char* label;
    const char* unit;
    std::optional<double> compared_device::*value;
};
const std::vector<compare_metric>& compare_metrics();

/// "1.23 ms", "456 mJ", "12.3 GB": three significant digits with a prefix for the magnitude.
std::string with_unit(double v, const char* unit);

std::vector<compared_device> read_compared(const report_value& doc);

/// Device indices best first for one metric; devices without the metric are left out.
std::vector<size_t> rank_devices(const std::vector<compared_device>& devices,
                                 std::optional<double> compared_device::*metric);

std::string compare_text(const std::string& model, const std::vector<compared_device>& devices);
std::string compare_json(const std::string& model, const std::vector<compared_device>& devices);
std::string compare_csv(const std::vector<compared_device>& devices);

}  // namespace nnergy
