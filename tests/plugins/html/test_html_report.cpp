// SPDX-License-Identifier: Apache-2.0
// Whole pages of nnergy.reporter.html, rendered from documents held by the fake host: the charts
// present when their numbers are, a note when not, untrusted strings escaped, no "nan".
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <regex>
#include <string>

#include "fake_host.hpp"
#include "html_reporter.hpp"

using nlohmann::ordered_json;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

size_t occurrences(const std::string& haystack, const std::string& needle) {
    size_t n = 0;
    for (size_t p = haystack.find(needle); p != std::string::npos;
         p = haystack.find(needle, p + needle.size()))
        ++n;
    return n;
}

struct doc_options {
    bool latency = true, energy = true, memory = true;
    size_t kernels = 3;
    size_t runs = 1;
    std::string kernel_name = "k";
    std::string model_name = "tiny";
};

// Kernel i of run r, with s = (i + 1)(r + 1): 1e9 x (i + 1) FLOPs over 1e6 DRAM bytes, latency
// 1e-5 x s seconds, energy 1e-3 x s J split 60/30/10 over compute/memory/static, memory in use
// 1 MB weights plus s MB activations plus 0.5 MB workspace. Kernel 1 is memory-bound.
ordered_json make_doc(const doc_options& o) {
    ordered_json runs = ordered_json::array();
    for (size_t r = 0; r < o.runs; ++r) {
        ordered_json kernels = ordered_json::array();
        double latency = 0, energy = 0, peak = 0;
        for (size_t i = 0; i < o.kernels; ++i) {
            const double s = static_cast<double>(i + 1) * static_cast<double>(r + 1);
            ordered_json metrics = ordered_json::object();
            if (o.latency) {
                metrics["latency_s"] = 1e-5 * s;
                metrics["bottleneck"] = i == 1 ? "memory:dram" : "compute";
                latency += 1e-5 * s;
            }
            if (o.energy) {
                metrics["energy_j"] = 1e-3 * s;
                metrics["energy.compute_j"] = 0.6e-3 * s;
                metrics["energy.memory_j"] = 0.3e-3 * s;
                metrics["energy.static_j"] = 0.1e-3 * s;
                metrics["energy.compute.tensor_core.float16_j"] = 0.6e-3 * s;
                metrics["power_w"] = 100.0;
                metrics["edp_j_s"] = 1e-3 * s * 1e-5 * s;
                energy += 1e-3 * s;
            }
            if (o.memory) {
                metrics["live_activation_bytes"] = 1e6 * s;
                metrics["workspace_bytes"] = 5e5;
                metrics["memory_in_use_bytes"] = 1e6 + 1e6 * s + 5e5;
                peak = std::max(peak, 1.5e6 + 1e6 * s);
            }
            ordered_json level = {
                {"level", "dram"}, {"bytes", 1e6}, {"bandwidth_bytes_per_s", 2.97e12}};
            ordered_json mapping = {{"unit", "tensor_core"},
                                    {"bottleneck", "compute"},
                                    {"explanation", "why <b>"},
                                    {"peak_flops_per_s", 9.894e14},
                                    {"utilization", 0.5}};
            mapping["levels"] = ordered_json::array();
            mapping["levels"].push_back(level);
            ordered_json k = ordered_json::object();
            k["index"] = i;
            k["name"] = o.kernel_name + std::to_string(i);
            k["pattern"] = "conv_bn_act";
            k["ops"] = ordered_json::array({"Conv", "Relu"});
            k["flops"] = 1e9 * static_cast<double>(i + 1);
            k["input_bytes"] = 4e5;
            k["output_bytes"] = 4e5;
            k["weight_bytes"] = 2e5;
            k["arithmetic_intensity"] = 1e3 * static_cast<double>(i + 1);
            k["all_counted"] = true;
            k["mapping"] = mapping;
            k["metrics"] = metrics;
            kernels.push_back(k);
        }
        ordered_json totals = {{"params", 1000}, {"macs", 5e8}, {"flops", 1e9}};
        if (o.latency) totals["latency_s"] = latency;
        if (o.energy) {
            totals["energy_j"] = energy;
            totals["energy.compute_j"] = 0.6 * energy;
            totals["energy.memory_j"] = 0.3 * energy;
            totals["energy.static_j"] = 0.1 * energy;
            totals["average_power_w"] = energy / latency;
            totals["edp_j_s"] = energy * latency;
            totals["inferences_per_j"] = 1 / energy;
        }
        if (o.memory) {
            totals["peak_memory_bytes"] = peak;
            totals["peak_kernel"] = o.kernels - 1;
            totals["fits"] = "l2";
        }
        ordered_json estimators = ordered_json::array();
        if (o.latency) estimators.push_back("nnergy.estimator.roofline");
        if (o.energy) estimators.push_back("nnergy.estimator.energy");
        if (o.memory) estimators.push_back("nnergy.estimator.memory");
        runs.push_back({{"architecture",
                         {{"plugin", "nnergy.architecture.reference"},
                          {"hardware", "h100-sxm5"},
                          {"class", "gpu"},
                          {"precision", r % 2 ? "float32" : "float16"}}},
                        {"estimators", estimators},
                        {"totals", totals},
                        {"kernels", kernels},
                        {"dims", {{"batch", r + 1}}}});
    }
    return {{"schema", "nnergy.report/1"},
            {"tool", {{"name", "nnergy"}, {"version", "0.1.0"}}},
            {"pipeline", "p.toml"},
            {"model",
             {{"name", o.model_name},
              {"path", "m.json"},
              {"dims", {{"batch", 1}}},
              {"nodes", 5},
              {"tensors", 9},
              {"unknown_ops", ordered_json::array()}}},
            {"partitioner", {{"plugin", "nnergy.partitioner.fusion"}, {"kernels", o.kernels}}},
            {"totals", runs.empty() ? ordered_json::object() : runs[0]["totals"]},
            {"runs", runs}};
}

std::string page(const ordered_json& doc, const nnergy::html::render_options& opt = {}) {
    fake::install();
    const fake::value v = fake::value::from(doc);
    return nnergy::html::render(nnergy::sdk::value_view(v.handle()), opt);
}

// "nan" or "inf" printed as a number (not inside words such as "inferences").
bool has_non_finite(const std::string& html) {
    static const std::regex re("(^|[^A-Za-z])-?(nan|NaN|NAN|inf|Inf|INF|infinity)([^A-Za-z]|$)");
    return std::regex_search(html, re);
}

void check_self_contained(const std::string& html) {
    CHECK(!contains(html, "http://"));
    CHECK(!contains(html, "https://"));
    CHECK(!contains(html, "<link"));
    CHECK(!contains(html, "@import"));
    CHECK(!contains(html, "url("));
    CHECK(!contains(html, " src="));
    CHECK(contains(html, "Content-Security-Policy"));
}

}  // namespace

TEST_CASE("one run with every estimator: all charts and the table", "[html][page]") {
    const std::string html = page(make_doc({}));
    for (const char* id : {"run1-roofline", "run1-memory", "run1-energy-categories",
                           "run1-energy-kernels", "run1-edp", "run1-kernels", "run1-filter"})
        CHECK(contains(html, "id=\"" + std::string(id) + "\""));
    CHECK(!contains(html, "data-missing"));
    CHECK(!contains(html, "id=\"comparison\""));  // one run: nothing to compare
    CHECK(!has_non_finite(html));
    check_self_contained(html);
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(contains(html, "</html>\n"));
    // Header totals with units: 6e-5 s, 6e-3 J, 100 W.
    CHECK(contains(html, "60.0 \xC2\xB5s"));
    CHECK(contains(html, "6.00 mJ"));
    CHECK(contains(html, "100 W"));
    CHECK(contains(html, "4.50 MB"));  // peak memory
    // Roofline: a point per kernel coloured by bottleneck, both roofs labelled.
    CHECK(occurrences(html, "class=\"pt\"") == 3 + 3);  // roofline + EDP curve
    CHECK(contains(html, "DRAM 2.97 TB/s"));
    CHECK(contains(html, "tensor_core 989 TFLOP/s"));
    CHECK(contains(html, "memory:dram (1)"));
    CHECK(contains(html, "compute (2)"));
    // Memory: the peak marked at the estimator's peak kernel.
    CHECK(contains(html, "peak 4.50 MB at #2 k2"));
    // Energy by category: shares of the whole.
    CHECK(contains(html, "compute 3.60 mJ (60%)"));
    CHECK(contains(html, "static 600 \xC2\xB5J (10%)"));
    // The table: one row per kernel, units in headers, explanation escaped in its title.
    CHECK(occurrences(html, "<tr>") == 1 + 3);
    CHECK(contains(html, "<th data-type=\"number\">latency (s)</th>"));
    CHECK(contains(html, "<th data-type=\"number\">energy (J)</th>"));
    CHECK(contains(html, "title=\"why &lt;b&gt;\""));
}

TEST_CASE("untrusted names are escaped everywhere", "[html][page]") {
    doc_options o;
    o.kernel_name = "<script>alert(1)</script>\"'&";
    o.model_name = "\"><img src=x onerror=alert(1)>\xFF";
    const std::string html = page(make_doc(o));
    CHECK(!contains(html, "<script>alert"));
    CHECK(!contains(html, "<img"));
    CHECK(contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;0"));
    CHECK(contains(html, "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\xEF\xBF\xBD"));
    CHECK(occurrences(html, "<script>") == 2);  // the page's own two
    ordered_json unknown = make_doc({});
    unknown["model"]["unknown_ops"].push_back(
        {{"node", "<evil>"}, {"op_type", "Foo&"}, {"domain", "com.x"}});
    const std::string listed = page(unknown);
    CHECK(contains(listed, "id=\"unknown-ops\""));
    CHECK(contains(listed, "<li>&lt;evil&gt; (Foo&amp;, domain com.x)</li>"));
    nnergy::html::render_options opt;
    opt.title = "</title><script>x</script>";
    const std::string titled = page(make_doc({}), opt);
    CHECK(contains(titled, "<title>&lt;/title&gt;&lt;script&gt;x&lt;/script&gt;</title>"));
    CHECK(occurrences(titled, "<script>") == 2);
}

TEST_CASE("roofline only: energy and memory charts become notes", "[html][page]") {
    doc_options o;
    o.energy = false;
    o.memory = false;
    const std::string html = page(make_doc(o));
    CHECK(contains(html, "id=\"run1-roofline\""));
    CHECK(!contains(html, "<figure class=\"chart\" id=\"run1-memory\""));
    CHECK(contains(html, "<p class=\"note\" id=\"run1-memory\" data-missing=\"1\">"));
    CHECK(contains(html, "<p class=\"note\" id=\"run1-energy-categories\" data-missing=\"1\">"));
    CHECK(contains(html, "<p class=\"note\" id=\"run1-energy-kernels\" data-missing=\"1\">"));
    CHECK(contains(html, "<p class=\"note\" id=\"run1-edp\" data-missing=\"1\">"));
    CHECK(contains(html, "Not estimated in this run: energy"));
    CHECK(!contains(html, "energy (J)</th>"));  // no empty columns
    CHECK(!has_non_finite(html));
}

TEST_CASE("no estimators and no runs degrade to notes", "[html][page]") {
    doc_options o;
    o.latency = o.energy = o.memory = false;
    const std::string none = page(make_doc(o));
    CHECK(contains(none, "<p class=\"note\" id=\"run1-roofline\" data-missing=\"1\">"));
    CHECK(contains(none, "id=\"run1-kernels\""));  // the counts still tabulated
    CHECK(!has_non_finite(none));
    o.runs = 0;
    const std::string empty = page(make_doc(o));
    CHECK(contains(empty, "id=\"no-runs\""));
    CHECK(!has_non_finite(empty));
    // A document with nothing in it at all.
    const std::string bare = page(ordered_json::object());
    CHECK(contains(bare, "id=\"no-runs\""));
    CHECK(contains(bare, "</html>"));
}

TEST_CASE("non-finite numbers in the document never print", "[html][page]") {
    ordered_json doc = make_doc({});
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    doc["runs"][0]["totals"]["energy_j"] = nan;
    doc["runs"][0]["totals"]["latency_s"] = inf;
    doc["runs"][0]["kernels"][0]["metrics"]["latency_s"] = nan;
    doc["runs"][0]["kernels"][1]["metrics"]["memory_in_use_bytes"] = inf;
    doc["runs"][0]["kernels"][2]["mapping"]["peak_flops_per_s"] = nan;
    doc["runs"][0]["kernels"][2]["metrics"]["edp_j_s"] = -inf;
    const std::string html = page(doc);
    CHECK(!has_non_finite(html));
    CHECK(contains(html, "id=\"run1-roofline\""));
}

TEST_CASE("several runs: comparison charts, selector and a section per run", "[html][page]") {
    doc_options o;
    o.runs = 4;
    const std::string html = page(make_doc(o));
    for (const char* id :
         {"comparison", "compare-latency", "compare-energy", "compare-memory", "compare-edp",
          "run-selector", "runs-table", "run1", "run2", "run3", "run4", "run4-roofline",
          "run4-memory", "run4-energy-kernels", "run4-edp", "run4-kernels"})
        CHECK(contains(html, "id=\"" + std::string(id) + "\""));
    // Bars labelled with hardware, precision and dims; the smallest marked best.
    CHECK(contains(html, "1. h100-sxm5 \xC2\xB7 float16 \xC2\xB7 batch=1"));
    CHECK(contains(html, "2. h100-sxm5 \xC2\xB7 float32 \xC2\xB7 batch=2"));
    CHECK(occurrences(html, " best</text>") == 4);
    CHECK(!has_non_finite(html));
    // A metric missing from every run: its chart is a note.
    o.memory = false;
    const std::string no_memory = page(make_doc(o));
    CHECK(contains(no_memory, "<p class=\"note\" id=\"compare-memory\" data-missing=\"1\">"));
}

TEST_CASE("energy_kernels and max_table_kernels bound the page", "[html][page]") {
    doc_options o;
    o.kernels = 40;
    nnergy::html::render_options opt;
    opt.energy_kernels = 5;
    opt.max_table_kernels = 10;
    const std::string html = page(make_doc(o), opt);
    CHECK(contains(html, "Energy by kernel (top 5 of 40, stacked by category)"));
    CHECK(contains(html, "The other 35 kernels: 630 mJ (77%) of the kernels&#39; energy."));
    CHECK(occurrences(html, "<tr>") == 1 + 10);
    CHECK(contains(html, "the 10 slowest of 40 kernels"));
    CHECK(contains(html, ">k39<"));  // the slowest kept
    CHECK(!contains(html, ">k0<"));
    opt.max_table_kernels = 0;
    CHECK(contains(page(make_doc(o), opt), "Kernel table left out"));
}

TEST_CASE("reporter configuration: known keys only, values checked", "[html][config]") {
    fake::install();
    {
        fake::config cfg;
        cfg.file("pipe.toml").text("title", "My page", 3).text("colour", "red", 4);
        const nnergy_create_args args = fake::create_args(cfg);
        CHECK_THROWS_WITH(nnergy::html::html_reporter{nnergy::sdk::context(args)},
                          "pipe.toml:4: unknown key 'colour' for nnergy.reporter.html (expected: "
                          "title, max_table_kernels, energy_kernels)");
    }
    {
        fake::config cfg;
        cfg.file("pipe.toml").integer("max_table_kernels", -1, 7);
        const nnergy_create_args args = fake::create_args(cfg);
        CHECK_THROWS_WITH(nnergy::html::html_reporter{nnergy::sdk::context(args)},
                          Catch::Contains("pipe.toml:7") && Catch::Contains("max_table_kernels"));
    }
    {
        fake::config cfg;
        cfg.file("pipe.toml").text("energy_kernels", "ten", 8);
        const nnergy_create_args args = fake::create_args(cfg);
        CHECK_THROWS_WITH(nnergy::html::html_reporter{nnergy::sdk::context(args)},
                          Catch::Contains("energy_kernels") && Catch::Contains("integer"));
    }
    fake::config cfg;
    cfg.text("title", "My <page>");
    const nnergy_create_args args = fake::create_args(cfg);
    nnergy::html::html_reporter rep{nnergy::sdk::context(args)};
    const fake::value doc = fake::value::from(make_doc({}));
    fake::output out;
    nnergy::sdk::output_writer w(reinterpret_cast<nnergy_output*>(&out));
    rep.report(nnergy::sdk::value_view(doc.handle()), w);
    CHECK(contains(out.data, "<title>My &lt;page&gt;</title>"));
}
