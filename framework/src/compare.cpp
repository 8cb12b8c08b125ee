// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <nnergy/framework/compare.hpp>

namespace nnergy {
namespace {

std::optional<double> number_at(const report_value* obj, std::string_view key) {
    if (!obj) return std::nullopt;
    const report_value* v = obj->get(key);
    if (!v || (v->kind() != NNERGY_VALUE_FLOAT && v->kind() != NNERGY_VALUE_INT))
        return std::nullopt;
    return v->float_value();
}

std::string text_at(const report_value* obj, std::string_view key) {
    if (!obj) return {};
    const report_value* v = obj->get(key);
    return v ? std::string(v->string_value()) : std::string();
}

}  // namespace

std::string with_unit(double v, const char* unit) {
    static const std::pair<double, const char*> small[] = {
        {1, ""}, {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"}, {1e-12, "p"}};
    static const std::pair<double, const char*> large[] = {
        {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
    const double a = std::fabs(v);
    if (a >= 1) {
        for (const auto& [f, p] : large)
            if (a >= f) return fmt::format("{:.3g} {}{}", v / f, p, unit);
    }
    for (const auto& [f, p] : small)
        if (a >= f) return fmt::format("{:.3g} {}{}", v / f, p, unit);
    return fmt::format("{:.3g} {}", v, unit);
}

namespace {

std::string cell(const std::optional<double>& v, const char* unit) {
    return v ? with_unit(*v, unit) : std::string("-");
}

}  // namespace

const std::vector<compare_metric>& compare_metrics() {
    static const std::vector<compare_metric> m = {
        {"latency_s", "latency", "s", &compared_device::latency_s},
        {"energy_j", "energy per inference", "J", &compared_device::energy_j},
        {"average_power_w", "average power", "W", &compared_device::average_power_w},
        {"edp_j_s", "energy-delay product", "J*s", &compared_device::edp_j_s},
        {"peak_memory_bytes", "peak memory", "B", &compared_device::peak_memory_bytes}};
    return m;
}

std::vector<compared_device> read_compared(const report_value& doc) {
    std::vector<compared_device> out;
    const report_value* runs = doc.get("runs");
    if (!runs) return out;
    for (const report_value& run : runs->items()) {
        compared_device d;
        const report_value* arch = run.get("architecture");
        d.hardware = text_at(arch, "hardware");
        d.hw_class = text_at(arch, "class");
        d.precision = text_at(arch, "precision");
        const report_value* t = run.get("totals");
        d.latency_s = number_at(t, "latency_s");
        d.energy_j = number_at(t, "energy_j");
        d.average_power_w = number_at(t, "average_power_w");
        d.edp_j_s = number_at(t, "edp_j_s");
        d.peak_memory_bytes = number_at(t, "peak_memory_bytes");
        double compute = 0, memory = 0, overhead = 0;
        if (const report_value* kernels = run.get("kernels"))
            for (const report_value& k : kernels->items()) {
                const report_value* m = k.get("metrics");
                const double l = number_at(m, "latency_s").value_or(0);
                const std::string b = text_at(m, "bottleneck");
                if (b == "compute")
                    compute += l;
                else if (b.rfind("memory", 0) == 0)
                    memory += l;
                else if (b == "overhead")
                    overhead += l;
            }
        const double sum = compute + memory + overhead;
        if (sum > 0) {
            d.compute_share = compute / sum;
            d.memory_share = memory / sum;
            d.overhead_share = overhead / sum;
        }
        out.push_back(std::move(d));
    }
    return out;
}

std::vector<size_t> rank_devices(const std::vector<compared_device>& devices,
                                 std::optional<double> compared_device::*metric) {
    std::vector<size_t> order;
    for (size_t i = 0; i < devices.size(); ++i)
        if (devices[i].*metric) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return *(devices[a].*metric) < *(devices[b].*metric);
    });
    return order;
}

std::string compare_text(const std::string& model, const std::vector<compared_device>& devices) {
    std::string s = fmt::format("nnergy compare: {} on {} devices\n\n", model, devices.size());
    // Devices as rows: the table stays readable however many there are.
    s += fmt::format("  {:<22} {:<6} {:<10} {:>10} {:>10} {:>10} {:>11} {:>10}  {}\n", "hardware",
                     "class", "precision", "latency", "energy", "power", "EDP", "memory",
                     "bottlenecks (share of latency)");
    s += "  " + std::string(120, '-') + "\n";
    bool substituted = false;
    for (const compared_device& d : devices) {
        // A device that lacks the requested precision runs at its own, marked with '*'.
        const bool own = !d.requested_precision.empty() && d.precision != d.requested_precision;
        substituted = substituted || own;
        s += fmt::format(
            "  {:<22} {:<6} {:<10} {:>10} {:>10} {:>10} {:>11} {:>10}  "
            "compute {:.0f}%, memory {:.0f}%, overhead {:.0f}%\n",
            d.hardware, d.hw_class, own ? d.precision + "*" : d.precision, cell(d.latency_s, "s"),
            cell(d.energy_j, "J"), cell(d.average_power_w, "W"), cell(d.edp_j_s, "J*s"),
            cell(d.peak_memory_bytes, "B"), 100 * d.compute_share, 100 * d.memory_share,
            100 * d.overhead_share);
    }
    if (substituted)
        s += "  * the device does not offer " + devices.front().requested_precision +
             "; it runs at its own precision\n";
    s += "\n";
    for (const compare_metric& m : compare_metrics()) {
        const std::vector<size_t> order = rank_devices(devices, m.value);
        if (order.empty()) {
            s += fmt::format("  {}: not estimated\n", m.label);
            continue;
        }
        const compared_device& best = devices[order.front()];
        s += fmt::format("  best {}: {} ({})", m.label, best.hardware,
                         with_unit(*(best.*m.value), m.unit));
        if (order.size() > 1) {
            const compared_device& next = devices[order[1]];
            const double a = *(best.*m.value), b = *(next.*m.value);
            if (a > 0) s += fmt::format(", {:.2g}x better than {}", b / a, next.hardware);
        }
        s += "; ranking:";
        for (size_t i : order) s += " " + devices[i].hardware;
        s += "\n";
    }
    return s;
}

std::string compare_json(const std::string& model, const std::vector<compared_device>& devices) {
    nlohmann::ordered_json doc;
    doc["schema"] = "nnergy.compare/1";
    doc["model"] = model;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const compared_device& d : devices) {
        nlohmann::ordered_json x;
        x["hardware"] = d.hardware;
        x["class"] = d.hw_class;
        x["precision"] = d.precision;
        x["requested_precision"] = d.requested_precision;
        for (const compare_metric& m : compare_metrics())
            x[m.key] =
                d.*m.value ? nlohmann::ordered_json(*(d.*m.value)) : nlohmann::ordered_json();
        x["bottleneck_mix"] = {{"compute", d.compute_share},
                               {"memory", d.memory_share},
                               {"overhead", d.overhead_share}};
        list.push_back(std::move(x));
    }
    doc["devices"] = std::move(list);
    nlohmann::ordered_json ranking;
    for (const compare_metric& m : compare_metrics()) {
        nlohmann::ordered_json order = nlohmann::ordered_json::array();
        for (size_t i : rank_devices(devices, m.value)) order.push_back(devices[i].hardware);
        ranking[m.key] = std::move(order);
    }
    doc["ranking"] = std::move(ranking);
    return doc.dump(2) + "\n";
}

std::string compare_csv(const std::vector<compared_device>& devices) {
    std::string s =
        "hardware,class,precision,latency_s,energy_j,average_power_w,edp_j_s,"
        "peak_memory_bytes,compute_share,memory_share,overhead_share\n";
    auto num = [](const std::optional<double>& v) {
        return v ? fmt::format("{:.9g}", *v) : std::string();
    };
    for (const compared_device& d : devices)
        s += fmt::format("{},{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f}\n", d.hardware, d.hw_class,
                         d.precision, num(d.latency_s), num(d.energy_j), num(d.average_power_w),
                         num(d.edp_j_s), num(d.peak_memory_bytes), d.compute_share, d.memory_share,
                         d.overhead_share);
    return s;
}

}  // namespace nnergy
