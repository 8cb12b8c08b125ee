// SPDX-License-Identifier: Apache-2.0
#include "partition.hpp"

#include <algorithm>
#include <cstddef>

namespace nnergy::fusion {
namespace {

constexpr uint32_t k_none = 0xFFFFFFFFu;
// Steps one chain search may take before it gives up. Real rules need a few dozen; the cap only
// keeps a pathological rules file from making the search exponential.
constexpr size_t k_search_budget = 4096;

struct node_span {
    const uint32_t* first;
    const uint32_t* last;
    const uint32_t* begin() const noexcept { return first; }
    const uint32_t* end() const noexcept { return last; }
    size_t size() const noexcept { return static_cast<size_t>(last - first); }
    bool contains(uint32_t n) const noexcept { return std::find(first, last, n) != last; }
};

/// What the matcher needs of the graph, read once through the host API.
class graph_index {
public:
    graph_index(const sdk::graph_view& g, const rule_set& rules)
        : g_(g.handle()), count_(g.node_count()) {
        const nnergy_host_api& api = sdk::host();
        op_.resize(count_);
        offsets_.assign(count_ + 1, 0);
        feeds_output_.assign(count_, 0);
        constant_.assign(count_, 0);
        for (uint32_t n = 0; n < count_; ++n) {
            op_[n] = rules.op_id(g.domain(n), g.op_type(n));
            const std::string_view domain = g.domain(n);
            constant_[n] = (domain.empty() || domain == "ai.onnx") && g.op_type(n) == "Constant";
            const size_t begin = consumers_.size();
            const size_t outputs = api.node_output_count(g_, n);
            for (size_t i = 0; i < outputs; ++i) {
                const uint32_t t = api.node_output(g_, n, i);
                if (t == NNERGY_NO_TENSOR) continue;
                if (api.tensor_is_graph_output(g_, t)) feeds_output_[n] = 1;
                const size_t uses = api.tensor_consumer_count(g_, t);
                for (size_t j = 0; j < uses; ++j)
                    consumers_.push_back(api.tensor_consumer(g_, t, j));
            }
            // A node reading one tensor twice (Mul(x, x)) is one consumer.
            auto first = consumers_.begin() + static_cast<std::ptrdiff_t>(begin);
            std::sort(first, consumers_.end());
            consumers_.erase(std::unique(first, consumers_.end()), consumers_.end());
            offsets_[n + 1] = static_cast<uint32_t>(consumers_.size());
        }
        // A node computed from weights alone is a weight too: the classic ONNX exporter passes
        // a shared bias through an Identity, which must not turn a bias add into a residual one.
        // One pass in node order (ONNX keeps nodes sorted; an unsorted graph is only judged
        // more strictly).
        for (uint32_t n = 0; n < count_; ++n) {
            const size_t inputs = api.node_input_count(g_, n);
            bool from_weights = inputs > 0 && !constant_[n];
            for (size_t s = 0; s < inputs && from_weights; ++s) {
                const uint32_t t = api.node_input(g_, n, s);
                if (t == NNERGY_NO_TENSOR || api.tensor_is_initializer(g_, t)) continue;
                const uint32_t p = api.tensor_producer(g_, t);
                from_weights = p != NNERGY_NO_NODE && p < n && constant_[p] != 0;
            }
            if (from_weights) constant_[n] = 1;
        }
    }

    size_t size() const noexcept { return count_; }
    uint32_t op(uint32_t n) const noexcept { return op_[n]; }
    /// Distinct nodes reading any output of `n`.
    node_span consumers(uint32_t n) const noexcept {
        return {consumers_.data() + offsets_[n], consumers_.data() + offsets_[n + 1]};
    }
    bool feeds_graph_output(uint32_t n) const noexcept { return feeds_output_[n] != 0; }

    size_t input_count(uint32_t n) const { return sdk::host().node_input_count(g_, n); }
    /// The node producing input slot `slot` of `n`; k_none for a graph input or initializer.
    uint32_t input_producer(uint32_t n, size_t slot) const {
        const nnergy_host_api& api = sdk::host();
        const uint32_t t = api.node_input(g_, n, slot);
        if (t == NNERGY_NO_TENSOR) return k_none;
        const uint32_t p = api.tensor_producer(g_, t);
        return p == NNERGY_NO_NODE ? k_none : p;
    }

    /// True when every input of `n` that `producer` does not feed is an initializer or the
    /// output of a Constant node.
    bool other_inputs_weights(uint32_t n, uint32_t producer) const {
        const nnergy_host_api& api = sdk::host();
        const size_t inputs = api.node_input_count(g_, n);
        for (size_t s = 0; s < inputs; ++s) {
            const uint32_t t = api.node_input(g_, n, s);
            if (t == NNERGY_NO_TENSOR || api.tensor_is_initializer(g_, t)) continue;
            const uint32_t p = api.tensor_producer(g_, t);
            if (p == producer) continue;
            if (p == NNERGY_NO_NODE || constant_[p] == 0) return false;
        }
        return true;
    }

    /// True when `n` reads an activation (not an initializer) that `other` reads too.
    bool shares_activation(uint32_t n, uint32_t other) const {
        const nnergy_host_api& api = sdk::host();
        const size_t mine = api.node_input_count(g_, n);
        const size_t theirs = api.node_input_count(g_, other);
        for (size_t i = 0; i < mine; ++i) {
            const uint32_t t = api.node_input(g_, n, i);
            if (t == NNERGY_NO_TENSOR || api.tensor_is_initializer(g_, t)) continue;
            for (size_t j = 0; j < theirs; ++j)
                if (api.node_input(g_, other, j) == t) return true;
        }
        return false;
    }

    /// True when input slot `slot` of `n` is an output of `producer`.
    bool input_from(uint32_t n, int64_t slot, uint32_t producer) const {
        const nnergy_host_api& api = sdk::host();
        if (slot < 0 || static_cast<size_t>(slot) >= api.node_input_count(g_, n)) return false;
        const uint32_t t = api.node_input(g_, n, static_cast<size_t>(slot));
        return t != NNERGY_NO_TENSOR && api.tensor_producer(g_, t) == producer;
    }

    /// True when every output of `n` has integer values known at bind time (shape arithmetic
    /// that constant folding resolved), so running the graph would not compute it.
    bool outputs_constant(uint32_t n) const {
        const nnergy_host_api& api = sdk::host();
        bool any = false;
        const size_t outputs = api.node_output_count(g_, n);
        for (size_t i = 0; i < outputs; ++i) {
            const uint32_t t = api.node_output(g_, n, i);
            if (t == NNERGY_NO_TENSOR) continue;
            const int64_t* values = nullptr;
            size_t count = 0;
            if (!api.tensor_int_values(g_, t, &values, &count)) return false;
            any = true;
        }
        return any;
    }

private:
    const nnergy_graph* g_;
    size_t count_;
    std::vector<uint32_t> op_;
    std::vector<uint32_t> offsets_;
    std::vector<uint32_t> consumers_;
    std::vector<uint8_t> feeds_output_;
    std::vector<uint8_t> constant_;
};

/// Depth-first search for one rule's chain starting at a head node. Takes a position before
/// skipping it, so the first match found is the longest the graph allows.
class chain_matcher {
public:
    /// `lone` marks nodes alone in a kernel that no rule made: a `with` producer may be one.
    chain_matcher(const graph_index& g, const std::vector<uint32_t>& kernel_of,
                  const std::vector<uint8_t>& lone)
        : g_(g), kernel_of_(kernel_of), lone_(lone) {}

    bool match(const rule& r, uint32_t head, std::vector<uint32_t>& picked) {
        rule_ = &r;
        head_ = head;
        picked_ = &picked;
        budget_ = k_search_budget;
        picked.clear();
        return step(0);
    }

private:
    bool step(size_t pos) {
        if (budget_ == 0) return false;
        --budget_;
        std::vector<uint32_t>& picked = *picked_;
        const std::vector<position>& chain = rule_->chain;
        if (pos == chain.size()) return accept();
        const position& p = chain[pos];
        if (picked.empty()) {
            if (p.matches(g_.op(head_)) && take(p, head_, pos)) return true;
            return p.optional && step(pos + 1);
        }
        const uint32_t prev = picked.back();
        const node_span next = g_.consumers(prev);
        // Taking a node here makes `prev` an inner node, whose outputs must stay inside the
        // kernel: no graph output, and no more readers than nodes left to hold them.
        if (!g_.feeds_graph_output(prev) && next.size() <= room(pos)) {
            for (uint32_t c : next) {
                if (kernel_of_[c] != k_none || !p.matches(g_.op(c))) continue;
                if (p.input >= 0 && !g_.input_from(c, p.input, prev)) continue;
                if (p.weights && !g_.other_inputs_weights(c, prev)) continue;
                if (p.shares_input && !g_.shares_activation(c, prev)) continue;
                if (take(p, c, pos)) return true;
            }
        }
        return p.optional && step(pos + 1);
    }

    /// Takes `n` at position `pos` with its `with` producers, which go before it so that the
    /// last node picked stays the chain's, and goes on; undoes all of it on failure.
    bool take(const position& p, uint32_t n, size_t pos) {
        std::vector<uint32_t>& picked = *picked_;
        const size_t mark = picked.size();
        if (take_producers(p, n)) {
            picked.push_back(n);
            if (step(pos + 1)) return true;
        }
        picked.resize(mark);
        return false;
    }

    /// Each producer entry takes the first input of `n`, in slot order, whose producing node
    /// is not yet picked, matches the entry, is free or alone in a kernel no rule made, and
    /// whose outputs `n` alone reads (no graph output): so a producer never breaks closure, and
    /// an optional one that cannot join is simply left out. Greedy: entries that could each
    /// take the other's node are not tried both ways.
    bool take_producers(const position& p, uint32_t n) {
        std::vector<uint32_t>& picked = *picked_;
        for (const producer& w : p.with) {
            bool found = false;
            const size_t inputs = g_.input_count(n);
            for (size_t s = 0; s < inputs && !found; ++s) {
                const uint32_t q = g_.input_producer(n, s);
                if (q == k_none || !w.matches(g_.op(q))) continue;
                if (kernel_of_[q] != k_none && !lone_[q]) continue;
                if (g_.feeds_graph_output(q) || g_.consumers(q).size() != 1) continue;
                if (std::find(picked.begin(), picked.end(), q) != picked.end()) continue;
                picked.push_back(q);
                found = true;
            }
            if (!found && !w.optional) return false;
        }
        return true;
    }

    /// Nodes positions from `pos` on can still take: one each, plus their producers.
    size_t room(size_t pos) const {
        size_t n = 0;
        for (size_t i = pos; i < rule_->chain.size(); ++i) n += 1 + rule_->chain[i].with.size();
        return n;
    }

    /// Every node but the last must be read only inside the kernel: fusing never hides a
    /// tensor another kernel needs, and never copies a node into two kernels.
    bool accept() const {
        const std::vector<uint32_t>& picked = *picked_;
        if (picked.size() < rule_->min_nodes) return false;
        const node_span members{picked.data(), picked.data() + picked.size()};
        for (size_t i = 0; i + 1 < picked.size(); ++i) {
            if (g_.feeds_graph_output(picked[i])) return false;
            for (uint32_t c : g_.consumers(picked[i]))
                if (!members.contains(c)) return false;
        }
        return true;
    }

    const graph_index& g_;
    const std::vector<uint32_t>& kernel_of_;
    const std::vector<uint8_t>& lone_;
    const rule* rule_ = nullptr;
    uint32_t head_ = 0;
    std::vector<uint32_t>* picked_ = nullptr;
    size_t budget_ = 0;
};

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

/// A kernel's name: its head node's name, or "<op>_<index>" for an unnamed node.
std::string kernel_name(const sdk::graph_view& g, uint32_t head) {
    std::string_view name = g.node_name(head);
    if (!name.empty()) return std::string(name);
    return lower(g.op_type(head)) + "_" + std::to_string(head);
}

struct kernel_info {
    uint32_t head;
    int64_t rule;         ///< index of the chain rule that made it; -1 for a single node
    uint32_t core_begin;  ///< its chain nodes in core_nodes (rule >= 0)
    uint32_t core_size;
    uint32_t absorbed;
};

}  // namespace

std::vector<kernel_plan> plan_kernels(const sdk::graph_view& g, const rule_set* rules,
                                      plan_summary* summary) {
    plan_summary stats;
    const size_t count = g.node_count();
    std::vector<kernel_plan> plans;
    if (!rules) {
        plans.reserve(count);
        for (uint32_t n = 0; n < count; ++n)
            plans.push_back({kernel_name(g, n), lower(g.op_type(n)), {n}});
        if (summary) *summary = stats;
        return plans;
    }

    const graph_index index(g, *rules);

    // Rules worth trying at a node, by op: those whose first non-optional position (or an
    // optional one before it) accepts the op. Rule order is kept: the first match wins.
    std::vector<std::vector<uint32_t>> rules_by_op;
    for (uint32_t r = 0; r < rules->rules.size(); ++r) {
        for (const position& p : rules->rules[r].chain) {
            for (uint32_t op : p.ops) {
                if (rules_by_op.size() <= op) rules_by_op.resize(op + 1);
                auto& list = rules_by_op[op];
                if (list.empty() || list.back() != r) list.push_back(r);
            }
            if (!p.optional) break;
        }
    }

    std::vector<uint32_t> kernel_of(count, k_none);
    std::vector<uint8_t> lone(count, 0);
    std::vector<kernel_info> kernels;
    kernels.reserve(count);
    std::vector<uint32_t> core_nodes;
    std::vector<uint32_t> picked;
    chain_matcher matcher(index, kernel_of, lone);

    // Chains, heads taken in topological order: a node joins the first rule that matches at the
    // earliest node that can start a chain through it.
    for (uint32_t n = 0; n < count; ++n) {
        if (kernel_of[n] != k_none) continue;
        const uint32_t op = index.op(n);
        const auto k = static_cast<uint32_t>(kernels.size());
        if (op != k_no_op && op < rules_by_op.size()) {
            for (uint32_t r : rules_by_op[op]) {
                if (!matcher.match(rules->rules[r], n, picked)) continue;
                kernels.push_back({n, static_cast<int64_t>(r),
                                   static_cast<uint32_t>(core_nodes.size()),
                                   static_cast<uint32_t>(picked.size()), 0});
                for (uint32_t m : picked) {
                    // A `with` producer may leave the kernel it sat in alone; that kernel
                    // is left empty and never becomes a plan.
                    lone[m] = 0;
                    kernel_of[m] = k;
                    core_nodes.push_back(m);
                }
                ++stats.fused_kernels;
                stats.fused_nodes += picked.size();
                break;
            }
        }
        if (kernel_of[n] == k_none) {
            kernels.push_back({n, -1, 0, 0, 0});
            kernel_of[n] = k;
            lone[n] = 1;
        }
    }

    auto core_has = [&](const kernel_info& k, const std::vector<uint32_t>& ops) {
        auto has = [&](uint32_t node) {
            return std::binary_search(ops.begin(), ops.end(), index.op(node));
        };
        if (k.rule < 0) return has(k.head);
        for (uint32_t i = 0; i < k.core_size; ++i)
            if (has(core_nodes[k.core_begin + i])) return true;
        return false;
    };
    auto absorbable = [&](uint32_t n, const absorb_entry& e) {
        return e.matches_op(index.op(n)) && (!e.only_constant || index.outputs_constant(n));
    };

    // Absorption, in reverse topological order so that a run of layout ops (Shape -> Gather ->
    // Concat -> Reshape) folds step by step into the kernel that finally consumes it. A node
    // joins a kernel only when that kernel reads all its outputs, which keeps kernels acyclic.
    for (uint32_t n = static_cast<uint32_t>(count); n-- > 0;) {
        const uint32_t own = kernel_of[n];
        if (kernels[own].rule >= 0 || index.feeds_graph_output(n)) continue;
        const node_span readers = index.consumers(n);
        if (readers.size() == 0) continue;
        const uint32_t target = kernel_of[*readers.begin()];
        bool one_kernel = target != own;
        for (uint32_t c : readers) one_kernel = one_kernel && kernel_of[c] == target;
        if (!one_kernel) continue;
        for (const absorb_entry& e : rules->absorb) {
            if (!absorbable(n, e)) continue;
            if (!e.into.empty() && !core_has(kernels[target], e.into)) continue;
            kernel_of[n] = target;
            ++kernels[target].absorbed;
            ++stats.absorbed_nodes;
            break;
        }
    }

    // Views that several kernels read (shared = "producer"), in topological order so that a
    // run of them (Reshape -> Transpose) moves whole: a kernel made only of absorbed nodes
    // joins the one kernel producing every tensor it reads from other kernels. It then reads
    // nothing but that kernel's results, so no path can leave the merged kernel and come back.
    const bool any_shared = std::any_of(rules->absorb.begin(), rules->absorb.end(),
                                        [](const absorb_entry& e) { return e.shared_to_producer; });
    if (any_shared) {
        std::vector<std::vector<uint32_t>> members(kernels.size());
        for (uint32_t n = 0; n < count; ++n) members[kernel_of[n]].push_back(n);
        for (uint32_t n = 0; n < count; ++n) {
            const uint32_t own = kernel_of[n];
            kernel_info& info = kernels[own];
            if (info.rule >= 0 || info.head != n) continue;
            const bool shared = std::any_of(
                rules->absorb.begin(), rules->absorb.end(),
                [&](const absorb_entry& e) { return e.shared_to_producer && absorbable(n, e); });
            if (!shared) continue;
            uint32_t source = k_none;
            bool one_source = true;
            for (uint32_t m : members[own]) {
                const size_t inputs = index.input_count(m);
                for (size_t i = 0; i < inputs && one_source; ++i) {
                    const uint32_t q = index.input_producer(m, i);
                    if (q == k_none || kernel_of[q] == own) continue;
                    if (source == k_none) source = kernel_of[q];
                    one_source = kernel_of[q] == source;
                }
            }
            if (!one_source || source == k_none) continue;
            for (uint32_t m : members[own]) {
                kernel_of[m] = source;
                members[source].push_back(m);
            }
            kernels[source].absorbed += 1 + info.absorbed;
            ++stats.absorbed_nodes;
            members[own].clear();
        }
    }

    plans.reserve(kernels.size());
    std::vector<uint32_t> plan_of(kernels.size(), k_none);
    for (uint32_t n = 0; n < count; ++n) {
        const uint32_t k = kernel_of[n];
        if (plan_of[k] == k_none) {
            const kernel_info& info = kernels[k];
            plan_of[k] = static_cast<uint32_t>(plans.size());
            std::string pattern;
            if (info.rule >= 0) {
                pattern = rules->rules[static_cast<size_t>(info.rule)].name;
            } else if (info.absorbed > 0 && std::any_of(rules->absorb.begin(), rules->absorb.end(),
                                                        [&](const absorb_entry& e) {
                                                            return absorbable(info.head, e);
                                                        })) {
                pattern = rules->layout_pattern;  // layout ops that no single kernel reads
            } else {
                pattern = lower(g.op_type(info.head));
            }
            plans.push_back({kernel_name(g, info.head), std::move(pattern), {}});
        }
        plans[plan_of[k]].nodes.push_back(n);
    }
    if (summary) *summary = stats;
    return plans;
}

}  // namespace nnergy::fusion
