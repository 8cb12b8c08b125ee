// SPDX-License-Identifier: Apache-2.0
// Jetson boards: the INA3221 power monitors under /sys/class/hwmon, one rail per channel
// (in{N}_label), power = bus voltage (in{N}_input, mV) x current (curr{N}_input, mA).
#include <algorithm>
#include <set>

#include "meter_sysfs.hpp"

namespace nnergy::meters {
namespace {

class ina3221_rail final : public domain_source {
public:
    ina3221_rail(std::filesystem::path dir, int channel, std::string domain, file_reader reader)
        : dir_(std::move(dir)),
          channel_(channel),
          domain_(std::move(domain)),
          reader_(std::move(reader)) {}

    std::string domain() const override { return domain_; }
    std::string device() const override {
        return fmt::format("INA3221 {} channel {}", dir_.filename().string(), channel_);
    }
    bool has_counter() const override { return false; }
    bool has_power() const override { return true; }
    double read_power_w() override {
        const double mv =
            detail::read_number(reader_, dir_ / fmt::format("in{}_input", channel_), "hwmon");
        const double ma =
            detail::read_number(reader_, dir_ / fmt::format("curr{}_input", channel_), "hwmon");
        return mv * ma * 1e-6;
    }

private:
    std::filesystem::path dir_;
    int channel_;
    std::string domain_;
    file_reader reader_;
};

}  // namespace

std::unique_ptr<meter> open_hwmon_meter(meter_options options) {
    const std::filesystem::path root = detail::sysfs_root("NNERGY_HWMON_ROOT", "/sys/class/hwmon");
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec))
        throw nnergy::error(
            fmt::format("hwmon: {} does not exist: no hardware monitors", root.string()),
            exit_code::plugin_missing);
    std::vector<std::filesystem::path> dirs;
    for (const auto& entry : std::filesystem::directory_iterator(root, ec))
        if (entry.path().filename().string().rfind("hwmon", 0) == 0) dirs.push_back(entry.path());
    std::sort(dirs.begin(), dirs.end());
    std::vector<std::unique_ptr<domain_source>> sources;
    std::set<std::string> names;
    std::string first_error;  // a rail that did not read, for the message when none does
    for (const std::filesystem::path& dir : dirs) {
        std::string name;
        if (options.reader(dir / "name", name) != 0 || detail::trimmed(name) != "ina3221") continue;
        for (int ch = 1; ch <= 3; ++ch) {
            std::string label;
            if (options.reader(dir / fmt::format("in{}_label", ch), label) != 0) continue;
            label = detail::trimmed(label);
            if (label.empty()) continue;
            auto rail = std::make_unique<ina3221_rail>(dir, ch, label, options.reader);
            try {
                rail->read_power_w();
            } catch (const nnergy::error& e) {
                // A channel with a label but no readings is not connected.
                if (first_error.empty()) first_error = e.what();
                continue;
            }
            // Two monitors may name a rail alike: the second gets its monitor's name.
            std::string domain = label;
            if (!names.insert(domain).second) {
                domain = label + "@" + dir.filename().string();
                names.insert(domain);
                rail = std::make_unique<ina3221_rail>(dir, ch, domain, options.reader);
            }
            sources.push_back(std::move(rail));
        }
    }
    if (sources.empty())
        throw nnergy::error(
            fmt::format("hwmon: no INA3221 rail under {} (Jetson boards have INA3221 power "
                        "monitors; this machine shows none){}",
                        root.string(), first_error.empty() ? "" : "; " + first_error),
            exit_code::plugin_missing);
    return make_meter("hwmon", std::move(sources), std::move(options));
}

}  // namespace nnergy::meters
