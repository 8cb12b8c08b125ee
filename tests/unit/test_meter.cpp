// SPDX-License-Identifier: Apache-2.0
// Energy meters against stand-ins: a fake NVML library, fake powercap and hwmon trees.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/meter.hpp>
#include <thread>

#include "scoped_test_state.hpp"

namespace fs = std::filesystem;
using namespace nnergy::meters;
using namespace std::chrono_literals;

using nnergy::test::scoped_env;
using nnergy::test::temp_dir;

namespace {

/// Writes a file whole (rename over it, so a reader never sees half a value).
void put(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    const fs::path tmp = file.string() + ".tmp";
    std::ofstream(tmp) << text << "\n";
    fs::rename(tmp, file);
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const nnergy::error& e) {
        return e.what();
    }
    return "(no error)";
}

const reading& find(const std::vector<reading>& rs, const std::string& domain) {
    for (const reading& r : rs)
        if (r.domain == domain) return r;
    FAIL("no reading for " << domain);
    return rs.front();
}

meter_options fast_options() {
    meter_options o;
    o.sample_period = 2ms;
    o.detect_timeout = 300ms;
    return o;
}

/// A domain whose values the test sets.
struct scripted_source : domain_source {
    std::string name = "x0";
    bool counter = true, power = false;
    std::function<double()> counter_fn = [] { return 0.0; };
    std::function<double()> power_fn = [] { return 0.0; };
    std::string domain() const override { return name; }
    std::string device() const override { return "scripted"; }
    bool has_counter() const override { return counter; }
    bool has_power() const override { return power; }
    double read_counter_j() override { return counter_fn(); }
    double read_power_w() override { return power_fn(); }
};

double seconds_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

TEST_CASE("counter deltas wrap around at the counter's range", "[meter]") {
    CHECK(counter_delta(10, 25, 100) == Approx(15));
    CHECK(counter_delta(90, 5, 100) == Approx(15));
    CHECK(counter_delta(90, 5, 0) == std::nullopt);  // no range: a decrease is unknown
    CHECK(counter_delta(7, 7, 0) == Approx(0));
}

TEST_CASE("power samples integrate over the window", "[meter]") {
    CHECK(integrate_samples({}, 1.0) == 0);
    CHECK(integrate_samples({{0.0, 10.0}}, 2.0) == Approx(20));
    // 10 W to 20 W linearly over 1 s, then held to the end of a 2 s window.
    CHECK(integrate_samples({{0.0, 10.0}, {1.0, 20.0}}, 2.0) == Approx(15 + 20));
    // The first sample is held back to the window's start.
    CHECK(integrate_samples({{0.5, 4.0}, {1.0, 4.0}}, 1.0) == Approx(4));
}

TEST_CASE("steady state starts after the warm-up ramp", "[meter][steady]") {
    std::vector<power_sample> s;
    // 1 s ramping from 100 W to 300 W, then 3 s at 300 W, one sample each 10 ms.
    for (int i = 0; i <= 400; ++i) {
        const double t = i * 0.01;
        s.push_back({t, t < 1.0 ? 100 + 200 * t : 300.0});
    }
    const auto start = steady_state_start(s, {0.2, 0.02});
    REQUIRE(start);
    CHECK(s[*start].t_s > 0.7);
    CHECK(s[*start].t_s <= 1.0);
    // Flat from the start: steady at once.
    std::vector<power_sample> flat;
    for (int i = 0; i <= 100; ++i) flat.push_back({i * 0.01, 50.0});
    CHECK(steady_state_start(flat, {0.2, 0.02}) == 0u);
    // Too short to tell; still rising at the end.
    CHECK_FALSE(steady_state_start({{0.0, 1.0}, {0.1, 1.0}}, {0.2, 0.02}));
    std::vector<power_sample> rising;
    for (int i = 0; i <= 100; ++i) rising.push_back({i * 0.01, 10.0 + i});
    CHECK_FALSE(steady_state_start(rising, {0.2, 0.02}));
}

TEST_CASE("a counter's update period is detected", "[meter]") {
    const double t0 = seconds_now();
    // Steps every 20 ms.
    const auto period =
        detect_update_period([&] { return std::floor((seconds_now() - t0) / 0.02); }, 1000ms);
    REQUIRE(period);
    CHECK(*period == Approx(0.02).margin(0.006));
    // A counter that never moves has no period, and the detection stops at its timeout.
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(detect_update_period([] { return 1.0; }, 100ms));
    CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("0 J is never reported silently", "[meter]") {
    SECTION("a counter that does not move, no power reading: no figure, a warning") {
        std::vector<std::unique_ptr<domain_source>> v;
        v.push_back(std::make_unique<scripted_source>());
        auto m = make_meter("scripted", std::move(v), fast_options());
        m->begin();
        std::this_thread::sleep_for(20ms);
        const auto r = m->end();
        REQUIRE(r.size() == 1);
        CHECK_FALSE(r[0].energy_j);
        CHECK_FALSE(r[0].mean_power_w);
        REQUIRE(r[0].warnings.size() == 1);
        CHECK_THAT(r[0].warnings[0], Catch::Contains("did not advance") &&
                                         Catch::Contains("no energy figure (not 0 J)"));
    }
    SECTION("a counter that does not move, with power readings: energy from the samples") {
        auto src = std::make_unique<scripted_source>();
        src->power = true;
        src->power_fn = [] { return 40.0; };
        std::vector<std::unique_ptr<domain_source>> v;
        v.push_back(std::move(src));
        auto m = make_meter("scripted", std::move(v), fast_options());
        m->begin();
        std::this_thread::sleep_for(50ms);
        const auto r = m->end();
        REQUIRE(r[0].energy_j);
        CHECK(r[0].method == energy_method::sampled);
        CHECK(*r[0].mean_power_w == Approx(40));
        CHECK(*r[0].energy_j == Approx(40 * r[0].window_s));
        CHECK(*r[0].peak_power_w == Approx(40));
        CHECK_THAT(r[0].warnings.at(0), Catch::Contains("power samples instead"));
    }
}

TEST_CASE("short work is repeated until the window spans enough counter updates",
          "[meter][repeat]") {
    // A counter at 50 W that updates every 25 ms: one 1 ms call would read 0 J or 1.25 J.
    const double t0 = seconds_now();
    auto src = std::make_unique<scripted_source>();
    src->counter_fn = [t0] { return 50 * 0.025 * std::floor((seconds_now() - t0) / 0.025); };
    std::vector<std::unique_ptr<domain_source>> v;
    v.push_back(std::move(src));
    auto m = make_meter("scripted", std::move(v), fast_options());
    repeat_options ro;
    ro.min_periods = 8;
    ro.min_window_s = 0.05;
    int calls = 0;
    const repeated_readings rr = measure_repeated(
        *m, [&] { ++calls, std::this_thread::sleep_for(1ms); }, ro);
    REQUIRE(m->update_period_s());
    CHECK(*m->update_period_s() == Approx(0.025).margin(0.008));
    CHECK(rr.window_s >= 8 * *m->update_period_s());
    CHECK(rr.calls >= 50);
    CHECK(static_cast<size_t>(calls) >= rr.calls + ro.warmup_calls);
    REQUIRE(rr.energy_per_call_j.at(0));
    REQUIRE(rr.readings.at(0).energy_j);
    // 50 W over the window, within one update (1.25 J) of it.
    CHECK(*rr.readings[0].energy_j == Approx(50 * rr.window_s).margin(1.3));
    CHECK(*rr.energy_per_call_j[0] ==
          Approx(*rr.readings[0].energy_j / static_cast<double>(rr.calls)));
    CHECK(rr.readings[0].warnings.empty());
}

// ---- RAPL ----------------------------------------------------------------------------------

namespace {

/// A powercap tree: package-0 with a DRAM sub-zone, a core sub-zone and an intel-rapl-mmio
/// duplicate (both left out).
fs::path make_powercap(const fs::path& root, double pkg_uj, double dram_uj, double range_uj) {
    put(root / "intel-rapl:0" / "name", "package-0");
    put(root / "intel-rapl:0" / "energy_uj", std::to_string(static_cast<long long>(pkg_uj)));
    put(root / "intel-rapl:0" / "max_energy_range_uj",
        std::to_string(static_cast<long long>(range_uj)));
    put(root / "intel-rapl:0:0" / "name", "dram");
    put(root / "intel-rapl:0:0" / "energy_uj", std::to_string(static_cast<long long>(dram_uj)));
    put(root / "intel-rapl:0:0" / "max_energy_range_uj",
        std::to_string(static_cast<long long>(range_uj)));
    put(root / "intel-rapl:0:1" / "name", "core");
    put(root / "intel-rapl:0:1" / "energy_uj", "0");
    put(root / "intel-rapl-mmio:0" / "name", "package-0");
    put(root / "intel-rapl-mmio:0" / "energy_uj", "0");
    return root;
}

}  // namespace

TEST_CASE("RAPL: package and DRAM zones, counter wrap-around", "[meter][rapl]") {
    temp_dir d;
    const double range = 262143328850;  // a real max_energy_range_uj
    make_powercap(d.path, range - 2e6, 1000, range);
    scoped_env env("NNERGY_POWERCAP_ROOT", d.path.string());
    auto m = open_rapl_meter(fast_options());
    CHECK(m->name() == "rapl");
    CHECK(m->domains() == std::vector<std::string>{"package-0", "dram-0"});
    m->begin();
    std::this_thread::sleep_for(20ms);
    // The package counter wraps: 2 J to the top, then 3 J past 0.
    put(d.path / "intel-rapl:0" / "energy_uj", "3000000");
    put(d.path / "intel-rapl:0:0" / "energy_uj", "501000");
    std::this_thread::sleep_for(20ms);
    const auto r = m->end();
    const reading& pkg = find(r, "package-0");
    REQUIRE(pkg.energy_j);
    CHECK(*pkg.energy_j == Approx(5.0));
    CHECK(pkg.method == energy_method::counter);
    CHECK(*pkg.mean_power_w == Approx(5.0 / pkg.window_s));
    const reading& dram = find(r, "dram-0");
    REQUIRE(dram.energy_j);
    CHECK(*dram.energy_j == Approx(0.5));
    CHECK(dram.device == "DRAM of package-0");
}

TEST_CASE("RAPL: permission denied names the file and the remedy", "[meter][rapl]") {
    temp_dir d;
    make_powercap(d.path, 1, 1, 1e9);
    scoped_env env("NNERGY_POWERCAP_ROOT", d.path.string());
    const std::string denied = "permission denied: reading RAPL energy needs root";
    SECTION("as a kernel since 5.10 answers a user") {
        meter_options o = fast_options();
        // Root reads any file whatever its mode, so the refusal is injected.
        o.reader = [](const fs::path& f, std::string& out) {
            return f.filename() == "energy_uj" ? EACCES : read_small_file(f, out);
        };
        const std::string msg = message_of([&] { open_rapl_meter(o); });
        CHECK_THAT(msg, Catch::Contains((d.path / "intel-rapl:0" / "energy_uj").string() + ": " +
                                        denied) &&
                            Catch::Contains("chmod a+r") && Catch::Contains("udev rule"));
    }
    SECTION("a file with mode 000") {
        ::chmod((d.path / "intel-rapl:0" / "energy_uj").c_str(), 0);
        if (::access((d.path / "intel-rapl:0" / "energy_uj").c_str(), R_OK) == 0) {
            WARN(
                "SKIPPED: running as root, which reads a mode-000 file; the injected refusal "
                "above covers the message");
            return;
        }
        CHECK_THAT(message_of([] { open_rapl_meter(fast_options()); }), Catch::Contains(denied));
    }
}

TEST_CASE("RAPL: no powercap directory, or no zones in it", "[meter][rapl]") {
    temp_dir d;
    {
        scoped_env env("NNERGY_POWERCAP_ROOT", (d.path / "absent").string());
        CHECK_THAT(message_of([] { open_rapl_meter(); }),
                   Catch::Contains("absent does not exist") &&
                       Catch::Contains("virtual machines usually have none"));
    }
    put(d.path / "intel-rapl-mmio:0" / "name", "package-0");
    scoped_env env("NNERGY_POWERCAP_ROOT", d.path.string());
    try {
        open_rapl_meter();
        FAIL("no error");
    } catch (const nnergy::error& e) {
        CHECK_THAT(e.what(), Catch::Contains("no package or DRAM zone under"));
        CHECK(e.code() == nnergy::exit_code::plugin_missing);
    }
}

// ---- hwmon (Jetson) ------------------------------------------------------------------------

TEST_CASE("hwmon: INA3221 rails and their power", "[meter][hwmon]") {
    temp_dir d;
    put(d.path / "hwmon0" / "name", "acpitz");  // not a power monitor
    const fs::path ina = d.path / "hwmon1";
    put(ina / "name", "ina3221");
    put(ina / "in1_label", "VDD_GPU_SOC");
    put(ina / "in1_input", "5000");    // mV
    put(ina / "curr1_input", "2000");  // mA: 10 W
    put(ina / "in2_label", "VDD_CPU_CV");
    put(ina / "in2_input", "5000");
    put(ina / "curr2_input", "400");        // 2 W
    put(ina / "in3_label", "VIN_SYS_5V0");  // a channel without readings: not connected
    scoped_env env("NNERGY_HWMON_ROOT", d.path.string());
    auto m = open_hwmon_meter(fast_options());
    CHECK(m->domains() == std::vector<std::string>{"VDD_GPU_SOC", "VDD_CPU_CV"});
    m->begin();
    std::this_thread::sleep_for(30ms);
    put(ina / "curr1_input", "4000");  // 20 W from here on
    std::this_thread::sleep_for(30ms);
    const auto r = m->end();
    const reading& gpu = find(r, "VDD_GPU_SOC");
    CHECK(gpu.method == energy_method::sampled);
    REQUIRE(gpu.energy_j);
    CHECK(*gpu.peak_power_w == Approx(20));
    // Between 10 W and 20 W on average, as the samples integrate.
    CHECK(*gpu.mean_power_w > 10);
    CHECK(*gpu.mean_power_w < 20);
    CHECK(gpu.samples.size() >= 5);
    const reading& cpu = find(r, "VDD_CPU_CV");
    CHECK(*cpu.energy_j == Approx(2.0 * cpu.window_s));
    CHECK(cpu.device == "INA3221 hwmon1 channel 2");
}

TEST_CASE("hwmon: no INA3221 monitor", "[meter][hwmon]") {
    temp_dir d;
    put(d.path / "hwmon0" / "name", "coretemp");
    scoped_env env("NNERGY_HWMON_ROOT", d.path.string());
    CHECK_THAT(message_of([] { open_hwmon_meter(); }), Catch::Contains("no INA3221 rail under"));
}

// ---- NVML ----------------------------------------------------------------------------------

namespace {

/// The fake NVML with a script.
struct fake_nvml {
    temp_dir dir;
    scoped_env lib{"NNERGY_NVML_LIBRARY", NNERGY_TEST_FAKE_NVML};
    scoped_env script;
    explicit fake_nvml(const std::string& text)
        : script("NNERGY_FAKE_NVML_SCRIPT", (dir.path / "script").string()) {
        put(dir.path / "script", text);
    }
};

}  // namespace

TEST_CASE("NVML: a missing library is named", "[meter][nvml]") {
    scoped_env lib("NNERGY_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
    try {
        open_nvml_meter();
        FAIL("no error");
    } catch (const nnergy::error& e) {
        CHECK_THAT(e.what(), Catch::StartsWith("NVML: cannot load /nonexistent/libnvidia-ml.so.1"));
        CHECK(e.code() == nnergy::exit_code::plugin_missing);
    }
    // A library that is not NVML.
    scoped_env libm("NNERGY_NVML_LIBRARY", "libm.so.6");
    CHECK_THAT(message_of([] { open_nvml_meter(); }),
               Catch::Contains("libm.so.6 has no symbol nvmlErrorString"));
}

TEST_CASE("NVML: an init error is reported with NVML's words", "[meter][nvml]") {
    fake_nvml f("init_error 9\n");
    CHECK_THAT(message_of([] { open_nvml_meter(); }),
               Catch::Contains("nvmlInit_v2 failed") &&
                   Catch::Contains("Driver Not Loaded (NVML error 9)") &&
                   Catch::Contains("the NVIDIA driver is not loaded"));
}

TEST_CASE("NVML: two GPUs, the counter on one, power sampling on the other", "[meter][nvml]") {
    fake_nvml f(
        "count 2\n"
        "name 0 Fake H100\n"
        "energy 0 5000 10   # 10 W\n"
        "update_period_ms 0 10\n"
        "unsupported energy 1\n"
        "power 1 150000\n");
    auto m = open_nvml_meter({}, fast_options());
    CHECK(m->domains() == std::vector<std::string>{"gpu0", "gpu1"});
    REQUIRE(m->update_period_s());
    CHECK(*m->update_period_s() == Approx(0.010).margin(0.004));
    m->begin();
    std::this_thread::sleep_for(200ms);
    const auto r = m->end();
    const reading& g0 = find(r, "gpu0");
    CHECK(g0.device == "Fake H100");
    CHECK(g0.method == energy_method::counter);
    REQUIRE(g0.energy_j);
    // 10 W, within one 10 ms update (0.1 J).
    CHECK(*g0.energy_j == Approx(10 * g0.window_s).margin(0.11));
    CHECK(*g0.peak_power_w == Approx(10));
    CHECK(g0.warnings.empty());
    const reading& g1 = find(r, "gpu1");
    CHECK(g1.device == "Fake GPU 1");
    CHECK(g1.method == energy_method::sampled);
    CHECK(*g1.mean_power_w == Approx(150));
    CHECK(*g1.peak_power_w == Approx(150));
    CHECK_FALSE(g1.update_period_s);
}

TEST_CASE("NVML: one GPU selected by index; a missing index lists the GPUs", "[meter][nvml]") {
    fake_nvml f("count 2\nenergy 0 0 1\nenergy 1 0 2\n");
    auto m = open_nvml_meter({1}, fast_options());
    CHECK(m->domains() == std::vector<std::string>{"gpu1"});
    CHECK(open_nvml_meter({1, 0, 1}, fast_options())->domains() ==
          std::vector<std::string>{"gpu1", "gpu0"});
    try {
        open_nvml_meter({5});
        FAIL("no error");
    } catch (const nnergy::error& e) {
        CHECK(std::string(e.what()) ==
              "GPU 5: no such GPU; NVML reports 2 GPUs: 0 (Fake GPU 0), 1 (Fake GPU 1)");
        CHECK(e.code() == nnergy::exit_code::plugin_missing);
    }
}

TEST_CASE("NVML: a window shorter than the counter's update period", "[meter][nvml]") {
    SECTION("with power readings: sampled energy or a short-window warning, never 0 J") {
        fake_nvml f("energy 0 0 20\nupdate_period_ms 100\n");  // 20 W
        auto m = open_nvml_meter({}, fast_options());
        REQUIRE(m->update_period_s());
        CHECK(*m->update_period_s() == Approx(0.1).margin(0.02));
        m->begin();
        std::this_thread::sleep_for(15ms);
        const auto r = m->end();
        REQUIRE(r[0].energy_j);
        CHECK(*r[0].energy_j > 0);
        REQUIRE(r[0].warnings.size() == 1);
        // The counter either stayed (energy from samples) or stepped once (warned as short).
        CHECK_THAT(r[0].warnings[0], Catch::Contains("power samples instead") ||
                                         Catch::Contains("fewer than 3 update periods"));
    }
    SECTION("without power readings and a counter that does not move: no figure") {
        fake_nvml f("energy 0 1000 0\nunsupported power 0\n");
        auto m = open_nvml_meter({}, fast_options());
        CHECK_FALSE(m->update_period_s());
        m->begin();
        std::this_thread::sleep_for(20ms);
        const auto r = m->end();
        CHECK_FALSE(r[0].energy_j);
        CHECK_THAT(r[0].warnings.at(0), Catch::Contains("no energy figure (not 0 J)") &&
                                            Catch::Contains("update period is unknown"));
    }
    SECTION("repetition extends the window past the update period") {
        fake_nvml f("energy 0 0 20\nupdate_period_ms 50\nunsupported power 0\n");
        auto m = open_nvml_meter({}, fast_options());
        repeat_options ro;
        ro.min_periods = 4;
        const repeated_readings rr = measure_repeated(
            *m, [] { std::this_thread::sleep_for(2ms); }, ro);
        CHECK(rr.window_s >= 4 * 0.05 * 0.9);
        REQUIRE(rr.readings[0].energy_j);
        CHECK(*rr.readings[0].energy_j == Approx(20 * rr.window_s).margin(1.01));
        CHECK(*rr.energy_per_call_j[0] > 0);
    }
}

TEST_CASE("NVML: neither a counter nor power readings", "[meter][nvml]") {
    fake_nvml f("unsupported energy 0\nunsupported power 0\n");
    CHECK_THAT(message_of([] { open_nvml_meter(); }),
               Catch::Contains("supports neither the energy counter nor power readings"));
}

TEST_CASE("idle baseline: one window with nothing running", "[meter]") {
    fake_nvml f("energy 0 0 7\n");  // 7 W, a counter that moves on every read
    auto m = open_nvml_meter({}, fast_options());
    const auto r = idle_baseline(*m, 50ms);
    REQUIRE(r.at(0).mean_power_w);
    CHECK(*r[0].mean_power_w == Approx(7).epsilon(0.05));
    CHECK(r[0].window_s >= 0.05);
}
