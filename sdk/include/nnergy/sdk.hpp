// SPDX-License-Identifier: Apache-2.0
/// \file sdk.hpp
/// \brief Header-only C++17 layer over the nnergy C ABI (plugin.h).
///
/// A plugin author writes one class per component and one NNERGY_PLUGIN_DEFINE line. This header
/// is compiled by the plugin's own compiler and standard library, so nothing in it is ABI: it
/// only ever talks to the host through the C structs of plugin.h. Exceptions thrown inside a
/// component become statuses at the boundary.
#ifndef NNERGY_SDK_HPP
#define NNERGY_SDK_HPP

#include <nnergy/plugin.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nnergy::sdk {
inline namespace v1 {

// ------------------------------------------------------------------------------------------------
// Basics
// ------------------------------------------------------------------------------------------------

inline nnergy_string_view to_sv(std::string_view s) noexcept { return {s.data(), s.size()}; }
inline std::string_view from_sv(nnergy_string_view s) noexcept {
    return s.data ? std::string_view(s.data, s.size) : std::string_view();
}

namespace detail {
// One per plugin library: the header is compiled into each library with hidden visibility.
inline const nnergy_host_api*& api_slot() noexcept {
    static const nnergy_host_api* api = nullptr;
    return api;
}
}  // namespace detail

/// The host API table this library negotiated with. Valid after negotiation.
inline const nnergy_host_api& host() { return *detail::api_slot(); }

/// An error with a status code; thrown inside a plugin, turned into a status at the boundary.
class error : public std::runtime_error {
public:
    explicit error(std::string message, nnergy_status_code code = NNERGY_CODE_INVALID_ARGUMENT)
        : std::runtime_error(std::move(message)), code_(code) {}
    nnergy_status_code code() const noexcept { return code_; }

private:
    nnergy_status_code code_;
};

namespace detail {
inline nnergy_status* status_from_current_exception() noexcept {
    const nnergy_host_api* api = api_slot();
    if (!api) return nullptr;  // cannot report without a host; negotiation never got this far
    try {
        throw;
    } catch (const error& e) {
        return api->status_create(e.code(), to_sv(e.what()));
    } catch (const std::exception& e) {
        std::string msg = std::string("unexpected exception in plugin: ") + e.what();
        return api->status_create(NNERGY_CODE_INTERNAL, to_sv(msg));
    } catch (...) {
        return api->status_create(NNERGY_CODE_INTERNAL,
                                  to_sv("unexpected non-standard exception in plugin"));
    }
}

/// Runs `f` and converts any exception into a host status.
template <class F>
nnergy_status* guarded(F&& f) noexcept {
    try {
        f();
        return nullptr;
    } catch (...) {
        return status_from_current_exception();
    }
}

/// Throws when a host call returned an error, carrying the host's message and code.
inline void check(nnergy_status* status, const char* what) {
    if (status) {
        std::string message(from_sv(host().status_message(status)));
        nnergy_status_code code = host().status_code(status);
        host().status_release(status);
        if (message.empty()) message = std::string("host rejected ") + what;
        throw error(std::move(message), code);
    }
}
}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Configuration values
// ------------------------------------------------------------------------------------------------

/// A read-only view of flattened configuration values (a component's pipeline table, a
/// hardware description, or a TOML file read through the host).
class config_view {
public:
    /// Steps through the host's array by its elements' struct_size (NNERGY_ARRAY_AT), which is
    /// larger than this header's sizeof when the host is of a newer minor.
    class iterator {
    public:
        using value_type = nnergy_named_value;
        using reference = const nnergy_named_value&;
        using pointer = const nnergy_named_value*;
        using difference_type = std::ptrdiff_t;
        using iterator_category = std::forward_iterator_tag;

        iterator() = default;
        reference operator*() const noexcept { return *get(); }
        pointer operator->() const noexcept { return get(); }
        iterator& operator++() noexcept {
            bytes_ += stride_;
            return *this;
        }
        iterator operator++(int) noexcept {
            iterator old = *this;
            ++*this;
            return old;
        }
        friend bool operator==(const iterator& a, const iterator& b) noexcept {
            return a.bytes_ == b.bytes_;
        }
        friend bool operator!=(const iterator& a, const iterator& b) noexcept { return !(a == b); }

    private:
        friend class config_view;
        iterator(const unsigned char* bytes, size_t stride) : bytes_(bytes), stride_(stride) {}
        pointer get() const noexcept {
            return static_cast<pointer>(static_cast<const void*>(bytes_));
        }
        const unsigned char* bytes_ = nullptr;
        size_t stride_ = 0;
    };

    config_view() = default;
    config_view(const nnergy_named_value* values, size_t count)
        : values_(count ? values : nullptr), count_(values ? count : 0) {}

    size_t size() const noexcept { return count_; }
    const nnergy_named_value& operator[](size_t i) const noexcept {
        return *NNERGY_ARRAY_AT(nnergy_named_value, values_, i);
    }
    iterator begin() const noexcept { return iterator(bytes(), stride()); }
    iterator end() const noexcept { return iterator(bytes() + count_ * stride(), stride()); }

    const nnergy_named_value* find(std::string_view key) const noexcept {
        for (const nnergy_named_value& v : *this)
            if (from_sv(v.name) == key) return &v;
        return nullptr;
    }
    bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }

    std::optional<double> number(std::string_view key) const {
        const nnergy_named_value* v = find(key);
        if (!v) return std::nullopt;
        if (v->kind != NNERGY_VALUE_FLOAT && v->kind != NNERGY_VALUE_INT)
            throw error(where(*v) + ": '" + std::string(key) + "' must be a number");
        return v->float_value;
    }
    std::optional<int64_t> integer(std::string_view key) const {
        const nnergy_named_value* v = find(key);
        if (!v) return std::nullopt;
        if (v->kind != NNERGY_VALUE_INT)
            throw error(where(*v) + ": '" + std::string(key) + "' must be an integer");
        return v->int_value;
    }
    std::optional<std::string> string(std::string_view key) const {
        const nnergy_named_value* v = find(key);
        if (!v) return std::nullopt;
        if (v->kind != NNERGY_VALUE_STRING)
            throw error(where(*v) + ": '" + std::string(key) + "' must be a string");
        return std::string(from_sv(v->string_value));
    }
    std::optional<bool> boolean(std::string_view key) const {
        const nnergy_named_value* v = find(key);
        if (!v) return std::nullopt;
        if (v->kind != NNERGY_VALUE_BOOL)
            throw error(where(*v) + ": '" + std::string(key) + "' must be true or false");
        return v->bool_value;
    }
    double number_or(std::string_view key, double fallback) const {
        return number(key).value_or(fallback);
    }
    /// A required number; the error names the missing key and `context` (e.g. the file).
    double require_number(std::string_view key, std::string_view context) const {
        auto v = number(key);
        if (!v)
            throw error(
                std::string(context) + ": missing required number '" + std::string(key) + "'",
                NNERGY_CODE_NOT_FOUND);
        return *v;
    }

    /// Rejects keys outside `known`, naming the file, line and key: a typo in a pipeline must
    /// not be silently ignored. A known key "x" also admits nested "x.y" and "x[0]" values.
    void expect_only(std::initializer_list<std::string_view> known,
                     std::string_view component) const {
        for (const nnergy_named_value& v : *this) {
            const std::string_view key = from_sv(v.name);
            bool ok = false;
            for (std::string_view k : known)
                ok = ok || key == k ||
                     (key.size() > k.size() && key.substr(0, k.size()) == k &&
                      (key[k.size()] == '.' || key[k.size()] == '['));
            if (ok) continue;
            std::string expected;
            for (std::string_view k : known)
                expected += (expected.empty() ? "" : ", ") + std::string(k);
            throw error(
                where(v) + ": unknown key '" + std::string(key) + "' for " +
                std::string(component) + " (" +
                (expected.empty() ? std::string("it takes no keys") : "expected: " + expected) +
                ")");
        }
    }

    /// "file:line" of a value, for error messages.
    static std::string where(const nnergy_named_value& v) {
        std::string s(from_sv(v.file));
        if (s.empty()) s = "<configuration>";
        if (v.line) {
            s += ':';
            s += std::to_string(v.line);
        }
        return s;
    }

private:
    const unsigned char* bytes() const noexcept {
        return static_cast<const unsigned char*>(static_cast<const void*>(values_));
    }
    size_t stride() const noexcept { return values_ ? values_->struct_size : 0; }

    const nnergy_named_value* values_ = nullptr;
    size_t count_ = 0;
};

/// A TOML file read and flattened by the host; released on destruction.
class config_file {
public:
    config_file(nnergy_host_context* ctx, std::string_view path) {
        detail::check(host().config_file_read(ctx, to_sv(path), &file_), "configuration file");
    }
    ~config_file() { host().config_file_release(file_); }
    config_file(const config_file&) = delete;
    config_file& operator=(const config_file&) = delete;

    config_view values() const {
        size_t n = host().config_file_size(file_);
        return n ? config_view(host().config_file_at(file_, 0), n) : config_view();
    }

private:
    nnergy_config_file* file_ = nullptr;
};

// ------------------------------------------------------------------------------------------------
// Logging and creation context
// ------------------------------------------------------------------------------------------------

/// What every component's constructor receives.
class context {
public:
    /// Copies what it needs: the args struct itself lives only during `create`, while the
    /// context handle and the values it points to live as long as the instance.
    explicit context(const nnergy_create_args& args) noexcept {
        ctx_ = args.ctx;
        config_ = config_view(args.config, args.config_count);
        if (NNERGY_HAS_MEMBER(&args, nnergy_create_args, hardware_count))
            hardware_ = config_view(args.hardware, args.hardware_count);
        if (NNERGY_HAS_MEMBER(&args, nnergy_create_args, runtime_count))
            runtime_ = config_view(args.runtime, args.runtime_count);
    }

    nnergy_host_context* handle() const noexcept { return ctx_; }
    config_view config() const noexcept { return config_; }
    config_view hardware() const noexcept { return hardware_; }
    /// The execution-runtime profile; empty when the pipeline names none (or the host is 1.1).
    config_view runtime() const noexcept { return runtime_; }
    void log(nnergy_log_level level, std::string_view message) const {
        host().log(ctx_, level, to_sv(message));
    }
    void info(std::string_view m) const { log(NNERGY_LOG_INFO, m); }
    void warn(std::string_view m) const { log(NNERGY_LOG_WARN, m); }
    void debug(std::string_view m) const { log(NNERGY_LOG_DEBUG, m); }

private:
    nnergy_host_context* ctx_ = nullptr;
    config_view config_;
    config_view hardware_;
    config_view runtime_;
};

// ------------------------------------------------------------------------------------------------
// Graph, partition, mapping, results and report views
// ------------------------------------------------------------------------------------------------

/// Builds a graph inside the host (frontends).
class graph_builder {
public:
    explicit graph_builder(nnergy_graph_builder* b) : b_(b) {}

    /// How many tensors and nodes the graph will hold in all: a hint that lets the host size
    /// its storage once (docs/abi.md, 1.6). Does nothing under a host that lacks it.
    void reserve(size_t tensors, size_t nodes) {
        if (NNERGY_HAS_MEMBER(&host(), nnergy_host_api, graph_reserve) && host().graph_reserve)
            detail::check(host().graph_reserve(b_, tensors, nodes), "reserve");
    }

    /// A dimension: concrete (`value`), symbolic (`symbol` non-empty) or unknown.
    struct dim {
        int64_t value = NNERGY_DIM_UNKNOWN;
        std::string symbol;
    };

    uint32_t add_tensor(std::string_view name, nnergy_dtype dtype,
                        const std::optional<std::vector<dim>>& shape) {
        // Reused from one tensor to the next: a frontend adds thousands.
        values_.clear();
        symbols_.clear();
        if (shape) {
            for (const dim& d : *shape) {
                values_.push_back(d.value);
                symbols_.push_back(to_sv(d.symbol));
            }
        }
        return add_tensor(name, dtype, shape.has_value(), values_.size(), values_.data(),
                          symbols_.data());
    }
    /// The same from arrays the caller keeps: `rank` dimensions, `symbols[i]` non-empty where
    /// dimension i is symbolic (`symbols` may be null: none is). Borrowed for the call only.
    uint32_t add_tensor(std::string_view name, nnergy_dtype dtype, bool has_shape, size_t rank,
                        const int64_t* values, const nnergy_string_view* symbols) {
        uint32_t id = 0;
        detail::check(
            host().graph_add_tensor(b_, to_sv(name), dtype, has_shape, rank, values, symbols, &id),
            "tensor");
        return id;
    }
    void set_initializer(uint32_t t) {
        detail::check(host().graph_set_initializer(b_, t), "initializer");
    }
    /// Marks an initializer as a constant of the model's code, not a parameter (ABI 1.1; a
    /// no-op on a host that predates it).
    void set_constant(uint32_t t) {
        if (NNERGY_HAS_MEMBER(&host(), nnergy_host_api, graph_set_constant))
            detail::check(host().graph_set_constant(b_, t), "constant");
    }
    void set_initializer_values(uint32_t t, const std::vector<int64_t>& values) {
        detail::check(host().graph_set_initializer_values(b_, t, values.data(), values.size()),
                      "initializer values");
    }
    void add_input(uint32_t t) { detail::check(host().graph_add_input(b_, t), "graph input"); }
    void add_output(uint32_t t) { detail::check(host().graph_add_output(b_, t), "graph output"); }
    uint32_t add_node(std::string_view name, std::string_view op_type, std::string_view domain,
                      const std::vector<uint32_t>& inputs, const std::vector<uint32_t>& outputs) {
        uint32_t id = 0;
        detail::check(
            host().graph_add_node(b_, to_sv(name), to_sv(op_type), to_sv(domain), inputs.data(),
                                  inputs.size(), outputs.data(), outputs.size(), &id),
            "node");
        return id;
    }
    void attr(uint32_t node, std::string_view name, int64_t v) {
        detail::check(host().node_set_attr_int(b_, node, to_sv(name), v), "attribute");
    }
    void attr(uint32_t node, std::string_view name, double v) {
        detail::check(host().node_set_attr_float(b_, node, to_sv(name), v), "attribute");
    }
    void attr(uint32_t node, std::string_view name, std::string_view v) {
        detail::check(host().node_set_attr_string(b_, node, to_sv(name), to_sv(v)), "attribute");
    }
    void attr(uint32_t node, std::string_view name, const std::vector<int64_t>& v) {
        detail::check(host().node_set_attr_ints(b_, node, to_sv(name), v.data(), v.size()),
                      "attribute");
    }
    void attr(uint32_t node, std::string_view name, const std::vector<double>& v) {
        detail::check(host().node_set_attr_floats(b_, node, to_sv(name), v.data(), v.size()),
                      "attribute");
    }
    void metadata(std::string_view key, std::string_view value) {
        detail::check(host().graph_set_metadata(b_, to_sv(key), to_sv(value)), "metadata");
    }
    void source_line(uint32_t node, uint32_t line) {
        detail::check(host().node_set_source_line(b_, node, line), "source line");
    }
    nnergy_graph_builder* handle() const noexcept { return b_; }

private:
    nnergy_graph_builder* b_;
    std::vector<int64_t> values_;  ///< add_tensor's dimensions, reused
    std::vector<nnergy_string_view> symbols_;
};

/// Reads a bound graph.
class graph_view {
public:
    explicit graph_view(const nnergy_graph* g) : g_(g) {}
    const nnergy_graph* handle() const noexcept { return g_; }

    /// The bound graph's identity for caches (docs/abi.md §9); 0 for none or an older host.
    uint64_t identity() const {
        // A test's stand-in host may leave the member NULL: no identity then, as in 1.4.
        return NNERGY_HAS_MEMBER(&host(), nnergy_host_api, graph_identity) && host().graph_identity
                   ? host().graph_identity(g_)
                   : 0;
    }
    size_t node_count() const { return host().graph_node_count(g_); }
    size_t tensor_count() const { return host().graph_tensor_count(g_); }
    std::string_view name() const { return from_sv(host().graph_name(g_)); }
    std::string_view node_name(uint32_t n) const { return from_sv(host().node_name(g_, n)); }
    std::string_view op_type(uint32_t n) const { return from_sv(host().node_op_type(g_, n)); }
    std::string_view domain(uint32_t n) const { return from_sv(host().node_domain(g_, n)); }
    size_t input_count(uint32_t n) const { return host().node_input_count(g_, n); }
    uint32_t input(uint32_t n, size_t i) const { return host().node_input(g_, n, i); }
    size_t output_count(uint32_t n) const { return host().node_output_count(g_, n); }
    uint32_t output(uint32_t n, size_t i) const { return host().node_output(g_, n, i); }
    std::optional<int64_t> attr_int(uint32_t n, std::string_view name) const {
        int64_t v = 0;
        return host().node_attr_int(g_, n, to_sv(name), &v) ? std::optional<int64_t>(v)
                                                            : std::nullopt;
    }
    std::optional<double> attr_float(uint32_t n, std::string_view name) const {
        double v = 0;
        return host().node_attr_float(g_, n, to_sv(name), &v) ? std::optional<double>(v)
                                                              : std::nullopt;
    }
    std::optional<std::string_view> attr_string(uint32_t n, std::string_view name) const {
        nnergy_string_view v{nullptr, 0};
        return host().node_attr_string(g_, n, to_sv(name), &v)
                   ? std::optional<std::string_view>(from_sv(v))
                   : std::nullopt;
    }
    std::optional<std::vector<int64_t>> attr_ints(uint32_t n, std::string_view name) const {
        const int64_t* data = nullptr;
        size_t count = 0;
        if (!host().node_attr_ints(g_, n, to_sv(name), &data, &count)) return std::nullopt;
        return std::vector<int64_t>(data, data + count);
    }
    /// An integer-list attribute as the host holds it (valid while the graph is): no copy.
    struct int_list {
        const int64_t* data = nullptr;
        size_t size = 0;
    };
    std::optional<int_list> attr_ints_view(uint32_t n, std::string_view name) const {
        int_list v;
        if (!host().node_attr_ints(g_, n, to_sv(name), &v.data, &v.size)) return std::nullopt;
        return v;
    }
    nnergy_op_counts counts(uint32_t n) const {
        nnergy_op_counts c{};
        c.struct_size = sizeof c;
        host().node_counts(g_, n, &c);
        return c;
    }
    std::string_view tensor_name(uint32_t t) const { return from_sv(host().tensor_name(g_, t)); }
    nnergy_dtype dtype(uint32_t t) const { return host().tensor_dtype(g_, t); }
    std::vector<int64_t> shape(uint32_t t) const {
        std::vector<int64_t> s(host().tensor_rank(g_, t));
        for (size_t i = 0; i < s.size(); ++i) s[i] = host().tensor_dim(g_, t, i);
        return s;
    }
    /// A tensor's rank and one of its dims, without building its shape (per-kernel paths).
    size_t rank(uint32_t t) const { return host().tensor_rank(g_, t); }
    int64_t dim(uint32_t t, size_t axis) const { return host().tensor_dim(g_, t, axis); }
    double tensor_bytes(uint32_t t) const { return host().tensor_bytes(g_, t); }
    bool is_initializer(uint32_t t) const { return host().tensor_is_initializer(g_, t); }
    bool is_graph_output(uint32_t t) const { return host().tensor_is_graph_output(g_, t); }
    std::optional<std::vector<int64_t>> int_values(uint32_t t) const {
        const int64_t* data = nullptr;
        size_t count = 0;
        if (!host().tensor_int_values(g_, t, &data, &count)) return std::nullopt;
        return std::vector<int64_t>(data, data + count);
    }
    uint32_t producer(uint32_t t) const { return host().tensor_producer(g_, t); }
    std::vector<uint32_t> consumers(uint32_t t) const {
        std::vector<uint32_t> c(host().tensor_consumer_count(g_, t));
        for (size_t i = 0; i < c.size(); ++i) c[i] = host().tensor_consumer(g_, t, i);
        return c;
    }

private:
    const nnergy_graph* g_;
};

/// Collects kernels (partitioners).
class partition_builder {
public:
    explicit partition_builder(nnergy_partition_builder* b) : b_(b) {}
    uint32_t add_kernel(std::string_view name, std::string_view pattern,
                        const std::vector<uint32_t>& nodes) {
        uint32_t id = 0;
        detail::check(host().partition_add_kernel(b_, to_sv(name), to_sv(pattern), nodes.data(),
                                                  nodes.size(), &id),
                      "kernel");
        return id;
    }

private:
    nnergy_partition_builder* b_;
};

/// Reads a finished partition.
class partition_view {
public:
    explicit partition_view(const nnergy_partition* p) : p_(p) {}
    const nnergy_partition* handle() const noexcept { return p_; }
    /// The partition's identity for caches (docs/abi.md §9); 0 for none or an older host.
    uint64_t identity() const {
        return NNERGY_HAS_MEMBER(&host(), nnergy_host_api, partition_identity) &&
                       host().partition_identity
                   ? host().partition_identity(p_)
                   : 0;
    }
    size_t kernel_count() const { return host().partition_kernel_count(p_); }
    std::string_view name(uint32_t k) const { return from_sv(host().kernel_name(p_, k)); }
    std::string_view pattern(uint32_t k) const { return from_sv(host().kernel_pattern(p_, k)); }
    std::vector<uint32_t> nodes(uint32_t k) const {
        std::vector<uint32_t> n(host().kernel_node_count(p_, k));
        for (size_t i = 0; i < n.size(); ++i) n[i] = host().kernel_node(p_, k, i);
        return n;
    }
    nnergy_kernel_stats stats(uint32_t k) const {
        nnergy_kernel_stats s{};
        s.struct_size = sizeof s;
        host().kernel_stats(p_, k, &s);
        return s;
    }
    std::vector<uint32_t> dependencies(uint32_t k) const {
        std::vector<uint32_t> d(host().kernel_dependency_count(p_, k));
        for (size_t i = 0; i < d.size(); ++i) d[i] = host().kernel_dependency(p_, k, i);
        return d;
    }

private:
    const nnergy_partition* p_;
};

/// A mapping key or event name for the calls made for every kernel: the host interns its text
/// once, on first use (ABI 1.7), and is then handed the interned name, which it compares by
/// address where it would compare a text. Under an older host the text is passed as a string
/// key would be. Make it a constant that outlives its uses (sdk::keys holds the well-known
/// ones):
///     static const sdk::key tile_count{"tile_count"};
///     out.set(tile_count, tiles);
class key {
public:
    constexpr explicit key(std::string_view text) noexcept : text_(text) {}
    key(const key&) = delete;
    key& operator=(const key&) = delete;
    std::string_view text() const noexcept { return text_; }
    /// The host's interned name; null under a host without interned names (older than 1.7).
    const nnergy_name* interned() const noexcept {
        const nnergy_host_api* api = detail::api_slot();
        if (!api || !NNERGY_HAS_MEMBER(api, nnergy_host_api, mapping_add_event_named) ||
            !api->name_intern)
            return nullptr;
        const nnergy_name* n = interned_.load(std::memory_order_acquire);
        if (!n) {
            // Threads racing here intern the same text and get the same pointer.
            n = api->name_intern(to_sv(text_));
            interned_.store(n, std::memory_order_release);
        }
        return n;
    }

private:
    std::string_view text_;
    mutable std::atomic<const nnergy_name*> interned_{nullptr};
};

/// The mapping keys and events the in-tree architectures write and estimators read
/// (docs/abi.md, "Mapping keys").
namespace keys {
inline const key unit{"unit"};
inline const key op_class{"op_class"};
inline const key peak_flops_per_s{"peak_flops_per_s"};
inline const key compute_efficiency{"compute_efficiency"};
inline const key effective_flops_per_s{"effective_flops_per_s"};
inline const key units_available{"units_available"};
inline const key units_allocated{"units_allocated"};
inline const key utilization{"utilization"};
inline const key waves{"waves"};
inline const key launch_overhead_s{"launch_overhead_s"};
inline const key bytes_scale{"bytes_scale"};
inline const key bottleneck{"bottleneck"};
inline const key explanation{"explanation"};
inline const key confidence{"confidence"};
/// Written by several in-tree architectures: the reduction (K) a kernel's outputs sum over,
/// the fraction of DRAM bandwidth a kernel reaches.
inline const key reduction_depth{"reduction_depth"};
inline const key memory_efficiency{"memory_efficiency"};
/// Event categories, and the events every class architecture counts.
inline const key compute{"compute"};
inline const key memory{"memory"};
inline const key control{"control"};
inline const key dram{"dram"};
inline const key launch{"launch"};
inline const key register_file{"register_file"};
inline const key dma{"dma"};
}  // namespace keys

/// Writes a mapping (architectures).
class mapping_writer {
public:
    explicit mapping_writer(nnergy_mapping* m) : m_(m) {}
    void set(std::string_view key, double value) {
        host().mapping_set_number(m_, to_sv(key), value);
    }
    void set_text(std::string_view key, std::string_view value) {
        host().mapping_set_text(m_, to_sv(key), to_sv(value));
    }
    void add_level(std::string_view level, double bytes, double bandwidth_bytes_per_s) {
        host().mapping_add_level(m_, to_sv(level), bytes, bandwidth_bytes_per_s);
    }
    /// Counts an architectural event for the energy estimator (since ABI 1.3).
    void add_event(std::string_view category, std::string_view event, double count) {
        host().mapping_add_event(m_, to_sv(category), to_sv(event), count);
    }
    /// The same with interned names (sdk::key): what a map_kernel writes for every kernel.
    void set(const sdk::key& k, double value) {
        if (const nnergy_name* n = k.interned())
            host().mapping_set_number_named(m_, n, value);
        else
            set(k.text(), value);
    }
    void set_text(const sdk::key& k, std::string_view value) {
        if (const nnergy_name* n = k.interned())
            host().mapping_set_text_named(m_, n, to_sv(value));
        else
            set_text(k.text(), value);
    }
    void add_event(const sdk::key& category, const sdk::key& event, double count) {
        const nnergy_name* c = category.interned();
        const nnergy_name* e = c ? event.interned() : nullptr;
        if (e)
            host().mapping_add_event_named(m_, c, e, count);
        else
            add_event(category.text(), event.text(), count);
    }

private:
    nnergy_mapping* m_;
};

/// Reads a mapping (estimators).
class mapping_view {
public:
    struct level {
        std::string_view name;
        double bytes;
        double bandwidth_bytes_per_s;
    };
    explicit mapping_view(const nnergy_mapping* m) : m_(m) {}
    const nnergy_mapping* handle() const noexcept { return m_; }
    std::optional<double> number(std::string_view key) const {
        double v = 0;
        return host().mapping_get_number(m_, to_sv(key), &v) ? std::optional<double>(v)
                                                             : std::nullopt;
    }
    double number_or(std::string_view key, double fallback) const {
        return number(key).value_or(fallback);
    }
    std::optional<std::string_view> text(std::string_view key) const {
        nnergy_string_view v{nullptr, 0};
        return host().mapping_get_text(m_, to_sv(key), &v)
                   ? std::optional<std::string_view>(from_sv(v))
                   : std::nullopt;
    }
    /// The same with interned names (sdk::key): what an estimator reads for every kernel.
    std::optional<double> number(const sdk::key& k) const {
        const nnergy_name* n = k.interned();
        if (!n) return number(k.text());
        double v = 0;
        return host().mapping_get_number_named(m_, n, &v) ? std::optional<double>(v) : std::nullopt;
    }
    double number_or(const sdk::key& k, double fallback) const {
        return number(k).value_or(fallback);
    }
    std::optional<std::string_view> text(const sdk::key& k) const {
        const nnergy_name* n = k.interned();
        if (!n) return text(k.text());
        nnergy_string_view v{nullptr, 0};
        return host().mapping_get_text_named(m_, n, &v)
                   ? std::optional<std::string_view>(from_sv(v))
                   : std::nullopt;
    }
    /// The memory levels one at a time: a per-kernel loop reads them without a vector.
    size_t level_count() const { return host().mapping_level_count(m_); }
    level level_at(size_t i) const {
        level l{{}, 0, 0};
        level_at(i, l.name, l.bytes, l.bandwidth_bytes_per_s);
        return l;
    }
    /// The same, written straight into the caller's variables (see the event_at overload).
    void level_at(size_t i, std::string_view& name, double& bytes,
                  double& bandwidth_bytes_per_s) const {
        nnergy_string_view n{nullptr, 0};
        bytes = bandwidth_bytes_per_s = 0;
        host().mapping_level(m_, i, &n, &bytes, &bandwidth_bytes_per_s);
        name = from_sv(n);
    }
    std::vector<level> levels() const {
        const size_t n = level_count();
        std::vector<level> out;
        out.reserve(n);
        for (size_t i = 0; i < n; ++i) out.push_back(level_at(i));
        return out;
    }
    struct event {
        std::string_view category;
        std::string_view name;
        double count;
    };
    /// The architectural events of the kernel (since ABI 1.3), one at a time or all at once.
    size_t event_count() const { return host().mapping_event_count(m_); }
    event event_at(size_t i) const {
        event e{{}, {}, 0};
        event_at(i, e.category, e.name, e.count);
        return e;
    }
    /// The same, written straight into the caller's variables: a loop over every kernel's
    /// events then copies no struct (whose halves, just stored, the processor cannot forward
    /// to a 16-byte load).
    void event_at(size_t i, std::string_view& category, std::string_view& name,
                  double& count) const {
        nnergy_string_view c{nullptr, 0}, n{nullptr, 0};
        count = 0;
        host().mapping_event(m_, i, &c, &n, &count);
        category = from_sv(c);
        name = from_sv(n);
    }
    std::vector<event> events() const {
        const size_t n = event_count();
        std::vector<event> out;
        out.reserve(n);
        for (size_t i = 0; i < n; ++i) out.push_back(event_at(i));
        return out;
    }

private:
    const nnergy_mapping* m_;
};

/// Writes metrics (estimators).
class results_writer {
public:
    explicit results_writer(nnergy_results* r) : r_(r) {}
    void kernel(uint32_t k, std::string_view key, double value) {
        host().results_set_kernel_number(r_, k, to_sv(key), value);
    }
    void kernel_text(uint32_t k, std::string_view key, std::string_view value) {
        host().results_set_kernel_text(r_, k, to_sv(key), to_sv(value));
    }
    void total(std::string_view key, double value) {
        host().results_set_total(r_, to_sv(key), value);
    }
    void total_text(std::string_view key, std::string_view value) {
        host().results_set_total_text(r_, to_sv(key), to_sv(value));
    }
    /// What an earlier estimator of the pipeline wrote (since ABI 1.3).
    std::optional<double> kernel_number(uint32_t k, std::string_view key) const {
        double v = 0;
        return host().results_get_kernel_number(r_, k, to_sv(key), &v) ? std::optional<double>(v)
                                                                       : std::nullopt;
    }
    std::optional<double> total_number(std::string_view key) const {
        double v = 0;
        return host().results_get_total(r_, to_sv(key), &v) ? std::optional<double>(v)
                                                            : std::nullopt;
    }
    std::optional<std::string_view> total_text_value(std::string_view key) const {
        nnergy_string_view v{nullptr, 0};
        return host().results_get_total_text(r_, to_sv(key), &v)
                   ? std::optional<std::string_view>(from_sv(v))
                   : std::nullopt;
    }

private:
    nnergy_results* r_;
};

/// What an estimator receives.
class estimate_input {
public:
    explicit estimate_input(const nnergy_estimate_input& in) : in_(&in) {}
    graph_view graph() const { return graph_view(in_->graph); }
    partition_view partition() const { return partition_view(in_->partition); }
    size_t kernel_count() const { return in_->mapping_count; }
    mapping_view mapping(uint32_t k) const { return mapping_view(in_->mappings[k]); }
    config_view hardware() const { return {in_->hardware, in_->hardware_count}; }
    /// The hardware description's identity for caches (docs/abi.md §9, since 1.9): what an
    /// estimator derives from hardware() alone may be kept under it. 0 for none or an older
    /// host: derive afresh.
    uint64_t hardware_identity() const {
        return NNERGY_HAS_MEMBER(in_, nnergy_estimate_input, hardware_identity)
                   ? in_->hardware_identity
                   : 0;
    }
    nnergy_dtype precision() const {
        return in_->options ? in_->options->precision : NNERGY_DTYPE_UNDEFINED;
    }
    /// True when the caller keeps only the totals (NNERGY_MAP_TOTALS_ONLY, since 1.5): leave
    /// out the per-kernel keys no later estimator reads; every total stays the same.
    bool totals_only() const {
        return in_->options && NNERGY_HAS_MEMBER(in_->options, nnergy_map_options, flags) &&
               (in_->options->flags & NNERGY_MAP_TOTALS_ONLY) != 0;
    }
    /// False when the caller reads no advice (NNERGY_MAP_NO_ADVICE, since 1.8): leave out the
    /// `advice` text, the `advice.*` totals and what only they need; every other total stays.
    bool advice_wanted() const {
        return !(in_->options && NNERGY_HAS_MEMBER(in_->options, nnergy_map_options, flags) &&
                 (in_->options->flags & NNERGY_MAP_NO_ADVICE) != 0);
    }

private:
    const nnergy_estimate_input* in_;
};

/// Reads the report document (reporters).
class value_view {
public:
    explicit value_view(const nnergy_value* v = nullptr) : v_(v) {}
    explicit operator bool() const noexcept { return v_ != nullptr; }
    nnergy_value_kind kind() const { return v_ ? host().value_kind(v_) : NNERGY_VALUE_NULL; }
    bool is_number() const {
        auto k = kind();
        return k == NNERGY_VALUE_INT || k == NNERGY_VALUE_FLOAT;
    }
    bool as_bool() const { return v_ && host().value_bool(v_); }
    int64_t as_int() const { return v_ ? host().value_int(v_) : 0; }
    double as_number() const { return v_ ? host().value_float(v_) : 0.0; }
    std::string_view as_string() const { return v_ ? from_sv(host().value_string(v_)) : ""; }
    /// The value as a number, or nothing when it is not a number or not finite. The JSON report
    /// writes a non-finite number as null, so every reporter treats one as absent.
    std::optional<double> number() const {
        if (!is_number()) return std::nullopt;
        const double x = as_number();
        if (!std::isfinite(x)) return std::nullopt;
        return x;
    }
    /// The value as display text: a string as it is, an integer exactly, another number as
    /// printf's "%g", a boolean as true or false; `fallback` for anything else (null, arrays,
    /// objects, non-finite numbers).
    std::string text(std::string_view fallback = "") const {
        switch (kind()) {
            case NNERGY_VALUE_STRING:
                return std::string(as_string());
            case NNERGY_VALUE_INT:
                return std::to_string(as_int());
            case NNERGY_VALUE_FLOAT: {
                const double x = as_number();
                if (!std::isfinite(x)) break;
                char buf[32];
                const int n = std::snprintf(buf, sizeof buf, "%g", x);
                return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string(fallback);
            }
            case NNERGY_VALUE_BOOL:
                return as_bool() ? "true" : "false";
            default:
                break;
        }
        return std::string(fallback);
    }
    size_t size() const { return v_ ? host().value_size(v_) : 0; }
    value_view at(size_t i) const { return value_view(v_ ? host().value_at(v_, i) : nullptr); }
    std::string_view key(size_t i) const { return v_ ? from_sv(host().value_key(v_, i)) : ""; }
    value_view operator[](std::string_view key) const {
        return value_view(v_ ? host().value_get(v_, to_sv(key)) : nullptr);
    }
    const nnergy_value* handle() const noexcept { return v_; }

private:
    const nnergy_value* v_;
};

/// Writes report bytes.
class output_writer {
public:
    explicit output_writer(nnergy_output* o) : o_(o) {}
    void write(std::string_view bytes) {
        detail::check(host().output_write(o_, to_sv(bytes)), "output");
    }
    /// Whether terminal colour is welcome here (a colour terminal, NO_COLOR unset). Since 1.4.
    bool allows_color() const { return host().output_allows_color(o_); }
    /// The file written; empty for standard output. Since 1.4.
    std::string_view path() const { return from_sv(host().output_path(o_)); }
    /// A second output beside this one: `<path without extension><suffix>`, or standard
    /// output after this one's bytes. Since 1.4.
    output_writer companion(std::string_view suffix) {
        nnergy_output* c = nullptr;
        detail::check(host().output_companion(o_, to_sv(suffix), &c), "output companion");
        return output_writer(c);
    }

private:
    nnergy_output* o_;
};

// ------------------------------------------------------------------------------------------------
// Component base classes
// ------------------------------------------------------------------------------------------------

/// Base of every component: holds the creation context.
class component_base {
public:
    explicit component_base(const context& ctx) : ctx_(ctx) {}
    virtual ~component_base() = default;
    const context& ctx() const noexcept { return ctx_; }

private:
    context ctx_;
};

class frontend : public component_base {
public:
    using component_base::component_base;
    virtual void load(std::string_view path, graph_builder& out) = 0;
};

class partitioner : public component_base {
public:
    using component_base::component_base;
    virtual void partition(const graph_view& graph, partition_builder& out) = 0;
};

class architecture : public component_base {
public:
    using component_base::component_base;
    virtual void map_kernel(const graph_view& graph, const partition_view& partition,
                            uint32_t kernel, const nnergy_map_options& options,
                            mapping_writer& out) const = 0;
};

class estimator : public component_base {
public:
    using component_base::component_base;
    virtual void estimate(const estimate_input& input, results_writer& out) const = 0;
};

class reporter : public component_base {
public:
    using component_base::component_base;
    virtual void report(const value_view& report, output_writer& out) = 0;
};

// ------------------------------------------------------------------------------------------------
// Trampolines: C tables generated from the classes above
// ------------------------------------------------------------------------------------------------

namespace detail {
template <class Impl>
nnergy_status* create_impl(const nnergy_create_args* args, void** out_self) noexcept {
    return guarded([&] {
        context ctx(*args);
        *out_self = static_cast<component_base*>(new Impl(ctx));
    });
}
inline void destroy_impl(void* self) noexcept { delete static_cast<component_base*>(self); }

template <class T>
T* self_as(void* self) noexcept {
    return static_cast<T*>(static_cast<component_base*>(self));
}

template <class Impl>
nnergy_status* frontend_load(void* self, nnergy_string_view path,
                             nnergy_graph_builder* b) noexcept {
    return guarded([&] {
        graph_builder builder(b);
        self_as<Impl>(self)->load(from_sv(path), builder);
    });
}
template <class Impl>
nnergy_status* partitioner_partition(void* self, const nnergy_graph* g,
                                     nnergy_partition_builder* b) noexcept {
    return guarded([&] {
        partition_builder builder(b);
        self_as<Impl>(self)->partition(graph_view(g), builder);
    });
}
template <class Impl>
nnergy_status* architecture_map(void* self, const nnergy_graph* g, const nnergy_partition* p,
                                uint32_t kernel, const nnergy_map_options* options,
                                nnergy_mapping* m) noexcept {
    return guarded([&] {
        mapping_writer writer(m);
        nnergy_map_options opts{};
        opts.struct_size = sizeof opts;
        if (options && NNERGY_HAS_MEMBER(options, nnergy_map_options, precision))
            opts.precision = options->precision;
        if (options && NNERGY_HAS_MEMBER(options, nnergy_map_options, flags))
            opts.flags = options->flags;
        self_as<const Impl>(self)->map_kernel(graph_view(g), partition_view(p), kernel, opts,
                                              writer);
    });
}
template <class Impl>
nnergy_status* estimator_estimate(void* self, const nnergy_estimate_input* in,
                                  nnergy_results* r) noexcept {
    return guarded([&] {
        results_writer writer(r);
        self_as<const Impl>(self)->estimate(estimate_input(*in), writer);
    });
}
template <class Impl>
nnergy_status* reporter_report(void* self, const nnergy_value* v, nnergy_output* o) noexcept {
    return guarded([&] {
        output_writer writer(o);
        self_as<Impl>(self)->report(value_view(v), writer);
    });
}

template <class Impl>
struct tables {
    static inline const nnergy_frontend_vtbl frontend = {
        sizeof(nnergy_frontend_vtbl), &frontend_load<Impl>, {nullptr, 0}};
    static inline const nnergy_partitioner_vtbl partitioner = {sizeof(nnergy_partitioner_vtbl),
                                                               &partitioner_partition<Impl>};
    static inline const nnergy_architecture_vtbl architecture = {sizeof(nnergy_architecture_vtbl),
                                                                 &architecture_map<Impl>};
    static inline const nnergy_estimator_vtbl estimator = {sizeof(nnergy_estimator_vtbl),
                                                           &estimator_estimate<Impl>};
    static inline const nnergy_reporter_vtbl reporter = {sizeof(nnergy_reporter_vtbl),
                                                         &reporter_report<Impl>};
};

template <class Impl>
nnergy_component make_component(nnergy_component_kind kind, std::string_view name,
                                std::string_view description, const void* vtbl) noexcept {
    nnergy_component c{};
    c.struct_size = sizeof c;
    c.kind = kind;
    c.name = to_sv(name);
    c.create = &create_impl<Impl>;
    c.destroy = &destroy_impl;
    c.vtbl = vtbl;
    c.description = to_sv(description);
    return c;
}

/// Frontend tables carry their file extensions, so each frontend class gets its own copy.
template <class Impl>
const nnergy_frontend_vtbl* frontend_table(std::string_view extensions) noexcept {
    static nnergy_frontend_vtbl table = tables<Impl>::frontend;
    table.file_extensions = to_sv(extensions);
    return &table;
}
}  // namespace detail

/// Component descriptors for NNERGY_PLUGIN_DEFINE. `name`, `description` and `extensions` must
/// be string literals (they are referenced, not copied).
template <class Impl>
nnergy_component frontend_component(std::string_view name, std::string_view description,
                                    std::string_view extensions) noexcept {
    return detail::make_component<Impl>(NNERGY_KIND_FRONTEND, name, description,
                                        detail::frontend_table<Impl>(extensions));
}
template <class Impl>
nnergy_component partitioner_component(std::string_view name,
                                       std::string_view description) noexcept {
    return detail::make_component<Impl>(NNERGY_KIND_PARTITIONER, name, description,
                                        &detail::tables<Impl>::partitioner);
}
template <class Impl>
nnergy_component architecture_component(std::string_view name,
                                        std::string_view description) noexcept {
    return detail::make_component<Impl>(NNERGY_KIND_ARCHITECTURE, name, description,
                                        &detail::tables<Impl>::architecture);
}
template <class Impl>
nnergy_component estimator_component(std::string_view name, std::string_view description) noexcept {
    return detail::make_component<Impl>(NNERGY_KIND_ESTIMATOR, name, description,
                                        &detail::tables<Impl>::estimator);
}
template <class Impl>
nnergy_component reporter_component(std::string_view name, std::string_view description) noexcept {
    return detail::make_component<Impl>(NNERGY_KIND_REPORTER, name, description,
                                        &detail::tables<Impl>::reporter);
}

namespace detail {
/// Fills the plugin info; shared by every NNERGY_PLUGIN_DEFINE expansion.
inline nnergy_status* negotiate(const nnergy_host_info* host_info, nnergy_plugin_info* out,
                                std::string_view name, std::string_view version,
                                std::string_view vendor, std::string_view license,
                                std::string_view description, const nnergy_component* components,
                                size_t count) noexcept {
    if (!host_info || !out) return nullptr;
    // The host API is usable for statuses whatever the major: status_create is frozen first.
    if (host_info->struct_size >= NNERGY_STRUCT_SIZE(nnergy_host_info, api))
        api_slot() = host_info->api;
    // The first three members are frozen across majors; fill the rest only up to the host's
    // declared size.
    out->abi_major = NNERGY_ABI_MAJOR;
    out->abi_minor = NNERGY_ABI_MINOR;
    nnergy_plugin_info mine{};
    mine.struct_size = sizeof mine;
    mine.abi_major = NNERGY_ABI_MAJOR;
    mine.abi_minor = NNERGY_ABI_MINOR;
    mine.name = to_sv(name);
    mine.version = to_sv(version);
    mine.vendor = to_sv(vendor);
    mine.license = to_sv(license);
    mine.description = to_sv(description);
    mine.components = components;
    mine.component_count = count;
    size_t n = out->struct_size < sizeof mine ? out->struct_size : sizeof mine;
    size_t keep = out->struct_size;
    // Byte copy of a trivially copyable prefix; keeps the host's struct_size.
    const unsigned char* src = reinterpret_cast<const unsigned char*>(&mine);
    unsigned char* dst = reinterpret_cast<unsigned char*>(out);
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
    out->struct_size = keep;
    return nullptr;
}
}  // namespace detail

}  // namespace v1
}  // namespace nnergy::sdk

/// Defines the library's entry point. The trailing arguments are component descriptors made by
/// nnergy::sdk::frontend_component<T>(...), partitioner_component<T>(...), etc.
#define NNERGY_PLUGIN_DEFINE(NAME, VERSION, VENDOR, LICENSE, DESCRIPTION, ...)                   \
    extern "C" NNERGY_PLUGIN_EXPORT nnergy_status* nnergy_plugin_negotiate(                      \
        const nnergy_host_info* host_info, nnergy_plugin_info* out) {                            \
        try {                                                                                    \
            static const nnergy_component components[] = {__VA_ARGS__};                          \
            return ::nnergy::sdk::detail::negotiate(host_info, out, NAME, VERSION, VENDOR,       \
                                                    LICENSE, DESCRIPTION, components,            \
                                                    sizeof(components) / sizeof(components[0])); \
        } catch (...) {                                                                          \
            return ::nnergy::sdk::detail::status_from_current_exception();                       \
        }                                                                                        \
    }

#endif  // NNERGY_SDK_HPP
