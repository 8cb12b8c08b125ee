// SPDX-License-Identifier: Apache-2.0
// The Markdown and HTML reporters given a validation document (nnergy.validation/1, as
// `nnergy validate` hands it): the SDK's reading of it into tables, and both pages.
#include <catch2/catch.hpp>
#include <nnergy/reporting/validation.hpp>
#include <string>

#include "fake_host.hpp"
#include "html_reporter.hpp"
#include "markdown_reporter.hpp"

using nlohmann::ordered_json;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

size_t occurrences(const std::string& haystack, const std::string& needle) {
    size_t n = 0;
    for (size_t at = haystack.find(needle); at != std::string::npos;
         at = haystack.find(needle, at + needle.size()))
        ++n;
    return n;
}

// Two configurations of one mode, latency only: resnet50 predicted 10% slow, the other 20%
// fast; a threshold missed; a skipped model; a leave-one-model-out refit of two constants.
ordered_json validation(bool with_energy) {
    ordered_json doc = ordered_json::parse(R"({
      "schema": "nnergy.validation/1", "hardware": "h100-sxm5", "hardware_file": "h.toml",
      "class": "gpu", "measurements": ["runs.json"],
      "configurations": [
        {"model": "resnet50", "precision": "fp16", "batch": 8, "mode": "eager",
         "device": "h100", "runtime": "pytorch-eager", "sources": ["runs.json run 0"],
         "latency_s": {"measured": 0.001, "predicted": 0.0011, "error_pct": 10.0},
         "energy_j": {"measured": null, "predicted": 0.2, "error_pct": null}},
        {"model": "vit_<b>", "precision": "fp32", "batch": 1, "mode": "eager",
         "device": "h100", "runtime": "pytorch-eager", "sources": ["runs.json run 1"],
         "latency_s": {"measured": 0.002, "predicted": 0.0016, "error_pct": -20.0},
         "energy_j": {"measured": null, "predicted": 0.3, "error_pct": null}}],
      "modes": [{"mode": "eager", "runtime": "pytorch-eager",
                 "latency": {"configurations": 2, "mape_pct": 15.0,
                             "worst": {"configuration": 1, "error_pct": -20.0}},
                 "energy": null}],
      "skipped": [{"model": "bert", "mode": "eager", "configurations": 3,
                   "reason": "no bert.onnx"}],
      "other_runs": 4,
      "thresholds": [{"mode": "eager", "metric": "latency", "max_mape_pct": 12,
                      "mape_pct": 15.0, "passed": false}],
      "leave_out": {"unit": "model", "groups": ["resnet50", "vit_<b>"],
                    "parameters": ["gpu.a", "gpu.b"],
                    "modes": [{"metric": "latency", "mode": "eager", "configurations": 2,
                               "entry_mape_pct": 15.0, "in_sample_mape_pct": 10.0,
                               "held_out_mape_pct": 14.0, "ratio": 1.4}],
                    "per_group": [{"group": "resnet50", "mode": "eager", "configurations": 1,
                                   "latency_mape_pct": 12.0}],
                    "held_out": []}
    })");
    if (with_energy) {
        doc["configurations"][0]["energy_j"] = {
            {"measured", 0.25}, {"predicted", 0.2}, {"error_pct", -20.0}};
        doc["modes"][0]["energy"] = {{"configurations", 1},
                                     {"mape_pct", 20.0},
                                     {"worst", {{"configuration", 0}, {"error_pct", -20.0}}}};
    }
    return doc;
}

}  // namespace

TEST_CASE("a validation document reads into the tables a page shows", "[validation]") {
    fake::install();
    const fake::value doc = fake::value::from(validation(false));
    const nnergy::sdk::value_view view(doc.handle());
    REQUIRE(nnergy::reporting::is_validation(view));
    const nnergy::reporting::validation_page p = nnergy::reporting::read_validation(view);
    CHECK(p.hardware == "h100-sxm5");
    CHECK(p.configurations == 2);
    REQUIRE(p.summary.rows.size() == 1);  // latency only: the mode has no energy
    CHECK(p.summary.rows[0] == std::vector<std::string>{"latency", "eager", "pytorch-eager", "2",
                                                        "15.0%", "-20.0%", "vit_<b> fp32 batch 1"});
    // No configuration has a measured energy: the energy columns are left out.
    CHECK(p.configurations_table.head.size() == 8);
    CHECK(p.configurations_table.rows[0] == std::vector<std::string>{"resnet50", "fp16", "8",
                                                                     "eager", "pytorch-eager",
                                                                     "1.000", "1.100", "+10.0%"});
    REQUIRE(p.thresholds.size() == 1);
    CHECK_FALSE(p.thresholds[0].passed);
    CHECK(p.thresholds[0].text == "latency MAPE of eager at most 12%: 15.0%, FAILED");
    REQUIRE(p.skipped.size() == 1);
    CHECK(p.skipped[0] == "bert (eager), 3 configurations: no bert.onnx");
    CHECK(p.other_runs == 4);
    REQUIRE(p.has_leave_out);
    CHECK(contains(p.leave_out_intro, "the entry's 2 fitted constants (gpu.a, gpu.b)"));
    CHECK(contains(p.leave_out_intro, "each of the 2 models"));
    CHECK(p.leave_out.rows[0] ==
          std::vector<std::string>{"latency", "eager", "2", "15.0%", "10.0%", "14.0%", "1.40x"});
    CHECK(p.leave_out_groups.rows[0] ==
          std::vector<std::string>{"resnet50", "eager", "1", "12.0%"});

    const fake::value with_energy = fake::value::from(validation(true));
    const nnergy::reporting::validation_page e =
        nnergy::reporting::read_validation(nnergy::sdk::value_view(with_energy.handle()));
    CHECK(e.summary.rows.size() == 2);
    CHECK(e.summary.rows[1][0] == "energy");
    CHECK(e.configurations_table.head.size() == 11);
    CHECK(e.configurations_table.rows[0].back() == "-20.0%");
    CHECK(e.configurations_table.rows[1][8] == "-");  // not measured
    // No group has an energy: no energy column among the held-out groups.
    CHECK(e.leave_out_groups.head.size() == 4);

    // A group left out with an energy: the held-out groups gain an energy column, "-" where a
    // group has none.
    ordered_json grouped = validation(true);
    grouped["leave_out"]["per_group"][0]["energy_mape_pct"] = 21.5;
    grouped["leave_out"]["per_group"].push_back({{"group", "vit_<b>"},
                                                 {"mode", "eager"},
                                                 {"configurations", 1},
                                                 {"latency_mape_pct", 20.0},
                                                 {"energy_mape_pct", nullptr}});
    const fake::value g = fake::value::from(grouped);
    const nnergy::reporting::validation_page gp =
        nnergy::reporting::read_validation(nnergy::sdk::value_view(g.handle()));
    CHECK(gp.leave_out_groups.head.back() == "energy MAPE");
    CHECK(gp.leave_out_groups.rows[0] ==
          std::vector<std::string>{"resnet50", "eager", "1", "12.0%", "21.5%"});
    CHECK(gp.leave_out_groups.rows[1] ==
          std::vector<std::string>{"vit_<b>", "eager", "1", "20.0%", "-"});

    // A run with a timing floor: predicted at the floor where the estimate is below it.
    ordered_json floored = validation(false);
    floored["configurations"][0]["latency_s"]["floor"] = 0.0011;
    floored["configurations"][0]["latency_s"]["estimate"] = 0.0004;
    floored["configurations"][1]["latency_s"]["floor"] = 0.001;
    floored["configurations"][1]["latency_s"]["estimate"] = 0.0016;
    const fake::value f = fake::value::from(floored);
    const nnergy::reporting::validation_page fp =
        nnergy::reporting::read_validation(nnergy::sdk::value_view(f.handle()));
    CHECK(fp.configurations_table.rows[0][6] == "1.100 (floor)");
    CHECK(fp.configurations_table.rows[1][6] == "1.600");
}

TEST_CASE("the Markdown and HTML reporters write validation pages", "[validation]") {
    fake::install();
    const fake::value doc = fake::value::from(validation(true));
    const nnergy::sdk::value_view view(doc.handle());

    const std::string md = nnergy::markdown::render_validation(view);
    CHECK(md.rfind("# Validation on h100-sxm5 (gpu)\n", 0) == 0);
    CHECK(contains(md, "| metric | mode | runtime | configurations | MAPE |"));
    CHECK(contains(md, "| latency | eager | pytorch-eager | 2 | 15.0% | -20.0% |"));
    CHECK(contains(md, "- **latency MAPE of eager at most 12%: 15.0%, FAILED**"));
    CHECK(contains(md, "## Leave one model out"));
    CHECK(contains(md, "## Skipped"));
    CHECK(contains(md, "vit\\_\\<b\\>"));           // markup in a model name is escaped
    CHECK(occurrences(md, "\n| resnet50 |") == 2);  // the configuration and its held-out group

    const std::string html = nnergy::html::render_validation(view);
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(contains(html, "<title>Validation on h100-sxm5 (gpu)</title>"));
    CHECK(contains(html, "<li class=\"fail\">latency MAPE of eager at most 12%"));
    CHECK(contains(html, "vit_&lt;b&gt;"));
    CHECK_FALSE(contains(html, "vit_<b>"));
    CHECK(occurrences(html, "<tr>") == 1 + 2 + 1 + 1 + 1 + 1 + 1 + 2);  // heads and rows
    CHECK(html.size() > 1000);
    CHECK(contains(html, "</html>"));
}
