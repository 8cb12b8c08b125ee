// SPDX-License-Identifier: Apache-2.0
// nnergy sweep: every configuration of a pipeline's axes, evaluated on the fast path of
// evaluate.hpp by all cores, each row written whole as soon as it is known.
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <nnergy/framework/compare.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/sweep.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

namespace nnergy {
namespace {

using clock_type = std::chrono::steady_clock;

// The columns around the dims: config, model, hardware, class, precision | dims | runtime,
// status, the totals, error.
const char* const k_head_columns[] = {"config", "model", "hardware", "class", "precision"};
const char* const k_tail_columns[] = {"runtime",
                                      "status",
                                      "latency_s",
                                      "energy_j",
                                      "average_power_w",
                                      "edp_j_s",
                                      "peak_memory_bytes",
                                      "inferences_per_j",
                                      "fits",
                                      "flops",
                                      "macs",
                                      "params",
                                      "error"};
constexpr size_t k_head = std::size(k_head_columns);

bool is_fixed_column(std::string_view name) {
    for (const char* c : k_head_columns)
        if (name == c) return true;
    for (const char* c : k_tail_columns)
        if (name == c) return true;
    return false;
}

std::string relative_name(const std::filesystem::path& p, const std::filesystem::path& base) {
    const std::filesystem::path r = p.lexically_relative(base.lexically_normal());
    return r.empty() ? p.generic_string() : r.generic_string();
}

std::string hardware_class(const config_values& hw) {
    const config_value* c = find_value(hw, "class");
    return c && c->kind == NNERGY_VALUE_STRING ? c->string_value : std::string();
}

bool offers(const config_values& hw, std::string_view precision) {
    return find_value(hw, fmt::format("compute.{}.peak", precision)) != nullptr;
}

// The requested precisions for one device: "all" becomes what it offers, each name once.
std::vector<std::string> expand_precisions(const std::vector<std::string>& requested,
                                           const config_values& hw) {
    std::vector<std::string> out;
    auto add = [&](const std::string& p) {
        if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    };
    for (const std::string& p : requested) {
        if (p != "all") {
            add(p);
            continue;
        }
        for (const std::string& q : hardware_precisions(hw)) add(q);
    }
    return out;
}

std::string dims_text(const sweep_axes& axes, const dim_bindings& b, const char* separator) {
    std::string s;
    for (const std::string& name : axes.dim_names)
        s += fmt::format("{}{}={}", s.empty() ? "" : separator, name, b.at(name));
    return s;
}

// Integers (counts, bytes) exactly; other numbers with nine significant digits.
std::string number_text(double v) {
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15)
        return fmt::format("{:.0f}", v);
    return fmt::format("{:.9g}", v);
}

nlohmann::ordered_json number_json(double v) {
    if (!std::isfinite(v)) return nullptr;
    if (v == std::floor(v) && std::fabs(v) < 9.0e15) return static_cast<int64_t>(v);
    return v;
}

std::string csv_field(std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"') out += '"';
        out += ch;
    }
    return out + "\"";
}

// Splits one CSV line (RFC 4180 quoting, no newline inside a field: rows never have one).
std::optional<std::vector<std::string>> csv_split(std::string_view line) {
    std::vector<std::string> out;
    std::string field;
    size_t i = 0;
    while (true) {
        field.clear();
        if (i < line.size() && line[i] == '"') {
            ++i;
            while (true) {
                if (i >= line.size()) return std::nullopt;  // an unterminated quote
                if (line[i] == '"') {
                    if (i + 1 < line.size() && line[i + 1] == '"') {
                        field += '"';
                        i += 2;
                        continue;
                    }
                    ++i;
                    break;
                }
                field += line[i++];
            }
            if (i < line.size() && line[i] != ',') return std::nullopt;
        } else {
            while (i < line.size() && line[i] != ',') {
                if (line[i] == '"') return std::nullopt;
                field += line[i++];
            }
        }
        out.push_back(field);
        if (i >= line.size()) break;
        ++i;  // the comma
    }
    return out;
}

std::optional<double> parse_number(const std::string& s) {
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return std::nullopt;
    return v;
}

std::string one_line(std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    std::replace(s.begin(), s.end(), '\r', ' ');
    return s;
}

void write_all(int fd, const std::string& bytes, const std::string& file) {
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw error(fmt::format("sweep: error writing '{}': {}", file, std::strerror(errno)),
                        exit_code::failure);
        }
        done += static_cast<size_t>(n);
    }
}

// Set by SIGINT: no further configuration is started. A lock-free atomic is safe to store to
// from a signal handler.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_sigint(int) { g_interrupted.store(true); }

/// What the summary ranks, per configuration.
struct record {
    size_t config = 0;
    bool ok = false;
    std::optional<double> latency_s, energy_j, edp_j_s, peak_memory_bytes, inferences_per_j;
};

struct metric {
    const char* key;
    const char* label;
    const char* unit;
    std::optional<double> record::*value;
    bool higher_is_better;
};

const metric k_metrics[] = {
    {"latency_s", "lowest latency", "s", &record::latency_s, false},
    {"energy_j", "lowest energy per pass", "J", &record::energy_j, false},
    {"edp_j_s", "lowest energy-delay product", "J*s", &record::edp_j_s, false},
    {"peak_memory_bytes", "lowest peak memory", "B", &record::peak_memory_bytes, false},
    {"inferences_per_j", "most inferences per joule", "/J", &record::inferences_per_j, true},
};

std::string describe(const sweep_axes& axes, const sweep_config& c) {
    const sweep_device& d = axes.devices[c.device];
    std::string s = fmt::format("{}, {} ({}), {}", axes.model_names[c.model], d.name, d.hw_class,
                                dtype_name(c.precision));
    const std::string dims = dims_text(axes, axes.bindings[c.binding], " ");
    if (!dims.empty()) s += ", " + dims;
    if (axes.runtimes[c.runtime].name != "none") s += ", " + axes.runtimes[c.runtime].name;
    return s;
}

nlohmann::ordered_json record_json(const sweep_axes& axes, const sweep_expansion& ex,
                                   const record& r) {
    const sweep_config& c = ex.configs[r.config];
    const sweep_device& d = axes.devices[c.device];
    nlohmann::ordered_json x;
    x["config"] = r.config;
    x["model"] = axes.model_names[c.model];
    x["hardware"] = d.name;
    x["class"] = d.hw_class;
    x["precision"] = std::string(dtype_name(c.precision));
    nlohmann::ordered_json dims = nlohmann::ordered_json::object();
    for (const auto& [k, v] : axes.bindings[c.binding]) dims[k] = v;
    x["dims"] = std::move(dims);
    x["runtime"] = axes.runtimes[c.runtime].name;
    for (const metric& m : k_metrics)
        x[m.key] = r.*m.value ? number_json(*(r.*m.value)) : nlohmann::ordered_json();
    return x;
}

std::vector<size_t> front_of(const std::vector<record>& records) {
    std::vector<std::pair<double, double>> points;
    std::vector<size_t> which;
    for (size_t i = 0; i < records.size(); ++i) {
        const record& r = records[i];
        // Energy per inference, not per pass: a sweep over batch sizes compares passes of
        // different sizes, and the smallest pass is not the most frugal per inference.
        if (!r.ok || !r.latency_s || !r.inferences_per_j || !std::isfinite(*r.latency_s) ||
            !(*r.inferences_per_j > 0) || !std::isfinite(*r.inferences_per_j))
            continue;
        points.emplace_back(*r.latency_s, 1 / *r.inferences_per_j);
        which.push_back(i);
    }
    std::vector<size_t> out;
    for (size_t p : pareto_front(points)) out.push_back(which[p]);
    return out;
}

std::optional<size_t> best_of(const std::vector<record>& records, const metric& m) {
    std::optional<size_t> best;
    for (size_t i = 0; i < records.size(); ++i) {
        const std::optional<double>& v = records[i].*m.value;
        if (!records[i].ok || !v || !std::isfinite(*v)) continue;
        const std::optional<double>& b = best ? records[*best].*m.value : std::nullopt;
        if (!best || (m.higher_is_better ? *v > *b : *v < *b) ||
            (*v == *b && records[i].config < records[*best].config))
            best = i;
    }
    return best;
}

}  // namespace

// ---- axes ----

sweep_axes sweep_axes_of(const pipeline_spec& spec) {
    static const sweep_spec no_sweep;
    const sweep_spec& s = spec.sweep ? *spec.sweep : no_sweep;
    const std::string where = spec.sweep ? s.where.str() : spec.file.string();
    sweep_axes a;

    a.models = s.models.empty() ? std::vector<std::filesystem::path>{spec.model.path} : s.models;
    for (const auto& m : a.models) a.model_names.push_back(relative_name(m, spec.base_dir));

    std::map<std::string, std::vector<int64_t>, std::less<>> values;
    for (const auto& [k, v] : spec.model.dims) values[k] = {v};
    for (const auto& [k, v] : spec.model.sweeps) values[k] = v;
    for (const auto& [k, v] : s.dims) values[k] = v;
    if (values.count("batch")) a.dim_names.push_back("batch");
    for (const auto& [k, v] : values) {
        if (is_fixed_column(k))
            throw error(
                fmt::format("{}: dimension '{}' has the name of a column of the sweep's "
                            "rows; rename the symbol",
                            where, k));
        if (k != "batch") a.dim_names.push_back(k);
    }
    a.bindings = {dim_bindings{}};
    for (const std::string& name : a.dim_names) {
        std::vector<dim_bindings> next;
        for (const dim_bindings& b : a.bindings)
            for (int64_t v : values.at(name)) {
                next.push_back(b);
                next.back()[name] = v;
            }
        a.bindings = std::move(next);
    }

    auto add_runtime = [&](const runtime_spec& rt) {
        sweep_runtime r;
        r.name = rt.profile;
        r.file = rt.file;
        if (!rt.file.empty()) r.values = read_runtime_file(rt.file);
        a.runtimes.push_back(std::move(r));
    };
    if (!s.runtimes.empty())
        for (const runtime_spec& rt : s.runtimes) add_runtime(rt);
    else if (spec.runtime)
        add_runtime(*spec.runtime);
    else
        a.runtimes.push_back({"none", {}, {}});

    std::map<std::filesystem::path, config_values> read;
    auto hardware_of = [&](const std::filesystem::path& file) -> const config_values& {
        auto it = read.find(file);
        if (it == read.end()) it = read.emplace(file, read_hardware_file(file)).first;
        return it->second;
    };
    if (!s.hardware.empty()) {
        // The [sweep] hardware list: each device with its class's architecture plugin.
        std::vector<std::string> precisions = s.precisions;
        if (precisions.empty())
            for (const architecture_spec& as : spec.architectures)
                if (std::find(precisions.begin(), precisions.end(), as.precision) ==
                    precisions.end())
                    precisions.push_back(as.precision);
        if (precisions.empty()) precisions.push_back("float32");
        for (const sweep_hardware& h : s.hardware) {
            sweep_device d;
            d.name = h.name;
            d.file = h.file;
            d.plugin = "auto";
            d.hardware = hardware_of(h.file);
            d.hw_class = hardware_class(d.hardware);
            d.precisions = expand_precisions(precisions, d.hardware);
            d.where = h.where;
            a.devices.push_back(std::move(d));
        }
    } else {
        // One device per [[architecture]] table (the parser gives one entry per precision).
        for (const architecture_spec& as : spec.architectures) {
            if (!a.devices.empty() && a.devices.back().where.file == as.where.file &&
                a.devices.back().where.line == as.where.line) {
                a.devices.back().precisions.push_back(as.precision);
                continue;
            }
            sweep_device d;
            d.name = as.hardware;
            d.file = as.hardware_file;
            d.plugin = as.plugin;
            d.config = as.config;
            d.hardware = hardware_of(as.hardware_file);
            d.hw_class = hardware_class(d.hardware);
            d.precisions = {as.precision};
            d.where = as.where;
            a.devices.push_back(std::move(d));
        }
        if (!s.precisions.empty())
            for (sweep_device& d : a.devices)
                d.precisions = expand_precisions(s.precisions, d.hardware);
        // Rows name a device by its hardware: a second table on the same hardware gets "#2".
        std::map<std::string, int> seen;
        for (sweep_device& d : a.devices)
            if (int n = ++seen[d.name]; n > 1) d.name += fmt::format("#{}", n);
    }
    if (a.models.empty() || a.models.front().empty())
        throw error(fmt::format("{}: the sweep has no model", where));
    if (a.devices.empty()) throw error(fmt::format("{}: the sweep has no hardware", where));
    return a;
}

sweep_expansion expand_sweep(const sweep_axes& axes) {
    sweep_expansion ex;
    // Which (device, precision) pairs run: the device has a compute.<precision>.peak.
    std::vector<std::vector<std::pair<nnergy_dtype, bool>>> per_device;
    for (const sweep_device& d : axes.devices) {
        std::vector<std::pair<nnergy_dtype, bool>> list;
        for (const std::string& p : d.precisions)
            list.emplace_back(*dtype_from_name(p), offers(d.hardware, p));
        per_device.push_back(std::move(list));
    }
    for (uint32_t m = 0; m < axes.models.size(); ++m)
        for (uint32_t r = 0; r < axes.runtimes.size(); ++r)
            for (uint32_t b = 0; b < axes.bindings.size(); ++b)
                for (uint32_t d = 0; d < axes.devices.size(); ++d)
                    for (const auto& [precision, offered] : per_device[d]) {
                        if (!offered) {
                            ++ex.skipped;
                            continue;
                        }
                        ex.configs.push_back({m, r, b, d, precision});
                    }
    return ex;
}

std::string sweep_key(const sweep_axes& axes, const sweep_config& c) {
    return fmt::format("{}|{}|{}|{}|{}", axes.model_names[c.model], axes.devices[c.device].name,
                       dtype_name(c.precision), dims_text(axes, axes.bindings[c.binding], ","),
                       axes.runtimes[c.runtime].name);
}

// ---- rows ----

std::vector<std::string> sweep_columns(const sweep_axes& axes) {
    std::vector<std::string> out(std::begin(k_head_columns), std::end(k_head_columns));
    out.insert(out.end(), axes.dim_names.begin(), axes.dim_names.end());
    out.insert(out.end(), std::begin(k_tail_columns), std::end(k_tail_columns));
    return out;
}

std::string sweep_header(sweep_format format, const sweep_axes& axes) {
    if (format == sweep_format::jsonl) return {};
    std::string s;
    for (const std::string& c : sweep_columns(axes)) {
        if (!s.empty()) s += ',';
        s += csv_field(c);
    }
    return s + "\n";
}

std::string sweep_row(sweep_format format, const sweep_axes& axes, size_t index,
                      const sweep_config& c, const sweep_result& r) {
    const sweep_device& d = axes.devices[c.device];
    const dim_bindings& b = axes.bindings[c.binding];
    const evaluation_totals& t = r.totals;
    const std::optional<double> figures[] = {t.latency_s, t.energy_j,          t.average_power_w,
                                             t.edp_j_s,   t.peak_memory_bytes, t.inferences_per_j};
    if (format == sweep_format::jsonl) {
        nlohmann::ordered_json x;
        x["config"] = index;
        x["model"] = axes.model_names[c.model];
        x["hardware"] = d.name;
        x["class"] = d.hw_class;
        x["precision"] = std::string(dtype_name(c.precision));
        for (const std::string& name : axes.dim_names) x[name] = b.at(name);
        x["runtime"] = axes.runtimes[c.runtime].name;
        x["status"] = r.ok ? "ok" : "error";
        for (size_t i = 0; i < std::size(figures); ++i)
            x[k_tail_columns[2 + i]] =
                r.ok && figures[i] ? number_json(*figures[i]) : nlohmann::ordered_json();
        x["fits"] =
            r.ok && !t.fits.empty() ? nlohmann::ordered_json(t.fits) : nlohmann::ordered_json();
        x["flops"] = r.ok ? number_json(t.flops) : nlohmann::ordered_json();
        x["macs"] = r.ok ? number_json(t.macs) : nlohmann::ordered_json();
        x["params"] = r.ok ? number_json(t.params) : nlohmann::ordered_json();
        x["error"] = r.ok ? nlohmann::ordered_json() : nlohmann::ordered_json(one_line(r.error));
        // Invalid UTF-8 in a message (a file name) is replaced, never a throw mid-sweep.
        return x.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    }
    std::string s = fmt::format("{},{},{},{},{}", index, csv_field(axes.model_names[c.model]),
                                csv_field(d.name), csv_field(d.hw_class), dtype_name(c.precision));
    for (const std::string& name : axes.dim_names) s += fmt::format(",{}", b.at(name));
    s += fmt::format(",{},{}", csv_field(axes.runtimes[c.runtime].name), r.ok ? "ok" : "error");
    for (const std::optional<double>& f : figures)
        s += "," + (r.ok && f ? number_text(*f) : std::string());
    s += "," + csv_field(r.ok ? t.fits : std::string());
    for (double v : {t.flops, t.macs, t.params}) s += "," + (r.ok ? number_text(v) : std::string());
    s += "," + csv_field(r.ok ? std::string() : one_line(r.error));
    return s + "\n";
}

sweep_output_read read_sweep_output(const std::filesystem::path& file, sweep_format format,
                                    const sweep_axes& axes) {
    sweep_output_read out;
    std::ifstream f(file, std::ios::binary);
    if (!f) throw error(fmt::format("{}: cannot read the sweep output to resume", file.string()));
    std::stringstream buffer;
    buffer << f.rdbuf();
    const std::string text = buffer.str();
    const size_t last_newline = text.rfind('\n');
    out.complete_bytes = last_newline == std::string::npos ? 0 : last_newline + 1;

    const std::vector<std::string> columns = sweep_columns(axes);
    const size_t dims = axes.dim_names.size();
    const std::string header = sweep_header(sweep_format::csv, axes);
    std::string_view rest(text.data(), out.complete_bytes);
    size_t line_no = 0;
    while (!rest.empty()) {
        const size_t nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        rest.remove_prefix(nl + 1);
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const std::string at = fmt::format("{}:{}", file.string(), line_no);
        if (format == sweep_format::csv && line_no == 1) {
            if (std::string(line) + "\n" != header)
                throw error(
                    fmt::format("{}: cannot resume: the header is not this sweep's "
                                "(expected '{}'); write to another file or drop "
                                "--resume",
                                at, header.substr(0, header.size() - 1)));
            out.has_header = true;
            continue;
        }
        if (line.empty()) continue;
        sweep_row_read row;
        std::vector<std::string> key_parts;  // model, hardware, precision, dims, runtime
        if (format == sweep_format::csv) {
            const auto fields = csv_split(line);
            if (!fields || fields->size() != columns.size())
                throw error(fmt::format("{}: not a row of this sweep ({} fields, expected {})", at,
                                        fields ? fields->size() : 0, columns.size()));
            const auto& v = *fields;
            std::string dims_part;
            for (size_t i = 0; i < dims; ++i)
                dims_part += fmt::format("{}{}={}", i ? "," : "", axes.dim_names[i], v[k_head + i]);
            key_parts = {v[1], v[2], v[4], dims_part, v[k_head + dims]};
            row.ok = v[k_head + dims + 1] == "ok";
            const size_t first = k_head + dims + 2;
            row.latency_s = parse_number(v[first]);
            row.energy_j = parse_number(v[first + 1]);
            row.edp_j_s = parse_number(v[first + 3]);
            row.peak_memory_bytes = parse_number(v[first + 4]);
            row.inferences_per_j = parse_number(v[first + 5]);
        } else {
            const auto x = nlohmann::json::parse(line, nullptr, false);
            auto text_of = [&](const char* key) -> std::string {
                if (!x.is_object() || !x.contains(key) || !x[key].is_string())
                    throw error(
                        fmt::format("{}: not a row of this sweep (no string '{}')", at, key));
                return x[key].get<std::string>();
            };
            auto number_of = [&](const char* key) -> std::optional<double> {
                if (x.contains(key) && x[key].is_number()) return x[key].get<double>();
                return std::nullopt;
            };
            if (x.is_discarded() || !x.is_object())
                throw error(fmt::format("{}: not a row of this sweep (not a JSON object)", at));
            std::string dims_part;
            for (size_t i = 0; i < dims; ++i) {
                const std::string& name = axes.dim_names[i];
                if (!x.contains(name) || !x[name].is_number_integer())
                    throw error(
                        fmt::format("{}: not a row of this sweep (no integer '{}')", at, name));
                dims_part += fmt::format("{}{}={}", i ? "," : "", name, x[name].get<int64_t>());
            }
            key_parts = {text_of("model"), text_of("hardware"), text_of("precision"), dims_part,
                         text_of("runtime")};
            row.ok = text_of("status") == "ok";
            row.latency_s = number_of("latency_s");
            row.energy_j = number_of("energy_j");
            row.edp_j_s = number_of("edp_j_s");
            row.peak_memory_bytes = number_of("peak_memory_bytes");
            row.inferences_per_j = number_of("inferences_per_j");
        }
        row.key = fmt::format("{}|{}|{}|{}|{}", key_parts[0], key_parts[1], key_parts[2],
                              key_parts[3], key_parts[4]);
        out.rows.push_back(std::move(row));
    }
    return out;
}

std::vector<size_t> pareto_front(const std::vector<std::pair<double, double>>& points) {
    std::vector<size_t> order(points.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return points[a].first != points[b].first ? points[a].first < points[b].first
                                                  : points[a].second < points[b].second;
    });
    // Fastest first: a point joins when it is cheaper than every faster point.
    std::vector<size_t> out;
    for (size_t i : order)
        if (out.empty() || points[i].second < points[out.back()].second) out.push_back(i);
    return out;
}

// ---- running ----

namespace {

/// The loaded model, shared by every configuration of it; freed after its last one.
struct model_state {
    std::once_flag once;
    std::unique_ptr<graph> g;
    std::string error;
    std::atomic<size_t> remaining{0};
};

/// One (model, runtime, binding): the model bound and partitioned once.
struct group_state {
    std::once_flag once;
    std::unique_ptr<bound_graph> bound;
    std::unique_ptr<partition> part;
    std::string error;
    std::atomic<size_t> remaining{0};
};

/// A thread's plugin instances, one evaluation_worker per runtime, created on first use.
struct sweep_thread {
    std::vector<std::unique_ptr<evaluation_worker>> by_runtime;
};

/// "12.3k/s", "1.2 s": for the progress line and the summary.
std::string duration_text(double s) {
    if (s < 60) return fmt::format("{:.1f} s", s);
    if (s < 3600)
        return fmt::format("{}m{:02}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
    return fmt::format("{}h{:02}m", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
}

void draw_progress(size_t done, size_t total, double elapsed) {
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    const double share = total ? static_cast<double>(done) / static_cast<double>(total) : 1;
    constexpr int width = 30;
    const int filled = static_cast<int>(share * width);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    const std::string left =
        rate > 0 ? duration_text(static_cast<double>(total - done) / rate) + " left" : "";
    std::fprintf(stderr, "\r\033[K[%s] %zu/%zu %3.0f%%  %.0f configs/s  %s", bar.c_str(), done,
                 total, share * 100, rate, left.c_str());
    std::fflush(stderr);
}

}  // namespace

int run_sweep(const pipeline_spec& spec, const sweep_options& options) {
    const auto t_start = clock_type::now();
    const sweep_axes axes = sweep_axes_of(spec);
    const sweep_expansion ex = expand_sweep(axes);

    registry reg;
    run_options ro;
    ro.plugin_paths = options.plugin_paths;
    load_plugins(reg, spec, ro);

    // Every plugin is resolved before any work, so a typo fails before the first row.
    std::vector<const component_entry*> frontends;
    for (const auto& m : axes.models) {
        const bool own = m == spec.model.path;
        const component_entry* fe = nullptr;
        if (own && !spec.model.frontend.empty()) {
            fe = &require_component(reg, NNERGY_KIND_FRONTEND, spec.model.frontend,
                                    spec.model.where);
        } else {
            fe = reg.frontend_for(m);
            if (!fe)
                throw error(fmt::format("{}: no frontend reads this file (frontends: {})",
                                        m.string(), reg.names_of(NNERGY_KIND_FRONTEND)),
                            exit_code::plugin_missing);
        }
        frontends.push_back(fe);
    }
    std::vector<const component_entry*> architectures;
    for (const sweep_device& d : axes.devices) {
        const std::string plugin =
            d.plugin == "auto" ? reg.architecture_for_class(d.hw_class) : d.plugin;
        architectures.push_back(&require_component(reg, NNERGY_KIND_ARCHITECTURE, plugin, d.where));
    }
    // Plans resolve the partitioner and estimators before any work, too.
    std::vector<evaluation_plan> plans;
    for (const sweep_runtime& rt : axes.runtimes)
        plans.push_back(plan_for_runtime(reg, spec, rt.values, rt.name, rt.file, "default sweep"));

    // Output: -o, else [sweep] output, else standard output; the format by extension.
    const std::string output = !options.output.empty()                     ? options.output
                               : spec.sweep && !spec.sweep->output.empty() ? spec.sweep->output
                                                                           : "-";
    const bool to_stdout = output == "-";
    sweep_format format = sweep_format::csv;
    if (options.format) {
        format = *options.format;
    } else if (!to_stdout) {
        const std::string ext = std::filesystem::path(output).extension().string();
        if (ext == ".jsonl")
            format = sweep_format::jsonl;
        else if (ext != ".csv")
            throw error(fmt::format("-o {}: the format comes from the extension, .csv or .jsonl; "
                                    "or give --format csv|jsonl",
                                    output),
                        exit_code::usage);
    }
    if (options.resume && to_stdout)
        throw error("--resume needs an output file (-o FILE or [sweep] output)", exit_code::usage);

    // --resume: what the file holds already is not run again.
    std::unordered_map<std::string, size_t> index_of;
    for (size_t i = 0; i < ex.configs.size(); ++i)
        index_of.emplace(sweep_key(axes, ex.configs[i]), i);
    std::vector<uint8_t> done_before(ex.configs.size(), 0);
    std::vector<record> records;
    size_t resumed = 0, foreign = 0;
    bool write_header = format == sweep_format::csv;
    std::error_code ec;
    const bool resuming = options.resume && std::filesystem::exists(output, ec);
    if (resuming) {
        const sweep_output_read old = read_sweep_output(output, format, axes);
        for (const sweep_row_read& row : old.rows) {
            const auto it = index_of.find(row.key);
            if (it == index_of.end()) {
                ++foreign;
                continue;
            }
            if (done_before[it->second]) continue;
            done_before[it->second] = 1;
            ++resumed;
            records.push_back({it->second, row.ok, row.latency_s, row.energy_j, row.edp_j_s,
                               row.peak_memory_bytes, row.inferences_per_j});
        }
        if (old.complete_bytes < std::filesystem::file_size(output)) {
            // A row cut short (the process was killed mid-write) is dropped and run again.
            std::filesystem::resize_file(output, old.complete_bytes, ec);
            if (ec)
                throw error(fmt::format("{}: cannot drop the incomplete last line: {}", output,
                                        ec.message()));
        }
        write_header = write_header && !old.has_header;
        if (foreign)
            spdlog::warn("{}: {} row(s) are not configurations of this sweep; kept, not ranked",
                         output, foreign);
    }
    std::vector<size_t> todo;
    for (size_t i = 0; i < ex.configs.size(); ++i)
        if (!done_before[i]) todo.push_back(i);

    // Per-thread instances; the first thread's are made here, so that a plugin configuration
    // that fails does so before any output.
    const unsigned hw_threads = std::max(1u, std::thread::hardware_concurrency());
    const size_t jobs = std::max<size_t>(
        1, std::min<size_t>(options.jobs ? options.jobs : hw_threads, todo.size()));
    std::vector<std::unique_ptr<sweep_thread>> threads;
    for (size_t t = 0; t < jobs; ++t) {
        threads.push_back(std::make_unique<sweep_thread>());
        threads.back()->by_runtime.resize(plans.size());
    }
    for (size_t r = 0; r < plans.size(); ++r)
        threads[0]->by_runtime[r] = std::make_unique<evaluation_worker>(plans[r]);

    int fd = STDOUT_FILENO;
    if (!to_stdout) {
        const int flags = O_WRONLY | O_CREAT | (resuming ? O_APPEND : O_TRUNC);
        fd = ::open(output.c_str(), flags, 0644);
        if (fd < 0)
            throw error(fmt::format("cannot write '{}': {}", output, std::strerror(errno)),
                        exit_code::failure);
    }
    struct fd_closer {
        int fd;
        ~fd_closer() {
            if (fd != STDOUT_FILENO) ::close(fd);
        }
    } closer{fd};
    if (write_header) write_all(fd, sweep_header(format, axes), output);

    std::vector<model_state> models(axes.models.size());
    const size_t per_model_groups = axes.runtimes.size() * axes.bindings.size();
    std::vector<group_state> groups(axes.models.size() * per_model_groups);
    auto group_of = [&](const sweep_config& c) {
        return (c.model * axes.runtimes.size() + c.runtime) * axes.bindings.size() + c.binding;
    };
    for (size_t i : todo) {
        ++models[ex.configs[i].model].remaining;
        ++groups[group_of(ex.configs[i])].remaining;
    }
    std::mutex unknown_mutex;
    std::set<std::string> unknown_warnings;

    // A delay per configuration, for tests that interrupt a sweep midway.
    int delay_ms = 0;
    if (const char* d = std::getenv("NNERGY_SWEEP_DELAY_MS")) delay_ms = std::atoi(d);

    std::mutex write_mutex;
    std::atomic<size_t> done{0};
    size_t written_ok = 0, written_failed = 0;
    // Of this run, for the summary: the failed configuration first in the sweep's order, not
    // the first to finish, so that the message does not depend on the threads' timing.
    std::string first_error;
    size_t first_error_config = SIZE_MAX;
    auto job = [&](sweep_thread& t, size_t i) {
        const size_t ci = todo[i];
        const sweep_config& c = ex.configs[ci];
        model_state& ms = models[c.model];
        group_state& gs = groups[group_of(c)];
        sweep_result result;
        try {
            if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
            std::unique_ptr<evaluation_worker>& w = t.by_runtime[c.runtime];
            if (!w) w = std::make_unique<evaluation_worker>(plans[c.runtime]);
            std::call_once(ms.once, [&] {
                try {
                    const bool own = axes.models[c.model] == spec.model.path;
                    component_instance fe(*frontends[c.model],
                                          own ? spec.model.options : config_values{}, {},
                                          spec.base_dir);
                    ms.g = std::make_unique<graph>(load_model(fe, axes.models[c.model]));
                } catch (const std::exception& e) {
                    ms.error = e.what();
                }
            });
            if (!ms.error.empty()) throw error(ms.error);
            std::call_once(gs.once, [&] {
                try {
                    gs.bound = std::make_unique<bound_graph>(
                        nnergy::bind(*ms.g, axes.bindings[c.binding]));
                    gs.part =
                        std::make_unique<partition>(run_partitioner(w->partitioner(), *gs.bound));
                    if (!gs.bound->unknown_nodes.empty()) {
                        std::lock_guard<std::mutex> lock(unknown_mutex);
                        unknown_warnings.insert(fmt::format(
                            "{}: {} node(s) with ops that cannot be counted (`nnergy analyze` "
                            "lists them)",
                            axes.model_names[c.model], gs.bound->unknown_nodes.size()));
                    }
                } catch (const std::exception& e) {
                    gs.error = e.what();
                }
            });
            if (!gs.error.empty()) throw error(gs.error);
            const sweep_device& d = axes.devices[c.device];
            const component_instance& arch =
                w->architecture(c.device, *architectures[c.device], d.config, d.hardware, d.where);
            const nnergy_results& results = w->evaluate(arch, *gs.bound, *gs.part, c.precision);
            require_finite_totals(results, *gs.part, d.file, axes.runtimes[c.runtime].file);
            result.totals = totals_of(results, *gs.bound);
        } catch (const std::exception& e) {
            result.ok = false;
            result.error = e.what();
        }
        // The last configuration of a group (a model) frees its bound graph (the model).
        if (--gs.remaining == 0) {
            gs.part.reset();
            gs.bound.reset();
        }
        if (--ms.remaining == 0) ms.g.reset();
        const std::string row = sweep_row(format, axes, ci, c, result);
        record rec{ci,
                   result.ok,
                   result.totals.latency_s,
                   result.totals.energy_j,
                   result.totals.edp_j_s,
                   result.totals.peak_memory_bytes,
                   result.totals.inferences_per_j};
        std::lock_guard<std::mutex> lock(write_mutex);
        write_all(fd, row, output);
        records.push_back(rec);
        ++(result.ok ? written_ok : written_failed);
        if (!result.ok && ci < first_error_config) {
            first_error_config = ci;
            first_error = fmt::format("#{} {}: {}", ci, describe(axes, c), one_line(result.error));
        }
        ++done;
    };

    // Progress on a terminal only, redrawn a few times a second.
    // Not when the rows themselves scroll by on the same terminal.
    const bool show_progress = options.progress && ::isatty(STDERR_FILENO) && !todo.empty() &&
                               !(to_stdout && ::isatty(STDOUT_FILENO));
    std::mutex progress_mutex;
    std::condition_variable progress_cv;
    bool finished = false;
    const auto t_run = clock_type::now();
    std::thread progress;
    if (show_progress)
        progress = std::thread([&] {
            std::unique_lock<std::mutex> lock(progress_mutex);
            while (!finished) {
                draw_progress(done, todo.size(),
                              std::chrono::duration<double>(clock_type::now() - t_run).count());
                progress_cv.wait_for(lock, std::chrono::milliseconds(200));
            }
            std::fprintf(stderr, "\r\033[K");
            std::fflush(stderr);
        });

    // Plugins' warnings (a peak that does not fit, per configuration) would flood the terminal;
    // the rows carry the verdicts. --verbose shows them.
    const auto level = spdlog::get_level();
    if (level >= spdlog::level::warn) spdlog::set_level(spdlog::level::err);
    g_interrupted = false;
    struct sigaction action {};
    struct sigaction previous {};
    action.sa_handler = on_sigint;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;  // a second Ctrl-C ends the process at once
    ::sigaction(SIGINT, &action, &previous);
    std::exception_ptr failure;
    try {
        parallel_for(threads, todo.size(), job, &g_interrupted);
    } catch (...) {
        failure = std::current_exception();
    }
    ::sigaction(SIGINT, &previous, nullptr);
    spdlog::set_level(level);
    if (show_progress) {
        {
            std::lock_guard<std::mutex> lock(progress_mutex);
            finished = true;
        }
        progress_cv.notify_all();
        progress.join();
    }
    if (failure) std::rethrow_exception(failure);
    for (const std::string& w : unknown_warnings) spdlog::warn("{}", w);
    const size_t written = written_ok + written_failed;
    // A Ctrl-C after the last configuration started interrupts nothing.
    const bool interrupted = g_interrupted.load() && written < todo.size();
    const double seconds = std::chrono::duration<double>(clock_type::now() - t_start).count();

    // The summary: on standard output, or standard error when the rows went there.
    std::FILE* out = to_stdout ? stderr : stdout;
    size_t failed = written_failed;
    for (const record& r : records)
        if (r.config < ex.configs.size() && !r.ok && done_before[r.config]) ++failed;
    std::string s = fmt::format(
        "nnergy sweep: {} of {} configurations written to {} in {:.2f} s ({:.0f}/s, {} "
        "thread{}); {} failed",
        written, todo.size(), to_stdout ? "standard output" : output, seconds,
        seconds > 0 ? static_cast<double>(written) / seconds : 0.0, jobs, jobs == 1 ? "" : "s",
        failed);
    if (ex.skipped)
        s += fmt::format("; {} skipped (the device does not offer the precision)", ex.skipped);
    s += "\n";
    if (!first_error.empty()) s += fmt::format("first failure: {}\n", first_error);
    if (resumed)
        s += fmt::format("resumed: {} configurations were in {} already\n", resumed, output);
    if (interrupted)
        s += fmt::format("interrupted: {} configurations not run (--resume runs them)\n",
                         todo.size() - written);
    // Ranked: every row of the output, resumed ones included.
    for (const metric& m : k_metrics) {
        const std::optional<size_t> best = best_of(records, m);
        if (!best) {
            s += fmt::format("{:<30} not estimated\n", m.label);
            continue;
        }
        const record& r = records[*best];
        s += fmt::format("{:<30} {:>12}  #{} {}\n", m.label,
                         m.higher_is_better ? fmt::format("{:.4g} {}", *(r.*m.value), m.unit)
                                            : with_unit(*(r.*m.value), m.unit),
                         r.config, describe(axes, ex.configs[r.config]));
    }
    const std::vector<size_t> front = front_of(records);
    if (!front.empty()) {
        s += fmt::format(
            "Pareto front, latency vs energy per inference ({} configuration{}, fastest first):\n",
            front.size(), front.size() == 1 ? "" : "s");
        constexpr size_t shown = 20;
        for (size_t k = 0; k < front.size() && k < shown; ++k) {
            const record& r = records[front[k]];
            s += fmt::format("  {:>10} {:>10}  #{} {}\n", with_unit(*r.latency_s, "s"),
                             with_unit(1 / *r.inferences_per_j, "J"), r.config,
                             describe(axes, ex.configs[r.config]));
        }
        if (front.size() > shown)
            s += fmt::format("  and {} more (--summary-json lists them all)\n",
                             front.size() - shown);
    }
    std::fputs(s.c_str(), out);
    std::fflush(out);
    // A failure is told on standard error as every command's is, also when the summary (which
    // names it too) went to standard output: a script that keeps only stderr sees why.
    if (failed && out == stdout)
        std::fprintf(stderr,
                     "nnergy: error: sweep: %zu of %zu configurations failed (their rows say "
                     "why); first failure: %s\n",
                     failed, written + resumed,
                     first_error.empty() ? "(in a resumed row)" : first_error.c_str());

    if (!options.summary_json.empty()) {
        nlohmann::ordered_json doc;
        doc["schema"] = "nnergy.sweep-summary/1";
        doc["pipeline"] = spec.file.string();
        doc["output"] = output;
        doc["format"] = format == sweep_format::csv ? "csv" : "jsonl";
        doc["configurations"] = ex.configs.size();
        doc["skipped"] = ex.skipped;
        doc["resumed"] = resumed;
        doc["written"] = written;
        doc["failed"] = failed;
        doc["interrupted"] = interrupted;
        doc["seconds"] = seconds;
        nlohmann::ordered_json best = nlohmann::ordered_json::object();
        for (const metric& m : k_metrics) {
            const std::optional<size_t> b = best_of(records, m);
            best[m.key] = b ? record_json(axes, ex, records[*b]) : nlohmann::ordered_json();
        }
        doc["best"] = std::move(best);
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (size_t i : front) list.push_back(record_json(axes, ex, records[i]));
        doc["pareto_latency_energy"] = std::move(list);
        std::ofstream f(options.summary_json, std::ios::binary);
        if (!f || !(f << doc.dump(2) << "\n"))
            throw error(fmt::format("cannot write '{}'", options.summary_json), exit_code::failure);
    }
    if (interrupted) return 130;
    return failed ? static_cast<int>(exit_code::failure) : 0;
}

}  // namespace nnergy
