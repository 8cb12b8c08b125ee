// SPDX-License-Identifier: Apache-2.0
#include "rules.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "onnx_ops.hpp"

namespace nnergy::fusion {

using sdk::from_sv;

bool position::matches(uint32_t op) const noexcept {
    return op != k_no_op && std::binary_search(ops.begin(), ops.end(), op);
}

bool producer::matches(uint32_t op) const noexcept {
    return op != k_no_op && std::binary_search(ops.begin(), ops.end(), op);
}

bool absorb_entry::matches_op(uint32_t op) const noexcept {
    return any_op || (op != k_no_op && std::binary_search(ops.begin(), ops.end(), op));
}

uint32_t rule_set::op_id(std::string_view domain, std::string_view op_type) const {
    if (domain.empty() || domain == "ai.onnx") {
        auto it = ids_.find(op_type);
        return it == ids_.end() ? k_no_op : it->second;
    }
    std::string key;
    key.reserve(domain.size() + 1 + op_type.size());
    key.append(domain).append(":").append(op_type);
    auto it = ids_.find(std::string_view(key));
    return it == ids_.end() ? k_no_op : it->second;
}

uint32_t rule_set::intern(const std::string& key) {
    auto [it, inserted] = ids_.try_emplace(key, static_cast<uint32_t>(ids_.size()));
    return it->second;
}

namespace {

using value = nnergy_named_value;

/// One dotted part of a flattened name: `chain[2]` is key "chain" with index {2}.
struct segment {
    std::string_view key;
    std::vector<size_t> index;
};

std::optional<std::vector<segment>> split_name(std::string_view name) {
    std::vector<segment> out;
    size_t pos = 0;
    while (pos <= name.size()) {
        size_t dot = name.find('.', pos);
        std::string_view part =
            name.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
        segment s;
        size_t bracket = part.find('[');
        s.key = part.substr(0, bracket);
        if (s.key.empty()) return std::nullopt;
        while (bracket != std::string_view::npos && bracket < part.size()) {
            size_t close = part.find(']', bracket);
            if (close == std::string_view::npos || close == bracket + 1) return std::nullopt;
            size_t n = 0;
            for (size_t i = bracket + 1; i < close; ++i) {
                char c = part[i];
                if (c < '0' || c > '9') return std::nullopt;
                n = n * 10 + static_cast<size_t>(c - '0');
            }
            s.index.push_back(n);
            bracket = close + 1;
            if (bracket < part.size() && part[bracket] != '[') return std::nullopt;
        }
        out.push_back(s);
        if (dot == std::string_view::npos) break;
        pos = dot + 1;
    }
    return out;
}

std::string name_of(const value& v) { return std::string(from_sv(v.name)); }

[[noreturn]] void fail(const value& v, const std::string& message) {
    throw sdk::error(sdk::config_view::where(v) + ": '" + name_of(v) + "': " + message);
}

std::string expect_string(const value& v) {
    if (v.kind != NNERGY_VALUE_STRING) fail(v, "must be a string");
    return std::string(from_sv(v.string_value));
}
bool expect_bool(const value& v) {
    if (v.kind != NNERGY_VALUE_BOOL) fail(v, "must be true or false");
    return v.bool_value;
}
int64_t expect_int(const value& v) {
    if (v.kind != NNERGY_VALUE_INT) fail(v, "must be an integer");
    return v.int_value;
}

bool is_identifier(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        if (!ok) return false;
    }
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

/// A string that came from the file, with the value it came from.
struct located {
    std::string text;
    const value* at = nullptr;
};

struct raw_producer {
    const value* first = nullptr;
    const value* op = nullptr;  // "A|B|@set"
    const value* optional = nullptr;
};

struct raw_position {
    const value* first = nullptr;
    std::vector<located> ops;  // each entry may hold "A|B|@set"
    bool op_as_array = false;
    bool op_as_string = false;
    const value* optional = nullptr;
    const value* input = nullptr;
    const value* weights = nullptr;
    const value* shares_input = nullptr;
    std::map<size_t, raw_producer> with;
};

struct raw_rule {
    const value* first = nullptr;
    const value* name = nullptr;
    const value* min_nodes = nullptr;
    std::map<size_t, raw_position> chain;
};

struct raw_absorb {
    const value* first = nullptr;
    std::vector<located> ops;
    const value* when = nullptr;
    const value* shared = nullptr;
    std::vector<located> into;
};

template <class T>
T& slot(std::map<size_t, T>& m, size_t i, const value& v) {
    T& t = m[i];
    if (!t.first) t.first = &v;
    return t;
}

/// Puts `token` into `list` at `index` (arrays arrive element by element, in order).
void put(std::vector<located>& list, size_t index, const value& v) {
    if (list.size() <= index) list.resize(index + 1);
    list[index] = located{expect_string(v), &v};
}

class reader {
public:
    explicit reader(std::string_view file) : file_(file) {}

    rule_set read(const sdk::config_view& values) {
        // The host may hand values over in key order; reading them in line order makes the
        // first error reported the first one in the file.
        std::vector<const value*> ordered;
        ordered.reserve(values.size());
        for (const value& v : values) ordered.push_back(&v);
        std::stable_sort(ordered.begin(), ordered.end(),
                         [](const value* a, const value* b) { return a->line < b->line; });
        for (const value* v : ordered) take(*v);
        return build();
    }

private:
    void take(const value& v) {
        // The host resolved the path; its spelling is the one to show in messages.
        if (!file_resolved_ && v.file.size) {
            file_ = std::string(from_sv(v.file));
            file_resolved_ = true;
        }
        auto segs = split_name(from_sv(v.name));
        if (!segs || segs->empty()) fail(v, "not a key this file format knows");
        const auto& s = *segs;
        const std::string_view top = s[0].key;
        if (top == "schema" && s.size() == 1 && s[0].index.empty()) {
            schema_ = &v;
        } else if (top == "description" && s.size() == 1 && s[0].index.empty()) {
            expect_string(v);
        } else if (top == "layout_pattern" && s.size() == 1 && s[0].index.empty()) {
            layout_pattern_ = &v;
        } else if (top == "sets") {
            take_set(v, s);
        } else if (top == "rules") {
            take_rule(v, s);
        } else if (top == "absorb") {
            take_absorb(v, s);
        } else {
            fail(v,
                 "unknown key (a rules file holds schema, description, layout_pattern, "
                 "[sets], [[rules]] and [[absorb]])");
        }
    }

    void take_set(const value& v, const std::vector<segment>& s) {
        if (!s[0].index.empty() || s.size() != 2 || s[1].index.size() != 1)
            fail(v, "a set is an array of op names: [sets] name = [\"Relu\", \"Tanh\"]");
        auto& set = sets_[std::string(s[1].key)];
        put(set, s[1].index[0], v);
    }

    void take_rule(const value& v, const std::vector<segment>& s) {
        if (s[0].index.size() != 1 || s.size() < 2)
            fail(v, "rules must be an array of tables ([[rules]])");
        raw_rule& r = slot(rules_, s[0].index[0], v);
        const segment& k = s[1];
        if (k.key == "name" && s.size() == 2 && k.index.empty()) {
            r.name = &v;
        } else if (k.key == "min_nodes" && s.size() == 2 && k.index.empty()) {
            r.min_nodes = &v;
        } else if (k.key == "description" && s.size() == 2 && k.index.empty()) {
            expect_string(v);
        } else if (k.key == "chain" && k.index.size() == 1) {
            raw_position& p = slot(r.chain, k.index[0], v);
            if (s.size() == 2) {
                // Shorthand: a string position is required and names its op(s).
                p.ops.push_back(located{expect_string(v), &v});
                p.op_as_string = true;
                return;
            }
            const segment& f = s[2];
            if (s.size() == 3 && f.key == "op" && f.index.empty()) {
                p.ops.push_back(located{expect_string(v), &v});
                p.op_as_string = true;
            } else if (s.size() == 3 && f.key == "op" && f.index.size() == 1) {
                put(p.ops, f.index[0], v);
                p.op_as_array = true;
            } else if (s.size() == 3 && f.key == "optional" && f.index.empty()) {
                expect_bool(v);
                p.optional = &v;
            } else if (s.size() == 3 && f.key == "input" && f.index.empty()) {
                expect_int(v);
                p.input = &v;
            } else if (s.size() == 3 && f.key == "weights" && f.index.empty()) {
                expect_bool(v);
                p.weights = &v;
            } else if (s.size() == 3 && f.key == "shares_input" && f.index.empty()) {
                expect_bool(v);
                p.shares_input = &v;
            } else if (f.key == "with" && f.index.size() == 1) {
                take_producer(v, s, slot(p.with, f.index[0], v));
            } else if (f.key == "with") {
                fail(v,
                     "with must be an array of producers (op names, or tables with op and "
                     "optional)");
            } else {
                fail(v,
                     "unknown key (a chain position is an op name, or a table with op, "
                     "optional, input, weights, shares_input and with)");
            }
        } else if (k.key == "chain") {
            fail(v, "chain must be an array of positions");
        } else {
            fail(v, "unknown key (a rule has name, chain, min_nodes and description)");
        }
    }

    /// chain[i].with[j]: "A|B" (a required producer) or { op = "A|B", optional = true }.
    static void take_producer(const value& v, const std::vector<segment>& s, raw_producer& w) {
        if (s.size() == 3) {
            expect_string(v);
            w.op = &v;
            return;
        }
        const segment& f = s[3];
        if (s.size() == 4 && f.key == "op" && f.index.empty()) {
            expect_string(v);
            w.op = &v;
        } else if (s.size() == 4 && f.key == "optional" && f.index.empty()) {
            expect_bool(v);
            w.optional = &v;
        } else {
            fail(v, "unknown key (a producer is an op name, or a table with op and optional)");
        }
    }

    void take_absorb(const value& v, const std::vector<segment>& s) {
        if (s[0].index.size() != 1 || s.size() != 2)
            fail(v,
                 "absorb must be an array of tables ([[absorb]]) with ops, when, into, shared "
                 "and description");
        raw_absorb& a = slot(absorbs_, s[0].index[0], v);
        const segment& k = s[1];
        if (k.key == "ops" && k.index.size() == 1) {
            put(a.ops, k.index[0], v);
        } else if (k.key == "into" && k.index.size() == 1) {
            put(a.into, k.index[0], v);
        } else if (k.key == "when" && k.index.empty()) {
            a.when = &v;
        } else if (k.key == "shared" && k.index.empty()) {
            a.shared = &v;
        } else if (k.key == "description" && k.index.empty()) {
            expect_string(v);
        } else if ((k.key == "ops" || k.key == "into") && k.index.empty()) {
            fail(v, "must be an array of op names");
        } else {
            fail(v, "unknown key (an absorb entry has ops, when, into, shared and description)");
        }
    }

    /// Expands "A|B|@set" into op ids. Op names are checked against the ONNX operator list;
    /// ops of other domains are written "domain:Op".
    void resolve(const located& l, rule_set& out, std::vector<uint32_t>& ids, bool allow_sets) {
        std::string_view text = l.text;
        if (trim(text).empty()) fail(*l.at, "empty op name");
        size_t pos = 0;
        while (pos <= text.size()) {
            size_t bar = text.find('|', pos);
            std::string_view token = trim(text.substr(
                pos, bar == std::string_view::npos ? std::string_view::npos : bar - pos));
            if (token.empty()) fail(*l.at, "empty op name in '" + l.text + "'");
            if (token.front() == '@') {
                if (!allow_sets) fail(*l.at, "a set cannot refer to another set");
                std::string set_name(token.substr(1));
                auto it = sets_.find(set_name);
                if (it == sets_.end())
                    fail(*l.at, "unknown set '@" + set_name + "'" + known_sets());
                for (const located& member : it->second)
                    if (member.at) resolve(member, out, ids, false);
            } else {
                ids.push_back(out.intern(checked_op(token, l)));
            }
            if (bar == std::string_view::npos) break;
            pos = bar + 1;
        }
    }

    std::string checked_op(std::string_view token, const located& l) const {
        size_t colon = token.rfind(':');
        if (colon != std::string_view::npos) {
            std::string_view domain = token.substr(0, colon);
            std::string_view op = token.substr(colon + 1);
            if (!is_identifier(domain) || !is_identifier(op))
                fail(*l.at, "'" + std::string(token) + "' is not of the form domain:Op");
            if (domain == "ai.onnx") return checked_op(op, l);
            return std::string(token);
        }
        if (!is_onnx_op(token))
            fail(*l.at, "unknown op type '" + std::string(token) +
                            "' (not an ONNX operator; ops of other domains are written "
                            "'domain:Op')");
        return std::string(token);
    }

    std::string known_sets() const {
        if (sets_.empty()) return " (this file defines no [sets])";
        std::string s = " (defined: ";
        bool first = true;
        for (const auto& [name, members] : sets_) {
            s += (first ? "@" : ", @") + name;
            first = false;
        }
        return s + ")";
    }

    static void sort_unique(std::vector<uint32_t>& ids) {
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }

    static void check_pattern_name(const value& v, const std::string& name) {
        if (!is_identifier(name))
            fail(v, "'" + name + "' is not a valid pattern name (letters, digits, '_', '-', '.')");
    }

    rule_set build() {
        rule_set out;
        out.file = file_;
        if (!schema_)
            throw sdk::error(file_ + ": missing schema = \"" + std::string(k_schema) +
                             "\" (is this a fusion rules file?)");
        if (expect_string(*schema_) != k_schema)
            fail(*schema_, "unsupported schema '" + expect_string(*schema_) +
                               "' (this plugin reads \"" + std::string(k_schema) + "\")");
        if (layout_pattern_) {
            out.layout_pattern = expect_string(*layout_pattern_);
            check_pattern_name(*layout_pattern_, out.layout_pattern);
        }
        for (const auto& [name, members] : sets_) {
            for (const located& m : members) {
                if (!m.at) continue;
                if (!m.text.empty() && m.text.front() == '@')
                    fail(*m.at, "a set cannot refer to another set");
                std::vector<uint32_t> ignored;
                resolve(m, out, ignored, false);
            }
        }
        size_t expected = 0;
        for (const auto& [index, raw] : rules_) {
            if (index != expected)  // an empty [[rules]] table leaves a gap
                throw sdk::error(sdk::config_view::where(*raw.first) + ": rules[" +
                                 std::to_string(expected) + "] is an empty table");
            ++expected;
            const std::string label = "rules[" + std::to_string(index) + "]";
            rule r;
            r.where = sdk::config_view::where(*raw.first);
            if (!raw.name)
                throw sdk::error(r.where + ": " + label + ": missing 'name' (the pattern name)");
            r.name = expect_string(*raw.name);
            check_pattern_name(*raw.name, r.name);
            r.where = sdk::config_view::where(*raw.name);
            if (raw.chain.empty())
                throw sdk::error(r.where + ": " + label + " '" + r.name +
                                 "': missing or empty 'chain' (a list of op positions)");
            size_t expected_pos = 0;
            // A position whose predecessors are all optional can start a match, and then has
            // no previous node for 'weights' or 'shares_input' to refer to.
            bool can_start = true;
            const auto no_previous = [&](const value& v, std::string_view key, size_t pi) {
                fail(v, pi == 0 ? "the first position has no previous node for '" +
                                      std::string(key) + "' to refer to"
                                : "every position before this one is optional, so a match can "
                                  "start here with no previous node for '" +
                                      std::string(key) + "' to refer to");
            };
            for (const auto& [pi, rp] : raw.chain) {
                if (pi != expected_pos)  // an empty inline table leaves a gap
                    throw sdk::error(r.where + ": " + label + ".chain[" +
                                     std::to_string(expected_pos) + "]: position has no 'op'");
                ++expected_pos;
                const std::string plabel = label + ".chain[" + std::to_string(pi) + "]";
                position p;
                if (rp.op_as_array && rp.op_as_string) fail(*rp.first, "op is given twice");
                bool any = false;
                for (const located& l : rp.ops) {
                    if (!l.at) continue;
                    any = true;
                    resolve(l, out, p.ops, true);
                }
                if (!any)
                    throw sdk::error(sdk::config_view::where(*rp.first) + ": " + plabel +
                                     ": missing 'op' (the op type(s) allowed here)");
                sort_unique(p.ops);
                if (rp.optional) p.optional = rp.optional->bool_value;
                if (rp.input) {
                    p.input = rp.input->int_value;
                    if (p.input < 0) fail(*rp.input, "must be 0 or more (an input slot)");
                    // A head taken without its optional predecessors ignores 'input': the
                    // shipped rules rely on that. 'weights' and 'shares_input' would change
                    // what matches, so they are refused where a match can start.
                    if (pi == 0) no_previous(*rp.input, "input", pi);
                }
                if (rp.weights) {
                    p.weights = rp.weights->bool_value;
                    if (p.weights && can_start) no_previous(*rp.weights, "weights", pi);
                }
                if (rp.shares_input) {
                    p.shares_input = rp.shares_input->bool_value;
                    if (p.shares_input && can_start)
                        no_previous(*rp.shares_input, "shares_input", pi);
                }
                size_t expected_with = 0;
                for (const auto& [wi, rw] : rp.with) {
                    const std::string wlabel =
                        plabel + ".with[" + std::to_string(std::min(wi, expected_with)) + "]";
                    if (wi != expected_with || !rw.op)
                        throw sdk::error(sdk::config_view::where(*rw.first) + ": " + wlabel +
                                         ": missing 'op' (the op type(s) of the producer)");
                    ++expected_with;
                    producer w;
                    resolve(located{expect_string(*rw.op), rw.op}, out, w.ops, true);
                    sort_unique(w.ops);
                    if (rw.optional) w.optional = rw.optional->bool_value;
                    p.with.push_back(std::move(w));
                }
                can_start = can_start && p.optional;
                r.chain.push_back(std::move(p));
            }
            r.min_nodes = std::min<size_t>(2, r.chain.size());
            if (raw.min_nodes) {
                int64_t m = expect_int(*raw.min_nodes);
                if (m < 1 || static_cast<size_t>(m) > r.chain.size())
                    fail(*raw.min_nodes, "must be between 1 and the chain length (" +
                                             std::to_string(r.chain.size()) + ")");
                r.min_nodes = static_cast<size_t>(m);
            }
            out.rules.push_back(std::move(r));
        }
        expected = 0;
        for (const auto& [index, raw] : absorbs_) {
            const std::string label = "absorb[" + std::to_string(index) + "]";
            const std::string where = sdk::config_view::where(*raw.first);
            if (index != expected)
                throw sdk::error(where + ": absorb[" + std::to_string(expected) +
                                 "] is an empty table");
            ++expected;
            absorb_entry a;
            bool any = false;
            for (const located& l : raw.ops) {
                if (!l.at) continue;
                any = true;
                if (trim(l.text) == "*") {
                    a.any_op = true;
                    continue;
                }
                resolve(l, out, a.ops, true);
            }
            if (!any)
                throw sdk::error(where + ": " + label + ": missing 'ops' (op names, or \"*\")");
            if (a.any_op && !a.ops.empty())
                fail(*raw.first, "\"*\" already means every op; list no others beside it");
            sort_unique(a.ops);
            if (raw.when) {
                std::string when = expect_string(*raw.when);
                if (when == "constant")
                    a.only_constant = true;
                else if (when != "always")
                    fail(*raw.when, "must be \"always\" or \"constant\", not '" + when + "'");
            }
            if (raw.shared) {
                std::string shared = expect_string(*raw.shared);
                if (shared == "producer")
                    a.shared_to_producer = true;
                else if (shared != "keep")
                    fail(*raw.shared, "must be \"keep\" or \"producer\", not '" + shared + "'");
            }
            for (const located& l : raw.into)
                if (l.at) resolve(l, out, a.into, true);
            sort_unique(a.into);
            out.absorb.push_back(std::move(a));
        }
        if (out.rules.empty() && out.absorb.empty())
            throw sdk::error(file_ + ": defines no [[rules]] and no [[absorb]] entries");
        return out;
    }

    std::string file_;
    bool file_resolved_ = false;
    const value* schema_ = nullptr;
    const value* layout_pattern_ = nullptr;
    std::map<std::string, std::vector<located>> sets_;
    std::map<size_t, raw_rule> rules_;
    std::map<size_t, raw_absorb> absorbs_;
};

}  // namespace

rule_set parse_rules(const sdk::config_view& values, std::string_view file) {
    return reader(file).read(values);
}

}  // namespace nnergy::fusion
