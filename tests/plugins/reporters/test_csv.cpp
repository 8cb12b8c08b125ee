// SPDX-License-Identifier: Apache-2.0
// The CSV reporter: RFC 4180 quoting, exact numbers, and the kernel and totals tables over a
// fake host's document.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "csv_reporter.hpp"
#include "fake_host.hpp"

using nlohmann::ordered_json;
using namespace nnergy::csv;

TEST_CASE("csv quoting follows RFC 4180", "[csv]") {
    CHECK(field("plain") == "plain");
    CHECK(field("") == "");
    CHECK(field("a,b") == "\"a,b\"");
    CHECK(field("say \"hi\"") == "\"say \"\"hi\"\"\"");
    CHECK(field("\"") == "\"\"\"\"");
    CHECK(field("two\nlines") == "\"two\nlines\"");
    CHECK(field("cr\rhere") == "\"cr\rhere\"");
    CHECK(field(" padded") == "\" padded\"");
    CHECK(field("batch=1 seq=8") == "batch=1 seq=8");  // inner spaces need no quotes
    CHECK(field("Conv+Relu") == "Conv+Relu");
    CHECK(record({"a", "b,c", ""}) == "a,\"b,c\",\n");
    CHECK(record({"x"}, "\r\n") == "x\r\n");
}

TEST_CASE("csv numbers read back as the same double", "[csv]") {
    CHECK(number(1e-06) == "1e-06");
    CHECK(number(0.25) == "0.25");
    CHECK(number(5740544) == "5740544");
    CHECK(number(std::numeric_limits<double>::quiet_NaN()).empty());
    CHECK(number(std::numeric_limits<double>::infinity()).empty());
    CHECK(integer(-3) == "-3");
    for (double v : {0.1 + 0.2, 2.303e-05, 1.0 / 3.0, 6.02214076e23, 4.9e-324}) {
        const std::string s = number(v);
        CHECK(std::strtod(s.c_str(), nullptr) == v);  // stod refuses subnormals
    }
}

namespace {

ordered_json report() {
    return ordered_json::parse(R"({
      "model": {"name": "m", "dims": {"batch": 1}},
      "runs": [
        {"architecture": {"hardware": "gpu, big", "precision": "float32"},
         "dims": {"batch": 1, "seq": 8},
         "totals": {"latency_s": 3e-6, "runtime": "eager", "advice": "line one\nline \"two\""},
         "kernels": [
           {"index": 0, "name": "k,0", "pattern": "p", "ops": ["Conv", "Relu"], "macs": 5,
            "flops": 10.5, "input_bytes": 1, "output_bytes": 2, "weight_bytes": 3,
            "arithmetic_intensity": 1.75,
            "metrics": {"latency_s": 1e-6, "bottleneck": "compute", "op.k,0.energy_j": 1.0,
                        "flops": 99}},
           {"index": 1, "name": "k\"1", "pattern": "", "ops": ["Add"],
            "metrics": {"latency_s": 2e-6, "energy_j": 0.5}}]},
        {"architecture": {"hardware": "cpu", "precision": "float16"},
         "totals": {"energy_j": 1.5, "latency_s": 4e-6},
         "kernels": [
           {"index": 0, "name": "k0", "pattern": "p", "ops": [],
            "metrics": {"memory_in_use_bytes": 4096, "latency_s": 4e-6}}]}]})");
}

}  // namespace

TEST_CASE("csv kernel table: one row per kernel per run, a stable column set", "[csv]") {
    fake::install();
    const fake::value doc = fake::value::from(report());
    const std::string csv = render_kernels(nnergy::sdk::value_view(doc.handle()));
    // Metric columns: the union over runs in first-seen order; per-op keys left out; a metric
    // that repeats a kernel field's name is prefixed.
    CHECK(csv ==
          "run,hardware,precision,dims,kernel,name,pattern,ops,macs,flops,input_bytes,"
          "output_bytes,weight_bytes,arithmetic_intensity,latency_s,bottleneck,metrics.flops,"
          "energy_j,memory_in_use_bytes\n"
          "1,\"gpu, big\",float32,batch=1 seq=8,0,\"k,0\",p,Conv+Relu,5,10.5,1,2,3,1.75,1e-06,"
          "compute,99,,\n"
          "1,\"gpu, big\",float32,batch=1 seq=8,1,\"k\"\"1\",,Add,,,,,,,2e-06,,,0.5,\n"
          "2,cpu,float16,batch=1,0,k0,p,,,,,,,,4e-06,,,,4096\n");

    render_options opt;
    opt.op_metrics = true;
    opt.eol = "\r\n";
    const std::string with_ops = render_kernels(nnergy::sdk::value_view(doc.handle()), opt);
    CHECK(with_ops.find(",op.k,0.energy_j,") == std::string::npos);  // quoted: it has a comma
    CHECK(with_ops.find(",\"op.k,0.energy_j\",") != std::string::npos);
    CHECK(with_ops.find("memory_in_use_bytes\r\n1,") != std::string::npos);
}

TEST_CASE("csv totals table: one row per run", "[csv]") {
    fake::install();
    const fake::value doc = fake::value::from(report());
    const std::string csv = render_totals(nnergy::sdk::value_view(doc.handle()));
    CHECK(csv ==
          "run,hardware,precision,dims,latency_s,runtime,advice,energy_j\n"
          "1,\"gpu, big\",float32,batch=1 seq=8,3e-06,eager,\"line one\nline \"\"two\"\"\",\n"
          "2,cpu,float16,batch=1,4e-06,,,1.5\n");
}

TEST_CASE("csv options", "[csv]") {
    fake::config defaults;
    const render_options d = parse_options(defaults.view());
    CHECK(d.totals_suffix == "-totals.csv");
    CHECK(d.eol == "\n");
    CHECK_FALSE(d.op_metrics);

    fake::config c;
    c.text("totals", "", 3).text("line_ending", "crlf", 4).boolean("op_metrics", true, 5);
    const render_options o = parse_options(c.view());
    CHECK(o.totals_suffix.empty());
    CHECK(o.eol == "\r\n");
    CHECK(o.op_metrics);

    fake::config slash;
    slash.text("totals", "../x.csv", 6);
    CHECK_THROWS_WITH(parse_options(slash.view()),
                      Catch::Contains("toy.toml:6") && Catch::Contains("'totals'"));
    fake::config eol;
    eol.text("line_ending", "cr", 7);
    CHECK_THROWS_WITH(parse_options(eol.view()),
                      Catch::Contains("toy.toml:7") && Catch::Contains("\"lf\" or \"crlf\""));
    fake::config unknown;
    unknown.integer("kernels", 3, 8);
    CHECK_THROWS_WITH(parse_options(unknown.view()), Catch::Contains("unknown key 'kernels'"));
}
