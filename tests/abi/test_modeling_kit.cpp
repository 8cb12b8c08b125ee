// SPDX-License-Identifier: Apache-2.0
// The modeling kit (<nnergy/modeling.hpp>) as a vendor compiles it: C++17, the SDK alone, no host.
#include <catch2/catch.hpp>
#include <nnergy/modeling.hpp>
#include <string>

namespace modeling = nnergy::modeling;

TEST_CASE("kit: op classes classify kernels from their anchor op and pattern") {
    CHECK(modeling::classify("Conv", "", 10, false, 1) == modeling::op_class::conv);
    CHECK(modeling::classify("Conv", "", 10, true, 32) == modeling::op_class::depthwise);
    CHECK(modeling::classify("MatMul", "attention", 10, false, 1) == modeling::op_class::attention);
    CHECK(modeling::classify("Relu", "", 0, false, 1) == modeling::op_class::elementwise);
    CHECK(modeling::class_name(modeling::op_class::gemv) == "gemv");
}

TEST_CASE("kit: occupancy counts waves and the busy fraction of the last one") {
    const modeling::occupancy o = modeling::compute_occupancy(300, 100, 2);
    CHECK(o.waves == 2);
    CHECK(o.utilization == Approx(0.75));
    CHECK(o.units_allocated == 100);
}

TEST_CASE("kit: the limiting term is the fixed cost only when it exceeds the work") {
    CHECK(modeling::limiting_term(2, 1, 0.5) == modeling::limit::compute);
    CHECK(modeling::limiting_term(1, 2, 0.5) == modeling::limit::memory);
    CHECK(modeling::limiting_term(1, 1, 0.5) == modeling::limit::compute);
    CHECK(modeling::limiting_term(1, 2, 3) == modeling::limit::overhead);
    CHECK(modeling::limiting_term(0, 0, 0) == modeling::limit::overhead);
}

TEST_CASE("kit: text helpers format like printf in the C locale") {
    CHECK(modeling::seconds_text(1.5e-6) == "1.5 us");
    CHECK(modeling::percent(0.5) == "50%");
    CHECK(modeling::short_number(1250) == "1250");
    CHECK(modeling::format("%d-%s", 3, "x") == "3-x");
    CHECK(modeling::bytes_scale(NNERGY_DTYPE_FLOAT32, NNERGY_DTYPE_FLOAT16) == 0.5);
    CHECK(modeling::bytes_scale(NNERGY_DTYPE_INT64, NNERGY_DTYPE_FLOAT16) == 1.0);
}

TEST_CASE("kit: same_text agrees with string comparison at every length and position") {
    // Lengths around the word sizes it compares (4 and 8 bytes), a difference at each byte.
    for (size_t n = 0; n <= 25; ++n) {
        const std::string a(n, 'x');
        std::string b = a;
        CHECK(modeling::same_text(a, b));
        for (size_t i = 0; i < n; ++i) {
            b = a;
            b[i] = 'y';
            CHECK_FALSE(modeling::same_text(a, b));
        }
        CHECK_FALSE(modeling::same_text(a, a + "x"));
    }
    CHECK(modeling::same_text("tensor_core.float16", "tensor_core.float16"));
    CHECK_FALSE(modeling::same_text("tensor_core.float16", "tensor_core.bfloat16"));
}

TEST_CASE("kit: printable keeps UTF-8 text and escapes other bytes and control characters") {
    CHECK(modeling::printable("conv1 'layer3.1' \xc3\xa9t\xc3\xa9 \xe2\x82\xac\n\t") ==
          "conv1 'layer3.1' \xc3\xa9t\xc3\xa9 \xe2\x82\xac\n\t");
    CHECK(modeling::printable("layer3.\xd6/relu") == "layer3.\\xd6/relu");  // a lone byte
    CHECK(modeling::printable("a\x01"
                              "b\x7f"
                              "c\r") == "a\\x01b\\x7fc\\x0d");
    CHECK(modeling::printable("\xc0\xaf") == "\\xc0\\xaf");           // an overlong '/'
    CHECK(modeling::printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
    CHECK(modeling::printable("\xe2\x82") == "\\xe2\\x82");           // cut short
    CHECK(modeling::printable(std::string_view("a\0b", 3)) == "a\\x00b");
    CHECK(modeling::utf8_sequence_length("\xf0\x9f\x98\x80", 0) == 4);
    CHECK(modeling::utf8_sequence_length("\xf4\x90\x80\x80", 0) == 0);  // above U+10FFFF
}

TEST_CASE("kit: recent_values derives a value once per named key and keeps the latest ones") {
    modeling::recent_values<int, int> values(2);
    int made = 0;
    auto make = [&](int x) { return [&made, x] { return ++made, x * 10; }; };
    CHECK(values.get(1, true, make(1)) == 10);
    CHECK(values.get(1, true, make(1)) == 10);
    CHECK(made == 1);
    // Unnamed (identity 0): derived every time, never kept.
    CHECK(values.get(7, false, make(7)) == 70);
    CHECK(values.get(7, false, make(7)) == 70);
    CHECK(made == 3);
    CHECK(values.get(2, true, make(2)) == 20);
    CHECK(values.get(3, true, make(3)) == 30);  // evicts 1, the oldest
    CHECK(made == 5);
    CHECK(values.get(3, true, make(3)) == 30);
    CHECK(made == 5);
    CHECK(values.get(1, true, make(1)) == 10);
    CHECK(made == 6);
}

TEST_CASE("kit: recent_values keeps values within a weight budget, oldest out first") {
    modeling::recent_values<int, int> values(100, 10);  // room for many, weighing 10 in all
    int made = 0;
    auto make = [&](int x) { return [&made, x] { return ++made, x; }; };
    auto weigh = [](int v) { return static_cast<size_t>(v); };  // a value weighs itself
    CHECK(values.get(4, true, make(4), weigh) == 4);
    CHECK(values.get(5, true, make(5), weigh) == 5);
    CHECK(values.get(4, true, make(4), weigh) == 4);
    CHECK(made == 2);                                 // 4 + 5 = 9: both kept
    CHECK(values.get(3, true, make(3), weigh) == 3);  // 12 > 10: 4, the oldest, goes
    CHECK(made == 3);
    CHECK(values.get(5, true, make(5), weigh) == 5);
    CHECK(values.get(3, true, make(3), weigh) == 3);
    CHECK(made == 3);
    CHECK(values.get(4, true, make(4), weigh) == 4);  // made again; 5 goes (3 + 4 = 7)
    CHECK(made == 4);
    CHECK(values.get(3, true, make(3), weigh) == 3);
    CHECK(made == 4);
    // Heavier than the whole budget: returned, not kept, and nothing else evicted for it.
    CHECK(values.get(11, true, make(11), weigh) == 11);
    CHECK(values.get(11, true, make(11), weigh) == 11);
    CHECK(made == 6);
    CHECK(values.get(3, true, make(3), weigh) == 3);
    CHECK(values.get(4, true, make(4), weigh) == 4);
    CHECK(made == 6);
}
