// SPDX-License-Identifier: Apache-2.0
// The report document's value (report.hpp): one kind at a time, members named, copies and
// moves that keep everything, including assignments from the value's own members.
#include <catch2/catch.hpp>
#include <nnergy/framework/report.hpp>
#include <stdexcept>
#include <string>
#include <vector>

using nnergy::report_value;

namespace {

report_value sample() {
    report_value doc = report_value::object();
    doc.set("name", report_value::of("a name longer than any short-string buffer holds"));
    doc.set("count", report_value::of(int64_t{42}));
    doc.set("share", report_value::of(0.25));
    doc.set("ok", report_value::of(true));
    report_value& list = doc.set("list", report_value::array());
    for (int i = 0; i < 20; ++i) list.push(report_value::of(static_cast<int64_t>(i)));
    doc.set("inner", report_value::object()).set("x", report_value::of("y"));
    return doc;
}

}  // namespace

TEST_CASE("report values hold one kind and read back as written", "[report]") {
    const report_value doc = sample();
    CHECK(sizeof(report_value) <= 32);
    REQUIRE(doc.kind() == NNERGY_VALUE_OBJECT);
    REQUIRE(doc.items().size() == 6);
    CHECK(doc.items()[0].key() == "name");
    CHECK(doc.items()[5].key() == "inner");
    CHECK(doc.get("name")->string_value() == "a name longer than any short-string buffer holds");
    CHECK(doc.get("count")->int_value() == 42);
    CHECK(doc.get("count")->float_value() == 42.0);  // an integer reads as a number too
    CHECK(doc.get("share")->float_value() == 0.25);
    CHECK(doc.get("share")->int_value() == 0);
    CHECK(doc.get("ok")->bool_value());
    CHECK(doc.get("list")->items().size() == 20);
    CHECK(doc.get("list")->items()[19].int_value() == 19);
    CHECK(doc.get("inner")->get("x")->string_value() == "y");
    CHECK(doc.get("missing") == nullptr);
    // Other kinds read as nothing, never as another kind's bytes.
    CHECK(doc.get("name")->items().empty());
    CHECK(doc.get("list")->string_value().empty());
    CHECK(doc.get("name")->float_value() == 0.0);
    CHECK(nnergy::to_json(doc, -1).find("\"list\":[0,1,2") != std::string::npos);
}

TEST_CASE("report values copy, move and replace members by name", "[report]") {
    report_value doc = sample();
    const std::string before = nnergy::to_json(doc);
    report_value copied = doc;
    CHECK(nnergy::to_json(copied) == before);
    report_value moved = std::move(copied);
    CHECK(nnergy::to_json(moved) == before);
    CHECK(copied.kind() == NNERGY_VALUE_NULL);  // what a move leaves behind

    // Replacing a member keeps its name and place; the new kind's contents replace the old.
    doc.set("name", report_value::array()).push(report_value::of("now a list"));
    CHECK(doc.items()[0].key() == "name");
    CHECK(doc.get("name")->items()[0].string_value() == "now a list");
    CHECK(doc.get("name")->string_value().empty());

    // A value assigned one of its own members (copied or moved) ends up as that member.
    report_value outer = sample();
    outer = *outer.get("inner");
    CHECK(outer.get("x")->string_value() == "y");
    report_value moving = sample();
    moving = std::move(*moving.get("list"));
    REQUIRE(moving.kind() == NNERGY_VALUE_ARRAY);
    CHECK(moving.items().size() == 20);

    // Members belong to objects, elements to arrays.
    report_value number = report_value::of(1.5);
    CHECK_THROWS_AS(number.set("x", report_value::of(true)), std::logic_error);
    CHECK_THROWS_AS(doc.push(report_value::of(true)), std::logic_error);
}

TEST_CASE("pooled names: names alike in size and ends are still told apart", "[report]") {
    // The pool's per-thread cache finds a name by its size and its first and last eight bytes:
    // names that differ only in the middle share a cache slot, and each must come back as
    // itself, however they follow one another.
    using nnergy::detail::pooled_name;
    std::vector<std::string> names;
    for (char c = 'a'; c <= 'z'; ++c) names.push_back(std::string("energy.x") + c + "_joules_j");
    for (int pass = 0; pass < 3; ++pass)
        for (const std::string& name : names) {
            const pooled_name pooled = pooled_name::of(name);
            REQUIRE(pooled.view() == name);
            CHECK(pooled == pooled_name::of(std::string(name)));  // one entry per name
        }
}

TEST_CASE("report texts of every length around the inline limit keep their bytes", "[report]") {
    // Texts up to 16 bytes lie in the value, longer ones on the heap: copies, moves and
    // assignments across both must keep the bytes, embedded zeros included.
    std::vector<std::string> texts;
    for (size_t n = 0; n <= 40; ++n) {
        std::string t;
        for (size_t i = 0; i < n; ++i) t += static_cast<char>(i % 7 == 3 ? '\0' : 'a' + i % 26);
        texts.push_back(t);
    }
    report_value list = report_value::array();
    for (const std::string& t : texts) list.push(report_value::of(std::string_view(t)));
    REQUIRE(list.items().size() == texts.size());
    const report_value copied = list;
    report_value moved = report_value(copied);
    for (size_t n = 0; n < texts.size(); ++n) {
        CHECK(list.items()[n].string_value() == texts[n]);
        CHECK(copied.items()[n].string_value() == texts[n]);
        CHECK(moved.items()[n].string_value() == texts[n]);
    }
    // A short text replaced by a long one and back, in place.
    report_value doc = report_value::object();
    doc.set("t", report_value::of(std::string_view(texts[3])));
    doc.set("t", report_value::of(std::string_view(texts[33])));
    CHECK(doc.get("t")->string_value() == texts[33]);
    doc.set("t", report_value::of(std::string_view(texts[16])));
    CHECK(doc.get("t")->string_value() == texts[16]);
    doc = *doc.get("t");  // assigned its own member
    CHECK(doc.string_value() == texts[16]);
}

TEST_CASE("report containers grow, reserve and nest without losing members", "[report]") {
    report_value root = report_value::object();
    root.reserve(3);  // fewer than it will hold: growth past a reservation
    for (int i = 0; i < 100; ++i) {
        report_value& child = root.add("k" + std::to_string(i), report_value::array());
        child.reserve(static_cast<size_t>(i % 5));
        for (int j = 0; j < i % 13; ++j) child.push(report_value::of(static_cast<int64_t>(j)));
        child.push(report_value::of("a text longer than sixteen bytes"));
    }
    REQUIRE(root.items().size() == 100);
    const report_value copy = root;
    for (int i = 0; i < 100; ++i) {
        const report_value* child = copy.get("k" + std::to_string(i));
        REQUIRE(child != nullptr);
        REQUIRE(child->items().size() == static_cast<size_t>(i % 13 + 1));
        if (i % 13 > 0) CHECK(child->items()[0].int_value() == 0);
        CHECK(child->items().back().string_value() == "a text longer than sixteen bytes");
    }
    CHECK(nnergy::to_json(copy) == nnergy::to_json(root));
    // An empty container copies and reads as empty.
    const report_value empty = report_value::array();
    const report_value empty_copy = empty;
    CHECK(empty_copy.kind() == NNERGY_VALUE_ARRAY);
    CHECK(empty_copy.items().empty());
}
