// SPDX-License-Identifier: Apache-2.0
// A file of the hardware catalog read through the host's loader and handed to a plugin the way
// the ABI does (flattened named values).
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <nnergy/framework/host.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fake_host.hpp"

namespace nnergy::test {

inline const std::filesystem::path k_source_dir = NNERGY_TEST_SOURCE_DIR;

/// The host's flattened values as the ABI hands them to a plugin.
struct loaded {
    nnergy::config_values values;
    std::vector<nnergy_named_value> named;

    explicit loaded(const std::string& name, std::string_view folder = "hardware")
        : values(folder == "runtimes" ? nnergy::read_runtime_file(
                                            k_source_dir / "configs/runtimes" / (name + ".toml"))
                                      : nnergy::read_hardware_file(
                                            k_source_dir / "configs/hardware" / (name + ".toml"))) {
        for (const nnergy::config_value& v : values) {
            nnergy_named_value n{};
            n.struct_size = sizeof n;
            n.name = fake::sv(v.name);
            n.kind = v.kind;
            n.bool_value = v.bool_value;
            n.int_value = v.int_value;
            n.float_value = v.float_value;
            n.string_value = fake::sv(v.string_value);
            n.file = fake::sv(v.file);
            n.line = v.line;
            named.push_back(n);
        }
    }
    nnergy::sdk::config_view view() const { return {named.data(), named.size()}; }
    double number(std::string_view key) const {
        const nnergy::config_value* v = nnergy::find_value(values, key);
        REQUIRE(v);
        return v->float_value;
    }
};

}  // namespace nnergy::test
