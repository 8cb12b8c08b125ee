// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cctype>
#include <nnergy/framework/suggest.hpp>
#include <tuple>
#include <utility>

namespace nnergy {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

size_t common_prefix(std::string_view a, std::string_view b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && lower(a[n]) == lower(b[n])) ++n;
    return n;
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
    // Three rows of the dynamic-programming table: a swap looks two rows back.
    const size_t m = b.size();
    std::vector<size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
    for (size_t j = 0; j <= m; ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= m; ++j) {
            const size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                lower(a[i - 2]) == lower(b[j - 1]))
                cur[j] = std::min(cur[j], prev2[j - 2] + 1);
        }
        std::swap(prev2, prev);
        std::swap(prev, cur);
    }
    return prev[m];
}

std::vector<std::string> closest_names(std::string_view name,
                                       const std::vector<std::string>& candidates, size_t max) {
    if (name.empty()) return {};
    // (rank, edits, name): a candidate that extends the name typed (`a100-sxm4-80gb` for
    // `a100-sxm4`) comes first, whatever its edit distance.
    std::vector<std::tuple<bool, size_t, std::string>> scored;
    for (const std::string& c : candidates) {
        if (c == name) continue;
        // Dotted names (plugins) are compared by their last part when the rest is the same, or
        // when only the last part was typed.
        std::string_view typed = name, known = c;
        const size_t name_dot = name.rfind('.'), dot = c.rfind('.');
        if (dot != std::string::npos && (name_dot == std::string_view::npos ||
                                         (name_dot == dot && common_prefix(name, c) > dot))) {
            typed = name.substr(name_dot == std::string_view::npos ? 0 : name_dot + 1);
            known = known.substr(dot + 1);
        }
        const size_t d = std::min(edit_distance(name, c), edit_distance(typed, known));
        const size_t limit = std::max<size_t>(1, typed.size() / 3);
        const size_t prefix = common_prefix(typed, known);
        if (d <= limit || (prefix >= 3 && 2 * prefix >= typed.size()))
            scored.emplace_back(common_prefix(name, c) < name.size(), d, c);
    }
    std::sort(scored.begin(), scored.end());
    scored.erase(std::unique(scored.begin(), scored.end()), scored.end());
    std::vector<std::string> out;
    for (auto& candidate : scored) {
        if (out.size() == max) break;
        out.push_back(std::move(std::get<2>(candidate)));
    }
    return out;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
    const std::vector<std::string> close = closest_names(name, candidates);
    if (close.empty()) return {};
    std::string out = " \u2014 did you mean ";
    for (size_t i = 0; i < close.size(); ++i) out += (i ? ", " : "") + close[i];
    return out + "?";
}

}  // namespace nnergy
