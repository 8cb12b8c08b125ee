// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/sweep.hpp>
#include <set>
#include <sstream>

namespace {

const std::string root = NNERGY_TEST_SOURCE_DIR;

/// A pipeline file in a fresh temporary directory, removed with the object.
struct temp_pipeline {
    std::filesystem::path dir;
    std::filesystem::path file;
    explicit temp_pipeline(const std::string& text) {
        static int counter = 0;
        dir = std::filesystem::temp_directory_path() /
              ("nnergy-sweep-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::create_directories(dir);
        file = dir / "p.toml";
        std::ofstream(file) << text;
    }
    ~temp_pipeline() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

std::string model(const std::string& name) {
    return "\"" + root + "/configs/models/" + name + "\"";
}

std::string parse_error(const std::string& text) {
    temp_pipeline p(text);
    try {
        nnergy::parse_pipeline(p.file);
    } catch (const nnergy::error& e) {
        return e.what();
    }
    return "(no error)";
}

std::string class_of(const std::string& name) {
    const auto hw = nnergy::read_hardware_file(root + "/configs/hardware/" + name + ".toml");
    const nnergy::config_value* c = nnergy::find_value(hw, "class");
    return c ? c->string_value : "";
}

std::string read_text(const std::filesystem::path& f) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("a [sweep] table crosses its axes; a precision a device lacks is skipped", "[sweep]") {
    temp_pipeline p("[sweep]\nmodels = [" + model("cnn_block.json") + ", " +
                    model("transformer_encoder.json") +
                    "]\n"
                    "hardware = [\"h100-sxm5\", \"tpu-v4\", \"h100-sxm5\"]\n"
                    "batch = [1, 8]\n"
                    "dims = { seq = [128, 256] }\n"
                    "precision = [\"float32\", \"bfloat16\"]\n"
                    "runtime = [\"none\", \"cuda-graph\"]\n");
    const nnergy::pipeline_spec spec = nnergy::parse_pipeline(p.file);
    const nnergy::sweep_axes axes = nnergy::sweep_axes_of(spec);
    REQUIRE(axes.models.size() == 2);
    REQUIRE(axes.devices.size() == 2);  // h100-sxm5 named twice runs once
    CHECK(axes.devices[0].name == "h100-sxm5");
    CHECK(axes.devices[0].hw_class == "gpu");
    CHECK(axes.devices[0].plugin == "auto");
    CHECK(axes.devices[1].name == "tpu-v4");
    CHECK(axes.dim_names == std::vector<std::string>{"batch", "seq"});
    CHECK(axes.bindings.size() == 4);
    REQUIRE(axes.runtimes.size() == 2);
    CHECK(axes.runtimes[0].name == "none");
    CHECK(axes.runtimes[0].file.empty());
    CHECK(axes.runtimes[1].name == "cuda-graph");
    CHECK_FALSE(axes.runtimes[1].values.empty());

    const nnergy::sweep_expansion ex = nnergy::expand_sweep(axes);
    // Per (model, runtime, binding): h100 at float32 and bfloat16, the TPU at bfloat16 only.
    const size_t groups = 2 * 2 * 4;
    CHECK(ex.configs.size() == groups * 3);
    CHECK(ex.skipped == groups * 1);
    std::set<std::string> keys;
    for (const auto& c : ex.configs) keys.insert(nnergy::sweep_key(axes, c));
    CHECK(keys.size() == ex.configs.size());
    for (const auto& c : ex.configs)
        CHECK_FALSE((c.device == 1 && c.precision == NNERGY_DTYPE_FLOAT32));
    // Consecutive configurations share a bound model: model, runtime, binding vary slowest.
    CHECK_THAT(nnergy::sweep_key(axes, ex.configs[0]),
               Catch::EndsWith("/configs/models/cnn_block.json|h100-sxm5|float32|batch=1,seq=128|"
                               "none"));
    CHECK(ex.configs[1].device == 0);
    CHECK(ex.configs[1].precision == NNERGY_DTYPE_BFLOAT16);
    CHECK(ex.configs[2].device == 1);
    CHECK(ex.configs[3].binding == 1);
    CHECK(ex.configs.back().model == 1);
    CHECK(ex.configs.back().runtime == 1);
}

TEST_CASE("sweep hardware: the whole catalog, a class, and every precision", "[sweep]") {
    temp_pipeline p("[sweep]\nmodels = [" + model("cnn_block.json") +
                    "]\nhardware = [\"class:gpu\"]\nprecision = \"all\"\n");
    const nnergy::sweep_axes axes = nnergy::sweep_axes_of(nnergy::parse_pipeline(p.file));
    size_t gpus = 0;
    for (const std::string& name : nnergy::hardware_catalog()) gpus += class_of(name) == "gpu";
    REQUIRE(gpus > 1);
    CHECK(axes.devices.size() == gpus);
    size_t offered = 0;
    for (const auto& d : axes.devices) {
        CHECK(d.hw_class == "gpu");
        CHECK(d.precisions == nnergy::hardware_precisions(d.hardware));
        offered += d.precisions.size();
    }
    const nnergy::sweep_expansion ex = nnergy::expand_sweep(axes);
    CHECK(ex.configs.size() == offered);
    CHECK(ex.skipped == 0);
    CHECK(axes.dim_names.empty());
    CHECK(axes.bindings.size() == 1);

    temp_pipeline all("[sweep]\nmodels = [" + model("cnn_block.json") +
                      "]\nhardware = [\"*\", \"h100-sxm5\"]\nbatch = 1\n");
    const nnergy::sweep_axes every = nnergy::sweep_axes_of(nnergy::parse_pipeline(all.file));
    CHECK(every.devices.size() == nnergy::hardware_catalog().size());
    for (const auto& d : every.devices) CHECK(d.precisions == std::vector<std::string>{"float32"});
}

TEST_CASE("an ordinary pipeline's single values and arrays are the axes", "[sweep]") {
    const nnergy::pipeline_spec spec =
        nnergy::parse_pipeline(root + "/tests/data/pipelines/sweep.toml");
    CHECK_FALSE(spec.sweep);
    const nnergy::sweep_axes axes = nnergy::sweep_axes_of(spec);
    REQUIRE(axes.models.size() == 1);
    CHECK(axes.model_names[0] == "../../../configs/models/hybrid_cnn_transformer.json");
    REQUIRE(axes.devices.size() == 1);
    CHECK(axes.devices[0].plugin == "nnergy.architecture.reference");
    CHECK(axes.devices[0].precisions == std::vector<std::string>{"float32", "float16"});
    CHECK(axes.runtimes.size() == 1);
    CHECK(axes.bindings.size() == 2);
    const nnergy::sweep_expansion ex = nnergy::expand_sweep(axes);
    CHECK(ex.configs.size() == 4);

    // [sweep] keys replace the pipeline's own values of the same axis and keep the others.
    temp_pipeline p("[model]\npath = " + model("transformer_encoder.json") +
                    "\ndims = { batch = 4, seq = [64, 128] }\n"
                    "[[architecture]]\nplugin = \"nnergy.architecture.gpu\"\nhardware = \"l4\"\n"
                    "[[architecture]]\nplugin = \"nnergy.architecture.reference\"\n"
                    "hardware = \"l4\"\nprecision = \"int8\"\n"
                    "[sweep]\nbatch = [1, 2, 3]\nprecision = [\"float16\", \"int4\"]\n");
    const nnergy::pipeline_spec mixed = nnergy::parse_pipeline(p.file);
    REQUIRE(mixed.sweep);
    CHECK(mixed.partitioner.plugin.empty());  // the sweep's default
    CHECK(mixed.estimators.empty());
    const nnergy::sweep_axes a = nnergy::sweep_axes_of(mixed);
    REQUIRE(a.devices.size() == 2);
    CHECK(a.devices[0].name == "l4");
    CHECK(a.devices[1].name == "l4#2");
    CHECK(a.devices[1].precisions == std::vector<std::string>{"float16", "int4"});
    CHECK(a.bindings.size() == 6);
    const nnergy::sweep_expansion e = nnergy::expand_sweep(a);
    CHECK(e.configs.size() == 6 * 2);  // the L4 has no int4
    CHECK(e.skipped == 6 * 2);
}

TEST_CASE("bad [sweep] tables name the file, line and key", "[sweep]") {
    const std::string m = "models = [" + model("cnn_block.json") + "]\n";
    CHECK_THAT(parse_error("[sweep]\n" + m + "hardware = [\"h100-sxm5\"]\nbatchez = [1]\n"),
               Catch::Contains("p.toml:4") && Catch::Contains("unknown key 'batchez' in [sweep]"));
    CHECK_THAT(parse_error("[sweep]\n" + m + "hardware = [\"class:abacus\"]\n"),
               Catch::Contains("p.toml:3") &&
                   Catch::Contains("no catalog entry of class 'abacus'") && Catch::Contains("gpu"));
    CHECK_THAT(parse_error("[sweep]\n" + m + "hardware = [\"h100-sxm9\"]\n"),
               Catch::Contains("p.toml:3") && Catch::Contains("unknown hardware 'h100-sxm9'"));
    CHECK_THAT(parse_error("[sweep]\n" + m + "hardware = \"l4\"\nprecision = [\"float13\"]\n"),
               Catch::Contains("p.toml:4") && Catch::Contains("unknown precision 'float13'"));
    CHECK_THAT(
        parse_error("[sweep]\n" + m + "hardware = \"l4\"\nbatch = [1, 0]\n"),
        Catch::Contains("p.toml:4") && Catch::Contains("'sweep.batch' must be a positive integer"));
    CHECK_THAT(parse_error("[sweep]\n" + m + "hardware = \"l4\"\nbatch = []\n"),
               Catch::Contains("p.toml:4") && Catch::Contains("sweeps over no values"));
    CHECK_THAT(
        parse_error("[sweep]\n" + m + "hardware = \"l4\"\nbatch = 1\ndims = { batch = 2 }\n"),
        Catch::Contains("p.toml:5") && Catch::Contains("'sweep.dims.batch' repeats"));
    CHECK_THAT(parse_error("[sweep]\n" + m + "hardware = \"l4\"\noutput = \"rows.xlsx\"\n"),
               Catch::Contains("p.toml:4") && Catch::Contains(".csv or .jsonl"));
    CHECK_THAT(parse_error("[sweep]\n" + m + "hardware = \"l4\"\nruntime = [\"warp-drive\"]\n"),
               Catch::Contains("p.toml:4") && Catch::Contains("unknown runtime profile"));
    CHECK_THAT(parse_error("[sweep]\nmodels = [\"nope.json\"]\nhardware = \"l4\"\n"),
               Catch::Contains("p.toml:2") && Catch::Contains("does not exist"));
    CHECK_THAT(parse_error("[sweep]\n" + m + "hardware = [3]\n"),
               Catch::Contains("p.toml:3") && Catch::Contains("array of strings"));
    // Without the sweep naming them, [model] and [[architecture]] are required as ever.
    CHECK_THAT(parse_error("[sweep]\nbatch = [1]\n"),
               Catch::Contains("missing required table [model]"));
    CHECK_THAT(parse_error("[sweep]\n" + m), Catch::Contains("[[architecture]]"));
}

TEST_CASE("the Pareto front keeps the points nothing beats on both", "[sweep]") {
    using nnergy::pareto_front;
    CHECK(pareto_front({}).empty());
    CHECK(pareto_front({{1, 1}}) == std::vector<size_t>{0});
    // (latency, energy): 2 and 4 are dominated by 0; 3 ties 1 on latency at more energy.
    const std::vector<std::pair<double, double>> points = {{1.0, 5.0}, {2.0, 3.0}, {3.0, 6.0},
                                                           {2.0, 4.0}, {1.5, 5.0}, {4.0, 1.0}};
    CHECK(pareto_front(points) == std::vector<size_t>{0, 1, 5});
    // Equal points: the first one only.
    CHECK(pareto_front({{1, 1}, {1, 1}, {0.5, 2}}) == std::vector<size_t>{2, 0});
}

namespace {

/// Axes built by hand: one model, two devices, batch and seq, no files read.
nnergy::sweep_axes hand_axes() {
    nnergy::sweep_axes a;
    a.models = {"/m/net.onnx"};
    a.model_names = {"models/net.onnx"};
    a.dim_names = {"batch", "seq"};
    a.bindings = {{{"batch", 1}, {"seq", 128}}, {{"batch", 8}, {"seq", 128}}};
    a.runtimes = {{"none", {}, {}}};
    nnergy::sweep_device d;
    d.name = "gpu-a";
    d.hw_class = "gpu";
    a.devices.push_back(d);
    d.name = "odd, \"quoted\" name";
    d.hw_class = "cpu";
    a.devices.push_back(d);
    return a;
}

nnergy::sweep_result ok_result() {
    nnergy::sweep_result r;
    r.totals.latency_s = 0.00125;
    r.totals.energy_j = 0.5;
    r.totals.average_power_w = 400;
    r.totals.edp_j_s = 0.000625;
    r.totals.peak_memory_bytes = 5740544;
    r.totals.inferences_per_j = 2;
    r.totals.fits = "device memory";
    r.totals.flops = 8.2e9;
    r.totals.macs = 4.1e9;
    r.totals.params = 25557032;
    return r;
}

}  // namespace

TEST_CASE("CSV rows: a header with units, one complete line per configuration", "[sweep]") {
    const nnergy::sweep_axes a = hand_axes();
    CHECK(nnergy::sweep_header(nnergy::sweep_format::csv, a) ==
          "config,model,hardware,class,precision,batch,seq,runtime,status,latency_s,energy_j,"
          "average_power_w,edp_j_s,peak_memory_bytes,inferences_per_j,fits,flops,macs,params,"
          "error\n");
    CHECK(nnergy::sweep_header(nnergy::sweep_format::jsonl, a).empty());
    const nnergy::sweep_config c{0, 0, 1, 0, NNERGY_DTYPE_FLOAT16};
    CHECK(nnergy::sweep_row(nnergy::sweep_format::csv, a, 7, c, ok_result()) ==
          "7,models/net.onnx,gpu-a,gpu,float16,8,128,none,ok,0.00125,0.5,400,0.000625,5740544,2,"
          "device memory,8200000000,4100000000,25557032,\n");
    nnergy::sweep_result bad;
    bad.ok = false;
    bad.error = "mapping kernel 'x', \"y\":\nno such unit";
    const nnergy::sweep_config c2{0, 0, 0, 1, NNERGY_DTYPE_INT8};
    CHECK(nnergy::sweep_row(nnergy::sweep_format::csv, a, 3, c2, bad) ==
          "3,models/net.onnx,\"odd, \"\"quoted\"\" name\",cpu,int8,1,128,none,error,,,,,,,,,,,"
          "\"mapping kernel 'x', \"\"y\"\": no such unit\"\n");
}

TEST_CASE("JSON Lines rows: one object per line, null where there is no figure", "[sweep]") {
    const nnergy::sweep_axes a = hand_axes();
    const nnergy::sweep_config c{0, 0, 0, 1, NNERGY_DTYPE_BFLOAT16};
    const std::string line = nnergy::sweep_row(nnergy::sweep_format::jsonl, a, 11, c, ok_result());
    REQUIRE(line.back() == '\n');
    CHECK(line.find('\n') == line.size() - 1);
    const auto x = nlohmann::json::parse(line);
    CHECK(x["config"] == 11);
    CHECK(x["hardware"] == "odd, \"quoted\" name");
    CHECK(x["precision"] == "bfloat16");
    CHECK(x["batch"] == 1);
    CHECK(x["seq"] == 128);
    CHECK(x["status"] == "ok");
    CHECK(x["latency_s"].get<double>() == Approx(0.00125));
    CHECK(x["params"] == 25557032);
    CHECK(x["fits"] == "device memory");
    CHECK(x["error"].is_null());
    nnergy::sweep_result bad;
    bad.ok = false;
    bad.error = "line one\nline two";
    const auto y =
        nlohmann::json::parse(nnergy::sweep_row(nnergy::sweep_format::jsonl, a, 0, c, bad));
    CHECK(y["status"] == "error");
    CHECK(y["latency_s"].is_null());
    CHECK(y["error"] == "line one line two");
}

TEST_CASE("resume reads the rows back by key and drops a line cut short", "[sweep]") {
    const nnergy::sweep_axes a = hand_axes();
    temp_pipeline dir("");
    for (auto format : {nnergy::sweep_format::csv, nnergy::sweep_format::jsonl}) {
        const auto file = dir.dir / (format == nnergy::sweep_format::csv ? "o.csv" : "o.jsonl");
        const nnergy::sweep_config c1{0, 0, 1, 1, NNERGY_DTYPE_FLOAT32};
        const nnergy::sweep_config c2{0, 0, 0, 0, NNERGY_DTYPE_INT8};
        nnergy::sweep_result bad;
        bad.ok = false;
        bad.error = "it failed, \"badly\"";
        std::string text = nnergy::sweep_header(format, a) +
                           nnergy::sweep_row(format, a, 5, c1, ok_result()) +
                           nnergy::sweep_row(format, a, 2, c2, bad);
        const size_t complete = text.size();
        text += nnergy::sweep_row(format, a, 9, c1, ok_result()).substr(0, 20);  // no newline
        std::ofstream(file, std::ios::binary) << text;

        const nnergy::sweep_output_read r = nnergy::read_sweep_output(file, format, a);
        CHECK(r.complete_bytes == complete);
        CHECK(r.has_header == (format == nnergy::sweep_format::csv));
        REQUIRE(r.rows.size() == 2);
        CHECK(r.rows[0].key == nnergy::sweep_key(a, c1));
        CHECK(r.rows[0].ok);
        CHECK(r.rows[0].latency_s == Approx(0.00125));
        CHECK(r.rows[0].inferences_per_j == Approx(2));
        CHECK(r.rows[1].key == nnergy::sweep_key(a, c2));
        CHECK_FALSE(r.rows[1].ok);
        CHECK_FALSE(r.rows[1].latency_s);
    }
    // A file from another sweep is refused, naming the line.
    const auto other = dir.dir / "other.csv";
    std::ofstream(other) << "config,model,hardware\n1,a,b\n";
    CHECK_THROWS_WITH(
        nnergy::read_sweep_output(other, nnergy::sweep_format::csv, a),
        Catch::Contains("other.csv:1") && Catch::Contains("header is not this sweep's"));
    const auto broken = dir.dir / "broken.csv";
    std::ofstream(broken) << nnergy::sweep_header(nnergy::sweep_format::csv, a) << "1,2,3\n";
    CHECK_THROWS_WITH(nnergy::read_sweep_output(broken, nnergy::sweep_format::csv, a),
                      Catch::Contains("broken.csv:2") && Catch::Contains("not a row"));
    const auto junk = dir.dir / "junk.jsonl";
    std::ofstream(junk) << "{\"model\": 1}\n";
    CHECK_THROWS_WITH(nnergy::read_sweep_output(junk, nnergy::sweep_format::jsonl, a),
                      Catch::Contains("junk.jsonl:1"));
    // An empty file is a fresh start.
    const auto empty = dir.dir / "empty.csv";
    std::ofstream{empty};
    const auto e = nnergy::read_sweep_output(empty, nnergy::sweep_format::csv, a);
    CHECK(e.rows.empty());
    CHECK_FALSE(e.has_header);
    CHECK(read_text(empty).empty());
}
