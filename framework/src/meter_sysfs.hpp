// SPDX-License-Identifier: Apache-2.0
// Reading sysfs attributes for the RAPL and hwmon meters, with messages that name the file.
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/meter.hpp>
#include <string>

namespace nnergy::meters::detail {

/// The root of a sysfs class: the environment variable's value (tests), else the default.
inline std::filesystem::path sysfs_root(const char* env_var, const char* fallback) {
    const char* env = std::getenv(env_var);
    return env && *env ? std::filesystem::path(env) : std::filesystem::path(fallback);
}

inline std::string trimmed(std::string s) {
    while (!s.empty() &&
           (s.back() == '\n' || s.back() == ' ' || s.back() == '\r' || s.back() == '\t'))
        s.pop_back();
    return s;
}

/// The attribute's text without the trailing newline; throws with `what_needed` appended to a
/// permission error.
inline std::string read_attribute(const file_reader& reader, const std::filesystem::path& file,
                                  const char* meter_name, const std::string& what_needed = {}) {
    std::string out;
    const int e = reader(file, out);
    if (e == EACCES || e == EPERM)
        throw nnergy::error(fmt::format("{}: cannot read {}: permission denied{}", meter_name,
                                        file.string(), what_needed),
                            exit_code::plugin_missing);
    if (e != 0)
        throw nnergy::error(
            fmt::format("{}: cannot read {}: {}", meter_name, file.string(), std::strerror(e)),
            exit_code::plugin_missing);
    return trimmed(std::move(out));
}

/// A non-negative integer attribute (energy_uj, curr1_input).
inline double read_number(const file_reader& reader, const std::filesystem::path& file,
                          const char* meter_name, const std::string& what_needed = {}) {
    const std::string text = read_attribute(reader, file, meter_name, what_needed);
    long long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        throw nnergy::error(
            fmt::format("{}: {}: expected an integer, read '{}'", meter_name, file.string(), text),
            exit_code::failure);
    return static_cast<double>(v);
}

}  // namespace nnergy::meters::detail
