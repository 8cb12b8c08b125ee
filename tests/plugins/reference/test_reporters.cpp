// SPDX-License-Identifier: Apache-2.0
// Text and JSON reporters over a report document held by the fake host.
#include <catch2/catch.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fake_host.hpp"
#include "json_reporter.hpp"
#include "text_reporter.hpp"

using nlohmann::ordered_json;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

/// The line of `text` that starts (after spaces) with `prefix`, or "".
std::string line_starting(const std::string& text, const std::string& prefix) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(pos, end - pos);
        size_t first = line.find_first_not_of(' ');
        if (first != std::string::npos && line.compare(first, prefix.size(), prefix) == 0)
            return line;
        pos = end + 1;
    }
    return "";
}

// Two kernels on one run: conv1 (memory-bound, 30 us) and fc (contains an uncounted op,
// 10 us). Numbers are round so the printed forms can be checked by eye.
ordered_json sample_report() {
    return ordered_json::parse(R"({
      "schema": "nnergy.report/1",
      "tool": {"name": "nnergy", "version": "0.1.0"},
      "pipeline": "configs/pipelines/quickstart.toml",
      "model": {"name": "tiny", "path": "models/tiny.json", "frontend": "nnergy.frontend.json_graph",
                "dims": {"batch": 4}, "nodes": 5, "tensors": 9,
                "unknown_ops": [{"node": "n7", "op_type": "Foo", "domain": ""}]},
      "partitioner": {"plugin": "nnergy.partitioner.fusion", "kernels": 2},
      "totals": {"params": 1200000, "macs": 118000000, "flops": 2.4e8, "latency_s": 4e-5},
      "runs": [{
        "architecture": {"plugin": "nnergy.architecture.reference", "hardware": "h100-sxm5",
                         "hardware_file": "configs/hardware/h100-sxm5.toml", "class": "gpu",
                         "precision": "float16"},
        "estimators": ["nnergy.estimator.roofline"],
        "totals": {"params": 1200000, "macs": 118000000, "flops": 2.4e8, "latency_s": 4e-5,
                   "compute_time_s": 1e-5, "memory_time_s": 3.6e-5, "overhead_s": 2.4e-6},
        "kernels": [
          {"index": 0, "name": "conv1", "pattern": "conv_bn_relu",
           "ops": ["Conv", "BatchNormalization", "Relu"], "nodes": ["c", "b", "r"],
           "macs": 118000000, "flops": 2.36e8, "input_bytes": 1000000, "output_bytes": 2000000,
           "weight_bytes": 500, "arithmetic_intensity": 78.66,
           "mapping": {"unit": "tensor_core", "utilization": 0.093, "bytes_scale": 0.5,
                       "bottleneck": "memory:dram",
                       "explanation": "Conv 3x3 on tensor_core: memory-bound"},
           "metrics": {"latency_s": 3e-5, "bottleneck": "memory:dram"}},
          {"index": 1, "name": "fc", "pattern": "",
           "ops": ["Gemm", "Foo"], "nodes": ["g", "n7"],
           "macs": 2000000, "flops": 4000000, "input_bytes": 2048, "output_bytes": 40,
           "weight_bytes": 4000000, "arithmetic_intensity": 0.9995,
           "mapping": {"unit": "tensor_core", "utilization": 0.004},
           "metrics": {"latency_s": 1e-5, "bottleneck": "memory:dram",
                       "note": "contains uncounted ops"}}
        ]
      }]
    })");
}

}  // namespace

TEST_CASE("human numbers", "[text]") {
    using namespace nnergy::text;
    CHECK(si(0) == "0");
    CHECK(si(512) == "512");
    CHECK(si(0.5) == "0.5");
    CHECK(si(12500) == "12.5k");
    CHECK(si(1234567) == "1.23M");
    CHECK(si(999600) == "1.00M");  // rounds up into the next prefix, never "1000k"
    CHECK(si(4.089e9) == "4.09G");
    CHECK(si(-2.5e12) == "-2.50T");
    CHECK(si(std::numeric_limits<double>::quiet_NaN()) == "-");
    CHECK(seconds(850e-9) == "850 ns");
    CHECK(seconds(1.234e-5) == "12.3 us");
    CHECK(seconds(999.7e-6) == "1.00 ms");
    CHECK(seconds(0.00123) == "1.23 ms");
    CHECK(seconds(2.05) == "2.05 s");
    CHECK(seconds(0) == "0 s");
    // Beyond the largest unit: an exponent, not hundreds of digits or an overflow to inf.
    CHECK(seconds(2.6754e299) == "2.68e+299 s");
    CHECK(seconds(1234) == "1234 s");
    CHECK(joules(5.98e300) == "5.98e+297 kJ");
    CHECK(joules(2500) == "2.50 kJ");
    CHECK(si(1e300) == "1.00e+300");
    CHECK(si(-2e21) == "-2.00e+21");
    CHECK(percent(0.78) == "78%");
    CHECK(percent(0.004) == "0.4%");
    CHECK(percent(1) == "100%");
    CHECK(percent(0.0002) == "<0.1%");
    CHECK(percent(0) == "0%");
    CHECK(ratio(41.23) == "41.2");
    CHECK(ratio(0.125) == "0.125");
    CHECK(ratio(2950) == "2.95k");
    CHECK(si_unit(6e12, "FLOP/s") == "6.00 TFLOP/s");
    CHECK(si_unit(512, "B") == "512 B");
}

TEST_CASE("fixed-width table", "[text]") {
    using namespace nnergy::text;
    const std::string t = render_table({{"name", align::left, 6}, {"n", align::right}},
                                       {{"a", "1"}, {"abcdefgh", "1000"}}, "  ");
    CHECK(t ==
          "  name       n\n"
          "  ------------\n"
          "  a          1\n"
          "  ab...h  1000\n");
    // Long names are cut in the middle: both ends, where layer names differ, stay.
    CHECK(nnergy::text::truncate("model.layers.11.mlp/MatMul", 16) == "model.l...MatMul");
    CHECK(nnergy::text::truncate("short", 16) == "short");
    CHECK(nnergy::text::truncate("\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9", 5) == "\u00e9...\u00e9");
    CHECK(display_width(nnergy::text::truncate("model.layers.11.mlp/MatMul", 16)) == 16);
}

TEST_CASE("text report of a full document", "[text]") {
    fake::install();
    const fake::value doc = fake::value::from(sample_report());
    const std::string out = nnergy::text::render(nnergy::sdk::value_view(doc.handle()));

    CHECK(contains(out, "nnergy 0.1.0 report\n"));
    CHECK(contains(out, "model     tiny  (models/tiny.json via nnergy.frontend.json_graph)\n"));
    CHECK(contains(out, "dims      batch=4\n"));
    CHECK(contains(out, "graph     5 nodes, 9 tensors, 2 kernels (nnergy.partitioner.fusion)\n"));
    CHECK(contains(out, "Run 1 of 1: h100-sxm5 (gpu), float16, batch=4\n"));

    // Row of conv1: 118M MACs, 236M FLOPs, 3.00M bytes (1e6 + 2e6 + 500), AI 78.7, 9% of the
    // chip, 30 us = 75% of the run's 40 us.
    const std::string conv = line_starting(out, "0  conv1");
    INFO(out);
    REQUIRE(!conv.empty());
    CHECK(contains(conv, "conv_bn_relu"));
    CHECK(contains(conv, "Conv+BatchNormalization+Relu"));
    CHECK(contains(conv, "118M"));
    CHECK(contains(conv, "236M"));
    CHECK(contains(conv, "3.00M"));
    CHECK(contains(conv, "78.7"));
    CHECK(contains(conv, "tensor_core"));
    CHECK(contains(conv, "9%"));
    CHECK(contains(conv, "memory:dram"));
    CHECK(contains(conv, "30.0 us"));
    CHECK(contains(conv, "75%"));
    // fc carries the uncounted marker and its footnote; 0.4% utilization keeps a decimal.
    const std::string fc = line_starting(out, "1  fc*");
    REQUIRE(!fc.empty());
    CHECK(contains(fc, "0.4%"));
    CHECK(contains(out, "* contains ops that could not be counted"));
    CHECK(contains(out, "DRAM traffic is modeled in float16 at x0.5"));

    // Totals: batch 4 in 40 us = 100k samples/s; 2.4e8 FLOP / 40 us = 6 TFLOP/s.
    CHECK(contains(out, "params 1.20M   MACs 118M   FLOPs 240M   latency 40.0 us\n"));
    CHECK(contains(out,
                   "throughput 100k samples/s (batch 4, 25.0k batches/s), 6.00 TFLOP/s achieved"));
    CHECK(contains(out, "bottlenecks: memory:dram 2 kernels (100% of latency)\n"));
    CHECK(contains(out, "#0 conv1  30.0 us (75%): Conv 3x3 on tensor_core: memory-bound\n"));
    CHECK(contains(out, "unknown ops (not counted): node 'n7' (Foo)\n"));
}

TEST_CASE("text report without estimator or architecture", "[text]") {
    fake::install();
    SECTION("no metrics") {
        ordered_json j = sample_report();
        for (auto& k : j["runs"][0]["kernels"]) {
            k.erase("metrics");
            k.erase("mapping");
        }
        j["runs"][0]["estimators"] = ordered_json::array();
        j["runs"][0]["totals"].erase("latency_s");
        const fake::value doc = fake::value::from(j);
        const std::string out = nnergy::text::render(nnergy::sdk::value_view(doc.handle()));
        INFO(out);
        const std::string conv = line_starting(out, "0  conv1");
        REQUIRE(!conv.empty());
        CHECK(contains(conv, "118M"));
        CHECK(conv.substr(conv.size() - 1) == "-");  // no latency, no share
        CHECK(contains(out, "latency not estimated: the pipeline has no [[estimator]]"));
    }
    SECTION("no runs") {
        ordered_json j = sample_report();
        j["runs"] = ordered_json::array();
        j["model"].erase("unknown_ops");
        const fake::value doc = fake::value::from(j);
        const std::string out = nnergy::text::render(nnergy::sdk::value_view(doc.handle()));
        CHECK(contains(out, "No architecture in the pipeline: counts only."));
        CHECK(contains(out, "params 1.20M   MACs 118M   FLOPs 240M"));
        CHECK(!contains(out, "unknown ops"));
    }
    SECTION("an empty document") {
        const fake::value doc = fake::value::from(ordered_json::object());
        const std::string out = nnergy::text::render(nnergy::sdk::value_view(doc.handle()));
        CHECK(contains(out, "report"));
    }
}

TEST_CASE("JSON report round-trips the document", "[json]") {
    fake::install();
    ordered_json j = sample_report();
    j["model"]["name"] = "quote \" backslash \\ newline \n tab \t bell \x07 unicode \xc3\xa9";
    j["numbers"] = {{"tenth", 0.1},       {"tiny", 1e-300},
                    {"third", 1.0 / 3.0}, {"big_int", 123456789012345678LL},
                    {"negative", -42},    {"whole_float", 1e6}};
    j["flags"] = {true, false, nullptr};
    const fake::value doc = fake::value::from(j);
    const std::string out = nnergy::json::render(nnergy::sdk::value_view(doc.handle()));

    CHECK(out.rfind("{\n  \"schema\": \"nnergy.report/1\",\n  \"tool\": {\n    \"name\"", 0) == 0);
    CHECK(out.back() == '\n');
    const ordered_json back = ordered_json::parse(out);
    CHECK(back == j);  // key order, strings and every double bit for bit
    CHECK(back["numbers"]["third"].get<double>() == 1.0 / 3.0);
    CHECK(back["numbers"]["big_int"].is_number_integer());
    CHECK(back["numbers"]["whole_float"].is_number_float());
    CHECK(contains(out, "\\u0007"));
}

TEST_CASE("JSON reporter hands a large report over in pieces that join to the whole", "[json]") {
    fake::install();
    ordered_json j = sample_report();
    // Several times the piece size, so that pieces end inside arrays and objects.
    ordered_json rows = ordered_json::array();
    for (int i = 0; i < 3000; ++i)
        rows.push_back({{"index", i}, {"name", "kernel number " + std::to_string(i)}, {"x", 0.5}});
    j["rows"] = rows;
    const fake::value doc = fake::value::from(j);
    const nnergy_create_args args = fake::create_args(fake::config{});
    nnergy::json::json_reporter rep{nnergy::sdk::context(args)};
    fake::output o;
    nnergy::sdk::output_writer w(reinterpret_cast<nnergy_output*>(&o));
    rep.report(nnergy::sdk::value_view(doc.handle()), w);
    CHECK(o.writes > 2);
    CHECK(o.data == nnergy::json::render(nnergy::sdk::value_view(doc.handle())));
    CHECK(ordered_json::parse(o.data) == j);
}

TEST_CASE("JSON report: non-finite numbers and bad UTF-8 still give valid JSON", "[json]") {
    fake::install();
    fake::value doc;
    doc.kind = NNERGY_VALUE_OBJECT;
    fake::value nan;
    nan.kind = NNERGY_VALUE_FLOAT;
    nan.f = std::nan("");
    fake::value inf = nan;
    inf.f = std::numeric_limits<double>::infinity();
    fake::value bad;
    bad.kind = NNERGY_VALUE_STRING;
    bad.s =
        "a\xff"
        "b";
    doc.add("nan", nan);
    doc.add("inf", inf);
    doc.add("bad", bad);
    const std::string out = nnergy::json::render(nnergy::sdk::value_view(doc.handle()), 2);
    const ordered_json back = ordered_json::parse(out);
    CHECK(back["nan"].is_null());
    CHECK(back["inf"].is_null());
    CHECK(back["bad"] ==
          "a\xef\xbf\xbd"
          "b");  // U+FFFD
}

TEST_CASE("reporters reject unknown configuration keys", "[text][json]") {
    fake::install();
    fake::config cfg;
    cfg.file("pipe.toml").boolean("kernels", false, 30).text("colour", "red", 31);
    const nnergy_create_args args = fake::create_args(cfg);
    CHECK_THROWS_WITH(nnergy::text::text_reporter{nnergy::sdk::context(args)},
                      "pipe.toml:31: unknown key 'colour' for nnergy.reporter.text (expected: "
                      "kernels, top)");
    CHECK_THROWS_WITH(nnergy::json::json_reporter{nnergy::sdk::context(args)},
                      "pipe.toml:30: unknown key 'kernels' for nnergy.reporter.json (expected: "
                      "indent)");
}

TEST_CASE("text reporter options: kernels = false prints totals only", "[text]") {
    fake::install();
    fake::config cfg;
    cfg.boolean("kernels", false).integer("top", 0);
    const nnergy_create_args args = fake::create_args(cfg);
    nnergy::text::text_reporter rep{nnergy::sdk::context(args)};
    const fake::value doc = fake::value::from(sample_report());
    fake::output o;
    nnergy::sdk::output_writer w(reinterpret_cast<nnergy_output*>(&o));
    rep.report(nnergy::sdk::value_view(doc.handle()), w);
    CHECK(!contains(o.data, "conv_bn_relu"));
    CHECK(!contains(o.data, "slowest kernels"));
    CHECK(contains(o.data, "latency 40.0 us"));
}

TEST_CASE("text reporter options: kernels = N shows the N slowest, in kernel order", "[text]") {
    fake::install();
    fake::config cfg;
    cfg.integer("kernels", 1);
    const nnergy_create_args args = fake::create_args(cfg);
    nnergy::text::text_reporter rep{nnergy::sdk::context(args)};
    const fake::value doc = fake::value::from(sample_report());
    fake::output o;
    nnergy::sdk::output_writer w(reinterpret_cast<nnergy_output*>(&o));
    rep.report(nnergy::sdk::value_view(doc.handle()), w);
    // The summary comes before the table.
    const size_t summary = o.data.find("latency 40.0 us");
    const size_t table = o.data.find("the 1 slowest of 2 kernels, in kernel order");
    REQUIRE(summary != std::string::npos);
    REQUIRE(table != std::string::npos);
    CHECK(summary < table);
    const std::string after = o.data.substr(table);
    CHECK(contains(after, "conv_bn_relu"));  // conv1, 30 us of 40 us
    CHECK(!contains(after, "  fc"));
    CHECK(o.data.find('\033') == std::string::npos);  // not a colour terminal
}

TEST_CASE("text reporter colours only where the host allows it", "[text]") {
    fake::install();
    fake::config cfg;
    const nnergy_create_args args = fake::create_args(cfg);
    nnergy::text::text_reporter rep{nnergy::sdk::context(args)};
    const fake::value doc = fake::value::from(sample_report());
    fake::output plain, colour;
    colour.color = true;
    nnergy::sdk::output_writer wp(reinterpret_cast<nnergy_output*>(&plain));
    nnergy::sdk::output_writer wc(reinterpret_cast<nnergy_output*>(&colour));
    rep.report(nnergy::sdk::value_view(doc.handle()), wp);
    rep.report(nnergy::sdk::value_view(doc.handle()), wc);
    CHECK(plain.data.find('\033') == std::string::npos);
    CHECK(contains(colour.data, "\033[1mRun 1 of 1"));
    // Tables stay aligned: colour never enters a cell, so the table is the same bytes.
    const auto table_of = [](const std::string& s) { return s.substr(s.find("#  kernel")); };
    CHECK(table_of(plain.data) == table_of(colour.data));
}

TEST_CASE("text reporter options: a bad kernels value names the key", "[text]") {
    fake::install();
    fake::config cfg;
    cfg.integer("kernels", -2);
    const nnergy_create_args args = fake::create_args(cfg);
    CHECK_THROWS_WITH(nnergy::text::text_reporter{nnergy::sdk::context(args)},
                      Catch::Contains("'kernels' must be a count of kernel rows"));
}

TEST_CASE("JSON strings: every special byte at every position of every length reads back",
          "[json]") {
    // The literal is scanned eight bytes at a time; a byte that needs escaping or checking must
    // be found wherever it stands in a word, and in the bytes after the last whole word.
    const std::vector<std::string> specials = {
        "\"", "\\", "\n", "\t", std::string(1, '\0'), "\x01", "\x1f", "\x7f", "\xc3\xa9", "~", " "};
    for (size_t length = 0; length <= 40; ++length)
        for (size_t at = 0; at <= length; ++at)
            for (const std::string& special : specials) {
                std::string s(length, 'a');
                for (size_t k = 0; k < length; ++k) s[k] = static_cast<char>('a' + k % 26);
                s.insert(at, special);
                std::string out;
                nnergy::json::detail::append_string(out, s);
                INFO("length " << length << ", at " << at << ", byte " << int(special[0]));
                const ordered_json back = ordered_json::parse(out);
                CHECK(back.get<std::string>() == s);
            }
    // A byte that is not UTF-8 becomes U+FFFD at any position too.
    for (size_t at = 0; at <= 20; ++at) {
        std::string s(20, 'x');
        s.insert(at, "\xff");
        std::string out;
        nnergy::json::detail::append_string(out, s);
        std::string want(20, 'x');
        want.insert(at, "\xef\xbf\xbd");
        CHECK(ordered_json::parse(out).get<std::string>() == want);
    }
}

namespace {
/// What the JSON reporter must write for `v`: std::to_chars's shortest text, with ".0" added
/// where that reads as an integer, and null where JSON has no number.
std::string shortest_double_text(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[40];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    std::string text(buf, r.ptr);
    if (text.find_first_of(".eE") == std::string::npos) text += ".0";
    return text;
}

std::vector<double> doubles_to_write() {
    std::vector<double> values{0.0,
                               -0.0,
                               1.0,
                               -1.0,
                               0.5,
                               1e-300,
                               1e300,
                               2.5e-7,
                               123.456,
                               1e22,
                               -1e22,
                               1e15,
                               1e16,
                               1e17,
                               9007199254740991.0,
                               9007199254740992.0,
                               9007199254740993.0,
                               -9007199254740991.0,
                               std::nan(""),
                               std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::denorm_min(),
                               std::numeric_limits<double>::max()};
    // Whole numbers on both sides of where the exponent form becomes the shorter one: runs of
    // trailing zeros, every power of ten and its neighbours, and spread-out digits.
    for (int64_t i = -1000; i <= 200000; ++i) values.push_back(static_cast<double>(i));
    for (double p = 1; p < 1e19; p *= 10)
        for (double k : {1.0, 2.0, 9.0, 10.0, 11.0, 12.0, 99.0, 100.0, 101.0, 12345.0})
            for (double sign : {1.0, -1.0}) {
                values.push_back(sign * p * k);
                values.push_back(sign * (p * k + 1));
                values.push_back(sign * (p * k - 1));
            }
    uint64_t state = 0x2545F4914F6CDD1Dull;
    for (int i = 0; i < 200000; ++i) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        const double whole = static_cast<double>(state >> (11 + state % 50));
        values.push_back(whole);
        values.push_back(whole / 7.0);
    }
    return values;
}
}  // namespace

TEST_CASE("JSON numbers: whole numbers written from their integer read as std::to_chars's text",
          "[json]") {
    for (double v : doubles_to_write()) {
        char buf[nnergy::json::detail::double_room];
        const std::string mine(buf, nnergy::json::detail::put_double(buf, v));
        INFO("value bits " << std::hexfloat << v);
        REQUIRE(mine == shortest_double_text(v));
    }
}

TEST_CASE("JSON numbers: a remembered text is the number's own, whatever shares its slot",
          "[json]") {
    // Many more values than slots, each written twice in a row and again after the others have
    // been written over its slot.
    const std::vector<double> values = doubles_to_write();
    const auto numbers = std::make_unique<nnergy::json::detail::double_texts>();
    for (int pass = 0; pass < 2; ++pass)
        for (size_t i = 0; i < values.size(); i += 37)
            for (int again = 0; again < 2; ++again) {
                char buf[nnergy::json::detail::double_room];
                const std::string mine(buf, numbers->put(buf, values[i]));
                REQUIRE(mine == shortest_double_text(values[i]));
            }
}
