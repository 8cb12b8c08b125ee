// SPDX-License-Identifier: Apache-2.0
/// \file graph_host.hpp
/// \brief The reference plugins' fake host (fake_host.hpp) with a readable graph: tensors with
/// dtypes, shapes, producers and consumers, nodes with inputs, and text totals in the results.
/// Graphs are built by hand in the tests; kernels reuse fake::partition.
#pragma once

#include <nnergy/plugin.h>

#include <map>
#include <nnergy/dtype.hpp>
#include <nnergy/sdk.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fake_host.hpp"

namespace memfake {

struct tensor {
    std::string name;
    nnergy_dtype dtype = NNERGY_DTYPE_FLOAT32;
    std::vector<int64_t> shape;
    bool initializer = false;
    bool output = false;
    uint32_t producer = NNERGY_NO_NODE;
    std::vector<uint32_t> consumers;
};

struct node {
    std::string name;
    std::string op;
    std::vector<uint32_t> inputs;
    std::vector<uint32_t> outputs;
};

/// A graph built by hand; nodes must be added in topological order.
struct graph {
    std::string name = "hand_built";
    std::vector<tensor> tensors;
    std::vector<node> nodes;

    uint32_t add(const std::string& n, std::vector<int64_t> shape,
                 nnergy_dtype dtype = NNERGY_DTYPE_FLOAT32) {
        tensors.push_back({n, dtype, std::move(shape), false, false, NNERGY_NO_NODE, {}});
        return static_cast<uint32_t>(tensors.size() - 1);
    }
    uint32_t weight(const std::string& n, std::vector<int64_t> shape,
                    nnergy_dtype dtype = NNERGY_DTYPE_FLOAT32) {
        const uint32_t t = add(n, std::move(shape), dtype);
        tensors[t].initializer = true;
        return t;
    }
    void output(uint32_t t) { tensors.at(t).output = true; }
    uint32_t op(const std::string& n, const std::string& type, const std::vector<uint32_t>& in,
                const std::vector<uint32_t>& out) {
        const auto id = static_cast<uint32_t>(nodes.size());
        nodes.push_back({n, type, in, out});
        for (uint32_t t : in) tensors.at(t).consumers.push_back(id);
        for (uint32_t t : out) tensors.at(t).producer = id;
        return id;
    }
    /// Bytes as the host computes them: elements x storage bits / 8.
    double bytes(uint32_t t) const {
        double elements = 1;
        for (int64_t d : tensors.at(t).shape) elements *= static_cast<double>(d);
        return elements * nnergy::sdk::dtype_bits(tensors.at(t).dtype) / 8.0;
    }
    const nnergy_graph* handle() const { return reinterpret_cast<const nnergy_graph*>(this); }
};

struct results {
    std::map<uint32_t, std::map<std::string, double>> numbers;
    std::map<uint32_t, std::map<std::string, std::string>> texts;
    std::map<std::string, double> totals;
    std::map<std::string, std::string> total_texts;
};

inline const graph& g(const nnergy_graph* h) { return *reinterpret_cast<const graph*>(h); }
inline results& r(nnergy_results* h) { return *reinterpret_cast<results*>(h); }

inline const nnergy_host_api& api() {
    static const nnergy_host_api table = [] {
        nnergy_host_api a = fake::api();
        a.graph_node_count = [](const nnergy_graph* h) { return g(h).nodes.size(); };
        a.graph_tensor_count = [](const nnergy_graph* h) { return g(h).tensors.size(); };
        a.graph_name = [](const nnergy_graph* h) { return fake::sv(g(h).name); };
        a.node_name = [](const nnergy_graph* h, uint32_t n) {
            return fake::sv(g(h).nodes.at(n).name);
        };
        a.node_op_type = [](const nnergy_graph* h, uint32_t n) {
            return fake::sv(g(h).nodes.at(n).op);
        };
        a.node_input_count = [](const nnergy_graph* h, uint32_t n) {
            return g(h).nodes.at(n).inputs.size();
        };
        a.node_input = [](const nnergy_graph* h, uint32_t n, size_t i) {
            return g(h).nodes.at(n).inputs.at(i);
        };
        a.node_output_count = [](const nnergy_graph* h, uint32_t n) {
            return g(h).nodes.at(n).outputs.size();
        };
        a.node_output = [](const nnergy_graph* h, uint32_t n, size_t i) {
            return g(h).nodes.at(n).outputs.at(i);
        };
        a.tensor_name = [](const nnergy_graph* h, uint32_t t) {
            return fake::sv(g(h).tensors.at(t).name);
        };
        a.tensor_dtype = [](const nnergy_graph* h, uint32_t t) { return g(h).tensors.at(t).dtype; };
        a.tensor_rank = [](const nnergy_graph* h, uint32_t t) {
            return g(h).tensors.at(t).shape.size();
        };
        a.tensor_dim = [](const nnergy_graph* h, uint32_t t, size_t i) {
            return g(h).tensors.at(t).shape.at(i);
        };
        a.tensor_bytes = [](const nnergy_graph* h, uint32_t t) { return g(h).bytes(t); };
        a.tensor_is_initializer = [](const nnergy_graph* h, uint32_t t) {
            return g(h).tensors.at(t).initializer;
        };
        a.tensor_producer = [](const nnergy_graph* h, uint32_t t) {
            return g(h).tensors.at(t).producer;
        };
        a.tensor_consumer_count = [](const nnergy_graph* h, uint32_t t) {
            return g(h).tensors.at(t).consumers.size();
        };
        a.tensor_consumer = [](const nnergy_graph* h, uint32_t t, size_t i) {
            return g(h).tensors.at(t).consumers.at(i);
        };
        a.tensor_is_graph_output = [](const nnergy_graph* h, uint32_t t) {
            return g(h).tensors.at(t).output;
        };
        a.results_set_kernel_number = [](nnergy_results* h, uint32_t k, nnergy_string_view key,
                                         double v) { r(h).numbers[k][fake::str(key)] = v; };
        a.results_set_kernel_text = [](nnergy_results* h, uint32_t k, nnergy_string_view key,
                                       nnergy_string_view v) {
            r(h).texts[k][fake::str(key)] = fake::str(v);
        };
        a.results_set_total = [](nnergy_results* h, nnergy_string_view key, double v) {
            r(h).totals[fake::str(key)] = v;
        };
        a.results_set_total_text = [](nnergy_results* h, nnergy_string_view key,
                                      nnergy_string_view v) {
            r(h).total_texts[fake::str(key)] = fake::str(v);
        };
        return a;
    }();
    return table;
}

/// Makes the plugins' sdk::host() this fake.
inline void install() { nnergy::sdk::detail::api_slot() = &api(); }

}  // namespace memfake
