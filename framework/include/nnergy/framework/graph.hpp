// SPDX-License-Identifier: Apache-2.0
/// \file graph.hpp
/// \brief The graph IR: tensors, nodes and attributes as loaded, with symbolic dimensions.
///
/// A `graph` is what a frontend built: shapes may contain symbols (`batch`, `seq`) or be absent
/// (to be inferred). Binding symbols and inferring shapes produces a `bound_graph`
/// (shape_inference.hpp); one graph can be bound many times without re-parsing.
/// Op types use one canonical vocabulary: ONNX operator names and semantics.
#pragma once

#include <nnergy/plugin.h>

#include <cstdint>
#include <memory>
#include <nnergy/framework/pooled_name.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace nnergy {

/// Bits per element of a dtype (4 for int4, 0 for undefined/string).
int dtype_bits(nnergy_dtype t) noexcept;
/// Canonical lower-case name ("float32", "bfloat16", "int8", ...).
std::string_view dtype_name(nnergy_dtype t) noexcept;
/// Parses a canonical name or a common alias ("fp32", "f32", "half", "bf16", "fp16", "tf32").
std::optional<nnergy_dtype> dtype_from_name(std::string_view name) noexcept;
/// The compute precisions a run may ask for (--precision, [architecture] precision), by their
/// canonical names: float32, tfloat32, float16, bfloat16, float8_e4m3, float8_e5m2, int8, int4,
/// float64.
const std::vector<std::string>& precision_names();

/// One dimension: concrete (`value` >= 0), symbolic (`symbol` non-empty) or unknown.
/// Sixteen bytes: a model's few symbols (batch, seq, their expressions) are pooled, where a
/// string of its own made every dimension of every shape 40.
struct dim {
    int64_t value = NNERGY_DIM_UNKNOWN;
    detail::pooled_name symbol;

    static dim of(int64_t v) { return dim{v, {}}; }
    static dim named(std::string_view s) {
        return dim{NNERGY_DIM_UNKNOWN, detail::pooled_name::of(s)};
    }
    bool is_symbolic() const noexcept { return !symbol.empty(); }
    bool is_concrete() const noexcept { return symbol.empty() && value >= 0; }
    friend bool operator==(const dim&, const dim&) = default;
};

using attribute_value = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                                     std::vector<double>, std::vector<std::string>>;

struct attribute {
    std::string name;
    attribute_value value;
    friend bool operator==(const attribute&, const attribute&) = default;
};

/// An optional value held behind a pointer, with std::optional's interface and value
/// semantics: one word where it is absent, for members that few objects use.
template <class T>
class boxed_optional {
public:
    boxed_optional() noexcept = default;
    boxed_optional(std::nullopt_t) noexcept {}
    boxed_optional(T v) : p_(std::make_unique<T>(std::move(v))) {}
    boxed_optional(std::optional<T> v) {
        if (v) p_ = std::make_unique<T>(std::move(*v));
    }
    boxed_optional(const boxed_optional& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
    boxed_optional(boxed_optional&&) noexcept = default;
    boxed_optional& operator=(const boxed_optional& o) {
        if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
        return *this;
    }
    boxed_optional& operator=(boxed_optional&&) noexcept = default;

    bool has_value() const noexcept { return p_ != nullptr; }
    explicit operator bool() const noexcept { return has_value(); }
    const T& operator*() const noexcept { return *p_; }
    T& operator*() noexcept { return *p_; }
    const T* operator->() const noexcept { return p_.get(); }
    T* operator->() noexcept { return p_.get(); }
    friend bool operator==(const boxed_optional& a, const boxed_optional& b) {
        return a.has_value() == b.has_value() && (!a || *a == *b);
    }

private:
    std::unique_ptr<T> p_;
};

struct tensor {
    std::string name;
    nnergy_dtype dtype = NNERGY_DTYPE_UNDEFINED;
    bool is_initializer = false;
    /// An initializer that is a constant of the model's code, not a trained parameter
    /// (docs/counting.md, "Parameters").
    bool is_constant = false;
    /// Declared shape; nullopt when the frontend left it to inference.
    std::optional<std::vector<dim>> shape;
    /// Values of an integer constant (shape constants); weights never carry values. Boxed: a
    /// graph holds a tensor per weight and activation, and few are shape constants (80 bytes a
    /// tensor instead of 112).
    boxed_optional<std::vector<int64_t>> int_values;
    friend bool operator==(const tensor&, const tensor&) = default;
};

struct node {
    std::string name;
    /// Pooled: a model has a few dozen op types and domains among its nodes, so a node keeps
    /// two pointers where two strings cost 64 bytes (128 bytes a node instead of 176).
    detail::pooled_name op_type;
    detail::pooled_name domain;    ///< empty for the default ONNX domain
    std::vector<uint32_t> inputs;  ///< NNERGY_NO_TENSOR for an omitted optional input
    std::vector<uint32_t> outputs;
    std::vector<attribute> attributes;
    uint32_t source_line = 0;  ///< line in the model file, 0 when unknown

    const attribute* find_attribute(std::string_view attr_name) const noexcept;
    std::optional<int64_t> attr_int(std::string_view attr_name) const noexcept;
    std::optional<double> attr_float(std::string_view attr_name) const noexcept;
    const std::string* attr_string(std::string_view attr_name) const noexcept;
    const std::vector<int64_t>* attr_ints(std::string_view attr_name) const noexcept;
    friend bool operator==(const node& a, const node& b) {
        return a.name == b.name && a.op_type == b.op_type && a.domain == b.domain &&
               a.inputs == b.inputs && a.outputs == b.outputs && a.attributes == b.attributes;
    }
};

/// Tensor names to indices without a copy of the names: an open-addressing table of (hash,
/// index) pairs that compares against the tensors' own names. No allocation per tensor, and
/// copying a graph copies it as it is (it holds no pointers).
class tensor_name_index {
public:
    static constexpr uint32_t absent = UINT32_MAX;

    std::size_t size() const noexcept { return count_; }
    void clear() noexcept {
        slots_.clear();
        count_ = 0;
    }
    /// Indexes all of `tensors` anew; returns the index of the first tensor whose name an
    /// earlier one holds (indexing stops there), else `absent`.
    uint32_t build(const std::vector<tensor>& tensors);
    uint32_t find(const std::vector<tensor>& tensors, std::string_view name) const noexcept;

private:
    struct slot {
        uint32_t hash = 0;
        uint32_t index = absent;
    };
    /// The slot holding `name` (hash `h`), else the empty slot where it would go.
    std::size_t probe(const std::vector<tensor>& tensors, uint32_t h,
                      std::string_view name) const noexcept;

    std::vector<slot> slots_;  ///< a power of two in size, at most three quarters full
    std::size_t count_ = 0;
};

/// Each tensor's consumer nodes, in node order, a node once however often it reads the tensor:
/// one array for the whole graph (a list per tensor was an allocation per tensor).
class consumer_lists {
public:
    std::span<const uint32_t> operator[](uint32_t tensor) const noexcept {
        return {nodes_.data() + start_[tensor], start_[tensor + 1] - start_[tensor]};
    }
    std::size_t size() const noexcept { return start_.empty() ? 0 : start_.size() - 1; }
    /// The lists of `tensor_count` tensors read by `nodes` (whose input indices are valid).
    void build(const std::vector<node>& nodes, std::size_t tensor_count);

private:
    std::vector<uint32_t> start_;  ///< tensor t's consumers are nodes_[start_[t], start_[t+1])
    std::vector<uint32_t> nodes_;
};

/// A model graph as loaded. Build it with add_tensor/add_node, then call finalize().
class graph {
public:
    std::string name;
    std::string source_path;  ///< the file it was loaded from, for error messages
    std::vector<std::pair<std::string, std::string>> metadata;
    std::vector<tensor> tensors;
    std::vector<node> nodes;  ///< in topological order once finalized
    std::vector<uint32_t> inputs;
    std::vector<uint32_t> outputs;

    /// Sizes the storage for this many tensors and nodes in all (a builder's hint).
    void reserve(std::size_t tensor_count, std::size_t node_count);
    /// Adds a tensor; throws nnergy::error on an empty name. A name another tensor holds is
    /// rejected by finalize(), which indexes the names; until then find_tensor() reads them
    /// one by one.
    uint32_t add_tensor(tensor t);
    /// Adds a node; throws nnergy::error when a tensor index is out of range.
    uint32_t add_node(node n);
    std::optional<uint32_t> find_tensor(std::string_view tensor_name) const;

    /// Validates and sorts: every node input is produced by exactly one node, is a graph input or
    /// an initializer; no tensor has two producers; no cycles; graph outputs exist; graph inputs
    /// and initializers have a dtype; declared dtypes agree with what each known op yields and
    /// accepts. Nodes are reordered topologically (stable: Kahn's algorithm taking the earliest
    /// ready node in file order, so the file order is kept where it is already valid).
    /// Throws nnergy::error naming the source file and the node at fault.
    void finalize();
    bool finalized() const noexcept { return finalized_; }

    /// Producer node of each tensor (NNERGY_NO_NODE for inputs and initializers) and consumers.
    /// Valid after finalize().
    const std::vector<uint32_t>& producers() const noexcept { return producer_; }
    const consumer_lists& consumers() const noexcept { return consumers_; }
    /// Element type of every tensor: the declared one, or the one the producing op yields where
    /// none was declared (UNDEFINED only behind ops unknown to the host). Valid after finalize(),
    /// which also rejects declared types that contradict an op (Add of float32 and float16).
    const std::vector<nnergy_dtype>& dtypes() const noexcept { return dtype_; }
    /// The default-domain opset the model imports (metadata `opset`), 0 when it declares none
    /// (a JSON graph may not). Valid after finalize().
    int64_t opset() const noexcept { return opset_; }
    /// Per node, the version of its op the model's opset selects (the op's since_version, e.g.
    /// 18 for ReduceMean under opset 20; the newest when opset() is 0), 0 for ops the host does
    /// not know. Valid after finalize(), which rejects an op the opset does not define.
    const std::vector<uint8_t>& op_versions() const noexcept { return op_version_; }

    /// "file: node 'name' (OpType)" for error messages.
    std::string describe_node(uint32_t index) const;

    friend bool operator==(const graph& a, const graph& b) {
        return a.name == b.name && a.metadata == b.metadata && a.tensors == b.tensors &&
               a.nodes == b.nodes && a.inputs == b.inputs && a.outputs == b.outputs;
    }

private:
    /// Kahn's algorithm over `nodes` (producer_ set); throws naming a node on a cycle.
    void sort_nodes();

    tensor_name_index tensor_index_;
    std::vector<uint32_t> producer_;
    consumer_lists consumers_;
    std::vector<nnergy_dtype> dtype_;
    std::vector<uint8_t> op_version_;
    int64_t opset_ = 0;
    bool finalized_ = false;
};

}  // namespace nnergy
