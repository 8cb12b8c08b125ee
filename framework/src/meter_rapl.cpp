// SPDX-License-Identifier: Apache-2.0
// CPU package and DRAM energy through RAPL under /sys/class/powercap (intel_rapl, which also
// serves AMD's RAPL since Linux 5.11).
#include <algorithm>
#include <regex>

#include "meter_sysfs.hpp"

namespace nnergy::meters {
namespace {

const std::string permission_hint =
    ": reading RAPL energy needs root since Linux 5.10 (CVE-2020-8694); run as root, or allow it "
    "with `sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj /sys/class/powercap/"
    "intel-rapl:*:*/energy_uj` (until reboot) or a udev rule (docs/measure.md)";

class rapl_zone final : public domain_source {
public:
    rapl_zone(std::filesystem::path dir, std::string domain, std::string device, double range_j,
              file_reader reader)
        : dir_(std::move(dir)),
          domain_(std::move(domain)),
          device_(std::move(device)),
          range_j_(range_j),
          reader_(std::move(reader)) {}

    std::string domain() const override { return domain_; }
    std::string device() const override { return device_; }
    bool has_counter() const override { return true; }
    bool has_power() const override { return false; }
    double counter_range_j() const override { return range_j_; }
    double read_counter_j() override {
        return detail::read_number(reader_, dir_ / "energy_uj", "RAPL", permission_hint) * 1e-6;
    }

private:
    std::filesystem::path dir_;
    std::string domain_, device_;
    double range_j_;
    file_reader reader_;
};

}  // namespace

std::unique_ptr<meter> open_rapl_meter(meter_options options) {
    const std::filesystem::path root =
        detail::sysfs_root("NNERGY_POWERCAP_ROOT", "/sys/class/powercap");
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec))
        throw nnergy::error(fmt::format("RAPL: {} does not exist: the kernel exposes no powercap "
                                        "interface (virtual machines usually have none)",
                                        root.string()),
                            exit_code::plugin_missing);
    // intel-rapl:N is a package (or psys) zone, intel-rapl:N:M one of its sub-zones (dram,
    // core, uncore). intel-rapl-mmio duplicates the package zone on some CPUs: left out, as
    // are core and uncore, which lie inside the package.
    static const std::regex zone_re(R"(intel-rapl:(\d+)(?::(\d+))?)");
    std::vector<std::filesystem::path> dirs;
    for (const auto& entry : std::filesystem::directory_iterator(root, ec))
        if (std::regex_match(entry.path().filename().string(), zone_re))
            dirs.push_back(entry.path());
    std::sort(dirs.begin(), dirs.end());
    std::vector<std::unique_ptr<domain_source>> sources;
    for (const std::filesystem::path& dir : dirs) {
        std::smatch m;
        const std::string base = dir.filename().string();
        std::regex_match(base, m, zone_re);
        const std::string zone_name = detail::read_attribute(options.reader, dir / "name", "RAPL");
        std::string domain, device;
        if (!m[2].matched && zone_name.rfind("package-", 0) == 0) {
            domain = zone_name;
            device = "CPU " + zone_name;
        } else if (m[2].matched && zone_name == "dram") {
            domain = "dram-" + m[1].str();
            device = "DRAM of package-" + m[1].str();
        } else {
            continue;
        }
        double range_j = 0;
        std::string range_text;
        if (options.reader(dir / "max_energy_range_uj", range_text) == 0)
            range_j =
                detail::read_number(options.reader, dir / "max_energy_range_uj", "RAPL") * 1e-6;
        auto zone = std::make_unique<rapl_zone>(dir, domain, device, range_j, options.reader);
        zone->read_counter_j();  // a permission error now, before anything runs
        sources.push_back(std::move(zone));
    }
    if (sources.empty())
        throw nnergy::error(
            fmt::format("RAPL: no package or DRAM zone under {} (no intel-rapl:N directory with a "
                        "package-N name; virtual machines usually expose none, and on bare metal "
                        "the intel_rapl_msr module provides them)",
                        root.string()),
            exit_code::plugin_missing);
    return make_meter("rapl", std::move(sources), std::move(options));
}

}  // namespace nnergy::meters
