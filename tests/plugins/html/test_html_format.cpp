// SPDX-License-Identifier: Apache-2.0
// The HTML reporter's pure helpers: escaping, human numbers with units, coordinates and ticks.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "html_format.hpp"

using namespace nnergy::html;

namespace {
const double nan_v = std::numeric_limits<double>::quiet_NaN();
const double inf_v = std::numeric_limits<double>::infinity();
const std::string fffd = "\xEF\xBF\xBD";
}  // namespace

TEST_CASE("escape: markup characters become entities", "[html][escape]") {
    CHECK(escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
    CHECK(escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;");
    CHECK(escape("\" onmouseover=\"x") == "&quot; onmouseover=&quot;x");
    CHECK(escape("&amp;") == "&amp;amp;");  // already-escaped text is escaped again, not trusted
    CHECK(escape("") == "");
    CHECK(escape("plain.name_1/conv") == "plain.name_1/conv");
}

TEST_CASE("escape: valid UTF-8 kept, invalid bytes and controls replaced", "[html][escape]") {
    CHECK(escape("caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x98\x80") ==
          "caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x98\x80");
    CHECK(escape("a\xFF"
                 "b") == "a" + fffd + "b");                          // not a lead byte
    CHECK(escape("a\xC3") == "a" + fffd);                            // truncated sequence
    CHECK(escape("\xC0\xAF") == fffd + fffd);                        // overlong '/'
    CHECK(escape("\xED\xA0\x80") == fffd + fffd + fffd);             // surrogate U+D800
    CHECK(escape("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);  // above U+10FFFF
    CHECK(escape(std::string("a\0b", 3)) == "a" + fffd + "b");
    CHECK(escape("a\x1b[31mb") == "a" + fffd + "[31mb");
    CHECK(escape("\xC2\x85") == fffd);  // C1 control NEL
    CHECK(escape("tab\tnew\nline") == "tab\tnew\nline");
}

TEST_CASE("si: decimal prefixes from pico to exa with units", "[html][numbers]") {
    CHECK(si(0, "B") == "0 B");
    CHECK(si(512, "B") == "512 B");
    CHECK(si(1000, "B") == "1.00 kB");
    CHECK(si(999.4, "B") == "999 B");
    CHECK(si(999.6, "B") == "1.00 kB");  // rounds into the next prefix, never "1000 B"
    CHECK(si(5740544, "B") == "5.74 MB");
    CHECK(si(9.894e14, "FLOP/s") == "989 TFLOP/s");
    // Beyond exa: an exponent (it once indexed past the prefix table).
    CHECK(si(2.6754e299, "s") == "2.68e+299 s");
    CHECK(si(-1e21, "J") == "-1.00e+21 J");
    CHECK(si(999.6e18, "J") == "1.00e+21 J");
    CHECK(si(2.97145e12, "B/s") == "2.97 TB/s");
    CHECK(si(1.663e-6, "s") == "1.66 \xC2\xB5s");
    CHECK(si(0.0123, "J") == "12.3 mJ");
    CHECK(si(4.5e-10, "s") == "450 ps");
    CHECK(si(0.99996, "J") == "1.00 J");
    CHECK(si(0.0009996, "J") == "1.00 mJ");
    CHECK(si(-2500, "W") == "-2.50 kW");
    CHECK(si(12500) == "12.5k");
    CHECK(si(3e-16, "J") == "0.0003 pJ");  // below the smallest prefix: digits, not a wrong prefix
}

TEST_CASE("numbers never print nan or inf", "[html][numbers]") {
    for (double v : {nan_v, inf_v, -inf_v}) {
        CHECK(si(v, "J") == std::string(missing));
        CHECK(count(v) == std::string(missing));
        CHECK(seconds(v) == std::string(missing));
        CHECK(percent(v) == std::string(missing));
        CHECK(sort_key(v).empty());
        CHECK(coord(v) == "0");
    }
}

TEST_CASE("tick labels drop trailing zeros", "[html][numbers]") {
    CHECK(tick(1e16) == "10P");
    CHECK(tick(1e15) == "1P");
    CHECK(tick(100e12) == "100T");
    CHECK(tick(2500, "B") == "2.5 kB");
    CHECK(tick(0.05, "J") == "50 mJ");
    CHECK(tick(1.25e-6, "s") == "1.25 \xC2\xB5s");
    CHECK(tick(0, "J") == "0 J");
    CHECK(tick(0.1) == "100m");
    CHECK(tick(nan_v, "B") == std::string(missing));
}

TEST_CASE("count, seconds and percent", "[html][numbers]") {
    CHECK(count(0) == "0");
    CHECK(count(42) == "42");
    CHECK(count(1234) == "1.23k");
    CHECK(count(27497738) == "27.5M");
    CHECK(count(0.5) == "0.5");
    CHECK(count(67.69) == "67.7");
    CHECK(seconds(2.303e-5) == "23.0 \xC2\xB5s");
    CHECK(seconds(0.00123) == "1.23 ms");
    CHECK(seconds(2.05) == "2.05 s");
    CHECK(percent(0.78) == "78%");
    CHECK(percent(0.004) == "0.4%");
    CHECK(percent(0.0001) == "<0.1%");
    CHECK(percent(1) == "100%");
    CHECK(percent(0) == "0%");
}

TEST_CASE("sort keys order like the numbers", "[html][numbers]") {
    CHECK(std::stod(sort_key(1.663e-6)) == 1.663e-6);
    CHECK(std::stod(sort_key(0.1 + 0.2)) == 0.1 + 0.2);
    CHECK(std::stod(sort_key(9.894e14)) == 9.894e14);
    CHECK(std::stod(sort_key(-2.5e-300)) == -2.5e-300);
    CHECK(sort_key(0.5) == "0.5");
}

TEST_CASE("coordinates: one decimal, no trailing .0, no -0", "[html][numbers]") {
    CHECK(coord(12) == "12");
    CHECK(coord(12.34) == "12.3");
    CHECK(coord(-0.01) == "0");
    CHECK(coord(-3.26) == "-3.3");
    CHECK(coord(0.04) == "0");
    CHECK(coord(719.96) == "720");
    CHECK(coord(2e15) == "2000000000000000");
}

TEST_CASE("linear ticks: 1-2-5 steps covering the range", "[html][ticks]") {
    CHECK(linear_ticks(0, 10, 5) == std::vector<double>{0, 2, 4, 6, 8, 10});
    CHECK(linear_ticks(0, 1, 5) == std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0});
    CHECK(linear_ticks(0, 7.3, 5) == std::vector<double>{0, 2, 4, 6, 8});
    const std::vector<double> big = linear_ticks(0, 5740544, 5);
    REQUIRE(big.size() >= 2);
    CHECK(big.front() == 0);
    CHECK(big.back() >= 5740544);
    CHECK(big[1] == 2e6);
    // Every tick on the step's grid: no 0.30000000000000004.
    for (double t : linear_ticks(0, 0.9, 9)) CHECK(std::fabs(t * 10 - std::round(t * 10)) < 1e-9);
    CHECK(linear_ticks(3, 1, 2) == std::vector<double>{1, 2, 3});  // reversed bounds
    CHECK(linear_ticks(0, 0, 5) == std::vector<double>{0, 1});     // one value at zero
    const std::vector<double> one = linear_ticks(4, 4, 5);         // one value elsewhere
    REQUIRE(one.size() >= 2);
    CHECK(one.front() <= 4);
    CHECK(one.back() >= 4);
    CHECK(linear_ticks(nan_v, 1, 5).empty());
    CHECK(linear_ticks(0, inf_v, 5).empty());
}

TEST_CASE("log ticks: the decades around the range", "[html][ticks]") {
    CHECK(log_ticks(0.3, 2000) == std::vector<double>{0.1, 1, 10, 100, 1000, 10000});
    CHECK(log_ticks(1e3, 1e5) == std::vector<double>{1e3, 1e4, 1e5});
    CHECK(log_ticks(5, 5) == std::vector<double>{1, 10});  // at least two
    CHECK(log_ticks(0, 10).empty());
    CHECK(log_ticks(-1, 10).empty());
    CHECK(log_ticks(1, nan_v).empty());
    const std::vector<double> flops = log_ticks(1.2e9, 9.894e14);
    CHECK(flops.front() == 1e9);
    CHECK(flops.back() == 1e15);
}

TEST_CASE("scales map linearly and logarithmically", "[html][ticks]") {
    const scale lin{0, 10, 100, 200, false};
    CHECK(lin(5) == Approx(150));
    const scale down{0, 1, 300, 100, false};  // y grows upwards
    CHECK(down(1) == Approx(100));
    const scale lg{1, 1000, 0, 300, true};
    CHECK(lg(10) == Approx(100));
    CHECK(lg(1000) == Approx(300));
    const scale flat{5, 5, 0, 100, false};  // empty range: no nan
    CHECK(flat(5) == 0);
}
