// SPDX-License-Identifier: Apache-2.0
// The sweep's fast path against the full one: a worker asks its plugins for the totals only
// and no advice (NNERGY_MAP_TOTALS_ONLY, NNERGY_MAP_NO_ADVICE), reuses its mappings and results
// from one evaluation to the next, and the memory estimator reuses what it derived from a graph
// it has seen (ABI 1.5 identities). None of that may change a total but the advice's. A
// calibration keeps the estimators from one candidate's hardware values to the next (ABI 1.9
// identities): they must see each candidate's values.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nnergy/framework/evaluate.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/host_objects.hpp>
#include <nnergy/framework/partition.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <nnergy/framework/registry.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fake_plugin_paths.h"

using namespace nnergy;

namespace {

const component_entry& component(const registry& reg, nnergy_component_kind kind,
                                 const char* name) {
    const component_entry* e = reg.find(kind, name);
    REQUIRE(e != nullptr);
    return *e;
}

struct totals {
    std::map<std::string, double> numbers;
    std::map<std::string, std::string> texts;
};

totals totals_of_results(const nnergy_results& r) {
    totals t;
    for (const auto& [k, v] : r.totals) t.numbers[std::string(k.view())] = v;
    for (const auto& [k, v] : r.total_texts) t.texts[k] = v;
    return t;
}

bool is_advice(const std::string& key) { return key == "advice" || key.rfind("advice.", 0) == 0; }

/// The totals without the advice (the `advice` text and the `advice.*` savings), and how many
/// advice keys there were.
size_t drop_advice(totals& t) {
    const size_t before = t.numbers.size() + t.texts.size();
    std::erase_if(t.numbers, [](const auto& kv) { return is_advice(kv.first); });
    std::erase_if(t.texts, [](const auto& kv) { return is_advice(kv.first); });
    return before - t.numbers.size() - t.texts.size();
}

size_t kernel_keys_written(const nnergy_results& r) {
    size_t n = 0;
    for (const auto& k : r.kernel_numbers) n += k.size();
    return n;
}

/// ResNet-50 of the bundled zoo, and a plan of the default partitioner and the three in-tree
/// estimators.
struct zoo_resnet50 {
    registry reg{std::filesystem::path{}};
    graph g;
    evaluation_plan plan;
    zoo_resnet50() {
        // With an estimator built for ABI 1.8 (tests/plugins/fake), which no plan below runs
        // unless it asks for it.
        reg.scan({NNERGY_TEST_PLUGIN_DIR, NNERGY_FAKE_PLUGIN_DIR "/minor_8"}, scan_mode::load_all);
        component_instance frontend(
            component(reg, NNERGY_KIND_FRONTEND, "nnergy.frontend.json_graph"), {});
        g = load_model(frontend, std::filesystem::path(NNERGY_TEST_SOURCE_DIR) /
                                     "configs/models/zoo/resnet50.json");
        config_value rules;
        rules.name = "rules";
        rules.kind = NNERGY_VALUE_STRING;
        rules.string_value =
            (std::filesystem::path(NNERGY_TEST_SOURCE_DIR) / "configs/fusion/default.toml")
                .string();
        plan.partitioner = &component(reg, NNERGY_KIND_PARTITIONER, "nnergy.partitioner.fusion");
        plan.partitioner_config = {rules};
        for (const char* name :
             {"nnergy.estimator.roofline", "nnergy.estimator.energy", "nnergy.estimator.memory"})
            plan.estimators.push_back({&component(reg, NNERGY_KIND_ESTIMATOR, name), {}, {}});
    }
};

}  // namespace

TEST_CASE(
    "a totals-only evaluation without advice, reused storage and cached memory give a full run's "
    "totals but the advice",
    "[evaluate]") {
    const zoo_resnet50 setup;
    const registry& reg = setup.reg;
    const graph& g = setup.g;
    const evaluation_plan& plan = setup.plan;
    evaluation_worker worker(plan);

    // One device of each class; batches and precisions interleaved so that the worker's
    // storage and the memory estimator's cache see a different graph, partition or precision
    // between two evaluations of the same one.
    const std::vector<std::string> devices = {"h100-sxm5", "xeon-8490h", "tpu-v5e", "kpu-t256"};
    std::vector<bound_graph> bound;
    std::vector<partition> parts;
    for (int64_t batch : {1, 8}) {
        bound.push_back(bind(g, {{"batch", batch}}));
        parts.push_back(run_partitioner(worker.partitioner(), bound.back()));
    }
    CHECK(bound[0].identity != 0);
    CHECK(bound[0].identity != bound[1].identity);
    CHECK(parts[0].identity != 0);
    CHECK(parts[0].identity != parts[1].identity);

    size_t compared = 0, advice_keys = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (size_t d = 0; d < devices.size(); ++d) {
            const config_values hw = read_hardware_file(
                resolve_hardware(devices[d], NNERGY_TEST_SOURCE_DIR, {"test", 0}));
            const config_value* cls = find_value(hw, "class");
            REQUIRE(cls != nullptr);
            const component_entry& arch_entry =
                component(reg, NNERGY_KIND_ARCHITECTURE,
                          reg.architecture_for_class(cls->string_value).c_str());
            const component_instance& arch = worker.architecture(d, arch_entry, {}, hw);
            for (nnergy_dtype precision : {NNERGY_DTYPE_FLOAT16, NNERGY_DTYPE_FLOAT32})
                for (size_t b = 0; b < bound.size(); ++b) {
                    if (!find_value(hw, "compute." + std::string(dtype_name(precision)) + ".peak"))
                        continue;
                    const nnergy_results& fast =
                        worker.evaluate(arch, bound[b], parts[b], precision);
                    const totals got = totals_of_results(fast);
                    const size_t fast_keys = kernel_keys_written(fast);

                    // The full run: fresh plugin instances, fresh objects, every detail.
                    component_instance fresh_arch(arch_entry, {}, hw);
                    const std::vector<nnergy_mapping> mappings =
                        map_kernels(fresh_arch, bound[b], parts[b], precision);
                    nnergy_results full;
                    for (size_t e = 0; e < plan.estimators.size(); ++e) {
                        component_instance estimator(*plan.estimators[e].entry, {});
                        run_estimator(estimator, fresh_arch, bound[b], parts[b], mappings,
                                      precision, full);
                    }
                    totals want = totals_of_results(full);

                    // Totals only with advice (what a caller that reads the advice asks for):
                    // every total, the advice included, as the full run's.
                    nnergy_results advised;
                    for (size_t e = 0; e < plan.estimators.size(); ++e) {
                        component_instance estimator(*plan.estimators[e].entry, {});
                        run_estimator(estimator, fresh_arch, bound[b], parts[b], mappings,
                                      precision, advised, NNERGY_MAP_TOTALS_ONLY);
                    }
                    const totals advised_totals = totals_of_results(advised);

                    INFO(devices[d] << " batch index " << b << " precision " << precision);
                    CHECK(advised_totals.numbers == want.numbers);
                    CHECK(advised_totals.texts == want.texts);
                    // Without advice: none of it, and every other total the same.
                    totals got_without = got;
                    CHECK(drop_advice(got_without) == 0);
                    advice_keys += drop_advice(want);
                    CHECK(got.numbers == want.numbers);
                    CHECK(got.texts == want.texts);
                    // The point of totals-only: far fewer per-kernel keys, latency kept.
                    CHECK(fast_keys < kernel_keys_written(full) / 2);
                    CHECK(fast.kernel_keys.find("latency_s").has_value());
                    // Per-kernel memory is a report's, not a sweep's (docs/abi.md).
                    CHECK_FALSE(fast.kernel_keys.find("memory_in_use_bytes").has_value());
                    CHECK(full.kernel_keys.find("memory_in_use_bytes").has_value());
                    bool explained = false;
                    for (const nnergy_mapping& m : mappings)
                        explained = explained || m.texts.find("explanation") != nullptr;
                    CHECK(explained);
                    ++compared;
                }
        }
    CHECK(compared >= 16);           // each device offers at least one of the two precisions
    CHECK(advice_keys >= compared);  // the full runs advise: there was advice to leave out
}

TEST_CASE("an estimator kept from one candidate to the next sees the values written over the last",
          "[evaluate]") {
    // A calibration writes each candidate's hardware values over the last candidate's, at the
    // same addresses and with the same count, and keeps the estimators (ABI 1.9): what they
    // derived from the hardware must be keyed by its identity, not by where it lies.
    const zoo_resnet50 setup;
    evaluation_plan plan = setup.plan;
    plan.runtime = read_runtime_file(std::filesystem::path(NNERGY_TEST_SOURCE_DIR) /
                                     "configs/runtimes/pytorch-eager.toml");
    evaluation_worker worker(plan);
    const bound_graph bound = bind(setup.g, {{"batch", 8}});
    const partition part = run_partitioner(worker.partitioner(), bound);
    const auto values = std::make_shared<config_values>(
        read_hardware_file(resolve_hardware("h100-sxm5", NNERGY_TEST_SOURCE_DIR, {"test", 0})));
    const component_entry& arch_entry =
        component(setup.reg, NNERGY_KIND_ARCHITECTURE, "nnergy.architecture.gpu");
    const auto totals_now = [&]() {
        const component_instance& arch = worker.architecture(0, arch_entry, {}, values);
        return totals_of_results(worker.evaluate(arch, bound, part, NNERGY_DTYPE_FLOAT16));
    };

    const totals first = totals_now();
    std::vector<const void*> first_estimators;
    for (size_t e = 0; e < plan.estimators.size(); ++e)
        first_estimators.push_back(worker.estimator(e).self());
    const component_instance& first_arch = worker.architecture(0, arch_entry, {}, values);
    const char* const first_name = first_arch.hardware_views().front().name.data;
    const uint64_t first_identity = first_arch.hardware_identity();

    // The next candidate: DRAM traffic, idle power and eager dispatch cost more (an energy
    // coefficient, a static power, a runtime's cost on the machine), and the memory is smaller.
    worker.forget_hardware();
    REQUIRE(values.use_count() == 1);  // no architecture holds the last candidate's values
    size_t changed = 0;
    for (config_value& v : *values)
        if (v.name == "energy.memory.dram" || v.name == "energy.static.idle_power" ||
            v.name == "runtime.pytorch-eager.dispatch.per_call") {
            v.float_value *= 1.5;
            ++changed;
        } else if (v.name == "memory.dram.capacity") {
            v.float_value = 1e6;  // 1 MB: ResNet-50 no longer fits
            ++changed;
        }
    REQUIRE(changed == 4);
    const totals second = totals_now();
    const component_instance& second_arch = worker.architecture(0, arch_entry, {}, values);
    for (size_t e = 0; e < plan.estimators.size(); ++e)
        CHECK(worker.estimator(e).self() == first_estimators[e]);
    CHECK(second_arch.hardware_views().front().name.data == first_name);  // the same addresses
    CHECK(second_arch.hardware_identity() != first_identity);

    // What fresh instances give on the new values.
    component_instance fresh_arch(arch_entry, {}, *values, {}, plan.runtime);
    const std::vector<nnergy_mapping> mappings =
        map_kernels(fresh_arch, bound, part, NNERGY_DTYPE_FLOAT16);
    nnergy_results fresh;
    for (const auto& planned : plan.estimators) {
        component_instance estimator(*planned.entry, {}, {}, {}, plan.runtime);
        run_estimator(estimator, fresh_arch, bound, part, mappings, NNERGY_DTYPE_FLOAT16, fresh,
                      NNERGY_MAP_TOTALS_ONLY | NNERGY_MAP_NO_ADVICE);
    }
    const totals want = totals_of_results(fresh);
    CHECK(second.numbers == want.numbers);
    CHECK(second.texts == want.texts);
    CHECK(second.numbers.at("energy_j") > first.numbers.at("energy_j"));
    CHECK(second.numbers.at("host_time_s") > first.numbers.at("host_time_s"));
    CHECK(second.texts.at("fits") == "does not fit");
    CHECK(first.texts.at("fits") != "does not fit");

    // An estimator built for ABI 1.8 may key such caches on addresses: it is made anew for each
    // candidate, and kept between the evaluations of one.
    evaluation_plan with_older = plan;
    with_older.estimators.push_back(
        {&component(setup.reg, NNERGY_KIND_ESTIMATOR, "fake.estimator.minor_8"), {}, {}});
    evaluation_worker older_worker(with_older);
    const auto estimates_by_instance = [&] {
        const component_instance& arch = older_worker.architecture(0, arch_entry, {}, values);
        return totals_of_results(older_worker.evaluate(arch, bound, part, NNERGY_DTYPE_FLOAT16))
            .numbers.at("fake_estimates_by_this_instance");
    };
    CHECK(estimates_by_instance() == 1);
    CHECK(estimates_by_instance() == 2);
    const void* kept = older_worker.estimator(1).self();
    older_worker.forget_hardware();
    CHECK(estimates_by_instance() == 1);
    CHECK(older_worker.estimator(1).self() == kept);
}

TEST_CASE("a graph or partition built by hand has no identity; a copy keeps it", "[evaluate]") {
    const bound_graph by_hand;
    CHECK(by_hand.identity == 0);
    const partition none;
    CHECK(none.identity == 0);
    const uint64_t a = new_identity(), b = new_identity();
    CHECK(a != 0);
    CHECK(b != a);
}

TEMPLATE_TEST_CASE("a reused keyed list keeps each key once whatever order it is refilled in",
                   "[evaluate]", std::string, nnergy::detail::pooled_name) {
    nnergy::detail::keyed_list<double, TestType> list;
    auto fill = [&](std::initializer_list<std::pair<const char*, double>> kv) {
        list.clear();
        for (const auto& [k, v] : kv) list.set(k, v, 4);
    };
    auto contents = [&] {
        std::vector<std::pair<std::string, double>> out;
        for (const auto& [k, v] : list) out.emplace_back(std::string_view(k), v);
        return out;
    };
    using kv = std::vector<std::pair<std::string, double>>;
    fill({{"a", 1}, {"b", 2}, {"c", 3}});
    CHECK(contents() == kv{{"a", 1}, {"b", 2}, {"c", 3}});
    // Same keys, same order: the refill's fast path.
    fill({{"a", 4}, {"b", 5}, {"c", 6}});
    CHECK(contents() == kv{{"a", 4}, {"b", 5}, {"c", 6}});
    // Another order leaves a stale "c" after the live keys...
    fill({{"c", 7}, {"a", 8}});
    CHECK(contents() == kv{{"c", 7}, {"a", 8}});
    // ... which a later refill must not take for a new key.
    fill({{"c", 1}, {"a", 2}, {"c", 3}});
    CHECK(contents() == kv{{"c", 3}, {"a", 2}});
    fill({{"c", 1}, {"a", 2}, {"b", 3}, {"a", 4}});
    CHECK(contents() == kv{{"c", 1}, {"a", 4}, {"b", 3}});
    REQUIRE(list.find("b") != nullptr);
    CHECK(*list.find("b") == 3);
    CHECK(list.find("d") == nullptr);
    // A new first key keeps the rest reusable, unless it repeats a later one.
    fill({{"a", 1}, {"b", 2}, {"c", 3}});
    fill({{"x", 1}, {"b", 2}, {"c", 3}});
    CHECK(contents() == kv{{"x", 1}, {"b", 2}, {"c", 3}});
    fill({{"c", 4}, {"b", 5}, {"c", 6}});
    CHECK(contents() == kv{{"c", 6}, {"b", 5}});
    fill({{"c", 1}, {"b", 2}, {"x", 3}, {"b", 4}});
    CHECK(contents() == kv{{"c", 1}, {"b", 4}, {"x", 3}});
}

struct pooled_test_tag;

TEST_CASE("a pooled name is stored once for the process, whichever thread asks", "[evaluate]") {
    using nnergy::detail::pooled_name;
    const pooled_name empty;
    CHECK(empty.view().empty());
    CHECK(pooled_name::of("").view().data() == empty.view().data());

    const std::string text = "memory.dram_read";
    const pooled_name a = pooled_name::of(text);
    CHECK(a == text);
    CHECK(a.view().data() != text.data());  // a copy of its own, not the caller's bytes
    CHECK(pooled_name::of(std::string(text)).view().data() == a.view().data());
    CHECK(pooled_name::of("memory.dram_write").view().data() != a.view().data());

    // Other threads get the very same copy, also when they ask at the same time.
    std::vector<const char*> seen(8, nullptr);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < seen.size(); ++t)
        threads.emplace_back([&seen, t] {
            for (int i = 0; i < 100; ++i) pooled_name::of(fmt::format("thread-name-{}", i % 10));
            seen[t] = pooled_name::of("memory.dram_read").view().data();
        });
    for (auto& th : threads) th.join();
    for (const char* p : seen) CHECK(p == a.view().data());
    CHECK(pooled_name::of("thread-name-3").view().data() ==
          pooled_name::of(std::string("thread-name-") + "3").view().data());

    // A hint that matches is returned as is; one that does not is replaced by the lookup.
    pooled_name hint = pooled_name::of("launch");
    CHECK(pooled_name::of("launch", hint).view().data() == hint.view().data());
    const pooled_name other = pooled_name::of("dma", hint);
    CHECK(other == "dma");
    CHECK(hint.view().data() == other.view().data());
    CHECK(pooled_name::at<pooled_test_tag>("dma", 3).view().data() == other.view().data());
    CHECK(pooled_name::at<pooled_test_tag>("dma", 1000).view().data() == other.view().data());
}

namespace {

/// The parallel_for calls this thread took part in, the last one's number first seen.
thread_local size_t calls_served = 0;
thread_local int last_call = -1;

/// Runs parallel_for(threads, count) once as call number `call`: checks that each index runs
/// once and that each thread number is one thread's during the call; returns, for each number,
/// how many calls its thread had served by then (0: it ran no job).
std::vector<size_t> checked_call(size_t threads, size_t count, int call) {
    std::vector<std::atomic<int>> runs(count);
    std::vector<std::thread::id> owner(threads);
    std::vector<size_t> served(threads, 0);
    std::mutex m;
    bool shared_number = false;
    parallel_for(threads, count, [&](size_t t, size_t i) {
        if (last_call != call) {
            last_call = call;
            ++calls_served;
        }
        {
            std::lock_guard<std::mutex> lock(m);
            if (served[t] == 0) owner[t] = std::this_thread::get_id();
            shared_number = shared_number || owner[t] != std::this_thread::get_id();
            served[t] = calls_served;
        }
        ++runs[i];
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
    CHECK_FALSE(shared_number);
    size_t once = 0;
    for (const auto& r : runs) once += r.load() == 1;
    CHECK(once == count);
    return served;
}

}  // namespace

TEST_CASE("parallel_for keeps its threads from one call to the next", "[evaluate][threads]") {
    // A thread that served earlier calls has counted them: a thread started for the call has
    // served that call only.
    std::vector<size_t> served;
    for (int call = 0; call < 10; ++call) served = checked_call(4, 400, 1000 + call);
    size_t kept = 0;
    for (size_t t = 1; t < served.size(); ++t) kept += served[t] > 1;
    CHECK(kept >= 2);  // each of the three ran jobs in most calls
    // Fewer threads than before, then more: the same threads, and new ones for the rest.
    checked_call(2, 100, 2000);
    served = checked_call(6, 600, 2001);
    CHECK(served[0] > 0);
}

TEST_CASE("parallel_for rethrows a job's exception and serves the next call",
          "[evaluate][threads]") {
    std::atomic<int> ran{0};
    CHECK_THROWS_WITH(parallel_for(3, 200,
                                   [&](size_t, size_t i) {
                                       ++ran;
                                       if (i == 37) throw std::runtime_error("job 37 failed");
                                   }),
                      "job 37 failed");
    CHECK(ran.load() >= 38);
    checked_call(3, 300, 3000);
}

TEST_CASE("parallel_for inside a job, or from two threads at once, runs every index",
          "[evaluate][threads]") {
    // A call from a job of a running call cannot have the kept threads: it starts its own.
    std::atomic<int> inner{0};
    parallel_for(2, 4,
                 [&](size_t, size_t) { parallel_for(3, 50, [&](size_t, size_t) { ++inner; }); });
    CHECK(inner.load() == 200);
    // Two callers at once: one has the kept threads, the other starts its own.
    std::atomic<int> total{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 2; ++c)
        callers.emplace_back([&] {
            for (int call = 0; call < 20; ++call)
                parallel_for(3, 100, [&](size_t, size_t) { ++total; });
        });
    for (std::thread& c : callers) c.join();
    CHECK(total.load() == 2 * 20 * 100);
}

TEST_CASE("a process forked after parallel_for ran starts threads of its own",
          "[evaluate][threads]") {
    checked_call(3, 300, 4000);  // the kept threads are running, and waiting
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // The child has none of its parent's threads: a call that waited for them would never
        // return, and the alarm would end the child.
        ::alarm(30);
        std::atomic<int> done{0};
        parallel_for(3, 300, [&](size_t, size_t) { ++done; });
        parallel_for(3, 300, [&](size_t, size_t) { ++done; });
        ::_exit(done.load() == 600 ? 0 : 1);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    checked_call(3, 300, 4001);  // the parent's threads still serve it
}
