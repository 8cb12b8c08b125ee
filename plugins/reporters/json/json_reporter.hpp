// SPDX-License-Identifier: Apache-2.0
/// \file json_reporter.hpp
/// \brief nnergy.reporter.json: the report document (docs/report.md) as JSON, key order kept,
/// numbers with enough digits to read back the same double.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>

namespace nnergy::json {

/// Copies the host's document tree into an insertion-ordered JSON value.
inline nlohmann::ordered_json to_json(const sdk::value_view& v) {
    switch (v.kind()) {
        case NNERGY_VALUE_NULL:
            return nullptr;
        case NNERGY_VALUE_BOOL:
            return v.as_bool();
        case NNERGY_VALUE_INT:
            return v.as_int();
        case NNERGY_VALUE_FLOAT:
            return v.as_number();  // NaN and infinities dump as null
        case NNERGY_VALUE_STRING:
            return std::string(v.as_string());
        case NNERGY_VALUE_ARRAY: {
            nlohmann::ordered_json a = nlohmann::ordered_json::array();
            for (size_t i = 0; i < v.size(); ++i) a.push_back(to_json(v.at(i)));
            return a;
        }
        case NNERGY_VALUE_OBJECT: {
            nlohmann::ordered_json o = nlohmann::ordered_json::object();
            for (size_t i = 0; i < v.size(); ++i) o[std::string(v.key(i))] = to_json(v.at(i));
            return o;
        }
    }
    throw sdk::error(
        "report document has a value of unknown kind " + std::to_string(static_cast<int>(v.kind())),
        NNERGY_CODE_INTERNAL);
}

/// The document as text; strings that are not valid UTF-8 get U+FFFD rather than failing.
inline std::string render(const sdk::value_view& doc, int indent = 2) {
    return to_json(doc).dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
           "\n";
}

class json_reporter : public sdk::reporter {
public:
    explicit json_reporter(const sdk::context& ctx) : sdk::reporter(ctx) {
        const sdk::config_view config = ctx.config();
        config.expect_only({"indent"}, "nnergy.reporter.json");
        const int64_t indent = config.integer("indent").value_or(2);
        if (indent < -1 || indent > 16)
            throw sdk::error(sdk::config_view::where(*config.find("indent")) +
                             ": 'indent' must be between 0 and 16 spaces, or -1 for one line");
        indent_ = static_cast<int>(indent);
    }

    void report(const sdk::value_view& doc, sdk::output_writer& out) override {
        out.write(render(doc, indent_));
    }

private:
    int indent_ = 2;
};

}  // namespace nnergy::json
