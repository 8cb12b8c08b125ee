// SPDX-License-Identifier: Apache-2.0
// Calibration recipes: a fit written down as data (docs/calibrate.md, "Recipes"), so that a
// catalog table, its test and the scripts that refit it name one list of measurements, fitted
// keys and ties.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <initializer_list>
#include <nnergy/framework/calibrate.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "toml_util.hpp"

namespace nnergy {
namespace {

constexpr std::string_view k_recipe_schema = "nnergy.calibration/1";

constexpr std::array<std::string_view, 13> k_recipe_keys{
    "schema", "description", "hardware", "measurements", "runs",   "fit_to",         "objective",
    "fit",    "fix",         "ties",     "dims",         "models", "discrete_counts"};

std::string where(const std::filesystem::path& file, const toml::node& n) {
    return fmt::format("{}:{}", file.string(), detail::line_of(n));
}

/// A text value, or an error naming the file, line and key.
std::string text_of(const std::filesystem::path& file, std::string_view key, const toml::node& n) {
    if (const auto s = n.value_exact<std::string>()) return *s;
    throw error(fmt::format("{}: '{}' must be a string", where(file, n), key), exit_code::usage);
}

/// A text that must be one of `allowed`.
std::string choice_of(const std::filesystem::path& file, std::string_view key, const toml::node& n,
                      std::initializer_list<std::string_view> allowed) {
    std::string value = text_of(file, key, n);
    for (std::string_view a : allowed)
        if (value == a) return value;
    throw error(fmt::format("{}: '{}' is \"{}\"; expected one of {}", where(file, n), key, value,
                            fmt::join(allowed, ", ")),
                exit_code::usage);
}

/// A list of texts (a lone text counts as a list of one).
std::vector<std::string> texts_of(const std::filesystem::path& file, std::string_view key,
                                  const toml::node& n) {
    std::vector<std::string> out;
    if (const toml::array* a = n.as_array()) {
        for (const toml::node& e : *a) out.push_back(text_of(file, key, e));
        return out;
    }
    out.push_back(text_of(file, key, n));
    return out;
}

/// A path written in the recipe, relative to the recipe's folder.
std::string beside(const std::filesystem::path& file, const std::string& path) {
    const std::filesystem::path p(path);
    return p.is_absolute() ? path : (file.parent_path() / p).lexically_normal().string();
}

/// One entry of a hardware reference: a catalog name stays as it is; a file (a path with a
/// folder or the .toml extension) is relative to the recipe.
std::string entry_beside(const std::filesystem::path& file, const std::string& entry) {
    const bool is_file =
        entry.find('/') != std::string::npos || std::filesystem::path(entry).extension() == ".toml";
    return is_file ? beside(file, entry) : entry;
}

/// A hardware reference, BASE+OVERLAY split as everywhere else (hardware_overlay_part).
std::string hardware_beside(const std::filesystem::path& file, const std::string& hardware) {
    const std::optional<std::string> overlay = hardware_overlay_part(hardware, file.parent_path());
    if (!overlay) return entry_beside(file, hardware);
    const std::string base = hardware.substr(0, hardware.size() - overlay->size() - 1);
    return entry_beside(file, base) + "+" + entry_beside(file, *overlay);
}

}  // namespace

calibration_recipe read_calibration_recipe(const std::filesystem::path& file) {
    const toml::table t = detail::parse_toml_file(file);
    calibration_recipe r;
    const toml::node* schema = t.get("schema");
    if (!schema || schema->value_exact<std::string>() != std::string(k_recipe_schema))
        throw error(fmt::format("{}: a calibration recipe starts with schema = \"{}\"",
                                file.string(), k_recipe_schema),
                    exit_code::usage);
    for (auto&& [key, node] : t) {
        const std::string_view k = key.str();
        if (std::find(k_recipe_keys.begin(), k_recipe_keys.end(), k) == k_recipe_keys.end())
            throw error(fmt::format("{}: unknown key '{}' (a recipe has {})", where(file, node), k,
                                    fmt::join(k_recipe_keys, ", ")),
                        exit_code::usage);
        if (k == "hardware")
            r.hardware = hardware_beside(file, text_of(file, k, node));
        else if (k == "measurements")
            for (const std::string& m : texts_of(file, k, node))
                r.measurements.push_back(beside(file, m));
        else if (k == "models")
            for (const std::string& m : texts_of(file, k, node))
                r.models.push_back(beside(file, m));
        else if (k == "runs")
            r.runs = choice_of(file, k, node, {"model", "op", "all"});
        else if (k == "fit_to")
            r.fit_to = choice_of(file, k, node,
                                 {fit_quantities_name(fit_quantities::latency_and_energy),
                                  fit_quantities_name(fit_quantities::latency),
                                  fit_quantities_name(fit_quantities::energy)});
        else if (k == "objective")
            r.objective = choice_of(file, k, node,
                                    {fit_objective_name(fit_objective::log_rms),
                                     fit_objective_name(fit_objective::log_mean_abs),
                                     fit_objective_name(fit_objective::relative_rms)});
        else if (k == "fit")
            r.fit = texts_of(file, k, node);
        else if (k == "fix")
            r.fix = texts_of(file, k, node);
        else if (k == "dims")
            r.dims = texts_of(file, k, node);
        else if (k == "discrete_counts") {
            const std::optional<bool> b = node.value_exact<bool>();
            if (!b)
                throw error(
                    fmt::format("{}: 'discrete_counts' must be true or false", where(file, node)),
                    exit_code::usage);
            r.discrete_counts = *b;
        } else if (k == "ties") {
            const toml::table* ties = node.as_table();
            if (!ties)
                throw error(fmt::format("{}: 'ties' must be a table of \"FOLLOWER\" = \"LEADER\"",
                                        where(file, node)),
                            exit_code::usage);
            // In the order they are written (a TOML table iterates by key).
            std::vector<std::pair<uint32_t, calibration_tie>> written;
            for (auto&& [follower, leader] : *ties) {
                calibration_tie t{std::string(follower.str()),
                                  text_of(file, "ties." + std::string(follower.str()), leader),
                                  {}};
                t.origin = fmt::format("{}: tie {}={}", where(file, leader), t.follower, t.leader);
                written.push_back({detail::line_of(leader), std::move(t)});
            }
            std::stable_sort(written.begin(), written.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
            for (auto& w : written) r.ties.push_back(std::move(w.second));
        }
    }
    return r;
}

}  // namespace nnergy
