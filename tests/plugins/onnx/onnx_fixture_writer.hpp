// SPDX-License-Identifier: Apache-2.0
// Writes ONNX test models with the protobuf classes the frontend links (Debian's python3-onnx
// cannot write opset 18 and later). Fields that ONNX 1.12's classes predate (FunctionProto
// attribute_proto, value_info and overload; NodeProto overload) are written by field number,
// exactly as a newer ONNX serializes them.
#ifndef NNERGY_TESTS_ONNX_FIXTURE_WRITER_HPP
#define NNERGY_TESTS_ONNX_FIXTURE_WRITER_HPP

#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

namespace nnergy::onnx_fixtures {

/// One dimension of a declared shape: a value, or a symbol (dim_param).
struct dim {
    dim(int64_t v) : value(v) {}  // NOLINT: dims read as numbers
    dim(const char* p) : param(p) {}
    int64_t value = -1;
    std::string param;
};

inline void set_type(onnx::ValueInfoProto& v, const std::string& name, int32_t elem_type,
                     const std::vector<dim>& shape, bool has_shape = true) {
    v.set_name(name);
    auto* t = v.mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    if (!has_shape) return;
    auto* s = t->mutable_shape();
    for (const dim& d : shape) {
        auto* x = s->add_dim();
        if (d.param.empty())
            x->set_dim_value(d.value);
        else
            x->set_dim_param(d.param);
    }
}

inline onnx::ValueInfoProto value_info(const std::string& name, int32_t elem_type,
                                       const std::vector<dim>& shape) {
    onnx::ValueInfoProto v;
    set_type(v, name, elem_type, shape);
    return v;
}

// ---- attributes -----------------------------------------------------------------------------

inline onnx::AttributeProto& attr_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
    return *a;
}
inline onnx::AttributeProto& attr_float(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
    return *a;
}
inline onnx::AttributeProto& attr_ints(onnx::NodeProto& n, const std::string& name,
                                       const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
    return *a;
}
/// An attribute of a node inside a function body that takes the function's attribute `ref`.
inline onnx::AttributeProto& attr_ref(onnx::NodeProto& n, const std::string& name,
                                      const std::string& ref,
                                      onnx::AttributeProto::AttributeType type) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(type);
    a->set_ref_attr_name(ref);
    return *a;
}
/// A Constant's `value`: a float tensor of the given dims, its data embedded.
inline onnx::AttributeProto& attr_float_tensor(onnx::NodeProto& n, const std::string& name,
                                               const std::vector<int64_t>& dims,
                                               const std::vector<float>& values) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *a;
}

// ---- nodes and functions --------------------------------------------------------------------

template <class Container>
onnx::NodeProto& add_node(Container& c, const std::string& op, const std::string& name,
                          std::initializer_list<std::string> inputs,
                          std::initializer_list<std::string> outputs,
                          const std::string& domain = "") {
    onnx::NodeProto* n = c.add_node();
    n->set_op_type(op);
    n->set_name(name);
    if (!domain.empty()) n->set_domain(domain);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
}

/// NodeProto.overload (field 8) and FunctionProto.overload (field 13), IR 10.
inline void set_overload(onnx::NodeProto& n, const std::string& overload) {
    n.mutable_unknown_fields()->AddLengthDelimited(8, overload);
}
inline void set_overload(onnx::FunctionProto& f, const std::string& overload) {
    f.mutable_unknown_fields()->AddLengthDelimited(13, overload);
}
/// FunctionProto.attribute_proto (field 11, IR 9): an attribute parameter with a default.
inline void add_attribute_default(onnx::FunctionProto& f, const onnx::AttributeProto& a) {
    f.mutable_unknown_fields()->AddLengthDelimited(11, a.SerializeAsString());
}
/// FunctionProto.value_info (field 12, IR 10).
inline void add_function_value_info(onnx::FunctionProto& f, const onnx::ValueInfoProto& v) {
    f.mutable_unknown_fields()->AddLengthDelimited(12, v.SerializeAsString());
}
inline onnx::AttributeProto float_attribute(const std::string& name, float v) {
    onnx::AttributeProto a;
    a.set_name(name);
    a.set_type(onnx::AttributeProto::FLOAT);
    a.set_f(v);
    return a;
}

// ---- models ---------------------------------------------------------------------------------

/// A model under construction: IR version, default-domain opset and producer set.
class model_writer {
public:
    explicit model_writer(int64_t opset, int64_t ir_version = 10) {
        m_.set_ir_version(ir_version);
        m_.set_producer_name("nnergy-tests");
        import_domain("", opset);
        m_.mutable_graph()->set_name("g");
    }
    onnx::ModelProto& model() { return m_; }
    const onnx::ModelProto& model() const { return m_; }
    onnx::GraphProto& graph() { return *m_.mutable_graph(); }

    void import_domain(const std::string& domain, int64_t version) {
        auto* o = m_.add_opset_import();
        o->set_domain(domain);
        o->set_version(version);
    }
    void input(const std::string& name, const std::vector<dim>& shape,
               int32_t elem_type = onnx::TensorProto::FLOAT) {
        set_type(*graph().add_input(), name, elem_type, shape);
    }
    /// A graph output; without a shape, the host infers it.
    void output(const std::string& name, int32_t elem_type = onnx::TensorProto::FLOAT) {
        set_type(*graph().add_output(), name, elem_type, {}, false);
    }
    void declare(const std::string& name, const std::vector<dim>& shape,
                 int32_t elem_type = onnx::TensorProto::FLOAT) {
        *graph().add_value_info() = value_info(name, elem_type, shape);
    }
    /// A weight: dims and type only, its data in an external file that is never written (the
    /// frontend needs only the shape).
    void weight(const std::string& name, const std::vector<int64_t>& dims,
                int32_t elem_type = onnx::TensorProto::FLOAT) {
        auto* t = graph().add_initializer();
        t->set_name(name);
        t->set_data_type(elem_type);
        for (int64_t d : dims) t->add_dims(d);
        t->set_data_location(onnx::TensorProto::EXTERNAL);
        auto* e = t->add_external_data();
        e->set_key("location");
        e->set_value("weights.bin");
    }
    /// A small int64 initializer with its values embedded (axes, shapes).
    void int64s(const std::string& name, const std::vector<int64_t>& values) {
        auto* t = graph().add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::INT64);
        t->add_dims(static_cast<int64_t>(values.size()));
        for (int64_t v : values) t->add_int64_data(v);
    }
    onnx::NodeProto& node(const std::string& op, const std::string& name,
                          std::initializer_list<std::string> inputs,
                          std::initializer_list<std::string> outputs,
                          const std::string& domain = "") {
        return add_node(graph(), op, name, inputs, outputs, domain);
    }
    /// A model-local function importing the default domain at `opset` (0: none) and `domain`.
    onnx::FunctionProto& function(const std::string& domain, const std::string& name,
                                  std::initializer_list<std::string> inputs,
                                  std::initializer_list<std::string> outputs, int64_t opset) {
        onnx::FunctionProto* f = m_.add_functions();
        f->set_domain(domain);
        f->set_name(name);
        for (const auto& i : inputs) f->add_input(i);
        for (const auto& o : outputs) f->add_output(o);
        if (opset > 0) {
            auto* o = f->add_opset_import();
            o->set_domain("");
            o->set_version(opset);
        }
        return *f;
    }

    bool write(const std::string& path) const {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        return out && m_.SerializeToOstream(&out) && out.flush();
    }

private:
    onnx::ModelProto m_;
};

}  // namespace nnergy::onnx_fixtures

#endif  // NNERGY_TESTS_ONNX_FIXTURE_WRITER_HPP
