// SPDX-License-Identifier: Apache-2.0
// The host's side of negotiation, against real libraries: every fake plugin of
// tests/plugins/fake is skipped with a reason naming what it broke, a valid one loads beside
// them, and the plugins that load work through the host API afterwards.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/host_objects.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <nnergy/framework/registry.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <string>
#include <vector>

#include "abi_test_paths.h"
#include "fake_plugin_paths.h"

namespace fs = std::filesystem;
using Catch::Contains;

namespace {

bool same_file(const fs::path& a, const fs::path& b) {
    std::error_code ec;
    return fs::equivalent(a, b, ec);
}

// Loads `file` into a fresh registry and returns the single reason it was skipped for.
std::string skip_reason(const char* file) {
    INFO("loading " << file);
    nnergy::registry r;
    CHECK_FALSE(r.load(file));
    CHECK(r.libraries().empty());
    CHECK(r.components().empty());
    REQUIRE(r.skipped().size() == 1);
    CHECK(same_file(r.skipped()[0].file, file));
    return r.skipped()[0].reason;
}

const nnergy::component_entry& require_component(const nnergy::registry& r, std::string_view name) {
    const nnergy::component_entry* e = r.find(name);
    INFO("component " << name);
    REQUIRE(e != nullptr);
    return *e;
}

nnergy::config_value number(std::string name, double value) {
    nnergy::config_value v;
    v.name = std::move(name);
    v.kind = NNERGY_VALUE_FLOAT;
    v.float_value = value;
    v.file = "test.toml";
    v.line = 1;
    return v;
}

nnergy::config_value boolean(std::string name, bool value) {
    nnergy::config_value v;
    v.name = std::move(name);
    v.kind = NNERGY_VALUE_BOOL;
    v.bool_value = value;
    return v;
}

// The hardware the fake and SDK architectures read: 1 TFLOP/s, 200 GB/s.
nnergy::config_values test_hardware() {
    return {number("compute.float32.peak", 1e12), number("memory.dram.bandwidth", 2e11)};
}

double mapping_number(const nnergy_mapping& m, const std::string& key) {
    for (const auto& [k, v] : m.numbers)
        if (k == key) return v;
    FAIL("mapping has no number '" << key << "'");
    return 0;
}

std::string mapping_text(const nnergy_mapping& m, const std::string& key) {
    for (const auto& [k, v] : m.texts)
        if (k == key) return v;
    FAIL("mapping has no text '" << key << "'");
    return {};
}

}  // namespace

// ---- libraries that must load ------------------------------------------------------------------

TEST_CASE("a valid C plugin loads with everything it declared", "[abi][loader]") {
    nnergy::registry r;
    REQUIRE(r.load(NNERGY_FAKE_GOOD));
    CHECK(r.skipped().empty());
    REQUIRE(r.libraries().size() == 1);
    const nnergy::plugin_library& lib = *r.libraries()[0];
    CHECK(same_file(lib.file, NNERGY_FAKE_GOOD));
    CHECK(lib.name == "fake_good");
    CHECK(lib.version == "0.1.0");
    CHECK(lib.vendor == "nnergy tests");
    CHECK(lib.license == "Apache-2.0");
    CHECK(lib.description == "a plugin built to test the nnergy ABI");
    CHECK(lib.abi_major == NNERGY_ABI_MAJOR);
    CHECK(lib.abi_minor == NNERGY_ABI_MINOR);

    REQUIRE(r.components().size() == 1);
    const nnergy::component_entry& c = require_component(r, "fake.architecture.good");
    CHECK(c.kind == NNERGY_KIND_ARCHITECTURE);
    CHECK(c.description == "test architecture built from fake_plugin.c");
    CHECK(c.library.get() == &lib);
    CHECK(r.find(NNERGY_KIND_FRONTEND, "fake.architecture.good") == nullptr);

    // Loading the same file again (another search path reaching it) registers nothing twice.
    CHECK(r.load(NNERGY_FAKE_GOOD));
    CHECK(r.libraries().size() == 1);
    CHECK(r.components().size() == 1);
}

TEST_CASE("optional members may be empty or absent", "[abi][loader]") {
    nnergy::registry r;
    REQUIRE(r.load(NNERGY_FAKE_NULL_OPTIONAL));
    CHECK(r.skipped().empty());
    REQUIRE(r.libraries().size() == 1);
    const nnergy::plugin_library& lib = *r.libraries()[0];
    CHECK(lib.name == "fake_null_optional");
    CHECK(lib.version.empty());
    CHECK(lib.vendor.empty());
    CHECK(lib.description.empty());

    CHECK(require_component(r, "fake.architecture.null_optional").description.empty());
    const nnergy::component_entry& fe = require_component(r, "fake.frontend.null_optional");
    CHECK(fe.kind == NNERGY_KIND_FRONTEND);
    CHECK(fe.description.empty());
    // Its table ends before file_extensions; the bytes past struct_size are not read.
    CHECK(fe.file_extensions.empty());
    CHECK(r.frontend_for("model.must-not-be-read") == nullptr);
}

TEST_CASE("structs from an older header are read up to their struct_size", "[abi][loader]") {
    nnergy::registry r;
    REQUIRE(r.load(NNERGY_FAKE_OLDER_STRUCT));
    CHECK(r.skipped().empty());
    REQUIRE(r.libraries().size() == 1);
    // The plugin info ends at component_count: the description written past it is ignored.
    CHECK(r.libraries()[0]->description.empty());
    CHECK(r.libraries()[0]->license == "Apache-2.0");
    // Its two descriptors are 56 bytes apart, not sizeof(nnergy_component): both must be found.
    REQUIRE(r.components().size() == 2);
    const auto& a = require_component(r, "fake.architecture.older_a");
    const auto& b = require_component(r, "fake.architecture.older_b");
    CHECK(a.kind == NNERGY_KIND_ARCHITECTURE);
    CHECK(b.kind == NNERGY_KIND_ARCHITECTURE);
    CHECK(a.description.empty());
    CHECK(b.description.empty());
    CHECK(b.vtbl == a.vtbl);
}

// ---- libraries that must be skipped ------------------------------------------------------------

TEST_CASE("a file that is not a library is skipped", "[abi][loader]") {
    CHECK_THAT(skip_reason(NNERGY_FAKE_GARBAGE), Contains("cannot load"));
}

TEST_CASE("a library without the entry point is skipped", "[abi][loader]") {
    CHECK_THAT(skip_reason(NNERGY_FAKE_NO_ENTRY),
               Contains("no entry symbol 'nnergy_plugin_negotiate'"));
}

TEST_CASE("a plugin of another ABI major is skipped", "[abi][loader]") {
    CHECK_THAT(skip_reason(NNERGY_FAKE_MAJOR_2), Contains("incompatible ABI major"));
}

TEST_CASE("a plugin of a newer ABI minor is skipped", "[abi][loader]") {
    CHECK_THAT(skip_reason(NNERGY_FAKE_MINOR_NEWER), Contains("newer than the host"));
}

TEST_CASE("a plugin whose negotiation returns a status is skipped with its message",
          "[abi][loader]") {
    std::string reason = skip_reason(NNERGY_FAKE_NEGOTIATE_ERROR);
    CHECK_THAT(reason, Contains("negotiation failed"));
    CHECK_THAT(reason, Contains("fake_negotiate_error refuses to load on purpose"));
}

TEST_CASE("a plugin whose negotiation throws is skipped", "[abi][loader]") {
    CHECK_THAT(skip_reason(NNERGY_FAKE_THROWS), Contains("threw an exception"));
}

TEST_CASE("a plugin without a license is skipped", "[abi][loader]") {
    CHECK_THAT(skip_reason(NNERGY_FAKE_NO_LICENSE), Contains("no license"));
}

TEST_CASE("a component without create is refused with its whole library", "[abi][loader]") {
    std::string reason = skip_reason(NNERGY_FAKE_NULL_CREATE);
    CHECK_THAT(reason, Contains("NULL required member"));
    CHECK_THAT(reason, Contains("fake.architecture.null_create"));
}

TEST_CASE("a component whose table lacks its function is refused with its whole library",
          "[abi][loader]") {
    std::string reason = skip_reason(NNERGY_FAKE_NULL_FUNCTION);
    CHECK_THAT(reason, Contains("NULL required member"));
    CHECK_THAT(reason, Contains("fake.architecture.null_function"));
}

TEST_CASE("a second component of the same name is skipped and the first stays", "[abi][loader]") {
    nnergy::registry r;
    REQUIRE(r.load(NNERGY_FAKE_GOOD));
    CHECK_FALSE(r.load(NNERGY_FAKE_DUP_NAME));
    REQUIRE(r.skipped().size() == 1);
    CHECK(same_file(r.skipped()[0].file, NNERGY_FAKE_DUP_NAME));
    CHECK_THAT(r.skipped()[0].reason, Contains("duplicate component name"));
    CHECK_THAT(r.skipped()[0].reason, Contains("fake.architecture.good"));
    // The reason names the library that already provides it.
    CHECK_THAT(r.skipped()[0].reason, Contains("libfake_good.so"));
    REQUIRE(r.libraries().size() == 1);
    REQUIRE(r.components().size() == 1);
    CHECK(
        same_file(require_component(r, "fake.architecture.good").library->file, NNERGY_FAKE_GOOD));
}

// ---- a directory of good and bad plugins -------------------------------------------------------

TEST_CASE("scanning a directory skips every broken plugin and keeps the good ones",
          "[abi][loader]") {
    nnergy::registry r;
    r.scan({NNERGY_FAKE_PLUGIN_DIR, "/nonexistent/nnergy/plugins"});

    std::vector<std::string> loaded;
    for (const auto& lib : r.libraries()) loaded.push_back(lib->name);
    std::sort(loaded.begin(), loaded.end());
    CHECK(loaded ==
          std::vector<std::string>{"fake_good", "fake_null_optional", "fake_older_struct"});

    const std::map<std::string, std::string> expected{
        {"libfake_garbage.so", "cannot load"},
        {"libfake_no_entry.so", "no entry symbol 'nnergy_plugin_negotiate'"},
        {"libfake_major_2.so", "incompatible ABI major"},
        {"libfake_minor_newer.so", "newer than the host"},
        {"libfake_negotiate_error.so", "negotiation failed"},
        {"libfake_throws.so", "threw an exception"},
        {"libfake_no_license.so", "no license"},
        {"libfake_null_create.so", "NULL required member"},
        {"libfake_null_function.so", "NULL required member"},
    };
    std::map<std::string, std::string> skipped;
    for (const auto& s : r.skipped()) skipped[s.file.filename().string()] = s.reason;
    CHECK(skipped.size() == expected.size());
    for (const auto& [file, reason] : expected) {
        INFO(file);
        auto it = skipped.find(file);
        REQUIRE(it != skipped.end());
        CHECK_THAT(it->second, Contains(reason));
    }

    // After all that, the host still works: the good architecture maps a kernel.
    const nnergy::component_entry& good = require_component(r, "fake.architecture.good");
    nnergy::component_instance arch(good, {}, test_hardware());
    nnergy::partition p;
    p.kernels.resize(1);
    p.kernels[0].name = "k0";
    p.kernels[0].stats.struct_size = sizeof(nnergy_kernel_stats);
    p.kernels[0].stats.input_bytes = 100;
    std::vector<nnergy_mapping> m =
        nnergy::map_kernels(arch, nnergy::bound_graph{}, p, NNERGY_DTYPE_FLOAT32);
    REQUIRE(m.size() == 1);
    CHECK(mapping_number(m[0], "peak_flops_per_s") == 1e12);
}

// ---- plugins at work through the host API ------------------------------------------------------

TEST_CASE("a C plugin maps a kernel through the host API", "[abi][loader]") {
    nnergy::registry r;
    REQUIRE(r.load(NNERGY_FAKE_GOOD));
    const nnergy::component_entry& entry = require_component(r, "fake.architecture.good");

    // A kernel whose statistics are set by hand: 1000 + 500 + 250 bytes cross DRAM.
    nnergy::partition p;
    p.kernels.resize(1);
    p.kernels[0].name = "k0";
    p.kernels[0].stats.struct_size = sizeof(nnergy_kernel_stats);
    p.kernels[0].stats.input_bytes = 1000;
    p.kernels[0].stats.output_bytes = 500;
    p.kernels[0].stats.weight_bytes = 250;
    const nnergy::bound_graph no_graph{};  // the fake architecture never reads the graph

    SECTION("mapping values follow the hardware and the configuration") {
        nnergy::component_instance arch(entry, {number("efficiency", 0.25)}, test_hardware());
        std::vector<nnergy_mapping> m =
            nnergy::map_kernels(arch, no_graph, p, NNERGY_DTYPE_FLOAT32);
        REQUIRE(m.size() == 1);
        CHECK(mapping_number(m[0], "peak_flops_per_s") == 1e12);
        CHECK(mapping_number(m[0], "effective_flops_per_s") == 0.25e12);  // 1e12 * 0.25
        CHECK(mapping_number(m[0], "utilization") == 0.25);
        CHECK(mapping_text(m[0], "unit") == "fake_unit");
        CHECK(mapping_text(m[0], "confidence") == "theoretical");
        REQUIRE(m[0].levels.size() == 1);
        CHECK(m[0].levels[0].name == "dram");
        CHECK(m[0].levels[0].bytes == 1750);  // 1000 + 500 + 250
        CHECK(m[0].levels[0].bandwidth_bytes_per_s == 2e11);
    }
    SECTION("a plugin's error status reaches the caller with its message") {
        nnergy::component_instance arch(entry, {}, test_hardware());
        CHECK_THROWS_WITH(nnergy::map_kernels(arch, no_graph, p, NNERGY_DTYPE_FLOAT16),
                          Contains("only float32 is modelled"));
    }
    SECTION("create fails cleanly when the hardware lacks what the plugin needs") {
        CHECK_THROWS_WITH(nnergy::component_instance(entry, {}, {}),
                          Contains("needs compute.float32.peak and memory.dram.bandwidth"));
        CHECK_THROWS_WITH(
            nnergy::component_instance(entry, {number("efficiency", 1.5)}, test_hardware()),
            Contains("efficiency must be in (0, 1]"));
    }
}

TEST_CASE("interned names are one pointer per text and key a mapping as their text does",
          "[abi][host]") {
    const nnergy_host_api& api = *nnergy::host_api();
    REQUIRE(NNERGY_HAS_MEMBER(&api, nnergy_host_api, mapping_add_event_named));
    const auto sv = [](std::string_view s) { return nnergy_string_view{s.data(), s.size()}; };
    // The same text from another buffer gives the same pointer; another text another one.
    const std::string copy = "units_allocated";
    const nnergy_name* units = api.name_intern(sv("units_allocated"));
    REQUIRE(units != nullptr);
    CHECK(api.name_intern(sv(copy)) == units);
    const nnergy_name* waves = api.name_intern(sv("waves"));
    CHECK(waves != units);
    CHECK(api.name_intern(sv("")) == nullptr);

    nnergy_mapping m;
    // Set by name, read by text and by name; set by text, read by name.
    api.mapping_set_number_named(&m, units, 3);
    api.mapping_set_number(&m, sv("waves"), 2);
    api.mapping_set_number_named(&m, waves, 5);  // the same key: overwritten, not added
    CHECK(m.numbers.size() == 2);
    double v = 0;
    CHECK(api.mapping_get_number(&m, sv("units_allocated"), &v));
    CHECK(v == 3);
    CHECK(api.mapping_get_number_named(&m, waves, &v));
    CHECK(v == 5);
    CHECK_FALSE(api.mapping_get_number_named(&m, api.name_intern(sv("utilization")), &v));
    api.mapping_set_text_named(&m, api.name_intern(sv("unit")), sv("tensor_core"));
    nnergy_string_view t{nullptr, 0};
    CHECK(api.mapping_get_text(&m, sv("unit"), &t));
    CHECK(std::string_view(t.data, t.size) == "tensor_core");
    CHECK(api.mapping_get_text_named(&m, api.name_intern(sv("unit")), &t));
    CHECK(std::string_view(t.data, t.size) == "tensor_core");

    // An event counted twice, by name and by text, is one event with both counts.
    const nnergy_name* memory = api.name_intern(sv("memory"));
    const nnergy_name* dram = api.name_intern(sv("dram"));
    api.mapping_add_event_named(&m, memory, dram, 100);
    api.mapping_add_event(&m, sv("memory"), sv("dram"), 50);
    api.mapping_add_event_named(&m, api.name_intern(sv("control")), api.name_intern(sv("launch")),
                                1);
    REQUIRE(api.mapping_event_count(&m) == 2);
    nnergy_string_view category{nullptr, 0}, event{nullptr, 0};
    double count = 0;
    api.mapping_event(&m, 0, &category, &event, &count);
    CHECK(std::string_view(category.data, category.size) == "memory");
    CHECK(std::string_view(event.data, event.size) == "dram");
    CHECK(count == 150);

    // Null names change nothing and find nothing; negative counts are refused as by text.
    api.mapping_set_number_named(&m, nullptr, 7);
    api.mapping_set_text_named(&m, nullptr, sv("x"));
    api.mapping_add_event_named(&m, memory, nullptr, 1);
    api.mapping_add_event_named(&m, memory, dram, -1);
    CHECK_FALSE(api.mapping_get_number_named(&m, nullptr, &v));
    CHECK_FALSE(api.mapping_get_text_named(&m, nullptr, &t));
    CHECK(m.numbers.size() == 2);
    CHECK(m.texts.size() == 1);
    CHECK(api.mapping_event_count(&m) == 2);
    api.mapping_event(&m, 0, &category, &event, &count);
    CHECK(count == 150);
}

TEST_CASE("a C++17 SDK plugin drives every kind of component through the host",
          "[abi][loader][sdk]") {
    nnergy::registry r;
    REQUIRE(r.load(NNERGY_ABI_SDK_PLUGIN));
    CHECK(r.skipped().empty());
    REQUIRE(r.libraries().size() == 1);
    CHECK(r.libraries()[0]->name == "nnergy_abi_sdk_plugin");
    CHECK(r.libraries()[0]->description == "every component kind, written with the C++17 SDK");
    REQUIRE(r.components().size() == 5);
    CHECK(r.find(NNERGY_KIND_FRONTEND, "test.sdk.frontend") != nullptr);
    CHECK(r.find(NNERGY_KIND_PARTITIONER, "test.sdk.partitioner") != nullptr);
    CHECK(r.find(NNERGY_KIND_ARCHITECTURE, "test.sdk.architecture") != nullptr);
    CHECK(r.find(NNERGY_KIND_ESTIMATOR, "test.sdk.estimator") != nullptr);
    CHECK(r.find(NNERGY_KIND_REPORTER, "test.sdk.reporter") != nullptr);
    const nnergy::component_entry* fe = r.frontend_for("model.sdktest");
    REQUIRE(fe != nullptr);
    CHECK(fe->name == "test.sdk.frontend");
    CHECK(require_component(r, "test.sdk.estimator").description == "max(compute, memory)");

    // frontend -> graph; the model file's content is not read by this frontend.
    nnergy::component_instance frontend(*fe, {});
    nnergy::graph g = nnergy::load_model(frontend, NNERGY_FAKE_GARBAGE);
    REQUIRE(g.nodes.size() == 2);
    CHECK(g.nodes[0].name == "mm");
    CHECK(g.nodes[0].op_type == "MatMul");
    CHECK(g.nodes[1].op_type == "Relu");
    nnergy::bound_graph bg = nnergy::bind(g, {});

    // partitioner -> one kernel per node.
    nnergy::component_instance partitioner(require_component(r, "test.sdk.partitioner"), {});
    nnergy::partition p = nnergy::run_partitioner(partitioner, bg);
    REQUIRE(p.kernels.size() == 2);
    CHECK(p.kernels[0].name == "mm");
    CHECK(p.kernels[0].pattern == "single");

    // architecture -> mappings carrying the kernel's bytes as the host counted them.
    nnergy::component_instance arch(require_component(r, "test.sdk.architecture"), {},
                                    test_hardware());
    std::vector<nnergy_mapping> mappings = nnergy::map_kernels(arch, bg, p, NNERGY_DTYPE_FLOAT32);
    REQUIRE(mappings.size() == 2);
    for (size_t k = 0; k < 2; ++k) {
        const nnergy_kernel_stats& s = p.kernels[k].stats;
        CHECK(mapping_number(mappings[k], "effective_flops_per_s") == 1e12);
        REQUIRE(mappings[k].levels.size() == 1);
        CHECK(mappings[k].levels[0].bytes == s.input_bytes + s.output_bytes + s.weight_bytes);
    }
    CHECK_THROWS_WITH(nnergy::map_kernels(arch, bg, p, NNERGY_DTYPE_INT8),
                      Contains("only float32"));

    // estimator -> latency per kernel = max(flops / 1e12, bytes / 2e11), computed here from the
    // host's own kernel statistics.
    nnergy::component_instance estimator(require_component(r, "test.sdk.estimator"), {});
    nnergy_results results;
    nnergy::run_estimator(estimator, arch, bg, p, mappings, NNERGY_DTYPE_FLOAT32, results);
    double total = 0;
    for (size_t k = 0; k < 2; ++k) {
        const nnergy_kernel_stats& s = p.kernels[k].stats;
        double expected =
            std::max(s.flops / 1e12, (s.input_bytes + s.output_bytes + s.weight_bytes) / 2e11);
        REQUIRE(results.kernel_numbers[k].size() == 1);
        CHECK(results.kernel_keys.name(results.kernel_numbers[k][0].first) == "latency_s");
        CHECK(results.kernel_numbers[k][0].second == Approx(expected).epsilon(1e-12));
        total += expected;
    }
    REQUIRE(results.totals.size() == 1);
    CHECK(results.totals[0].second == Approx(total).epsilon(1e-12));

    // reporter -> bytes through the host's output.
    nnergy::component_instance reporter(require_component(r, "test.sdk.reporter"), {});
    nnergy_value doc = nnergy_value::object();
    doc.set("schema", nnergy_value::of("nnergy.report/1"));
    nnergy_value& run = doc.set("runs", nnergy_value::array()).push(nnergy_value::object());
    nnergy_value& kernels = run.set("kernels", nnergy_value::array());
    kernels.push(nnergy_value::object());
    kernels.push(nnergy_value::object());
    // Standard output (never colour here: the tests' stdout is not a terminal), its companion
    // following it on standard output.
    const std::vector<nnergy::reporter_output> to_stdout = nnergy::run_reporter(reporter, doc, "-");
    REQUIRE(to_stdout.size() == 2);
    CHECK(to_stdout[0].path.empty());
    CHECK(to_stdout[0].bytes == "schema=nnergy.report/1 kernels=2\npath= color=0\n");
    CHECK(to_stdout[1].path.empty());
    CHECK(to_stdout[1].bytes == "kernels=2\n");
    // A file: the companion beside it, its extension replaced by the suffix.
    const std::vector<nnergy::reporter_output> to_file =
        nnergy::run_reporter(reporter, doc, "out/report.txt");
    REQUIRE(to_file.size() == 2);
    CHECK(to_file[0].path == "out/report.txt");
    CHECK(to_file[0].bytes == "schema=nnergy.report/1 kernels=2\npath=out/report.txt color=0\n");
    CHECK(to_file[1].path == "out/report-count.txt");
    CHECK(to_file[1].bytes == "kernels=2\n");
    // A suffix with a path separator is refused, naming the suffix.
    doc.set("bad_suffix", nnergy_value::of(true));
    CHECK_THROWS_WITH(
        nnergy::run_reporter(reporter, doc, "-"),
        Contains("suffix 'sub/dir.txt' must be non-empty and hold no path separator"));
}

TEST_CASE("exceptions inside an SDK component become errors naming the cause", "[abi][sdk]") {
    nnergy::registry r;
    REQUIRE(r.load(NNERGY_ABI_SDK_PLUGIN));
    const nnergy::component_entry& arch = require_component(r, "test.sdk.architecture");
    CHECK_THROWS_WITH(nnergy::component_instance(arch, {boolean("fail", true)}, test_hardware()),
                      Contains("asked to fail by its configuration"));
    CHECK_THROWS_WITH(nnergy::component_instance(arch, {}, {}),
                      Contains("missing required number 'compute.float32.peak'"));
}

// ---- the plugin catalog ------------------------------------------------------------------------

namespace {

// A fresh directory under the system's temporary directory, removed at the end of the test.
struct temp_dir {
    fs::path path;
    temp_dir() {
        path = fs::temp_directory_path() /
               ("nnergy-catalog-test-" + std::to_string(static_cast<long>(::getpid())));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string read_text(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_text(const fs::path& p, const std::string& text) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << text;
}

}  // namespace

TEST_CASE("a streamed report file appears whole once its reporter succeeded", "[abi][sdk]") {
    nnergy::registry r;
    REQUIRE(r.load(NNERGY_ABI_SDK_PLUGIN));
    nnergy::component_instance reporter(require_component(r, "test.sdk.reporter"), {});
    nnergy_value doc = nnergy_value::object();
    doc.set("schema", nnergy_value::of("nnergy.report/1"));
    doc.set("runs", nnergy_value::array())
        .push(nnergy_value::object())
        .set("kernels", nnergy_value::array())
        .push(nnergy_value::object());
    temp_dir dir;
    const std::string file = (dir.path / "report.txt").string();
    const auto entries = [&] {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(dir.path))
            names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    };

    // Written as it goes, into a file beside the destination; in place only when committed.
    std::vector<nnergy::reporter_output> outputs =
        nnergy::run_reporter(reporter, doc, file, /*stream_files=*/true);
    REQUIRE(outputs.size() == 2);
    REQUIRE(outputs[0].file);
    REQUIRE(outputs[1].file);
    CHECK(outputs[0].bytes.empty());
    CHECK_FALSE(fs::exists(file));
    for (nnergy::reporter_output& o : outputs) nnergy::write_output(o, "test.sdk.reporter");
    CHECK(entries() == std::vector<std::string>{"report-count.txt", "report.txt"});
    CHECK(read_text(file) == "schema=nnergy.report/1 kernels=1\npath=" + file + " color=0\n");
    CHECK(read_text(dir.path / "report-count.txt") == "kernels=1\n");

    // A reporter that fails after writing leaves the earlier files as they were, and nothing
    // of its own.
    nnergy_value failing = doc;
    failing.set("bad_suffix", nnergy_value::of(true));
    CHECK_THROWS_WITH(nnergy::run_reporter(reporter, failing, file, true),
                      Contains("must be non-empty and hold no path separator"));
    CHECK(entries() == std::vector<std::string>{"report-count.txt", "report.txt"});
    CHECK(read_text(dir.path / "report-count.txt") == "kernels=1\n");

    // A temporary file left by a stopped process of the same number is not written over.
    const fs::path stale = file + ".partial-" + std::to_string(static_cast<long>(::getpid()));
    std::ofstream(stale) << "left behind";
    std::vector<nnergy::reporter_output> again = nnergy::run_reporter(reporter, doc, file, true);
    for (nnergy::reporter_output& o : again) nnergy::write_output(o, "test.sdk.reporter");
    CHECK(read_text(stale) == "left behind");
    CHECK(read_text(file) == "schema=nnergy.report/1 kernels=1\npath=" + file + " color=0\n");
    fs::remove(stale);

    // A destination that cannot be written is named.
    CHECK_THROWS_WITH(
        nnergy::run_reporter(reporter, doc, (dir.path / "no/such/dir.txt").string(), true),
        Contains("cannot write report file '" + (dir.path / "no/such/dir.txt").string() + "'"));

    // Something that is not a regular file (a device, a link) has no place beside it for a
    // temporary file: it is written in place, as the reporter goes, never held whole.
    CHECK_FALSE(nnergy::streams_to_file("/dev/null"));
    const std::string link = (dir.path / "link.txt").string();
    fs::create_symlink(file, link);
    CHECK_FALSE(nnergy::streams_to_file(link));
    CHECK(nnergy::streams_to_file((dir.path / "new.txt").string()));
    std::vector<nnergy::reporter_output> held = nnergy::run_reporter(reporter, doc, link, true);
    REQUIRE(held[0].file);
    CHECK(held[0].bytes.empty());
    for (nnergy::reporter_output& o : held) nnergy::write_output(o, "test.sdk.reporter");
    CHECK(fs::is_symlink(link));  // still the link; its target holds the report
    CHECK(read_text(file) == "schema=nnergy.report/1 kernels=1\npath=" + link + " color=0\n");
    std::vector<nnergy::reporter_output> discarded =
        nnergy::run_reporter(reporter, doc, "/dev/null", true);
    REQUIRE(discarded[0].file);
    CHECK(discarded[0].bytes.empty());
    nnergy::write_output(discarded[0], "test.sdk.reporter");
    // A device that refuses the bytes is named, when they reach it (at the latest, at commit).
    std::vector<nnergy::reporter_output> full =
        nnergy::run_reporter(reporter, doc, "/dev/full", true);
    REQUIRE(full[0].file);
    CHECK_THROWS_WITH(nnergy::write_output(full[0], "test.sdk.reporter"),
                      Contains("error writing report file '/dev/full'"));
}

TEST_CASE("the catalog keeps what each library offers and opens it only when used",
          "[abi][loader][catalog]") {
    temp_dir tmp;
    const fs::path catalog = tmp.path / "cache" / "plugin-catalog";
    {
        nnergy::registry first(catalog);
        first.scan({NNERGY_FAKE_PLUGIN_DIR});
        REQUIRE(first.find("fake.architecture.good"));
        CHECK(first.find("fake.architecture.good")->vtbl != nullptr);  // negotiated now
    }
    REQUIRE(fs::is_regular_file(catalog));
    const std::string text = read_text(catalog);
    CHECK_THAT(text, Contains("fake.architecture.good"));
    CHECK_THAT(text, !Contains("libfake_garbage.so"));  // skipped libraries are not kept

    nnergy::registry second(catalog);
    second.scan({NNERGY_FAKE_PLUGIN_DIR});
    const nnergy::component_entry* good = second.find("fake.architecture.good");
    REQUIRE(good);
    CHECK(good->vtbl == nullptr);  // known from the catalog, not opened
    CHECK(good->library->handle == nullptr);
    CHECK(good->description == "test architecture built from fake_plugin.c");
    CHECK(good->library->license == "Apache-2.0");
    const nnergy::component_entry* fe = second.find("fake.frontend.null_optional");
    REQUIRE(fe);
    CHECK(fe->kind == NNERGY_KIND_FRONTEND);
    // Broken libraries are tried again on every scan, so their warnings do not go quiet.
    nnergy::registry eager;
    eager.scan({NNERGY_FAKE_PLUGIN_DIR});
    CHECK(second.skipped().size() == eager.skipped().size());
    CHECK_FALSE(second.skipped().empty());

    // Instantiating a component opens its library, once, and it works as a loaded one does.
    nnergy::component_instance arch(*good, {number("efficiency", 0.5)}, test_hardware());
    CHECK(arch.entry().vtbl != nullptr);
    CHECK(good->library->handle != nullptr);
    nnergy::partition p;
    p.kernels.resize(1);
    p.kernels[0].name = "k0";
    p.kernels[0].stats.struct_size = sizeof(nnergy_kernel_stats);
    std::vector<nnergy_mapping> m =
        nnergy::map_kernels(arch, nnergy::bound_graph{}, p, NNERGY_DTYPE_FLOAT32);
    REQUIRE(m.size() == 1);
    CHECK(mapping_number(m[0], "effective_flops_per_s") == 0.5e12);

    // `nnergy plugins` opens every library whatever the catalog says.
    nnergy::registry all(catalog);
    all.scan({NNERGY_FAKE_PLUGIN_DIR}, nnergy::scan_mode::load_all);
    CHECK(all.find("fake.architecture.good")->vtbl != nullptr);
}

TEST_CASE("a changed library is negotiated again and its catalog entry replaced",
          "[abi][loader][catalog]") {
    temp_dir tmp;
    const fs::path catalog = tmp.path / "plugin-catalog";
    const fs::path dir = tmp.path / "plugins";
    fs::create_directories(dir);
    const fs::path lib = dir / "libvendor.so";
    fs::copy_file(NNERGY_FAKE_GOOD, lib);
    {
        nnergy::registry r(catalog);
        r.scan({dir});
        REQUIRE(r.find("fake.architecture.good"));
    }
    // Another library under the same name: other size and modification time.
    fs::copy_file(NNERGY_FAKE_OLDER_STRUCT, lib, fs::copy_options::overwrite_existing);
    fs::last_write_time(lib, fs::last_write_time(lib) + std::chrono::seconds(2));
    nnergy::registry r(catalog);
    r.scan({dir});
    CHECK(r.find("fake.architecture.good") == nullptr);
    REQUIRE(r.find("fake.architecture.older_a"));
    CHECK(r.find("fake.architecture.older_a")->vtbl != nullptr);  // negotiated, not catalogued
    CHECK_THAT(read_text(catalog), Contains("fake.architecture.older_a"));
    CHECK_THAT(read_text(catalog), !Contains("fake.architecture.good"));
}

TEST_CASE("a library gone from a scanned directory leaves the catalog; other directories' stay",
          "[abi][loader][catalog]") {
    temp_dir tmp;
    const fs::path catalog = tmp.path / "plugin-catalog";
    const fs::path dir = tmp.path / "plugins", other = tmp.path / "other";
    fs::create_directories(dir / "nested");
    fs::create_directories(other);
    fs::copy_file(NNERGY_FAKE_GOOD, dir / "libgoing.so");
    fs::copy_file(NNERGY_FAKE_OLDER_STRUCT, dir / "libstaying.so");
    fs::copy_file(NNERGY_FAKE_GOOD, other / "libelsewhere.so");
    {
        nnergy::registry r(catalog);
        r.scan({dir});
    }
    {
        nnergy::registry r(catalog);
        r.scan({other});
    }
    // An entry below the directory, not in it, belongs to a directory of its own.
    fs::copy_file(NNERGY_FAKE_GOOD, dir / "nested" / "libnested.so");
    const std::string nested = (fs::weakly_canonical(dir) / "nested" / "libnested.so").string();
    std::string text = read_text(catalog);
    const size_t line = text.find("\nlibrary\t") + 1;
    const size_t tab = text.find('\t', line + 8);
    std::string copied = text.substr(line, text.find('\n', line) + 1 - line);
    copied.replace(8, tab - line - 8, nested);
    write_text(catalog, text + copied);
    REQUIRE_THAT(read_text(catalog), Contains("libgoing.so") && Contains("libstaying.so") &&
                                         Contains("libelsewhere.so") && Contains("libnested.so"));

    fs::remove(dir / "libgoing.so");
    nnergy::registry r(catalog);
    r.scan({dir});
    CHECK(r.find("fake.architecture.older_a"));
    CHECK(r.find("fake.architecture.good") == nullptr);
    text = read_text(catalog);
    CHECK_THAT(text, !Contains("libgoing.so"));
    CHECK_THAT(text, Contains("libstaying.so"));
    CHECK_THAT(text, Contains("libelsewhere.so"));  // its directory was not scanned
    CHECK_THAT(text, Contains("libnested.so"));     // nor was its own

    // The directory emptied: its last entry goes too.
    fs::remove(dir / "libstaying.so");
    nnergy::registry again(catalog);
    again.scan({dir});
    CHECK_THAT(read_text(catalog), !Contains("libstaying.so") && Contains("libelsewhere.so"));

    // A library that no longer exists at all (a deleted build tree) leaves the catalog when it
    // is next written, though its directory is not searched; one that exists stays.
    fs::remove(other / "libelsewhere.so");

    // A link is catalogued by its target's name, which the listing holds through the link: the
    // entry stays, and the next run finds the library in the catalog rather than opening it.
    fs::copy_file(NNERGY_FAKE_GOOD, dir / "vendor-build-7");
    fs::create_symlink(dir / "vendor-build-7", dir / "libvendor.so");
    {
        nnergy::registry r(catalog);
        r.scan({dir});
        REQUIRE(r.find("fake.architecture.good"));
    }
    CHECK_THAT(read_text(catalog), Contains("vendor-build-7"));
    CHECK_THAT(read_text(catalog), !Contains("libelsewhere.so") && Contains("libnested.so"));
    nnergy::registry linked(catalog);
    linked.scan({dir});
    REQUIRE(linked.find("fake.architecture.good"));
    CHECK(linked.find("fake.architecture.good")->vtbl == nullptr);  // from the catalog
    CHECK_THAT(read_text(catalog), Contains("vendor-build-7"));
}

TEST_CASE("a catalog that does not match its library is an error naming the file, never a guess",
          "[abi][loader][catalog]") {
    temp_dir tmp;
    const fs::path catalog = tmp.path / "plugin-catalog";
    {
        nnergy::registry r(catalog);
        REQUIRE(r.load(NNERGY_FAKE_GOOD));
    }
    SECTION("a component the library no longer offers") {
        nnergy::registry r(catalog);
        r.scan({NNERGY_FAKE_GOOD});
        REQUIRE(r.find("fake.architecture.good"));
        std::string text = read_text(catalog);
        const std::string from = "fake.architecture.good";
        text.replace(text.find(from), from.size(), "fake.architecture.gone");
        write_text(catalog, text);
        nnergy::registry stale(catalog);
        stale.scan({NNERGY_FAKE_GOOD});
        const nnergy::component_entry* gone = stale.find("fake.architecture.gone");
        REQUIRE(gone);
        CHECK_THROWS_WITH(nnergy::resolve_component(*gone),
                          Contains("libfake_good.so no longer offers architecture "
                                   "'fake.architecture.gone'"));
    }
    SECTION("a catalog that is not one is ignored and written again") {
        write_text(catalog, "not a catalog\nlibrary\t\t\n");
        nnergy::registry r(catalog);
        r.scan({NNERGY_FAKE_GOOD});
        REQUIRE(r.find("fake.architecture.good"));
        CHECK(r.find("fake.architecture.good")->vtbl != nullptr);
        CHECK(read_text(catalog).rfind("nnergy-plugin-catalog\t", 0) == 0);
    }
    SECTION("a catalog from another host version is ignored") {
        std::string text = read_text(catalog);
        text.replace(0, text.find('\n'), "nnergy-plugin-catalog\t1\t0.0.0-other\t1.0");
        write_text(catalog, text);
        nnergy::registry r(catalog);
        r.scan({NNERGY_FAKE_GOOD});
        CHECK(r.find("fake.architecture.good")->vtbl != nullptr);
    }
}
