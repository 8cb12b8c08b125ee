// SPDX-License-Identifier: Apache-2.0
// The C++17 SDK on its own, compiled as C++17: how it reads host arrays, fills the plugin info
// and turns exceptions into statuses. A minimal host API stands in for the real one, so these
// checks do not depend on the host's implementation.
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <nnergy/sdk.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sdk = nnergy::sdk;

namespace {

// A status as the stand-in host makes it.
struct test_status {
    nnergy_status_code code;
    std::string message;
};

nnergy_status* create_status(nnergy_status_code code, nnergy_string_view message) {
    return reinterpret_cast<nnergy_status*>(
        new test_status{code, std::string(message.data, message.size)});
}
void release_status(nnergy_status* s) { delete reinterpret_cast<test_status*>(s); }
nnergy_status_code status_code(const nnergy_status* s) {
    return reinterpret_cast<const test_status*>(s)->code;
}
nnergy_string_view status_message(const nnergy_status* s) {
    return sdk::to_sv(reinterpret_cast<const test_status*>(s)->message);
}

// Installs the stand-in API as the one this "library" negotiated, for one test case.
struct scoped_host {
    nnergy_host_api api{};
    scoped_host() {
        api.struct_size = sizeof api;
        api.status_create = create_status;
        api.status_release = release_status;
        api.status_code = status_code;
        api.status_message = status_message;
        sdk::detail::api_slot() = &api;
    }
    ~scoped_host() { sdk::detail::api_slot() = nullptr; }
};

// Takes a status returned through the boundary: its code and message.
std::pair<nnergy_status_code, std::string> take(nnergy_status* s) {
    REQUIRE(s != nullptr);
    auto* t = reinterpret_cast<test_status*>(s);
    std::pair<nnergy_status_code, std::string> out{t->code, t->message};
    release_status(s);
    return out;
}

// What a host of a newer minor hands out: its nnergy_named_value has grown at the end.
struct newer_named_value {
    nnergy_named_value v;
    double added_in_a_later_minor;
};

newer_named_value number_value(const char* name, double value) {
    newer_named_value n{};
    n.v.struct_size = sizeof n;
    n.v.name = sdk::to_sv(name);
    n.v.kind = NNERGY_VALUE_FLOAT;
    n.v.float_value = value;
    n.v.file = sdk::to_sv("npu.toml");
    n.v.line = 7;
    n.added_in_a_later_minor = -1.0;
    return n;
}

}  // namespace

TEST_CASE("config_view walks a newer host's array by its struct_size", "[abi][sdk]") {
    std::vector<newer_named_value> values{number_value("a", 1.0), number_value("b", 2.0),
                                          number_value("c", 3.0)};
    values[2].v.kind = NNERGY_VALUE_STRING;
    values[2].v.string_value = sdk::to_sv("three");
    sdk::config_view view(&values[0].v, values.size());

    REQUIRE(view.size() == 3);
    CHECK(sdk::from_sv(view[1].name) == "b");
    CHECK(sdk::from_sv(view[2].name) == "c");
    CHECK(view.number("b") == 2.0);
    CHECK(view.string("c") == std::string("three"));
    CHECK_FALSE(view.contains("d"));
    std::vector<std::string> names;
    for (const nnergy_named_value& v : view) names.emplace_back(sdk::from_sv(v.name));
    CHECK(names == std::vector<std::string>{"a", "b", "c"});

    // A value of the wrong type names its file and line.
    CHECK_THROWS_WITH(view.number("c"),
                      Catch::Contains("npu.toml:7") && Catch::Contains("'c' must be a number"));
    CHECK_THROWS_WITH(view.require_number("d", "npu.toml"),
                      Catch::Contains("missing required number 'd'"));
}

TEST_CASE("an empty config_view has no elements", "[abi][sdk]") {
    sdk::config_view none;
    CHECK(none.size() == 0);
    CHECK(none.begin() == none.end());
    sdk::config_view null_array(nullptr, 5);  // a count without an array is treated as empty
    CHECK(null_array.size() == 0);
    CHECK(null_array.find("x") == nullptr);
}

TEST_CASE("estimate_input reads the hardware identity only where the host's struct holds it",
          "[abi][sdk]") {
    nnergy_estimate_input in{};
    in.struct_size = sizeof in;
    in.hardware_identity = 42;
    CHECK(sdk::estimate_input(in).hardware_identity() == 42);
    // A 1.8 host's struct ends with `options`: what lies beyond it is not the host's to read.
    in.struct_size = NNERGY_STRUCT_SIZE(nnergy_estimate_input, options);
    CHECK(sdk::estimate_input(in).hardware_identity() == 0);
}

TEST_CASE("negotiate fills only what the host allocated", "[abi][sdk]") {
    static const nnergy_component none[1] = {};
    // A host whose plugin info ends at component_count: the description member must stay as the
    // host left it.
    nnergy_plugin_info info;
    std::memset(&info, 0xAB, sizeof info);
    info.struct_size = NNERGY_STRUCT_SIZE(nnergy_plugin_info, component_count);
    nnergy_host_info host{};
    host.struct_size = sizeof host;
    host.abi_major = NNERGY_ABI_MAJOR;
    host.abi_minor = NNERGY_ABI_MINOR;
    REQUIRE(sdk::detail::negotiate(&host, &info, "p", "1.2.3", "v", "MIT", "desc", none, 1) ==
            nullptr);
    CHECK(info.struct_size == NNERGY_STRUCT_SIZE(nnergy_plugin_info, component_count));
    CHECK(info.abi_major == NNERGY_ABI_MAJOR);
    CHECK(info.abi_minor == NNERGY_ABI_MINOR);
    CHECK(sdk::from_sv(info.version) == "1.2.3");
    CHECK(sdk::from_sv(info.license) == "MIT");
    CHECK(info.components == none);
    CHECK(info.component_count == 1);
    const unsigned char* tail = reinterpret_cast<const unsigned char*>(&info.description);
    for (size_t i = 0; i < sizeof info.description; ++i) CHECK(tail[i] == 0xAB);

    // A host of this minor gets every member.
    nnergy_plugin_info full{};
    full.struct_size = sizeof full;
    REQUIRE(sdk::detail::negotiate(&host, &full, "p", "1", "v", "MIT", "desc", none, 1) == nullptr);
    CHECK(sdk::from_sv(full.description) == "desc");
    CHECK(full.struct_size == sizeof full);
}

TEST_CASE("exceptions become statuses at the boundary", "[abi][sdk]") {
    scoped_host host;

    auto [code1, msg1] = take(sdk::detail::guarded(
        [] { throw sdk::error("npu.toml:3: bad precision", NNERGY_CODE_UNIMPLEMENTED); }));
    CHECK(code1 == NNERGY_CODE_UNIMPLEMENTED);
    CHECK(msg1 == "npu.toml:3: bad precision");

    auto [code2, msg2] = take(sdk::detail::guarded([] { throw std::out_of_range("index 9"); }));
    CHECK(code2 == NNERGY_CODE_INTERNAL);
    CHECK(msg2 == "unexpected exception in plugin: index 9");

    auto [code3, msg3] = take(sdk::detail::guarded([] { throw 42; }));
    CHECK(code3 == NNERGY_CODE_INTERNAL);
    CHECK(msg3 == "unexpected non-standard exception in plugin");

    CHECK(sdk::detail::guarded([] {}) == nullptr);
}

TEST_CASE("a host error becomes an sdk::error with the host's code and message", "[abi][sdk]") {
    scoped_host host;
    nnergy_status* s = create_status(NNERGY_CODE_NOT_FOUND, sdk::to_sv("rules.toml: no such file"));
    try {
        sdk::detail::check(s, "configuration file");
        FAIL("check() did not throw");
    } catch (const sdk::error& e) {
        CHECK(e.code() == NNERGY_CODE_NOT_FOUND);
        CHECK(std::string(e.what()) == "rules.toml: no such file");
    }
    CHECK_NOTHROW(sdk::detail::check(nullptr, "anything"));
}

namespace {
// What the stand-in host's mapping functions were called with: by text or by interned name.
struct mapping_calls {
    std::vector<std::string> by_text, by_name;
};
mapping_calls calls;
// The stand-in's interned names: addresses of its own copies, one per text.
std::vector<std::unique_ptr<std::string>> interned_texts;
const nnergy_name* intern(nnergy_string_view s) {
    const std::string text(s.data, s.size);
    for (const auto& t : interned_texts)
        if (*t == text) return reinterpret_cast<const nnergy_name*>(t.get());
    interned_texts.push_back(std::make_unique<std::string>(text));
    return reinterpret_cast<const nnergy_name*>(interned_texts.back().get());
}
std::string text_of(const nnergy_name* n) { return *reinterpret_cast<const std::string*>(n); }
void set_number(nnergy_mapping*, nnergy_string_view key, double) {
    calls.by_text.emplace_back(key.data, key.size);
}
void set_number_named(nnergy_mapping*, const nnergy_name* key, double) {
    calls.by_name.push_back(text_of(key));
}
void add_event(nnergy_mapping*, nnergy_string_view category, nnergy_string_view event, double) {
    calls.by_text.push_back(std::string(category.data, category.size) + "." +
                            std::string(event.data, event.size));
}
void add_event_named(nnergy_mapping*, const nnergy_name* category, const nnergy_name* event,
                     double) {
    calls.by_name.push_back(text_of(category) + "." + text_of(event));
}
bool get_number(const nnergy_mapping*, nnergy_string_view key, double* out) {
    calls.by_text.emplace_back(key.data, key.size);
    *out = 1;
    return true;
}
bool get_number_named(const nnergy_mapping*, const nnergy_name* key, double* out) {
    calls.by_name.push_back(text_of(key));
    *out = 2;
    return true;
}
}  // namespace

TEST_CASE("sdk::key passes interned names to a 1.7 host and texts to an older one", "[abi][sdk]") {
    scoped_host host;
    host.api.mapping_set_number = set_number;
    host.api.mapping_add_event = add_event;
    host.api.mapping_get_number = get_number;
    host.api.name_intern = intern;
    host.api.mapping_set_number_named = set_number_named;
    host.api.mapping_add_event_named = add_event_named;
    host.api.mapping_get_number_named = get_number_named;
    calls = {};
    // Each test case makes its own keys: a key keeps the name the first host interned.
    static const sdk::key units{"units_allocated"}, memory{"memory"}, dram{"dram"};
    sdk::mapping_writer out(nullptr);
    const sdk::mapping_view view(nullptr);

    SECTION("a host with interned names gets them") {
        out.set(units, 1);
        out.add_event(memory, dram, 10);
        CHECK(view.number_or(units, 0) == 2);
        CHECK(calls.by_name ==
              std::vector<std::string>{"units_allocated", "memory.dram", "units_allocated"});
        CHECK(calls.by_text.empty());
    }
    SECTION("a 1.6 host, whose table ends before them, gets the texts") {
        host.api.struct_size = NNERGY_STRUCT_SIZE(nnergy_host_api, graph_reserve);
        out.set(units, 1);
        out.add_event(memory, dram, 10);
        CHECK(view.number_or(units, 0) == 1);
        CHECK(calls.by_text ==
              std::vector<std::string>{"units_allocated", "memory.dram", "units_allocated"});
        CHECK(calls.by_name.empty());
    }
    SECTION("a host without name_intern gets the texts") {
        host.api.name_intern = nullptr;
        out.set(units, 1);
        CHECK(calls.by_text == std::vector<std::string>{"units_allocated"});
        CHECK(calls.by_name.empty());
    }
}
