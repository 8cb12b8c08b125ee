// SPDX-License-Identifier: Apache-2.0
// Checks a partitioner's kernels, orders them and computes their statistics (partition.hpp).
#include <algorithm>
#include <functional>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/partition.hpp>
#include <queue>
#include <string>

namespace nnergy {

namespace {

std::string where(const graph& g) {
    if (!g.source_path.empty()) return g.source_path;
    return g.name.empty() ? std::string("<model>") : g.name;
}

std::string node_label(const graph& g, uint32_t n) {
    const node& x = g.nodes[n];
    std::string s = "node '";
    if (x.name.empty()) {
        s += '#';
        s += std::to_string(n);
    } else {
        s += x.name;
    }
    s += "' (";
    s += x.op_type;
    s += ')';
    return s;
}

bool is_conv(const node& n) {
    return (n.domain.empty() || n.domain == "ai.onnx") &&
           (n.op_type == "Conv" || n.op_type == "ConvTranspose");
}

bool is_matrix_product(const node& n) {
    return (n.domain.empty() || n.domain == "ai.onnx") &&
           (n.op_type == "MatMul" || n.op_type == "Gemm" || n.op_type == "MatMulInteger" ||
            n.op_type == "QLinearMatMul");
}

// Parallelism of the anchor's output: batch = dim 0; channels = dim 1 of NCHW-like outputs
// (rank >= 4), the last dim of [B, F] and [B, S, F] and of every matrix product (a batched
// [B, H, S, D] product has D columns, not H); spatial = the product of the rest.
// A dim left unknown (a host-side index tensor whose shape inference knows only its rank, as
// in the causal-mask arithmetic of dynamo exports, whose small int64 constants are external
// data a file may not carry: then the exporter's declared shape is all there is) counts as 1:
// such kernels compute shapes, not device work, and a negative thread count would be nonsense.
void set_parallelism(const std::vector<int64_t>& s, bool matrix_product, nnergy_kernel_stats& st) {
    const auto dim = [&](size_t i) { return s[i] < 0 ? 1.0 : static_cast<double>(s[i]); };
    double total = 1;
    for (size_t i = 0; i < s.size(); ++i) total *= dim(i);
    st.batch = s.empty() ? 1 : dim(0);
    st.channels = 1;
    st.spatial = 1;
    if (s.size() == 2) {
        st.channels = dim(1);
    } else if (s.size() == 3 || (s.size() > 3 && matrix_product)) {
        st.channels = dim(s.size() - 1);
        for (size_t i = 1; i + 1 < s.size(); ++i) st.spatial *= dim(i);
    } else if (s.size() >= 4) {
        st.channels = dim(1);
        for (size_t i = 2; i < s.size(); ++i) st.spatial *= dim(i);
    }
    st.total_threads = total;
}

}  // namespace

partition finalize_partition(const bound_graph& g, std::vector<kernel> kernels,
                             const std::string& partitioner_name) {
    if (!g.source)
        throw error("finalize_partition: the bound graph has no source graph", exit_code::internal);
    const graph& gr = *g.source;
    const std::string prefix = where(gr) + ": partitioner '" + partitioner_name + "': ";
    const auto fail = [&](const std::string& what) {
        throw error(prefix + what, exit_code::failure);
    };
    const auto kname = [&](size_t k) { return "'" + kernels[k].name + "'"; };
    const size_t node_count = gr.nodes.size();
    const size_t tensor_count = gr.tensors.size();
    const size_t kernel_count = kernels.size();
    constexpr uint32_t none = 0xFFFFFFFFu;

    // Every node in exactly one kernel.
    std::vector<uint32_t> kernel_of(node_count, none);
    for (uint32_t k = 0; k < kernel_count; ++k) {
        kernel& kr = kernels[k];
        if (kr.nodes.empty()) fail("kernel " + kname(k) + " has no nodes");
        for (uint32_t n : kr.nodes) {
            if (n >= node_count)
                fail("kernel " + kname(k) + " names node index " + std::to_string(n) +
                     ", but the graph has " + std::to_string(node_count) + " nodes");
            if (kernel_of[n] == k)
                fail("kernel " + kname(k) + " lists " + node_label(gr, n) + " twice");
            if (kernel_of[n] != none)
                fail(node_label(gr, n) + " is in two kernels: " + kname(kernel_of[n]) + " and " +
                     kname(k));
            kernel_of[n] = k;
        }
        std::sort(kr.nodes.begin(), kr.nodes.end());
    }
    {
        size_t missing = 0;
        uint32_t first = none;
        for (uint32_t n = 0; n < node_count; ++n) {
            if (kernel_of[n] != none) continue;
            if (missing++ == 0) first = n;
        }
        if (missing)
            fail(node_label(gr, first) + " is in no kernel" +
                 (missing > 1 ? " (nor are " + std::to_string(missing - 1) + " more nodes)" : "") +
                 "; every node must be in exactly one kernel");
    }

    // Kernel dependencies (original numbering), each producer kernel once.
    const auto& producer = gr.producers();
    std::vector<std::vector<uint32_t>> deps(kernel_count);
    std::vector<std::vector<uint32_t>> users(kernel_count);
    {
        std::vector<uint32_t> seen(kernel_count, none);
        for (uint32_t k = 0; k < kernel_count; ++k) {
            for (uint32_t n : kernels[k].nodes) {
                for (uint32_t t : gr.nodes[n].inputs) {
                    if (t == NNERGY_NO_TENSOR || producer[t] == NNERGY_NO_NODE) continue;
                    const uint32_t pk = kernel_of[producer[t]];
                    if (pk == k || seen[pk] == k) continue;
                    seen[pk] = k;
                    deps[k].push_back(pk);
                    users[pk].push_back(k);
                }
            }
        }
    }

    // Topological order of kernels; the partitioner's order breaks ties.
    std::vector<uint32_t> pending(kernel_count);
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
    for (uint32_t k = 0; k < kernel_count; ++k) {
        pending[k] = static_cast<uint32_t>(deps[k].size());
        if (pending[k] == 0) ready.push(k);
    }
    std::vector<uint32_t> order;
    order.reserve(kernel_count);
    while (!ready.empty()) {
        const uint32_t k = ready.top();
        ready.pop();
        order.push_back(k);
        for (uint32_t u : users[k])
            if (--pending[u] == 0) ready.push(u);
    }
    if (order.size() != kernel_count) {
        uint32_t cur = 0;
        while (pending[cur] == 0) ++cur;
        std::vector<int64_t> position(kernel_count, -1);
        std::vector<uint32_t> walk;
        while (position[cur] < 0) {
            position[cur] = static_cast<int64_t>(walk.size());
            walk.push_back(cur);
            for (uint32_t d : deps[cur]) {
                if (pending[d] > 0) {
                    cur = d;
                    break;
                }
            }
        }
        std::vector<uint32_t> cycle(walk.begin() + position[cur], walk.end());
        std::reverse(cycle.begin(), cycle.end());
        // Start the report at the node the walk came back to.
        std::rotate(cycle.begin(), std::find(cycle.begin(), cycle.end(), cur), cycle.end());
        std::string path;
        for (uint32_t k : cycle) path += kname(k) + " -> ";
        path += kname(cycle.front());
        fail("kernels form a cycle: " + path +
             " (each kernel must be able to run after the kernels it reads from)");
    }

    std::vector<uint32_t> new_index(kernel_count);
    for (uint32_t i = 0; i < kernel_count; ++i) new_index[order[i]] = i;

    std::vector<uint8_t> is_output(tensor_count, 0);
    for (uint32_t t : gr.outputs) is_output[t] = 1;
    const auto& consumers = gr.consumers();

    partition p;
    p.kernels.reserve(kernel_count);
    // Per-tensor scratch: which kernel last saw the tensor, and where its entry is.
    std::vector<uint32_t> seen_by(tensor_count, none);
    std::vector<uint32_t> entry_of(tensor_count, 0);
    struct entry {
        uint32_t tensor;
        double bytes;
    };
    std::vector<entry> entries;
    // A small integer tensor a folded node produces is a shape or index list the host passes
    // by value. A larger one (a causal mask) is built on the host, but the kernel reading it
    // still reads it from device memory.
    const auto known = [&](uint32_t t) {
        return producer[t] != NNERGY_NO_NODE && g.counts[producer[t]].folded &&
               g.int_values[t].has_value();
    };
    for (uint32_t i = 0; i < kernel_count; ++i) {
        const uint32_t old = order[i];
        kernel kr = std::move(kernels[old]);
        for (uint32_t& d : deps[old]) d = new_index[d];
        std::sort(deps[old].begin(), deps[old].end());
        kr.dependencies = std::move(deps[old]);

        nnergy_kernel_stats st{};
        st.struct_size = sizeof(nnergy_kernel_stats);
        st.all_counted = true;
        st.groups = 1;
        entries.clear();
        uint32_t anchor = kr.nodes.front();
        double anchor_flops = -1;
        for (uint32_t n : kr.nodes) {
            // Shape arithmetic whose values are known once the model is bound runs on the host
            // (or is folded by the compiler): no work, and its tiny tensors are not device data.
            const op_counts& c = g.counts[n];
            if (c.folded) continue;
            st.macs += c.macs;
            st.flops += c.flops;
            st.all_counted = st.all_counted && c.counted;
            if (c.flops > anchor_flops) {
                anchor_flops = c.flops;
                anchor = n;
            }
            const node& x = gr.nodes[n];
            for (size_t s = 0; s < x.inputs.size(); ++s) {
                const uint32_t t = x.inputs[s];
                const double bytes = g.input_read_bytes(n, s);
                if (t == NNERGY_NO_TENSOR || bytes <= 0) continue;  // omitted or control operand
                if (producer[t] != NNERGY_NO_NODE && kernel_of[producer[t]] == old) continue;
                if (known(t)) continue;
                if (seen_by[t] != i) {
                    seen_by[t] = i;
                    entry_of[t] = static_cast<uint32_t>(entries.size());
                    entries.push_back({t, bytes});
                } else {
                    // Read by several members: the widest read moves it.
                    entries[entry_of[t]].bytes = std::max(entries[entry_of[t]].bytes, bytes);
                }
            }
            for (uint32_t o : x.outputs) {
                if (o == NNERGY_NO_TENSOR) continue;
                bool leaves = is_output[o] != 0;
                for (size_t q = 0; !leaves && q < consumers[o].size(); ++q)
                    leaves = kernel_of[consumers[o][q]] != old;
                if (leaves) st.output_bytes += g.tensor_bytes(o);
            }
        }
        for (const entry& e : entries) {
            if (gr.tensors[e.tensor].is_initializer)
                st.weight_bytes += e.bytes;
            else
                st.input_bytes += e.bytes;
        }
        const double bytes = st.input_bytes + st.output_bytes + st.weight_bytes;
        st.arithmetic_intensity = bytes > 0 ? st.flops / bytes : 0;
        st.anchor_node = anchor;

        const node& a = gr.nodes[anchor];
        uint32_t out = NNERGY_NO_TENSOR;
        for (uint32_t o : a.outputs)
            if (o != NNERGY_NO_TENSOR) {
                out = o;
                break;
            }
        if (out != NNERGY_NO_TENSOR) set_parallelism(g.shapes[out], is_matrix_product(a), st);

        // Groups come from the anchor when it is a convolution, else from the first one.
        uint32_t conv = is_conv(a) ? anchor : none;
        for (size_t q = 0; conv == none && q < kr.nodes.size(); ++q)
            if (is_conv(gr.nodes[kr.nodes[q]])) conv = kr.nodes[q];
        if (conv != none) {
            const node& cv = gr.nodes[conv];
            st.groups = cv.attr_int("group").value_or(1);
            const auto& xs = g.shapes[cv.inputs[0]];
            st.is_depthwise = st.groups > 1 && xs.size() >= 2 && xs[1] == st.groups;
        }
        kr.stats = st;
        p.kernels.push_back(std::move(kr));
    }
    p.identity = new_identity();
    return p;
}

}  // namespace nnergy
