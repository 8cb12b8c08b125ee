// SPDX-License-Identifier: Apache-2.0
// The meter machinery shared by NVML, RAPL and hwmon: windows, the sampling thread, counter
// wrap-around, update-period detection, steady state, repetition of short work.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/meter.hpp>
#include <thread>

namespace nnergy::meters {

using steady = std::chrono::steady_clock;

const char* method_name(energy_method m) noexcept {
    return m == energy_method::counter ? "counter" : "sampled";
}

int read_small_file(const std::filesystem::path& file, std::string& out) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    out.clear();
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            return e;
        }
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
        if (out.size() > (1u << 16)) break;  // sysfs attributes are short
    }
    ::close(fd);
    return 0;
}

std::optional<double> counter_delta(double before, double after, double range) {
    if (after >= before) return after - before;
    if (range <= 0) return std::nullopt;
    return after + range - before;
}

double integrate_samples(const std::vector<power_sample>& samples, double window_s) {
    if (samples.empty() || window_s <= 0) return 0;
    double e = samples.front().power_w * std::clamp(samples.front().t_s, 0.0, window_s);
    for (size_t i = 1; i < samples.size(); ++i) {
        const double t0 = std::clamp(samples[i - 1].t_s, 0.0, window_s);
        const double t1 = std::clamp(samples[i].t_s, 0.0, window_s);
        e += 0.5 * (samples[i - 1].power_w + samples[i].power_w) * (t1 - t0);
    }
    const double last = std::clamp(samples.back().t_s, 0.0, window_s);
    return e + samples.back().power_w * (window_s - last);
}

std::optional<double> detect_update_period(const std::function<double()>& read,
                                           std::chrono::milliseconds timeout,
                                           std::chrono::microseconds poll) {
    const auto start = steady::now();
    double value = read();
    std::vector<steady::time_point> changes;
    while (steady::now() - start < timeout && changes.size() < 4) {
        std::this_thread::sleep_for(poll);
        const double v = read();
        if (v != value) {
            changes.push_back(steady::now());
            value = v;
        }
    }
    // The first change only synchronises: intervals are counted between changes.
    if (changes.size() < 2) return std::nullopt;
    std::vector<double> intervals;
    for (size_t i = 1; i < changes.size(); ++i)
        intervals.push_back(std::chrono::duration<double>(changes[i] - changes[i - 1]).count());
    std::sort(intervals.begin(), intervals.end());
    return intervals[intervals.size() / 2];
}

std::optional<std::size_t> steady_state_start(const std::vector<power_sample>& samples,
                                              const steady_options& options) {
    if (samples.size() < 2 || options.window_s <= 0) return std::nullopt;
    const double t_last = samples.back().t_s;
    if (t_last - samples.front().t_s < 2 * options.window_s) return std::nullopt;
    // Prefix sums, so each window's mean costs O(1).
    std::vector<double> prefix(samples.size() + 1, 0.0);
    for (size_t i = 0; i < samples.size(); ++i) prefix[i + 1] = prefix[i] + samples[i].power_w;
    const auto mean = [&](size_t from, size_t to) {  // [from, to)
        return (prefix[to] - prefix[from]) / static_cast<double>(to - from);
    };
    size_t ref_from = samples.size() - 1;
    while (ref_from > 0 && samples[ref_from - 1].t_s >= t_last - options.window_s) --ref_from;
    const double ref = mean(ref_from, samples.size());
    const double tol = options.tolerance * std::max(std::abs(ref), 1e-12);
    // Windows [t_i, t_i + w] for every i whose window fits; the last one out of tolerance ends
    // the warm-up.
    std::optional<size_t> last_bad;
    size_t last_valid = 0;
    size_t end = 0;
    for (size_t i = 0; i < samples.size() && samples[i].t_s + options.window_s <= t_last; ++i) {
        end = std::max(end, i + 1);
        while (end < samples.size() && samples[end].t_s <= samples[i].t_s + options.window_s) ++end;
        if (std::abs(mean(i, end) - ref) > tol) last_bad = i;
        last_valid = i;
    }
    if (!last_bad) return 0;
    // Still changing near the end: a steady state shorter than two windows is none.
    if (*last_bad >= last_valid || t_last - samples[*last_bad + 1].t_s < 2 * options.window_s)
        return std::nullopt;
    return *last_bad + 1;
}

namespace {

/// A domain and its state while a window is open.
struct domain_state {
    std::unique_ptr<domain_source> src;
    std::optional<double> period_s;
    // The window.
    double last_raw = 0;
    double accumulated_j = 0;  ///< counter energy since begin, wrap-arounds included
    bool seen_change = false;
    double last_change_t = 0;
    double energy_at_last_change = 0;
    double first_change_t = 0;
    double energy_at_first_change = 0;
    std::vector<power_sample> samples;
    std::vector<std::string> warnings;
    std::string error;
};

class source_meter final : public meter {
public:
    source_meter(std::string name, std::vector<std::unique_ptr<domain_source>> sources,
                 meter_options options)
        : name_(std::move(name)), options_(std::move(options)) {
        for (auto& s : sources) {
            domain_state d;
            d.src = std::move(s);
            states_.push_back(std::move(d));
        }
    }
    ~source_meter() override { stop_sampler(); }

    std::string name() const override { return name_; }
    std::vector<std::string> domains() const override {
        std::vector<std::string> out;
        for (const domain_state& d : states_) out.push_back(d.src->domain());
        return out;
    }
    const meter_options& options() const override { return options_; }

    std::optional<double> update_period_s() override {
        detect_periods();
        std::optional<double> slowest;
        for (const domain_state& d : states_)
            if (d.period_s && (!slowest || *d.period_s > *slowest)) slowest = d.period_s;
        return slowest;
    }

    void begin() override {
        if (open_)
            throw nnergy::error(name_ + ": begin() while a window is open", exit_code::internal);
        detect_periods();
        for (domain_state& d : states_) {
            d.accumulated_j = 0;
            d.seen_change = false;
            d.last_change_t = 0;
            d.energy_at_last_change = 0;
            d.first_change_t = 0;
            d.energy_at_first_change = 0;
            d.samples.clear();
            d.warnings.clear();
            d.error.clear();
        }
        t0_ = steady::now();
        for (domain_state& d : states_) {
            // Errors here propagate: nothing has run yet, so the caller can still stop.
            if (d.src->has_counter()) d.last_raw = d.src->read_counter_j();
            if (d.src->has_power()) d.samples.push_back({0.0, d.src->read_power_w()});
        }
        open_ = true;
        stop_ = false;
        sampler_ = std::thread([this] { sample_loop(); });
    }

    std::vector<reading> end() override {
        if (!open_) throw nnergy::error(name_ + ": end() without begin()", exit_code::internal);
        stop_sampler();
        const double window = seconds_since_begin();
        for (domain_state& d : states_) sample(d, window);
        open_ = false;
        std::vector<reading> out;
        for (domain_state& d : states_) out.push_back(make_reading(d, window));
        return out;
    }

private:
    double seconds_since_begin() const {
        return std::chrono::duration<double>(steady::now() - t0_).count();
    }

    void detect_periods() {
        if (detected_) return;
        detected_ = true;
        // All counters at once: one GPU's detection should not wait for another's.
        std::vector<std::thread> threads;
        for (domain_state& d : states_) {
            if (!d.src->has_counter()) continue;
            threads.emplace_back([&d, this] {
                try {
                    d.period_s = detect_update_period([&d] { return d.src->read_counter_j(); },
                                                      options_.detect_timeout);
                } catch (const std::exception&) {
                    d.period_s.reset();  // begin() reports the read error itself
                }
            });
        }
        for (std::thread& t : threads) t.join();
    }

    void sample_loop() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            if (cv_.wait_for(lock, options_.sample_period, [this] { return stop_; })) return;
            const double t = seconds_since_begin();
            for (domain_state& d : states_) sample(d, t);
        }
    }

    void stop_sampler() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        if (sampler_.joinable()) sampler_.join();
    }

    void sample(domain_state& d, double t) noexcept {
        if (!d.error.empty()) return;
        try {
            if (d.src->has_counter()) {
                const double raw = d.src->read_counter_j();
                const std::optional<double> delta =
                    counter_delta(d.last_raw, raw, d.src->counter_range_j());
                d.last_raw = raw;
                if (!delta) {
                    d.warnings.push_back(fmt::format(
                        "the counter went backwards at {:.3f} s and has no known range; the "
                        "energy before that is lost",
                        t));
                } else if (*delta > 0) {
                    d.accumulated_j += *delta;
                    // Power from the energy between two observed updates: the first update's
                    // energy partly predates the window, so it only anchors.
                    if (!d.src->has_power() && d.seen_change && t > d.last_change_t)
                        d.samples.push_back({t, (d.accumulated_j - d.energy_at_last_change) /
                                                    (t - d.last_change_t)});
                    if (!d.seen_change) {
                        d.first_change_t = t;
                        d.energy_at_first_change = d.accumulated_j;
                    }
                    d.seen_change = true;
                    d.last_change_t = t;
                    d.energy_at_last_change = d.accumulated_j;
                }
            }
            if (d.src->has_power()) d.samples.push_back({t, d.src->read_power_w()});
        } catch (const std::exception& e) {
            d.error = e.what();
        }
    }

    reading make_reading(domain_state& d, double window) {
        reading r;
        r.meter = name_;
        r.domain = d.src->domain();
        r.device = d.src->device();
        r.window_s = window;
        r.update_period_s = d.period_s;
        r.warnings = std::move(d.warnings);
        r.samples = std::move(d.samples);
        for (const power_sample& s : r.samples)
            if (!r.peak_power_w || s.power_w > *r.peak_power_w) r.peak_power_w = s.power_w;
        if (!d.error.empty()) {
            r.warnings.push_back("reading failed: " + d.error + "; no energy figure");
            return r;
        }
        if (d.src->has_counter()) {
            r.method = energy_method::counter;
            if (d.seen_change && d.last_change_t > d.first_change_t) {
                r.counter_span_s = d.last_change_t - d.first_change_t;
                r.counter_power_w =
                    (d.energy_at_last_change - d.energy_at_first_change) / *r.counter_span_s;
            }
            if (d.accumulated_j > 0) {
                r.energy_j = d.accumulated_j;
                if (d.period_s && window < options_.min_periods * *d.period_s)
                    r.warnings.push_back(fmt::format(
                        "the window ({:.3f} s) spans fewer than {:g} update periods of the "
                        "counter ({:.1f} ms): the energy is uncertain by up to {:.3g} J (one "
                        "update); repeat the work for a longer window",
                        window, options_.min_periods, *d.period_s * 1e3,
                        d.accumulated_j / window * *d.period_s));
            } else if (!r.samples.empty()) {
                // A window inside one update period: the counter has not moved. Power samples
                // still give a figure; 0 J would be wrong.
                r.method = energy_method::sampled;
                r.energy_j = integrate_samples(r.samples, window);
                r.warnings.push_back(fmt::format(
                    "the counter did not advance in {:.3f} s{}: energy from {} power samples "
                    "instead",
                    window,
                    d.period_s ? fmt::format(" (its update period is {:.1f} ms)", *d.period_s * 1e3)
                               : std::string(),
                    r.samples.size()));
            } else {
                r.warnings.push_back(fmt::format(
                    "the counter did not advance in {:.3f} s{} and the domain has no power "
                    "reading: no energy figure (not 0 J); repeat the work for a longer window",
                    window,
                    d.period_s ? fmt::format(" (its update period is {:.1f} ms)", *d.period_s * 1e3)
                               : " (its update period is unknown)"));
            }
        } else {
            r.method = energy_method::sampled;
            if (r.samples.empty()) {
                r.warnings.push_back("no power sample in the window: no energy figure");
            } else {
                r.energy_j = integrate_samples(r.samples, window);
                if (*r.energy_j == 0 && window > 0)
                    r.warnings.push_back(
                        fmt::format("every one of {} power samples read 0 W", r.samples.size()));
            }
        }
        if (r.energy_j && window > 0) r.mean_power_w = *r.energy_j / window;
        return r;
    }

    std::string name_;
    meter_options options_;
    std::vector<domain_state> states_;
    bool detected_ = false;
    bool open_ = false;
    steady::time_point t0_;
    std::thread sampler_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
};

}  // namespace

std::unique_ptr<meter> make_meter(std::string name,
                                  std::vector<std::unique_ptr<domain_source>> sources,
                                  meter_options options) {
    return std::make_unique<source_meter>(std::move(name), std::move(sources), std::move(options));
}

repeated_readings measure_repeated(meter& m, const std::function<void()>& work,
                                   const repeat_options& options) {
    const double sample_s = std::chrono::duration<double>(m.options().sample_period).count();
    const double target =
        std::max(options.min_window_s,
                 options.min_periods * std::max(m.update_period_s().value_or(0), sample_s));
    for (size_t i = 0; i < options.warmup_calls; ++i) work();
    const auto t = steady::now();
    work();
    const double once = std::max(std::chrono::duration<double>(steady::now() - t).count(), 1e-9);
    size_t calls = static_cast<size_t>(
        std::clamp(std::ceil(target / once), 1.0, static_cast<double>(options.max_calls)));
    for (;;) {
        m.begin();
        for (size_t i = 0; i < calls; ++i) work();
        std::vector<reading> readings = m.end();
        const double window = readings.empty() ? 0 : readings.front().window_s;
        const bool long_enough = window >= target;
        if (long_enough || calls >= options.max_calls || window >= options.max_window_s) {
            repeated_readings out;
            out.calls = calls;
            out.window_s = window;
            for (const reading& r : readings)
                out.energy_per_call_j.push_back(
                    r.energy_j ? std::optional<double>(*r.energy_j / static_cast<double>(calls))
                               : std::nullopt);
            out.readings = std::move(readings);
            return out;
        }
        // The calls got faster than the first one timed: grow the loop and measure again.
        const double grow = window > 0 ? 1.2 * target / window : 2.0;
        calls = static_cast<size_t>(std::min(static_cast<double>(options.max_calls),
                                             std::ceil(static_cast<double>(calls) * grow)));
    }
}

std::vector<reading> idle_baseline(meter& m, std::chrono::milliseconds duration) {
    m.begin();
    std::this_thread::sleep_for(duration);
    return m.end();
}

}  // namespace nnergy::meters
