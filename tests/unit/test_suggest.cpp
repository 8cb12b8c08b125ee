// SPDX-License-Identifier: Apache-2.0
// "Did you mean" hints: the edit distance and which names are offered for a misspelt one.
#include <catch2/catch.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <nnergy/framework/suggest.hpp>
#include <string>
#include <vector>

using nnergy::closest_names;
using nnergy::did_you_mean;
using nnergy::edit_distance;
using names = std::vector<std::string>;

TEST_CASE("edit distance counts insertions, deletions, substitutions and swaps", "[suggest]") {
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("abc", "") == 3);
    CHECK(edit_distance("", "abc") == 3);
    CHECK(edit_distance("h100-sxm5", "h100-sxm5") == 0);
    CHECK(edit_distance("h100-sxm", "h100-sxm5") == 1);    // insertion
    CHECK(edit_distance("h100-sxm55", "h100-sxm5") == 1);  // deletion
    CHECK(edit_distance("float13", "float16") == 1);       // substitution
    CHECK(edit_distance("flaot16", "float16") == 1);       // swap of neighbours
    CHECK(edit_distance("kitten", "sitting") == 3);
    CHECK(edit_distance("FLOAT16", "float16") == 0);  // case-insensitive
    CHECK(edit_distance("abc", "xyz") == 3);
    // Symmetric.
    CHECK(edit_distance("cuda-grpah", "cuda-graph") == edit_distance("cuda-graph", "cuda-grpah"));
}

TEST_CASE("closest names: best first, only close ones, at most three", "[suggest]") {
    const names hardware{"a100-sxm4-80gb", "h100-pcie", "h100-sxm5", "l4", "tpu-v4", "xeon-8490h"};
    CHECK(closest_names("h100-sxm", hardware) == names{"h100-sxm5", "h100-pcie"});
    CHECK(closest_names("tpu-v5", hardware) == names{"tpu-v4"});
    // A name cut short finds its full name first, however many edits it is away.
    CHECK(closest_names("a100-sxm4", hardware) == names{"a100-sxm4-80gb", "h100-sxm5"});
    CHECK(closest_names("completely-different", hardware).empty());
    CHECK(closest_names("", hardware).empty());
    // An exact name is not a suggestion of itself.
    CHECK(closest_names("l4", hardware).empty());

    const names precisions{"float32",     "tfloat32", "float16", "bfloat16", "float8_e4m3",
                           "float8_e5m2", "int8",     "int4",    "float64"};
    const names p = closest_names("float13", precisions);
    REQUIRE(p.size() == 3);
    CHECK(p.front() == "float16");
    CHECK(closest_names("float13", precisions, 1) == names{"float16"});
    CHECK(closest_names("int3", precisions) == names{"int4", "int8"});

    // A short name matches the last part of a dotted plugin name.
    const names reporters{"nnergy.reporter.json", "nnergy.reporter.text"};
    CHECK(closest_names("jsn", reporters) == names{"nnergy.reporter.json"});
    CHECK(closest_names("nnergy.reporter.jsno", reporters) == names{"nnergy.reporter.json"});
    // A typo in the last part of a full name is not close to that part's siblings.
    const names architectures{"nnergy.architecture.cpu", "nnergy.architecture.gpu",
                              "nnergy.architecture.reference"};
    CHECK(closest_names("nnergy.architecture.gpuu", architectures) ==
          names{"nnergy.architecture.gpu"});
    CHECK(closest_names("acme.architecture.does_not_exist", architectures).empty());
}

TEST_CASE("did_you_mean phrases the hint, or says nothing", "[suggest]") {
    const names runtimes{"cuda-graph", "fused", "pytorch-eager", "pytorch-eager-cpu"};
    CHECK(did_you_mean("cuda-grpah", runtimes) == " \u2014 did you mean cuda-graph?");
    CHECK(did_you_mean("pytorch-eagr", runtimes) ==
          " \u2014 did you mean pytorch-eager, pytorch-eager-cpu?");
    CHECK(did_you_mean("tensorrt", runtimes).empty());
}

TEST_CASE("catalog lookups suggest the closest entries", "[suggest]") {
    const nnergy::source_location where{"--hw", 0};
    try {
        nnergy::resolve_hardware("h100-sxm", ".", where);
        FAIL("h100-sxm resolved");
    } catch (const nnergy::error& e) {
        CHECK_THAT(e.what(), Catch::Contains("unknown hardware 'h100-sxm' \u2014 did you mean "
                                             "h100-sxm5, h200-sxm, h100-pcie?"));
    }
    try {
        nnergy::resolve_runtime("cuda-grahp", ".", where);
        FAIL("cuda-grahp resolved");
    } catch (const nnergy::error& e) {
        CHECK_THAT(e.what(), Catch::Contains("did you mean cuda-graph?"));
    }
}
