// SPDX-License-Identifier: Apache-2.0
// The graph IR: building, validation and the stable topological sort.
#include <algorithm>
#include <array>
#include <functional>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/graph.hpp>
#include <nnergy/modeling/text.hpp>
#include <queue>
#include <string>

#include "op_rules.hpp"

namespace nnergy {

namespace {

std::string where(const graph& g) {
    if (!g.source_path.empty()) return g.source_path;
    return g.name.empty() ? std::string("<model>") : g.name;
}

std::string quoted(std::string_view s) {
    std::string out = "'";
    out += s;
    out += '\'';
    return out;
}

/// Rebuilds the name index of `g.tensors`, rejecting duplicate names.
void index_tensors(const graph& g, tensor_name_index& index) {
    const uint32_t twice = index.build(g.tensors);
    if (twice != tensor_name_index::absent)
        throw error(where(g) + ": tensor " + quoted(g.tensors[twice].name) +
                    " is defined twice (tensor names must be unique)");
}

/// "node 'conv1' (Conv)"
std::string node_label(const node& n, uint32_t index) {
    std::string s = "node ";
    if (n.name.empty()) {
        s += '#';
        s += std::to_string(index);
    } else {
        s += quoted(n.name);
    }
    s += " (";
    if (!n.domain.empty() && n.domain != "ai.onnx") s += n.domain + ".";
    s += n.op_type + ")";
    return s;
}

}  // namespace

// ---- node attributes ----

const attribute* node::find_attribute(std::string_view attr_name) const noexcept {
    for (const attribute& a : attributes)
        if (a.name == attr_name) return &a;
    return nullptr;
}

std::optional<int64_t> node::attr_int(std::string_view attr_name) const noexcept {
    const attribute* a = find_attribute(attr_name);
    if (!a) return std::nullopt;
    if (const auto* v = std::get_if<int64_t>(&a->value)) return *v;
    return std::nullopt;
}

std::optional<double> node::attr_float(std::string_view attr_name) const noexcept {
    const attribute* a = find_attribute(attr_name);
    if (!a) return std::nullopt;
    if (const auto* v = std::get_if<double>(&a->value)) return *v;
    // A JSON writer may drop the fraction of a whole number ("alpha": 1).
    if (const auto* v = std::get_if<int64_t>(&a->value)) return static_cast<double>(*v);
    return std::nullopt;
}

const std::string* node::attr_string(std::string_view attr_name) const noexcept {
    const attribute* a = find_attribute(attr_name);
    return a ? std::get_if<std::string>(&a->value) : nullptr;
}

const std::vector<int64_t>* node::attr_ints(std::string_view attr_name) const noexcept {
    const attribute* a = find_attribute(attr_name);
    return a ? std::get_if<std::vector<int64_t>>(&a->value) : nullptr;
}

// ---- the tensor name index ----

namespace {
uint32_t name_hash(std::string_view name) noexcept {
    const uint64_t h = modeling::name_hash(name);
    return static_cast<uint32_t>(h ^ (h >> 32));
}
}  // namespace

std::size_t tensor_name_index::probe(const std::vector<tensor>& tensors, uint32_t h,
                                     std::string_view name) const noexcept {
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = h & mask;
    while (slots_[at].index != absent &&
           !(slots_[at].hash == h && tensors[slots_[at].index].name == name))
        at = (at + 1) & mask;
    return at;
}

uint32_t tensor_name_index::build(const std::vector<tensor>& tensors) {
    // A power of two, at most three quarters full.
    std::size_t slot_count = 16;
    while (3 * slot_count < 4 * tensors.size()) slot_count *= 2;
    slots_.assign(slot_count, slot{});
    count_ = 0;
    // On a large graph the table outgrows the caches and each insertion waits for memory: the
    // slots of the names `ahead` places on are requested while this one is placed, so that
    // those waits overlap. Names are read in order.
    constexpr std::size_t ahead = 16;
    std::array<uint32_t, ahead> hashes{};
    const std::size_t n = tensors.size();
    const std::size_t mask = slots_.size() - 1;
    const auto request = [&](std::size_t i) {
        const uint32_t h = name_hash(tensors[i].name);
        hashes[i % ahead] = h;
        __builtin_prefetch(&slots_[h & mask], 1);
    };
    for (std::size_t i = 0; i < std::min(n, ahead); ++i) request(i);
    for (std::size_t i = 0; i < n; ++i) {
        const uint32_t h = hashes[i % ahead];
        if (i + ahead < n) request(i + ahead);
        const std::string_view name = tensors[i].name;
        slot& s = slots_[probe(tensors, h, name)];
        if (s.index != absent) return static_cast<uint32_t>(i);
        s = slot{h, static_cast<uint32_t>(i)};
        ++count_;
    }
    return absent;
}

uint32_t tensor_name_index::find(const std::vector<tensor>& tensors,
                                 std::string_view name) const noexcept {
    if (slots_.empty()) return absent;
    return slots_[probe(tensors, name_hash(name), name)].index;
}

// ---- building ----

void graph::reserve(std::size_t tensor_count, std::size_t node_count) {
    tensors.reserve(tensor_count);
    nodes.reserve(node_count);
}

uint32_t graph::add_tensor(tensor t) {
    if (t.name.empty()) throw error(where(*this) + ": a tensor has an empty name");
    // Not indexed here: finalize() indexes every name at once (and rejects a duplicate), which
    // overlaps the waits for memory that indexing them one by one makes in turn.
    const auto index = static_cast<uint32_t>(tensors.size());
    tensors.push_back(std::move(t));
    finalized_ = false;
    return index;
}

uint32_t graph::add_node(node n) {
    const auto describe = [&] {
        return where(*this) + ": node " + quoted(n.name) + " (" + n.op_type + ")";
    };
    for (uint32_t t : n.inputs)
        if (t != NNERGY_NO_TENSOR && t >= tensors.size())
            throw error(describe() + ": input tensor index " + std::to_string(t) +
                        " is out of range (" + std::to_string(tensors.size()) + " tensors)");
    for (uint32_t t : n.outputs)
        if (t != NNERGY_NO_TENSOR && t >= tensors.size())
            throw error(describe() + ": output tensor index " + std::to_string(t) +
                        " is out of range (" + std::to_string(tensors.size()) + " tensors)");
    nodes.push_back(std::move(n));
    finalized_ = false;
    return static_cast<uint32_t>(nodes.size() - 1);
}

std::optional<uint32_t> graph::find_tensor(std::string_view tensor_name) const {
    if (tensor_index_.size() == tensors.size()) {
        const uint32_t found = tensor_index_.find(tensors, tensor_name);
        if (found != tensor_name_index::absent) return found;
        return std::nullopt;
    }
    for (uint32_t i = 0; i < tensors.size(); ++i)
        if (tensors[i].name == tensor_name) return i;
    return std::nullopt;
}

std::string graph::describe_node(uint32_t index) const {
    std::string s = where(*this);
    if (index >= nodes.size()) return s + ": node #" + std::to_string(index);
    const node& n = nodes[index];
    if (n.source_line > 0) {
        s += ':';
        s += std::to_string(n.source_line);
    }
    return s + ": " + node_label(n, index);
}

// ---- validation and sorting ----

void consumer_lists::build(const std::vector<node>& nodes, std::size_t tensor_count) {
    // Two passes: count, then place. `last` is the node that last read each tensor, so that a
    // node reading a tensor twice is listed once (nodes are visited in order).
    start_.assign(tensor_count + 1, 0);
    std::vector<uint32_t> last(tensor_count, NNERGY_NO_NODE);
    const uint32_t node_count = static_cast<uint32_t>(nodes.size());
    for (uint32_t i = 0; i < node_count; ++i)
        for (uint32_t t : nodes[i].inputs)
            if (t != NNERGY_NO_TENSOR && last[t] != i) {
                last[t] = i;
                ++start_[t + 1];
            }
    for (std::size_t t = 0; t < tensor_count; ++t) start_[t + 1] += start_[t];
    nodes_.resize(start_[tensor_count]);
    std::vector<uint32_t> next(start_.begin(), start_.end() - 1);
    std::fill(last.begin(), last.end(), NNERGY_NO_NODE);
    for (uint32_t i = 0; i < node_count; ++i)
        for (uint32_t t : nodes[i].inputs)
            if (t != NNERGY_NO_TENSOR && last[t] != i) {
                last[t] = i;
                nodes_[next[t]++] = i;
            }
}

void graph::finalize() {
    finalized_ = false;
    const size_t tensor_count = tensors.size();
    const size_t node_count = nodes.size();
    const std::string file = where(*this);
    const auto tname = [&](uint32_t t) { return quoted(tensors[t].name); };
    if (tensor_index_.size() != tensor_count) index_tensors(*this, tensor_index_);

    // Compact flags: the checks below touch tensors in random order, and the tensor structs
    // are large enough for that to miss the cache on big graphs.
    std::vector<uint8_t> is_input(tensor_count, 0);
    std::vector<uint8_t> is_init(tensor_count, 0);
    for (uint32_t t = 0; t < tensor_count; ++t) is_init[t] = tensors[t].is_initializer ? 1 : 0;
    for (uint32_t t : inputs) {
        if (t >= tensor_count)
            throw error(file + ": graph input index " + std::to_string(t) + " is out of range");
        if (is_input[t]) throw error(file + ": graph input " + tname(t) + " is listed twice");
        is_input[t] = 1;
        if (tensors[t].dtype == NNERGY_DTYPE_UNDEFINED)
            throw error(file + ": graph input " + tname(t) + " has no element type");
    }
    for (uint32_t t = 0; t < tensor_count; ++t)
        if (is_init[t] && tensors[t].dtype == NNERGY_DTYPE_UNDEFINED)
            throw error(file + ": initializer " + tname(t) + " has no element type");

    // Producers, in file order; the node indices are still the frontend's.
    producer_.assign(tensor_count, NNERGY_NO_NODE);
    for (uint32_t i = 0; i < node_count; ++i) {
        for (uint32_t t : nodes[i].outputs) {
            if (t == NNERGY_NO_TENSOR) continue;
            if (t >= tensor_count)
                throw error(describe_node(i) + ": output tensor index " + std::to_string(t) +
                            " is out of range");
            if (producer_[t] == i)
                throw error(describe_node(i) + ": lists output " + tname(t) + " twice");
            if (producer_[t] != NNERGY_NO_NODE)
                throw error(describe_node(i) + ": output " + tname(t) + " is also produced by " +
                            node_label(nodes[producer_[t]], producer_[t]) +
                            " (a tensor has exactly one producer)");
            if (is_input[t] || is_init[t])
                throw error(describe_node(i) + ": output " + tname(t) + " is a graph " +
                            (is_input[t] ? "input" : "initializer") +
                            " (inputs and initializers are never produced by nodes)");
            producer_[t] = i;
        }
    }
    const auto is_source = [&](uint32_t t) {
        return producer_[t] != NNERGY_NO_NODE || is_input[t] || is_init[t];
    };
    // Dangling inputs; and whether the file is already in topological order, the common case,
    // in which every producer comes before its consumers and there can be no cycle. Consumers
    // are listed once the order is final.
    bool sorted = true;
    for (uint32_t i = 0; i < node_count; ++i) {
        for (uint32_t t : nodes[i].inputs) {
            if (t == NNERGY_NO_TENSOR) continue;
            if (t >= tensor_count)
                throw error(describe_node(i) + ": input tensor index " + std::to_string(t) +
                            " is out of range");
            if (!is_source(t))
                throw error(describe_node(i) + ": input " + tname(t) +
                            " is not produced by any node, not a graph input and not an "
                            "initializer");
            sorted = sorted && (producer_[t] == NNERGY_NO_NODE || producer_[t] < i);
        }
    }
    {
        std::vector<uint8_t> is_output(tensor_count, 0);
        for (uint32_t t : outputs) {
            if (t >= tensor_count)
                throw error(file + ": graph output index " + std::to_string(t) +
                            " is out of range");
            if (is_output[t]) throw error(file + ": graph output " + tname(t) + " is listed twice");
            is_output[t] = 1;
            if (!is_source(t))
                throw error(file + ": graph output " + tname(t) +
                            " is not produced by any node, not a graph input and not an "
                            "initializer");
        }
    }
    if (!sorted) sort_nodes();
    consumers_.build(nodes, tensor_count);
    opset_ = 0;
    for (const auto& [key, value] : metadata) {
        if (key != "opset") continue;
        // Digits only: the frontends write a plain decimal number.
        int64_t v = 0;
        bool ok = !value.empty() && value.size() <= 9;
        for (char ch : value) {
            ok = ok && ch >= '0' && ch <= '9';
            if (ok) v = v * 10 + (ch - '0');
        }
        if (!ok || v < 1)
            throw error(file + ": metadata opset '" + value +
                        "' is not a default-domain opset number");
        if (v > detail::newest_opset)
            throw error(file + ": opset " + value +
                        " of the default ONNX domain is newer than the newest the host knows (" +
                        std::to_string(detail::newest_opset) + ")");
        opset_ = v;
    }
    dtype_ = detail::infer_dtypes(*this, &op_version_);
    finalized_ = true;
}

void graph::sort_nodes() {
    const size_t tensor_count = tensors.size();
    const size_t node_count = nodes.size();
    // Consumer slots in CSR form for Kahn's algorithm.
    std::vector<uint32_t> slot_start(tensor_count + 1, 0);
    std::vector<uint32_t> in_degree(node_count, 0);
    for (uint32_t i = 0; i < node_count; ++i) {
        for (uint32_t t : nodes[i].inputs) {
            if (t != NNERGY_NO_TENSOR && producer_[t] != NNERGY_NO_NODE) {
                ++slot_start[t + 1];
                ++in_degree[i];
            }
        }
    }
    for (size_t t = 0; t < tensor_count; ++t) slot_start[t + 1] += slot_start[t];
    std::vector<uint32_t> slot_node(slot_start[tensor_count]);
    {
        std::vector<uint32_t> fill(slot_start.begin(), slot_start.end() - 1);
        for (uint32_t i = 0; i < node_count; ++i)
            for (uint32_t t : nodes[i].inputs)
                if (t != NNERGY_NO_TENSOR && producer_[t] != NNERGY_NO_NODE)
                    slot_node[fill[t]++] = i;
    }

    // Kahn's algorithm; the ready node earliest in the file goes first, which keeps the file
    // order wherever it is already topological.
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
    for (uint32_t i = 0; i < node_count; ++i)
        if (in_degree[i] == 0) ready.push(i);
    std::vector<uint32_t> order;
    order.reserve(node_count);
    while (!ready.empty()) {
        const uint32_t i = ready.top();
        ready.pop();
        order.push_back(i);
        for (uint32_t t : nodes[i].outputs) {
            if (t == NNERGY_NO_TENSOR) continue;
            for (uint32_t s = slot_start[t]; s < slot_start[t + 1]; ++s)
                if (--in_degree[slot_node[s]] == 0) ready.push(slot_node[s]);
        }
    }
    if (order.size() != node_count) {
        // Every node left has an unsorted producer; walking producers from one of them must
        // come back to a node already on the walk, and that closes a cycle.
        uint32_t start = 0;
        while (in_degree[start] == 0) ++start;
        std::vector<int64_t> position(node_count, -1);
        std::vector<uint32_t> walk;
        uint32_t cur = start;
        while (position[cur] < 0) {
            position[cur] = static_cast<int64_t>(walk.size());
            walk.push_back(cur);
            for (uint32_t t : nodes[cur].inputs) {
                if (t == NNERGY_NO_TENSOR) continue;
                const uint32_t p = producer_[t];
                if (p != NNERGY_NO_NODE && in_degree[p] > 0) {
                    cur = p;
                    break;
                }
            }
        }
        std::vector<uint32_t> cycle(walk.begin() + position[cur], walk.end());
        // The walk went against the data flow; report it along the flow, starting at the node
        // the walk came back to.
        std::reverse(cycle.begin(), cycle.end());
        std::rotate(cycle.begin(), std::find(cycle.begin(), cycle.end(), cur), cycle.end());
        std::string path;
        for (uint32_t i : cycle) path += quoted(nodes[i].name) + " -> ";
        path += quoted(nodes[cycle.front()].name);
        throw error(describe_node(cycle.front()) + ": is part of a cycle: " + path +
                    " (a graph must be acyclic)");
    }

    std::vector<node> reordered;
    reordered.reserve(node_count);
    for (uint32_t i : order) reordered.push_back(std::move(nodes[i]));
    nodes = std::move(reordered);
    for (uint32_t k = 0; k < node_count; ++k)
        for (uint32_t t : nodes[k].outputs)
            if (t != NNERGY_NO_TENSOR) producer_[t] = k;
}

}  // namespace nnergy
