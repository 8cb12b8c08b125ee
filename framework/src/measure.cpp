// SPDX-License-Identifier: Apache-2.0
// `nnergy measure`: runs a command under the meters (docs/measure.md).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <istream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <nnergy/framework/compare.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/measure.hpp>
#include <thread>

extern char** environ;

namespace nnergy {
namespace {

using steady = std::chrono::steady_clock;

std::atomic<pid_t> child_pid{0};
volatile std::sig_atomic_t pending_signal = 0;

// Forwards a signal another process sent us. One a terminal generated (si_code > 0, from the
// kernel) has reached the child's process group already: sending it again would deliver it
// twice.
void forward_signal(int sig, siginfo_t* info, void*) {
    if (info && info->si_code > 0) return;
    const pid_t pid = child_pid.load();
    if (pid > 0)
        ::kill(pid, sig);
    else
        pending_signal = sig;
}

constexpr int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

std::string signal_text(int sig) {
    const char* s = ::strsignal(sig);
    return s ? s : fmt::format("signal {}", sig);
}

std::string hostname() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "unknown";
    return buf;
}

std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            if (colon != std::string::npos) {
                size_t b = line.find_first_not_of(" \t", colon + 1);
                return b == std::string::npos ? std::string() : line.substr(b);
            }
        }
    return {};
}

std::string os_text() {
    struct utsname u {};
    if (::uname(&u) != 0) return {};
    return fmt::format("{} {} {}", u.sysname, u.release, u.machine);
}

const meters::reading* find_reading(const std::vector<meters::reading>& v,
                                    const std::string& domain) {
    for (const meters::reading& r : v)
        if (r.domain == domain) return &r;
    return nullptr;
}

// Absent figures are NaN in the table rather than empty optionals: GCC 12 takes an optional's
// value in this inlined code for uninitialised (-Wmaybe-uninitialized).
constexpr double absent = std::numeric_limits<double>::quiet_NaN();

double or_absent(const std::optional<double>& v) { return v ? *v : absent; }

std::string cell(double v, const char* unit) {
    return std::isnan(v) ? std::string("-") : with_unit(v, unit);
}

void print_figures(std::FILE* out, const measure_options& o, const command_result& res,
                   const std::vector<meters::reading>& readings,
                   const std::vector<meters::reading>& idle) {
    std::string status =
        !res.started ? "not started"
        : res.exit_status > 128 && res.exit_status < 128 + 65
            ? fmt::format("killed by signal {} ({}), exit status {}", res.exit_status - 128,
                          signal_text(res.exit_status - 128), res.exit_status)
            : fmt::format("exit status {}", res.exit_status);
    std::fprintf(out, "nnergy measure: %s: %s, %.3f s\n", shell_join(o.command).c_str(),
                 status.c_str(), res.duration_s);
    if (readings.empty()) return;
    std::fprintf(out, "  %-14s %-6s %-8s %10s %10s %10s %10s %11s  %s\n", "domain", "meter",
                 "method", "energy", "mean", "peak", "idle", "above idle", "device");
    for (const meters::reading& r : readings) {
        const meters::reading* base = find_reading(idle, r.domain);
        const double idle_w = base ? or_absent(base->mean_power_w) : absent;
        double above = or_absent(r.energy_j) - idle_w * r.window_s;
        if (std::abs(above) < 1e-9 * std::abs(idle_w * r.window_s)) above = 0;  // rounding
        std::fprintf(out, "  %-14s %-6s %-8s %10s %10s %10s %10s %11s  %s\n", r.domain.c_str(),
                     r.meter.c_str(), r.energy_j ? meters::method_name(r.method) : "-",
                     cell(or_absent(r.energy_j), "J").c_str(),
                     cell(or_absent(r.mean_power_w), "W").c_str(),
                     cell(or_absent(r.peak_power_w), "W").c_str(), cell(idle_w, "W").c_str(),
                     cell(above, "J").c_str(), r.device.c_str());
    }
    if (o.items) {
        std::string per;
        for (const meters::reading& r : readings)
            if (r.energy_j && *r.energy_j > 0)
                per += fmt::format("{}{} {:.4g}", per.empty() ? "" : ", ", r.domain,
                                   *o.items / *r.energy_j);
        std::fprintf(out, "  items per joule (%g items): %s\n", *o.items,
                     per.empty() ? "no energy figure" : per.c_str());
    }
    for (const std::vector<meters::reading>* set : {&idle, &readings})
        for (const meters::reading& r : *set)
            for (const std::string& w : r.warnings)
                std::fprintf(out, "  warning: %s%s: %s\n", r.domain.c_str(),
                             set == &idle ? " (idle baseline)" : "", w.c_str());
}

nlohmann::ordered_json measurement_document(const measure_options& o, const command_result& res,
                                            const std::vector<meters::reading>& readings,
                                            const std::vector<meters::reading>& idle,
                                            const std::vector<std::string>& unavailable) {
    using json = nlohmann::ordered_json;
    json doc;
    doc["schema"] = "nnergy.measurements/1";
    doc["description"] = fmt::format(
        "nnergy measure: one command run under the energy meters; energy is over the whole run, "
        "idle power included; idle baseline over {} ms before it",
        o.idle.count());
    json machine;
    machine["name"] = o.hardware.empty() ? hostname() : o.hardware;
    if (std::string cpu = cpu_model(); !cpu.empty()) machine["cpu"] = cpu;
    if (unsigned n = std::thread::hardware_concurrency(); n > 0) machine["cores"] = n;
    std::vector<std::string> gpus;
    for (const meters::reading& r : readings)
        if (r.meter == "nvml" && std::find(gpus.begin(), gpus.end(), r.device) == gpus.end())
            gpus.push_back(r.device);
    if (!gpus.empty()) machine["gpu"] = fmt::format("{}", fmt::join(gpus, ", "));
    if (std::string os = os_text(); !os.empty()) machine["os"] = os;
    doc["machine"] = machine;
    json env;
    env["nnergy"] = NNERGY_VERSION;
    json meters_env = json::object();
    for (const meters::reading& r : readings) {
        json m;
        m["meter"] = r.meter;
        m["device"] = r.device;
        if (r.update_period_s) m["update_period_ms"] = *r.update_period_s * 1e3;
        m["sample_period_ms"] =
            std::chrono::duration<double, std::milli>(o.meter.sample_period).count();
        meters_env[r.domain] = m;
    }
    env["meters"] = meters_env;
    if (!unavailable.empty()) env["unavailable_meters"] = unavailable;
    doc["env"] = env;
    json idle_json = json::array();
    for (const meters::reading& r : idle)
        if (r.mean_power_w)
            idle_json.push_back({{"device", r.domain},
                                 {"meter", r.meter},
                                 {"power_w", std::max(0.0, *r.mean_power_w)},
                                 {"window_s", r.window_s}});
    doc["idle"] = idle_json;

    json run;
    run["kind"] = "command";
    run["name"] = shell_join(o.command);
    if (!o.model.empty()) run["model"] = o.model;
    if (!o.device.empty()) run["device"] = o.device;
    if (!o.precision.empty()) run["precision"] = measurement_precision(o.precision);
    if (o.batch) run["batch"] = *o.batch;
    if (!o.mode.empty()) run["mode"] = o.mode;
    if (o.items) run["items"] = *o.items;
    run["exit_status"] = res.exit_status;
    run["duration_s"] = res.duration_s;
    std::vector<std::string> notes;
    if (!res.started) notes.push_back("the command could not be started: " + res.error);
    json energy = json::object();
    for (const meters::reading& r : readings) {
        for (const std::string& w : r.warnings) notes.push_back(r.domain + ": " + w);
        if (!r.energy_j) continue;
        json e;
        e["meter"] = r.meter;
        e["energy_j"] = std::max(0.0, *r.energy_j);
        if (r.mean_power_w) e["mean_power_w"] = std::max(0.0, *r.mean_power_w);
        if (r.peak_power_w) e["peak_power_w"] = std::max(0.0, *r.peak_power_w);
        if (const meters::reading* base = find_reading(idle, r.domain); base && base->mean_power_w)
            e["idle_power_w"] = std::max(0.0, *base->mean_power_w);
        e["window_s"] = r.window_s;
        e["method"] = meters::method_name(r.method);
        energy[r.domain] = e;
    }
    if (res.started) run["energy"] = energy;
    if (!notes.empty()) run["note"] = fmt::format("{}", fmt::join(notes, "; "));
    doc["runs"] = json::array({run});
    return doc;
}

}  // namespace

std::string shell_join(const std::vector<std::string>& argv) {
    std::string out;
    for (const std::string& w : argv) {
        if (!out.empty()) out += ' ';
        const bool plain = !w.empty() && w.find_first_not_of(
                                             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                             "0123456789_@%+=:,./-") == std::string::npos;
        if (plain) {
            out += w;
            continue;
        }
        out += '\'';
        for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        out += '\'';
    }
    return out;
}

std::string measurement_precision(const std::string& p) {
    static const std::pair<const char*, const char*> names[] = {
        {"fp32", "fp32"},       {"float32", "fp32"},   {"tf32", "tf32"}, {"tensorfloat32", "tf32"},
        {"fp16", "fp16"},       {"float16", "fp16"},   {"half", "fp16"}, {"bf16", "bf16"},
        {"bfloat16", "bf16"},   {"int8", "int8"},      {"fp8", "fp8"},   {"float8", "fp8"},
        {"float8_e4m3", "fp8"}, {"float8_e5m2", "fp8"}};
    for (const auto& [from, to] : names)
        if (p == from) return to;
    return {};
}

command_result run_command(const std::vector<std::string>& argv) {
    command_result res;
    if (argv.empty()) {
        res.exit_status = 127;
        res.error = "no command";
        return res;
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    struct sigaction sa {};
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    struct sigaction old[std::size(forwarded_signals)] = {};
    pending_signal = 0;
    child_pid = 0;
    for (size_t i = 0; i < std::size(forwarded_signals); ++i)
        ::sigaction(forwarded_signals[i], &sa, &old[i]);
    const auto restore = [&] {
        for (size_t i = 0; i < std::size(forwarded_signals); ++i)
            ::sigaction(forwarded_signals[i], &old[i], nullptr);
    };

    const auto t0 = steady::now();
    pid_t pid = 0;
    const int rc = ::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
    if (rc != 0) {
        restore();
        res.exit_status = rc == ENOENT ? 127 : 126;  // as a shell reports them
        res.error = fmt::format("cannot run '{}': {}", argv[0],
                                rc == ENOENT ? "command not found" : std::strerror(rc));
        if (pending_signal) ::raise(pending_signal);
        return res;
    }
    res.started = true;
    child_pid = pid;
    if (pending_signal) ::kill(pid, pending_signal);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    res.duration_s = std::chrono::duration<double>(steady::now() - t0).count();
    child_pid = 0;
    restore();
    if (WIFEXITED(status))
        res.exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        res.exit_status = 128 + WTERMSIG(status);
    else
        res.exit_status = 1;
    return res;
}

namespace {

// Meters asked for must open (an error otherwise); with none asked for, every one that opens
// is used and why the others did not goes to `unavailable`.
std::vector<std::unique_ptr<meters::meter>> open_meters(const measure_options& o,
                                                        std::vector<std::string>& unavailable) {
    const bool chosen = o.gpus || o.rapl || o.jetson;
    std::vector<std::unique_ptr<meters::meter>> ms;
    const auto try_open = [&](bool wanted, const auto& open) {
        if (chosen && !wanted) return;
        try {
            ms.push_back(open());
        } catch (const error& e) {
            if (chosen) throw;
            unavailable.push_back(e.what());
        }
    };
    try_open(o.gpus.has_value(), [&] {
        return meters::open_nvml_meter(o.gpus.value_or(std::vector<unsigned>{}), o.meter);
    });
    try_open(o.rapl, [&] { return meters::open_rapl_meter(o.meter); });
    try_open(o.jetson, [&] { return meters::open_hwmon_meter(o.meter); });
    return ms;
}

nlohmann::ordered_json reading_json(const meters::reading& r) {
    using json = nlohmann::ordered_json;
    json e = {{"domain", r.domain},
              {"meter", r.meter},
              {"device", r.device},
              {"method", meters::method_name(r.method)},
              {"energy_j", r.energy_j ? json(*r.energy_j) : json(nullptr)},
              {"window_s", r.window_s},
              {"mean_power_w", r.mean_power_w ? json(*r.mean_power_w) : json(nullptr)},
              {"peak_power_w", r.peak_power_w ? json(*r.peak_power_w) : json(nullptr)}};
    if (r.update_period_s) e["update_period_s"] = *r.update_period_s;
    if (r.counter_power_w && r.counter_span_s) {
        e["counter_power_w"] = *r.counter_power_w;
        e["counter_span_s"] = *r.counter_span_s;
    }
    e["samples"] = r.samples.size();
    e["warnings"] = r.warnings;
    return e;
}

void reply(std::FILE* out, const nlohmann::ordered_json& j) {
    const std::string line = j.dump() + "\n";
    std::fwrite(line.data(), 1, line.size(), out);
    std::fflush(out);
}

}  // namespace

int serve_meters(const measure_options& o, std::istream& in, std::FILE* out) {
    using json = nlohmann::ordered_json;
    if (!o.command.empty())
        throw error(
            "measure --serve runs no command: it answers begin/end requests on its "
            "standard input",
            exit_code::usage);
    std::vector<std::string> unavailable;
    std::vector<std::unique_ptr<meters::meter>> ms = open_meters(o, unavailable);
    json domains = json::array();
    for (auto& m : ms) {
        m->update_period_s();  // detected now, not inside the first window
        for (const std::string& d : m->domains())
            domains.push_back({{"meter", m->name()}, {"domain", d}});
    }
    reply(out, {{"ready", true}, {"domains", domains}, {"unavailable", unavailable}});
    bool open = false;
    std::string line;
    while (std::getline(in, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (line.empty()) continue;
        if (line == "quit") break;
        if (line == "begin") {
            if (open) {
                reply(out, {{"error", "begin: a window is open already (end it first)"}});
                continue;
            }
            try {
                for (auto& m : ms) m->begin();
            } catch (const std::exception& e) {
                reply(out, {{"error", fmt::format("begin: {}", e.what())}});
                continue;
            }
            open = true;
            reply(out, {{"begun", true}});
        } else if (line == "end") {
            if (!open) {
                reply(out, {{"error", "end: no window is open (begin one first)"}});
                continue;
            }
            json readings = json::array();
            for (auto& m : ms)
                for (const meters::reading& r : m->end()) readings.push_back(reading_json(r));
            open = false;
            reply(out, {{"readings", readings}});
        } else {
            reply(out, {{"error", fmt::format("unknown request '{}': expected begin, end or quit",
                                              line.substr(0, 80))}});
        }
    }
    if (open)
        for (auto& m : ms) m->end();
    return 0;
}

int run_measure(const measure_options& o, std::FILE* out) {
    if (o.command.empty())
        throw error(
            "measure: a command is required (nnergy measure [OPTIONS] -- COMMAND ...), or --serve",
            exit_code::usage);
    if (o.items && !(*o.items > 0)) throw error("--items must be positive", exit_code::usage);
    if (!o.precision.empty() && measurement_precision(o.precision).empty())
        throw error(fmt::format("--precision '{}': expected fp32, tf32, fp16, bf16, int8 or fp8 "
                                "(or float32, float16, bfloat16)",
                                o.precision),
                    exit_code::usage);
    if (o.batch && *o.batch < 1) throw error("--batch must be positive", exit_code::usage);

    std::vector<std::string> unavailable;
    std::vector<std::unique_ptr<meters::meter>> ms = open_meters(o, unavailable);
    for (const std::string& why : unavailable)
        std::fprintf(out, "nnergy measure: not metered: %s\n", why.c_str());
    if (ms.empty())
        std::fprintf(out, "nnergy measure: no meter is available: only the duration is measured\n");

    // Opened now: a file that cannot be written fails before the command runs.
    std::ofstream json_out;
    if (!o.json_file.empty()) {
        json_out.open(o.json_file, std::ios::binary | std::ios::trunc);
        if (!json_out)
            throw error(fmt::format("--json {}: cannot write the file: {}", o.json_file,
                                    std::strerror(errno)));
    }

    for (auto& m : ms) m->update_period_s();  // detected before the windows, not inside them
    std::vector<meters::reading> idle;
    if (o.idle.count() > 0 && !ms.empty()) {
        for (auto& m : ms) m->begin();
        std::this_thread::sleep_for(o.idle);
        for (auto& m : ms)
            for (meters::reading& r : m->end()) idle.push_back(std::move(r));
    }

    for (auto& m : ms) m->begin();
    const command_result res = run_command(o.command);
    std::vector<meters::reading> readings;
    for (auto& m : ms)
        for (meters::reading& r : m->end()) readings.push_back(std::move(r));
    if (!res.started) {
        std::fprintf(out, "nnergy measure: %s\n", res.error.c_str());
        readings.clear();
    }
    std::fflush(stdout);
    print_figures(out, o, res, readings, idle);

    if (json_out.is_open()) {
        json_out << measurement_document(o, res, readings, idle, unavailable).dump(2) << "\n";
        json_out.close();
        if (!json_out) throw error(fmt::format("--json {}: error writing the file", o.json_file));
    }
    return res.exit_status;
}

}  // namespace nnergy
