// SPDX-License-Identifier: Apache-2.0
// The Markdown reporter: escaping, numbers, and a whole summary over a fake host's document.
#include <catch2/catch.hpp>
#include <string>

#include "fake_host.hpp"
#include "markdown_reporter.hpp"

using nlohmann::ordered_json;
using namespace nnergy::markdown;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

/// Two runs of three kernels; the second kernel's name and pattern hold markup.
ordered_json two_runs() {
    ordered_json kernel_a = ordered_json::parse(R"({
        "index": 0, "name": "conv|1", "pattern": "conv_bn_act", "ops": ["Conv", "Relu"],
        "metrics": {"latency_s": 2e-6, "bottleneck": "overhead", "energy_j": 1e-4,
                    "power_w": 50.0}})");
    ordered_json kernel_b = ordered_json::parse(R"({
        "index": 1, "name": "*bold* <b>x</b> [link](y) `code`", "pattern": "a_b",
        "ops": ["MatMul"],
        "metrics": {"latency_s": 6e-6, "bottleneck": "compute", "energy_j": 2e-4,
                    "power_w": 33.3}})");
    ordered_json kernel_c = ordered_json::parse(R"({
        "index": 2, "name": "tail", "pattern": "", "ops": ["Add"],
        "metrics": {"latency_s": 2e-6, "bottleneck": "memory:dram", "energy_j": 0.5e-4,
                    "power_w": 25.0}})");
    ordered_json totals = ordered_json::parse(R"({
        "latency_s": 1e-5, "energy_j": 3.5e-4, "average_power_w": 35.0, "edp_j_s": 3.5e-9,
        "peak_memory_bytes": 5740544, "fits": "l2", "inferences_per_j": 2857.14,
        "energy.compute_j": 2e-4, "energy.compute.tensor_core.float16_j": 2e-4,
        "energy.static_j": 1.5e-4})");
    ordered_json run = {
        {"architecture", {{"hardware", "h100-sxm5"}, {"class", "gpu"}, {"precision", "float16"}}},
        {"totals", totals},
        {"kernels", {kernel_a, kernel_b, kernel_c}},
        {"dims", {{"batch", 1}}}};
    ordered_json run2 = run;
    run2["dims"]["batch"] = 8;
    run2["totals"]["latency_s"] = 4e-5;
    run2["totals"]["fits"] = "does not fit";
    run2["totals"].erase("energy_j");
    return {{"schema", "nnergy.report/1"},
            {"tool", {{"name", "nnergy"}, {"version", "0.1.0"}}},
            {"model",
             {{"name", "tiny_net"},
              {"path", "/x/tiny_net.json"},
              {"dims", {{"batch", 1}}},
              {"sweep", {{"batch", {1, 8}}}},
              {"nodes", 3}}},
            {"partitioner", {{"plugin", "nnergy.partitioner.fusion"}, {"kernels", 3}}},
            {"runs", {run, run2}}};
}

}  // namespace

TEST_CASE("markdown escaping keeps names literal", "[markdown]") {
    CHECK(escape("plain.name-1") == "plain.name-1");
    CHECK(escape("a|b") == "a\\|b");
    CHECK(escape("*x* _y_ `z`") == "\\*x\\* \\_y\\_ \\`z\\`");
    CHECK(escape("<script>") == "\\<script\\>");
    CHECK(escape("[a](b)") == "\\[a\\](b)");
    CHECK(escape("back\\slash") == "back\\\\slash");
    CHECK(escape("~~s~~ #h &amp; !") == "\\~\\~s\\~\\~ \\#h \\&amp; \\!");
    // A line break would end the table row.
    CHECK(escape("two\nlines\r\tx") == "two lines  x");
    CHECK(escape("µs") == "µs");
    // Other control characters read \xNN (an escaped backslash, so it renders as one): an
    // escape sequence in a name must not reach a terminal showing the file.
    CHECK(escape("fc\x1b[31m") == "fc\\\\x1b\\[31m");
    CHECK(escape(std::string("a\0b\x7f", 4)) == "a\\\\x00b\\\\x7f");
}

TEST_CASE("markdown numbers keep three digits", "[markdown]") {
    CHECK(digits3(0) == "0");
    CHECK(digits3(1.234) == "1.23");
    CHECK(digits3(12.34) == "12.3");
    CHECK(digits3(123.4) == "123");
    CHECK(digits3(999.6) == "1000");
    CHECK(digits3(12345) == "12300");
    CHECK(digits3(0.01234) == "0.0123");
    CHECK(digits3(-2.5) == "-2.50");
    CHECK(digits3(1.5e-5) == "0.0000150");
    CHECK(digits3(2.5e-8) == "2.50e-08");
    CHECK(digits3(123456789) == "123000000");
    CHECK(digits3(2.6754e299) == "2.68e+299");  // an absurd hardware file's latency, readable
    CHECK(percent(0.4167) == "41.7%");
    CHECK(percent(0.0001) == "<0.1%");

    CHECK(pick_scale({2.3e-5, 1e-6}).prefix == "µ");
    CHECK(pick_scale({2.3e-5, 1e-6}).factor == 1e-6);
    CHECK(pick_scale({0.9996e-3}).prefix == "m");  // prints as 1.00 ms, not 1000 µs
    CHECK(pick_scale({5740544}).prefix == "M");
    CHECK(pick_scale({0.5}, false).prefix.empty());  // bytes never go below B
    CHECK(pick_scale({}).prefix.empty());
}

TEST_CASE("markdown tables", "[markdown]") {
    const std::string t = table({{"a"}, {"n", align::right}}, {{"x", "1"}, {"", "2"}});
    CHECK(t == "| a | n |\n|---|---:|\n| x | 1 |\n| | 2 |\n");
}

TEST_CASE("markdown summary of two runs", "[markdown]") {
    fake::install();
    const fake::value doc = fake::value::from(two_runs());
    const std::string md = render(nnergy::sdk::value_view(doc.handle()));
    INFO(md);
    // Title: the model and the swept batch.
    CHECK(md.rfind("# tiny\\_net (batch in {1, 8})\n", 0) == 0);
    CHECK(contains(md, "Model tiny\\_net.json, 3 nodes, 3 kernels"));
    // Several runs: a comparison, in one unit per column.
    CHECK(contains(md, "## Runs compared"));
    CHECK(contains(md, "| run | hardware | precision | dims | latency (µs) | energy (µJ) |"));
    CHECK(contains(md, "| 1 | h100-sxm5 | float16 | batch=1 | 10.0 | 350 |"));
    CHECK(contains(md, "| 2 | h100-sxm5 | float16 | batch=8 | 40.0 | - |"));
    CHECK(contains(md, "| **does not fit** |"));
    CHECK(contains(md, "| in l2 |"));
    // Per run: totals, energy by category largest first, shares of the total.
    CHECK(contains(md, "## Run 1 of 2: h100-sxm5 (gpu), float16, batch=1"));
    CHECK(contains(md,
                   "| category | energy (µJ) | share |\n|---|---:|---:|\n"
                   "| compute | 200 | 57.1% |\n| static | 150 | 42.9% |\n"
                   "| **total** | **350** | **100.0%** |"));
    // Top kernels: slowest first, markup escaped, shares of the run's latency.
    CHECK(contains(md, "### Kernels by latency (all 3)"));
    CHECK(contains(md,
                   "| 1 | \\*bold\\* \\<b\\>x\\</b\\> \\[link\\](y) \\`code\\` | a\\_b | "
                   "MatMul | 6.00 | 60.0% | compute |"));
    CHECK(contains(md, "| 0 | conv\\|1 | conv\\_bn\\_act | Conv+Relu | 2.00 | 20.0% | overhead |"));
    CHECK(contains(md, "### Kernels by energy (all 3)"));
    CHECK(contains(md, "| energy (µJ) | share | power (W) |"));
    // Run 2 has no energy total: no energy table, no share.
    const std::string run2 = md.substr(md.find("## Run 2 of 2"));
    CHECK_FALSE(contains(run2, "### Energy by category"));
    // Every table row has as many cells as its header: a stray pipe would add one.
    size_t pos = 0;
    size_t header_cells = 0;
    while (pos < md.size()) {
        const size_t end = md.find('\n', pos);
        const std::string line = md.substr(pos, end - pos);
        pos = end + 1;
        if (line.empty() || line[0] != '|') {
            header_cells = 0;
            continue;
        }
        size_t cells = 0;
        for (size_t i = 0; i < line.size(); ++i)
            if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++cells;
        if (header_cells == 0)
            header_cells = cells;
        else
            CHECK(cells == header_cells);
    }
}

TEST_CASE("markdown top-N and its option", "[markdown]") {
    fake::install();
    const fake::value doc = fake::value::from(two_runs());
    render_options opt;
    opt.kernels = 2;
    const std::string md = render(nnergy::sdk::value_view(doc.handle()), opt);
    CHECK(contains(md, "### Top 2 kernels by latency (of 3)"));
    CHECK_FALSE(contains(md, "| tail |"));
    opt.kernels = 0;
    CHECK_FALSE(contains(render(nnergy::sdk::value_view(doc.handle()), opt), "kernels by"));

    fake::config all;
    all.text("kernels", "all", 4);
    CHECK_FALSE(parse_options(all.view()).kernels.has_value());
    fake::config five;
    five.integer("kernels", 5, 4);
    CHECK(parse_options(five.view()).kernels == size_t{5});
    fake::config bad;
    bad.text("kernels", "some", 7);
    CHECK_THROWS_WITH(parse_options(bad.view()),
                      Catch::Contains("toy.toml:7") && Catch::Contains("'kernels'"));
    fake::config negative;
    negative.integer("kernels", -1, 8);
    CHECK_THROWS_WITH(parse_options(negative.view()), Catch::Contains("toy.toml:8"));
    fake::config unknown;
    unknown.integer("top", 3, 9);
    CHECK_THROWS_WITH(parse_options(unknown.view()), Catch::Contains("unknown key 'top'"));
}

TEST_CASE("markdown without estimates", "[markdown]") {
    fake::install();
    const fake::value doc = fake::value::from(ordered_json::object());
    const std::string md = render(nnergy::sdk::value_view(doc.handle()));
    CHECK(md.rfind("# model\n", 0) == 0);
    CHECK(contains(md, "nothing estimated"));
}
