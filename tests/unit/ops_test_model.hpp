// SPDX-License-Identifier: Apache-2.0
// A small graph builder shared by the per-operator tests: declare inputs, weights, nodes and
// outputs by name, bind, then read shapes and counts back.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <optional>
#include <string>
#include <vector>

using namespace nnergy;
using Catch::Matchers::Contains;

namespace {

using shape = std::vector<int64_t>;

// A dimension written in a test: a number or a symbol.
struct D {
    dim d;
    D(int v) : d(dim::of(v)) {}
    D(int64_t v) : d(dim::of(v)) {}
    D(const char* s) : d(dim::named(s)) {}
};

attribute ai(const char* n, int64_t v) { return {n, v}; }
[[maybe_unused]] attribute af(const char* n, double v) { return {n, v}; }
[[maybe_unused]] attribute as(const char* n, const char* v) { return {n, std::string(v)}; }
attribute ais(const char* n, std::vector<int64_t> v) { return {n, std::move(v)}; }
[[maybe_unused]] attribute afs(const char* n, std::vector<double> v) { return {n, std::move(v)}; }

struct model {
    graph g;
    std::optional<bound_graph> b;
    model() { g.source_path = "model.json"; }

    uint32_t add_tensor(const std::string& name, nnergy_dtype dt, std::optional<std::vector<D>> s,
                        bool init) {
        tensor t;
        t.name = name;
        t.dtype = dt;
        if (s) {
            t.shape.emplace();
            for (const D& d : *s) t.shape->push_back(d.d);
        }
        t.is_initializer = init;
        return g.add_tensor(std::move(t));
    }
    uint32_t input(const std::string& name, std::vector<D> s,
                   nnergy_dtype dt = NNERGY_DTYPE_FLOAT32) {
        const uint32_t t = add_tensor(name, dt, std::move(s), false);
        g.inputs.push_back(t);
        return t;
    }
    uint32_t weight(const std::string& name, std::vector<D> s,
                    nnergy_dtype dt = NNERGY_DTYPE_FLOAT32) {
        return add_tensor(name, dt, std::move(s), true);
    }
    // An int64 constant: 1-D, or a scalar when `scalar`.
    uint32_t ints(const std::string& name, std::vector<int64_t> v, bool scalar = false) {
        std::vector<D> s;
        if (!scalar) s.push_back(D(static_cast<int64_t>(v.size())));
        const uint32_t t = add_tensor(name, NNERGY_DTYPE_INT64, s, true);
        g.tensors[t].int_values = std::move(v);
        return t;
    }
    uint32_t declare(const std::string& name, std::vector<D> s,
                     nnergy_dtype dt = NNERGY_DTYPE_FLOAT32) {
        return add_tensor(name, dt, std::move(s), false);
    }
    uint32_t id(const std::string& name) {
        if (name.empty()) return NNERGY_NO_TENSOR;
        if (auto t = g.find_tensor(name)) return *t;
        return add_tensor(name, NNERGY_DTYPE_UNDEFINED, std::nullopt, false);
    }
    void node(const std::string& name, const std::string& op, std::vector<std::string> ins,
              std::vector<std::string> outs, std::vector<attribute> attrs = {}) {
        nnergy::node n;
        n.name = name;
        n.op_type = op;
        for (auto& i : ins) n.inputs.push_back(id(i));
        for (auto& o : outs) n.outputs.push_back(id(o));
        n.attributes = std::move(attrs);
        g.add_node(std::move(n));
    }
    void output(const std::string& name) { g.outputs.push_back(id(name)); }
    const bound_graph& bind(const dim_bindings& dims = {}) {
        if (!g.finalized()) g.finalize();
        b = nnergy::bind(g, dims);
        return *b;
    }
    shape shape_of(const std::string& name) const { return b->shapes[*g.find_tensor(name)]; }
    std::optional<std::vector<int64_t>> values_of(const std::string& name) const {
        return b->int_values[*g.find_tensor(name)];
    }
    nnergy_dtype dtype_of(const std::string& name) const { return b->dtypes[*g.find_tensor(name)]; }
    // Index of the node called `node_name`.
    uint32_t n(const std::string& node_name) const {
        for (uint32_t i = 0; i < g.nodes.size(); ++i)
            if (g.nodes[i].name == node_name) return i;
        FAIL("no node " << node_name);
        return 0;
    }
    const op_counts& counts(const std::string& node_name) const { return b->counts[n(node_name)]; }
    std::string bind_error(const dim_bindings& dims = {}) {
        try {
            bind(dims);
        } catch (const nnergy::error& e) {
            return e.what();
        }
        FAIL("bind() accepted an invalid model");
        return {};
    }
};

// Output shape of `op` on one float input of shape `x`.
[[maybe_unused]] shape unary_shape(const std::string& op, std::vector<D> x,
                                   std::vector<attribute> attrs = {}) {
    model m;
    m.input("x", std::move(x));
    m.node("n", op, {"x"}, {"y"}, std::move(attrs));
    m.output("y");
    m.bind();
    return m.shape_of("y");
}

// FLOPs of `op` on one float input of shape `x`; MACs must be 0.
[[maybe_unused]] double unary_flops(const std::string& op, std::vector<D> x,
                                    std::vector<attribute> attrs = {}) {
    model m;
    m.input("x", std::move(x));
    m.node("n", op, {"x"}, {"y"}, std::move(attrs));
    m.output("y");
    m.bind();
    CHECK(m.counts("n").macs == 0);
    return m.counts("n").flops;
}

}  // namespace
