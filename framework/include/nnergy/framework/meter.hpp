// SPDX-License-Identifier: Apache-2.0
/// \file meter.hpp
/// \brief Energy meters: a stopwatch for joules over NVML (NVIDIA GPUs), RAPL (CPU package and
/// DRAM under /sys/class/powercap) and INA3221 rails under hwmon (Jetson). docs/measure.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nnergy::meters {

/// How a domain's energy was obtained.
enum class energy_method {
    counter,  ///< a hardware energy counter, read at both ends of the window
    sampled   ///< power samples integrated over the window
};
const char* method_name(energy_method m) noexcept;

/// One power sample: seconds since the window began, watts.
struct power_sample {
    double t_s = 0;
    double power_w = 0;
};

/// What one domain measured over one window.
struct reading {
    std::string meter;   ///< "nvml", "rapl", "hwmon"
    std::string domain;  ///< "gpu0", "package-0", "dram-0", a rail name ("VDD_GPU_SOC")
    std::string device;  ///< what it is: the GPU's name, "CPU package 0", "INA3221 rail"
    energy_method method = energy_method::counter;
    /// Absent when the domain gave no usable figure (warnings say why): never a silent 0 J.
    std::optional<double> energy_j;
    double window_s = 0;
    std::optional<double> mean_power_w;     ///< energy_j / window_s
    std::optional<double> peak_power_w;     ///< the highest power sample; absent without samples
    std::vector<power_sample> samples;      ///< as sampled while the window was open
    std::optional<double> update_period_s;  ///< the counter's, where detected
    /// A counter's power between the first and the last update seen in the window, and the time
    /// between them: exact for steady work, free of the up-to-one-period lag of the window's
    /// ends (the update times are known to a sampling period). Absent with fewer than two.
    std::optional<double> counter_power_w;
    std::optional<double> counter_span_s;
    std::vector<std::string> warnings;  ///< short window, counter that did not move, ...
};

/// Reads a whole small file (a sysfs attribute) into `out`; returns 0 or an errno value. The
/// meters read sysfs through this, so tests can inject failures that root would not see.
using file_reader = std::function<int(const std::filesystem::path& file, std::string& out)>;
int read_small_file(const std::filesystem::path& file, std::string& out);

struct meter_options {
    /// Power sampling period of the background thread (peak power, sampled domains).
    std::chrono::microseconds sample_period{10000};
    /// Longest time spent detecting a counter's update period.
    std::chrono::milliseconds detect_timeout{1500};
    /// A window shorter than this many update periods gets a warning.
    double min_periods = 3;
    file_reader reader = read_small_file;
};

/// One domain as a meter implementation sees it: a counter, a power reading, or both.
class domain_source {
public:
    virtual ~domain_source() = default;
    virtual std::string domain() const = 0;
    virtual std::string device() const = 0;
    virtual bool has_counter() const = 0;
    /// The counter's raw value in joules; it wraps to 0 past counter_range_j() (0: never).
    virtual double read_counter_j() { return 0; }
    virtual double counter_range_j() const { return 0; }
    virtual bool has_power() const = 0;
    virtual double read_power_w() { return 0; }
};

/// A meter: begin() opens a window over all its domains, end() closes it with one reading per
/// domain. begin() throws nnergy::error when a domain cannot be read; end() never throws for a
/// domain's failure (the reading carries the warning). Not thread-safe; one window at a time.
class meter {
public:
    virtual ~meter() = default;
    virtual std::string name() const = 0;
    virtual std::vector<std::string> domains() const = 0;
    virtual void begin() = 0;
    virtual std::vector<reading> end() = 0;
    /// The slowest counter update period among the domains (detected on first use); absent when
    /// no domain has a counter or none was seen to change.
    virtual std::optional<double> update_period_s() = 0;
    virtual const meter_options& options() const = 0;
};

/// A meter over the given domains (what the NVML, RAPL and hwmon meters are built from).
std::unique_ptr<meter> make_meter(std::string name,
                                  std::vector<std::unique_ptr<domain_source>> sources,
                                  meter_options options = {});

/// NVIDIA GPUs through NVML, loaded at run time: $NNERGY_NVML_LIBRARY, else libnvidia-ml.so.1.
/// `gpus`: NVML indices to meter (empty: all). Throws nnergy::error (exit code plugin_missing)
/// when the library does not load or initialise, or an index does not exist.
std::unique_ptr<meter> open_nvml_meter(const std::vector<unsigned>& gpus = {},
                                       meter_options options = {});

/// CPU packages and DRAM through RAPL under $NNERGY_POWERCAP_ROOT, else /sys/class/powercap.
std::unique_ptr<meter> open_rapl_meter(meter_options options = {});

/// Jetson INA3221 rails under $NNERGY_HWMON_ROOT, else /sys/class/hwmon.
std::unique_ptr<meter> open_hwmon_meter(meter_options options = {});

/// The energy a counter advanced from `before` to `after` when it wraps to 0 past `range`
/// (0: a counter that does not wrap; a decrease is then reported as nullopt).
std::optional<double> counter_delta(double before, double after, double range);

/// Integrates power samples over [0, window_s] by the trapezoid rule, holding the first and last
/// samples flat to the window's ends.
double integrate_samples(const std::vector<power_sample>& samples, double window_s);

/// How often `read` changes: the median interval between consecutive changes (3 intervals),
/// polling every `poll`; nullopt when it does not change often enough before `timeout`.
std::optional<double> detect_update_period(
    const std::function<double()>& read, std::chrono::milliseconds timeout,
    std::chrono::microseconds poll = std::chrono::microseconds(100));

struct steady_options {
    double window_s = 0.5;    ///< averaging window
    double tolerance = 0.05;  ///< relative distance from the final window's mean power
};

/// Where a power series reaches its steady state: the index of the first sample from which the
/// mean power of every window (of `window_s`) stays within `tolerance` of the final window's.
/// nullopt when the series spans less than two windows or is still changing less than two
/// windows before its end.
std::optional<std::size_t> steady_state_start(const std::vector<power_sample>& samples,
                                              const steady_options& options = {});

struct repeat_options {
    double min_periods = 10;       ///< the window spans at least this many update periods
    double min_window_s = 0.1;     ///< and at least this long
    std::size_t warmup_calls = 1;  ///< calls before the window opens (not measured)
    std::size_t max_calls = 1000000;
    double max_window_s = 60;  ///< give up growing the window past this
};

struct repeated_readings {
    std::vector<reading> readings;  ///< for the whole window (all calls)
    std::size_t calls = 0;          ///< calls inside the window
    double window_s = 0;
    /// readings[i].energy_j / calls, where there is a figure
    std::vector<std::optional<double>> energy_per_call_j;
};

/// Measures `work` with `m`, calling it as many times as it takes for the window to span
/// options.min_periods update periods of the meter's slowest counter (or enough power samples):
/// a kernel shorter than the counter's update period gets a figure, not 0 J.
repeated_readings measure_repeated(meter& m, const std::function<void()>& work,
                                   const repeat_options& options = {});

/// Idle power per domain over `duration`: one window with nothing running.
std::vector<reading> idle_baseline(meter& m, std::chrono::milliseconds duration);

}  // namespace nnergy::meters
