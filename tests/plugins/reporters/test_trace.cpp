// SPDX-License-Identifier: Apache-2.0
// The trace reporter: the timeline layout (ordering, clamping, host dispatch, counters) and the
// JSON it writes.
#include <catch2/catch.hpp>
#include <string>

#include "fake_host.hpp"
#include "trace_reporter.hpp"

using nlohmann::ordered_json;
using namespace nnergy::trace;

namespace {

kernel_input kernel(double latency_s, std::optional<double> start_s = std::nullopt,
                    std::optional<double> dispatch_s = std::nullopt) {
    kernel_input k;
    k.latency_s = latency_s;
    k.start_s = start_s;
    k.host_dispatch_s = dispatch_s;
    return k;
}

void check_no_overlap(const std::vector<interval>& track) {
    for (size_t i = 1; i < track.size(); ++i)
        CHECK(track[i - 1].ts_us + track[i - 1].dur_us <= track[i].ts_us);
}

}  // namespace

TEST_CASE("trace: kernels without a runtime run back to back", "[trace]") {
    run_input run;
    run.kernels = {kernel(2e-6), kernel(0), kernel(3e-6)};
    const timeline t = lay_out(run);
    REQUIRE(t.device.size() == 3);
    CHECK(t.device[0].ts_us == 0);
    CHECK(t.device[1].ts_us == Approx(2));
    CHECK(t.device[1].dur_us == 0);
    CHECK(t.device[2].ts_us == Approx(2));
    CHECK(t.device[2].dur_us == Approx(3));
    CHECK(t.host.empty());
    CHECK(t.memory.empty());
    CHECK(t.power.empty());
    check_no_overlap(t.device);
}

TEST_CASE("trace: an overlapping start is clamped to the previous end", "[trace]") {
    // The second kernel starts before the first ends (a kernel stretched after the runtime laid
    // the timeline out): it is placed at the first one's end, and says how far it moved.
    run_input run;
    run.kernels = {kernel(5e-6, 1e-6), kernel(1e-6, 4e-6), kernel(1e-6, 10e-6)};
    const timeline t = lay_out(run);
    REQUIRE(t.device.size() == 3);
    CHECK(t.device[0].ts_us == Approx(1));
    CHECK(t.device[1].ts_us == Approx(6));
    CHECK(t.device[1].shifted_us == Approx(2));
    CHECK(t.device[2].ts_us == Approx(10));
    CHECK(t.device[2].shifted_us == 0);
    check_no_overlap(t.device);
    // Rounding-level differences never make an event start before the previous one ends.
    run.kernels = {kernel(0.1 + 0.2, 0.0), kernel(1, 0.3)};
    check_no_overlap(lay_out(run).device);
}

TEST_CASE("trace: eager host dispatch runs ahead of the device", "[trace]") {
    // per_call 1 us, dispatch 2 us per kernel; the device waits for the host, then for itself.
    run_input run;
    run.kernels = {kernel(1e-6, 3e-6, 2e-6), kernel(5e-6, 5e-6, 2e-6), kernel(1e-6, 10e-6, 2e-6)};
    run.host_time_s = 7e-6;
    const timeline t = lay_out(run);
    CHECK_FALSE(t.inline_host);
    REQUIRE(t.host.size() == 3);
    CHECK(t.host[0].ts_us == Approx(1));
    CHECK(t.host[1].ts_us == Approx(3));
    CHECK(t.host[2].ts_us == Approx(5));  // dispatched while kernel 1 still runs
    CHECK(t.host[2].dur_us == Approx(2));
    check_no_overlap(t.host);
}

TEST_CASE("trace: an inline runtime dispatches after the previous kernel", "[trace]") {
    // Each dispatch waits for the previous kernel; each kernel starts when its dispatch ends.
    run_input run;
    run.kernels = {kernel(3e-6, 3e-6, 2e-6), kernel(1e-6, 8e-6, 2e-6)};
    run.host_time_s = 5e-6;  // per_call 1 us + two dispatches
    const timeline t = lay_out(run);
    CHECK(t.inline_host);
    REQUIRE(t.host.size() == 2);
    CHECK(t.host[0].ts_us == Approx(1));
    CHECK(t.host[1].ts_us == Approx(6));
}

TEST_CASE("trace: memory and power counters", "[trace]") {
    run_input run;
    run.kernels = {kernel(2e-6, 0.0), kernel(2e-6, 5e-6)};
    run.kernels[0].memory_in_use_bytes = 100;
    run.kernels[1].memory_in_use_bytes = 300;
    run.kernels[0].energy_j = 2e-4;  // 100 W
    run.kernels[1].power_w = 50;
    run.kernels[0].idle_power_j = 2e-5;  // 10 W idle
    run.weight_bytes = 40;
    const timeline t = lay_out(run);
    REQUIRE(t.memory.size() == 3);
    CHECK(t.memory[0].value == 100);
    CHECK(t.memory[1].ts_us == Approx(5));
    CHECK(t.memory[2].ts_us == Approx(7));
    CHECK(t.memory[2].value == 40);  // back to the weights once the pass is over
    // 100 W, idle 10 W in the gap, 50 W, idle 10 W after the last kernel.
    REQUIRE(t.power.size() == 4);
    CHECK(t.power[0].value == Approx(100));
    CHECK(t.power[1].ts_us == Approx(2));
    CHECK(t.power[1].value == Approx(10));
    CHECK(t.power[2].value == 50);
    CHECK(t.power[3].ts_us == Approx(7));
    CHECK(t.power[3].value == Approx(10));
    // Back to back: no idle sample between the kernels.
    run.kernels[1].start_s = 2e-6;
    CHECK(lay_out(run).power.size() == 3);
}

TEST_CASE("trace: the JSON document", "[trace]") {
    fake::install();
    const ordered_json report = ordered_json::parse(R"({
      "schema": "nnergy.report/1", "tool": {"name": "nnergy", "version": "0.1.0"},
      "model": {"name": "tiny", "dims": {"batch": 2}},
      "runs": [{
        "architecture": {"hardware": "h100-sxm5", "class": "gpu", "precision": "float16"},
        "totals": {"latency_s": 3e-6, "weight_bytes": 10, "host_time_s": 2e-6},
        "kernels": [
          {"index": 0, "name": "a\"b", "pattern": "p", "ops": ["Conv", "Relu"], "flops": 100,
           "input_bytes": 1, "output_bytes": 2, "weight_bytes": 3,
           "metrics": {"latency_s": 1e-6, "start_s": 1e-6, "host_dispatch_s": 1e-6,
                       "bottleneck": "overhead", "energy_j": 1e-5, "memory_in_use_bytes": 20}},
          {"index": 1, "name": "c", "pattern": "", "ops": ["Add"], "flops": 5,
           "metrics": {"latency_s": 1e-6, "start_s": 2e-6, "host_dispatch_s": 1e-6,
                       "bottleneck": "memory:dram", "energy_j": 2e-6, "memory_in_use_bytes": 30}}
        ]}]})");
    const fake::value doc = fake::value::from(report);
    const std::string text = render(nnergy::sdk::value_view(doc.handle()));
    const ordered_json trace = ordered_json::parse(text);
    CHECK(trace["displayTimeUnit"] == "ns");
    const ordered_json& events = trace["traceEvents"];
    std::vector<ordered_json> device, host, memory, power;
    std::string process;
    for (const auto& e : events) {
        REQUIRE(e.contains("ph"));
        REQUIRE(e.contains("pid"));
        REQUIRE(e.contains("tid"));
        if (e["ph"] == "M" && e["name"] == "process_name") process = e["args"]["name"];
        if (e["ph"] == "X" && e["tid"] == device_tid) device.push_back(e);
        if (e["ph"] == "X" && e["tid"] == host_tid) host.push_back(e);
        if (e["ph"] == "C" && e["name"] == "memory") memory.push_back(e);
        if (e["ph"] == "C" && e["name"] == "power") power.push_back(e);
    }
    CHECK(process == "run 1: h100-sxm5 (gpu), float16, batch=2");
    REQUIRE(device.size() == 2);
    CHECK(device[0]["name"] == "a\"b");
    CHECK(device[0]["ts"].get<double>() == Approx(1));
    CHECK(device[0]["dur"].get<double>() == Approx(1));
    const ordered_json& args = device[0]["args"];
    CHECK(args["ops"] == "Conv+Relu");
    CHECK(args["flops"].get<double>() == 100);
    CHECK(args["bytes"].get<double>() == 6);
    CHECK(args["bottleneck"] == "overhead");
    CHECK(args["energy_j"].get<double>() == 1e-5);
    CHECK(device[1]["args"]["bytes"].is_null());
    // Host: the first dispatch after per_call (2 us - 2 x 1 us = 0).
    REQUIRE(host.size() == 2);
    CHECK(host[0]["ts"].get<double>() == 0);
    CHECK(host[1]["ts"].get<double>() == Approx(1));
    REQUIRE(memory.size() == 3);
    CHECK(memory.back()["args"]["in_use_bytes"].get<double>() == 10);
    REQUIRE(power.size() == 3);
    CHECK(power[0]["args"]["W"].get<double>() == Approx(10));
    CHECK(power[1]["args"]["W"].get<double>() == Approx(2));
}

TEST_CASE("trace: no configuration keys", "[trace]") {
    fake::install();
    fake::config c;
    c.integer("indent", 2, 3);
    const nnergy_create_args args = fake::create_args(c);
    CHECK_THROWS_WITH(trace_reporter{nnergy::sdk::context(args)},
                      Catch::Contains("toy.toml:3") && Catch::Contains("unknown key 'indent'"));
}
