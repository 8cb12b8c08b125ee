// SPDX-License-Identifier: Apache-2.0
// The JSON-graph reader's own JSON parser: exact numbers and strings, the line of every value,
// element counts of the lists it steps over, and agreement with simdjson (an independent,
// conforming parser) on what is and is not JSON.
#include <simdjson.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../../frontends/json_graph/json_document.hpp"

namespace {

namespace jg = nnergy::json_graph;
using kind = jg::json_value::kind;

// The message of the syntax error `text` raises, or "" if it parses.
std::string error_of(const std::string& text) {
    try {
        jg::json_document doc(text, 64);
    } catch (const jg::json_syntax_error& e) {
        return e.what();
    }
    return "";
}

// Whether simdjson's DOM parser accepts `text`, and whether any object in it repeats a key
// (JSON allows that; this reader refuses it).
struct simdjson_verdict {
    bool accepted = false;
    simdjson::error_code error = simdjson::SUCCESS;
    bool duplicate_key = false;
    std::size_t depth = 0;
};

void visit_dom(simdjson::dom::element e, std::size_t depth, simdjson_verdict& v) {
    v.depth = std::max(v.depth, depth);
    if (e.is_array()) {
        const simdjson::dom::array elements = e.get_array().value();
        for (simdjson::dom::element x : elements) visit_dom(x, depth + 1, v);
    } else if (e.is_object()) {
        std::vector<std::string_view> keys;
        const simdjson::dom::object members = e.get_object().value();
        for (simdjson::dom::key_value_pair m : members) {
            for (std::string_view k : keys) v.duplicate_key = v.duplicate_key || k == m.key;
            keys.push_back(m.key);
            visit_dom(m.value, depth + 1, v);
        }
    }
}

simdjson_verdict judge(const std::string& text) {
    static simdjson::dom::parser parser;
    simdjson_verdict v;
    simdjson::dom::element root;
    v.error = parser.parse(text).get(root);
    if (v.error != simdjson::SUCCESS) return v;
    v.accepted = true;
    visit_dom(root, 1, v);
    return v;
}

// Whether `v` holds an integer beyond 64 bits (which this reader keeps as such, for its own
// message, and simdjson 3.0 refuses as a number error).
bool holds_big_integer(const jg::json_document& doc, const jg::json_value& v) {
    if (v.type == kind::big_integer) return true;
    if (v.type != kind::array && v.type != kind::object) return false;
    for (std::size_t k = 0; k < v.child_count; ++k)
        if (holds_big_integer(doc, doc.child(v, k))) return true;
    return false;
}

// The same value as simdjson reads it: kind, numbers, strings, members in order.
bool same_value(const jg::json_document& doc, const jg::json_value& mine,
                simdjson::dom::element theirs) {
    switch (theirs.type()) {
        case simdjson::dom::element_type::ARRAY: {
            if (mine.type != kind::array) return false;
            std::size_t k = 0;
            const simdjson::dom::array elements = theirs.get_array().value();
            for (simdjson::dom::element x : elements)
                if (k >= mine.child_count || !same_value(doc, doc.child(mine, k++), x))
                    return false;
            return k == mine.child_count;
        }
        case simdjson::dom::element_type::OBJECT: {
            if (mine.type != kind::object) return false;
            std::size_t k = 0;
            const simdjson::dom::object members = theirs.get_object().value();
            for (simdjson::dom::key_value_pair m : members) {
                if (k >= mine.child_count) return false;
                const jg::json_value& member = doc.child(mine, k++);
                if (member.key != m.key || !same_value(doc, member, m.value)) return false;
            }
            return k == mine.child_count;
        }
        case simdjson::dom::element_type::INT64:
            return mine.type == kind::integer && mine.integer == theirs.get_int64().value();
        case simdjson::dom::element_type::UINT64:
            return mine.type == kind::unsigned_integer &&
                   mine.unsigned_integer == theirs.get_uint64().value();
        case simdjson::dom::element_type::DOUBLE:
            return mine.type == kind::real && mine.real == theirs.get_double().value();
        case simdjson::dom::element_type::STRING:
            return mine.type == kind::string && mine.string == theirs.get_string().value();
        case simdjson::dom::element_type::BOOL:
            return mine.type == kind::boolean && mine.boolean == theirs.get_bool().value();
        case simdjson::dom::element_type::NULL_VALUE:
            return mine.type == kind::null;
    }
    return false;
}

}  // namespace

TEST_CASE("json document: integers keep their exact value, reals the nearest double",
          "[json_graph][json_document]") {
    const std::string text =
        "[0, -0, 7, -7, 9223372036854775807, -9223372036854775808, 9223372036854775808, "
        "18446744073709551615, 18446744073709551616, -9223372036854775809, 1.5, -2.5e-3, 1E2, "
        "0.1, 1e-400, -1e-400, 123456789012345678901234567890.0]";
    jg::json_document doc(text, 64);
    const jg::json_value& a = doc.root();
    REQUIRE(a.child_count == 17);
    auto at = [&](std::size_t k) { return doc.child(a, k); };
    CHECK(at(0).type == kind::integer);
    CHECK(at(0).integer == 0);
    CHECK(at(1).integer == 0);
    CHECK(at(3).integer == -7);
    CHECK(at(4).integer == INT64_MAX);
    CHECK(at(5).type == kind::integer);
    CHECK(at(5).integer == INT64_MIN);
    CHECK(at(6).type == kind::unsigned_integer);
    CHECK(at(6).unsigned_integer == uint64_t{1} << 63);
    CHECK(at(7).unsigned_integer == UINT64_MAX);
    CHECK(at(8).type == kind::big_integer);
    CHECK(at(9).type == kind::big_integer);
    CHECK(at(10).type == kind::real);
    CHECK(at(10).real == 1.5);
    CHECK(at(11).real == -2.5e-3);
    CHECK(at(12).type == kind::real);
    CHECK(at(12).real == 100.0);
    CHECK(at(13).real == 0.1);
    // Below the smallest double: zero, with its sign.
    CHECK(at(14).real == 0.0);
    CHECK_FALSE(std::signbit(at(14).real));
    CHECK(std::signbit(at(15).real));
    CHECK(at(16).real == 123456789012345678901234567890.0);

    for (const char* bad :
         {"[01]", "[-]", "[1.e5]", "[1e]", "[0x1]", "[1.5.2]", "[--1]", "[1e+]", "[-01]"}) {
        INFO(bad);
        CHECK(error_of(bad) == "invalid number '" + std::string(bad + 1, strlen(bad) - 2) + "'");
    }
    CHECK(error_of("[+1]") == "unexpected '+'; expected a value");
    CHECK(error_of("[.5]") == "unexpected '.'; expected a value");
    CHECK(error_of("[1e309]") == "number out of range: 1e309");
    CHECK(error_of("[-1e309]") == "number out of range: -1e309");
}

TEST_CASE("json document: strings and keys are decoded exactly", "[json_graph][json_document]") {
    const std::string text =
        R"({"plain": "a b", "esc\u0061ped": "q\"b\\s\/ \b\f\n\r\t", "e": "\u00e9\u20ac",)"
        R"( "pair": "\ud83d\ude00", "raw": "é€😀", "empty": ""})";
    jg::json_document doc(text, 64);
    const jg::json_value& o = doc.root();
    REQUIRE(o.child_count == 6);
    auto member = [&](std::size_t k) { return doc.child(o, k); };
    CHECK(member(0).string == "a b");
    CHECK(member(1).key == "escaped");
    CHECK(member(1).string == "q\"b\\s/ \b\f\n\r\t");
    CHECK(member(2).string == "\xC3\xA9\xE2\x82\xAC");
    CHECK(member(3).string == "\xF0\x9F\x98\x80");
    CHECK(member(4).string == "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    CHECK(member(5).string.empty());

    // A surrogate must be a whole pair; escapes are those of RFC 8259.
    for (const char* bad :
         {R"(["\ud800"])", R"(["\ud800x"])", R"(["\ud800\u0041"])", R"(["\udc00"])", R"(["\x41"])",
          R"(["\u12G4"])", R"(["\u12"])", R"(["\'"])"}) {
        INFO(bad);
        CHECK(error_of(bad) == "invalid string (bad escape sequence)");
    }
    CHECK(error_of("[\"\\u12") == "unexpected end of input inside the string at line 1, column 2");
    CHECK(error_of("[\"a\\") == "unexpected end of input inside the string at line 1, column 2");
}

TEST_CASE("json document: every value knows its line; streamed lists are counted and read",
          "[json_graph][json_document]") {
    const std::string text =
        "{\"a\": 1,\n"
        " \"list\": [\"x]\", {\"y\": [1, 2]},\n"
        "   [\"\\\"]\"], 3],\n"
        " \"b\": [\n"
        "  true]\n"
        "}\n";
    jg::json_document doc(text, 64, {"list"});
    const jg::json_value root = doc.root();
    REQUIRE(root.child_count == 3);
    const jg::json_value a = doc.child(root, 0), list = doc.child(root, 1), b = doc.child(root, 2);
    CHECK(a.line == 1);
    CHECK(list.streamed);
    CHECK(list.line == 2);
    CHECK(list.child_count == 4);  // brackets and commas inside strings and elements not counted
    CHECK(b.line == 4);
    CHECK(doc.child(b, 0).line == 5);
    std::vector<std::pair<uint32_t, kind>> seen;
    doc.for_each_element({&list}, [&](std::size_t which, const jg::json_value& e, std::size_t k) {
        CHECK(which == 0);
        CHECK(k == seen.size());
        seen.emplace_back(e.line, e.type);
    });
    REQUIRE(seen.size() == 4);
    CHECK(seen[0] == std::pair{uint32_t{2}, kind::string});
    CHECK(seen[1] == std::pair{uint32_t{2}, kind::object});
    CHECK(seen[2] == std::pair{uint32_t{3}, kind::array});
    CHECK(seen[3] == std::pair{uint32_t{3}, kind::integer});
    // Lines count '\n' only, as editors do for "\r\n" files.
    jg::json_document crlf(std::string_view("[1,\r\n2,\r3]"), 64);
    CHECK(crlf.child(crlf.root(), 1).line == 2);
    CHECK(crlf.child(crlf.root(), 2).line == 2);
}

TEST_CASE("json document: long streamed lists are counted whatever falls on a block boundary",
          "[json_graph][json_document]") {
    // The count looks at 64 bytes at a time (byte by byte without SSE2), and at a block with a
    // backslash byte by byte: strings holding brackets, commas, escaped quotes and backslashes,
    // strings longer than a block, nested lists and newlines, shifted by 0 to 127 bytes of padding
    // so that each piece falls on every position of a block. Half the lists have no escapes, so
    // that runs of blocks are read by their quotes alone.
    const std::string long_text = R"("[[,{x}]], and a name long enough to run past a block: )" +
                                  std::string(70, 'n') + R"(,]")";
    const std::vector<std::string> plain_pieces = {R"("plain")",
                                                   R"("a,b]c}")",
                                                   R"({"x": [1, [2, 3]], "y": "}"})",
                                                   "[\"[\", 4, {}]",
                                                   "12345678901234567",
                                                   long_text,
                                                   "[]",
                                                   "{}"};
    const std::vector<std::string> escaped_pieces = {
        R"("q\"]")", R"("back\\")", R"("\u005d")",
        R"("a long one, \" with an escaped quote )" + std::string(60, 'e') + R"(\"]")"};
    std::mt19937 random(20261206);
    for (int trial = 0; trial < 512; ++trial) {
        const size_t pad = static_cast<size_t>(trial % 128);
        const bool escapes = (trial / 128) % 2 == 1;
        const size_t elements = 1 + random() % 40;
        std::string list = "[";
        uint32_t newlines = 0;
        for (size_t i = 0; i < elements; ++i) {
            if (i) list += random() % 3 ? ", " : ",\n";
            if (!list.empty() && list.back() == '\n') ++newlines;
            const size_t pick =
                random() % (plain_pieces.size() + (escapes ? escaped_pieces.size() : 0));
            list += pick < plain_pieces.size() ? plain_pieces[pick]
                                               : escaped_pieces[pick - plain_pieces.size()];
        }
        list += "]";
        const std::string text =
            "{" + std::string(pad, ' ') + "\"list\": " + list + ",\n \"after\": 1}";
        INFO(text);
        jg::json_document doc(text, 64, {"list"});
        const jg::json_value root = doc.root();
        REQUIRE(root.child_count == 2);
        CHECK(doc.child(root, 0).streamed);
        CHECK(doc.child(root, 0).child_count == elements);
        CHECK(doc.child(root, 1).line == 2 + newlines);
        size_t read = 0;
        doc.for_each_element({&doc.child(root, 0)},
                             [&](std::size_t, const jg::json_value&, std::size_t) { ++read; });
        CHECK(read == elements);
    }
    // A list that never closes (its strings and nested lists do) is still an error.
    const std::string unclosed = R"({"list": [")" + std::string(40, 'x') + R"(", [1, 2], "]"})";
    CHECK_THROWS_AS(jg::json_document(unclosed, 64, {"list"}), jg::json_syntax_error);
    // As is one whose last string never closes, in a block of its own or after one.
    for (const size_t length : {10, 70, 200}) {
        const std::string open_string = R"({"list": [1, ")" + std::string(length, 's') + "]}";
        CHECK_THROWS_AS(jg::json_document(open_string, 64, {"list"}), jg::json_syntax_error);
    }
}

TEST_CASE("json document: an error after a streamed list does not hide one inside it",
          "[json_graph][json_document]") {
    auto message_at = [](const std::string& text) {
        try {
            jg::json_document doc(text, 64, {"list"});
            doc.for_each_element({&doc.child(doc.root(), 0)}, [](auto, const auto&, auto) {});
        } catch (const jg::json_syntax_error& e) {
            return std::to_string(e.offset()) + ": " + e.what();
        }
        return std::string("accepted");
    };
    // The first error in the file is told, wherever the reader meets it first.
    CHECK(message_at(R"({"list": [1, 2,], "b": [1 2]})") == "15: unexpected ']'; expected a value");
    CHECK(message_at(R"({"list": [1, 2], "b": [1 2]})") ==
          "25: unexpected number; expected ',' or ']'");
    CHECK(message_at(R"({"list": [1, "2], "b": 3})") ==
          "19: unexpected literal 'b'; expected ',' or ']'");
    CHECK(message_at(R"({"list": [1, "2]})") ==
          "17: unexpected end of input inside the string at line 1, column 14");
    CHECK(message_at(R"({"list": [1, {"x": 1]], "b": 3})") ==
          "20: unexpected ']'; expected ',' or '}'");
    CHECK(message_at(R"({"list": [1, [2]], "b": 3})") == "accepted");
}

TEST_CASE("json document: accepts and reads what simdjson does, refuses what it refuses",
          "[json_graph][json_document]") {
    // Documents built from random pieces, then damaged at random: a differential check against
    // a conforming parser. This reader also refuses repeated keys and nesting beyond its limit,
    // which JSON itself allows.
    std::mt19937 random(20261128);
    const std::vector<std::string> scalars = {"0",
                                              "-0",
                                              "12",
                                              "-3.25",
                                              "1e3",
                                              "2E-2",
                                              "1.7976931348623157e308",
                                              "5e-324",
                                              "true",
                                              "false",
                                              "null",
                                              "\"\"",
                                              "\"a\\\"b\"",
                                              "\"\\u00e9\\ud83d\\ude00\"",
                                              "\"é\"",
                                              "18446744073709551615",
                                              "-9223372036854775808"};
    std::function<std::string(int)> value = [&](int depth) -> std::string {
        const unsigned pick = random() % 6;
        if (depth > 5 || pick < 3) return scalars[random() % scalars.size()];
        const std::size_t n = random() % 4;
        std::string s = pick == 3 ? "[" : "{";
        for (std::size_t k = 0; k < n; ++k) {
            if (k) s += random() % 2 ? "," : " ,\n ";
            if (pick != 3) s += "\"k" + std::to_string(k) + "\": ";
            s += value(depth + 1);
        }
        return s + (pick == 3 ? "]" : "}");
    };
    const std::string damage = "\"{}[],:-0.e\\ \x01\xff";
    std::size_t agreed_accept = 0, agreed_reject = 0;
    for (int round = 0; round < 3000; ++round) {
        std::string text = "{\"root\": " + value(0) + "}";
        const int edits = round % 3;
        for (int k = 0; k < edits; ++k) {
            const std::size_t at = random() % text.size();
            if (random() % 2)
                text[at] = damage[random() % damage.size()];
            else
                text.erase(at, 1);
        }
        INFO(text);
        const simdjson_verdict theirs = judge(text);
        const std::string mine = error_of(text);
        if (!theirs.accepted) {
            if (mine.empty() && theirs.error == simdjson::NUMBER_ERROR) {
                jg::json_document doc(text, 64);
                CHECK(holds_big_integer(doc, doc.root()));
                continue;
            }
            CHECK_FALSE(mine.empty());
            ++agreed_reject;
            continue;
        }
        if (theirs.duplicate_key || theirs.depth > 64) {
            CHECK_FALSE(mine.empty());
            continue;
        }
        REQUIRE(mine.empty());
        ++agreed_accept;
        jg::json_document doc(text, 64);
        simdjson::dom::parser parser;
        CHECK(same_value(doc, doc.root(), parser.parse(text).value()));
    }
    CHECK(agreed_accept > 500);
    CHECK(agreed_reject > 500);
}

TEST_CASE("json document: UTF-8 is judged as simdjson judges it, at every place in a block",
          "[json_graph][json_document]") {
    // Texts of ASCII with a few bytes from the edges of UTF-8's ranges put anywhere: the
    // sixteen- (or eight-) byte ASCII blocks must hand every other byte to the sequence check,
    // and the sequence check must refuse what RFC 3629 refuses (overlong forms, surrogates,
    // code points above U+10FFFF, stray or missing continuation bytes, a sequence cut by the end).
    const std::vector<std::string> pieces = {"\xc3\xa9",
                                             "\xe2\x82\xac",
                                             "\xf0\x9f\x98\x80",
                                             "\xf4\x8f\xbf\xbf",
                                             "\xed\x9f\xbf",
                                             "\xee\x80\x80",
                                             "\xc0\x80",
                                             "\xc1\xbf",
                                             "\xe0\x80\x80",
                                             "\xe0\x9f\xbf",
                                             "\xed\xa0\x80",
                                             "\xf0\x80\x80\x80",
                                             "\xf4\x90\x80\x80",
                                             "\xf5\x80\x80\x80",
                                             "\x80",
                                             "\xbf",
                                             "\xc3",
                                             "\xe2\x82",
                                             "\xff",
                                             "\x7f"};
    std::mt19937 random(20261207);
    std::size_t valid = 0, invalid = 0;
    for (int round = 0; round < 20000; ++round) {
        std::string text(random() % 70, 'a');
        for (unsigned k = random() % 3; k > 0 && !text.empty(); --k)
            text.insert(random() % (text.size() + 1), pieces[random() % pieces.size()]);
        if (random() % 4 == 0)
            text.insert(random() % (text.size() + 1), 1, static_cast<char>(random() % 256));
        const bool theirs = simdjson::validate_utf8(text.data(), text.size());
        INFO("round " << round << ", " << text.size() << " bytes");
        CHECK((jg::detail::first_ill_formed_utf8(text) == text.size()) == theirs);
        (theirs ? valid : invalid) += 1;
    }
    CHECK(valid > 3000);
    CHECK(invalid > 3000);
}

TEST_CASE("json document: strings are scanned eight bytes at a time without missing a byte",
          "[json_graph][json_document]") {
    // This file is built twice (tests/unit/CMakeLists.txt): with the machine's SSE2 loops and
    // without them, where 64-bit words are scanned instead.
#if defined(__SSE2__)
    CHECK(jg::detail::scan_width == 16);
#else
    CHECK(jg::detail::scan_width == (sizeof(void*) == 8 ? 8 : 0));
#endif
    // Every stopping byte at every position of a word and across words, after text that has
    // bytes just beside the ones looked for (0x21, 0x5b, 0x1f + 1, UTF-8 bytes above 0x80).
    const std::string filler = "a!#[]\x7f\xc3\xa9 ";
    for (std::size_t length = 0; length < 40; ++length) {
        std::string body;
        while (body.size() < length) body += filler[body.size() % filler.size()];
        // A UTF-8 sequence cut by the length would be ill-formed: end on whole characters.
        while (!body.empty() && (static_cast<unsigned char>(body.back()) & 0xc0) == 0x80 &&
               (static_cast<unsigned char>(body.back()) != 0xa9))
            body.pop_back();
        if (!body.empty() && static_cast<unsigned char>(body.back()) == 0xc3) body.pop_back();
        INFO("length " << body.size());
        // The documents read their text in place: it is kept for as long as they are.
        const std::string plain_text = "[\"" + body + "\"]";
        jg::json_document plain(plain_text, 64);
        CHECK(plain.child(plain.root(), 0).string == body);
        const std::string escaped_text = "[\"" + body + "\\\"x\"]";
        jg::json_document escaped(escaped_text, 64);
        CHECK(escaped.child(escaped.root(), 0).string == body + "\"x");
        CHECK(error_of("[\"" + body + "\x01\"]") ==
              "control character byte \\x01 inside a string (write it as an escape such as \\n)");
        // Stepped over: the quote that ends the string is found, escaped quotes are not it.
        const std::string listed_text = "{\"list\": [\"" + body + "\\\\\", \"" + body + "\\\"]\"]}";
        jg::json_document listed(listed_text, 64, {"list"});
        const jg::json_value list = listed.child(listed.root(), 0);
        CHECK(list.child_count == 2);
        std::vector<std::string> seen;
        listed.for_each_element({&list}, [&](std::size_t, const jg::json_value& e, std::size_t) {
            seen.emplace_back(e.string);
        });
        CHECK(seen == std::vector<std::string>{body + "\\", body + "\"]"});
    }
}
