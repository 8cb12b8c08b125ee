// SPDX-License-Identifier: Apache-2.0
// The host API table (nnergy_host_api) and the calls that drive components across the ABI.
// Every function here is noexcept towards the plugin: C++ exceptions never cross the boundary.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host_objects.hpp>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "replace_file.hpp"

namespace nnergy::detail {

const std::string pooled_name::empty_;

namespace {

struct text_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
    }
};
using name_index =
    std::unordered_map<std::string_view, const std::string*, text_hash, std::equal_to<>>;

struct name_pool {
    std::mutex lock;
    std::deque<std::string> names;  // a deque never moves its strings
    name_index index;
};

/// A hash of a name's size and its first and last eight bytes: enough to tell apart the names
/// of one run (report keys, events, levels) at a fraction of hashing every byte.
uint64_t quick_name_hash(std::string_view text) noexcept {
    const size_t n = text.size();
    uint64_t head = 0, tail = 0;
    if (n >= 8) {
        std::memcpy(&head, text.data(), 8);
        std::memcpy(&tail, text.data() + n - 8, 8);
    } else {
        std::memcpy(&head, text.data(), n);
    }
    return ((head * 0x9E3779B97F4A7C15ull) ^ (tail * 0xC2B2AE3D27D4EB4Full) ^ n) *
           0x165667B19E3779F9ull;
}
}  // namespace

pooled_name pooled_name::of(std::string_view text) {
    if (text.empty()) return pooled_name();
    // Each thread first asks a small cache of the names it met last, then its own copy of the
    // index; neither needs a lock. The cache answers a report's keys in a few instructions
    // where the index hashes every byte.
    constexpr unsigned recent_bits = 9;
    thread_local const std::string* recent[size_t{1} << recent_bits] = {};
    const std::string*& cached = recent[quick_name_hash(text) >> (64 - recent_bits)];
    if (cached && modeling::same_text(*cached, text)) return pooled_name(cached);
    thread_local name_index seen;
    if (auto it = seen.find(text); it != seen.end()) {
        cached = it->second;
        return pooled_name(it->second);
    }
    // Never destroyed: names may be looked at until the very end of the process.
    static name_pool& pool = *new name_pool;
    const std::string* pooled;
    {
        std::lock_guard<std::mutex> hold(pool.lock);
        if (auto it = pool.index.find(text); it != pool.index.end()) {
            pooled = it->second;
        } else {
            pooled = &pool.names.emplace_back(text);
            pool.index.emplace(*pooled, pooled);
        }
    }
    seen.emplace(*pooled, pooled);
    cached = pooled;
    return pooled_name(pooled);
}

}  // namespace nnergy::detail

namespace nnergy {

std::string source_location::str() const { return line ? fmt::format("{}:{}", file, line) : file; }

namespace {

std::string_view sv(nnergy_string_view s) noexcept {
    return s.data ? std::string_view(s.data, s.size) : std::string_view();
}
nnergy_string_view to_sv(std::string_view s) noexcept { return {s.data(), s.size()}; }

// Returned when allocating a status fails, so an error never turns into success; never freed.
nnergy_status k_out_of_memory_status{NNERGY_CODE_INTERNAL, {}};

nnergy_status* make_status(nnergy_status_code code, std::string message) noexcept {
    try {
        return new nnergy_status{code, std::move(message)};
    } catch (...) {
        return &k_out_of_memory_status;
    }
}

void free_status(nnergy_status* s) noexcept {
    if (s != &k_out_of_memory_status) delete s;
}

template <class F>
nnergy_status* host_guard(F&& f) noexcept {
    try {
        f();
        return nullptr;
    } catch (const std::exception& e) {
        return make_status(NNERGY_CODE_INVALID_ARGUMENT, e.what());
    } catch (...) {
        return make_status(NNERGY_CODE_INTERNAL, "unknown host error");
    }
}

// ---- statuses and logging ----

nnergy_status* api_status_create(nnergy_status_code code, nnergy_string_view message) noexcept {
    return make_status(code, std::string(sv(message)));
}
void api_status_release(nnergy_status* s) noexcept { free_status(s); }
nnergy_status_code api_status_code(const nnergy_status* s) noexcept {
    return s ? s->code : NNERGY_CODE_OK;
}
nnergy_string_view api_status_message(const nnergy_status* s) noexcept {
    return s ? to_sv(s->message) : nnergy_string_view{nullptr, 0};
}

void api_log(nnergy_host_context* ctx, nnergy_log_level level,
             nnergy_string_view message) noexcept {
    try {
        auto lvl = spdlog::level::info;
        switch (level) {
            case NNERGY_LOG_TRACE:
                lvl = spdlog::level::trace;
                break;
            case NNERGY_LOG_DEBUG:
                lvl = spdlog::level::debug;
                break;
            case NNERGY_LOG_INFO:
                lvl = spdlog::level::info;
                break;
            case NNERGY_LOG_WARN:
                lvl = spdlog::level::warn;
                break;
            case NNERGY_LOG_ERROR:
                lvl = spdlog::level::err;
                break;
        }
        spdlog::log(lvl, "[{}] {}", ctx ? ctx->component_name : std::string("plugin"), sv(message));
    } catch (...) {
    }
}

// ---- TOML files ----

nnergy_status* api_config_file_read(nnergy_host_context* ctx, nnergy_string_view path,
                                    nnergy_config_file** out) noexcept {
    if (!out) return make_status(NNERGY_CODE_INVALID_ARGUMENT, "config_file_read: out is NULL");
    *out = nullptr;
    return host_guard([&] {
        std::filesystem::path p(std::string(sv(path)));
        if (p.is_relative() && ctx && !ctx->base_dir.empty()) p = ctx->base_dir / p;
        auto file = std::make_unique<nnergy_config_file>();
        file->values = read_toml_file(p);
        file->views = named_value_views(file->values);
        *out = file.release();
    });
}
size_t api_config_file_size(const nnergy_config_file* f) noexcept {
    return f ? f->views.size() : 0;
}
const nnergy_named_value* api_config_file_at(const nnergy_config_file* f, size_t i) noexcept {
    return f && i < f->views.size() ? &f->views[i] : nullptr;
}
void api_config_file_release(nnergy_config_file* f) noexcept { delete f; }

// ---- graph building ----

std::string builder_where(const nnergy_graph_builder* b) {
    return b && !b->file.empty() ? b->file : std::string("<model>");
}

nnergy_status* api_graph_add_tensor(nnergy_graph_builder* b, nnergy_string_view name,
                                    nnergy_dtype dtype, bool has_shape, size_t rank,
                                    const int64_t* dims, const nnergy_string_view* symbols,
                                    uint32_t* out) noexcept {
    return host_guard([&] {
        tensor t;
        t.name = std::string(sv(name));
        t.dtype = dtype;
        if (t.name.empty())
            throw error(fmt::format("{}: a tensor has an empty name", builder_where(b)));
        if (has_shape) {
            std::vector<dim> shape(rank);
            for (size_t i = 0; i < rank; ++i) {
                std::string_view sym = symbols ? sv(symbols[i]) : std::string_view();
                if (!sym.empty()) {
                    shape[i] = dim::named(sym);
                } else {
                    int64_t v = dims ? dims[i] : NNERGY_DIM_UNKNOWN;
                    if (v < NNERGY_DIM_UNKNOWN)
                        throw error(
                            fmt::format("{}: tensor '{}': dimension {} is {} (expected "
                                        ">= 0, a symbol, or unknown)",
                                        builder_where(b), t.name, i, v));
                    shape[i].value = v;
                }
            }
            t.shape = std::move(shape);
        }
        uint32_t id = b->target->add_tensor(std::move(t));
        if (out) *out = id;
    });
}

nnergy_status* api_graph_reserve(nnergy_graph_builder* b, size_t tensors, size_t nodes) noexcept {
    return host_guard([&] {
        // A hint from a file's counts: one beyond any real model is ignored, not obeyed.
        constexpr size_t most = size_t{1} << 28;
        if (tensors <= most && nodes <= most) b->target->reserve(tensors, nodes);
    });
}

tensor& builder_tensor(nnergy_graph_builder* b, uint32_t t) {
    if (t >= b->target->tensors.size())
        throw error(fmt::format("{}: tensor index {} out of range", builder_where(b), t));
    return b->target->tensors[t];
}

nnergy_status* api_graph_set_initializer(nnergy_graph_builder* b, uint32_t t) noexcept {
    return host_guard([&] { builder_tensor(b, t).is_initializer = true; });
}

nnergy_status* api_graph_set_constant(nnergy_graph_builder* b, uint32_t t) noexcept {
    return host_guard([&] {
        tensor& x = builder_tensor(b, t);
        if (!x.is_initializer)
            throw error(fmt::format("{}: tensor '{}' is marked constant but is not an initializer",
                                    builder_where(b), x.name));
        x.is_constant = true;
    });
}

nnergy_status* api_graph_set_initializer_values(nnergy_graph_builder* b, uint32_t t,
                                                const int64_t* values, size_t count) noexcept {
    return host_guard([&] {
        tensor& x = builder_tensor(b, t);
        if (x.shape) {
            double n = 1;
            for (const dim& d : *x.shape) n *= d.is_concrete() ? static_cast<double>(d.value) : NAN;
            if (!(n == static_cast<double>(count)))
                throw error(
                    fmt::format("{}: tensor '{}': {} values given for a shape of {} "
                                "elements",
                                builder_where(b), x.name, count, n));
        }
        x.is_initializer = true;
        x.int_values = std::vector<int64_t>(values, values + count);
    });
}

nnergy_status* api_graph_add_input(nnergy_graph_builder* b, uint32_t t) noexcept {
    return host_guard([&] {
        builder_tensor(b, t);
        b->target->inputs.push_back(t);
    });
}
nnergy_status* api_graph_add_output(nnergy_graph_builder* b, uint32_t t) noexcept {
    return host_guard([&] {
        builder_tensor(b, t);
        b->target->outputs.push_back(t);
    });
}

nnergy_status* api_graph_add_node(nnergy_graph_builder* b, nnergy_string_view name,
                                  nnergy_string_view op_type, nnergy_string_view domain,
                                  const uint32_t* inputs, size_t input_count,
                                  const uint32_t* outputs, size_t output_count,
                                  uint32_t* out) noexcept {
    return host_guard([&] {
        node n;
        n.name = std::string(sv(name));
        n.op_type = std::string(sv(op_type));
        n.domain = std::string(sv(domain));
        if (n.op_type.empty())
            throw error(
                fmt::format("{}: node '{}' has an empty op type", builder_where(b), n.name));
        n.inputs.assign(inputs, inputs + input_count);
        n.outputs.assign(outputs, outputs + output_count);
        uint32_t id = b->target->add_node(std::move(n));
        if (out) *out = id;
    });
}

node& builder_node(nnergy_graph_builder* b, uint32_t n) {
    if (n >= b->target->nodes.size())
        throw error(fmt::format("{}: node index {} out of range", builder_where(b), n));
    return b->target->nodes[n];
}

void set_attribute(nnergy_graph_builder* b, uint32_t n, nnergy_string_view name,
                   attribute_value v) {
    node& x = builder_node(b, n);
    const std::string_view key = sv(name);
    for (attribute& a : x.attributes) {
        if (a.name == key) {
            a.value = std::move(v);
            return;
        }
    }
    x.attributes.push_back({std::string(key), std::move(v)});
}

nnergy_status* api_node_set_attr_int(nnergy_graph_builder* b, uint32_t n, nnergy_string_view name,
                                     int64_t v) noexcept {
    return host_guard([&] { set_attribute(b, n, name, v); });
}
nnergy_status* api_node_set_attr_float(nnergy_graph_builder* b, uint32_t n, nnergy_string_view name,
                                       double v) noexcept {
    return host_guard([&] { set_attribute(b, n, name, v); });
}
nnergy_status* api_node_set_attr_string(nnergy_graph_builder* b, uint32_t n,
                                        nnergy_string_view name, nnergy_string_view v) noexcept {
    return host_guard([&] { set_attribute(b, n, name, std::string(sv(v))); });
}
nnergy_status* api_node_set_attr_ints(nnergy_graph_builder* b, uint32_t n, nnergy_string_view name,
                                      const int64_t* v, size_t count) noexcept {
    return host_guard([&] { set_attribute(b, n, name, std::vector<int64_t>(v, v + count)); });
}
nnergy_status* api_node_set_attr_floats(nnergy_graph_builder* b, uint32_t n,
                                        nnergy_string_view name, const double* v,
                                        size_t count) noexcept {
    return host_guard([&] { set_attribute(b, n, name, std::vector<double>(v, v + count)); });
}
nnergy_status* api_graph_set_metadata(nnergy_graph_builder* b, nnergy_string_view key,
                                      nnergy_string_view value) noexcept {
    return host_guard([&] {
        std::string k(sv(key));
        if (k == "name") b->target->name = std::string(sv(value));
        for (auto& kv : b->target->metadata) {
            if (kv.first == k) {
                kv.second = std::string(sv(value));
                return;
            }
        }
        b->target->metadata.emplace_back(std::move(k), std::string(sv(value)));
    });
}
nnergy_status* api_node_set_source_line(nnergy_graph_builder* b, uint32_t n,
                                        uint32_t line) noexcept {
    return host_guard([&] { builder_node(b, n).source_line = line; });
}

// ---- reading a bound graph ----

bool node_ok(const nnergy_graph* g, uint32_t n) noexcept {
    return g && n < g->source->nodes.size();
}
bool tensor_ok(const nnergy_graph* g, uint32_t t) noexcept {
    return g && t < g->source->tensors.size();
}

size_t api_graph_node_count(const nnergy_graph* g) noexcept {
    return g ? g->source->nodes.size() : 0;
}
size_t api_graph_tensor_count(const nnergy_graph* g) noexcept {
    return g ? g->source->tensors.size() : 0;
}
nnergy_string_view api_graph_name(const nnergy_graph* g) noexcept {
    return g ? to_sv(g->source->name) : nnergy_string_view{nullptr, 0};
}
nnergy_string_view api_node_name(const nnergy_graph* g, uint32_t n) noexcept {
    return node_ok(g, n) ? to_sv(g->source->nodes[n].name) : nnergy_string_view{nullptr, 0};
}
nnergy_string_view api_node_op_type(const nnergy_graph* g, uint32_t n) noexcept {
    return node_ok(g, n) ? to_sv(g->source->nodes[n].op_type) : nnergy_string_view{nullptr, 0};
}
nnergy_string_view api_node_domain(const nnergy_graph* g, uint32_t n) noexcept {
    return node_ok(g, n) ? to_sv(g->source->nodes[n].domain) : nnergy_string_view{nullptr, 0};
}
size_t api_node_input_count(const nnergy_graph* g, uint32_t n) noexcept {
    return node_ok(g, n) ? g->source->nodes[n].inputs.size() : 0;
}
uint32_t api_node_input(const nnergy_graph* g, uint32_t n, size_t i) noexcept {
    if (!node_ok(g, n) || i >= g->source->nodes[n].inputs.size()) return NNERGY_NO_TENSOR;
    return g->source->nodes[n].inputs[i];
}
size_t api_node_output_count(const nnergy_graph* g, uint32_t n) noexcept {
    return node_ok(g, n) ? g->source->nodes[n].outputs.size() : 0;
}
uint32_t api_node_output(const nnergy_graph* g, uint32_t n, size_t i) noexcept {
    if (!node_ok(g, n) || i >= g->source->nodes[n].outputs.size()) return NNERGY_NO_TENSOR;
    return g->source->nodes[n].outputs[i];
}

const attribute* find_attr(const nnergy_graph* g, uint32_t n, nnergy_string_view name) noexcept {
    return node_ok(g, n) ? g->source->nodes[n].find_attribute(sv(name)) : nullptr;
}
bool api_node_attr_int(const nnergy_graph* g, uint32_t n, nnergy_string_view name,
                       int64_t* out) noexcept {
    const attribute* a = find_attr(g, n, name);
    const int64_t* v = a ? std::get_if<int64_t>(&a->value) : nullptr;
    if (v && out) *out = *v;
    return v != nullptr;
}
bool api_node_attr_float(const nnergy_graph* g, uint32_t n, nnergy_string_view name,
                         double* out) noexcept {
    const attribute* a = find_attr(g, n, name);
    const double* v = a ? std::get_if<double>(&a->value) : nullptr;
    if (v && out) *out = *v;
    return v != nullptr;
}
bool api_node_attr_string(const nnergy_graph* g, uint32_t n, nnergy_string_view name,
                          nnergy_string_view* out) noexcept {
    const attribute* a = find_attr(g, n, name);
    const std::string* v = a ? std::get_if<std::string>(&a->value) : nullptr;
    if (v && out) *out = to_sv(*v);
    return v != nullptr;
}
bool api_node_attr_ints(const nnergy_graph* g, uint32_t n, nnergy_string_view name,
                        const int64_t** out_values, size_t* out_count) noexcept {
    const attribute* a = find_attr(g, n, name);
    const auto* v = a ? std::get_if<std::vector<int64_t>>(&a->value) : nullptr;
    if (v) {
        if (out_values) *out_values = v->data();
        if (out_count) *out_count = v->size();
    }
    return v != nullptr;
}

// Copies the host struct into a plugin struct of possibly smaller declared size.
template <class T>
void write_prefix(const T& src, T* dst) noexcept {
    if (!dst) return;
    const size_t keep = dst->struct_size;
    // A plugin built against this header (the usual case, once per kernel in a sweep) gets a
    // copy of known size, which compiles to a few vector moves; a copy of variable size becomes
    // `rep movs`, whose start-up costs more than the copy.
    if (keep >= sizeof(T))
        std::memcpy(static_cast<void*>(dst), &src, sizeof(T));
    else
        std::memcpy(static_cast<void*>(dst), &src, keep);
    dst->struct_size = keep;
}

void api_node_counts(const nnergy_graph* g, uint32_t n, nnergy_op_counts* out) noexcept {
    if (!node_ok(g, n) || !out) return;
    const op_counts& c = g->bound->counts[n];
    nnergy_op_counts r{};
    r.struct_size = sizeof r;
    r.macs = c.macs;
    r.flops = c.flops;
    r.input_bytes = c.input_bytes;
    r.output_bytes = c.output_bytes;
    r.weight_bytes = c.weight_bytes;
    r.params = c.params;
    r.counted = c.counted;
    write_prefix(r, out);
}
nnergy_string_view api_tensor_name(const nnergy_graph* g, uint32_t t) noexcept {
    return tensor_ok(g, t) ? to_sv(g->source->tensors[t].name) : nnergy_string_view{nullptr, 0};
}
nnergy_dtype api_tensor_dtype(const nnergy_graph* g, uint32_t t) noexcept {
    return tensor_ok(g, t) ? g->bound->dtypes[t] : NNERGY_DTYPE_UNDEFINED;
}
size_t api_tensor_rank(const nnergy_graph* g, uint32_t t) noexcept {
    return tensor_ok(g, t) ? g->bound->shapes[t].size() : 0;
}
int64_t api_tensor_dim(const nnergy_graph* g, uint32_t t, size_t axis) noexcept {
    if (!tensor_ok(g, t) || axis >= g->bound->shapes[t].size()) return 0;
    return g->bound->shapes[t][axis];
}
double api_tensor_bytes(const nnergy_graph* g, uint32_t t) noexcept {
    return tensor_ok(g, t) ? g->bound->tensor_bytes(t) : 0.0;
}
bool api_tensor_is_initializer(const nnergy_graph* g, uint32_t t) noexcept {
    return tensor_ok(g, t) && g->source->tensors[t].is_initializer;
}
bool api_tensor_int_values(const nnergy_graph* g, uint32_t t, const int64_t** out_values,
                           size_t* out_count) noexcept {
    if (!tensor_ok(g, t) || t >= g->bound->int_values.size() || !g->bound->int_values[t])
        return false;
    const auto& v = *g->bound->int_values[t];
    if (out_values) *out_values = v.data();
    if (out_count) *out_count = v.size();
    return true;
}
uint32_t api_tensor_producer(const nnergy_graph* g, uint32_t t) noexcept {
    return tensor_ok(g, t) ? g->source->producers()[t] : NNERGY_NO_NODE;
}
size_t api_tensor_consumer_count(const nnergy_graph* g, uint32_t t) noexcept {
    return tensor_ok(g, t) ? g->source->consumers()[t].size() : 0;
}
uint32_t api_tensor_consumer(const nnergy_graph* g, uint32_t t, size_t i) noexcept {
    if (!tensor_ok(g, t) || i >= g->source->consumers()[t].size()) return NNERGY_NO_NODE;
    return g->source->consumers()[t][i];
}
bool api_tensor_is_graph_output(const nnergy_graph* g, uint32_t t) noexcept {
    if (!tensor_ok(g, t)) return false;
    const auto& outs = g->source->outputs;
    return std::find(outs.begin(), outs.end(), t) != outs.end();
}

// ---- partitions ----

nnergy_status* api_partition_add_kernel(nnergy_partition_builder* b, nnergy_string_view name,
                                        nnergy_string_view pattern, const uint32_t* nodes,
                                        size_t count, uint32_t* out) noexcept {
    return host_guard([&] {
        if (count == 0) throw error("partition_add_kernel: a kernel needs at least one node");
        if (!nodes) throw error("partition_add_kernel: nodes is NULL");
        kernel k;
        k.name = std::string(sv(name));
        k.pattern = std::string(sv(pattern));
        k.nodes.assign(nodes, nodes + count);
        const size_t node_count = b->graph->source->nodes.size();
        for (uint32_t n : k.nodes)
            if (n >= node_count)
                throw error(
                    fmt::format("partition_add_kernel: kernel '{}' names node {} but the "
                                "graph has {} nodes",
                                k.name, n, node_count));
        if (out) *out = static_cast<uint32_t>(b->kernels.size());
        b->kernels.push_back(std::move(k));
    });
}

bool kernel_ok(const nnergy_partition* p, uint32_t k) noexcept {
    return p && k < p->source->kernels.size();
}
size_t api_partition_kernel_count(const nnergy_partition* p) noexcept {
    return p ? p->source->kernels.size() : 0;
}
nnergy_string_view api_kernel_name(const nnergy_partition* p, uint32_t k) noexcept {
    return kernel_ok(p, k) ? to_sv(p->source->kernels[k].name) : nnergy_string_view{nullptr, 0};
}
nnergy_string_view api_kernel_pattern(const nnergy_partition* p, uint32_t k) noexcept {
    return kernel_ok(p, k) ? to_sv(p->source->kernels[k].pattern) : nnergy_string_view{nullptr, 0};
}
size_t api_kernel_node_count(const nnergy_partition* p, uint32_t k) noexcept {
    return kernel_ok(p, k) ? p->source->kernels[k].nodes.size() : 0;
}
uint32_t api_kernel_node(const nnergy_partition* p, uint32_t k, size_t i) noexcept {
    if (!kernel_ok(p, k) || i >= p->source->kernels[k].nodes.size()) return NNERGY_NO_NODE;
    return p->source->kernels[k].nodes[i];
}
void api_kernel_stats(const nnergy_partition* p, uint32_t k, nnergy_kernel_stats* out) noexcept {
    if (!kernel_ok(p, k) || !out) return;
    // Straight from the partition: a copy on the stack first, its size member rewritten, is
    // read back in pieces that straddle those stores (a store-forwarding stall per call).
    write_prefix(p->source->kernels[k].stats, out);
}
size_t api_kernel_dependency_count(const nnergy_partition* p, uint32_t k) noexcept {
    return kernel_ok(p, k) ? p->source->kernels[k].dependencies.size() : 0;
}
uint32_t api_kernel_dependency(const nnergy_partition* p, uint32_t k, size_t i) noexcept {
    if (!kernel_ok(p, k) || i >= p->source->kernels[k].dependencies.size()) return NNERGY_NO_NODE;
    return p->source->kernels[k].dependencies[i];
}

uint64_t api_graph_identity(const nnergy_graph* g) noexcept {
    return g && g->bound ? g->bound->identity : 0;
}
uint64_t api_partition_identity(const nnergy_partition* p) noexcept {
    return p && p->source ? p->source->identity : 0;
}

// ---- mappings ----

void api_mapping_set_number(nnergy_mapping* m, nnergy_string_view key, double value) noexcept {
    if (!m) return;
    try {
        m->numbers.set(sv(key), value, 16);
    } catch (...) {
    }
}
void api_mapping_set_text(nnergy_mapping* m, nnergy_string_view key,
                          nnergy_string_view value) noexcept {
    if (!m) return;
    try {
        m->texts.set(sv(key), sv(value), 4);
    } catch (...) {
    }
}
void api_mapping_add_level(nnergy_mapping* m, nnergy_string_view level, double bytes,
                           double bandwidth) noexcept {
    if (!m) return;
    try {
        const size_t position = m->levels.size();
        nnergy_mapping::level& l = m->levels.grow(4);
        // A reused level usually has its name already.
        if (!(l.name == sv(level)))
            l.name = nnergy_mapping::name::at<nnergy_mapping::level>(sv(level), position);
        l.bytes = bytes;
        l.bandwidth_bytes_per_s = bandwidth;
    } catch (...) {
    }
}
bool api_mapping_get_number(const nnergy_mapping* m, nnergy_string_view key, double* out) noexcept {
    const double* v = m ? m->numbers.find(sv(key)) : nullptr;
    if (v && out) *out = *v;
    return v != nullptr;
}
bool api_mapping_get_text(const nnergy_mapping* m, nnergy_string_view key,
                          nnergy_string_view* out) noexcept {
    const std::string* v = m ? m->texts.find(sv(key)) : nullptr;
    if (v && out) *out = to_sv(*v);
    return v != nullptr;
}
size_t api_mapping_level_count(const nnergy_mapping* m) noexcept {
    return m ? m->levels.size() : 0;
}
void api_mapping_level(const nnergy_mapping* m, size_t i, nnergy_string_view* level, double* bytes,
                       double* bandwidth) noexcept {
    if (!m || i >= m->levels.size()) return;
    if (level) *level = to_sv(m->levels[i].name.view());
    if (bytes) *bytes = m->levels[i].bytes;
    if (bandwidth) *bandwidth = m->levels[i].bandwidth_bytes_per_s;
}

// Counts an event: `matches` finds its entry among the kernel's, `names_of(position)` gives its
// pooled names when it is new. A count already there adds up.
template <class Matches, class Names>
void add_event(nnergy_mapping* m, double count, Matches matches, Names names_of) noexcept {
    if (!m || !(count >= 0) || !std::isfinite(count)) return;
    try {
        using placed = nnergy::detail::unique_list<nnergy_mapping::event>::placed;
        const size_t position = m->events.size();
        auto [e, how] = m->events.place(matches, 16);
        if (how == placed::live) {
            e.count += count;
            return;
        }
        if (how == placed::fresh) std::tie(e.category, e.name) = names_of(position);
        e.count = count;
    } catch (...) {
    }
}
void api_mapping_add_event(nnergy_mapping* m, nnergy_string_view category, nnergy_string_view event,
                           double count) noexcept {
    add_event(
        m, count,
        [&](const nnergy_mapping::event& x) {
            return nnergy::modeling::same_text(x.name, sv(event)) &&
                   nnergy::modeling::same_text(x.category, sv(category));
        },
        [&](size_t position) {
            struct category_tag;
            return std::pair{nnergy_mapping::name::at<category_tag>(sv(category), position),
                             nnergy_mapping::name::at<nnergy_mapping::event>(sv(event), position)};
        });
}
// Interned names (since 1.7): a handle is a pooled name's address, so these compare
// addresses where the text forms above compare texts.
const nnergy_name* api_name_intern(nnergy_string_view name) noexcept {
    try {
        return nnergy::detail::pooled_name::of(sv(name)).handle();
    } catch (...) {
        return nullptr;
    }
}
void api_mapping_set_number_named(nnergy_mapping* m, const nnergy_name* key,
                                  double value) noexcept {
    if (!m || !key) return;
    try {
        m->numbers.set(nnergy_mapping::name::from_handle(key), value, 16);
    } catch (...) {
    }
}
void api_mapping_set_text_named(nnergy_mapping* m, const nnergy_name* key,
                                nnergy_string_view value) noexcept {
    if (!m || !key) return;
    try {
        m->texts.set(nnergy_mapping::name::from_handle(key), sv(value), 4);
    } catch (...) {
    }
}
bool api_mapping_get_number_named(const nnergy_mapping* m, const nnergy_name* key,
                                  double* out) noexcept {
    const double* v = m && key ? m->numbers.find(nnergy_mapping::name::from_handle(key)) : nullptr;
    if (v && out) *out = *v;
    return v != nullptr;
}
bool api_mapping_get_text_named(const nnergy_mapping* m, const nnergy_name* key,
                                nnergy_string_view* out) noexcept {
    const std::string* v =
        m && key ? m->texts.find(nnergy_mapping::name::from_handle(key)) : nullptr;
    if (v && out) *out = to_sv(*v);
    return v != nullptr;
}
void api_mapping_add_event_named(nnergy_mapping* m, const nnergy_name* category,
                                 const nnergy_name* event, double count) noexcept {
    if (!category || !event) return;
    const nnergy_mapping::name c = nnergy_mapping::name::from_handle(category);
    const nnergy_mapping::name n = nnergy_mapping::name::from_handle(event);
    add_event(
        m, count, [&](const nnergy_mapping::event& x) { return x.name == n && x.category == c; },
        [&](size_t) {
            return std::pair{c, n};
        });
}
size_t api_mapping_event_count(const nnergy_mapping* m) noexcept {
    return m ? m->events.size() : 0;
}
void api_mapping_event(const nnergy_mapping* m, size_t i, nnergy_string_view* category,
                       nnergy_string_view* event, double* count) noexcept {
    if (!m || i >= m->events.size()) return;
    if (category) *category = to_sv(m->events[i].category.view());
    if (event) *event = to_sv(m->events[i].name.view());
    if (count) *count = m->events[i].count;
}

// ---- results ----

bool api_results_get_kernel_number(const nnergy_results* r, uint32_t k, nnergy_string_view key,
                                   double* out) noexcept {
    if (!r || k >= r->kernel_numbers.size()) return false;
    const std::string_view name = sv(key);
    uint32_t id = r->last_read_key.load(std::memory_order_relaxed);
    if (id == nnergy_results::no_key || r->kernel_keys.name(id) != name) {
        const std::optional<uint32_t> found = r->kernel_keys.find(name);
        if (!found) return false;
        id = *found;
        r->last_read_key.store(id, std::memory_order_relaxed);
    }
    for (const auto& [kid, v] : r->kernel_numbers[k])
        if (kid == id) {
            if (out) *out = v;
            return true;
        }
    return false;
}
bool api_results_get_total(const nnergy_results* r, nnergy_string_view key, double* out) noexcept {
    const double* v = r ? r->totals.find(sv(key)) : nullptr;  // read rarely: by text
    if (v && out) *out = *v;
    return v != nullptr;
}
bool api_results_get_total_text(const nnergy_results* r, nnergy_string_view key,
                                nnergy_string_view* out) noexcept {
    const std::string* v = r ? r->total_texts.find(sv(key)) : nullptr;
    if (v && out) *out = to_sv(*v);
    return v != nullptr;
}

void api_results_set_kernel_number(nnergy_results* r, uint32_t k, nnergy_string_view key,
                                   double value) noexcept {
    if (!r || k >= r->kernel_numbers.size()) return;
    try {
        auto& list = r->kernel_numbers[k];
        const std::string_view name = sv(key);
        const uint32_t previous = list.empty() ? nnergy_results::no_key : list.back().first;
        const uint32_t predicted =
            previous == nnergy_results::no_key ? r->first_key : r->next_key[previous];
        const uint32_t id =
            predicted != nnergy_results::no_key && r->kernel_keys.name(predicted) == name
                ? predicted
                : r->kernel_keys.intern(name);
        if (id >= r->next_key.size()) r->next_key.resize(id + 1, nnergy_results::no_key);
        if (previous == nnergy_results::no_key)
            r->first_key = id;
        else
            r->next_key[previous] = id;
        // Which kernels hold the key: a set key is overwritten in place, a new one appended,
        // without scanning the kernel's keys for every write.
        if (id >= r->key_kernels.size()) r->key_kernels.resize(id + 1);
        std::vector<uint64_t>& holders = r->key_kernels[id];
        if (holders.size() <= k / 64) holders.resize(r->kernel_numbers.size() / 64 + 1, 0);
        const uint64_t bit = uint64_t{1} << (k % 64);
        if (holders[k / 64] & bit) {
            for (auto& kv : list)
                if (kv.first == id) {
                    kv.second = value;
                    return;
                }
        }
        holders[k / 64] |= bit;
        if (list.size() == list.capacity()) list.reserve(list.empty() ? 16 : 2 * list.size());
        list.emplace_back(id, value);
    } catch (...) {
    }
}
void api_results_set_kernel_text(nnergy_results* r, uint32_t k, nnergy_string_view key,
                                 nnergy_string_view value) noexcept {
    if (!r || k >= r->kernel_texts.size()) return;
    try {
        r->kernel_texts[k].set(sv(key), sv(value), 2);
    } catch (...) {
    }
}
void api_results_set_total(nnergy_results* r, nnergy_string_view key, double value) noexcept {
    if (!r) return;
    try {
        r->totals.set(nnergy::detail::pooled_name::of(sv(key)), value, 8);
    } catch (...) {
    }
}
void api_results_set_total_text(nnergy_results* r, nnergy_string_view key,
                                nnergy_string_view value) noexcept {
    if (!r) return;
    try {
        r->total_texts.set(sv(key), sv(value), 2);
    } catch (...) {
    }
}

// ---- report documents ----

nnergy_value_kind api_value_kind(const nnergy_value* v) noexcept {
    return v ? v->kind() : NNERGY_VALUE_NULL;
}
bool api_value_bool(const nnergy_value* v) noexcept { return v && v->bool_value(); }
int64_t api_value_int(const nnergy_value* v) noexcept {
    if (!v) return 0;
    if (v->kind() == NNERGY_VALUE_INT) return v->int_value();
    const double f = v->float_value();
    if (v->kind() == NNERGY_VALUE_FLOAT && std::isfinite(f) && std::fabs(f) < 9.2e18)
        return static_cast<int64_t>(f);
    return 0;
}
double api_value_float(const nnergy_value* v) noexcept { return v ? v->float_value() : 0; }
nnergy_string_view api_value_string(const nnergy_value* v) noexcept {
    return v && v->kind() == NNERGY_VALUE_STRING ? to_sv(v->string_value())
                                                 : nnergy_string_view{nullptr, 0};
}
size_t api_value_size(const nnergy_value* v) noexcept { return v ? v->items().size() : 0; }
const nnergy_value* api_value_at(const nnergy_value* v, size_t i) noexcept {
    return v && i < v->items().size() ? &v->items()[i] : nullptr;
}
nnergy_string_view api_value_key(const nnergy_value* v, size_t i) noexcept {
    return v && v->kind() == NNERGY_VALUE_OBJECT && i < v->items().size()
               ? to_sv(v->items()[i].key())
               : nnergy_string_view{nullptr, 0};
}
const nnergy_value* api_value_get(const nnergy_value* v, nnergy_string_view key) noexcept {
    return v ? v->get(sv(key)) : nullptr;
}
nnergy_status* api_output_write(nnergy_output* out, nnergy_string_view bytes) noexcept {
    return host_guard([&] {
        if (!out) throw error("output_write: output is NULL");
        if (out->file)
            out->file->write(sv(bytes));
        else
            out->bytes.append(sv(bytes));
    });
}

bool api_output_allows_color(const nnergy_output* out) noexcept { return out && out->allows_color; }
nnergy_string_view api_output_path(const nnergy_output* out) noexcept {
    return out ? to_sv(out->path) : nnergy_string_view{nullptr, 0};
}
nnergy_status* api_output_companion(nnergy_output* out, nnergy_string_view suffix,
                                    nnergy_output** out_companion) noexcept {
    return host_guard([&] {
        if (!out || !out_companion) throw error("output_companion: output is NULL");
        *out_companion = nullptr;
        const std::string_view s = sv(suffix);
        if (s.empty() || s.find_first_of("/\\") != std::string_view::npos)
            throw error(fmt::format(
                "output_companion: suffix '{}' must be non-empty and hold no path separator", s));
        for (auto& [known, companion] : out->companions)
            if (known == s) {
                *out_companion = companion.get();
                return;
            }
        auto companion = std::make_unique<nnergy_output>();
        if (!out->path.empty()) {
            // "report.csv" + "-totals.csv" -> "report-totals.csv"
            std::filesystem::path p(out->path);
            p.replace_extension();
            companion->path = p.string() + std::string(s);
            // Beside a report file streamed the same way; a device's or a pipe's companion
            // (a name made from theirs) is held and written at the end.
            if (out->file && !out->file->in_place() && streams_to_file(companion->path))
                companion->file = std::make_unique<pending_file>(companion->path);
        }
        *out_companion = companion.get();
        out->companions.emplace_back(std::string(s), std::move(companion));
    });
}

const nnergy_host_api k_host_api = [] {
    nnergy_host_api a{};
    a.struct_size = sizeof(nnergy_host_api);
    a.status_create = api_status_create;
    a.status_release = api_status_release;
    a.status_code = api_status_code;
    a.status_message = api_status_message;
    a.log = api_log;
    a.config_file_read = api_config_file_read;
    a.config_file_size = api_config_file_size;
    a.config_file_at = api_config_file_at;
    a.config_file_release = api_config_file_release;
    a.graph_add_tensor = api_graph_add_tensor;
    a.graph_set_initializer = api_graph_set_initializer;
    a.graph_set_initializer_values = api_graph_set_initializer_values;
    a.graph_set_constant = api_graph_set_constant;
    a.mapping_add_event = api_mapping_add_event;
    a.mapping_event_count = api_mapping_event_count;
    a.mapping_event = api_mapping_event;
    a.results_get_kernel_number = api_results_get_kernel_number;
    a.results_get_total = api_results_get_total;
    a.results_get_total_text = api_results_get_total_text;
    a.output_allows_color = api_output_allows_color;
    a.output_path = api_output_path;
    a.output_companion = api_output_companion;
    a.graph_identity = api_graph_identity;
    a.partition_identity = api_partition_identity;
    a.graph_reserve = api_graph_reserve;
    a.name_intern = api_name_intern;
    a.mapping_set_number_named = api_mapping_set_number_named;
    a.mapping_set_text_named = api_mapping_set_text_named;
    a.mapping_get_number_named = api_mapping_get_number_named;
    a.mapping_get_text_named = api_mapping_get_text_named;
    a.mapping_add_event_named = api_mapping_add_event_named;
    a.graph_add_input = api_graph_add_input;
    a.graph_add_output = api_graph_add_output;
    a.graph_add_node = api_graph_add_node;
    a.node_set_attr_int = api_node_set_attr_int;
    a.node_set_attr_float = api_node_set_attr_float;
    a.node_set_attr_string = api_node_set_attr_string;
    a.node_set_attr_ints = api_node_set_attr_ints;
    a.node_set_attr_floats = api_node_set_attr_floats;
    a.graph_set_metadata = api_graph_set_metadata;
    a.node_set_source_line = api_node_set_source_line;
    a.graph_node_count = api_graph_node_count;
    a.graph_tensor_count = api_graph_tensor_count;
    a.graph_name = api_graph_name;
    a.node_name = api_node_name;
    a.node_op_type = api_node_op_type;
    a.node_domain = api_node_domain;
    a.node_input_count = api_node_input_count;
    a.node_input = api_node_input;
    a.node_output_count = api_node_output_count;
    a.node_output = api_node_output;
    a.node_attr_int = api_node_attr_int;
    a.node_attr_float = api_node_attr_float;
    a.node_attr_string = api_node_attr_string;
    a.node_attr_ints = api_node_attr_ints;
    a.node_counts = api_node_counts;
    a.tensor_name = api_tensor_name;
    a.tensor_dtype = api_tensor_dtype;
    a.tensor_rank = api_tensor_rank;
    a.tensor_dim = api_tensor_dim;
    a.tensor_bytes = api_tensor_bytes;
    a.tensor_is_initializer = api_tensor_is_initializer;
    a.tensor_int_values = api_tensor_int_values;
    a.tensor_producer = api_tensor_producer;
    a.tensor_consumer_count = api_tensor_consumer_count;
    a.tensor_consumer = api_tensor_consumer;
    a.tensor_is_graph_output = api_tensor_is_graph_output;
    a.partition_add_kernel = api_partition_add_kernel;
    a.partition_kernel_count = api_partition_kernel_count;
    a.kernel_name = api_kernel_name;
    a.kernel_pattern = api_kernel_pattern;
    a.kernel_node_count = api_kernel_node_count;
    a.kernel_node = api_kernel_node;
    a.kernel_stats = api_kernel_stats;
    a.kernel_dependency_count = api_kernel_dependency_count;
    a.kernel_dependency = api_kernel_dependency;
    a.mapping_set_number = api_mapping_set_number;
    a.mapping_set_text = api_mapping_set_text;
    a.mapping_add_level = api_mapping_add_level;
    a.mapping_get_number = api_mapping_get_number;
    a.mapping_get_text = api_mapping_get_text;
    a.mapping_level_count = api_mapping_level_count;
    a.mapping_level = api_mapping_level;
    a.results_set_kernel_number = api_results_set_kernel_number;
    a.results_set_kernel_text = api_results_set_kernel_text;
    a.results_set_total = api_results_set_total;
    a.results_set_total_text = api_results_set_total_text;
    a.value_kind = api_value_kind;
    a.value_bool = api_value_bool;
    a.value_int = api_value_int;
    a.value_float = api_value_float;
    a.value_string = api_value_string;
    a.value_size = api_value_size;
    a.value_at = api_value_at;
    a.value_key = api_value_key;
    a.value_get = api_value_get;
    a.output_write = api_output_write;
    return a;
}();

// Calls into a plugin; a C++ exception escaping it (a plugin bug) becomes an error here.
template <class F>
nnergy_status* call_plugin(const component_entry& e, const char* what, F&& f) {
    try {
        return f();
    } catch (...) {
        throw error(fmt::format("{} '{}' ({}): {} threw an exception across the plugin boundary",
                                kind_name(e.kind), e.name, e.library->file.string(), what),
                    exit_code::failure);
    }
}

[[noreturn]] void fail(const component_entry& e, const std::string& what, nnergy_status* s,
                       exit_code code = exit_code::failure) {
    nnergy_status_code sc = s->code;
    std::string msg = consume_status(s);
    if (sc == NNERGY_CODE_INVALID_ARGUMENT || sc == NNERGY_CODE_NOT_FOUND ||
        sc == NNERGY_CODE_IO_ERROR)
        code = exit_code::invalid_input;
    throw error(fmt::format("{} ({}): {}", e.name, what, msg), code);
}

/// Runs `step` for an instance a pipeline table configured: an error it throws is told at that
/// table (`pipeline.toml:21: nnergy.estimator.energy (estimate): ...`), so a pipeline that lists
/// its plugins in the wrong order or with the wrong settings is found where it says so. An
/// instance the command line chose (no line), and a message that already names the file (a
/// setting's own line), are passed on as they are.
template <class Step>
decltype(auto) told_at(const source_location& where, Step&& step) {
    try {
        return step();
    } catch (const error& e) {
        const std::string_view what = e.what();
        if (where.line == 0 || what.find(where.file) != std::string_view::npos) throw;
        throw error(fmt::format("{}: {}", where.str(), what), e.code());
    }
}

}  // namespace

const nnergy_host_api* host_api() noexcept { return &k_host_api; }

std::string consume_status(nnergy_status* status) {
    std::string msg = status ? status->message : std::string();
    if (status == &k_out_of_memory_status) msg = "out of memory";
    free_status(status);
    return msg.empty() ? std::string("(no message)") : msg;
}

std::vector<nnergy_named_value> named_value_views(const config_values& values) {
    std::vector<nnergy_named_value> out;
    out.reserve(values.size());
    for (const config_value& v : values) {
        nnergy_named_value n{};
        n.struct_size = sizeof n;
        n.name = to_sv(v.name);
        n.kind = v.kind;
        n.bool_value = v.bool_value;
        n.int_value = v.int_value;
        n.float_value = v.float_value;
        n.string_value = to_sv(v.string_value);
        n.file = to_sv(v.file);
        n.line = v.line;
        out.push_back(n);
    }
    return out;
}

// ---- component instances ----

struct component_instance::state {
    nnergy_host_context ctx;
    config_values config;
    std::shared_ptr<const config_values> hardware;
    config_values runtime;
    std::vector<nnergy_named_value> config_views;
    std::vector<nnergy_named_value> hardware_views;
    std::vector<nnergy_named_value> runtime_views;
    /// Names hardware_views for estimators' caches: the views live, unchanged, as long as the
    /// instance, and no other instance gets the number (docs/abi.md §9).
    uint64_t hardware_identity = 0;
};

component_instance::component_instance(const component_entry& entry, config_values config,
                                       config_values hardware, std::filesystem::path base_dir,
                                       config_values runtime, source_location where)
    : component_instance(shared_hardware{}, entry, std::move(config),
                         std::make_shared<const config_values>(std::move(hardware)),
                         std::move(base_dir), std::move(runtime), std::move(where)) {}

std::unique_ptr<component_instance> component_instance::sharing_hardware(
    const component_entry& entry, config_values config,
    std::shared_ptr<const config_values> hardware, std::filesystem::path base_dir,
    config_values runtime, source_location where) {
    return std::unique_ptr<component_instance>(
        new component_instance(shared_hardware{}, entry, std::move(config), std::move(hardware),
                               std::move(base_dir), std::move(runtime), std::move(where)));
}

component_instance::component_instance(shared_hardware, const component_entry& entry,
                                       config_values config,
                                       std::shared_ptr<const config_values> hardware,
                                       std::filesystem::path base_dir, config_values runtime,
                                       source_location where)
    : entry_(resolve_component(entry)),
      state_(std::make_unique<state>()),
      where_(std::move(where)) {
    state_->ctx.component_name = entry.name;
    state_->ctx.base_dir = std::move(base_dir);
    state_->config = std::move(config);
    state_->hardware = hardware ? std::move(hardware) : std::make_shared<const config_values>();
    state_->config_views = named_value_views(state_->config);
    state_->hardware_views = named_value_views(*state_->hardware);
    state_->hardware_identity = new_identity();
    state_->runtime = std::move(runtime);
    state_->runtime_views = named_value_views(state_->runtime);
    nnergy_create_args args{};
    args.struct_size = sizeof args;
    args.ctx = &state_->ctx;
    args.api = host_api();
    args.config = state_->config_views.data();
    args.config_count = state_->config_views.size();
    args.hardware = state_->hardware_views.data();
    args.hardware_count = state_->hardware_views.size();
    args.runtime = state_->runtime_views.data();
    args.runtime_count = state_->runtime_views.size();
    void* self = nullptr;
    told_at(where_, [&] {
        nnergy_status* s =
            call_plugin(entry_, "create", [&] { return entry_.descriptor.create(&args, &self); });
        if (s) fail(entry_, "create", s);
    });
    self_ = self;
}

component_instance::~component_instance() {
    try {
        if (self_) entry_.descriptor.destroy(self_);
    } catch (...) {
        spdlog::error("{}: destroy threw an exception", entry_.name);
    }
}

nnergy_host_context* component_instance::context() const noexcept { return &state_->ctx; }
const config_values& component_instance::hardware() const noexcept { return *state_->hardware; }
const std::vector<nnergy_named_value>& component_instance::hardware_views() const noexcept {
    return state_->hardware_views;
}
uint64_t component_instance::hardware_identity() const noexcept {
    return state_->hardware_identity;
}
bool component_instance::keys_hardware_caches_by_identity() const noexcept {
    return entry_.library && entry_.library->abi_minor >= 9;
}

graph load_model(component_instance& frontend, const std::filesystem::path& path) {
    const component_entry& e = frontend.entry();
    if (e.kind != NNERGY_KIND_FRONTEND)
        throw error(fmt::format("'{}' is {}, not a frontend", e.name, kind_with_article(e.kind)),
                    exit_code::usage);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw error(fmt::format("{}: no such model file", path.string()));
    graph g;
    g.source_path = path.string();
    nnergy_graph_builder b;
    b.target = &g;
    b.file = path.string();
    const std::string p = path.string();
    auto vtbl = static_cast<const nnergy_frontend_vtbl*>(e.vtbl);
    nnergy_status* s = call_plugin(e, "load", [&] {
        return vtbl->load(frontend.self(), nnergy_string_view{p.data(), p.size()}, &b);
    });
    if (s) fail(e, "loading " + p, s, exit_code::invalid_input);
    if (g.name.empty()) g.name = path.stem().string();
    g.finalize();
    return g;
}

partition run_partitioner(component_instance& partitioner, const bound_graph& g) {
    const component_entry& e = partitioner.entry();
    if (e.kind != NNERGY_KIND_PARTITIONER)
        throw error(fmt::format("'{}' is {}, not a partitioner", e.name, kind_with_article(e.kind)),
                    exit_code::usage);
    nnergy_graph view{g.source, &g};
    nnergy_partition_builder b;
    b.graph = &g;
    auto vtbl = static_cast<const nnergy_partitioner_vtbl*>(e.vtbl);
    return told_at(partitioner.where(), [&] {
        nnergy_status* s = call_plugin(
            e, "partition", [&] { return vtbl->partition(partitioner.self(), &view, &b); });
        if (s) fail(e, "partition", s);
        return finalize_partition(g, std::move(b.kernels), e.name);
    });
}

std::vector<nnergy_mapping> map_kernels(const component_instance& architecture,
                                        const bound_graph& g, const partition& p,
                                        nnergy_dtype precision) {
    std::vector<nnergy_mapping> out;
    map_kernels(architecture, g, p, precision, out);
    return out;
}

void map_kernels(const component_instance& architecture, const bound_graph& g, const partition& p,
                 nnergy_dtype precision, std::vector<nnergy_mapping>& out, uint64_t flags) {
    const component_entry& e = architecture.entry();
    auto vtbl = static_cast<const nnergy_architecture_vtbl*>(e.vtbl);
    nnergy_graph gv{g.source, &g};
    nnergy_partition pv{&p};
    nnergy_map_options options{};
    options.struct_size = sizeof options;
    options.precision = precision;
    options.flags = flags;
    out.resize(p.kernels.size());
    for (nnergy_mapping& m : out) m.clear();
    told_at(architecture.where(), [&] {
        for (uint32_t k = 0; k < p.kernels.size(); ++k) {
            nnergy_status* s = call_plugin(e, "map_kernel", [&] {
                return vtbl->map_kernel(architecture.self(), &gv, &pv, k, &options, &out[k]);
            });
            if (s) {
                nnergy_status_code code = s->code;
                std::string msg = consume_status(s);
                throw error(
                    fmt::format("{}: mapping kernel '{}': {}", e.name, p.kernels[k].name, msg),
                    code == NNERGY_CODE_UNIMPLEMENTED || code == NNERGY_CODE_INVALID_ARGUMENT
                        ? exit_code::invalid_input
                        : exit_code::failure);
            }
        }
    });
}

void run_estimator(const component_instance& estimator, const component_instance& architecture,
                   const bound_graph& g, const partition& p,
                   const std::vector<nnergy_mapping>& mappings, nnergy_dtype precision,
                   nnergy_results& out, uint64_t flags) {
    const component_entry& e = estimator.entry();
    auto vtbl = static_cast<const nnergy_estimator_vtbl*>(e.vtbl);
    nnergy_graph gv{g.source, &g};
    nnergy_partition pv{&p};
    // The pointers' array is taken from this thread's spare and put back after the call: a
    // sweep makes a call per estimator and evaluation, and then allocates none. (A call that
    // throws drops it: the next one allocates again.)
    thread_local std::vector<const nnergy_mapping*> spare;
    std::vector<const nnergy_mapping*> ptrs = std::move(spare);
    ptrs.clear();
    ptrs.reserve(mappings.size());
    for (const auto& m : mappings) ptrs.push_back(&m);
    const std::vector<nnergy_named_value>& hw = architecture.hardware_views();
    nnergy_map_options options{};
    options.struct_size = sizeof options;
    options.precision = precision;
    options.flags = flags;
    nnergy_estimate_input in{};
    in.struct_size = sizeof in;
    in.graph = &gv;
    in.partition = &pv;
    in.mappings = ptrs.data();
    in.mapping_count = ptrs.size();
    in.hardware = hw.data();
    in.hardware_count = hw.size();
    in.options = &options;
    in.hardware_identity = architecture.hardware_identity();
    out.kernel_numbers.resize(p.kernels.size());
    out.kernel_texts.resize(p.kernels.size());
    told_at(estimator.where(), [&] {
        nnergy_status* s =
            call_plugin(e, "estimate", [&] { return vtbl->estimate(estimator.self(), &in, &out); });
        if (s) fail(e, "estimate", s);
    });
    spare = std::move(ptrs);
}

namespace {

// https://no-color.org: any non-empty NO_COLOR turns colour off; a dumb terminal has none.
bool stdout_allows_color() {
    const char* no_color = std::getenv("NO_COLOR");
    if (no_color && *no_color) return false;
    const char* term = std::getenv("TERM");
    if (term && std::string_view(term) == "dumb") return false;
    return ::isatty(::fileno(stdout)) != 0;
}

}  // namespace

pending_file::pending_file(std::string destination, mode how)
    : destination_(std::move(destination)), how_(how) {}

pending_file::~pending_file() {
    if (!file_) return;
    if (file_ == stdout) {
        std::fflush(stdout);
        return;
    }
    std::fclose(file_);
    if (!committed_ && how_ == mode::beside) std::remove(temporary_.c_str());
}

std::string pending_file::described() const {
    return destination_.empty() ? "the report to standard output"
                                : fmt::format("report file '{}'", destination_);
}

void pending_file::open() {
    if (how_ == mode::in_place) {
        file_ = destination_.empty() ? stdout : std::fopen(destination_.c_str(), "wb");
    } else {
        // Beside the destination, so that putting it in place is a rename within one file
        // system; exclusive, so that a file of that name is never written over: one left by a
        // process stopped while writing (its number reused since) makes this one take the next
        // free name.
        for (int attempt = 0; attempt < 100 && !file_; ++attempt) {
            temporary_ = attempt == 0
                             ? fmt::format("{}.partial-{}", destination_, ::getpid())
                             : fmt::format("{}.partial-{}-{}", destination_, ::getpid(), attempt);
            file_ = std::fopen(temporary_.c_str(), "wbx");
            if (!file_ && errno != EEXIST) break;
        }
    }
    if (!file_) throw error(fmt::format("cannot write {}: {}", described(), std::strerror(errno)));
}

void pending_file::write(std::string_view bytes) {
    if (!file_) open();
    if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
        throw error(fmt::format("error writing {}: {}", described(), std::strerror(errno)));
}

void pending_file::commit() {
    if (!file_) open();
    // A write error may show only when the buffered bytes go out, at the flush or the close.
    const bool flushed = std::fflush(file_) == 0;
    const int flush_errno = errno;
    bool closed = true;  // standard output stays open
    int close_errno = 0;
    if (file_ != stdout) {
        closed = std::fclose(file_) == 0;
        close_errno = errno;
    }
    file_ = nullptr;
    if (!flushed || !closed || (how_ == mode::beside && !replace_file(temporary_, destination_))) {
        const int e = !flushed ? flush_errno : !closed ? close_errno : errno;
        if (how_ == mode::beside) std::remove(temporary_.c_str());
        throw error(fmt::format("error writing {}: {}", described(), std::strerror(e)));
    }
    committed_ = true;
}

bool streams_to_file(const std::string& path) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::symlink_status(path, ec);
    if (ec) return ec == std::errc::no_such_file_or_directory;
    return st.type() == std::filesystem::file_type::not_found ||
           st.type() == std::filesystem::file_type::regular;
}

std::vector<reporter_output> run_reporter(component_instance& reporter,
                                          const ::nnergy_value& report, const std::string& output,
                                          bool stream_files) {
    const component_entry& e = reporter.entry();
    auto vtbl = static_cast<const nnergy_reporter_vtbl*>(e.vtbl);
    nnergy_output out;
    if (output.empty() || output == "-") {
        out.allows_color = stdout_allows_color();
        if (stream_files)
            out.file = std::make_unique<pending_file>(std::string(), pending_file::mode::in_place);
    } else {
        out.path = output;
        if (stream_files)
            out.file = std::make_unique<pending_file>(output, streams_to_file(output)
                                                                  ? pending_file::mode::beside
                                                                  : pending_file::mode::in_place);
    }
    told_at(reporter.where(), [&] {
        nnergy_status* s =
            call_plugin(e, "report", [&] { return vtbl->report(reporter.self(), &report, &out); });
        if (s) fail(e, "report", s);
    });
    std::vector<reporter_output> written;
    written.push_back({out.path, std::move(out.bytes), std::move(out.file)});
    for (auto& [suffix, companion] : out.companions)
        written.push_back(
            {companion->path, std::move(companion->bytes), std::move(companion->file)});
    return written;
}

}  // namespace nnergy
