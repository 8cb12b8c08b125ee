// SPDX-License-Identifier: Apache-2.0
// A benchmark, not a test: prints figures so growth with graph size can be read off.
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <nnergy/framework/bench.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/evaluate.hpp>
#include <nnergy/framework/heap_pages.hpp>
#include <nnergy/framework/host_objects.hpp>
#include <nnergy/framework/json_graph_writer.hpp>
#include <nnergy/framework/measure.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <thread>
#include <utility>

namespace nnergy {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Peak resident set size of this process so far (VmHWM), in bytes.
double status_bytes(std::string_view field) {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(field, 0) == 0) return std::stod(line.substr(field.size())) * 1024.0;
    return 0;
}

double peak_rss_bytes() { return status_bytes("VmHWM:"); }

/// Resets the process's peak resident size to its current one (Linux 4.0 and later), so that a
/// stage's own peak can be read; false where the kernel does not allow it.
bool reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    f.flush();
    return static_cast<bool>(f);
}

uint32_t add_t(graph& g, const std::string& name, std::vector<dim> shape, bool init = false) {
    tensor t;
    t.name = name;
    t.dtype = NNERGY_DTYPE_FLOAT32;
    t.shape = std::move(shape);
    t.is_initializer = init;
    return g.add_tensor(std::move(t));
}

// Residual CNN blocks of 7 nodes: Conv-BN-Relu-Conv-BN-Add-Relu on a small feature map, so the
// cost measured is the tool's per-node work, not arithmetic on big shapes.
graph synthetic_graph(size_t target_nodes) {
    const int64_t c = 16, hw = 8;
    graph g;
    g.name = fmt::format("synthetic_{}", target_nodes);
    uint32_t x = add_t(g, "input", {dim::named("batch"), dim::of(c), dim::of(hw), dim::of(hw)});
    g.inputs.push_back(x);
    size_t blocks = std::max<size_t>(1, target_nodes / 7);
    auto conv = [&](const std::string& p, uint32_t in) {
        uint32_t w = add_t(g, p + ".w", {dim::of(c), dim::of(c), dim::of(3), dim::of(3)}, true);
        uint32_t out = add_t(g, p + ".y", {});
        g.tensors[out].shape.reset();
        node n;
        n.name = p;
        n.op_type = "Conv";
        n.inputs = {in, w};
        n.outputs = {out};
        n.attributes.push_back({"pads", std::vector<int64_t>{1, 1, 1, 1}});
        n.attributes.push_back({"kernel_shape", std::vector<int64_t>{3, 3}});
        g.add_node(std::move(n));
        return out;
    };
    auto bn = [&](const std::string& p, uint32_t in) {
        std::vector<uint32_t> ins{in};
        for (const char* s : {".scale", ".bias", ".mean", ".var"})
            ins.push_back(add_t(g, p + s, {dim::of(c)}, true));
        uint32_t out = add_t(g, p + ".y", {});
        g.tensors[out].shape.reset();
        node n;
        n.name = p;
        n.op_type = "BatchNormalization";
        n.inputs = ins;
        n.outputs = {out};
        g.add_node(std::move(n));
        return out;
    };
    auto unary = [&](const std::string& p, const char* op, std::vector<uint32_t> ins) {
        uint32_t out = add_t(g, p + ".y", {});
        g.tensors[out].shape.reset();
        node n;
        n.name = p;
        n.op_type = op;
        n.inputs = std::move(ins);
        n.outputs = {out};
        g.add_node(std::move(n));
        return out;
    };
    for (size_t b = 0; b < blocks; ++b) {
        std::string p = fmt::format("b{}", b);
        uint32_t y = conv(p + ".conv1", x);
        y = bn(p + ".bn1", y);
        y = unary(p + ".relu1", "Relu", {y});
        y = conv(p + ".conv2", y);
        y = bn(p + ".bn2", y);
        y = unary(p + ".add", "Add", {y, x});
        x = unary(p + ".relu2", "Relu", {y});
    }
    g.outputs.push_back(x);
    return g;
}

std::filesystem::path need_config(const std::string& rel) {
    std::filesystem::path p = find_config(rel);
    if (p.empty()) throw error(fmt::format("bench: cannot find configs/{}", rel));
    return p;
}

const component_entry& need(const registry& reg, nnergy_component_kind kind, const char* name) {
    const component_entry* e = reg.find(kind, name);
    if (!e)
        throw error(fmt::format("bench: plugin '{}' not found (build the project first)", name),
                    exit_code::plugin_missing);
    return *e;
}

/// The default pipeline's partitioner (with the bundled fusion rules), reference architecture
/// (the synthetic-graph benchmark's), roofline estimator and the estimators that build on its
/// latencies (energy).
struct default_components {
    const component_entry& partitioner;
    const component_entry& architecture;
    const component_entry& estimator;
    const component_entry& energy;
    const component_entry& memory;
    config_value rules;
    explicit default_components(const registry& reg)
        : partitioner(need(reg, NNERGY_KIND_PARTITIONER, "nnergy.partitioner.fusion")),
          architecture(need(reg, NNERGY_KIND_ARCHITECTURE, "nnergy.architecture.reference")),
          estimator(need(reg, NNERGY_KIND_ESTIMATOR, "nnergy.estimator.roofline")),
          energy(need(reg, NNERGY_KIND_ESTIMATOR, "nnergy.estimator.energy")),
          memory(need(reg, NNERGY_KIND_ESTIMATOR, "nnergy.estimator.memory")) {
        rules.name = "rules";
        rules.kind = NNERGY_VALUE_STRING;
        rules.string_value = need_config("fusion/default.toml").string();
    }
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int run_bench(registry& reg, const std::vector<size_t>& sizes_in, int repeats) {
    if (repeats < 1) throw error("bench: --repeats must be at least 1", exit_code::usage);
    std::vector<size_t> sizes = sizes_in;
    std::sort(sizes.begin(), sizes.end());  // ascending, so peak memory belongs to each size

    const auto& fe_entry = need(reg, NNERGY_KIND_FRONTEND, "nnergy.frontend.json_graph");
    const default_components c(reg);

    config_values hw = read_hardware_file(need_config("hardware/h100-sxm5.toml"));

    component_instance frontend(fe_entry, {});
    component_instance partitioner(c.partitioner, {c.rules});
    component_instance arch(c.architecture, {}, hw);
    component_instance estimator(c.estimator, {});

    std::printf("nnergy bench: synthetic residual CNN graphs, batch=1, float16 on h100-sxm5\n");
    std::printf(
        "median of %d runs; times in milliseconds; load_MB is the most memory the load "
        "(parse and building the graph) held at once, beyond what the process held before it; "
        "peak_MB is the process high-water mark over the size's runs\n\n",
        repeats);
    std::printf("%9s %9s %10s %9s %10s %9s %9s %10s %9s %9s %8s %9s\n", "nodes", "file_MB", "parse",
                "infer", "partition", "estimate", "total", "us/node", "kernels", "load_MB", "xfile",
                "peak_MB");

    for (size_t n : sizes) {
        std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     fmt::format("nnergy-bench-{}-{}.json", ::getpid(), n);
        {
            // The graph that is written is freed before the runs, so that it is not in their
            // memory figures.
            const graph synthetic = synthetic_graph(n);
            std::ofstream f(file);
            write_json_graph(synthetic, f);
        }
        const double file_bytes = static_cast<double>(std::filesystem::file_size(file));
        const double file_mb = file_bytes / 1e6;
        std::vector<double> t_parse, t_infer, t_part, t_est, load_bytes;
        size_t kernels = 0, nodes = 0;
        double peak = 0;
        for (int r = 0; r < repeats; ++r) {
            // Freed memory the allocator still holds would be reused unseen: give it back
            // first, so that the load's growth is all its own.
            ::malloc_trim(0);
            back_heap_with_huge_pages();  // as a new process has it
            const bool reset = reset_peak_rss();
            const double before = status_bytes("VmRSS:");
            auto t0 = clock_type::now();
            graph g = load_model(frontend, file);
            t_parse.push_back(seconds_since(t0));
            if (reset) load_bytes.push_back(peak_rss_bytes() - before);
            t0 = clock_type::now();
            bound_graph bg = nnergy::bind(g, {{"batch", 1}});
            t_infer.push_back(seconds_since(t0));
            t0 = clock_type::now();
            partition p = run_partitioner(partitioner, bg);
            t_part.push_back(seconds_since(t0));
            t0 = clock_type::now();
            auto mappings = map_kernels(arch, bg, p, NNERGY_DTYPE_FLOAT16);
            nnergy_results results;
            run_estimator(estimator, arch, bg, p, mappings, NNERGY_DTYPE_FLOAT16, results);
            t_est.push_back(seconds_since(t0));
            kernels = p.kernels.size();
            nodes = g.nodes.size();
            peak = std::max(peak, peak_rss_bytes());
        }
        std::filesystem::remove(file);
        const double parse = median(t_parse), infer = median(t_infer), part = median(t_part),
                     est = median(t_est);
        const double total = parse + infer + part + est;
        const double load = load_bytes.empty() ? -1 : median(load_bytes);
        std::printf("%9zu %9.2f %10.3f %9.3f %10.3f %9.3f %9.3f %10.3f %9zu %9.1f %8.2f %9.1f\n",
                    nodes, file_mb, parse * 1e3, infer * 1e3, part * 1e3, est * 1e3, total * 1e3,
                    total * 1e6 / static_cast<double>(nodes), kernels, load / 1e6,
                    load / file_bytes, peak / 1e6);
    }
    std::printf(
        "\nLinear growth shows as a flat us/node column; xfile is load_MB over the file's size "
        "(-1: this kernel cannot reset the peak).\n");
    return 0;
}

int run_bench_models(registry& reg, const std::vector<std::filesystem::path>& files,
                     const dim_bindings& dims, int repeats, const config_values& frontend_options) {
    if (repeats < 1) throw error("bench: --repeats must be at least 1", exit_code::usage);
    std::printf(
        "nnergy bench: load + shape inference + counting; median of %d runs; peak RSS is "
        "the process high-water mark\n\n",
        repeats);
    std::printf("%-28s %10s %9s %9s %9s %9s %9s %11s\n", "model", "file_MB", "first_ms", "load_ms",
                "infer_ms", "total_ms", "peak_MB", "peak/file");
    for (const auto& file : files) {
        const component_entry* fe = reg.frontend_for(file);
        if (!fe)
            throw error(
                fmt::format("bench: no frontend reads '{}' (by its extension)", file.string()),
                exit_code::plugin_missing);
        component_instance frontend(*fe, frontend_options);
        std::vector<double> t_load, t_infer;
        size_t nodes = 0;
        for (int r = 0; r < repeats; ++r) {
            auto t0 = clock_type::now();
            graph g = load_model(frontend, file);
            t_load.push_back(seconds_since(t0));
            t0 = clock_type::now();
            bound_graph b = nnergy::bind(g, dims);
            t_infer.push_back(seconds_since(t0));
            nodes = g.nodes.size();
        }
        const double file_mb = static_cast<double>(std::filesystem::file_size(file)) / 1e6;
        const double peak_mb = peak_rss_bytes() / 1e6;
        const double load = median(t_load), infer = median(t_infer);
        std::vector<double> totals(t_load.size());
        for (size_t i = 0; i < totals.size(); ++i) totals[i] = t_load[i] + t_infer[i];
        std::printf("%-28s %10.2f %9.2f %9.2f %9.2f %9.2f %9.1f %11.2f  (%zu nodes)\n",
                    file.filename().string().c_str(), file_mb, t_load.front() * 1e3, load * 1e3,
                    infer * 1e3, median(totals) * 1e3, peak_mb, peak_mb / file_mb, nodes);
    }
    return 0;
}

namespace {

/// One catalog device as a sweep uses it: its values and the architecture of its class.
struct bench_device {
    config_values hardware;
    const component_entry* architecture = nullptr;
};

}  // namespace

int run_bench_sweep(registry& reg, const std::filesystem::path& file, int repeats,
                    const std::vector<int>& thread_counts) {
    if (repeats < 1) throw error("bench: --repeats must be at least 1", exit_code::usage);
    for (int t : thread_counts)
        if (t < 1) throw error("bench: --threads must be at least 1", exit_code::usage);
    const component_entry* fe = reg.frontend_for(file);
    if (!fe)
        throw error(fmt::format("bench: no frontend reads '{}' (by its extension)", file.string()),
                    exit_code::plugin_missing);
    const default_components c(reg);
    component_instance frontend(*fe, {});

    // Setup, not timed: one loaded model, every catalog device read with its class's plugin.
    const graph g = load_model(frontend, file);
    const source_location where{"bench", 0};
    std::vector<bench_device> devices;
    std::map<std::string, size_t> per_plugin;
    for (const std::string& name : hardware_catalog()) {
        bench_device d;
        d.hardware =
            read_hardware_file(resolve_hardware(name, std::filesystem::current_path(), where));
        const config_value* cls = find_value(d.hardware, "class");
        d.architecture =
            &need(reg, NNERGY_KIND_ARCHITECTURE,
                  reg.architecture_for_class(
                         cls && cls->kind == NNERGY_VALUE_STRING ? cls->string_value : "")
                      .c_str());
        ++per_plugin[d.architecture->name];
        devices.push_back(std::move(d));
    }
    const int64_t batches[] = {1, 8, 64};
    const nnergy_dtype precisions[] = {NNERGY_DTYPE_FLOAT32, NNERGY_DTYPE_FLOAT16,
                                       NNERGY_DTYPE_BFLOAT16, NNERGY_DTYPE_INT8};
    // The work of one sweep: (batch, device) pairs, each evaluating the precisions offered.
    size_t evaluations = 0, skipped = 0;
    std::vector<std::vector<nnergy_dtype>> offered(devices.size());
    for (size_t d = 0; d < devices.size(); ++d)
        for (nnergy_dtype precision : precisions) {
            if (find_value(devices[d].hardware,
                           fmt::format("compute.{}.peak", dtype_name(precision))))
                offered[d].push_back(precision);
            else
                ++skipped;  // the device does not offer this precision
        }
    for (const auto& o : offered) evaluations += o.size() * std::size(batches);
    skipped *= std::size(batches);

    std::string plugins;
    for (const auto& [name, n] : per_plugin)
        plugins += fmt::format("{}{} x{}", plugins.empty() ? "" : ", ", name, n);
    std::printf(
        "nnergy bench --sweep: %s (%zu nodes) on %zu catalog devices x batch 1/8/64 x "
        "float32/float16/bfloat16/int8 where offered\n"
        "architectures: %s\n"
        "%zu evaluations per sweep (%zu combinations not offered); each binds and partitions "
        "the model once per batch, then maps and estimates latency, energy (with EDP) and memory; "
        "median of %d "
        "sweeps\n\n",
        file.filename().string().c_str(), g.nodes.size(), devices.size(), plugins.c_str(),
        evaluations, skipped, repeats);
    std::printf("%8s %14s %9s\n", "threads", "evaluations/s", "speedup");

    evaluation_plan plan;
    plan.partitioner = &c.partitioner;
    plan.partitioner_config = {c.rules};
    for (const component_entry* e : {&c.estimator, &c.energy, &c.memory})
        plan.estimators.push_back({e, {}, {}});
    std::vector<size_t> by_cost(devices.size());  // most precisions first
    for (size_t d = 0; d < devices.size(); ++d) by_cost[d] = d;
    std::stable_sort(by_cost.begin(), by_cost.end(),
                     [&](size_t a, size_t b) { return offered[a].size() > offered[b].size(); });
    double single = 0;
    size_t kernel_evaluations = 0;  // kernels mapped and estimated per sweep
    for (int thread_count : thread_counts) {
        std::vector<std::unique_ptr<evaluation_worker>> workers;
        for (int t = 0; t < thread_count; ++t) {
            workers.push_back(std::make_unique<evaluation_worker>(plan));
            for (size_t d = 0; d < devices.size(); ++d)  // created here, not timed
                workers.back()->architecture(d, *devices[d].architecture, {}, devices[d].hardware);
        }
        std::vector<double> rates;
        for (int r = 0; r < repeats; ++r) {
            const auto t0 = clock_type::now();
            // One task list: bind and partition each batch, then the (batch, device) pairs,
            // devices with the most precisions first so that the last tasks are short. A pair
            // whose batch another thread is still binding waits for it.
            const size_t nb = std::size(batches);
            std::vector<bound_graph> bound(nb);
            std::vector<partition> parts(nb);
            std::deque<std::once_flag> ready(nb);
            parallel_for(workers, nb + nb * by_cost.size(), [&](evaluation_worker& w, size_t i) {
                const size_t b = i < nb ? i : (i - nb) / by_cost.size();
                std::call_once(ready[b], [&] {
                    bound[b] = nnergy::bind(g, {{"batch", batches[b]}});
                    parts[b] = run_partitioner(w.partitioner(), bound[b]);
                });
                if (i < nb) return;
                const size_t d = by_cost[(i - nb) % by_cost.size()];
                const component_instance& arch =
                    w.architecture(d, *devices[d].architecture, {}, devices[d].hardware);
                for (nnergy_dtype precision : offered[d])
                    w.evaluate(arch, bound[b], parts[b], precision);
            });
            rates.push_back(static_cast<double>(evaluations) / seconds_since(t0));
            kernel_evaluations = 0;
            for (size_t b = 0; b < nb; ++b)
                for (const auto& o : offered)
                    kernel_evaluations += o.size() * parts[b].kernels.size();
        }
        const double rate = median(rates);
        if (single == 0) single = rate / thread_count;
        std::printf("%8d %14.0f %8.2fx\n", thread_count, rate, rate / single);
    }
    // Per kernel, on one thread (the first row per thread): the goal is under 1 us.
    if (single > 0 && kernel_evaluations > 0)
        std::printf(
            "\none thread: %.2f us per kernel (%.1f kernels per evaluation; binding and "
            "partitioning included)\n",
            1e6 * static_cast<double>(evaluations) /
                (single * static_cast<double>(kernel_evaluations)),
            static_cast<double>(kernel_evaluations) / static_cast<double>(evaluations));
    std::printf(
        "\nspeedup is against the first row per thread; this machine has %u hardware "
        "threads\n",
        std::thread::hardware_concurrency());
    return 0;
}

int run_bench_sweep_command(const std::filesystem::path& model,
                            const std::vector<int>& thread_counts, int repeats) {
    if (repeats < 1) throw error("bench: --repeats must be at least 1", exit_code::usage);
    for (int t : thread_counts)
        if (t < 1) throw error("bench: --threads must be at least 1", exit_code::usage);
    // As many batch sizes as it takes for every catalog entry at every precision it offers to
    // reach 1,000 configurations.
    size_t pairs = 0;
    const source_location where{"bench", 0};
    const std::vector<std::string> catalog = hardware_catalog();
    for (const std::string& name : catalog)
        pairs += hardware_precisions(read_hardware_file(resolve_hardware(
                                         name, std::filesystem::current_path(), where)))
                     .size();
    if (pairs == 0) throw error("bench: the hardware catalog offers no precision");
    const size_t batches = (1000 + pairs - 1) / pairs;
    std::string batch_list;
    for (size_t b = 1; b <= batches; ++b) batch_list += fmt::format("{}{}", b > 1 ? ", " : "", b);

    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / fmt::format("nnergy-bench-sweep-{}", ::getpid());
    std::filesystem::create_directories(dir);
    const std::filesystem::path pipeline = dir / "sweep.toml", csv = dir / "sweep.csv";
    {
        std::ofstream f(pipeline);
        f << fmt::format(
            "[sweep]\nmodels = [\"{}\"]\nhardware = [\"*\"]\nbatch = [{}]\n"
            "precision = [\"all\"]\n",
            std::filesystem::absolute(model).generic_string(), batch_list);
    }
    std::error_code ec;
    const auto exe = boost::dll::program_location(ec);
    if (ec) throw error("bench: cannot find the nnergy executable", exit_code::internal);

    std::printf(
        "nnergy bench --sweep-command: `nnergy sweep` of %s on %zu catalog devices x every "
        "precision offered x batch 1..%zu = %zu configurations, written to a CSV; wall time of "
        "the whole command (process start, plugin and model loading included), median of %d "
        "runs\n\n",
        model.filename().string().c_str(), catalog.size(), batches, pairs * batches, repeats);
    std::printf("%8s %10s %14s %8s\n", "threads", "seconds", "configs/s", "rows");
    for (int threads : thread_counts) {
        const std::string cmd = fmt::format("'{}' --quiet sweep '{}' -o '{}' --jobs {} > /dev/null",
                                            exe.string(), pipeline.string(), csv.string(), threads);
        std::vector<double> times;
        size_t rows = 0;
        for (int r = 0; r < repeats; ++r) {
            const auto t0 = clock_type::now();
            const int rc = std::system(cmd.c_str());
            times.push_back(seconds_since(t0));
            // 1: a configuration failed, its row written: still a timing.
            if (rc == -1 || !WIFEXITED(rc) || (WEXITSTATUS(rc) != 0 && WEXITSTATUS(rc) != 1)) {
                std::filesystem::remove_all(dir, ec);
                throw error(fmt::format("bench: `{}` failed ({})", cmd, rc), exit_code::failure);
            }
            std::ifstream f(csv);
            std::string line;
            rows = 0;
            while (std::getline(f, line)) ++rows;
            rows -= rows > 0;  // the header
        }
        const double t = median(times);
        std::printf("%8d %10.3f %14.0f %8zu\n", threads, t, static_cast<double>(rows) / t, rows);
    }
    std::filesystem::remove_all(dir, ec);
    std::printf("\nthe goal: 1,000 configurations in under 1 s on two threads\n");
    return 0;
}

namespace {

// One run of a command: wall time from spawn to exit, and its standard error.
struct timed_run {
    double seconds = 0;
    std::string err;
    int64_t spawn_ns = 0;
};

// The clock the child's "reached the model" line reads (std::chrono::steady_clock, system-wide).
int64_t monotonic_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

timed_run run_timed(const std::vector<std::string>& argv, const std::filesystem::path& err_file) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    timed_run out;
    const auto t0 = clock_type::now();
    out.spawn_ns = monotonic_ns();
    const pid_t pid = ::fork();
    if (pid < 0) throw error(fmt::format("bench --startup: cannot fork: {}", std::strerror(errno)));
    if (pid == 0) {
        // The spawn time travels to the child, which logs how long it took to reach its model.
        ::setenv("NNERGY_SPAWN_NS", std::to_string(out.spawn_ns).c_str(), 1);
        const int devnull = ::open("/dev/null", O_WRONLY);
        const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (devnull < 0 || err < 0) ::_exit(127);
        ::dup2(devnull, 1);
        ::dup2(err, 2);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    out.seconds = seconds_since(t0);
    std::ifstream f(err_file);
    out.err.assign(std::istreambuf_iterator<char>(f), {});
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw error(fmt::format("bench --startup: `{}` failed:\n{}", shell_join(argv), out.err),
                    exit_code::failure);
    return out;
}

}  // namespace

int run_bench_startup(const std::filesystem::path& model, int repeats,
                      const std::vector<std::string>& input_shapes) {
    if (repeats < 1) throw error("bench: --repeats must be at least 1", exit_code::usage);
    std::error_code ec;
    const auto exe = boost::dll::program_location(ec);
    if (ec) throw error("bench: cannot find the nnergy executable", exit_code::internal);
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / fmt::format("nnergy-bench-startup-{}", ::getpid());
    std::filesystem::create_directories(dir);
    const std::string nnergy = exe.string();
    const std::string report = (dir / "report.json").string();
    // The end-to-end figure for a large graph: load to report written, as a user runs it.
    const std::string large_model = (dir / "synthetic-10k.json").string();
    {
        const graph synthetic = synthetic_graph(10000);
        std::ofstream f(large_model);
        write_json_graph(synthetic, f);
    }
    struct command {
        std::string label;
        std::vector<std::string> argv;
    };
    std::vector<std::string> analyze{nnergy,      "-v",       "analyze", model.string(), "--hw",
                                     "h100-sxm5", "--format", "json",    "-o",           report};
    for (const std::string& shape : input_shapes) {
        analyze.push_back("--input-shape");
        analyze.push_back(shape);
    }
    const std::vector<command> commands{
        {"nnergy --version", {nnergy, "--version"}},
        {"nnergy plugins", {nnergy, "plugins"}},
        {"nnergy analyze", analyze},
        {"analyze 10k nodes",
         {nnergy, "-v", "analyze", large_model, "--hw", "h100-sxm5", "--batch", "1", "--format",
          "json", "-o", report}},
    };
    std::printf(
        "nnergy bench --startup: new processes, median of %d; `analyze` is %s on h100-sxm5 "
        "writing a JSON report, `analyze 10k nodes` the same for a synthetic 10,000-node "
        "graph (`bench --nodes`); 'to model' is from the spawn to the frontend starting to read "
        "the model; stages from `nnergy -v`\n\n",
        repeats, model.filename().string().c_str());
    std::printf("%-18s %10s %12s\n", "command", "total_ms", "to_model_ms");
    std::vector<std::pair<std::string, std::string>> stages;
    for (const command& c : commands) {
        // One run first, not timed: the catalog and the page cache are warm in the runs timed.
        run_timed(c.argv, dir / "stderr.txt");
        std::vector<double> totals, to_model;
        for (int r = 0; r < repeats; ++r) {
            const timed_run t = run_timed(c.argv, dir / "stderr.txt");
            totals.push_back(t.seconds);
            const std::string key = "reached the model ";
            if (size_t at = t.err.find(key); at != std::string::npos)
                to_model.push_back(
                    static_cast<double>(std::stoll(t.err.substr(at + key.size())) - t.spawn_ns) /
                    1e9);
            if (size_t at = t.err.find("stage times (ms): "); at != std::string::npos) {
                if (stages.empty() || stages.back().first != c.label)
                    stages.emplace_back(c.label, "");
                stages.back().second = t.err.substr(at, t.err.find('\n', at) - at);
            }
        }
        if (to_model.empty())
            std::printf("%-18s %10.2f %12s\n", c.label.c_str(), median(totals) * 1e3, "-");
        else
            std::printf("%-18s %10.2f %12.2f\n", c.label.c_str(), median(totals) * 1e3,
                        median(to_model) * 1e3);
    }
    for (const auto& [label, line] : stages)
        std::printf("\nlast `%s` run, %s\n", label.c_str(), line.c_str());
    std::filesystem::remove_all(dir, ec);
    std::printf(
        "\nthe goals: start-up to the first model byte under 1.5 ms; ResNet-50 analyze end to "
        "end in 5 ms or less; a 10k-node graph end to end under 20 ms; a TorchScript "
        "ResNet-50 loaded and mapped in under 1 s with libtorch's start-up\n");
    return 0;
}

namespace {

/// The standard output of a command (its stderr passes through), or an error naming it.
std::string output_of(const std::vector<std::string>& argv) {
    const std::string line = shell_join(argv);
    FILE* pipe = ::popen(line.c_str(), "r");
    if (!pipe) throw error(fmt::format("bench --compare: cannot run {}", line));
    std::string out;
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
    const int status = ::pclose(pipe);
    if (status != 0)
        throw error(fmt::format("bench --compare: `{}` exited {}", line,
                                WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)),
                    exit_code::failure);
    return out;
}

struct token {
    std::string text;
    size_t end = 0;  ///< column just past it
    bool number = false;
};

std::vector<token> tokens_of(const std::string& line) {
    std::vector<token> out;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ') ++i;
        const size_t start = i;
        while (i < line.size() && line[i] != ' ') ++i;
        if (i == start) break;
        token t{line.substr(start, i - start), i, false};
        char* end = nullptr;
        std::strtod(t.text.c_str(), &end);
        t.number = end && *end == '\0' && !t.text.empty();
        out.push_back(std::move(t));
    }
    return out;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

}  // namespace

int run_bench_compare(const std::string& old_binary, const std::vector<std::string>& global_args,
                      const std::vector<std::string>& bench_args) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(old_binary, ec) || ::access(old_binary.c_str(), X_OK))
        throw error(fmt::format("bench --compare: '{}' is not an executable file (give the "
                                "nnergy binary of the other build)",
                                old_binary),
                    exit_code::usage);
    const auto command = [&](const std::string& binary) {
        std::vector<std::string> argv{binary};
        argv.insert(argv.end(), global_args.begin(), global_args.end());
        argv.push_back("bench");
        argv.insert(argv.end(), bench_args.begin(), bench_args.end());
        return argv;
    };
    const std::string self = boost::dll::program_location(ec).string();
    if (self.empty()) throw error("bench --compare: cannot find this program's own path");
    std::fprintf(stderr, "bench --compare: this build (%s), then %s\n", self.c_str(),
                 old_binary.c_str());
    const std::vector<std::string> mine = lines_of(output_of(command(self)));
    const std::vector<std::string> theirs = lines_of(output_of(command(old_binary)));

    std::printf(
        "nnergy bench --compare: each figure of this build, of %s, and their ratio "
        "(this / old: below 1 is faster or smaller)\n\n",
        old_binary.c_str());
    size_t rows = 0;
    for (size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i) {
        const std::string& a = i < mine.size() ? mine[i] : std::string();
        const std::string& b = i < theirs.size() ? theirs[i] : std::string();
        const std::vector<token> ta = tokens_of(a), tb = tokens_of(b);
        // A row of figures is named by its first number (the graph size, the thread count) or,
        // where it starts with words (a command of --startup), by them; at least one figure
        // follows the name.
        const bool named_by_number = !ta.empty() && ta[0].number;
        size_t numbers = 0;
        bool same_shape = ta.size() == tb.size();
        for (size_t k = 0; same_shape && k < ta.size(); ++k) {
            numbers += ta[k].number ? 1 : 0;
            same_shape = ta[k].number == tb[k].number && (ta[k].number || ta[k].text == tb[k].text);
        }
        if (a == b || numbers < (named_by_number ? 2u : 1u) || !same_shape) {
            // Headings and notes (the same in both, printed once); a row the two builds print
            // differently, both as they are.
            std::printf("%s\n", a.c_str());
            if (b != a) std::printf("%s   (old)\n", b.c_str());
            continue;
        }
        ++rows;
        std::string ratio;
        bool first_number = named_by_number;
        for (size_t k = 0; k < ta.size(); ++k) {
            if (!ta[k].number) continue;
            const double x = std::strtod(ta[k].text.c_str(), nullptr);
            const double y = std::strtod(tb[k].text.c_str(), nullptr);
            std::string cell = first_number ? ta[k].text
                               : y != 0     ? fmt::format("{:.2f}", x / y)
                                            : "-";
            first_number = false;
            const size_t end = std::max(ta[k].end, ratio.size() + 1 + cell.size());
            ratio.append(end - cell.size() - ratio.size(), ' ');
            ratio += cell;
        }
        std::printf("%s\n%s   (old)\n%s   (ratio)\n", a.c_str(), b.c_str(), ratio.c_str());
    }
    if (rows == 0)
        throw error("bench --compare: the two builds printed no rows of figures to compare",
                    exit_code::failure);
    return 0;
}

}  // namespace nnergy
